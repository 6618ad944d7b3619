"""`isrflow explain SOURCE --topic T --partition P`: one partition's story, as a readable timeline.

SOURCE is a replay output folder (`audit/` Delta table, and `decisions.jsonl` when present) or an audit Delta
table itself (the `run` command's `--audit-table`, a path or a URI such as s3a://...; its decisions are then
looked for beside it, as `decisions.jsonl` or a `decisions` Delta table). Every event that touched the
partition is shown in log order: offset, time, type, event id, outcome and the principal of an admin command;
the state, leader, ISR and epochs before -> after; the leader recovery state when it changes (RECOVERING after
an unclean election, RECOVERED once the leader reports its log recovered); the election and its strategy; a
rejection's error name and reason; replica state changes; the LeaderAndIsr decisions the event produced; and,
beside a local replay under the zk rules (`requests.jsonl`), the requests the controller sends for the event that
name the partition (LeaderAndIsr, UpdateMetadata, StopReplica: to which brokers, in which of the event's batches).
Topic-level rows (a config change, a refused topic command) are shown too. The header's replica set and
recovery state come from the audit (`replicas_after`, `leader_recovery_state_after`), so they show without
decisions as well.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemas.events import BrokerChangeKind
from schemas.records import audit_sort_key
from statemachine.directories import directory_name
from statemachine.elections import Election
from statemachine.errors import Outcome
from statemachine.record import NO_LEADER, Action
from statemachine.states import PartitionState, ReplicaState
from streaming.errors import UsageError
from streaming.io.delta import read_decisions_jsonl, read_delta, scan_delta
from streaming.io.storage import Location, Uri, location


class PartitionNotFound(UsageError):
    """The partition never appears in the audit table."""


@dataclass
class Sources:
    audit: Location
    decisions_jsonl: Path | None = None
    decisions_delta: Location | None = None
    requests_jsonl: Path | None = None


def resolve(source: Location) -> Sources:
    """Where the audit table and the decisions of SOURCE are."""
    if isinstance(source, Uri):  # run's tables on object storage, read by delta-rs (streaming.io.delta)
        from deltalake import DeltaTable

        if not DeltaTable.is_deltatable(str(source)):
            raise FileNotFoundError(f"no Delta audit table at {source}")
        delta = source.parent / "decisions"
        return Sources(source, None, delta if DeltaTable.is_deltatable(str(delta)) else None)
    source = Path(source)
    if (source / "audit" / "_delta_log").is_dir():  # a replay output folder
        return _local(source / "audit", source / "decisions.jsonl", source / "_pipeline" / "decisions")
    if (source / "_delta_log").is_dir():  # an audit table
        return _local(source, source.parent / "decisions.jsonl", source.parent / "decisions")
    if not source.exists():
        raise FileNotFoundError(f"no such replay output folder or audit table: {source}")
    raise FileNotFoundError(f"{source} is neither a replay output folder (with audit/) nor a Delta audit table")


def _local(audit: Path, jsonl: Path, delta: Path) -> Sources:
    """The decisions of a local audit table: its `decisions.jsonl`, else its decisions Delta table, if there; and
    the controller's requests beside it, if there."""
    requests = audit.parent / "requests.jsonl"
    requests_jsonl = requests if requests.is_file() else None
    if jsonl.is_file():
        return Sources(audit, jsonl, requests_jsonl=requests_jsonl)
    return Sources(audit, None, delta if (delta / "_delta_log").is_dir() else None, requests_jsonl)


def load(source: Location, topic: str, partition: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                                            list[dict[str, Any]], list[dict[str, Any]]]:
    """(the partition's audit rows, the topic-level and cluster-level rows of the same events and of the
    topic, the partition's decisions, the controller's requests that name it)."""
    import pyarrow.dataset as ds

    where = resolve(source)
    field = ds.field
    rows = read_delta(where.audit, (field("topic") == topic) | field("partition").is_null())
    own = [r for r in rows if r.get("partition") == partition and r.get("topic") == topic]
    if not own:
        raise PartitionNotFound(_not_found(where.audit, topic, partition))
    offsets = {r["source_offset"] for r in own}
    context = [r for r in rows if r.get("partition") is None
               and (r.get("topic") == topic or r["source_offset"] in offsets)]
    if where.decisions_jsonl is not None:
        decisions = [d for d in read_decisions_jsonl(where.decisions_jsonl)
                     if d.get("topic") == topic and d.get("partition") == partition]
    elif where.decisions_delta is not None:
        decisions = read_delta(where.decisions_delta, (field("topic") == topic) & (field("partition") == partition))
    else:
        decisions = []
    return own, context, decisions, _requests_naming(where.requests_jsonl, topic, partition)


