"""Benchmark: the per-group price of applyInPandasWithState, ours next to the minimal no-op floor.

The same silver commands (a cluster of N partitions, then the failure of the broker that leads them all,
one micro-batch each) go through stateful operators keyed by (topic, partition), each in its own
query with the `noop` sink, in the same run and the same session:
- floor: the minimal no-op; rows are the key plus one binary column; reads its frames, emits nothing;
- echo:  the floor plus what any real operator must do per group: store one binary state, emit one row;
- ours:  `apply_partition_commands` (decode, apply_command, state, packed audit rows and decisions);
and the same through transformWithState (state API v2), beside it to compare, not used by the pipeline:
- tws-floor: transformWithStateInPandas, the minimal no-op (a processor with no state variable);
- tws-row-floor: transformWithState (Rows, no pandas), the minimal no-op;
- tws-row-ours: transformWithState with Rows running `apply_packed`, the same
  work as ours, on a ValueState of PARTITION_STATE;
- tws-ours (only with --operators): transformWithStateInPandas running `apply_partition_commands` on the
  same ValueState, its key column made non-null (see `with_processor`: with a null in it, pyspark 4.1.3
  hands the pandas variant float keys, and every float key reaches one and the same state key).
Reported: the failure batch's wall seconds and the CPU seconds the JVM and the Python workers spent in it
(steadier than wall time on a shared machine), per group, and each against the floor.
--check OPERATORS measures nothing: it runs ours and each of OPERATORS into a foreachBatch that collects the
`out` rows, and compares them with ours, micro-batch by micro-batch, as multisets (exit 1 if any differs).

Run: .venv/bin/python benchmarks/floor.py [--partitions 10000] [--repeat 2] [--state-store rocksdb|hdfs]
     [--operators floor,echo,ours,tws-floor,tws-row-floor,tws-row-ours,tws-ours]
     [--check tws-row-ours,tws-ours]
(transformWithState needs the RocksDB state store, the session default.)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
from harness import cluster_log, cpu_seconds, load, pids, silver_rows, wait_for
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from schemas.tables import COMMAND, PACKED_OUTPUT, PARTITION_STATE
from streaming.engine.partitions import apply_packed, apply_partition_commands
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


_UNREAD = object()


class ValueStateAsGroupState:
    """A transformWithState ValueState behind the GroupState calls `apply_packed` makes, for one key (made in
    each handleInputRows call): every ValueState call is a round trip to the JVM's state server, so the
    value is read once, at the first `exists` or `get` (never for a key that does not use its state)."""

    def __init__(self, value: Any) -> None:
        self.value = value
        self.row: Any = _UNREAD

    def _read(self) -> Any:
        if self.row is _UNREAD:
            self.row = self.value.get()
        return self.row

    @property
    def exists(self) -> bool:
        return self._read() is not None

    @property
    def get(self) -> Any:
        return self._read()

    def update(self, row: tuple[Any, ...]) -> None:
        self.value.update(row)
        self.row = row

    def remove(self) -> None:
        self.value.clear()
        self.row = None


class TwsFloor(StatefulProcessor):
    def init(self, handle: Any) -> None:
        pass

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        for _ in rows:
            pass
        yield from ()

    def close(self) -> None:
        pass


class TwsRowOurs(TwsFloor):
    """Our operator on transformWithState with Rows: `apply_packed` on a ValueState of PARTITION_STATE."""

    def init(self, handle: Any) -> None:
        self.record = handle.getValueState("record", PARTITION_STATE.to_spark())

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        from pyspark.sql import Row

        state = ValueStateAsGroupState(self.record)
        yield from map(Row(*PACKED_OUTPUT.names), apply_packed(key, (row.command for row in rows), state))


NO_PARTITION = -1  # the pandas variant's key for the cluster-level commands' None (see `with_processor`)


class TwsOurs(TwsRowOurs):
    """Our operator on transformWithStateInPandas: `apply_partition_commands` on the same ValueState. Its key
    never holds a null (see `with_processor`): NO_PARTITION stands for the cluster-level commands' None."""

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        topic, partition = key
        key = (topic, None if partition == NO_PARTITION else partition)
        yield from apply_partition_commands(key, rows, ValueStateAsGroupState(self.record))


