"""`isrflow run`: the long-running pipeline (both queries), a progress line per micro-batch, graceful stop."""

from __future__ import annotations

import argparse
import hashlib
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from statemachine.controller import ControllerConfig
from streaming.eventlog import require_single_partition
from streaming.pipeline import (
    BatchCounts,
    Checkpoints,
    Lake,
    kafka_events,
    start_partition_machine,
    start_sequencer,
)


def parse_trigger(text: str) -> dict[str, Any]:
    """'available-now' (one bounded run) or a processing-time interval such as '5 seconds'."""
    if text.strip().lower().replace("_", "-") in ("available-now", "availablenow", "once"):
        return {"availableNow": True}
    return {"processingTime": text}


def progress_listener(counts: BatchCounts, echo: Any = print) -> Any:
    """One readable line per micro-batch of either query, from Spark's progress events and the counts
    the foreachBatch writers leave behind."""
    from pyspark.sql.streaming import StreamingQueryListener

    class ProgressLine(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            echo(f"[{event.name}] started (id {event.id})")

        def onQueryProgress(self, event: Any) -> None:
            p = event.progress
            seconds = p.batchDuration / 1000
            if p.name == "isrflow-sequencer":
                c = counts.sequencer.pop(p.batchId, None)
                if c is not None:
                    echo(f"[sequencer] batch {p.batchId}: {c['events']} events in, {c['quarantined']} quarantined, "
                         f"{c['commands']} commands, {seconds:.1f}s")
            elif p.name == "isrflow-partitions":
                c = counts.partitions.pop(p.batchId, None)
                if c is not None:
                    state_rows = sum(op.numRowsTotal for op in p.stateOperators)
                    quality = c.get("quality")
                    echo(f"[partitions] batch {p.batchId}: {c['commands']} commands, {c['decisions']} decisions "
                         f"({c['published']} published), {c['rejections']} rejections, {state_rows} state rows, "
                         f"{seconds:.1f}s" + (f", quality: {quality}" if quality else ""))

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            echo(f"[query {event.id}] terminated" + (f" with error: {event.exception}" if event.exception else ""))

    return ProgressLine()


@dataclass
class Pipeline:
    """Both queries of a running pipeline."""

    sequencer: Any
    partitions: Any

    @property
    def queries(self) -> list[Any]:
        return [self.sequencer, self.partitions]

    def stop_gracefully(self, timeout: float = 120) -> None:
        """Let each query finish the micro-batch it is in, then stop it: no half-written batch."""
        for query in self.queries:
            deadline = time.monotonic() + timeout
            while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline:
                time.sleep(0.2)
            query.stop()


def start_pipeline(spark: Any, events: Any, lake: Lake, checkpoints: Checkpoints, config: ControllerConfig,
                   trigger: dict[str, Any], publisher: Any | None = None, counts: BatchCounts | None = None,
                   source: str = "kafka", quality: bool = False) -> Pipeline:
    sequencer = start_sequencer(spark, events, lake, checkpoints, config, source, trigger, counts)
    partitions = start_partition_machine(spark, lake, checkpoints, trigger, publisher, counts,
                                         quality=lake.quality if quality else None)
    return Pipeline(sequencer, partitions)


def run(args: argparse.Namespace) -> int:
    from streaming.cli import controller_config, key_values
    from streaming.kafka_sink import DecisionPublisher
    from streaming.spark_session import build_spark

    require_single_partition(args.bootstrap_servers, args.events_topic)
    spark = build_spark("isrflow-run", args.master, key_values(args.conf, "--conf"))
    lake = Lake.beside(args.audit_table.resolve(), args.lake_dir.resolve() if args.lake_dir else None)
    checkpoints = Checkpoints(Path(args.checkpoint_dir).resolve())
    trigger = parse_trigger(args.trigger)
    events = kafka_events(spark, args.bootstrap_servers, args.events_topic, args.starting_offsets,
                          key_values(args.kafka_option, "--kafka-option"))
    # One transactional id per checkpoint root: a restarted run fences its previous incarnation.
    transactional_id = "isrflow-" + hashlib.sha1(str(checkpoints.root).encode()).hexdigest()[:16]
    publisher = DecisionPublisher(args.bootstrap_servers, args.decisions_topic, transactional_id)
    counts = BatchCounts()
    spark.streams.addListener(progress_listener(counts))
    config = controller_config(args)
    print(f"isrflow run: {args.events_topic} -> {args.decisions_topic}, audit {lake.audit}, "
          f"checkpoints {checkpoints.root}")
    try:
        if "availableNow" in trigger:
            # Bounded: the partition query must start after the sequencer has written everything.
            start_sequencer(spark, events, lake, checkpoints, config, "kafka", trigger, counts).awaitTermination()
            start_partition_machine(spark, lake, checkpoints, trigger, publisher, counts,
                                    quality=lake.quality if args.quality else None).awaitTermination()
            return 0
        pipeline = start_pipeline(spark, events, lake, checkpoints, config, trigger, publisher, counts,
                                  quality=args.quality)
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
