"""The partition query (the second of the pipeline's two): silver commands ->
groupBy(topic, partition).applyInPandasWithState(apply_command) -> foreachBatch: audit rows and decisions
to Delta (idempotent per batch), decisions to the sink topic (one Kafka transaction per batch).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from schemas.records import to_row
from schemas.tables import AUDIT, COMMAND, DECISION, OPERATOR_OUTPUT, PARTITION_STATE, TableSchema
from statemachine.partition import apply_command
from statemachine.record import Command, PartitionRecord
from statemachine.rules import ZK, Rules
from streaming.engine.counts import BatchCounts
from streaming.engine.faults import crash_point
from streaming.io.layout import Checkpoints, Lake

# Runs after each partition batch's Delta writes (`run --quality`): (spark, audit rows, batch id) -> a
# summary for the progress line.
BatchCheck = Callable[[Any, Any, int], str]


# -- the stateful operator (the hot path) ----------------------------------------------------------

_COMMAND_COLUMNS = COMMAND.names
_STATE_COLUMNS = PARTITION_STATE.names
_OUTPUT_COLUMNS = OPERATOR_OUTPUT.names


_MAP_COLUMNS = frozenset(c.name for c in (*COMMAND.columns, *PARTITION_STATE.columns) if c.type.startswith("map<"))


def _row(columns: list[str], values: Any) -> dict[str, Any]:
    """A row as Arrow and pandas hand it over, as the core reads it: a missing int comes as NaN, a map as a
    list of (key, value) pairs."""
    row: dict[str, Any] = {}
    for c, v in zip(columns, values, strict=True):
        if isinstance(v, float) and v != v:
            v = None
        elif c in _MAP_COLUMNS and v is not None:
            v = dict(v)
        row[c] = v
    return row


def _commands(frame: pd.DataFrame) -> Iterator[Command]:
    """Commands of one group in log order. Column arrays, not iterrows: this runs per group per batch."""
    frame = frame.sort_values(["source_offset", "step"], kind="stable")
    columns = [frame[c].to_numpy(dtype=object) for c in _COMMAND_COLUMNS]
    for values in zip(*columns, strict=True):
        yield Command.from_row(_row(_COMMAND_COLUMNS, values))


def apply_partition_commands(key: tuple[Any, ...], frames: Iterator[pd.DataFrame],
                             state: Any, rules: Rules = ZK) -> Iterator[pd.DataFrame]:
    """applyInPandasWithState function: one TopicPartition's commands of this micro-batch, applied in log
    order to the record kept in the state store. Emits audit rows and decisions in one frame."""
    frames = list(frames)
    frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    partition_key = key[1] is not None
    record = None
    if partition_key and state.exists:
        record = PartitionRecord.from_row(_row(_STATE_COLUMNS, state.get))
    out: list[dict[str, Any]] = []
    for command in _commands(frame):
        applied = apply_command(record, command, rules)
        record = applied.record
        out.append({"kind": "audit", **to_row(applied.audit)})
        out.extend({"kind": "decision", **to_row(d)} for d in applied.decisions)
    if partition_key:
        if record is None:
            if state.exists:
                state.remove()
        else:
            row = record.to_row()
            state.update(tuple(row[c] for c in _STATE_COLUMNS))
    # object columns: pandas would turn a missing int into NaN, which Arrow cannot put in an int column.
    yield pd.DataFrame({c: pd.Series([row.get(c) for row in out], dtype=object) for c in _OUTPUT_COLUMNS})


class PartitionSink:
    """foreachBatch of the partition query: audit and decisions to Delta, decisions to Kafka."""

    def __init__(self, lake: Lake, checkpoint: Path, publisher: Any | None = None,
                 counts: BatchCounts | None = None, check: BatchCheck | None = None) -> None:
        self.lake = lake
        self.checkpoint = checkpoint
        self.publisher = publisher
        self.counts = counts
        self.check = check

    def query_id(self) -> str:
        """The partition query's id from its checkpoint: stable across restarts, new with a new checkpoint."""
        import json

        return json.loads((self.checkpoint / "metadata").read_text())["id"]

    def __call__(self, batch_df: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        batch_df = batch_df.persist()
        try:
            audit = (batch_df.filter(F.col("kind") == "audit")
                     .withColumn("batch_id", F.lit(batch_id).cast("long"))
                     .withColumn("processed_at", F.current_timestamp())
                     .select(*AUDIT.names))
            decisions = (batch_df.filter(F.col("kind") == "decision")
                         .withColumn("decided_at", F.current_timestamp())
                         .select(*DECISION.names))
            for df, path, app in ((audit, self.lake.audit, "isrflow-audit"),
                                  (decisions, self.lake.decisions, "isrflow-decisions")):
                (df.write.format("delta").mode("append").option("txnAppId", app).option("txnVersion", batch_id)
                 .save(str(path)))
                crash_point("between-delta-commits" if app == "isrflow-audit" else "delta-committed")
            quality = None if self.check is None else self.check(batch_df.sparkSession, audit, batch_id)
            published = 0
            if self.publisher is not None:
                rows = [r.asDict(recursive=True) for r in decisions.collect()]
                published = self.publisher.publish(self.query_id(), batch_id, rows)
            if self.counts is not None:
                summary = batch_df.groupBy("kind", "outcome").count().collect()
                self.counts.partitions[batch_id] = {
                    "commands": sum(r["count"] for r in summary if r["kind"] == "audit"),
                    "decisions": sum(r["count"] for r in summary if r["kind"] == "decision"),
                    "rejections": sum(r["count"] for r in summary if r["outcome"] == "REJECTED"),
                    "published": published,
                    "quality": quality,
                }
        finally:
            batch_df.unpersist()


def _ensure_delta(spark: Any, path: Path, schema: TableSchema) -> None:
    """The partition query streams from silver, which must exist before the first event arrives."""
    if not (path / "_delta_log").exists():
        spark.createDataFrame([], schema.to_spark()).write.format("delta").mode("append").save(str(path))


def start_partition_machine(spark: Any, lake: Lake, checkpoints: Checkpoints, trigger: dict[str, Any],
                            publisher: Any | None = None, counts: BatchCounts | None = None,
                            one_sequencer_batch_per_trigger: bool = False, check: BatchCheck | None = None,
                            rules: Rules = ZK) -> Any:
    from pyspark.sql.streaming.state import GroupStateTimeout

    _ensure_delta(spark, lake.commands, COMMAND)
    reader = spark.readStream.format("delta")
    if one_sequencer_batch_per_trigger:
        reader = reader.option("maxFilesPerTrigger", 1)
    commands = reader.load(str(lake.commands))
    outputs = commands.groupBy("topic", "partition").applyInPandasWithState(
        functools.partial(apply_partition_commands, rules=rules),
        outputStructType=OPERATOR_OUTPUT.to_spark(),
        stateStructType=PARTITION_STATE.to_spark(),
        outputMode="append",
        timeoutConf=GroupStateTimeout.NoTimeout,
    )
    sink = PartitionSink(lake, checkpoints.partitions, publisher, counts, check)
    return (outputs.writeStream.queryName("isrflow-partitions").foreachBatch(sink)
            .option("checkpointLocation", str(checkpoints.partitions)).trigger(**trigger).start())