def with_state(function: Any) -> Any:
    from pyspark.sql.streaming.state import GroupStateTimeout

    return lambda commands: commands.groupBy("topic", "partition").applyInPandasWithState(
        function, PACKED_OUTPUT.to_spark(), PARTITION_STATE.to_spark(), "append", GroupStateTimeout.NoTimeout)



def with_processor(processor: type, pandas: bool = True) -> Any:
    def build(commands: Any) -> Any:
        from pyspark.sql import functions as F

        # With pyspark 4.1.3, transformWithState's key is the first columns of the grouped DataFrame,
        # whatever the grouping expressions say (only their number counts). The pandas variant takes the key
        # from each Arrow batch converted to pandas, where an int column holding a null (the cluster-level
        # commands) is float64; a key (topic, 3.0) reaches the state store as another key, shared by every
        # float key (partitions then read each other's record). So there its column holds no null; the Row
        # variant hands ints and None as they are.
        if pandas:
            commands = commands.withColumn("partition", F.coalesce("partition", F.lit(NO_PARTITION)))
        grouped = commands.groupBy("topic", "partition")
        transform = grouped.transformWithStateInPandas if pandas else grouped.transformWithState
        return transform(processor(), PACKED_OUTPUT.to_spark(), "Append", "None")
    return build


OPERATORS = {"floor": with_state(floor), "echo": with_state(echo), "ours": with_state(apply_partition_commands),
             "tws-floor": with_processor(TwsFloor), "tws-row-floor": with_processor(TwsFloor, pandas=False),
             "tws-ours": with_processor(TwsOurs), "tws-row-ours": with_processor(TwsRowOurs, pandas=False)}
DEFAULT = ("floor", "echo", "ours", "tws-floor", "tws-row-floor", "tws-row-ours")


def stage(spark: Any, path: Path, batches: list[list[dict[str, Any]]]) -> None:
    """Silver as the sequencer writes it: one Delta commit (one file) per micro-batch."""
    for rows in batches:
        (spark.createDataFrame(arrow_table(rows, COMMAND)).coalesce(1).write.format("delta").mode("append")
         .save(str(path)))


def start(spark: Any, silver: Path, name: str, work: Path, sink: Any = None) -> Any:
    """One query of operator `name` over the staged micro-batches, into the `noop` sink or, given one,
    a foreachBatch function."""
    checkpoint = work / f"ckpt-{name}"
    shutil.rmtree(checkpoint, ignore_errors=True)
    commands = (spark.readStream.format("delta").option("maxFilesPerTrigger", 1).load(str(silver))
                .select("topic", "partition", "command"))
    writer = OPERATORS[name](commands).writeStream
    writer = writer.format("noop") if sink is None else writer.foreachBatch(sink)
    return writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()


def run(spark: Any, silver: Path, name: str, work: Path) -> tuple[float, float, int]:
    """One query over the staged micro-batches: the last batch's wall seconds, the CPU seconds the
    JVM and the Python workers spent in it, and its output rows."""
    jvm = pids()[1]
    cpu: list[float] = []
    spark.streams.addListener(listener := batch_cpu_listener(jvm, cpu))
    query = start(spark, silver, name, work)
    query.awaitTermination()
    wait_for(lambda: len(cpu) >= 3, 30, "progress events")  # the listener bus is asynchronous
    spark.streams.removeListener(listener)
    last = query.recentProgress[-1]
    return last["batchDuration"] / 1000, cpu[-1] - cpu[-2], last["sink"]["numOutputRows"]


def outputs(spark: Any, silver: Path, name: str, work: Path) -> list[Counter[str]]:
    """The multiset of `out` rows each micro-batch of operator `name` emits."""
    batches: dict[int, Counter[str]] = {}

    def collect(df: Any, batch_id: int) -> None:
        batches[batch_id] = Counter(row.out for row in df.collect())

    start(spark, silver, name, work, collect).awaitTermination()
    return [batches[b] for b in sorted(batches)]


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


def stage_cluster(spark: Any, partitions: int, tail: str, work: Path) -> int:
    """Silver for a cluster of `partitions` (one micro-batch) then `tail` (another); the groups of the
    latter."""
    setup, tail_events = cluster_log(partitions, tail)
    from statemachine.controller import Controller

    controller = Controller()
    first = silver_rows(setup, 0, controller)
    last = silver_rows(tail_events, len(setup), controller)
    stage(spark, work / "silver", [first, last])
    return len({(r["topic"], r["partition"]) for r in last})


