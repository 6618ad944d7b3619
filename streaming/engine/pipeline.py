"""Both queries together: started as one pipeline (`run`, `demo`) or run to completion on a bounded log
(`replay --engine spark`), with a readable progress line per micro-batch."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemas.tables import COMMAND
from statemachine.controller import ControllerConfig
from streaming.engine.counts import BatchCounts, partitions_line, sequencer_line
from streaming.engine.metrics import ShadowMetrics
from streaming.engine.partitions import BatchAgreement, BatchCheck, ensure_delta_table, start_partition_machine
from streaming.engine.sequencer import start_sequencer
from streaming.engine.sources import staged_events
from streaming.io.layout import Checkpoints, Lake

AVAILABLE_NOW = {"availableNow": True}


def parse_trigger(text: str) -> dict[str, Any]:
    """'available-now' (one bounded run) or a processing-time interval such as '5 seconds'."""
    if text.strip().lower().replace("_", "-") in ("available-now", "availablenow", "once"):
        return dict(AVAILABLE_NOW)
    return {"processingTime": text}


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
                   source: str = "kafka", check: BatchCheck | None = None,
                   metrics: ShadowMetrics | None = None, agreement: BatchAgreement | None = None,
                   requests: bool = True) -> Pipeline:
    # Silver exists before the sequencer starts: its first batch's commit to an empty folder would race the
    # partition query's creation of the table (Delta's ProtocolChangedException, the sequencer query stops).
    ensure_delta_table(spark, lake.commands, COMMAND)
    sequencer = start_sequencer(spark, events, lake, checkpoints, config, source, trigger, counts, metrics=metrics,
                                requests=requests)
    partitions = start_partition_machine(spark, lake, checkpoints, trigger, publisher, counts, check=check,
                                         rules=config.rules, metrics=metrics, agreement=agreement)
    return Pipeline(sequencer, partitions)


def run_bounded(spark: Any, events: Any, lake: Lake, checkpoints: Checkpoints, config: ControllerConfig,
                publisher: Any | None = None, counts: BatchCounts | None = None, source: str = "kafka",
                check: BatchCheck | None = None, progress: Any | None = None,
                one_sequencer_batch_per_trigger: bool = False, metrics: ShadowMetrics | None = None,
                agreement: BatchAgreement | None = None, requests: bool = True) -> None:
    """Both queries with an available-now trigger, one after the other: the partition query must start
    after the sequencer has written everything."""
    start_sequencer(spark, events, lake, checkpoints, config, source, AVAILABLE_NOW, counts,
                    progress, metrics, requests).awaitTermination()
    start_partition_machine(spark, lake, checkpoints, AVAILABLE_NOW, publisher, counts,
                            one_sequencer_batch_per_trigger, check, config.rules, metrics, agreement).awaitTermination()
    drain_listeners(spark)


def drain_listeners(spark: Any) -> None:
    """Wait until Spark has delivered every queued listener event: progress lines reach the Python listener
    before the caller goes on (or exits, which would leave the JVM calling back into a closed Python)."""
    from py4j.protocol import Py4JJavaError

    with contextlib.suppress(Py4JJavaError):  # still busy after 60 s: go on without the last lines
        spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(60_000)


def replay_spark(spark: Any, records: Iterable[tuple[int, bytes]], lake: Lake, checkpoints: Checkpoints,
                 staging: Path, config: ControllerConfig, batch_size: int = 0, source: str = "file",
                 progress: Any | None = None) -> None:
    """The same two streaming queries as `run`, on a staged copy of the log, each run to completion."""
    events = staged_events(spark, staging, iter(records), batch_size)
    run_bounded(spark, events, lake, checkpoints, config, source=source, progress=progress,
                one_sequencer_batch_per_trigger=batch_size > 0)


def progress_listener(counts: BatchCounts, echo: Callable[[str], Any] = print) -> Any:
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
                    echo(sequencer_line(p.batchId, c, seconds))
            elif p.name == "isrflow-partitions":
                c = counts.partitions.pop(p.batchId, None)
                if c is not None:
                    echo(partitions_line(p.batchId, c, sum(op.numRowsTotal for op in p.stateOperators), seconds))

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            echo(f"[query {event.id}] terminated" + (f" with error: {event.exception}" if event.exception else ""))

    return ProgressLine()
