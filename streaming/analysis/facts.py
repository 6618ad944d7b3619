"""What the report's summary, tables and plots say about the audit, gathered in one pass over it in log order, an
event's rows at a time: counts, per-broker runs, per-partition counts and the few rows the page names. Nothing here
holds the audit's rows, so the report's memory grows with the partitions and the events, not with the audit's rows.

Where a sentence needs a partition's later rows (when a partition a failed broker led got a leader again, when an
unclean leader stopped RECOVERING, which ISRs a restarted broker rejoined), a watch waits on that partition and is
resolved by the rows that follow. The sentences themselves are written at the end (streaming.analysis.summary,
brokers, tables), once every event time is known.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from schemas.events import (
    AlterTopicConfig,
    AssignReplicasToDirs,
    BrokerChangeKind,
    CreatePartitions,
    CreateTopic,
    DeleteTopic,
    IsrChange,
    LeaderRecoveryState,
    LogDirsOffline,
    PartitionSnapshot,
    UpdateFeatures,
)
from statemachine.elections import Election
from statemachine.errors import Error, Outcome
from statemachine.features import UNKNOWN_VERSION
from statemachine.record import NO_LEADER, Action
from statemachine.states import PartitionState
from streaming.analysis.words import Key, names
from streaming.history.outcomes import note_topic

NON_EXISTENT = PartitionState.NON_EXISTENT
NAMED = 5  # partitions a broker's sentence names per kind
Row = Mapping[str, Any]


def as_int(value: Any) -> int:
    return -1 if value is None else int(value)


def key_of(row: Row) -> Key:
    return row["topic"], int(row["partition"])


@dataclass
class Named:
    """A count of partitions and the NAMED smallest of them (what `words.names(keys, NAMED)` shows)."""

    n: int = 0
    smallest: list[_Desc] = field(default_factory=list)  # a heap with the largest of the smallest on top

    def add(self, key: Key) -> None:
        self.n += 1
        self._keep(_Desc(key))

    def merge(self, other: Named) -> None:
        self.n += other.n
        for d in other.smallest:
            self._keep(d)

    def _keep(self, d: _Desc) -> None:
        if len(self.smallest) < NAMED:
            heapq.heappush(self.smallest, d)
        elif d.key < self.smallest[0].key:
            heapq.heapreplace(self.smallest, d)

    def names(self) -> str:
        return names((d.key for d in self.smallest), NAMED, self.n)


class _Desc:
    """A key ordered backwards, so that heapq's min-heap keeps the largest of the smallest on top."""

    __slots__ = ("key",)

    def __init__(self, key: Key) -> None:
        self.key = key

    def __lt__(self, other: _Desc) -> bool:
        return self.key > other.key


@dataclass
class BrokerFacts:
    """A broker change's event as its sentence reads it: the partition rows at its offset, counted."""

    has_rows: bool = False
    moved: int = 0  # leadership moved from the broker to another live replica
    kept: int = 0  # the broker leads after the event
    isr_left: int = 0  # ISRs the broker left as a follower
    lost: int = 0  # partitions the broker led before the event
    elected: Named = field(default_factory=Named)  # offline partitions that got a leader
    same_second: int = 0  # lost partitions with a leader again within a second (or at once)
    # The lost partitions offline until a later row: (its offset, deleted, unclean, event type) -> the partitions.
    waited: dict[tuple[int, bool, bool, str], Named] = field(default_factory=dict)
    stayed_offline: Named = field(default_factory=Named)  # never got a leader again
    rejoined: int = 0  # STARTUP: ISRs the broker rejoined before its next change
    rejoined_by: int = 0  # the offset of the last of them


@dataclass
class _Window:
    """A started broker's rejoined ISRs (`Facts._windows`, by broker): the first row of each partition after its
    start (and before its next change) that either creates the partition or puts the broker back into its ISR."""

    start: int
    facts: BrokerFacts
    decided: set[Key] = field(default_factory=set)


@dataclass
class Rejections:
    """One error's rejected rows: how many, of how many events, of which types and principals, and the first."""

    first: Row
    rows: int = 0
    events: int = 0
    last_offset: int | None = None
    types: Counter[str] = field(default_factory=Counter)
    principals: dict[str, set[str]] = field(default_factory=dict)


@dataclass
class Fenced:
    """Events a fenced controller logged at one old epoch while another was active."""

    first: int
    last: int
    types: Counter[str] = field(default_factory=Counter)


@dataclass
class Unclean:
    row: Row
    recovered_at: int | None = None  # the offset of its first row no longer RECOVERING
    recovering: bool = False


