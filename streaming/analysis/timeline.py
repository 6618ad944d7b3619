"""Facts derived from a replay's audit (and decisions, when present): the cluster after each event (offline and
under-replicated partitions, leaders per broker), broker changes, leader changes, elections, unclean elections,
rejections and reassignments. Everything here reads audit columns, never message text.

Definitions:
- time is the events' `ts` (`event_ts` in the audit), made monotonic along the log: the log's order decides,
  so an event that carries an older `ts` than one before it (a redelivery) is drawn at the later time;
- a partition is *offline* while it exists and has no leader (leader -1);
- a partition is *under-replicated* while it has a leader and its ISR is smaller than its replica set
  (the audit's `replicas_after`; during a reassignment the target replicas, as Kafka counts it, when the
  decisions name the removing replicas);
- a *leader change* is a partition getting a leader other than the one it had, not counting the first
  election of a new partition.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from itertools import groupby
from pathlib import Path
from typing import Any

from schemas.events import (
    BrokerChange,
    BrokerChangeKind,
)
from schemas.records import parse_ts
from statemachine.elections import Election
from statemachine.errors import Outcome
from statemachine.record import Action
from streaming.analysis.columns import (
    AuditRows,
    decision_columns,
    decision_table,
    list_sizes,
    run_starts,
    table_partition_keys,
)
from streaming.analysis.facts import Facts, key_of
from streaming.analysis.health import Health, HealthColumns, PartitionAtEnd
from streaming.analysis.words import Clock, Key
from streaming.io.delta import read_delta

# Kafka's election strategies in the order the report lists them.
ELECTION_ORDER = (Election.INITIAL, Election.OFFLINE, Election.OFFLINE_UNCLEAN, Election.CONTROLLED_SHUTDOWN,
                  Election.REASSIGN, Election.PREFERRED)

# -- reading -----------------------------------------------------------------------------------------

@dataclass
class Inputs:
    audit: AuditRows  # in log order; read again by each `analyse`
    decisions: list[dict[str, Any]]  # only those a reassignment reads (`reassignment_decisions`)
    quarantine: list[dict[str, Any]]
    source: str = ""
    decision_count: int = 0  # every decision


def read_inputs(out_dir: Path) -> Inputs:
    """The replay's outputs; a missing decisions file or quarantine table counts as empty."""
    if not (out_dir / "audit" / "_delta_log").is_dir():
        raise FileNotFoundError(f"no audit table (Delta) in {out_dir / 'audit'}")
    audit = AuditRows(out_dir / "audit")
    decisions_path = out_dir / "decisions.jsonl"
    # A replay writes decisions.jsonl; `isrflow run` a `decisions` Delta table beside its audit.
    decisions = decision_columns(decisions_path) if decisions_path.exists() else \
        decision_table(out_dir / "decisions") if (out_dir / "decisions" / "_delta_log").is_dir() else None
    kept = reassignment_decisions(decisions) if decisions is not None else []
    quarantine_path = out_dir / "quarantine"
    quarantine = read_delta(quarantine_path) if (quarantine_path / "_delta_log").is_dir() else []
    return Inputs(audit, kept, quarantine, str(out_dir), decisions.num_rows if decisions is not None else 0)


def reassignment_decisions(decisions: Any) -> list[dict[str, Any]]:
    """Of decisions in DECISION_ORDER (as every replay writes them; an Arrow table), the ones the timeline and
    `reassignments` read: those with adding or removing replicas, the one after each such run that ends it, and
    the one before a run starts (its replicas are where the reassignment came from). Every other decision leaves a
    partition's removing replicas as they were (empty) and opens or closes no reassignment, so the report is the
    same without it, and the report holds a few decisions instead of every one. Chosen by numpy over each
    partition's decisions in order; the kept ones as dicts, each run's first decision after the one before it."""
    import numpy as np
    import pyarrow as pa

    if not decisions.num_rows:
        return []
    key = table_partition_keys(decisions)
    moving = np.zeros(len(key), dtype=bool)
    for name in ("adding_replicas", "removing_replicas"):
        moving |= list_sizes(decisions[name]) > 0
    order = np.argsort(key, kind="stable")  # each partition's decisions in order
    m = moving[order]
    first = run_starts(key[order])
    ended = np.append(False, m[:-1]) & ~first  # the partition's decision before it had adding or removing replicas
    keep = m | ended
    starts = m & ~first & ~ended & ~np.append(False, keep[:-1])  # the decision before it joins too
    rows = np.concatenate([order[keep], order[np.append(starts[1:], False)]])
    place = np.concatenate([order[keep], order[starts] - 0.5])
    return decisions.take(pa.array(rows[np.argsort(place, kind="stable")])).to_pylist()


