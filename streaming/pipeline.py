"""The streaming pipeline, in two queries (ARCHITECTURE.md, "The hard part: fan-out in log order").

1. Sequencer: events (Kafka or a staged event log) -> foreachBatch: parse, quarantine bad records, run the
   cluster view over the batch in log order and write per-partition commands (silver) and raw events
   (bronze). Its controller state is saved per batch id, so a re-run batch yields the same commands.
2. Partition state machine: silver -> groupBy(topic, partition).applyInPandasWithState(apply_command)
   -> foreachBatch: audit rows and decisions to Delta, decisions to the sink topic.

Every Delta write is idempotent per batch (txnAppId + txnVersion), so a restart from the checkpoints
neither loses nor duplicates a row.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from schemas.events import Malformed, parse_event
from schemas.tables import AUDIT, COMMAND, DECISION, EVENT, OPERATOR_OUTPUT, PARTITION_STATE, QUARANTINE, TableSchema
from statemachine.controller import Controller, ControllerConfig
from statemachine.partition import apply_command
from statemachine.record import Command, PartitionRecord
from streaming.lake import arrow_table


@dataclass(frozen=True)
class Lake:
    """Where the pipeline's tables live."""

    audit: Path
    quarantine: Path
    bronze: Path
    commands: Path
    decisions: Path
    quality: Path

    @classmethod
    def beside(cls, audit: Path, root: Path | None = None) -> Lake:
        root = root or audit.parent
        return cls(audit=audit, quarantine=root / "quarantine", bronze=root / "bronze",
                   commands=root / "commands", decisions=root / "decisions", quality=root / "quality")


@dataclass(frozen=True)
class Checkpoints:
    root: Path

    @property
    def sequencer(self) -> Path:
        return self.root / "sequencer"

    @property
    def sequencer_state(self) -> Path:
        return self.root / "sequencer-state"

    @property
    def partitions(self) -> Path:
        return self.root / "partitions"


@dataclass
class BatchCounts:
    """What the last micro-batches did, for the progress line (filled by the foreachBatch writers)."""

    sequencer: dict[int, dict[str, int]] = field(default_factory=dict)
    partitions: dict[int, dict[str, int]] = field(default_factory=dict)


def _append_idempotent(spark: Any, rows: list[dict[str, Any]], schema: TableSchema, path: Path, app_id: str,
                       batch_id: int) -> None:
    """Append rows as one Delta commit that a re-run of the same batch id skips."""
    if not rows:
        return
    # One file per commit: the partition query can then take exactly one sequencer batch per trigger.
    df = spark.createDataFrame(arrow_table(rows, schema)).coalesce(1)
    (df.write.format("delta").mode("append").option("txnAppId", app_id).option("txnVersion", batch_id)
     .save(str(path)))