def _requests_naming(path: Path | None, topic: str, partition: int) -> list[dict[str, Any]]:
    if path is None:
        return []
    with path.open() as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [r for r in rows if any(p["topic"] == topic and p["partition"] == partition
                                   for p in json.loads(r["partitions"]))]


def _not_found(audit: Location, topic: str, partition: int) -> str:
    import pyarrow.dataset as ds

    table = scan_delta(audit, ds.field("partition").is_valid(), ["topic", "partition"])
    seen: dict[str, set[int]] = {}
    if table is not None:
        for t, p in zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(), strict=True):
            seen.setdefault(t, set()).add(p)
    head = f"partition {topic}-{partition} never appears in the audit table {audit}"
    if topic in seen:
        return f"{head}; topic {topic} has partitions {_ranges(sorted(seen[topic]))}"
    topics = sorted(seen)
    listed = ", ".join(topics[:20]) + (f" and {len(topics) - 20} more" if len(topics) > 20 else "")
    return f"{head}; topic {topic} never appears either" + (f" (topics seen: {listed})" if topics else
                                                           " (the table has no partition rows)")


def _ranges(ids: Sequence[int]) -> str:
    out: list[str] = []
    start = prev = None
    for i in ids:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = i
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ", ".join(out)


# -- the timeline ----------------------------------------------------------------------------------------

def _ts(value: str | None) -> str:
    if not value:
        return "(no ts)"
    return value.replace("T", " ").removesuffix("Z")


def _list(value: Any) -> str:
    return "[]" if not value else "[" + ", ".join(str(v) for v in value) + "]"


def _change(before: Any, after: Any, fmt: Any = str) -> str:
    return f"{fmt(before)} -> {fmt(after)}" if before != after else f"{fmt(after)} (unchanged)"


def _replica_changes(before: Mapping[int, str] | None, after: Mapping[int, str] | None) -> str:
    before, after = dict(before or {}), dict(after or {})
    parts = []
    for broker in sorted(set(before) | set(after)):
        b, a = before.get(broker), after.get(broker)
        if b != a:
            parts.append(f"{broker}: {b or ReplicaState.NON_EXISTENT} -> {a or ReplicaState.NON_EXISTENT}")
    return ", ".join(parts)


