"""Benchmark: driver and Python worker memory over a long run of the Spark pipeline.

`--events` IsrChange requests (see replay_throughput.py) go through both queries in micro-batches of
`--batch-size`; once a second the resident set of the Python driver, the JVM, and every Python worker
is sampled. Reported: RSS at each tenth of the run, and the growth from the first tenth to the end.

Run: .venv/bin/python benchmarks/memory.py [--events 1000000] [--partitions 10000] [--batch-size 50000]
     [--samples memory.csv]   (every sample as it is taken, so a run stopped early still shows its trend)
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from harness import descendants, isr_churn, load, pids, rss_mib

from statemachine.controller import ControllerConfig
from streaming.engine.pipeline import replay_spark
from streaming.engine.session import build_spark
from streaming.io.layout import Checkpoints, Lake


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=50_000)
    parser.add_argument("--samples", type=Path, help="CSV file written as samples are taken")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="isrflow-memory-"))
    spark = build_spark("isrflow-memory")
    driver, jvm = pids()
    samples: list[tuple[float, float, float, float]] = []  # (t, driver, jvm, largest worker)
    done = threading.Event()
    out = args.samples.open("w", buffering=1) if args.samples else None
    if out:
        out.write("seconds,driver_mib,jvm_mib,worker_mib,load\n")

    def sample() -> None:
        while not done.wait(1.0):
            # The daemon and the workers it forks; not the JVM's own short-lived forks, which show its command line.
            workers = [rss_mib(p) for p, cmd in descendants(jvm) if "pyspark.daemon" in cmd]
            samples.append((time.monotonic(), rss_mib(driver), rss_mib(jvm), max(workers, default=0.0)))
            if out:
                t, d, j, w = samples[-1]
                out.write(f"{t - started:.0f},{d:.0f},{j:.0f},{w:.0f},{load()}\n")

    sampler = threading.Thread(target=sample, daemon=True)
    started_load, started = load(), time.monotonic()
    sampler.start()
    try:
        lake = Lake.beside(work / "audit")
        replay_spark(spark, isr_churn(args.partitions, args.events), lake, Checkpoints(work / "ckpt"),
                     work / "staging", ControllerConfig(), batch_size=args.batch_size)
    finally:
        done.set()
        sampler.join()
        if out:
            out.close()
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    seconds = time.monotonic() - started
    print(f"{args.events} IsrChange events over {args.partitions} partitions, batches of {args.batch_size}: "
          f"{seconds:.0f}s, load {started_load} -> {load()}")
    print("  at     driver MiB  JVM MiB  largest Python worker MiB")
    tenths = [samples[min(len(samples) - 1, len(samples) * i // 10)] for i in range(1, 11)]
    for i, (_, d, j, w) in enumerate(tenths, start=1):
        print(f"  {i * 10:3d}%   {d:8.0f}  {j:8.0f}  {w:8.0f}")
    # Medians of the first and last quarter; the Python workers exist only while the partition query runs.
    with_workers = [s for s in samples if s[3] > 0]
    for name, column, over in (("driver", 1, samples), ("JVM", 2, samples), ("worker", 3, with_workers)):
        first, last = quarter_medians(over, column)
        print(f"{name}: median of the first quarter {first:.0f} MiB, of the last {last:.0f} MiB ({last - first:+.0f})")
    return 0


def quarter_medians(samples: list[tuple[float, float, float, float]], column: int) -> tuple[float, float]:
    quarter = max(1, len(samples) // 4)
    values = [s[column] for s in samples] or [0.0]
    return statistics.median(values[:quarter]), statistics.median(values[-quarter:])


if __name__ == "__main__":
    raise SystemExit(main())
