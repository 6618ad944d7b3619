"""isrflow's modelled requests (a replay's `requests.jsonl`, statemachine.requests) beside the ones a real
ZooKeeper-mode controller sent (every broker's `state-change.log`, streaming.zookeeper.statechange): per target
broker, the sequence of LeaderAndIsr and StopReplica requests with their partitions' states, and the sequence of
UpdateMetadata requests with their partition counts (the controller's log names no more of them).

Each side's sequence per broker and request type is aligned in order (the longest matching blocks, difflib); a
request agrees when it is in a matched block. A partition's state is compared on what both sides hold: LeaderAndIsr
leader, leader epoch, ISR (as a set), partition epoch (zkVersion), replicas, adding and removing replicas, isNew;
StopReplica leader epoch and deletePartition. Partitions in a request are compared as a set (Kafka lists them in hash
order). Before inter.broker.protocol 2.6 a StopReplica request carries one delete flag for all its partitions (two
requests when a batch holds both); every batch the controller builds holds one flag per broker, so those compare one
for one too.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streaming.io.jsonl import read_jsonl, write_jsonl
from streaming.zookeeper.statechange import (
    LEADER_AND_ISR,
    STOP_REPLICA,
    UPDATE_METADATA,
    ControlRequest,
    read_state_change_log,
)

REQUEST_TYPES = (LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA)
REQUEST_WORDS = {LEADER_AND_ISR: "LeaderAndIsr", STOP_REPLICA: "StopReplica", UPDATE_METADATA: "UpdateMetadata"}
Key = tuple[Any, ...]


@dataclass(frozen=True)
class _Side:
    """One request as compared (`key`) and as shown in requests_agreement.jsonl (`shown`)."""

    key: Key
    shown: dict[str, Any]


def _lai_key(topic: str, partition: int, leader: Any, leader_epoch: Any, isr: Iterable[int], epoch: Any,
             replicas: Iterable[int], adding: Iterable[int], removing: Iterable[int], is_new: Any) -> Key:
    return (topic, partition, leader, leader_epoch, tuple(sorted(isr)), epoch, tuple(replicas), tuple(adding),
            tuple(removing), bool(is_new))


def _controller_key(r: ControlRequest) -> Key:
    if r.request == UPDATE_METADATA:
        return (r.partition_count,)
    if r.request == STOP_REPLICA:
        return tuple(sorted((p.topic, p.partition, p.leader_epoch, bool(p.delete)) for p in r.partitions))
    return tuple(sorted(_lai_key(p.topic, p.partition, p.leader, p.leader_epoch, p.isr, p.zk_version, p.replicas,
                                 p.adding_replicas, p.removing_replicas, p.is_new) for p in r.partitions))


def _isrflow_key(row: Mapping[str, Any], parts: list[dict[str, Any]]) -> Key:
    if row["request"] == UPDATE_METADATA:
        return (row["partition_count"],)
    if row["request"] == STOP_REPLICA:
        return tuple(sorted((p["topic"], p["partition"], p.get("leader_epoch"), bool(p.get("delete")))
                            for p in parts))
    return tuple(sorted(_lai_key(p["topic"], p["partition"], p.get("leader"), p.get("leader_epoch"), p.get("isr", ()),
                                 p.get("partition_epoch"), p.get("replicas", ()), p.get("adding_replicas", ()),
                                 p.get("removing_replicas", ()), p.get("is_new")) for p in parts))


def read_sent_requests(state_change: Path) -> list[ControlRequest]:
    """Every request a controller sent, from each `broker-N.log` (or `*.log`) in `state_change`, in the order they
    were sent (by controller epoch, then log time, then line)."""
    sent: list[tuple[int, Any, int, ControlRequest]] = []
    for path in sorted(state_change.glob("*.log")):
        for r in read_state_change_log(path).requests:
            if r.direction == "sent":
                sent.append((r.controller_epoch, r.time, len(sent), r))
    return [r for *_, r in sorted(sent, key=lambda item: item[:3])]


def sent_by_controller(requests: list[ControlRequest]) -> dict[tuple[int, str], list[_Side]]:
    """The controllers' requests per (target broker, request type), in the order they were sent."""
    by: dict[tuple[int, str], list[ControlRequest]] = {}
    for r in requests:
        by.setdefault((r.broker, r.request), []).append(r)
    return {k: [_Side(_controller_key(r), {
        "time": r.time.isoformat(sep=" ", timespec="milliseconds"), "controller_id": r.controller_id,
        "controller_epoch": r.controller_epoch, "partition_count": r.partition_count,
        "partitions": [f"{p.topic}-{p.partition}" for p in r.partitions]}) for r in rs] for k, rs in by.items()}


