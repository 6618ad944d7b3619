"""Benchmark: long-log replay throughput, in events per second, on both engines.

The log: a cluster of `--partitions` partitions, then `--events` IsrChange requests round robin over them
(every one accepted, one decision each). Local engine: `run_local` plus its outputs (decisions.jsonl,
audit and quarantine Delta tables). Spark engine: `replay --engine spark` (the same two streaming
queries as `run`, in `--batch-size` events per micro-batch, 0 = one), outputs included.

Run: .venv/bin/python benchmarks/replay_throughput.py [--events 100000] [--partitions 1000]
     [--engines local,spark] [--batch-size 0]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from harness import Progress, isr_churn, load, wait_for

from statemachine.controller import ControllerConfig
from streaming.engine.local import run_local, write_outputs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--engines", default="local,spark")
    parser.add_argument("--batch-size", type=int, default=0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="isrflow-replay-"))
    total = sum(1 for _ in isr_churn(args.partitions, args.events))
    print(f"log: {total} events ({args.events} IsrChange over {args.partitions} partitions)")
    try:
        if "local" in args.engines:
            started_load, started = load(), time.perf_counter()
            result = run_local(isr_churn(args.partitions, args.events))
            core = time.perf_counter() - started
            write_outputs(result, work / "local")
            seconds = time.perf_counter() - started
            print(f"local: {seconds:.1f}s ({core:.1f}s core), {total / seconds:,.0f} events/s "
                  f"({total / core:,.0f} events/s core only), {result.rejected} rejections, "
                  f"load {started_load} -> {load()}")
        if "spark" in args.engines:
            from streaming.engine.session import build_spark
            from streaming.jobs.replay import replay_spark

            spark = build_spark("isrflow-replay-bench")
            progress = Progress()
            spark.streams.addListener(progress.listener())
            started_load, started = load(), time.perf_counter()
            replay_spark(spark, isr_churn(args.partitions, args.events), work / "spark", ControllerConfig(),
                         batch_size=args.batch_size)
            seconds = time.perf_counter() - started
            wait_for(lambda: len(progress.batches("isrflow-partitions")) > 0, 30, "progress events")
            spark.stop()
            print(f"spark: {seconds:.1f}s, {total / seconds:,.0f} events/s (batch size {args.batch_size or 'all'}), "
                  f"load {started_load} -> {load()}")
            in_batches = 0.0
            for name in ("isrflow-sequencer", "isrflow-partitions"):
                batches = progress.batches(name)
                batch_seconds = sum(b["batchDuration"] for b in batches) / 1000
                foreach = sum(b["durationMs"].get("addBatch", 0) for b in batches) / 1000
                in_batches += batch_seconds
                print(f"  {name}: {len(batches)} micro-batch(es), {batch_seconds:.1f}s "
                      f"({foreach:.1f}s in foreachBatch)")
            print(f"  outside the micro-batches (staging the log, starting the queries, decisions.jsonl): "
                  f"{seconds - in_batches:.1f}s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
