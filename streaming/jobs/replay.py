"""`isrflow replay`: a bounded run of an event log, with the Spark pipeline or the local engine, then the
incident report."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from schemas.records import RequestRow
from schemas.tables import AUDIT, QUARANTINE, REQUESTS
from statemachine.controller import ControllerConfig
from statemachine.errors import Outcome
from statemachine.requests import RequestType
from streaming.analysis.progress import Progress
from streaming.analysis.report import write_report
from streaming.engine.collector import release_freed_memory
from streaming.engine.local import replay_local
from streaming.errors import UsageError
from streaming.history.trust import HISTORY_FACTS, trust_warnings
from streaming.io.delta import read_delta, scan_delta, write_decisions_jsonl, write_delta
from streaming.io.eventlog import Bounds, count_records, is_kafka_url, open_kafka_log, read_event_log, read_kafka_log
from streaming.io.jsonl import write_jsonl
from streaming.io.kafkaclient import KafkaSettings, secrets_scrubbed
from streaming.io.layout import ReplayOutput
from streaming.jobs import kraft, zookeeper
from streaming.jobs.beside import AgreementBeside, ReportBeside
from streaming.zookeeper.requests import write_requests_agreement

# A real cluster's history, by source prefix: read a node's files, write contract events and the controller's
# observed decisions, return a summary that describes itself.
HISTORY_SOURCES: dict[str, Callable[[Path, Path, Path, Bounds], Any]] = {
    kraft.PREFIX: kraft.import_kraft, zookeeper.PREFIX: zookeeper.import_zk}


# The rule set of the controller that wrote each kind of history.
NATIVE_RULES = {kraft.PREFIX: "kraft", zookeeper.PREFIX: "zk"}


@dataclass(frozen=True)
class _HistoryImport:
    events: Path
    observed: Path
    summary: Any  # ImportSummary or ZkImportSummary: describe() says what was read


def _history_source(source: str) -> str | None:
    return next((prefix for prefix in HISTORY_SOURCES if source.startswith(prefix)), None)


def _history_paths(prefix: str, out: Path) -> tuple[Path, Path]:
    """Where a history's events and the controller's observed decisions go."""
    return out / prefix.rstrip(":") / "events.jsonl", out / "observed.jsonl"


def _import_history(source: str, prefix: str, out: Path, bounds: Bounds,
                    broker_logs: Mapping[str, Path] | None = None) -> _HistoryImport:
    """`kraft:PATH` / `zk:PATH`: the history (for kraft:, the window `bounds` of it) converted into
    `out/<kind>/events.jsonl`, the controller's decisions into `out/observed.jsonl` (for zk:, with the brokers' logs
    given, `broker_logs`: controller_logs, server_logs, state_change)."""
    events, observed = _history_paths(prefix, out)
    read = HISTORY_SOURCES[prefix]
    if broker_logs:  # a zk: source's (_replay checks)
        read = functools.partial(read, **broker_logs)
    summary = read(Path(source[len(prefix):]), events, observed, bounds)
    return _HistoryImport(events, observed, summary)


@dataclass(frozen=True)
class ReplayOptions:
    source: str
    out: Path
    engine: str = "spark"
    batch_size: int | None = None  # the Spark engine's events per micro-batch (0: all; None: from the log's size)
    bounds: Bounds = field(default_factory=Bounds)
    config: ControllerConfig = field(default_factory=ControllerConfig)
    master: str | None = None
    spark_conf: dict[str, str] = field(default_factory=dict)
    # Client properties (security) for a kafka:// source: a properties file, then options over it.
    kafka_option_file: Path | None = None
    kafka_options: dict[str, str] = field(default_factory=dict)
    # A zk: source's state-change logs, to compare the controller's requests with isrflow's (None: a `state-change`
    # folder beside the zk: path, if there is one).
    state_change: Path | None = None
    # A zk: source's controller.log files (None: a `controller` folder beside the zk: path, if there is one).
    controller_logs: Path | None = None
    # A zk: source's server.log files (None: a `server` folder beside the zk: path, if there is one).
    server_logs: Path | None = None


# ReplayOptions' folders of a ZooKeeper-mode cluster's logs (each also an option, --state-change, ...).
_ZK_LOG_FOLDERS = ("state_change", "controller_logs", "server_logs")
_REQUEST_FIELDS = tuple(f.name for f in dataclasses.fields(RequestRow))
# An event's requests in the order the controller sends them (statemachine.requests): batch by batch, LeaderAndIsr,
# then UpdateMetadata, then StopReplica, each by broker.
_SENT = {str(t): rank for rank, t in enumerate(RequestType)}


def _sent_order(row: Mapping[str, Any]) -> tuple[int, int, int, int]:
    return row["source_offset"], row["batch"], _SENT[row["request"]], row["broker"]


def replay_spark(spark: object, records: Iterable[tuple[int, bytes]] | Path, out: Path,
                 config: ControllerConfig, batch_size: int = 0, source: str = "file",
                 progress: object | None = None) -> None:
    """The Spark pipeline over a log, writing a replay's output folder (decisions.jsonl, audit, quarantine; the
    requests, requests.jsonl in the local engine's order)."""
    from streaming.engine.pipeline import replay_spark as run_pipeline

    if isinstance(records, Path):
        records = read_event_log(records)
    layout = ReplayOutput(out)
    lake = layout.lake
    run_pipeline(spark, records, lake, layout.checkpoints, layout.staging, config, batch_size, source, progress)
    for path, schema in ((lake.audit, AUDIT), (lake.quarantine, QUARANTINE), (lake.requests, REQUESTS)):
        if not (path / "_delta_log").exists():
            write_delta(path, [], schema)
    write_decisions_jsonl(layout.decisions_jsonl, read_delta(lake.decisions))
    write_jsonl(layout.requests_jsonl, ({name: r[name] for name in _REQUEST_FIELDS}
                                        for r in sorted(read_delta(lake.requests), key=_sent_order)))


