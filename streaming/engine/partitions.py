"""The partition query (the second of the pipeline's two): silver commands ->
groupBy(topic, partition).applyInPandasWithState(apply_command) -> foreachBatch: audit rows and decisions
to Delta (idempotent per batch), decisions to the sink topic (one Kafka transaction per batch).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import operator
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np
import pandas as pd

from schemas import codec
from schemas.records import AuditRow, Decision
from schemas.tables import AUDIT, COMMAND, DECISION, OPERATOR_OUTPUT, PACKED_OUTPUT, PARTITION_STATE, TableSchema
from statemachine.partition import apply_command
from statemachine.record import Command, PartitionRecord
from statemachine.rules import ZK, Rules
from streaming.engine.counts import BatchCounts, Stopwatch, agreement_words
from streaming.engine.faults import crash_point
from streaming.engine.metrics import AUDIT_COLUMNS, ShadowMetrics
from streaming.io.layout import Checkpoints, Lake
from streaming.io.storage import Location, Storage

# Runs after each partition batch's Delta writes (`run --quality`): (spark, audit rows, batch id) -> a
# summary for the progress line.
BatchCheck = Callable[[Any, Any, int], str]
# Runs after each partition batch's Delta writes: (audit rows, decisions as packed, batch id) -> the batch's agreement
# rows (each with its `cause`, `match` and `isrflow` side), empty when there was nothing to compare, None when `run`
# is not behind `isrflow bridge`. Given by the layer above (streaming.history.live), which knows what agreement is.
BatchAgreement = Callable[[Any, list[dict[str, Any]], int], list[dict[str, Any]] | None]


# -- the stateful operator (the hot path) ----------------------------------------------------------
# pandas and Arrow pay per column per group, so every row through the operator is narrow: the input is
# the key plus one packed command, the state one packed record, the output one packed row that the
# foreachBatch expands in the JVM (`expand_output`). Packing is derived from the records' dataclass fields
# (schemas.codec), so a field added to a record flows through without touching this file.

def pack_command(command: Command) -> bytes:
    """The silver `command` column."""
    return codec.dumps(command, Command).encode()


def _packer(kind: str, cls: type) -> Callable[[Any], str]:
    """An audit row or a decision as the tables have it (schemas.records.to_row), as one JSON object with
    its `kind` first. JSON itself writes tuples as lists, StrEnum members as their text and int map keys as
    text, which is all to_row converts, so the fields go to the encoder as they are: one C call per row."""
    names = ("kind", *(f.name for f in dataclasses.fields(cls)))
    values = operator.attrgetter(*names[1:])
    return lambda row: codec.compact(dict(zip(names, (kind, *values(row)), strict=True)))


_pack_audit = _packer("audit", AuditRow)
_pack_decision = _packer("decision", Decision)


_OUT = pd.Index(PACKED_OUTPUT.names)


def _frame(out: list[str]) -> pd.DataFrame:
    """One object column from a 2-D array and a given index: a quarter of the cost of pandas' dict
    constructor per group, and half of the same array without the index, which pandas would infer."""
    return pd.DataFrame(np.array(out, dtype=object).reshape(-1, 1), index=pd.RangeIndex(len(out)),
                        columns=_OUT, copy=False)


class PackedState(Protocol):
    """The state calls `apply_packed` makes: applyInPandasWithState's GroupState has them; a transformWithState
    ValueState can be put behind them."""

    @property
    def exists(self) -> bool: ...

    @property
    def get(self) -> tuple[Any, ...]: ...

    def update(self, row: tuple[Any, ...]) -> None: ...

    def remove(self) -> None: ...


def apply_packed(key: tuple[Any, ...], packed: Iterable[bytes], state: PackedState,
                 rules: Rules = ZK) -> list[str]:
    """One TopicPartition's packed commands of this micro-batch, applied in log order to the record kept in
    `state` (a PARTITION_STATE row); returns the packed audit rows and decisions. A key whose partition is
    None holds the cluster-level commands: they have no record, so the state is neither read nor written."""
    commands = [codec.loads(p, Command) for p in packed]
    commands.sort(key=lambda c: (c.source_offset, c.step))
    partition_key = key[1] is not None
    record = None
    if partition_key and state.exists:
        record = codec.loads(state.get[0], PartitionRecord)
    out: list[str] = []
    for command in commands:
        applied = apply_command(record, command, rules)
        record = applied.record
        out.append(_pack_audit(applied.audit))
        out.extend(map(_pack_decision, applied.decisions))
    if partition_key:
        if record is None:
            if state.exists:
                state.remove()
        else:
            state.update((codec.dumps(record, PartitionRecord).encode(),))
    return out


def apply_partition_commands(key: tuple[Any, ...], frames: Iterator[pd.DataFrame],
                             state: Any, rules: Rules = ZK) -> Iterator[pd.DataFrame]:
    """applyInPandasWithState function: one TopicPartition's commands of this micro-batch, applied in log
    order to the record kept in the state store. Emits audit rows and decisions, packed, in one frame."""
    yield _frame(apply_packed(key, (p for frame in frames for p in frame["command"]), state, rules))


def expand_output(packed: Any) -> Any:
    """The operator's packed rows (one JSON column `out`) as OPERATOR_OUTPUT's columns, plus `out`.
    JSON object keys are text, so a map with int keys is read as text keys, then cast."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    target = OPERATOR_OUTPUT.to_spark()
    readable = T.StructType([
        T.StructField(f.name, T.MapType(T.StringType(), f.dataType.valueType), f.nullable)
        if isinstance(f.dataType, T.MapType) else f for f in target.fields])
    parsed = packed.select("out", F.from_json("out", readable).alias("r"))
    return parsed.select("out", *(F.col(f"r.{f.name}").cast(f.dataType).alias(f.name) for f in target.fields))