class Sequencer:
    """foreachBatch of the sequencer query. Runs on the driver: the cluster view is one small object and
    each event must see the cluster as every earlier event left it."""

    def __init__(self, spark: Any, lake: Lake, state_dir: Path, config: ControllerConfig, source: str,
                 counts: BatchCounts | None = None, progress: Any | None = None) -> None:
        self.progress = progress
        self.spark = spark
        self.lake = lake
        self.state_dir = state_dir
        self.config = config
        self.source = source
        self.counts = counts
        self._controller: Controller | None = None
        self._controller_batch = -1  # the batch id whose result `_controller` holds

    def _controller_before(self, batch_id: int) -> Controller:
        """The controller as the previous batch left it: in memory, or the newest snapshot older than
        this batch (a batch re-run after a crash restarts from the same state)."""
        if self._controller is not None and self._controller_batch == batch_id - 1:
            return self._controller
        controller = Controller(self.config)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        older = sorted((int(p.stem), p) for p in self.state_dir.glob("*.pickle") if int(p.stem) < batch_id)
        if older:
            controller.restore(older[-1][1].read_bytes())
        return controller

    def _save(self, controller: Controller, batch_id: int) -> None:
        tmp = self.state_dir / f"{batch_id}.pickle.tmp"
        tmp.write_bytes(controller.snapshot())
        tmp.replace(self.state_dir / f"{batch_id}.pickle")
        for old in self.state_dir.glob("*.pickle"):
            if int(old.stem) < batch_id - 2:  # keep a few for re-runs of recent batches
                old.unlink()
        self._controller, self._controller_batch = controller, batch_id

    def __call__(self, batch_df: Any, batch_id: int) -> None:
        rows = batch_df.select("source_offset", "value").orderBy("source_offset").collect()
        controller = self._controller_before(batch_id)
        bronze: list[dict[str, Any]] = []
        quarantine: list[dict[str, Any]] = []
        commands: list[dict[str, Any]] = []
        for row in rows:
            offset, raw = int(row["source_offset"]), row["value"]
            event = parse_event(None if raw is None else bytes(raw))
            if isinstance(event, Malformed):
                quarantine.append({"source": self.source, "source_offset": offset,
                                   "raw": None if raw is None else bytes(raw), "error": event.reason,
                                   "batch_id": batch_id, "quarantined_at": None})
                continue
            bronze.append({"source_offset": offset, "event_id": event.event_id, "type": event.type,
                           "controller_epoch": event.controller_epoch, "ts": event.ts, "json": event.to_json(),
                           "batch_id": batch_id})
            commands.extend(h.command.to_row() for h in controller.handle(event, offset))
        _append_idempotent(self.spark, bronze, EVENT, self.lake.bronze, "isrflow-bronze", batch_id)
        _append_idempotent(self.spark, quarantine, QUARANTINE, self.lake.quarantine, "isrflow-quarantine",
                           batch_id)
        _append_idempotent(self.spark, commands, COMMAND, self.lake.commands, "isrflow-commands", batch_id)
        self._save(controller, batch_id)
        if self.counts is not None:
            self.counts.sequencer[batch_id] = {"events": len(rows), "quarantined": len(quarantine),
                                               "commands": len(commands)}
        if self.progress is not None:
            self.progress.advance(len(rows))


# -- the stateful operator (the hot path) ----------------------------------------------------------

_COMMAND_COLUMNS = COMMAND.names
_STATE_COLUMNS = PARTITION_STATE.names
_OUTPUT_COLUMNS = OPERATOR_OUTPUT.names


def _commands(frame: pd.DataFrame) -> Iterator[Command]:
    """Commands of one group in log order. Column arrays, not iterrows: this runs per group per batch."""
    frame = frame.sort_values(["source_offset", "step"], kind="stable")
    columns = [frame[c].to_numpy(dtype=object) for c in _COMMAND_COLUMNS]
    for values in zip(*columns, strict=True):
        yield Command.from_row(dict(zip(_COMMAND_COLUMNS, values, strict=True)))


def apply_partition_commands(key: tuple[Any, ...], frames: Iterator[pd.DataFrame],
                             state: Any) -> Iterator[pd.DataFrame]:
    """applyInPandasWithState function: one TopicPartition's commands of this micro-batch, applied in log
    order to the record kept in the state store. Emits audit rows and decisions in one frame."""
    frames = list(frames)
    frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    partition_key = key[1] is not None
    record = None
    if partition_key and state.exists:
        record = PartitionRecord.from_row(dict(zip(_STATE_COLUMNS, state.get, strict=True)))
    out: list[dict[str, Any]] = []
    for command in _commands(frame):
        applied = apply_command(record, command)
        record = applied.record
        out.append({"kind": "audit", **applied.audit})
        out.extend({"kind": "decision", **d} for d in applied.decisions)
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
                 counts: BatchCounts | None = None, quality: Path | None = None) -> None:
        self.lake = lake
        self.checkpoint = checkpoint
        self.publisher = publisher
        self.counts = counts
        # Where the per-batch data-quality results go (`run --quality`), or None.
        self.quality = quality

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
            quality = None
            if self.quality is not None:
                from streaming.quality import quality_on_batch

                summary = quality_on_batch(batch_df.sparkSession, audit, batch_id, self.quality)
                quality = f"{summary['failed']} failed, {summary['warnings']} warnings"
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