# -- cluster-level events ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BrokerEvent:
    offset: int
    time: datetime | None
    broker: int
    change: BrokerChangeKind
    epoch: int | None  # the broker epoch the change named


def broker_event(row: Mapping[str, Any], time: datetime | None) -> BrokerEvent | None:
    """The broker change an accepted BrokerChange verdict row describes (its `broker_id`, `broker_change` and
    `broker_epoch` columns); None for any other row."""
    if (row.get("event_type") != BrokerChange.type or row.get("outcome") != Outcome.ACCEPTED
            or row.get("partition") is not None or row.get("action") != Action.CLUSTER
            or row.get("broker_id") is None or row.get("broker_change") is None):
        return None
    return BrokerEvent(row["source_offset"], time, int(row["broker_id"]), BrokerChangeKind(row["broker_change"]),
                       row.get("broker_epoch"))


# -- the analysis ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Point:
    """The cluster after one event of the log."""

    offset: int
    time: datetime | None
    offline: int
    under_replicated: int


@dataclass
class Analysis:
    inputs: Inputs
    decisions: list[dict[str, Any]]
    times: dict[int, datetime | None]  # source_offset -> monotonic event time, in log order
    health: Health  # after each event (in the order of `times`), from the audit's columns
    broker_events: list[BrokerEvent]
    brokers: set[int]
    facts: Facts  # what the summary, the tables and the plots read of the audit (streaming.analysis.facts)
    summary: list[str] = field(default_factory=list)

    @property
    def events(self) -> int:
        return len(self.times)

    @property
    def unclean(self) -> list[Mapping[str, Any]]:
        """The audit rows of unclean elections (OFFLINE_UNCLEAN), in log order."""
        return [u.row for u in self.facts.unclean]

    @property
    def leader_changes(self) -> int:
        """Audit rows that gave a partition a different leader (not a new partition's first)."""
        return self.facts.leader_changes

    @property
    def rejected(self) -> int:
        return self.facts.rejected

    @property
    def partitions(self) -> dict[Key, PartitionAtEnd]:
        """The partitions as the log leaves them."""
        return self.health.partitions

    @property
    def topics(self) -> set[str]:
        return self.health.topics

    @property
    def ever_offline(self) -> set[Key]:
        return self.health.ever_offline

    def _peak(self, counts: Any) -> tuple[int, Point | None]:
        """The highest count and the first event that has it."""
        if not len(counts):
            return 0, None
        i = int(counts.argmax())
        offset = next(itertools.islice(self.times, i, None))
        return int(counts[i]), Point(offset, self.times[offset], int(self.health.offline[i]),
                                     int(self.health.under_replicated[i]))

    @property
    def offline_peak(self) -> tuple[int, Point | None]:
        return self._peak(self.health.offline)

    @property
    def under_replicated_peak(self) -> tuple[int, Point | None]:
        return self._peak(self.health.under_replicated)

    @property
    def offline_at_end(self) -> list[Key]:
        return sorted(k for k, p in self.partitions.items() if p.offline)

    @property
    def under_replicated_at_end(self) -> list[Key]:
        return sorted(k for k, p in self.partitions.items() if p.under_replicated)

    def rejected_by_error(self) -> dict[str, int]:
        """Rejected audit rows per error name (the audit's own count)."""
        return dict(Counter({e: r.rows for e, r in self.facts.rejections.items()}).most_common())

    def time_of(self, offset: int) -> datetime | None:
        return self.times.get(offset)

    @cached_property
    def index(self) -> Index:
        """The clock that names event times, built once for the summary, the page and the story."""
        return Index(self)

    def cluster_coming_up(self, e: BrokerEvent) -> bool:
        """A broker registering before any partition exists."""
        first = self.facts.first_partition_offset
        return e.change is BrokerChangeKind.STARTUP and (first is None or e.offset < first)


