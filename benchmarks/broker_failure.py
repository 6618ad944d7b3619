"""Benchmark: 10,000 partitions led by one broker; that broker fails.

Measures, on the real pipeline (local Kafka broker, Spark local[2], Delta):
- end to end: from the FAILURE event's append to the events topic to the last of its decisions on the
  sink topic (read_committed);
- the partition query's micro-batch for that event, and the sequencer's;
- the floor: the same commands through a no-op applyInPandasWithState (every group, nothing done);
- the pure core (`Controller.handle`) on the same event, for reference.

Run: .venv/bin/python benchmarks/broker_failure.py [--partitions 10000] [--master spark://...] [--conf k=v]
Not a test: numbers go to docs/performance.md with the command that produced them.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

from schemas.events import parse_event
from statemachine.controller import Controller, ControllerConfig
from streaming.engine.counts import BatchCounts
from streaming.engine.pipeline import progress_listener, start_pipeline
from streaming.engine.session import build_spark
from streaming.engine.sinks import DecisionPublisher
from streaming.engine.sources import kafka_events
from streaming.infra.localkafka import LocalKafkaBroker, create_topic
from streaming.infra.scenario import ScenarioBuilder
from streaming.io.delta import read_delta
from streaming.io.layout import Checkpoints, Lake
from streaming.jobs.demo import publish


def cluster_log(partitions: int) -> tuple[list[bytes], bytes]:
    """Setup events (3 brokers, topics of 1,000 partitions all led by broker 1) and the failure event."""
    b = ScenarioBuilder()
    for broker in (1, 2, 3):
        b.start_broker(broker)
    for t in range(0, partitions, 1000):
        size = min(1000, partitions - t)
        b.emit("CreateTopic", topic=f"topic-{t // 1000:02d}", assignment={str(p): [1, 2, 3] for p in range(size)})
    b.fail_broker(1)
    lines = [line.encode() for line in b.lines()]
    return lines[:-1], lines[-1]


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.2)


def audit_has(audit: Path, offset: int) -> bool:
    try:
        return any(r["source_offset"] == offset for r in read_delta(audit))
    except Exception:  # table not created yet
        return False


def decisions_for(bootstrap: str, topic: str, event_id: str, expected: int, timeout: float) -> float:
    """Consume the sink topic until `expected` decisions caused by `event_id` arrived; returns the time
    (time.time()) the last one was received."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             isolation_level="read_committed", enable_auto_commit=False)
    seen = 0
    deadline = time.monotonic() + timeout
    try:
        while seen < expected:
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {seen}/{expected} decisions after {timeout}s")
            for records in consumer.poll(timeout_ms=500).values():
                seen += sum(1 for r in records if json.loads(r.value)["cause_event_id"] == event_id)
        return time.time()
    finally:
        consumer.close()


def noop_floor(spark: Any, commands: Path, offset: int, work: Path) -> float:
    """Seconds of one micro-batch of a no-op applyInPandasWithState over the failure's commands."""
    from pyspark.sql.streaming.state import GroupStateTimeout

    from schemas.tables import OPERATOR_OUTPUT, PARTITION_STATE

    staged = work / "floor-input"
    spark.read.format("delta").load(str(commands)).filter(f"source_offset = {offset}").write.format("delta").save(
        str(staged))

    def noop(key: Any, frames: Any, state: Any) -> Any:
        for _ in frames:
            pass
        yield pd.DataFrame({c: pd.Series([], dtype=object) for c in OPERATOR_OUTPUT.names})

    query = (spark.readStream.format("delta").load(str(staged)).groupBy("topic", "partition")
             .applyInPandasWithState(noop, OPERATOR_OUTPUT.to_spark(), PARTITION_STATE.to_spark(), "append",
                                     GroupStateTimeout.NoTimeout)
             .writeStream.format("noop").option("checkpointLocation", str(work / "floor-ckpt"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    return query.lastProgress["batchDuration"] / 1000


def measure(partitions: int, master: str | None = None, conf: dict[str, str] | None = None,
            echo: Any = print, floor: bool = True) -> dict[str, float]:
    """One run of the benchmark; returns its figures in seconds (and prints them with `echo`); `floor=False`
    skips the no-op floor."""
    setup, failure = cluster_log(partitions)
    failure_offset = len(setup)
    failure_id = json.loads(failure)["event_id"]

    core = Controller(ControllerConfig())
    for i, line in enumerate(setup):
        core.handle(parse_event(line), i)
    started = time.perf_counter()
    handled = core.handle(parse_event(failure), failure_offset)
    core_seconds = time.perf_counter() - started
    expected = sum(len(h.applied.decisions) for h in handled)

    work = Path(tempfile.mkdtemp(prefix="isrflow-bench-"))
    with LocalKafkaBroker() as broker:
        bootstrap = broker.bootstrap_servers
        create_topic(bootstrap, "events", 1)
        create_topic(bootstrap, "decisions", 1)
        spark = build_spark("isrflow-bench", master, conf)
        lake, checkpoints = Lake.beside(work / "audit"), Checkpoints(work / "ckpt")
        counts = BatchCounts()
        lines: list[str] = []
        spark.streams.addListener(progress_listener(counts, echo=lines.append))
        publisher = DecisionPublisher(bootstrap, "decisions", "isrflow-bench")
        pipeline = start_pipeline(spark, kafka_events(spark, bootstrap, "events"), lake, checkpoints,
                                  ControllerConfig(), {"processingTime": "1 second"}, publisher, counts)
        try:
            publish(bootstrap, "events", setup)
            wait_for(lambda: audit_has(lake.audit, failure_offset - 1), 1800, "setup not processed")
            time.sleep(3)  # let both queries go idle
            lines.clear()
            appended = time.time()
            publish(bootstrap, "events", [failure])
            last_decision = decisions_for(bootstrap, "decisions", failure_id, expected, 1800)
        finally:
            pipeline.stop_gracefully()
            publisher.close()
        floor_seconds = noop_floor(spark, lake.commands, failure_offset, work) if floor else float("nan")
        spark.stop()

    end_to_end = last_decision - appended
    echo(f"partitions: {partitions}; decisions caused by the failure: {expected}")
    echo(f"pure core (Controller.handle of the failure): {core_seconds:.2f}s")
    echo("progress lines after the failure was appended:")
    for line in lines:
        if "batch" in line:
            echo("  " + line)
    echo(f"end to end (append -> last decision on the sink topic): {end_to_end:.1f}s")
    if floor:
        echo(f"floor (no-op applyInPandasWithState, same {expected + 1} commands, one micro-batch): "
             f"{floor_seconds:.1f}s")
        echo(f"ratio end-to-end / floor: {end_to_end / floor_seconds:.1f}x")
    return {"core": core_seconds, "end_to_end": end_to_end, "floor": floor_seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--master", help="Spark master URL (default local[2])")
    parser.add_argument("--conf", action="append", metavar="spark.k=v", help="extra Spark configuration")
    args = parser.parse_args()
    measure(args.partitions, args.master, dict(pair.split("=", 1) for pair in args.conf or []))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