def modelled_by_isrflow(rows: list[dict[str, Any]]) -> dict[tuple[int, str], list[_Side]]:
    """isrflow's requests (requests.jsonl's rows) per (target broker, request type), by event offset and batch."""
    by: dict[tuple[int, str], list[_Side]] = {}
    for row in sorted(rows, key=lambda r: (r["source_offset"], r["batch"])):
        parts = json.loads(row["partitions"])
        by.setdefault((row["broker"], row["request"]), []).append(_Side(_isrflow_key(row, parts), {
            "event_id": row["event_id"], "event_type": row["event_type"], "source_offset": row["source_offset"],
            "batch": row["batch"], "partition_count": row["partition_count"],
            "partitions": [f"{p['topic']}-{p['partition']}" for p in parts]}))
    return by


@dataclass(frozen=True)
class RequestCount:
    agreeing: int
    controller: int  # requests the controller sent
    isrflow: int  # requests isrflow modelled


@dataclass(frozen=True)
class RequestsAgreement:
    """Per request type: how many of the controller's requests isrflow's model reproduces, in order, per broker."""

    counts: dict[str, RequestCount]

    def counted(self) -> str:
        return ", ".join(f"{REQUEST_WORDS[t]} {c.agreeing} of {c.controller} (isrflow {c.isrflow})"
                         for t, c in self.counts.items())

    def describe(self, out: Path) -> str:
        return (f"the controller's requests isrflow's model reproduces, per broker in order: {self.counted()}; "
                f"in {out / 'requests_agreement.jsonl'}")


def agreement_rows(controller: dict[tuple[int, str], list[_Side]], isrflow: dict[tuple[int, str], list[_Side]]
                   ) -> list[dict[str, Any]]:
    """One row per request of either side, per broker and type in order: `match`, and each side as shown (null
    where that side has no counterpart)."""
    rows: list[dict[str, Any]] = []
    for broker, kind in sorted(set(controller) | set(isrflow)):
        theirs, ours = controller.get((broker, kind), []), isrflow.get((broker, kind), [])
        matcher = difflib.SequenceMatcher(None, [s.key for s in theirs], [s.key for s in ours], autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            pairs = (list(zip(theirs[i1:i2], ours[j1:j2], strict=True)) if op == "equal" else
                     [(s, None) for s in theirs[i1:i2]] + [(None, s) for s in ours[j1:j2]])
            rows.extend({"broker": broker, "request": kind, "match": op == "equal",
                         "controller": None if a is None else a.shown, "isrflow": None if b is None else b.shown}
                        for a, b in pairs)
    return rows


def write_requests_agreement(out: Path, state_change: Path, requests_jsonl: Path) -> RequestsAgreement:
    """`out/requests_agreement.jsonl`: isrflow's requests (`requests_jsonl`) beside the ones the controllers sent (the
    state-change logs in `state_change`)."""
    rows = agreement_rows(sent_by_controller(read_sent_requests(state_change)),
                          modelled_by_isrflow(read_jsonl(requests_jsonl)))
    write_jsonl(out / "requests_agreement.jsonl", rows)
    return requests_agreement(rows)


def requests_agreement(rows: list[dict[str, Any]]) -> RequestsAgreement:
    """The counts of requests_agreement.jsonl's rows."""
    return RequestsAgreement({kind: RequestCount(
        sum(1 for r in rows if r["request"] == kind and r["match"]),
        sum(1 for r in rows if r["request"] == kind and r["controller"] is not None),
        sum(1 for r in rows if r["request"] == kind and r["isrflow"] is not None)) for kind in REQUEST_TYPES})
