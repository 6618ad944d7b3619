"""Agreement live, in `isrflow run` behind `isrflow bridge`: after the partition query writes a micro-batch's
decisions, the real controller's changes caused by the batch's events (the observed table, which the sequencer
writes before the commands that wake the partition query) are compared with isrflow's decisions of them, and
the rows appended to the agreement table, idempotently per batch id."""

from __future__ import annotations

from typing import Any

from schemas.tables import AGREEMENT
from streaming.engine.partitions import BatchAgreement
from streaming.engine.sequencer import append_idempotent
from streaming.history.agreement import batch_agreement, to_table_rows
from streaming.io.layout import Lake
from streaming.io.storage import Storage


def agreement_writer(lake: Lake) -> BatchAgreement:
    """The partition query's hook: (audit rows, decisions, batch id) -> the batch's agreement rows (empty when the
    batch had nothing to compare), or None when there is no observed table (`run` is not behind a bridge)."""
    found: list[bool] = []  # the observed table, once there, stays

    def agree(audit: Any, decisions: list[dict[str, Any]], batch_id: int) -> list[dict[str, Any]] | None:
        from pyspark.sql import functions as F

        spark = audit.sparkSession
        if not found and not Storage(spark).exists(lake.observed / "_delta_log"):
            return None
        found.append(True)
        event_ids = {r["event_id"] for r in audit.select("event_id").distinct().collect()}
        if not event_ids:
            return []
        observed = [r.asDict(recursive=True) for r in spark.read.format("delta").load(str(lake.observed))
                    .where(F.col("cause_event_id").isin(sorted(event_ids))).collect()]
        rows = batch_agreement(observed, decisions, event_ids)
        if rows:
            append_idempotent(spark, to_table_rows(rows, batch_id), AGREEMENT, lake.agreement, "isrflow-agreement",
                              batch_id)
        return rows

    return agree
