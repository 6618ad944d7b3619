"""What the ZooKeeper-mode request tests (test_zk_requests*.py) share: the kept campaign runs' folders and their
replay with the brokers' logs beside them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from statemachine.controller import ControllerConfig
from statemachine.rules import ZK
from streaming.io.jsonl import read_jsonl
from streaming.jobs.replay import ReplayOptions, replay

UM = "UPDATE_METADATA"
ZKLOG = Path(__file__).parent / "zklog"
RUN = ZKLOG / "requests" / "zookeeper-3.9-seed-13"
# Kept runs that tests in more than one of the files replay.
SEED_1301 = ZKLOG / "requests" / "zookeeper-2.8-dirs-3-seed-1301"
SEED_1250 = ZKLOG / "requests" / "zookeeper-2.7-dirs-3-seed-1250"
SEED_1267 = ZKLOG / "requests" / "zookeeper-3.0-dirs-3-seed-1267"


def replayed(version_2: Path, out: Path, logs: Path | None = None) -> tuple[str, list[dict[str, Any]]]:
    """The replay of a kept `version-2` under the zk rules, and its requests_agreement rows. The brokers' logs are
    the folders beside it, or with `logs` those of that folder (a run whose history is kept in zklog/regressions has
    them in zklog/requests): its state-change, controller and server folders, each if there."""
    def kept(name: str) -> Path | None:
        return logs / name if logs is not None and (logs / name).is_dir() else None

    summary = replay(ReplayOptions(f"zk:{version_2}", out, engine="local", config=ControllerConfig(rules=ZK),
                                   state_change=kept("state-change"), controller_logs=kept("controller"),
                                   server_logs=kept("server")))
    return summary, read_jsonl(out / "requests_agreement.jsonl")


def every_request_equal(name: str, out: Path, counts: tuple[int, int, int]) -> str:
    """The replay of a campaign run kept with its brokers' logs in zklog/requests (its ZooKeeper dir there too, or in
    zklog/regressions), every request of it equal (`counts`: LeaderAndIsr, StopReplica, UpdateMetadata); its
    summary."""
    logs = ZKLOG / "requests" / name
    kept = logs if (logs / "version-2").is_dir() else ZKLOG / "regressions" / name
    summary, rows = replayed(kept / "version-2", out, logs)
    lai, sr, um = counts
    assert f"LeaderAndIsr {lai} of {lai} (isrflow {lai}), StopReplica {sr} of {sr} (isrflow {sr}), UpdateMetadata " \
           f"{um} of {um} (isrflow {um})" in summary and all(r["match"] for r in rows)
    return summary


def leader_and_isr(out: Path, event_id: str) -> list[tuple[int, int, list[str]]]:
    """The event's LeaderAndIsr requests: (batch, broker, partitions)."""
    return [(r["batch"], r["broker"], [f"{p['topic']}-{p['partition']}" for p in json.loads(r["partitions"])])
            for r in read_jsonl(out / "requests.jsonl")
            if r["event_id"] == event_id and r["request"] == "LEADER_AND_ISR"]


def request_of(tmp_path: Path, event_id: str) -> list[tuple[str, int, int, list[str]]]:
    """The IsrChange events of the AlterPartition request `event_id` closes: id, leader epoch, partition epoch and
    the request's partitions."""
    events = {e["event_id"]: e for e in read_jsonl(tmp_path / "zk" / "events.jsonl")}
    named = [f"{p['topic']}-{p['partition']}" for p in events[event_id]["request_partitions"]]
    return [(e["event_id"], e["leader_epoch"], e["partition_epoch"], named) for e in events.values()
            if e["type"] == "IsrChange" and f"{e['topic']}-{e['partition']}" in named
            and e.get("request_partitions") == events[event_id]["request_partitions"]]


def t_history(tmp_path: Path, partition: int) -> list[tuple[str, int, list[int], int]]:
    """isrflow's decisions of t1-`partition`: their cause, leader, ISR and leader epoch."""
    return [(d["cause_event_id"], d["leader"], d["isr"], d["leader_epoch"])
            for d in read_jsonl(tmp_path / "decisions.jsonl") if (d["topic"], d["partition"]) == ("t1", partition)]
