"""`isrflow import-zk` and the `zk:PATH` source of `replay`: a ZooKeeper server's transaction log and snapshots
(the history of a ZooKeeper-mode Kafka cluster) as contract events, with the controller's own decisions beside
them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from streaming.errors import UsageError
from streaming.io.eventlog import Bounds
from streaming.io.jsonl import write_jsonl
from streaming.zookeeper.convert import convert
from streaming.zookeeper.files import read_zk_history

PREFIX = "zk:"


@dataclass(frozen=True)
class ZkImportSummary:
    files: list[Path]
    transactions: int
    failed: int
    events: int
    observed: int
    unexplained: int
    skipped: dict[str, int]
    replayed: str  # from which state, and why

    def describe(self) -> str:
        skipped = ", ".join(f"{k} x{v}" for k, v in sorted(self.skipped.items())) or "none"
        return (f"ZooKeeper history {self.replayed}\n  read {self.transactions} transactions from {len(self.files)} "
                f"file(s) ({', '.join(p.name for p in self.files)}): {self.events} events, {self.observed} observed "
                f"partition state writes; {self.failed} failed multis (changed nothing); skipped: {skipped}; "
                f"unexplained writes: {self.unexplained}")


def import_zk(source: Path, events_out: Path, observed_out: Path | None = None,
              bounds: Bounds | None = None) -> ZkImportSummary:
    """Read `source` (a ZooKeeper `version-2` directory or the dataDir holding it, or one `log.*`/`snapshot.*`) and
    write the contract events to `events_out` (and every partition state write to `observed_out`): the whole
    retained history."""
    if bounds is not None and bounds != Bounds():
        raise UsageError("a zk: source is replayed whole: --from-offset/--to-offset/--from/--to are for kafka:// and "
                         "kraft: sources")
    history = read_zk_history(source)
    result = convert(history)
    write_jsonl(events_out, result.events)
    if observed_out is not None:
        write_jsonl(observed_out, result.observed)
    return ZkImportSummary(history.files, len(history.txns), result.failed_txns, len(result.events),
                           len(result.observed), len(result.unexplained), dict(history.skipped), history.origin)
