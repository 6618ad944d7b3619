"""The pipeline's event sources, each a streaming DataFrame of (source_offset, value)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from schemas.tables import BINARY, LONG, Column, TableSchema
from streaming.io.delta import arrow_table
from streaming.io.kafkaclient import KafkaSettings

# When the events topic's leader dies, the source's offset lookup waits on it for the admin client's default
# 60 s before Spark retries with a new admin client, which finds the new leader at once: the failover's
# decisions came a minute late. 15 s a try, and more tries, so a slow cluster is not a failed query either.
FAILOVER_TIMEOUTS = {"kafka.request.timeout.ms": "10000", "kafka.default.api.timeout.ms": "15000",
                     "fetchOffset.numRetries": "8"}


def kafka_events(spark: Any, kafka: KafkaSettings | str, topic: str, starting_offsets: str = "earliest",
                 options: dict[str, str] | None = None) -> Any:
    """The events topic as (source_offset, value); checked by `streaming.io.eventlog.require_single_partition`.
    `options` are Spark source options (maxOffsetsPerTrigger, ...); security comes with `kafka`."""
    # read_committed: the records of a transaction a bridge never committed (killed mid-round, fenced by the next
    # one, which publishes them again) are not events; Spark's default reads them.
    reader = (spark.readStream.format("kafka").option("subscribe", topic)
              .option("startingOffsets", starting_offsets).option("failOnDataLoss", "true")
              .option("kafka.isolation.level", "read_committed"))
    for key, value in FAILOVER_TIMEOUTS.items():
        reader = reader.option(key, value)
    for key, value in {**KafkaSettings.of(kafka).spark_options(), **(options or {})}.items():
        reader = reader.option(key, value)
    return reader.load().selectExpr("offset AS source_offset", "value")


def staged_events(spark: Any, staging: Path, records: Iterator[tuple[int, bytes]], batch_size: int) -> Any:
    """An event log staged as a Delta table, one commit per `batch_size` records (0 = one commit), read as a
    stream one commit per micro-batch: the file's line numbers stay the offsets."""

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