class PartitionSink:
    """foreachBatch of the partition query: audit and decisions to Delta, decisions to Kafka."""

    def __init__(self, lake: Lake, checkpoint: Location, publisher: Any | None = None,
                 counts: BatchCounts | None = None, check: BatchCheck | None = None,
                 storage: Storage | None = None, metrics: ShadowMetrics | None = None,
                 agreement: BatchAgreement | None = None) -> None:
        self.lake = lake
        self.metrics = metrics
        self.agreement = agreement
        self.checkpoint = checkpoint
        self.publisher = publisher
        self.counts = counts
        self.check = check
        self.storage = storage or Storage()
        self._query_id: str | None = None
        self._decisions_exist = False

    def query_id(self) -> str:
        """The partition query's id from its checkpoint: stable across restarts, new with a new checkpoint
        (read once: on remote storage every read is a request)."""
        if self._query_id is None:
            self._query_id = json.loads(self.storage.read_text(self.checkpoint / "metadata"))["id"]
        return self._query_id

    def decisions_exist(self) -> bool:
        """Whether the decisions table has been created (a table, once there, stays)."""
        self._decisions_exist = self._decisions_exist or self.storage.is_delta_table(self.lake.decisions)
        return self._decisions_exist

    def __call__(self, batch_df: Any, batch_id: int) -> None:
        from datetime import UTC, datetime

        from pyspark.sql import functions as F

        clock = Stopwatch()
        rows = expand_output(batch_df).persist()
        try:
            audit = (rows.filter(F.col("kind") == "audit")
                     .withColumn("batch_id", F.lit(batch_id).cast("long"))
                     .withColumn("processed_at", F.current_timestamp())
                     .select(*AUDIT.names))
            decided = rows.filter(F.col("kind") == "decision")
            # The decisions as the operator packed them: Kafka's values need no second trip through Spark.
            packed = [json.loads(r["out"]) for r in decided.select("out").collect()]
            clock.lap("operator")  # the stateful operator runs here, in the first action on `rows`
            decisions = decided.withColumn("decided_at", F.current_timestamp()).select(*DECISION.names)

            def append(df: Any, path: Location, app: str) -> Callable[[], None]:
                def write() -> None:
                    # mergeSchema: a table written by an older isrflow gains the columns added since (ELR).
                    df.write.format("delta").mode("append").option("txnAppId", app).option(
                        "txnVersion", batch_id).option("mergeSchema", "true").save(str(path))
                    if app == "isrflow-audit":
                        crash_point("between-delta-commits")  # the decisions' commit may or may not be done
                return write

            writes = {"audit": append(audit, self.lake.audit, "isrflow-audit")}
            if packed or not self.decisions_exist():  # no empty commits
                writes["decisions"] = append(decisions, self.lake.decisions, "isrflow-decisions")
            # The Delta commits (two tables) and the Kafka transaction's sends at once; the transaction
            # commits only after the Delta commits, so a decision read from the sink topic is in Delta too.
            # Each is idempotent per batch id: a re-run after a failure redoes only what had not committed.
            with ThreadPoolExecutor(max_workers=len(writes)) as pool:
                pending = [pool.submit(clock.timed, name, write) for name, write in writes.items()]

                reached: list[str] = []

                def delta_committed() -> None:
                    for future in pending:
                        future.result()
                    if not reached:  # called before the Kafka commit, then again in case nothing was published
                        reached.append("delta-committed")
                        crash_point("delta-committed")

                published = 0
                if self.publisher is not None:
                    publisher, query_id, decided_at = self.publisher, self.query_id(), datetime.now(UTC)
                    published = clock.timed("kafka", lambda: publisher.publish(
                        query_id, batch_id, [{**d, "decided_at": decided_at} for d in packed], delta_committed))
                delta_committed()
            clock.lap(" | ".join([*writes, "kafka"] if self.publisher is not None else writes))
            compared: list[dict[str, Any]] | None = None
            if self.agreement is not None:  # after the decisions' commit: a re-run recomputes the same rows
                compared = self.agreement(audit, packed, batch_id)
                clock.lap("agreement")
            if self.metrics is not None:  # the batch's agreement first: its offset shows once all of it is counted
                self.metrics.observe_agreement(compared or [])
                self.metrics.observe_decided([r.asDict() for r in audit.select(*AUDIT_COLUMNS).collect()], packed)
                clock.lap("metrics")
            agreeing = None if compared is None else agreement_words(compared, len(packed))
            quality = None
            if self.check is not None:
                quality = self.check(rows.sparkSession, audit, batch_id)
                clock.lap("quality")
            if self.counts is not None:
                summary = rows.groupBy("kind", "outcome").count().collect()
                self.counts.partitions[batch_id] = {
                    "commands": sum(r["count"] for r in summary if r["kind"] == "audit"),
                    "decisions": len(packed),
                    "rejections": sum(r["count"] for r in summary if r["outcome"] == "REJECTED"),
                    "published": published,
                    "quality": quality,
                    "agreement": agreeing,
                    "steps": clock.laps,
                    "within": clock.within,
                }
                clock.lap("counts")
        finally:
            rows.unpersist()


