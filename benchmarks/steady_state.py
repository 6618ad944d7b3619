"""Benchmark: what one micro-batch holding one IsrChange costs, against the size of the cluster.

For each size: a cluster of N partitions is created (one micro-batch), then K micro-batches of one
IsrChange each go through both queries (the sequencer and the partition query, available-now triggers,
one sequencer batch per partition batch, Delta in between, no Kafka). Reported per query: the median
of the K batches, with its steps, and the ratio of the largest cluster to the smallest.

Run: .venv/bin/python benchmarks/steady_state.py [--partitions 1000,100000] [--batches 5]
     [--state-store rocksdb|hdfs] [--plot docs/steady_state.png]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

from floor import STATE_STORES
from harness import KeptCounts, Progress, isr_churn, load, plot_against_size

from statemachine.controller import ControllerConfig
from streaming.engine.counts import BatchCounts
from streaming.engine.pipeline import progress_listener, run_bounded
from streaming.engine.session import build_spark
from streaming.engine.sources import staged_events
from streaming.io.layout import Checkpoints, Lake


def measure(spark: Any, partitions: int, batches: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="isrflow-steady-"))
    log = list(isr_churn(partitions, batches))
    setup = len(log) - batches
    counts = BatchCounts(sequencer=KeptCounts(), partitions=KeptCounts())
    progress = Progress()
    listeners = [progress_listener(counts, echo=lambda line: None), progress.listener()]
    for listener in listeners:
        spark.streams.addListener(listener)
    try:
        # The set-up as one commit, then one commit per IsrChange: one micro-batch each.
        staging = work / "staging"
        staged_events(spark, staging, iter(log[:setup]), 0)
        events = staged_events(spark, staging, iter(log[setup:]), 1)
        run_bounded(spark, events, Lake.beside(work / "audit"), Checkpoints(work / "ckpt"), ControllerConfig(),
                    counts=counts, one_sequencer_batch_per_trigger=True)
    finally:
        for listener in listeners:
            spark.streams.removeListener(listener)
        shutil.rmtree(work, ignore_errors=True)
    out: dict[str, Any] = {}
    for name, kept in (("sequencer", counts.sequencer.kept), ("partitions", counts.partitions.kept)):
        runs = progress.batches(f"isrflow-{name}")
        setup_run, steady = runs[0], runs[1:]
        median = statistics.median(r["batchDuration"] / 1000 for r in steady)
        steps: dict[str, list[float]] = {}
        for r in steady:
            for step, seconds in kept[r["batchId"]]["steps"].items():
                steps.setdefault(step, []).append(seconds)
        out[name] = {"setup": setup_run["batchDuration"] / 1000, "median": median,
                     "steps": {k: statistics.median(v) for k, v in steps.items()}}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", default="1000,100000", help="comma-separated cluster sizes")
    parser.add_argument("--batches", type=int, default=5, help="one-IsrChange micro-batches per size")
    parser.add_argument("--state-store", choices=sorted(STATE_STORES), default=None)
    parser.add_argument("--plot", type=Path, default=None, help="write a PNG of cost against cluster size")
    args = parser.parse_args()
    sizes = [int(s) for s in args.partitions.split(",")]
    conf = {} if args.state_store is None else {"spark.sql.streaming.stateStore.providerClass":
                                                STATE_STORES[args.state_store]}
    spark = build_spark("isrflow-steady", conf=conf)
    results = {}
    for size in sizes:
        started = load()
        results[size] = measure(spark, size, args.batches)
        results[size]["load"] = f"{started} -> {load()}"
    spark.stop()
    for size, r in results.items():
        print(f"{size} partitions (load {r['load']}):")
        for name in ("sequencer", "partitions"):
            q = r[name]
            steps = ", ".join(f"{k} {v:.2f}s" for k, v in q["steps"].items())
            print(f"  {name:10s} one IsrChange: {q['median']:.2f}s median ({steps}); set-up batch {q['setup']:.1f}s")
    small, large = results[min(sizes)], results[max(sizes)]
    for name in ("sequencer", "partitions"):
        print(f"ratio {max(sizes)} / {min(sizes)} partitions, {name}: "
              f"{large[name]['median'] / small[name]['median']:.2f}x")
    if args.plot:
        plot(results, args.plot)
    return 0


def plot(results: dict[int, Any], path: Path) -> None:
    plot_against_size({f"{name} query, one IsrChange": {size: r[name]["median"] for size, r in results.items()}
                       for name in ("sequencer", "partitions")},
                      path, "seconds per micro-batch", "one IsrChange per micro-batch (median)")


if __name__ == "__main__":
    raise SystemExit(main())
