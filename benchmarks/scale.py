"""Benchmark: the same work on a standalone Spark cluster of 1 worker, then of 2 workers (1 core each).

Two workloads, each timed on both cluster sizes:
- a long replay: `isrflow replay examples/rolling-restart.jsonl --engine spark` (929 events, 300 partitions)
  in micro-batches of `--batch-size` events, as events per second;
- the 10,000-partition broker failure of benchmarks/broker_failure.py (end to end: the failure's append ->
  its last decision on the sink topic).

The cluster is streaming.infra.localspark (pyspark's own Master/Worker launcher) on this machine; the driver
runs here too. `--state-partitions` (default 2) is the same for both sizes, so each size runs the same tasks.

Run: .venv/bin/python benchmarks/scale.py [--partitions 10000] [--batch-size 100] [--workers 1 2]
     [--skip-replay] [--skip-failover]
Not a test: numbers go to docs/performance.md with the command that produced them.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from broker_failure import measure  # this folder, on sys.path when run as a script

from streaming.infra.localspark import LocalSparkCluster

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "examples" / "rolling-restart.jsonl"


def executor_conf(state_partitions: int) -> dict[str, str]:
    return {"spark.executor.memory": "1500m", "spark.sql.shuffle.partitions": str(state_partitions),
            "spark.databricks.delta.snapshotPartitions": str(state_partitions)}


def replay_seconds(master: str, batch_size: int, state_partitions: int) -> float:
    out = Path(tempfile.mkdtemp(prefix="isrflow-scale-replay-"))
    conf = [arg for k, v in executor_conf(state_partitions).items() for arg in ("--conf", f"{k}={v}")]
    command = [str(Path(sys.executable).with_name("isrflow")), "replay", str(LOG), "--out", str(out), "--engine",
               "spark", "--master", master, "--batch-size", str(batch_size), *conf]
    started = time.monotonic()
    subprocess.run(command, check=True, capture_output=True)
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--state-partitions", type=int, default=2)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="cluster sizes, in order")
    parser.add_argument("--skip-replay", action="store_true")
    parser.add_argument("--skip-failover", action="store_true")
    args = parser.parse_args()
    events = sum(1 for line in LOG.read_text().splitlines() if line.strip())
    results: dict[int, dict[str, float]] = {}
    for workers in args.workers:
        with LocalSparkCluster(workers=workers, cores=1, memory="2g") as cluster:
            print(f"== {workers} worker(s), 1 core each: {cluster.url}", flush=True)
            results[workers] = {}
            if not args.skip_replay:
                replay = replay_seconds(cluster.url, args.batch_size, args.state_partitions)
                results[workers]["replay"] = replay
                print(f"replay of {events} events: {replay:.1f}s, {events / replay:.1f} events/s", flush=True)
            if not args.skip_failover:
                figures = measure(args.partitions, master=cluster.url, conf=executor_conf(args.state_partitions),
                                  echo=lambda line: print(line, flush=True), floor=False)
                results[workers]["failover"] = figures["end_to_end"]
    first, *others = args.workers
    for what, figure in results[first].items():
        for n in others:
            print(f"{what}: {first} worker(s) {figure:.1f}s, {n} workers {results[n][what]:.1f}s, "
                  f"speed-up {figure / results[n][what]:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
