"""`isrflow import-zk` and the `zk:PATH` source of `replay`: a ZooKeeper server's transaction log and snapshots
(the history of a ZooKeeper-mode Kafka cluster) as contract events, with the controller's own decisions beside
them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from streaming.errors import UsageError
from streaming.history.trust import ImportFacts
from streaming.io.eventlog import Bounds
from streaming.io.jsonl import write_jsonl
from streaming.zookeeper.controllerlog import ControllerReads, read_controller_logs
from streaming.zookeeper.convert import convert
from streaming.zookeeper.files import read_zk_history
from streaming.zookeeper.release import ClusterRelease, read_release, with_protocol
from streaming.zookeeper.serverlog import AlterPartitionLog, read_server_logs
from streaming.zookeeper.statechange import read_offline_marks

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
    controller_logs: Path | None = None  # the controllers' controller.log files read
    reads: ControllerReads | None = None  # what they say the controllers read (None without them)
    server_logs: Path | None = None  # the leaders' server.log files read
    alter_partitions: AlterPartitionLog | None = None  # the AlterPartition requests they logged (None without them)
    release: ClusterRelease | None = None  # the protocol and release the cluster's writes and logs show

    def facts(self) -> ImportFacts:
        """What the report must say first (streaming.history.trust): the parts of the log left out."""
        return ImportFacts(dict(self.skipped), self.unexplained)

    def describe(self) -> str:
        skipped = ", ".join(f"{k} x{v}" for k, v in sorted(self.skipped.items())) or "none"
        logs = ("" if self.reads is None else
                f"\n  read what the controllers read from {self.controller_logs}: {len(self.reads.failovers)} "
                f"failovers, {sum(map(len, self.reads.broker_reads.values()))} BrokerChange reads")
        if self.alter_partitions is not None:
            requests = self.alter_partitions.requests
            logs += (f"\n  read the leaders' AlterPartition requests from {self.server_logs}: {len(requests)} "
                     f"answered, {sum(r.unwritten for r in requests)} of them without a write")
        return (f"ZooKeeper history {self.replayed}\n  read {self.transactions} transactions from {len(self.files)} "
                f"file(s) ({', '.join(p.name for p in self.files)}): {self.events} events, {self.observed} observed "
                f"partition state writes; {self.failed} failed multis (changed nothing); skipped: {skipped}; "
                f"unexplained writes: {self.unexplained}{logs}"
                + ("" if self.release is None else f"\n  {self.release.describe()}"))


def folder_beside(source: Path, name: str) -> Path | None:
    """The folder `name` beside a zk: path, if any: the brokers' logs as the campaign keeps them (`controller`,
    `server`, `state-change`: broker-N.log each)."""
    folder = source.parent / name
    return folder if folder.is_dir() else None


def import_zk(source: Path, events_out: Path, observed_out: Path | None = None,
              bounds: Bounds | None = None, controller_logs: Path | None = None,
              server_logs: Path | None = None, state_change: Path | None = None) -> ZkImportSummary:
    """Read `source` (a ZooKeeper `version-2` directory or the dataDir holding it, or one `log.*`/`snapshot.*`) and
    write the contract events to `events_out` (and every partition state write to `observed_out`): the whole
    retained history. With the brokers' controller.log files (`controller_logs`, default: a `controller` folder
    beside `source`), what each controller read of /brokers/ids is taken from them; with their server.log files
    (`server_logs`, default: a `server` folder beside it), the AlterPartition requests the controller answered
    without a write; with their state-change.log files (`state_change`, default: a `state-change` folder beside
    it), the replicas each controller marked offline at a broker's log dir failure; what the cluster wrote and logged
    says its protocol, which the events start with, and its release (`ClusterRelease`)."""
    if bounds is not None and bounds != Bounds():
        raise UsageError("a zk: source is replayed whole: --from-offset/--to-offset/--from/--to are for kafka:// and "
                         "kraft: sources")
    history = read_zk_history(source)
    controller_logs = controller_logs or folder_beside(source, "controller")
    reads = read_controller_logs(controller_logs) if controller_logs is not None else None
    server_logs = server_logs or folder_beside(source, "server")
    alter_partitions = read_server_logs(server_logs) if server_logs is not None else None
    state_change = state_change or folder_beside(source, "state-change")
    marks = read_offline_marks(state_change) if state_change is not None else None
    result = convert(history, reads, alter_partitions.requests if alter_partitions is not None else (), marks,
                     alter_partitions.shutdowns if alter_partitions is not None else None)
    release = read_release(history, server_logs)
    events = with_protocol(release, history, result.events)
    write_jsonl(events_out, events)
    if observed_out is not None:
        write_jsonl(observed_out, result.observed)
    return ZkImportSummary(history.files, len(history.txns), result.failed_txns, len(events),
                           len(result.observed), len(result.unexplained), dict(history.skipped), history.origin,
                           controller_logs, reads, server_logs, alter_partitions, release)
