"""`isrflow run`: the long-running pipeline (both queries), a progress line per micro-batch, Prometheus metrics
(`--metrics-port`), graceful stop."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from statemachine.controller import ControllerConfig
from statemachine.rules import Rules
from streaming.engine.pipeline import Pipeline
from streaming.errors import UsageError
from streaming.io.kafkaclient import KafkaSettings, secrets_scrubbed

if TYPE_CHECKING:
    from streaming.engine.metrics import ShadowMetrics
    from streaming.engine.sequencer import SequencerState


@dataclass(frozen=True)
class RunOptions:
    bootstrap_servers: str
    events_topic: str
    decisions_topic: str
    # Local paths, or URIs of a Hadoop file system (s3a://, abfss://, gs://, hdfs://; streaming.io.storage).
    audit_table: str | Path
    checkpoint_dir: str | Path = "checkpoints"
    # Where bronze, commands, decisions and quarantine go (default: beside the audit table).
    lake_dir: str | Path | None = None
    trigger: str = "5 seconds"
    # Kafka client properties and Spark source options (--kafka-option), over those of kafka_option_file.
    kafka_options: dict[str, str] = field(default_factory=dict)
    kafka_option_file: Path | None = None
    starting_offsets: str = "earliest"
    quality: bool = False
    config: ControllerConfig = field(default_factory=ControllerConfig)
    master: str | None = None
    spark_conf: dict[str, str] = field(default_factory=dict)
    # spark.sql.shuffle.partitions of a new checkpoint (None: the checkpoint's own, else Spark's default 200).
    state_partitions: int | None = None
    # Serve Prometheus metrics on this port (0: a free one, printed); None: no metrics.
    metrics_port: int | None = None
    # Under the zk rules: the requests the controller sends, to the requests table.
    requests: bool = True


def run(options: RunOptions) -> int:
    if options.metrics_port is not None and not 0 <= options.metrics_port <= 65535:
        raise UsageError(f"--metrics-port must be a TCP port (0 to 65535; 0 picks a free one), "
                         f"got {options.metrics_port}")
    kafka = KafkaSettings.load(options.bootstrap_servers, options.kafka_option_file, options.kafka_options)
    with secrets_scrubbed(kafka):
        return _run(options, kafka)


def _run(options: RunOptions, kafka: KafkaSettings) -> int:
    started = time.monotonic()
    from streaming.engine.counts import BatchCounts
    from streaming.engine.pairing import check_pairing, clear_cut_first_write
    from streaming.engine.pipeline import parse_trigger, progress_listener, run_bounded, start_pipeline
    from streaming.engine.sequencer import SequencerState
    from streaming.engine.session import SHUFFLE_PARTITIONS, build_spark, default_master, state_partitions_conf
    from streaming.engine.sinks import DecisionPublisher
    from streaming.engine.sources import kafka_events
    from streaming.history.live import agreement_writer
    from streaming.io.eventlog import require_single_partition
    from streaming.io.layout import Checkpoints, Lake
    from streaming.io.storage import Storage, is_remote, location
    from streaming.quality.runner import batch_check

    require_single_partition(kafka, options.events_topic)
    lake = Lake.beside(location(options.audit_table), location(options.lake_dir) if options.lake_dir else None)
    checkpoints = Checkpoints(location(options.checkpoint_dir))
    # A local master is one machine: its small settings stay, but never the state partitions.
    master = options.master or default_master()
    small_machine = bool(master and master.startswith("local"))
    # A URI is reached through the session's JVM (Hadoop's FileSystem), so the session starts before the
    # checks; with local paths they come first and a refusal costs no Spark start.
    spark = (build_spark("isrflow-run", master, options.spark_conf, small_machine=small_machine)
             if is_remote(lake.audit, lake.bronze, checkpoints.root) else None)
    storage = Storage(spark)
    check_pairing(lake, checkpoints, storage)
    for leftover in clear_cut_first_write(checkpoints, storage):
        print(f"isrflow run: removed {leftover}, left by a run stopped inside its first batch's offsets write")
    requested = options.state_partitions
    if requested is None and SHUFFLE_PARTITIONS in options.spark_conf:
        requested = int(options.spark_conf[SHUFFLE_PARTITIONS])
    conf = {**options.spark_conf,
            **state_partitions_conf(requested, [checkpoints.partitions, checkpoints.sequencer], storage)}
    if spark is None:
        spark = build_spark("isrflow-run", master, conf, small_machine=small_machine)
    else:  # a SQL setting: it applies to queries started from now on
        spark.conf.set(SHUFFLE_PARTITIONS, conf[SHUFFLE_PARTITIONS])
    trigger = parse_trigger(options.trigger)
    events = kafka_events(spark, kafka, options.events_topic, options.starting_offsets)
    # One transactional id per checkpoint root: a restarted run fences its previous incarnation.
    transactional_id = "isrflow-" + hashlib.sha1(str(checkpoints.root).encode()).hexdigest()[:16]
    publisher = DecisionPublisher(kafka, options.decisions_topic, transactional_id)
    counts = BatchCounts()
    spark.streams.addListener(progress_listener(counts))
    check = batch_check(lake.quality) if options.quality else None
    agreement = agreement_writer(lake)  # behind `isrflow bridge`: the controller's decisions beside isrflow's
    print(f"isrflow run: {options.events_topic} -> {options.decisions_topic}, audit {lake.audit}, "
          f"checkpoints {checkpoints.root}, {conf[SHUFFLE_PARTITIONS]} state partitions")
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(publisher.close)
        metrics = serve_metrics(spark, options, cleanup, SequencerState(checkpoints.sequencer_state, storage=storage))
        if "availableNow" in trigger:
            run_bounded(spark, events, lake, checkpoints, options.config, publisher, counts, check=check,
                        metrics=metrics, agreement=agreement, requests=options.requests)
            return 0
        # Handlers first: a SIGTERM while the queries start also stops them after their current micro-batch.
        stop = cleanup.enter_context(stop_on_signals())
        pipeline = start_pipeline(spark, events, lake, checkpoints, options.config, trigger, publisher, counts,
                                  check=check, metrics=metrics, agreement=agreement, requests=options.requests)
        return wait_until_stopped(pipeline, kafka, stop, UpLine(options.events_topic, started))


def serve_metrics(spark: Any, options: RunOptions, cleanup: contextlib.ExitStack,
                  saved: SequencerState) -> ShadowMetrics | None:
    """The metrics endpoint (`--metrics-port`), its listener on the session, both undone by `cleanup`."""
    from streaming.engine.metrics import ShadowMetrics, metrics_listener

    if options.metrics_port is None:
        return None
    metrics = ShadowMetrics(options.config.min_insync_replicas)
    # A restarted run's gauges count the whole cluster as its checkpoint left it, from the first scrape on, not
    # only what it decides anew.
    controller = saved.latest(options.config)
    if controller is not None:
        metrics.seed(controller.partitions.values(), controller.cluster.topic_configs)
    try:
        port = metrics.serve(options.metrics_port)
    except OSError as exc:
        raise UsageError(f"--metrics-port {options.metrics_port}: {exc.strerror or exc}") from exc
    cleanup.callback(metrics.close)
    listener = metrics_listener(metrics)
    spark.streams.addListener(listener)
    # The session outlives this run (tests, a notebook): its listener must not feed a closed registry.
    cleanup.callback(spark.streams.removeListener, listener)
    print(f"isrflow run: Prometheus metrics on http://0.0.0.0:{port}/metrics", flush=True)
    return metrics


class UpLine:
    """One line once both queries have ended a first trigger: a micro-batch, or a look at their sources that found
    nothing new. A restart with nothing to do prints no progress line, so without it the run would look stuck.
    Polled (`check`), not a listener's: Spark posts no idle event for a query's first trigger without data."""

    def __init__(self, events_topic: str, started: float, echo: Callable[[str], Any] | None = None) -> None:
        self.events_topic = events_topic
        self.started = started  # the monotonic time the run began
        self.echo = echo or functools.partial(print, flush=True)  # at once, also into a pipe (a service's journal)
        self.printed = False

    def check(self, queries: Sequence[Any]) -> None:
        if self.printed:
            return
        if any(q.lastProgress is None for q in queries):  # set by a query's first trigger, with data or without
            return
        self.printed = True
        # Caught up: neither query's first trigger of this run found anything new.
        first = [q.recentProgress[0] for q in queries]
        caught_up = f", caught up with {self.events_topic}" if all(p.numInputRows == 0 for p in first) else ""
        self.echo(f"isrflow run: up after {time.monotonic() - self.started:.1f}s: both queries resumed from their "
                  f"checkpoints{caught_up}; a progress line follows each micro-batch with events")


@contextlib.contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """An event that SIGTERM or Ctrl-C sets, instead of ending the process; the previous handlers after."""
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def wait_until_stopped(pipeline: Pipeline, kafka: KafkaSettings, stop: threading.Event,
                       up: UpLine | None = None) -> int:
    """Block until `stop` is set (SIGTERM/Ctrl-C; then stop after the current batches) or until a query fails;
    `up` prints its line meanwhile."""
    while not stop.is_set() and all(q.isActive for q in pipeline.queries):
        if up is not None:
            up.check(pipeline.queries)
        stop.wait(1.0)
    failed = [q for q in pipeline.queries if q.exception() is not None]
    print("isrflow run: stopping after the current micro-batches" if stop.is_set() else
          "isrflow run: a query stopped")
    pipeline.stop_gracefully()
    for query in failed:
        reason = str(query.exception())
        print(f"isrflow run: query {query.name} failed: {kafka.scrub(reason)}")
    return 1 if failed else 0


def decide_once(bootstrap_servers: str, events_topic: str, decisions_topic: str, work: Path, rules: Rules,
                master: str | None = None, spark_conf: dict[str, str] | None = None) -> int:
    """One bounded `run` (available-now) of a demo's events topic into `work/audit` and the tables beside it."""
    return run(RunOptions(bootstrap_servers, events_topic, decisions_topic, work / "audit", work / "checkpoints",
                          trigger="available-now", config=ControllerConfig(rules=rules), master=master,
                          spark_conf=spark_conf or {}, state_partitions=2))