def _requests_agreement(options: ReplayOptions, layout: ReplayOutput) -> str:
    """A zk: source with its brokers' state-change logs: the controller's requests beside isrflow's."""
    state_change = options.state_change or zookeeper.folder_beside(Path(options.source[len(zookeeper.PREFIX):]),
                                                                   "state-change")
    if state_change is None:
        return ""
    return "\n  " + write_requests_agreement(layout.root, state_change, layout.requests_jsonl).describe(layout.root)


def _column(table: Path, name: str) -> list[Any]:
    """One column of a Delta table, as values."""
    scanned = scan_delta(table, columns=[name])
    return scanned.column(name).to_pylist() if scanned is not None else []


def replay(options: ReplayOptions) -> str:
    """Replay `options.source` into `options.out`; returns the summary printed for the user."""
    kafka = KafkaSettings.load("", options.kafka_option_file, options.kafka_options)
    with secrets_scrubbed(kafka):
        return _replay(options, kafka)


def _replay(options: ReplayOptions, kafka: KafkaSettings) -> str:
    with ExitStack() as stack:  # holds a kraft: source's import pipe until the replay is written
        return _replay_with(options, kafka, stack)


def _replay_with(options: ReplayOptions, kafka: KafkaSettings, stack: ExitStack) -> str:
    layout = ReplayOutput(options.out)
    b = options.bounds
    prefix = _history_source(options.source)
    folders = {name: getattr(options, name) for name in _ZK_LOG_FOLDERS if getattr(options, name) is not None}
    for name, folder in folders.items():
        option = "--" + name.replace("_", "-")
        if prefix != zookeeper.PREFIX:
            raise UsageError(f"{option} holds a ZooKeeper-mode cluster's logs: it goes with a zk: source")
        if not folder.is_dir():
            raise UsageError(f"{option} {folder}: no such directory")
    pipe: kraft.ImportPipe | None = None
    imported: _HistoryImport | None = None
    if prefix == kraft.PREFIX and options.engine == "local":
        # The import in a child process that feeds the replay as it converts: both cores work.
        pipe = stack.enter_context(kraft.ImportPipe(Path(options.source[len(prefix):]),
                                                    *_history_paths(prefix, layout.root), b))
        pipe.first()
        records, total, source, described = pipe.records(), None, "file", options.source
    elif prefix is not None:
        imported = _import_history(options.source, prefix, layout.root, b, folders)
        path = imported.events
        records, total, source, described = read_event_log(path), count_records(path), "file", options.source
    elif is_kafka_url(options.source):
        log = open_kafka_log(options.source, b.from_offset, b.to_offset, b.from_time, b.to_time, kafka)
        records: Iterable[tuple[int, bytes]] = read_kafka_log(log)
        total, source = log.total, "kafka"
        described = f"{options.source} offsets [{log.start}, {log.stop})"
    else:
        path = Path(options.source)
        records, total, source, described = read_event_log(path), count_records(path), "file", str(path)
    # A KRaft log's feature levels are events at their offsets; the configured ones hold until the log sets them.
    config = options.config
    release = getattr(imported.summary, "release", None) if imported is not None else None
    if release is not None and release.kafka_version is not None and config.kafka_version is None:
        config = replace(config, kafka_version=release.kafka_version)  # the brokers' server.log names it
    if prefix is not None and NATIVE_RULES[prefix] != config.rules.name:
        # Another controller's rules over this history (the migration question): its leaders' ISR changes are
        # taken at the epochs these rules gave them.
        config = replace(config, isr_changes_at_current_epochs=True)
    layout.clear()
    for name in ("agreement.jsonl", "histories.jsonl", "requests_agreement.jsonl", HISTORY_FACTS):  # a real history's
        (layout.root / name).unlink(missing_ok=True)
    started = time.monotonic()
    agreed: AgreementBeside | None = None
    if prefix is not None:  # a real history: its agreement reads both sides as they are written, in its own process
        agreed = stack.enter_context(AgreementBeside(layout.root, _history_paths(prefix, layout.root)[1],
                                                     layout.decisions_jsonl))
    reporter: ReportBeside | None = None
    if options.engine == "local":  # the report reads the audit as the engine makes it, in a process of its own
        reporter = stack.enter_context(ReportBeside(layout.root, layout.report, agreement=prefix is not None))
    with Progress(total) as progress:
        if reporter is not None:
            replay_local(records, layout.root, config, source, lambda _: progress.advance(1), reporter.send)
            release_freed_memory()  # the audit's columns and the writer's buffers, before the report reads it back
        else:
            from streaming.engine.session import build_spark, replay_sizing

            # Micro-batches and the driver's heap sized from the log, so that a big log runs with the defaults;
            # the user's --conf comes on top.
            batch_size, sized = replay_sizing(total, options.batch_size)
            spark = build_spark("isrflow-replay", options.master, {**sized, **options.spark_conf})
            replay_spark(spark, records, layout.root, config, batch_size, source, progress)
    agreement, warnings = "", ""
    if pipe is not None:  # its summary once the replay has read every line
        imported = _HistoryImport(*_history_paths(kraft.PREFIX, layout.root), pipe.summary)
    if imported is not None:
        facts = imported.summary.facts()
        facts.write(layout.root)  # for the report, now and when `isrflow report` writes it again
    if prefix == zookeeper.PREFIX:
        agreement += _requests_agreement(options, layout)
    if agreed is not None:
        agreed.replayed()  # observed.jsonl and decisions.jsonl are whole
    if reporter is not None:
        reporter.replayed()
        if agreed is not None:
            agreed.result()
            reporter.agreement_written()
        report = reporter.result()
    else:
        report = write_report(layout.root, layout.report, agreed.result if agreed is not None else None)
    if imported is not None and agreed is not None:
        written = agreed.result()
        agreement = f"\n  {imported.summary.describe()}\n  {written.describe(layout.root)}{agreement}"
        # Said first, before anything is read from the replay: how far it tells the cluster's story.
        warnings = "".join(f"WARNING: {w}\n" for w in trust_warnings(facts, written.figures))
    # The counts read one column each: the rows as dicts cost more than the replay's core on a long log.
    outcomes = _column(layout.audit, "outcome")
    quarantined = len(_column(layout.quarantine, "source_offset"))
    with layout.decisions_jsonl.open() as fh:
        decisions = sum(1 for _ in fh)
    rejected = outcomes.count(Outcome.REJECTED)
    return (f"{warnings}replayed {described} with the {options.engine} engine in {time.monotonic() - started:.1f}s: "
            f"{len(outcomes)} audit rows, {decisions} decisions, {rejected} rejections, {quarantined} quarantined\n"
            f"  {layout.decisions_jsonl}\n  {layout.audit} (Delta)\n  {layout.quarantine} (Delta)\n  {report}"
            f"{agreement}")