@dataclass
class Facts:
    rows: int = 0
    keys: set[Key] = field(default_factory=set)  # every partition with an audit row
    first_partition_offset: int | None = None
    warnings: list[tuple[int, str]] = field(default_factory=list)  # UpdateFeatures of an unknown version
    log_dirs_offline: list[tuple[int, str]] = field(default_factory=list)
    assigned: list[int] = field(default_factory=list)  # AssignReplicasToDirs: [first offset, last offset, rows]
    assigned_brokers: set[int] = field(default_factory=set)
    failovers: list[tuple[int, Any, Any, int, int]] = field(default_factory=list)  # offset, id, epoch, rows, changed
    topic_ops: list[tuple[Any, ...]] = field(default_factory=list)  # (kind, offset, topic, n or keys); ("other",)
    gone_at: dict[Key, int] = field(default_factory=dict)  # a partition's last row that deleted it
    deleted_topics: set[str] = field(default_factory=set)  # deleted and not created again (outcomes.deleted_topics)
    seeds: dict[Key, dict[str, Any]] = field(default_factory=dict)  # partitions a PartitionSnapshot seeded
    fenced: dict[tuple[int, int], Fenced] = field(default_factory=dict)
    configs: list[dict[str, Any]] = field(default_factory=list)
    shrinks: dict[int, list[list[int]]] = field(default_factory=dict)  # broker -> runs of [first, last, ISRs]
    cuts: dict[int, list[int]] = field(default_factory=dict)  # broker -> offsets of its changes
    preferred: list[tuple[int, str, int, Counter[int]]] = field(default_factory=list)
    unclean: list[Unclean] = field(default_factory=list)
    rejections: dict[str, Rejections] = field(default_factory=dict)
    changes: Counter[Key] = field(default_factory=Counter)  # leader changes per partition
    elections_by_key: dict[Key, Counter[str]] = field(default_factory=dict)
    offline_by_key: Counter[Key] = field(default_factory=Counter)
    lost: Counter[int] = field(default_factory=Counter)
    change_counts: Counter[tuple[int, int]] = field(default_factory=Counter)  # (offset, new leader) -> changes
    election_counts: Counter[tuple[int, str]] = field(default_factory=Counter)  # (offset, election) -> elections
    brokers: dict[tuple[int, int], BrokerFacts] = field(default_factory=dict)  # (offset, broker) -> its facts
    _watches: dict[Key, list[Any]] = field(default_factory=dict)  # callables, each True once resolved
    _current: list[tuple[Any, BrokerFacts]] = field(default_factory=list)  # this event's broker changes
    _time: datetime | None = None  # the event time of the rows being added
    _windows: dict[int, _Window] = field(default_factory=dict)
    _fenced_offset: int | None = None

    @property
    def rejected(self) -> int:
        """Rejected audit rows."""
        return sum(entry.rows for entry in self.rejections.values())

    @property
    def leader_changes(self) -> int:
        """Accepted rows that gave a partition a different leader (not a new partition's first)."""
        return sum(self.changes.values())

    @property
    def gained(self) -> Counter[int]:
        """Leader changes per broker that became leader."""
        gained: Counter[int] = Counter()
        for (_, leader), n in self.change_counts.items():
            gained[leader] += n
        return gained

    @property
    def reassign_elections(self) -> int:
        """Leaders a reassignment elected."""
        return sum(n for (_, election), n in self.election_counts.items() if election == Election.REASSIGN)

    # -- one event's rows ------------------------------------------------------------------------------------

    def add(self, offset: int, time: datetime | None, rows: Sequence[Row], events: Sequence[Any]) -> None:
        """An event's audit rows in log order (its cluster rows first), its time and the broker changes among
        them."""
        self._time = time
        self.rows += len(rows)
        parts = [r for r in rows if r.get("partition") is not None]
        self._current = [(e, self._broker_change(e, bool(parts))) for e in events]
        if parts and self.first_partition_offset is None:
            self.first_partition_offset = offset
        for r in rows:
            self._any_row(r)
            if r.get("partition") is None:
                self._cluster_row(r, parts)
            else:
                self._partition_row(r)
        if parts:
            self._topic_op(offset, parts)
            self._preferred(offset, parts)

    def _any_row(self, r: Row) -> None:
        note_topic(self.deleted_topics, r.get("event_type"), r.get("topic"))
        if r.get("outcome") == Outcome.REJECTED:
            self._rejected(r)

    def _rejected(self, r: Row) -> None:
        error = r.get("error") or "(none)"
        entry = self.rejections.get(error)
        if entry is None:
            entry = self.rejections[error] = Rejections(r)
        entry.rows += 1
        if entry.last_offset != r["source_offset"]:
            entry.events += 1
            entry.last_offset = r["source_offset"]
        entry.types[r["event_type"]] += 1
        principals = entry.principals.setdefault(r["event_type"], set())
        if r.get("principal"):
            principals.add(r["principal"])
        if r.get("error") == Error.STALE_CONTROLLER_EPOCH and r["source_offset"] != self._fenced_offset:
            self._fenced_offset = r["source_offset"]
            epochs = (int(r["event_controller_epoch"]), int(r["controller_epoch"]))
            run = self.fenced.setdefault(epochs, Fenced(r["source_offset"], r["source_offset"]))
            run.last = r["source_offset"]
            run.types[r["event_type"]] += 1

    def _cluster_row(self, r: Row, parts: Sequence[Row]) -> None:
        offset, kind, accepted = r["source_offset"], r.get("event_type"), r.get("outcome") == Outcome.ACCEPTED
        if kind == UpdateFeatures.type and UNKNOWN_VERSION in (r.get("message") or ""):
            self.warnings.append((offset, r["message"]))
        if not accepted:
            return
        if kind == LogDirsOffline.type:
            self.log_dirs_offline.append((offset, r["message"]))
        if r.get("action") == Action.CONTROLLER_FAILOVER:
            rows = [x for x in parts if x.get("action") == Action.CONTROLLER_FAILOVER]
            changed = sum(1 for x in rows if x.get("outcome") == Outcome.ACCEPTED)
            self.failovers.append((offset, r.get("controller_id"), r.get("controller_epoch"), len(rows), changed))
        if kind == AlterTopicConfig.type:
            elected = [x for x in parts if x.get("election")]
            failed = [x for x in parts if x.get("outcome") == Outcome.REJECTED]
            self.configs.append({"offset": offset, "topic": r.get("topic"), "configs": r.get("configs"),
                                 "elected": len(elected),
                                 "shown": [(x["topic"], x["partition"], x["election"]) for x in elected[:5]],
                                 "failed": [key_of(x) for x in failed],
                                 "error": failed[0].get("error") if failed else None})

    def _partition_row(self, r: Row) -> None:
        key, offset = key_of(r), r["source_offset"]
        if key not in self.keys:
            self.keys.add(key)
            if r.get("event_type") == PartitionSnapshot.type and r.get("leader_after") is not None:
                self.seeds[key] = {"leader": r["leader_after"], "isr": r.get("isr_after") or [],
                                   "replicas": r.get("replicas_after") or [], "directories": None}
        if r.get("to_state") == NON_EXISTENT:
            self.gone_at[key] = offset
        accepted = r.get("outcome") == Outcome.ACCEPTED
        if self._windows:
            self._rejoined(key, r)
        watches = self._watches.get(key)
        if watches and accepted:
            self._watches[key] = [w for w in watches if not w(r)]
        before, after = as_int(r.get("leader_before")), as_int(r.get("leader_after"))
        for e, facts in self._current:
            self._at_broker_change(e, facts, key, r, before, after)
        election = r.get("election")
        if election:
            self.elections_by_key.setdefault(key, Counter())[election] += 1
            self.election_counts[(offset, election)] += 1
            if election == Election.OFFLINE_UNCLEAN:
                self._unclean(key, r)
        if not accepted:
            return
        if after != NO_LEADER and after != before and r.get("from_state") != NON_EXISTENT:
            self.changes[key] += 1
            self.change_counts[(offset, after)] += 1
        if before != after:
            self.lost[before] += 1
        if after == NO_LEADER and before != NO_LEADER:
            self.offline_by_key[key] += 1
        kind = r.get("event_type")
        if kind == IsrChange.type:
            self._shrink(r)
        elif kind == AssignReplicasToDirs.type:
            if not self.assigned:
                self.assigned = [offset, offset, 0]
            self.assigned[1] = offset
            self.assigned[2] += 1
            self.assigned_brokers.add(int(r["broker_id"]))

    def _rejoined(self, key: Key, r: Row) -> None:
        """A row after a broker's start decides the partition for its window: one creating the partition for every
        open window, one putting a broker back into the ISR for that broker's only (the other rows, most of them,
        look at no window)."""
        offset = r["source_offset"]
        if r.get("from_state") == NON_EXISTENT:
            for window in self._windows.values():
                if offset > window.start:
                    window.decided.add(key)
            return
        isr_before = r.get("isr_before") or ()
        for b in r.get("isr_after") or ():
            window = self._windows.get(b)
            if window is None or b in isr_before or offset <= window.start or key in window.decided:
                continue
            window.decided.add(key)
            window.facts.rejoined += 1
            window.facts.rejoined_by = max(window.facts.rejoined_by, offset)

    def _unclean(self, key: Key, r: Row) -> None:
        entry = Unclean(r, recovering=r.get("leader_recovery_state_after") == LeaderRecoveryState.RECOVERING)
        self.unclean.append(entry)
        if entry.recovering:
            def done(x: Row) -> bool:
                if x.get("leader_recovery_state_after") == LeaderRecoveryState.RECOVERING:
                    return False
                entry.recovered_at = x["source_offset"]
                return True

            self._watches.setdefault(key, []).append(done)

    def _shrink(self, r: Row) -> None:
        """Leaders dropping a follower from the ISR, in runs per broker: a run ends at the broker's next change."""
        # A replica a completed reassignment removed is no longer in replica_states: not a lagging one.
        still = set(r.get("replica_states") or ())
        offset = r["source_offset"]
        for b in set(r.get("isr_before") or []) - set(r.get("isr_after") or []):
            if b not in still:
                continue
            runs = self.shrinks.setdefault(b, [])
            cuts = self.cuts.get(b, [])
            if runs:
                i = bisect_right(cuts, runs[-1][1])
                if not (i < len(cuts) and cuts[i] < offset):
                    runs[-1][1] = offset
                    runs[-1][2] += 1
                    continue
            runs.append([offset, offset, 1])

    def _topic_op(self, offset: int, parts: Sequence[Row]) -> None:
        rows = [r for r in parts if r.get("outcome") == Outcome.ACCEPTED]
        kinds = {r["event_type"] for r in rows}
        if kinds == {CreateTopic.type}:
            self.topic_ops.append(("create", offset, rows[0]["topic"], len(rows)))
        elif kinds == {CreatePartitions.type}:
            self.topic_ops.append(("partitions", offset, rows[0]["topic"], len(rows)))
        elif kinds == {DeleteTopic.type}:
            self.topic_ops.append(("delete", offset, rows[0]["topic"], {key_of(r) for r in rows}))
        elif not self.topic_ops or self.topic_ops[-1] != ("other",):
            self.topic_ops.append(("other",))

    def _preferred(self, offset: int, parts: Sequence[Row]) -> None:
        rows = [r for r in parts if r.get("election") == Election.PREFERRED]
        if rows:
            self.preferred.append((offset, rows[0]["event_type"], len(rows),
                                   Counter(as_int(r.get("leader_after")) for r in rows)))

    # -- broker changes ----------------------------------------------------------------------------------------

    def _broker_change(self, e: Any, has_rows: bool) -> BrokerFacts:
        """A broker change closes the window of the broker's last start and, a start, opens one."""
        self.cuts.setdefault(e.broker, []).append(e.offset)
        window = self._windows.get(e.broker)
        if window is not None and e.offset > window.start:
            del self._windows[e.broker]
        facts = self.brokers[(e.offset, e.broker)] = BrokerFacts(has_rows=has_rows)
        if e.change is BrokerChangeKind.STARTUP:
            self._windows[e.broker] = _Window(e.offset, facts)
        return facts

    def _at_broker_change(self, e: Any, facts: BrokerFacts, key: Key, r: Row, before: int, after: int) -> None:
        """A partition row of a broker change's event, counted for its sentence; a partition the failed broker led
        and left offline watched until it has a leader again."""
        b = e.broker
        facts.moved += before == b and after not in (b, NO_LEADER)
        facts.kept += after == b
        facts.isr_left += isr_left(r, b)
        if before == NO_LEADER and after != NO_LEADER:
            facts.elected.add(key)
        if before != b:
            return
        facts.lost += 1
        if e.change is BrokerChangeKind.FAILURE:
            if after != NO_LEADER:
                facts.same_second += 1
            else:
                self._watches.setdefault(key, []).append(_Back(e, facts, key, self))

    def close(self) -> None:
        """The end of the log: a partition still watched stayed offline to the end."""
        for watches in self._watches.values():
            for w in watches:
                if isinstance(w, _Back):
                    w.facts.stayed_offline.add(w.key)
        self._watches.clear()
        self._windows.clear()


def isr_left(r: Row, broker: int) -> bool:
    """The row took `broker` out of the ISR while it was not the leader."""
    return (broker in (r.get("isr_before") or []) and broker not in (r.get("isr_after") or [])
            and as_int(r.get("leader_before")) != broker)


class _Back:
    """The watch on a partition a failed broker left offline: its first accepted row with a leader (or that deletes
    it) ends the wait."""

    def __init__(self, e: Any, facts: BrokerFacts, key: Key, owner: Facts) -> None:
        self.e, self.facts, self.key, self.owner = e, facts, key, owner

    def __call__(self, back: Row) -> bool:
        if as_int(back.get("leader_after")) == NO_LEADER and back.get("to_state") != NON_EXISTENT:
            return False
        e = self.e
        back_time = self.owner._time  # `back` is a row of the event being added
        if e.time is not None and back_time is not None and back_time - e.time < timedelta(seconds=1):
            self.facts.same_second += 1
            return True
        reason = (back["source_offset"], back.get("to_state") == NON_EXISTENT,
                  back.get("election") == Election.OFFLINE_UNCLEAN, back["event_type"])
        self.facts.waited.setdefault(reason, Named()).add(self.key)
        return True
