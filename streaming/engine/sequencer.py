"""The sequencer query (the first of the pipeline's two): events -> foreachBatch that parses, quarantines bad
records, walks the batch in log order on the driver with the cluster view, and writes raw events (bronze)
and per-partition commands (silver). Under the zk rules it also writes the requests the controller sends for each
event (the requests table): only here is an event's whole fan-out in one place, and the controller has applied every
command to its own copy of the partition records, as the local engine does, so the requests are the local engine's.
The real controller's decisions that `isrflow bridge` publishes beside the events (ObservedDecision) go to the
observed table and never reach the controller. Its controller state is saved per batch id (`SequencerState`, a
changelog of versioned JSON), so a batch re-run after a crash yields exactly the same commands and requests. Every
Delta write is idempotent per batch (txnAppId + txnVersion).
"""

from __future__ import annotations

import operator
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from schemas.events import Malformed, ObservedDecision, parse_record
from schemas.records import to_row
from schemas.tables import COMMAND, EVENT, OBSERVED, QUARANTINE, REQUESTS, TableSchema
from statemachine.controller import Controller, ControllerConfig, HandledEvent, SnapshotError
from statemachine.requests import Request, request_rows
from streaming.engine.collector import young_collection_only
from streaming.engine.counts import BatchCounts, Stopwatch
from streaming.engine.faults import crash_point
from streaming.engine.metrics import ShadowMetrics
from streaming.engine.partitions import pack_command
from streaming.io.delta import arrow_table
from streaming.io.layout import Checkpoints, Lake
from streaming.io.storage import Location, Storage


def append_idempotent(spark: Any, rows: list[dict[str, Any]], schema: TableSchema, path: Location, app_id: str,
                       batch_id: int) -> None:
    """Append rows as one Delta commit that a re-run of the same batch id skips."""
    if not rows:
        return
    # One file per commit: the partition query can then take exactly one sequencer batch per trigger.
    df = spark.createDataFrame(arrow_table(rows, schema)).coalesce(1)
    (df.write.format("delta").mode("append").option("txnAppId", app_id).option("txnVersion", batch_id)
     .save(str(path)))


class SequencerStateError(RuntimeError):
    """The sequencer cannot find or read the state a micro-batch must resume from."""


class SequencerState:
    """The controller's state per micro-batch, as a changelog of versioned JSON files in one directory:
    `<batch>.changes.json` holds what that batch changed (the cluster view, the partition records it
    touched, the event ids it saw); `<batch>.whole.json` the whole controller, written once the changes
    since the previous whole add up to as many records as the cluster has (so the bytes written stay
    proportional to the work, not to the cluster), or once `max_changes` change sets follow it (so a
    restart reads a bounded number of files). State before batch b = the newest whole older than b, then
    each change set after it up to b - 1.

    The directory may be a URI (`storage` reaches it): each file is written once whole under its final
    name (streaming.io.storage), and an earlier attempt of the same batch is deleted first."""

    def __init__(self, directory: Location, max_changes: int = 1000, storage: Storage | None = None) -> None:
        self.directory = directory
        self.storage = storage or Storage()
        self.max_changes = max_changes
        # Since the newest whole snapshot: records changed, change sets written.
        self._records = 0
        self._change_sets = 0

    def _files(self, before: int) -> list[tuple[int, bool, Location]]:
        """(batch, whole?, path) of the files older than `before`, by batch."""
        out = []
        for name in self.storage.names(self.directory):
            parts = name.split(".")
            if len(parts) == 3 and parts[2] == "json" and parts[0].isdigit() and int(parts[0]) < before:
                out.append((int(parts[0]), parts[1] == "whole", self.directory / name))
        return sorted(out, key=lambda f: (f[0], f[1]))

    def _fail(self, batch_id: int, why: str) -> SequencerStateError:
        return SequencerStateError(
            f"cannot resume the sequencer at micro-batch {batch_id}: {why}. The state lives in {self.directory}; "
            f"restore the missing or damaged files from a backup, or start over with a new checkpoint "
            f"directory and new output tables (the log is replayed from its first offset).")

    def load(self, controller: Controller, batch_id: int) -> None:
        """Restore into `controller` the state before `batch_id`. Never silently starts from empty state
        after batch 0."""
        self._records = self._change_sets = 0
        if any(name.endswith(".pickle") for name in self.storage.names(self.directory)):
            raise self._fail(batch_id, "its state was saved by an older isrflow (pickle), which is no longer read")
        if batch_id == 0:
            return
        files = self._files(batch_id)
        if not files or files[-1][0] != batch_id - 1:
            raise self._fail(batch_id, f"the state after batch {batch_id - 1} is missing")
        wholes = [i for i, (_, whole, _) in enumerate(files) if whole]
        if not wholes:
            raise self._fail(batch_id, "no whole snapshot precedes the change sets")
        chain = files[wholes[-1]:]
        if [n for n, _, _ in chain] != list(range(chain[0][0], batch_id)):
            raise self._fail(batch_id, f"change sets missing between batches {chain[0][0]} and {batch_id - 1}")
        for _, whole, path in chain:
            try:
                applied = controller.restore(self.storage.read_bytes(path))
            except SnapshotError as e:
                raise self._fail(batch_id, f"{path.name}: {e}") from e
            if not whole:
                self._records += applied
                self._change_sets += 1

    def latest(self, config: ControllerConfig) -> Controller | None:
        """The controller as the newest saved batch left it (None before the first batch), as a restarted
        sequencer resumes it."""
        files = self._files(sys.maxsize)
        if not files:
            return None
        controller = Controller(config)
        self.load(controller, files[-1][0] + 1)
        return controller

    def save(self, controller: Controller, batch_id: int, touched: set[tuple[str, int]], seen_after: int) -> None:
        """Write batch `batch_id`'s state: what it changed (`touched` partitions, event ids seen after the
        offset `seen_after`), or the whole controller."""
        self._records += len(touched)
        self._change_sets += 1
        whole = (batch_id == 0 or self._records >= len(controller.partitions)
                 or self._change_sets > self.max_changes)
        data = controller.snapshot() if whole else controller.snapshot(touched, seen_after)
        for kind in ("whole", "changes"):  # an earlier attempt of this batch
            self.storage.delete(self.directory / f"{batch_id}.{kind}.json")
        name = f"{batch_id}.{'whole' if whole else 'changes'}.json"
        self.storage.write(self.directory / name, data, before_publish=lambda: crash_point("sequencer-state-write"))
        if not whole:
            return
        self._records = self._change_sets = 0
        # Keep the previous whole snapshot and its change sets: a re-run of this batch restores from them.
        older = [n for n, w, _ in self._files(batch_id) if w]
        if older:
            for _, _, path in self._files(older[-1]):
                self.storage.delete(path)


