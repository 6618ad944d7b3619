"""The cluster's health after each event of the log, from the audit's columns: offline and under-replicated
partitions and the partitions each broker leads, and every partition as the log leaves it (streaming.analysis.
timeline's definitions).

A partition's rows (accepted partition rows with a `to_state`) are a sequence of states; each row changes the
counts by what its partition was before it (its previous row) and what it is after. So the counts after each event
are running sums of these changes, added up per event: numpy over the rows grouped by partition, not a Python step
per row. A reassignment's removing replicas (from the decisions, set after an event's rows) change whether a
partition is under-replicated; the few partitions a decision names that way are walked row by row.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from statemachine.errors import Outcome
from statemachine.record import NO_LEADER
from statemachine.states import PartitionState
from streaming.analysis.columns import Latest, list_sizes, partition_keys, run_starts
from streaming.analysis.words import Key

NON_EXISTENT = PartitionState.NON_EXISTENT


@dataclass(slots=True)  # one per partition: a million of them for a million-partition snapshot
class PartitionAtEnd:
    state: str = NON_EXISTENT
    leader: int = NO_LEADER
    isr: tuple[int, ...] = ()
    replicas: tuple[int, ...] = ()  # the audit's replicas_after
    removing: tuple[int, ...] = ()  # a reassignment's removing replicas, from the decisions when present

    @property
    def offline(self) -> bool:
        return self.state != NON_EXISTENT and self.leader == NO_LEADER

    @property
    def under_replicated(self) -> bool:
        if self.leader == NO_LEADER or self.state == NON_EXISTENT:
            return False
        return len(self.isr) < len([r for r in self.replicas if r not in self.removing])


@dataclass
class Health:
    """After each event of the log (its position in the log's events): the counts, and each broker's led
    partitions as its changes (the event positions where the count changes, and by how much)."""

    offline: Any  # numpy int64 per event
    under_replicated: Any  # numpy int64 per event
    led_changes: dict[int, tuple[Any, Any]]  # broker -> (event positions, changes there)
    partitions: dict[Key, PartitionAtEnd]  # as the log leaves them
    ever_offline: set[Key]
    topics: set[str]
    brokers: set[int]  # the replicas, ISRs and replica states of the partition rows

    def led(self, broker: int) -> Any:
        """The partitions `broker` leads after each event (numpy int64)."""
        import numpy as np

        led = np.zeros(len(self.offline), dtype=np.int64)
        events, changes = self.led_changes.get(broker, ((), ()))
        led[np.asarray(events, dtype=np.int64)] = changes
        return np.cumsum(led)

    def led_peak_and_end(self, broker: int) -> tuple[int, int]:
        """The most partitions `broker` led after an event, and after the last."""
        import numpy as np

        led = np.cumsum(self.led_changes.get(broker, ((), np.zeros(0, dtype=np.int64)))[1])
        return int(led.max(initial=0)), int(led[-1]) if len(led) else 0


@dataclass
class _Rows:
    """The partition rows' columns the counts read, a record batch at a time."""

    offset: list[Any] = field(default_factory=list)
    key: list[Any] = field(default_factory=list)  # topic number << 32 | partition
    exists: list[Any] = field(default_factory=list)
    leader: list[Any] = field(default_factory=list)
    isr: list[Any] = field(default_factory=list)  # ISR sizes
    replicas: list[Any] = field(default_factory=list)  # replica set sizes


class HealthColumns:
    """Reads the audit's record batches in log order (`watch`), then counts (`health`)."""

    def __init__(self) -> None:
        self.topic_number: dict[str, int] = {}
        self.rows = _Rows()
        self.latest = Latest()  # each partition's last row (what it is at the end)
        # Per batch, the rows' replica sets: the decisions (read once the audit is, which may be while the replay
        # still writes them) name the partitions whose rows `_moving` walks one by one.
        self.replicas_after: list[Any] = []
        self.topics: set[str] = set()
        self.brokers: set[int] = set()

    def watch(self, batches: Iterator[Any]) -> Iterator[Any]:
        """The batches, each read on its way."""
        for batch in batches:
            self._add(batch)
            yield batch

    def _number(self, key: Key) -> int:
        return self.topic_number.setdefault(key[0], len(self.topic_number)) << 32 | key[1]

    def _keys(self, numbers: Any) -> Iterator[Key]:
        topics = list(self.topic_number)
        return ((topics[k >> 32], k & 0xFFFFFFFF) for k in numbers.tolist())

    def _add(self, batch: Any) -> None:
        import numpy as np
        import pyarrow.compute as pc

        rows = batch.filter(pc.and_(pc.and_(pc.is_valid(batch["partition"]), pc.is_valid(batch["to_state"])),
                                    pc.not_equal(batch["outcome"], str(Outcome.REJECTED))))
        if not rows.num_rows:
            return
        self.topics.update(pc.unique(rows["topic"]).to_pylist())
        key = partition_keys(rows["topic"], rows["partition"], self.topic_number)
        exists = pc.not_equal(rows["to_state"], str(NON_EXISTENT)).to_numpy(zero_copy_only=False)
        leader = pc.fill_null(rows["leader_after"], NO_LEADER).to_numpy().astype(np.int64)
        r = self.rows
        for column, values in ((r.offset, rows["source_offset"].to_numpy()), (r.key, key), (r.exists, exists),
                               (r.leader, leader), (r.isr, list_sizes(rows["isr_after"])),
                               (r.replicas, list_sizes(rows["replicas_after"]))):
            column.append(values)
        for name in ("replicas_after", "isr_after", "replica_states"):
            self.brokers.update(pc.unique(pc.list_flatten(rows[name])).to_pylist())
        self.latest.add(rows.select(["topic", "partition", "to_state", "leader_after", "isr_after",
                                     "replicas_after"]), key)
        self.replicas_after.append(rows["replicas_after"])

    def health(self, events: Sequence[int], removing_at: Mapping[int, Mapping[Key, tuple[int, ...]]]) -> Health:
        """The counts after each of `events` (the log's offsets, in order), `removing_at` the removing replicas a
        reassignment's decisions give partitions, per event (the last decision's)."""
        import numpy as np

        r, n = self.rows, len(events)
        if not r.offset:
            return Health(np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), {}, {}, set(), self.topics,
                          self.brokers)
        offset, key, exists, leader, isr, replicas = (np.concatenate(c) for c in (
            r.offset, r.key, r.exists, r.leader, r.isr, r.replicas))
        events = np.asarray(events, dtype=np.int64)
        event = np.searchsorted(events, offset)
        led = np.where(exists & (leader != NO_LEADER), leader, NO_LEADER)
        offline = exists & (leader == NO_LEADER)
        urp = (led != NO_LEADER) & (isr < replicas)
        removing, changes = self._moving(removing_at, offset, events, key, exists, leader, isr, urp)
        by_key = np.argsort(key, kind="stable")
        first = run_starts(key[by_key])
        return Health(
            offline=_running(event[by_key], offline[by_key], first, n),
            under_replicated=self._under_replicated(key, event, urp, changes, n),
            led_changes=_led_changes(event[by_key], led[by_key], first, n),
            partitions=self._partitions(removing), ever_offline=set(self._keys(np.unique(key[offline]))),
            topics=self.topics, brokers=self.brokers)

    def _moving(self, removing_at: Mapping[int, Mapping[Key, tuple[int, ...]]], offset: Any, events: Any, key: Any,
                exists: Any, leader: Any, isr: Any, urp: Any
                ) -> tuple[dict[int, tuple[int, ...]], list[tuple[float, int, int, bool]]]:
        """The partitions a decision gives removing replicas, row by row in log order, a decision's removing
        replicas set after its event's rows while the partition exists (as timeline's partitions always had them):
        the under-replication of their rows while they have removing replicas (into `urp`), the changes a decision
        makes to it (place among the rows, event, partition, under-replicated) and each existing partition's
        removing replicas at the end (by partition number)."""
        import numpy as np
        import pyarrow as pa

        logged = set(events.tolist())
        decided = sorted((int(np.searchsorted(offset, o, side="right")) - 0.5, int(np.searchsorted(events, o)),
                          self._number(k), v) for o, keys in removing_at.items() if o in logged
                         for k, v in keys.items())
        # The partitions a decision gives removing replicas: their rows, walked one by one.
        moving = {self._number(k) for keys in removing_at.values() for k, removing in keys.items() if removing}
        rows = np.flatnonzero(np.isin(key, np.array(sorted(moving), dtype=np.int64)))
        lists = pa.chunked_array(self.replicas_after).take(pa.array(rows)).combine_chunks() if len(rows) else None
        flat, cut = (lists.values.to_numpy(), lists.offsets.to_numpy()) if lists is not None else (None, None)
        removing: dict[int, tuple[int, ...]] = {}
        present: dict[int, tuple[int, int, int]] = {}  # the last row's leader, ISR size and place in `lists`
        changes: list[tuple[float, int, int, bool]] = []
        at = 0

        def short(leader: int, isr: int, j: int, removing: tuple[int, ...]) -> bool:
            """A leader and an ISR smaller than the replica set without the removing replicas."""
            return leader != NO_LEADER and isr < len([r for r in flat[cut[j]:cut[j + 1]].tolist()
                                                     if r not in removing])

        def settle(row: float) -> None:  # the decisions before this row
            nonlocal at
            while at < len(decided) and decided[at][0] < row:
                place, event, k, value = decided[at]
                if k in present:
                    removing[k] = value
                    changes.append((place, event, k, short(*present[k], value)))
                at += 1

        for j, (i, k, there, lead, size) in enumerate(zip(rows.tolist(), key[rows].tolist(), exists[rows].tolist(),
                                                           leader[rows].tolist(), isr[rows].tolist(), strict=True)):
            settle(i)
            if k not in present:
                removing[k] = ()
            if there:
                present[k] = (lead, size, j)
            else:
                present.pop(k, None)
            if removing[k]:
                urp[i] = there and short(lead, size, j, removing[k])
        settle(len(offset))
        return {k: removing[k] for k in present}, changes

    def _under_replicated(self, key: Any, event: Any, urp: Any, changes: list[tuple[float, int, int, bool]],
                          n: int) -> Any:
        import numpy as np

        # A row's place among its partition's states is its position; a decision's change goes after its event's.
        place = np.arange(len(key), dtype=np.float64)
        if changes:
            place = np.concatenate([place, [c[0] for c in changes]])
            key = np.concatenate([key, np.array([c[2] for c in changes], dtype=np.int64)])
            event = np.concatenate([event, np.array([c[1] for c in changes], dtype=np.int64)])
            urp = np.concatenate([urp, np.array([c[3] for c in changes], dtype=bool)])
        order = np.lexsort((place, key))
        return _running(event[order], urp[order], run_starts(key[order]), n)

    def _partitions(self, removing: Mapping[int, tuple[int, ...]]) -> dict[Key, PartitionAtEnd]:
        """Each existing partition as its last row leaves it, with its removing replicas."""
        out: dict[Key, PartitionAtEnd] = {}
        for row in self.latest.table().to_pylist():
            if row["to_state"] != NON_EXISTENT:
                k = (row["topic"], row["partition"])
                leader = NO_LEADER if row["leader_after"] is None else row["leader_after"]
                out[k] = PartitionAtEnd(row["to_state"], leader, tuple(row["isr_after"] or ()),
                                        tuple(row["replicas_after"] or ()), removing.get(self._number(k), ()))
        return out


