"""Follow a live ZooKeeper server's transaction log: each poll reads only the transactions appended since the last
one, and the converter keeps its state between polls (the ZooKeeper side of `isrflow bridge`).

`ZkFollower(version_2_dir, after=None)` starts from the server's newest snapshot (its state seeded as events, then the
log after it; from zxid 0 when there is no snapshot). `after=N` resumes a bridge that published up to
zxid N: the history up to N is read as state only (no event: they were published), then the transactions after N
are the events. A poll reads each log file from where the last poll stopped (whole records only: one the server is
still writing waits for the next poll) and the files ZooKeeper started since (a new log at each snapshot).

A poll hands out only what is settled: the newest event and everything after it wait for a later poll while the
controller may still be handling it (`Converter.unsettled_from`: a transaction less than `SETTLE_MS` old, by the
server's clock, which is the follower's beside the server; an admin election or a reassignment not complete yet),
so a bridge publishes an event with all its partition writes, and nothing it would have to correct. The protocol
and the release the writes show (streaming.zookeeper.release, as `replay zk:` reads them, without the brokers' logs)
go out as an UpdateFeatures before the first event, and again where a later write changes them. Transactions
gone before they were read (autopurge deleted the log past a lagging follower, or a resumed follower's history now
starts at a snapshot after its position) end the follower with an error: zxids of one leader epoch are consecutive,
so a gap shows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

from streaming.zookeeper.context import ZkConverted, event_ts, event_zxid
from streaming.zookeeper.convert import Converter
from streaming.zookeeper.files import (
    LOG_HEADER_BYTES,
    log_files,
    read_log_from,
    read_snapshot,
    read_zk_history,
    snapshot_files,
)
from streaming.zookeeper.release import ClusterRelease, Signs, protocol_event
from streaming.zookeeper.txnlog import ZkHistory

# A ZooKeeper-era controller writes an event's partition states within milliseconds of each other (a few batches of
# multis): two quiet seconds after the last transaction, its handling is over.
SETTLE_MS = 2000


class TransactionsLost(RuntimeError):
    """Transactions the follower had not read are gone from the server's directory."""


class ZkFollower:
    def __init__(self, directory: Path, after: int | None = None) -> None:
        directory = Path(directory)
        self.directory = directory / "version-2" if (directory / "version-2").is_dir() else directory
        self.converter = Converter()
        self.positions: dict[Path, int] = {}
        if after is None:
            # Nothing published yet: the newest snapshot is the state (its seed events go out first), the log after
            # it the events; with no snapshot, from zxid 0.
            snapshots = snapshot_files(self.directory)
            snapshot = read_snapshot(snapshots[-1]) if snapshots else None
            self.last_zxid = snapshot.zxid if snapshot is not None else 0
            seeded = self.converter.convert(ZkHistory(snapshot, [], snapshots[-1:], "the newest snapshot"))
            self.pending = ZkConverted([], list(seeded.observed), list(seeded.unexplained))
            held = list(seeded.events)
            self.signs, self.release = Signs().add(snapshot, []), ClusterRelease(None, None, ())
            self._protocol(held, 0, self.last_zxid, held[0]["ts"] if held else None)
        else:
            history = read_zk_history(self.directory)
            self.last_zxid = history.snapshot.zxid if history.snapshot is not None else 0
            if self.last_zxid > after:
                raise TransactionsLost(
                    f"{self.directory}: the history now starts at the snapshot of zxid {self.last_zxid:#x}, after the "
                    f"last published zxid {after:#x}: the transactions between were purged before they were read")
            # Everything up to `after` was published: it is the state, not events.
            published = [t for t in history.txns if t.zxid <= after]
            self.converter.convert(ZkHistory(history.snapshot, published, history.files, history.origin))
            # What it showed then went out then.
            self.signs = Signs().add(history.snapshot, published)
            self.release = self.signs.release()
            self.last_zxid = max(self.last_zxid, after)
            self.pending = ZkConverted()
            held = []
        self._forget()
        self.converter.result.events.extend(held)  # the first poll hands them out

    def poll(self) -> ZkConverted:
        """The settled events and observed decisions of the transactions appended since the last poll (the first
        poll also hands out the seed of a history that starts at a snapshot), and of those held back before."""
        before = self.last_zxid
        txns = []
        logs = log_files(self.directory)
        self.positions = {log: self.positions.get(log, LOG_HEADER_BYTES) for log in logs}  # purged ones forgotten
        for log in logs:
            read, end, _torn = read_log_from(log, self.positions[log])
            self.positions[log] = end
            txns += [t for t in read if t.zxid > self.last_zxid]
            if read:
                self.last_zxid = max(self.last_zxid, read[-1].zxid)
        txns.sort(key=lambda t: t.zxid)
        for a, b in pairwise([before, *(t.zxid for t in txns)]):
            if b != a + 1 and b >> 32 == a >> 32:  # a new leader epoch starts its own count
                raise TransactionsLost(f"{self.directory}: the transactions from zxid {a + 1:#x} to {b - 1:#x} were "
                                       "deleted (autopurge) before they were read")
        # The events held back before are still the converter's: a later write may put one of its own before them
        # (a leader's ISR write that the request being handled read: isrchanges.read_by_request).
        held = list(self.converter.result.events)
        new = self.converter.feed(txns)
        events = self.converter.result.events
        if txns:
            self.signs.add(None, txns)
            first_new = next((i for i, e in enumerate(events) if all(e is not h for h in held)), len(events))
            self._protocol(events, first_new, txns[0].zxid, event_ts(txns[0].time))
        out = ZkConverted(list(events), self.pending.observed + new.observed,
                          self.pending.unexplained + new.unexplained)
        self._forget()
        hold = self.converter.unsettled_from(int(time.time() * 1000) - SETTLE_MS)
        if hold is None:
            self.pending = ZkConverted()
            return out
        settled, pending = (ZkConverted(*parts) for parts in zip(
            _split(out.events, event_zxid, hold), _split(out.observed, lambda o: o["source_offset"], hold),
            _split(out.unexplained, int, hold), strict=True))
        events.extend(pending.events)
        self.pending = ZkConverted([], pending.observed, pending.unexplained)
        return settled

    def _protocol(self, events: list[dict[str, Any]], at: int, zxid: int, ts: str | None) -> None:
        """Put the protocol and release the writes now show in `events` at index `at` (at `zxid`), if they
        changed."""
        now = self.signs.release()
        shown = (now.metadata_version, now.kafka_version)
        if not self.signs.settled() or shown == (self.release.metadata_version, self.release.kafka_version):
            return
        self.release = now
        event = protocol_event(now, zxid, ts or event_ts(int(time.time() * 1000)))
        if event is not None:
            events.insert(at, event)

    def _forget(self) -> None:
        """The converter keeps its state, not its output (a bridge runs for months): only the observed rows of
        partitions being reassigned stay, which the reassignment's completion rewrites (`poll` puts the events it
        holds back in again)."""
        result = self.converter.result
        result.events.clear()
        result.unexplained.clear()
        result.observed[:] = [o for o in result.observed if self.converter.reassigning((o["topic"], o["partition"]))]

    def close(self) -> None:
        """Nothing is held open between polls."""


def _split(items: list[Any], zxid: Callable[[Any], int], hold: int) -> tuple[list[Any], list[Any]]:
    """`items` (in zxid order) before zxid `hold`, and from it on."""
    cut = next((i for i, item in enumerate(items) if zxid(item) >= hold), len(items))
    return items[:cut], items[cut:]