@dataclass
class _BatchRows:
    """What one micro-batch writes, table by table, and the partitions whose records it changed."""

    bronze: list[dict[str, Any]] = field(default_factory=list)
    quarantine: list[dict[str, Any]] = field(default_factory=list)
    commands: list[dict[str, Any]] = field(default_factory=list)
    observed: list[dict[str, Any]] = field(default_factory=list)
    # Each event's requests as the controller sent them, with what request_rows needs (event id, type, offset,
    # controller epoch): turned into rows only after silver is committed, off the path to the decisions.
    requests: list[tuple[list[Request], str, str, int, int]] = field(default_factory=list)
    touched: set[tuple[str, int]] = field(default_factory=set)
    processed_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def request_rows(self) -> list[dict[str, Any]]:
        """The requests table's rows of the batch, in log order."""
        return [{**to_row(r), "processed_at": self.processed_at}
                for sent in self.requests for r in request_rows(*sent)]

    def counts(self) -> dict[str, int]:
        """The batch's records for the progress line. Behind `isrflow bridge` the topic holds the controller's
        decisions (ObservedDecision) beside the events: counted apart, they are no input to the controller. A
        malformed record is an event in, and quarantined."""
        return {"events": len(self.bronze) + len(self.quarantine), "observed": len(self.observed),
                "quarantined": len(self.quarantine), "commands": len(self.commands)}


