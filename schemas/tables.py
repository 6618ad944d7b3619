"""Column definitions of every record isrflow reads or writes, each defined once.

A `TableSchema` is engine-neutral: the Spark pipeline asks it for a `StructType`, the local engine and
the Delta writer without Spark ask it for a pyarrow schema. Nothing here imports Spark at module level,
so the pure core and its tests never start a JVM.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schemas.records import AgreementRow, AuditRow, Decision, ObservedDecision, RequestRow, field_types

# The column types we use, in Spark's DDL words.
STRING = "string"
INT = "int"
LONG = "long"
BOOL = "boolean"
TIMESTAMP = "timestamp"
BINARY = "binary"
INT_ARRAY = "array<int>"
STRING_ARRAY = "array<string>"
INT_STRING_MAP = "map<int,string>"
STRING_STRING_MAP = "map<string,string>"


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    nullable: bool = True


@dataclass(frozen=True)
class TableSchema:
    name: str
    columns: tuple[Column, ...]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def to_spark(self) -> Any:
        """The Spark StructType (imports pyspark lazily)."""
        from pyspark.sql import types as T

        def spark_type(t: str) -> Any:
            return {
                STRING: T.StringType(),
                INT: T.IntegerType(),
                LONG: T.LongType(),
                BOOL: T.BooleanType(),
                TIMESTAMP: T.TimestampType(),
                BINARY: T.BinaryType(),
                INT_ARRAY: T.ArrayType(T.IntegerType()),
                STRING_ARRAY: T.ArrayType(T.StringType()),
                INT_STRING_MAP: T.MapType(T.IntegerType(), T.StringType()),
                STRING_STRING_MAP: T.MapType(T.StringType(), T.StringType()),
            }[t]

        return T.StructType([T.StructField(c.name, spark_type(c.type), c.nullable) for c in self.columns])

    def to_arrow(self) -> Any:
        """The pyarrow schema, for the Delta writer that runs without Spark."""
        import pyarrow as pa

        def arrow_type(t: str) -> Any:
            return {
                STRING: pa.string(),
                INT: pa.int32(),
                LONG: pa.int64(),
                BOOL: pa.bool_(),
                TIMESTAMP: pa.timestamp("us", tz="UTC"),
                BINARY: pa.binary(),
                INT_ARRAY: pa.list_(pa.int32()),
                STRING_ARRAY: pa.list_(pa.string()),
                INT_STRING_MAP: pa.map_(pa.int32(), pa.string()),
                STRING_STRING_MAP: pa.map_(pa.string(), pa.string()),
            }[t]

        return pa.schema([pa.field(c.name, arrow_type(c.type), c.nullable) for c in self.columns])

    def without(self, *names: str) -> TableSchema:
        return TableSchema(self.name, tuple(c for c in self.columns if c.name not in names))


def _cols(*spec: tuple[str, str] | tuple[str, str, bool]) -> tuple[Column, ...]:
    return tuple(Column(*s) for s in spec)


def derived(name: str, cls: type, after: dict[str, tuple[Column, ...]] | None = None) -> TableSchema:
    """A record class's table: one column per field (type and nullability from its type hints), with the
    table-only columns `after` inserted after the named field."""
    after = after or {}
    columns: list[Column] = []
    for field_name, ft in field_types(cls).items():
        columns.append(Column(field_name, ft.ddl, ft.nullable))
        columns.extend(after.get(field_name, ()))
    return TableSchema(name, tuple(columns))


# A LeaderAndIsr decision (docs/contract.md, section 2), with the time the pipeline decided it.
DECISION = derived("decision", Decision, {"event_ts": (Column("decided_at", TIMESTAMP),)})

# One row per (event, partition) the state machine handled (docs/contract.md, section 3), with the
# micro-batch and the time it was processed (the columns after processed_at are additions, see AuditRow).
AUDIT = derived("audit", AuditRow, {"step": (Column("batch_id", LONG),),
                                    "event_ts": (Column("processed_at", TIMESTAMP),)})

# The requests the ZooKeeper-era controller sends to brokers, one row per request (docs/zookeeper.md, "The
# controller's requests"), with the time the run wrote them.
REQUESTS = derived("requests", RequestRow, {"partitions": (Column("processed_at", TIMESTAMP),)})

# A record that could not be read as an event: kept whole, with where it came from and why.
QUARANTINE = TableSchema(
    "quarantine",
    _cols(
        ("source", STRING, False),
        ("source_offset", LONG, False),
        ("raw", BINARY),
        ("error", STRING, False),
        ("batch_id", LONG),
        ("quarantined_at", TIMESTAMP),
    ),
)

# A well-formed event as read from the log (bronze): the validated JSON, re-serialised canonically.
EVENT = TableSchema(
    "event",
    _cols(
        ("source_offset", LONG, False),
        ("event_id", STRING, False),
        ("type", STRING, False),
        ("controller_epoch", INT, False),
        ("ts", STRING),
        ("json", STRING, False),
        ("batch_id", LONG),
    ),
)

# The real controller's partition changes as `isrflow bridge` publishes them (schemas.events.ObservedDecision,
# the import's observed rows): source_offset is the metadata log offset of the controller's record. With the
# sequencer's micro-batch.
OBSERVED = derived("observed", ObservedDecision, {"decision": (Column("batch_id", LONG),)})

# One row per observed decision of the controller beside isrflow's, as `isrflow run` computes them behind
# `isrflow bridge` (agreement.jsonl's columns, the two sides as JSON objects), with the partition query's micro-batch.
AGREEMENT = derived("agreement", AgreementRow, {"isrflow": (Column("batch_id", LONG),)})

# What the sequencer hands one partition (silver): the partition, where in the log, and the command itself
# packed as JSON (the event's fields the partition needs and the cluster facts as they stood at the
# event's position in the log; see schemas.codec). Partition-less rows carry the cluster-level audit
# outcome of an event (action CLUSTER). Packed because the stateful operator pays per column per group.
COMMAND = TableSchema(
    "command",
    _cols(
        ("topic", STRING),
        ("partition", INT),
        ("source_offset", LONG, False),
        ("step", INT, False),
        ("action", STRING, False),
        ("command", BINARY, False),
    ),
)

# The per-partition record kept in the state store (PartitionStateMachine + ReplicaStateMachine view),
# packed as JSON in one column (schemas.codec).
PARTITION_STATE = TableSchema("partition_state", _cols(("record", BINARY, False)))

# What the stateful operator emits: one JSON object per audit row or decision, `kind` telling which;
# the partition query's foreachBatch expands it to OPERATOR_OUTPUT's columns.
PACKED_OUTPUT = TableSchema("packed_output", _cols(("out", STRING, False)))


# One row per expectation per validated micro-batch (`isrflow run --quality`).
QUALITY_RESULT = TableSchema(
    "quality_result",
    _cols(
        ("batch_id", LONG, False),
        ("suite", STRING, False),
        ("suite_version", INT, False),
        ("expectation", STRING, False),
        ("severity", STRING, False),
        ("status", STRING, False),
        ("success", BOOL, False),
        ("unexpected_rows", LONG, False),
        ("examples", STRING),
        ("audit_rows", LONG, False),
        ("validated_at", TIMESTAMP, False),
    ),
)


def _operator_output() -> TableSchema:
    """The stateful operator emits audit rows and decisions in one frame: `kind` tells them apart and
    the columns are the union of both (derived here so the two definitions above stay the only ones)."""
    seen: dict[str, Column] = {}
    for col in (*AUDIT.columns, *DECISION.columns):
        if col.name not in seen:
            seen[col.name] = Column(col.name, col.type, True)
    return TableSchema("operator_output", (Column("kind", STRING, False), *seen.values()))


OPERATOR_OUTPUT = _operator_output()