def _running(event: Any, state: Any, first: Any, n: int) -> Any:
    """The number of partitions in `state` after each of `n` events, from their rows grouped by partition (in log
    order within a partition; `first` marks each partition's first row): each row adds what it changed."""
    import numpy as np

    state = state.astype(np.int64)
    before = np.concatenate([[0], state[:-1]])
    before[first] = 0
    return np.cumsum(np.bincount(event, weights=state - before, minlength=n)).astype(np.int64)


def _led_changes(event: Any, led: Any, first: Any, n: int) -> dict[int, tuple[Any, Any]]:
    """Per broker, the events where the partitions it leads change and by how much (rows grouped by partition as
    in `_running`; `led` the row's leader, or NO_LEADER for none or a deleted partition)."""
    import numpy as np

    before = np.concatenate([[NO_LEADER], led[:-1]])
    before[first] = NO_LEADER
    moved = led != before
    gained, lost = moved & (led != NO_LEADER), moved & (before != NO_LEADER)
    out: dict[int, tuple[Any, Any]] = {}
    for broker in np.union1d(led[gained], before[lost]).tolist():
        change = (np.bincount(event[gained & (led == broker)], minlength=n)
                  - np.bincount(event[lost & (before == broker)], minlength=n))
        events = np.flatnonzero(change)
        out[broker] = (events, change[events])
    return out
