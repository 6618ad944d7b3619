"""Benchmark: the per-group price of applyInPandasWithState, ours next to the minimal no-op floor.

The same silver commands (a cluster of N partitions, then the failure of the broker that leads them all,
one micro-batch each) go through three stateful operators keyed by (topic, partition), each in its own
query with the `noop` sink, in the same run and the same session:
- floor: the minimal no-op; rows are the key plus one binary column; reads its frames, emits nothing;
- echo:  the floor plus what any real operator must do per group: store one binary state, emit one row;
- ours:  `apply_partition_commands` (decode, apply_command, state, packed audit rows and decisions).
Reported: the failure batch's wall seconds and the CPU seconds the JVM and the Python workers spent in it
(steadier than wall time on a shared machine), per group, and each against the floor.

Run: .venv/bin/python benchmarks/floor.py [--partitions 10000] [--repeat 2] [--state-store rocksdb|hdfs]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
from harness import cluster_log, cpu_seconds, load, pids, silver_rows, wait_for

from schemas.tables import COMMAND, PACKED_OUTPUT, PARTITION_STATE
from streaming.engine.partitions import apply_partition_commands
from streaming.engine.session import build_spark
from streaming.io.delta import arrow_table

if __name__ != "__main__":  # imported by another benchmark: the workers cannot import it, so ship by value
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])

STATE_STORES = {
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}


def floor(key: tuple[Any, ...], frames: Iterator[pd.DataFrame], state: Any) -> Iterator[pd.DataFrame]:
    for _ in frames:
        pass
    yield from ()


def echo(key: tuple[Any, ...], frames: Iterator[pd.DataFrame], state: Any) -> Iterator[pd.DataFrame]:
    last = b""
    for frame in frames:
        last = frame["command"].iat[-1]
    if key[1] is not None:
        state.update((last,))
    yield pd.DataFrame({"out": [last.decode()]}, dtype=object)


OPERATORS = {"floor": floor, "echo": echo, "ours": apply_partition_commands}


def stage(spark: Any, path: Path, batches: list[list[dict[str, Any]]]) -> None:
    """Silver as the sequencer writes it: one Delta commit (one file) per micro-batch."""
    for rows in batches:
        (spark.createDataFrame(arrow_table(rows, COMMAND)).coalesce(1).write.format("delta").mode("append")
         .save(str(path)))


def run(spark: Any, silver: Path, name: str, work: Path) -> tuple[float, float]:
    """One query over the staged micro-batches: the last batch's wall seconds, and the CPU seconds the
    JVM and the Python workers spent in it."""
    from pyspark.sql.streaming.state import GroupStateTimeout

    checkpoint = work / f"ckpt-{name}"
    shutil.rmtree(checkpoint, ignore_errors=True)
    jvm = pids()[1]
    cpu: list[float] = []
    spark.streams.addListener(listener := batch_cpu_listener(jvm, cpu))
    query = (spark.readStream.format("delta").option("maxFilesPerTrigger", 1).load(str(silver))
             .select("topic", "partition", "command").groupBy("topic", "partition")
             .applyInPandasWithState(OPERATORS[name], PACKED_OUTPUT.to_spark(), PARTITION_STATE.to_spark(),
                                     "append", GroupStateTimeout.NoTimeout)
             .writeStream.format("noop").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    wait_for(lambda: len(cpu) >= 3, 30, "progress events")  # the listener bus is asynchronous
    spark.streams.removeListener(listener)
    return query.recentProgress[-1]["batchDuration"] / 1000, cpu[-1] - cpu[-2]


def batch_cpu_listener(jvm: int, marks: list[float]) -> Any:
    """Marks the CPU seconds of the JVM and its workers at each batch's end (and at the query's start)."""
    from pyspark.sql.streaming import StreamingQueryListener

    class Listener(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            marks.append(cpu_seconds(jvm))

        def onQueryProgress(self, event: Any) -> None:
            marks.append(cpu_seconds(jvm))

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    return Listener()


def measure(spark: Any, partitions: int, repeat: int, tail: str = "failure") -> dict[str, Any]:
    setup, tail_events = cluster_log(partitions, tail)
    work = Path(tempfile.mkdtemp(prefix="isrflow-floor-"))
    from statemachine.controller import Controller

    controller = Controller()
    first = silver_rows(setup, 0, controller)
    last = silver_rows(tail_events, len(setup), controller)
    groups = len({(r["topic"], r["partition"]) for r in last})
    stage(spark, work / "silver", [first, last])
    best: dict[str, float] = {}
    best_cpu: dict[str, float] = {}
    for _ in range(repeat):
        for name in OPERATORS:
            seconds, cpu = run(spark, work / "silver", name, work)
            best[name] = min(best.get(name, seconds), seconds)
            best_cpu[name] = min(best_cpu.get(name, cpu), cpu)
    shutil.rmtree(work, ignore_errors=True)
    return {"groups": groups, "seconds": best, "cpu": best_cpu}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each operator; the fastest counts")
    parser.add_argument("--state-store", choices=sorted(STATE_STORES), default=None,
                        help="state store provider (default: the session's)")
    args = parser.parse_args()
    conf = {} if args.state_store is None else {"spark.sql.streaming.stateStore.providerClass":
                                                STATE_STORES[args.state_store]}
    spark = build_spark("isrflow-floor", conf=conf)
    before = load()
    result = measure(spark, args.partitions, args.repeat)
    spark.stop()
    groups, s, cpu = result["groups"], result["seconds"], result["cpu"]
    print(f"partitions {args.partitions}, groups in the failure batch {groups}, load {before} -> {load()}, "
          f"state store {args.state_store or 'session default'}")
    for name, seconds in s.items():
        print(f"  {name:5s} wall {seconds:6.2f}s  {seconds / groups * 1000:.3f} ms/group  "
              f"{seconds / s['floor']:.2f}x floor | CPU (JVM + Python workers) {cpu[name]:6.2f}s  "
              f"{cpu[name] / groups * 1000:.3f} ms/group  {cpu[name] / cpu['floor']:.2f}x floor")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
