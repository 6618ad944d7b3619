"""The sequencer query (the first of the pipeline's two): events -> foreachBatch that parses, quarantines bad
records, walks the batch in log order on the driver with the cluster view, and writes raw events (bronze)
and per-partition commands (silver). Its controller state is saved per batch id, so a batch re-run after a
crash yields exactly the same commands. Every Delta write is idempotent per batch (txnAppId + txnVersion).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schemas.events import Malformed, parse_event
from schemas.tables import COMMAND, EVENT, QUARANTINE, TableSchema
from statemachine.controller import Controller, ControllerConfig
from streaming.engine.counts import BatchCounts
from streaming.engine.faults import crash_point
from streaming.io.delta import arrow_table
from streaming.io.layout import Checkpoints, Lake


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
        crash_point("sequencer-state-write")
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
        crash_point("sequencer-committed")
        self._save(controller, batch_id)
        if self.counts is not None:
            self.counts.sequencer[batch_id] = {"events": len(rows), "quarantined": len(quarantine),
                                               "commands": len(commands)}
        if self.progress is not None:
            self.progress.advance(len(rows))


def start_sequencer(spark: Any, events: Any, lake: Lake, checkpoints: Checkpoints, config: ControllerConfig,
                    source: str, trigger: dict[str, Any], counts: BatchCounts | None = None,
                    progress: Any | None = None) -> Any:
    """`events`: a streaming DataFrame with columns source_offset (long) and value (binary)."""
    sequencer = Sequencer(spark, lake, checkpoints.sequencer_state, config, source, counts, progress)
    return (events.writeStream.queryName("isrflow-sequencer").foreachBatch(sequencer)
            .option("checkpointLocation", str(checkpoints.sequencer)).trigger(**trigger).start())