def check(spark: Any, partitions: int, operators: tuple[str, ...], tail: str = "failure") -> list[str]:
    """Each operator's output, micro-batch by micro-batch, against `ours` (the pipeline's), as multisets
    of `out` rows: one line per operator and batch, and the differences, for the first of the lines."""
    work = Path(tempfile.mkdtemp(prefix="isrflow-floor-check-"))
    stage_cluster(spark, partitions, tail, work)
    expected = outputs(spark, work / "silver", "ours", work)
    lines = []
    for name in operators:
        got = outputs(spark, work / "silver", name, work)
        for batch, (want, have) in enumerate(zip(expected, got, strict=True)):
            equal = want == have
            lines.append(f"{'equal' if equal else 'DIFFERENT':9s} {name} batch {batch}: "
                         f"{have.total()} rows, ours {want.total()}")
            if not equal:
                missing, extra = want - have, have - want
                lines.append(f"    {missing.total()} rows of ours missing, e.g. {list(missing)[:2]}")
                lines.append(f"    {extra.total()} rows not in ours, e.g. {list(extra)[:2]}")
    shutil.rmtree(work, ignore_errors=True)
    return lines


def measure(spark: Any, partitions: int, repeat: int, tail: str = "failure",
            operators: tuple[str, ...] = ("floor", "echo", "ours")) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="isrflow-floor-"))
    groups = stage_cluster(spark, partitions, tail, work)
    best: dict[str, float] = {}
    best_cpu: dict[str, float] = {}
    rows: dict[str, int] = {}
    for _ in range(repeat):
        for name in operators:
            seconds, cpu, rows[name] = run(spark, work / "silver", name, work)
            best[name] = min(best.get(name, seconds), seconds)
            best_cpu[name] = min(best_cpu.get(name, cpu), cpu)
    shutil.rmtree(work, ignore_errors=True)
    return {"groups": groups, "seconds": best, "cpu": best_cpu, "rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each operator; the fastest counts")
    parser.add_argument("--state-store", choices=sorted(STATE_STORES), default=None,
                        help="state store provider (default: the session's)")
    parser.add_argument("--operators", default=",".join(DEFAULT),
                        help=f"comma-separated, `floor` first (the ratios' base): {', '.join(OPERATORS)}")
    parser.add_argument("--check", metavar="OPERATORS", default=None,
                        help="instead of measuring: compare these operators' output rows (comma-separated) "
                             "with ours, micro-batch by micro-batch; exit 1 if any differs")
    args = parser.parse_args()
    operators = tuple(args.operators.split(","))
    checked = () if args.check is None else tuple(args.check.split(","))
    if not set(checked) <= set(OPERATORS):
        parser.error(f"--check: any of {', '.join(OPERATORS)}")
    if operators[0] != "floor" or not set(operators) <= set(OPERATORS):
        parser.error(f"--operators: `floor` first, then any of {', '.join(OPERATORS)}")
    conf = {} if args.state_store is None else {"spark.sql.streaming.stateStore.providerClass":
                                                STATE_STORES[args.state_store]}
    spark = build_spark("isrflow-floor", conf=conf)
    if checked:
        lines = check(spark, args.partitions, checked)
        spark.stop()
        print(f"partitions {args.partitions}: output rows against ours", *lines, sep="\n  ")
        return 1 if any(line.startswith("DIFFERENT") for line in lines) else 0
    before = load()
    result = measure(spark, args.partitions, args.repeat, operators=operators)
    spark.stop()
    groups, s, cpu = result["groups"], result["seconds"], result["cpu"]
    print(f"partitions {args.partitions}, groups in the failure batch {groups}, load {before} -> {load()}, "
          f"state store {args.state_store or 'session default'}")
    for name, seconds in s.items():
        print(f"  {name:13s} wall {seconds:6.2f}s  {seconds / groups * 1000:.3f} ms/group  "
              f"{seconds / s['floor']:.2f}x floor | CPU (JVM + Python workers) {cpu[name]:6.2f}s  "
              f"{cpu[name] / groups * 1000:.3f} ms/group  {cpu[name] / cpu['floor']:.2f}x floor | "
              f"{result['rows'][name]} rows out")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