def ensure_delta_table(spark: Any, path: Location, schema: TableSchema) -> None:
    """The partition query streams from silver, which must exist before the first event arrives (also after a
    process killed inside silver's first commit: make test's fault trials, seed 20261141)."""
    if not Storage(spark).is_delta_table(path):
        spark.createDataFrame([], schema.to_spark()).write.format("delta").mode("append").save(str(path))


def start_partition_machine(spark: Any, lake: Lake, checkpoints: Checkpoints, trigger: dict[str, Any],
                            publisher: Any | None = None, counts: BatchCounts | None = None,
                            one_sequencer_batch_per_trigger: bool = False, check: BatchCheck | None = None,
                            rules: Rules = ZK, metrics: ShadowMetrics | None = None,
                            agreement: BatchAgreement | None = None) -> Any:
    from pyspark.sql.streaming.state import GroupStateTimeout

    ensure_delta_table(spark, lake.commands, COMMAND)
    reader = spark.readStream.format("delta")
    if one_sequencer_batch_per_trigger:
        reader = reader.option("maxFilesPerTrigger", 1)
    commands = reader.load(str(lake.commands)).select("topic", "partition", "command")
    outputs = commands.groupBy("topic", "partition").applyInPandasWithState(
        functools.partial(apply_partition_commands, rules=rules),
        outputStructType=PACKED_OUTPUT.to_spark(),
        stateStructType=PARTITION_STATE.to_spark(),
        outputMode="append",
        timeoutConf=GroupStateTimeout.NoTimeout,
    )
    sink = PartitionSink(lake, checkpoints.partitions, publisher, counts, check, Storage(spark), metrics, agreement)
    return (outputs.writeStream.queryName("isrflow-partitions").foreachBatch(sink)
            .option("checkpointLocation", str(checkpoints.partitions)).trigger(**trigger).start())
