"""Benchmark: a broker that leads N partitions fails (or shuts down in a controlled way), end to end.

Measures, on the real pipeline (`run`'s two queries, local Kafka broker, Spark local[2], Delta):
- end to end: from the event's append to the events topic to the last of its decisions on the sink
  topic (read_committed);
- every step of that path: the sequencer's trigger wait and micro-batch (with its own steps), the Delta
  hop (silver written -> the partition query's micro-batch starts), the partition micro-batch (the
  stateful operator, the Delta commits, the Kafka transaction), the sink topic -> consumer;
- the floor, in the same run: the same commands through the minimal no-op applyInPandasWithState (key
  plus one binary column), and the ratio of our operator and of the whole path to it;
- the pure core (`Controller.handle`) on the same event, for reference.

Run: .venv/bin/python benchmarks/broker_failure.py [--partitions 10000 | 1000,10000,100000] [--controlled-shutdown]
     [--trigger "1 second"] [--master spark://...] [--conf k=v ...] [--no-floor] [--plot failure.png]
Not a test: numbers go to docs/performance.md with the command that produced them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import floor as floor_bench
from harness import KeptCounts, Progress, cluster_log, iso_seconds, load, plot_against_size, wait_for

from schemas.events import parse_event
from statemachine.controller import Controller, ControllerConfig
from streaming.engine.counts import BatchCounts
from streaming.engine.pipeline import progress_listener, start_pipeline
from streaming.engine.session import build_spark
from streaming.engine.sinks import DecisionPublisher
from streaming.engine.sources import kafka_events
from streaming.infra.localkafka import LocalKafkaBroker, create_topic
from streaming.io.layout import Checkpoints, Lake
from streaming.jobs.demo import publish


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
            for records in consumer.poll(timeout_ms=100).values():
                seen += sum(1 for r in records if json.loads(r.value)["cause_event_id"] == event_id)
        return time.time()
    finally:
        consumer.close()


def steps_of(progress: dict[str, Any], kept: dict[str, Any]) -> list[tuple[str, float]]:
    """A micro-batch's seconds: our own steps (a step of writes at once followed by each write's own
    seconds), then what Spark spent around them."""
    steps = kept["steps"]
    within = kept.get("within", {})
    rows: list[tuple[str, float]] = []
    for step, seconds in steps.items():
        rows.append((step, seconds))
        rows.extend((f"    {name} (its own seconds)", within[name]) for name in step.split(" | ")
                    if " | " in step and name in within)
    add_batch = progress["durationMs"].get("addBatch", 0) / 1000
    rows.append(("spark around foreachBatch", add_batch - sum(steps.values())))
    rows.append(("offsets, planning, commit", progress["batchDuration"] / 1000 - add_batch))
    return rows


def silver_commit(start: float, steps: dict[str, float], end: float) -> float:
    """When the sequencer's batch committed silver: the end of its `silver` step, which comes before the batch's
    other writes (Spark's planning before foreachBatch not counted); the batch's end when silver is one of writes
    made at once."""
    if "silver" not in steps:
        return end
    names = list(steps)
    return start + sum(steps[name] for name in names[:names.index("silver") + 1])


def measure(partitions: int, tail: str = "failure", trigger: str = "1 second", master: str | None = None,
            conf: dict[str, str] | None = None, floor: bool = True, echo: Any = print) -> dict[str, float]:
    """One run: prints every step of the path with `echo`; returns the end-to-end seconds (`end_to_end`) and,
    with `floor`, the no-op floor's (`floor`)."""
    setup, (event,) = cluster_log(partitions, tail)
    offset = len(setup)
    event_id = json.loads(event)["event_id"]

    core = Controller(ControllerConfig())
    for i, line in enumerate(setup):
        core.handle(parse_event(line), i)
    started = time.perf_counter()
    handled = core.handle(parse_event(event), offset)
    core_seconds = time.perf_counter() - started
    expected = sum(len(h.applied.decisions) for h in handled)

    work = Path(tempfile.mkdtemp(prefix="isrflow-bench-"))
    with LocalKafkaBroker() as broker:
        bootstrap = broker.bootstrap_servers
        create_topic(bootstrap, "events", 1)
        create_topic(bootstrap, "decisions", 1)
        spark = build_spark("isrflow-bench", master, conf)
        lake, checkpoints = Lake.beside(work / "audit"), Checkpoints(work / "ckpt")
        counts = BatchCounts(sequencer=KeptCounts(), partitions=KeptCounts())
        progress = Progress()
        spark.streams.addListener(progress_listener(counts, echo=lambda line: None))
        spark.streams.addListener(progress.listener())
        publisher = DecisionPublisher(bootstrap, "decisions", "isrflow-bench")
        pipeline = start_pipeline(spark, kafka_events(spark, bootstrap, "events"), lake, checkpoints,
                                  ControllerConfig(), {"processingTime": trigger}, publisher, counts)
        try:
            publish(bootstrap, "events", setup)
            def settled() -> bool:
                sequenced = counts.sequencer.kept.values()
                return (sum(c["events"] for c in sequenced) >= len(setup) and
                        sum(c["commands"] for c in counts.partitions.kept.values())
                        >= sum(c["commands"] for c in sequenced))

            wait_for(settled, 3600, "setup not processed")
            time.sleep(3)  # both queries idle
            before = (len(progress.batches("isrflow-sequencer")), len(progress.batches("isrflow-partitions")))
            load_at_start = load()
            appended = time.time()
            publish(bootstrap, "events", [event])
            last_decision = decisions_for(bootstrap, "decisions", event_id, expected, 3600)
            wait_for(lambda: len(progress.batches("isrflow-partitions")) > before[1], 60, "progress")
        finally:
            pipeline.stop_gracefully()
            publisher.close()
        seq = progress.batches("isrflow-sequencer")[before[0]]
        part = progress.batches("isrflow-partitions")[before[1]]
        floors = floor_bench.measure(spark, partitions, 1, tail) if floor else None
        spark.stop()
    shutil.rmtree(work, ignore_errors=True)

    seq_start, part_start = iso_seconds(seq["timestamp"]), iso_seconds(part["timestamp"])
    seq_end, part_end = seq_start + seq["batchDuration"] / 1000, part_start + part["batchDuration"] / 1000
    silver_committed = silver_commit(seq_start, counts.sequencer.kept[seq["batchId"]]["steps"], seq_end)
    end_to_end = last_decision - appended
    echo(f"{tail} of the broker leading {partitions} partitions; {expected} decisions; trigger "
         f"{trigger}; load {load_at_start} at the append, {load()} at the end")
    echo(f"pure core (Controller.handle of the event): {core_seconds:.2f}s")
    rows = [("trigger wait (append -> sequencer batch starts)", seq_start - appended),
            ("sequencer micro-batch", seq["batchDuration"] / 1000),
            *((f"    {k}", v) for k, v in steps_of(seq, counts.sequencer.kept[seq["batchId"]])),
            ("Delta hop (silver committed -> partition batch starts)", part_start - silver_committed),
            ("partition micro-batch", part["batchDuration"] / 1000),
            *((f"    {k}", v) for k, v in steps_of(part, counts.partitions.kept[part["batchId"]])),
            ("sink topic -> consumer (after the batch's commit)", last_decision - part_end)]
    for what, seconds in rows:
        echo(f"  {what:58s} {seconds:7.2f}s")
    echo(f"end to end (append -> last decision on the sink topic): {end_to_end:.2f}s")
    result = {"end_to_end": end_to_end, "sequencer": seq["batchDuration"] / 1000,
              "partitions": part["batchDuration"] / 1000}
    if floors is None:
        return result
    floor_s, cpu = floors["seconds"]["floor"], floors["cpu"]
    echo(f"floor (minimal no-op applyInPandasWithState, same {floors['groups']} groups, one micro-batch): "
         f"{floor_s:.2f}s; echo {floors['seconds']['echo']:.2f}s; our operator alone "
         f"{floors['seconds']['ours']:.2f}s ({floors['seconds']['ours'] / floor_s:.2f}x floor); CPU (JVM + "
         f"workers) floor {cpu['floor']:.2f}s, echo {cpu['echo']:.2f}s, ours {cpu['ours']:.2f}s "
         f"({cpu['ours'] / cpu['floor']:.2f}x)")
    echo(f"ratio end to end / floor: {end_to_end / floor_s:.2f}x")
    return {**result, "floor": floor_s, "floor CPU": cpu["floor"], "ours CPU": cpu["ours"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", default="10000", help="comma-separated cluster sizes, one run each")
    parser.add_argument("--controlled-shutdown", action="store_true",
                        help="broker 1 shuts down in a controlled way instead of failing")
    parser.add_argument("--trigger", default="1 second", help="both queries' processing-time trigger")
    parser.add_argument("--master", help="a Spark master URL (default: local[2])")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting")
    parser.add_argument("--no-floor", action="store_true", help="skip the no-op floor")
    parser.add_argument("--plot", type=Path, default=None, help="write a PNG of the seconds against cluster size")
    args = parser.parse_args()
    conf = dict(item.split("=", 1) for item in args.conf)
    tail = "controlled-shutdown" if args.controlled_shutdown else "failure"
    results = {}
    for size in (int(s) for s in args.partitions.split(",")):
        results[size] = measure(size, tail, args.trigger, args.master, conf or None, not args.no_floor)
    if len(results) > 1:
        print(f"{tail}, seconds per cluster size:")
        for size, r in results.items():
            print(f"  {size:>7} partitions: " + ", ".join(f"{k} {v:.2f}" for k, v in r.items()))
    if args.plot:
        names = {"end_to_end": "end to end", "sequencer": "sequencer micro-batch",
                 "partitions": "partition micro-batch", "floor": "no-op floor (one micro-batch)"}
        series = {label: {size: r[key] for size, r in results.items() if key in r} for key, label in names.items()}
        plot_against_size({label: points for label, points in series.items() if points},
                          args.plot, "seconds", f"{tail} of the broker leading every partition")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