class Sequencer:
    """foreachBatch of the sequencer query. Runs on the driver: the cluster view is one small object and
    each event must see the cluster as every earlier event left it."""

    def __init__(self, spark: Any, lake: Lake, state_dir: Location, config: ControllerConfig, source: str,
                 counts: BatchCounts | None = None, progress: Any | None = None,
                 metrics: ShadowMetrics | None = None, requests: bool = True) -> None:
        self.progress = progress
        self.requests = requests  # under the zk rules: the requests the controller sends (`run --no-requests`)
        self.metrics = metrics
        self.spark = spark
        self.lake = lake
        self.state = SequencerState(state_dir, storage=Storage(spark))
        self.config = config
        self.source = source
        self.counts = counts
        self._controller: Controller | None = None
        self._controller_batch = -1  # the batch id whose result `_controller` holds
        self._last_offset = -1  # the newest offset `_controller` has seen

    def _controller_before(self, batch_id: int) -> Controller:
        """The controller as the previous batch left it: in memory, or restored from the state files (a
        batch re-run after a crash restarts from the same state)."""
        if self._controller is not None and self._controller_batch == batch_id - 1:
            return self._controller
        controller = Controller(self.config)
        self.state.load(controller, batch_id)
        self._last_offset = max(controller.cluster.seen_event_ids.values(), default=-1)
        return controller

    def _sequence(self, controller: Controller, rows: list[Any], batch_id: int, out: _BatchRows) -> None:
        """The batch's events in log order through the controller: bronze, quarantine, silver, observed and
        requests (`_BatchRows.request_rows`)."""
        for row in rows:
            offset, raw = int(row["source_offset"]), row["value"]
            event = parse_record(None if raw is None else bytes(raw))
            if isinstance(event, Malformed):
                out.quarantine.append({"source": self.source, "source_offset": offset,
                                       "raw": None if raw is None else bytes(raw), "error": event.reason,
                                       "batch_id": batch_id, "quarantined_at": None})
                continue
            if isinstance(event, ObservedDecision):  # the controller's own decision: compared, never applied
                out.observed.append({**event.to_row(), "batch_id": batch_id})
                continue
            out.bronze.append({"source_offset": offset, "event_id": event.event_id, "type": event.type,
                               "controller_epoch": event.controller_epoch, "ts": event.ts, "json": event.to_json(),
                               "batch_id": batch_id})
            # handle_event: the requests too under the zk rules (none, and nothing recorded, under the others).
            handled = (controller.handle_event(event, offset) if self.requests
                       else HandledEvent(controller.handle(event, offset), []))
            for h in handled.handled:
                c = h.command
                out.commands.append({"topic": c.topic, "partition": c.partition, "source_offset": c.source_offset,
                                     "step": c.step, "action": str(c.action), "command": pack_command(c)})
                if c.partition is not None:
                    out.touched.add((c.topic, c.partition))
            if handled.requests:
                out.requests.append((handled.requests, event.event_id, event.type, offset,
                                     controller.cluster.controller_epoch))

    def __call__(self, batch_df: Any, batch_id: int) -> None:
        clock = Stopwatch()
        # Sorted here, not with orderBy: that would plan a shuffle over spark.sql.shuffle.partitions (run's state
        # partitions, 200 by default) and a sampling job in every micro-batch, the first one's cold.
        rows = sorted(batch_df.select("source_offset", "value").collect(), key=operator.itemgetter(0))
        clock.lap("read")
        controller = self._controller_before(batch_id)
        clock.lap("restore")
        out = _BatchRows()
        with young_collection_only():
            self._sequence(controller, rows, batch_id, out)
        clock.lap("core")
        spark, lake = self.spark, self.lake
        # Silver first, alone: its commit wakes the partition query, which decides. The observed rows before the
        # commands: the partition query reads the controller's decisions of the events it decides from there.
        append_idempotent(spark, out.observed, OBSERVED, lake.observed, "isrflow-observed", batch_id)
        append_idempotent(spark, out.commands, COMMAND, lake.commands, "isrflow-commands", batch_id)
        clock.lap("silver")
        # Then the rest, while the partition query runs: different tables and a state file, each idempotent per
        # batch id, written at once. A batch re-run after a crash restarts from the same saved state, so it yields
        # the same rows (requests included) for each table whose commit had not been made.
        clock.together({
            "bronze": lambda: append_idempotent(spark, out.bronze, EVENT, lake.bronze, "isrflow-bronze", batch_id),
            "quarantine": lambda: append_idempotent(spark, out.quarantine, QUARANTINE, lake.quarantine,
                                                    "isrflow-quarantine", batch_id),
            "requests": lambda: append_idempotent(spark, out.request_rows(), REQUESTS, lake.requests,
                                                  "isrflow-requests", batch_id),
            "state": lambda: self.state.save(controller, batch_id, out.touched, self._last_offset),
        })
        crash_point("sequencer-committed")
        self._controller, self._controller_batch = controller, batch_id
        if rows:
            self._last_offset = max(self._last_offset, int(rows[-1]["source_offset"]))
        if self.counts is not None:
            self.counts.sequencer[batch_id] = {**out.counts(), "steps": clock.laps, "within": clock.within}
        if self.progress is not None:
            self.progress.advance(len(rows))
        if self.metrics is not None:
            self.metrics.observe_sequenced(len(out.quarantine), controller.cluster.topic_configs)


def start_sequencer(spark: Any, events: Any, lake: Lake, checkpoints: Checkpoints, config: ControllerConfig,
                    source: str, trigger: dict[str, Any], counts: BatchCounts | None = None,
                    progress: Any | None = None, metrics: ShadowMetrics | None = None, requests: bool = True) -> Any:
    """`events`: a streaming DataFrame with columns source_offset (long) and value (binary)."""
    sequencer = Sequencer(spark, lake, checkpoints.sequencer_state, config, source, counts, progress, metrics,
                          requests)
    return (events.writeStream.queryName("isrflow-sequencer").foreachBatch(sequencer)
            .option("checkpointLocation", str(checkpoints.sequencer)).trigger(**trigger).start())