def start_sequencer(spark: Any, events: Any, lake: Lake, checkpoints: Checkpoints, config: ControllerConfig,
                    source: str, trigger: dict[str, Any], counts: BatchCounts | None = None,
                    progress: Any | None = None) -> Any:
    """`events`: a streaming DataFrame with columns source_offset (long) and value (binary)."""
    sequencer = Sequencer(spark, lake, checkpoints.sequencer_state, config, source, counts, progress)
    return (events.writeStream.queryName("isrflow-sequencer").foreachBatch(sequencer)
            .option("checkpointLocation", str(checkpoints.sequencer)).trigger(**trigger).start())


def _ensure_delta(spark: Any, path: Path, schema: TableSchema) -> None:
    """The partition query streams from silver, which must exist before the first event arrives."""
    if not (path / "_delta_log").exists():
        spark.createDataFrame([], schema.to_spark()).write.format("delta").mode("append").save(str(path))


def start_partition_machine(spark: Any, lake: Lake, checkpoints: Checkpoints, trigger: dict[str, Any],
                            publisher: Any | None = None, counts: BatchCounts | None = None,
                            one_sequencer_batch_per_trigger: bool = False, quality: Path | None = None) -> Any:
    from pyspark.sql.streaming.state import GroupStateTimeout

    _ensure_delta(spark, lake.commands, COMMAND)
    reader = spark.readStream.format("delta")
    if one_sequencer_batch_per_trigger:
        reader = reader.option("maxFilesPerTrigger", 1)
    commands = reader.load(str(lake.commands))
    outputs = commands.groupBy("topic", "partition").applyInPandasWithState(
        apply_partition_commands,
        outputStructType=OPERATOR_OUTPUT.to_spark(),
        stateStructType=PARTITION_STATE.to_spark(),
        outputMode="append",
        timeoutConf=GroupStateTimeout.NoTimeout,
    )
    sink = PartitionSink(lake, checkpoints.partitions, publisher, counts, quality)
    return (outputs.writeStream.queryName("isrflow-partitions").foreachBatch(sink)
            .option("checkpointLocation", str(checkpoints.partitions)).trigger(**trigger).start())


def kafka_events(spark: Any, bootstrap_servers: str, topic: str, starting_offsets: str = "earliest",
                 options: dict[str, str] | None = None) -> Any:
    """The events topic as (source_offset, value); checked by `streaming.eventlog.require_single_partition`."""
    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap_servers)
              .option("subscribe", topic).option("startingOffsets", starting_offsets)
              .option("failOnDataLoss", "true"))
    for key, value in (options or {}).items():
        reader = reader.option(key, value)
    return reader.load().selectExpr("offset AS source_offset", "value")


def staged_events(spark: Any, staging: Path, records: Iterator[tuple[int, bytes]], batch_size: int) -> Any:
    """An event log staged as a Delta table, one commit per `batch_size` records (0 = one commit), read as a
    stream one commit per micro-batch: the file's line numbers stay the offsets."""
    from schemas.tables import BINARY, LONG, Column

    staging_schema = TableSchema("staged_event", (Column("source_offset", LONG, False), Column("value", BINARY)))
    chunk: list[dict[str, Any]] = []
    chunks = 0

    def flush() -> None:
        nonlocal chunks
        (spark.createDataFrame(arrow_table(chunk, staging_schema)).coalesce(1).write.format("delta")
         .mode("append").save(str(staging)))
        chunks += 1
        chunk.clear()

    for offset, raw in records:
        chunk.append({"source_offset": offset, "value": raw})
        if batch_size and len(chunk) >= batch_size:
            flush()
    if chunk or not chunks:
        flush()
    return spark.readStream.format("delta").option("maxFilesPerTrigger", 1).load(str(staging))