def _assign(rows: Sequence[Mapping[str, Any]], decisions: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The decisions of each row: a decision belongs to the row of its offset whose partition epochs bracket
    it (the first write of a new partition keeps epoch 0)."""
    out: list[list[Mapping[str, Any]]] = [[] for _ in rows]
    by_offset: dict[int, list[int]] = {}
    for i, r in enumerate(rows):
        by_offset.setdefault(r["source_offset"], []).append(i)
    for d in sorted(decisions, key=lambda d: (d["source_offset"], d["partition_epoch"])):
        candidates = by_offset.get(d["source_offset"], [])
        if not candidates:
            continue
        chosen = candidates[-1]
        for i in candidates:
            r = rows[i]
            lo, hi = r.get("partition_epoch_before"), r.get("partition_epoch_after")
            if lo is None or hi is None:
                continue
            if lo < d["partition_epoch"] <= hi or (d.get("is_new") and d["partition_epoch"] == hi):
                chosen = i
                break
        out[chosen].append(d)
    return out


def _decision_text(d: Mapping[str, Any]) -> str:
    parts = [f"leader {d['leader']}", f"leader epoch {d['leader_epoch']}", f"ISR {_list(d['isr'])}",
             f"partition epoch {d['partition_epoch']}", f"replicas {_list(d['replicas'])}"]
    if d.get("adding_replicas"):
        parts.append(f"adding {_list(d['adding_replicas'])}")
    if d.get("removing_replicas"):
        parts.append(f"removing {_list(d['removing_replicas'])}")
    if d.get("directories"):
        parts.append("log dirs " + ", ".join(f"{b}: {directory_name(x)}"
                                             for b, x in zip(d["replicas"], d["directories"], strict=False)))
    parts.append(f"recovery {d.get('leader_recovery_state')}")
    if d.get("election"):
        parts.append(f"election {d['election']}")
    if d.get("is_new"):
        parts.append("new partition")
    parts.append(f"to brokers {_list(d.get('recipients'))}")
    return "LeaderAndIsr: " + ", ".join(parts)


_REQUEST_WORDS = {"LEADER_AND_ISR": "LeaderAndIsr", "UPDATE_METADATA": "UpdateMetadata", "STOP_REPLICA": "StopReplica"}


def _requests_text(requests: Sequence[Mapping[str, Any]], topic: str, partition: int) -> list[str]:
    """One line per batch: each request type naming the partition, to which brokers (StopReplica: deleting or not)."""
    by_batch: dict[int, dict[str, list[int]]] = {}
    for r in requests:
        kind = _REQUEST_WORDS[r["request"]]
        if r["request"] == "STOP_REPLICA":
            delete = any(p.get("delete") for p in json.loads(r["partitions"])
                         if p["topic"] == topic and p["partition"] == partition)
            kind += " (delete)" if delete else ""
        by_batch.setdefault(r["batch"], {}).setdefault(kind, []).append(r["broker"])
    return [f"  requests   batch {batch}: " + ", ".join(f"{kind} to {_list(sorted(brokers))}"
                                                       for kind, brokers in kinds.items())
            for batch, kinds in sorted(by_batch.items())]


def _snapshot(row: Mapping[str, Any]) -> str:
    return (f"{row['to_state']}, leader {row['leader_after']}, ISR {_list(row['isr_after'])}, "
            f"leader epoch {row['leader_epoch_after']}, partition epoch {row['partition_epoch_after']}")


def _headline(row: Mapping[str, Any], width: int, context: str | None = None) -> str:
    outcome = row["outcome"] + (f" {row['error']}" if row.get("error") else "")
    return (f"offset {row['source_offset']:<{width}}  {_ts(row.get('event_ts'))}  {row['event_type']}  "
            f"{row['event_id']}  {outcome}" + (f"  ({context})" if context else "")
            + (f"  by {row['principal']}" if row.get("principal") else ""))


_CHANGE_WORDS = {BrokerChangeKind.STARTUP: "started", BrokerChangeKind.FAILURE: "failed",
                 BrokerChangeKind.CONTROLLED_SHUTDOWN: "shutting down"}


def _cluster_context(context: Sequence[Mapping[str, Any]], offset: int) -> str | None:
    """The event in words, from its cluster-level rows' columns: a failover, else a broker change."""
    rows = [r for r in context if r["source_offset"] == offset and r.get("partition") is None]
    for r in rows:
        if r.get("action") == Action.CONTROLLER_FAILOVER:
            who = "a new controller" if r.get("controller_id") is None else f"controller {r['controller_id']}"
            return f"controller failover: {who} at epoch {r.get('controller_epoch')}"
    for r in rows:
        if r.get("event_type") == "LogDirsOffline" and r.get("message"):
            return r["message"]  # "broker B's log dir(s) D went offline: ..."
    for r in rows:
        if r.get("broker_change") is not None and r.get("broker_id") is not None:
            text = f"broker {r['broker_id']} {_CHANGE_WORDS[r['broker_change']]}"
            return text + (f" with epoch {r['broker_epoch']}" if r["broker_change"] == BrokerChangeKind.STARTUP
                           else "")
    return None


def render_timeline(topic: str, partition: int, rows: Sequence[Mapping[str, Any]],
                    context: Sequence[Mapping[str, Any]], decisions: Sequence[Mapping[str, Any]],
                    requests: Sequence[Mapping[str, Any]] = ()) -> str:
    rows = sorted(rows, key=audit_sort_key)
    # An event's requests go with its last row of the partition.
    last_row_of = {r["source_offset"]: i for i, r in enumerate(rows)}
    requests_at: dict[int, list[Mapping[str, Any]]] = {}
    for r in requests:
        requests_at.setdefault(r["source_offset"], []).append(r)
    context = sorted(context, key=audit_sort_key)
    decisions = sorted(decisions, key=lambda d: (d["source_offset"], d["partition_epoch"]))
    per_row = _assign(rows, decisions)
    topic_rows = [r for r in context if r.get("topic") == topic]
    width = len(str(max([r["source_offset"] for r in (*rows, *topic_rows)], default=0)))
    out: list[str] = []

    last = rows[-1]
    elections = [r for r in rows if r.get("election")]
    rejected = [r for r in rows if r["outcome"] == Outcome.REJECTED]
    out.append(f"{topic}-{partition}: {_n(len({r['source_offset'] for r in rows}), 'event')}, offsets "
               f"{rows[0]['source_offset']} to {last['source_offset']} ({_ts(rows[0].get('event_ts'))} to "
               f"{_ts(last.get('event_ts'))} UTC); {_n(len(elections), 'election')}, {len(rejected)} rejected, "
               f"{_n(len(decisions), 'decision')}" + ("" if decisions or not _has_changes(rows)
                                                       else " (no decisions file found: decisions not shown)"))
    now = (f"now: {last['to_state']}, leader {last['leader_after']}, ISR {_list(last['isr_after'])}, "
           f"leader epoch {last['leader_epoch_after']}, partition epoch {last['partition_epoch_after']}")
    if last["to_state"] == PartitionState.NON_EXISTENT:
        now = f"now: deleted ({PartitionState.NON_EXISTENT} since offset {last['source_offset']})"
    elif last.get("replicas_after") is not None:
        now += f", replicas {_list(last['replicas_after'])}, recovery {last.get('leader_recovery_state_after')}"
    out.append(now)
    unclean = [r for r in elections if r["election"] == Election.OFFLINE_UNCLEAN]
    if unclean:
        out.append("WARNING: unclean election at offset " + ", ".join(str(r["source_offset"]) for r in unclean)
                   + ": the new leader was not in the ISR, data loss possible")

    entries: list[tuple[tuple[Any, ...], str]] = []
    previous_states: Mapping[int, str] | None = None
    previous_recovery: str | None = None
    for index, (row, own) in enumerate(zip(rows, per_row, strict=True)):
        lines = [_headline(row, width, _cluster_context(context, row["source_offset"]))]
        recovery = row.get("leader_recovery_state_after")
        if row["outcome"] == Outcome.REJECTED:
            lines.append(f"  rejected   {row.get('error')}: {row.get('message') or ''}".rstrip())
            lines.append(f"  unchanged  {_snapshot(row)}")
        elif row["outcome"] == Outcome.NO_OP and not _replica_changes(previous_states, row.get("replica_states")):
            lines.append(f"  no change  {_snapshot(row)}")
            if row.get("message"):
                lines.append(f"  note       {row['message']}")
        else:
            lines.append(f"  state      {_change(row['from_state'], row['to_state'])}")
            leader = f"  leader     {_change(row['leader_before'], row['leader_after'])}"
            if row.get("election"):
                leader += f"  elected by {row['election']}"
                if row["election"] == Election.OFFLINE_UNCLEAN:
                    leader += " (unclean: the leader was not in the ISR, data loss possible)"
            elif row["leader_after"] == NO_LEADER and row["leader_before"] != NO_LEADER:
                leader += "  (no leader: offline)"
            lines.append(leader)
            lines.append(f"  ISR        {_change(row['isr_before'], row['isr_after'], _list)}")
            epochs = (row["leader_epoch_before"], row["partition_epoch_before"])
            if epochs == (row["leader_epoch_after"], row["partition_epoch_after"]):
                lines.append(f"  epochs     leader {epochs[0]}, partition {epochs[1]} (unchanged)")
            else:
                lines.append(f"  epochs     leader {_change(row['leader_epoch_before'], row['leader_epoch_after'])}, "
                             f"partition {_change(row['partition_epoch_before'], row['partition_epoch_after'])}")
            if previous_recovery is not None and recovery != previous_recovery:
                lines.append(f"  recovery   {previous_recovery} -> {recovery}")
            changes = _replica_changes(previous_states, row.get("replica_states"))
            if changes:
                lines.append(f"  replica states  {changes}")
            if row.get("message"):
                lines.append(f"  note       {row['message']}")
        for d in own:
            lines.append(f"  decision   {_decision_text(d)}")
        if last_row_of[row["source_offset"]] == index:
            lines.extend(_requests_text(requests_at.get(row["source_offset"], ()), topic, partition))
        if row["outcome"] != Outcome.REJECTED:
            previous_states, previous_recovery = row.get("replica_states"), recovery
        entries.append((audit_sort_key(row), "\n".join(lines)))
    for r in topic_rows:
        note = f"{_headline(r, width, f'topic {topic}')}\n  note       {r.get('message') or ''}"
        entries.append((audit_sort_key(r), note.rstrip()))
    entries.sort(key=lambda e: e[0])
    out.append("")
    out.extend(text + "\n" for _, text in entries)
    return "\n".join(out).rstrip() + "\n"


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _has_changes(rows: Sequence[Mapping[str, Any]]) -> bool:
    return any(r.get("partition_epoch_before") != r.get("partition_epoch_after") for r in rows)


def explain(source: str | Location, topic: str, partition: int) -> str:
    """The partition's timeline as text; raises PartitionNotFound when it never appears."""
    rows, context, decisions, requests = load(location(source, absolute=False), topic, partition)
    return render_timeline(topic, partition, rows, context, decisions, requests)