@dataclass
class AuditPass:
    """The one pass over the audit in log order, an event's rows at a time: the facts the page reads
    (streaming.analysis.facts), each event's time, the broker changes, and the columns the cluster's health is
    counted from (streaming.analysis.health). It reads no decision, so it can go while a replay still writes them."""

    times: dict[int, datetime | None] = field(default_factory=dict)  # each offset's time, never before the last's
    facts: Facts = field(default_factory=Facts)
    broker_events: list[BrokerEvent] = field(default_factory=list)
    brokers: set[int] = field(default_factory=set)
    columns: HealthColumns = field(default_factory=HealthColumns)

    def read(self, audit: AuditRows) -> AuditPass:
        times, facts, broker_events, brokers = self.times, self.facts, self.broker_events, self.brokers
        latest: datetime | None = None
        for offset, group in groupby(audit.rows(self.columns.watch), key=lambda r: r["source_offset"]):
            rows = list(group)
            t = next((t for t in map(parse_ts, (r.get("event_ts") for r in rows)) if t is not None), None)
            if t is not None and (latest is None or t > latest):
                latest = t
            times[offset] = latest
            events = [be for row in rows if row.get("partition") is None and (be := broker_event(row, latest))]
            brokers.update(be.broker for be in events)
            broker_events.extend(events)
            facts.add(offset, latest, rows, events)
        facts.close()
        return self


def analyse(inputs: Inputs, audit: AuditPass | None = None) -> Analysis:
    """The audit's pass (`AuditPass`, over `inputs.audit` unless done already), then the cluster after each event
    from its columns, with the removing replicas of the reassignments' decisions."""
    done = audit if audit is not None else AuditPass().read(inputs.audit)
    decisions = sorted(inputs.decisions, key=lambda d: (d["source_offset"], d["topic"], d["partition"],
                                                        d["partition_epoch"]))
    removing_at: dict[int, dict[Key, tuple[int, ...]]] = defaultdict(dict)  # the last decision's, per event
    for d in decisions:
        removing_at[d["source_offset"]][key_of(d)] = tuple(d.get("removing_replicas") or ())
    health = done.columns.health(list(done.times), removing_at)
    return Analysis(inputs=inputs, decisions=decisions, times=done.times, health=health,
                    broker_events=done.broker_events, brokers=done.brokers | health.brokers, facts=done.facts)


Story = list[tuple[int, str]]  # (source_offset, sentence): the summary tells the log in its order


class Index:
    """The clock that names event times."""

    def __init__(self, a: Analysis) -> None:
        self.a = a
        self.clock = Clock(a.times.values())

    def at(self, offset: int) -> str:
        return self.clock(self.a.time_of(offset), offset)

    def span(self, first: int, last: int) -> str:
        """'At T' or 'Between T1 and T2': when a run of events between these offsets happened."""
        at_first, at_last = self.at(first), self.at(last)
        return f"At {at_first}" if at_first == at_last else f"Between {at_first} and {at_last}"


def reassignments(decisions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Reassignments seen in the decisions: started when adding/removing replicas appear, finished when they
    are gone again; cancelled when the replica set went back to the one it started from."""
    out: list[dict[str, Any]] = []
    open_: dict[Key, dict[str, Any]] = {}
    last_replicas: dict[Key, list[int]] = {}
    for d in decisions:
        key = (d["topic"], int(d["partition"]))
        adding, removing = d.get("adding_replicas") or [], d.get("removing_replicas") or []
        if adding or removing:
            target = [r for r in d["replicas"] if r not in removing]
            if key not in open_:
                origin = [r for r in d["replicas"] if r not in adding]
                open_[key] = {"partition": key, "from": last_replicas.get(key, origin), "target": target,
                              "started": d["source_offset"], "completed": None, "to": None, "cancelled": False}
            open_[key]["target"] = target
        elif key in open_:
            item = open_.pop(key)
            item.update(to=list(d["replicas"]), completed=d["source_offset"],
                        cancelled=set(d["replicas"]) == set(item["from"]))
            out.append(item)
        last_replicas[key] = list(d["replicas"])
    out.extend(open_.values())
    return sorted(out, key=lambda i: (i["started"], i["partition"]))


