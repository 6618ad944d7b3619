"""`isrflow run`: the long-running pipeline (both queries), a progress line per micro-batch, graceful stop."""

from __future__ import annotations

import hashlib
import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path

from statemachine.controller import ControllerConfig
from streaming.engine.pipeline import Pipeline


@dataclass(frozen=True)
class RunOptions:
    bootstrap_servers: str
    events_topic: str
    decisions_topic: str
    audit_table: Path
    checkpoint_dir: Path = Path("checkpoints")
    # Where bronze, commands, decisions and quarantine go (default: beside the audit table).
    lake_dir: Path | None = None
    trigger: str = "5 seconds"
    kafka_options: dict[str, str] = field(default_factory=dict)
    starting_offsets: str = "earliest"
    quality: bool = False
    config: ControllerConfig = field(default_factory=ControllerConfig)
    master: str = "local[2]"
    spark_conf: dict[str, str] = field(default_factory=dict)


def run(options: RunOptions) -> int:
    from streaming.engine.counts import BatchCounts
    from streaming.engine.pipeline import parse_trigger, progress_listener, run_bounded, start_pipeline
    from streaming.engine.session import build_spark
    from streaming.engine.sinks import DecisionPublisher
    from streaming.engine.sources import kafka_events
    from streaming.io.eventlog import require_single_partition
    from streaming.io.layout import Checkpoints, Lake
    from streaming.quality.runner import batch_check

    require_single_partition(options.bootstrap_servers, options.events_topic)
    spark = build_spark("isrflow-run", options.master, options.spark_conf)
    lake = Lake.beside(options.audit_table.resolve(), options.lake_dir.resolve() if options.lake_dir else None)
    checkpoints = Checkpoints(Path(options.checkpoint_dir).resolve())
    trigger = parse_trigger(options.trigger)
    events = kafka_events(spark, options.bootstrap_servers, options.events_topic, options.starting_offsets,
                          options.kafka_options)
    # One transactional id per checkpoint root: a restarted run fences its previous incarnation.
    transactional_id = "isrflow-" + hashlib.sha1(str(checkpoints.root).encode()).hexdigest()[:16]
    publisher = DecisionPublisher(options.bootstrap_servers, options.decisions_topic, transactional_id)
    counts = BatchCounts()
    spark.streams.addListener(progress_listener(counts))
    check = batch_check(lake.quality) if options.quality else None
    print(f"isrflow run: {options.events_topic} -> {options.decisions_topic}, audit {lake.audit}, "
          f"checkpoints {checkpoints.root}")
    try:
        if "availableNow" in trigger:
            run_bounded(spark, events, lake, checkpoints, options.config, publisher, counts, check=check)
            return 0
        pipeline = start_pipeline(spark, events, lake, checkpoints, options.config, trigger, publisher, counts,
                                  check=check)
        return wait_until_stopped(pipeline)
    finally:
        publisher.close()


def wait_until_stopped(pipeline: Pipeline) -> int:
    """Block until SIGTERM/Ctrl-C (then stop after the current batches) or until a query fails."""
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        while not stop.is_set() and all(q.isActive for q in pipeline.queries):
            stop.wait(1.0)
        failed = [q for q in pipeline.queries if q.exception() is not None]
        print("isrflow run: stopping after the current micro-batches" if stop.is_set() else
              "isrflow run: a query stopped")
        pipeline.stop_gracefully()
        for query in failed:
            print(f"isrflow run: query {query.name} failed: {query.exception()}")
        return 1 if failed else 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
