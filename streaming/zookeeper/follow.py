"""Follow a live ZooKeeper server's transaction log: each poll reads only the transactions appended since the last
one, and the converter keeps its state between polls (the ZooKeeper side of `isrflow bridge`).

`ZkFollower(version_2_dir, after=None)` starts from the server's newest snapshot (its state seeded as events, then the
log after it; from zxid 0 when there is no snapshot). `after=N` resumes a bridge that published up to
zxid N: the history up to N is read as state only (no event: they were published), then the transactions after N
are the events. A poll reads each log file from where the last poll stopped (whole records only: one the server is
still writing waits for the next poll) and the files ZooKeeper started since (a new log at each snapshot).
"""

from __future__ import annotations

from pathlib import Path

from streaming.zookeeper.convert import Converter, ZkConverted
from streaming.zookeeper.files import (
    LOG_HEADER_BYTES,
    log_files,
    read_log_from,
    read_snapshot,
    read_zk_history,
    snapshot_files,
)
from streaming.zookeeper.txnlog import ZkHistory


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
            self.pending = self.converter.convert(ZkHistory(snapshot, [], snapshots[-1:], "the newest snapshot"))
        else:
            history = read_zk_history(self.directory)
            self.last_zxid = history.snapshot.zxid if history.snapshot is not None else 0
            # Everything up to `after` was published: it is the state, not events.
            self.converter.convert(ZkHistory(history.snapshot, [t for t in history.txns if t.zxid <= after],
                                             history.files, history.origin))
            self.last_zxid = max(self.last_zxid, after)
            self.pending = ZkConverted()

    def poll(self) -> ZkConverted:
        """The events and observed decisions of the transactions appended since the last poll (the first poll also
        hands out the seed of a history that starts at a snapshot)."""
        txns = []
        for log in log_files(self.directory):
            position = self.positions.get(log, LOG_HEADER_BYTES)
            read, end, _torn = read_log_from(log, position)
            self.positions[log] = end
            txns += [t for t in read if t.zxid > self.last_zxid]
            if read:
                self.last_zxid = max(self.last_zxid, read[-1].zxid)
        txns.sort(key=lambda t: t.zxid)
        out, self.pending = self.pending, ZkConverted()
        new = self.converter.feed(txns)
        return ZkConverted(out.events + new.events, out.observed + new.observed, out.unexplained + new.unexplained)

