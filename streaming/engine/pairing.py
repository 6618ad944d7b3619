"""A checkpoint belongs to one set of tables. At the first start `run` writes the same pipeline id into a
marker in the checkpoint root and one in the audit table's folder; every later start compares them.

Resuming with the wrong pair would go wrong silently: a checkpoint resumes mid-log, so another (or an
empty) audit table would miss the history before it; and a new checkpoint on tables that have data
restarts its batch ids at 0, which the tables' idempotent writes (txnAppId + txnVersion) would skip
without a word, while the sink topic would get every decision again. Both are refused with a UsageError
that says what to do.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from streaming.errors import UsageError
from streaming.io.layout import Checkpoints, Lake
from streaming.io.storage import Location, Storage

MARKER = "_isrflow_pipeline.json"  # in the audit table's folder: Delta ignores files starting with '_'
CHECKPOINT_MARKER = "pipeline.json"


def _read(storage: Storage, path: Location) -> dict[str, Any] | None:
    try:
        marker = json.loads(storage.read_text(path))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path} is unreadable ({exc}): restore it from a backup") from exc
    if not isinstance(marker, dict) or not isinstance(marker.get("pipeline_id"), str):
        raise UsageError(f"{path} is not an isrflow pipeline marker: restore it from a backup")
    return marker


def _write(storage: Storage, path: Location, marker: dict[str, Any]) -> None:
    storage.write(path, (json.dumps(marker, indent=1) + "\n").encode())


def _has_progress(storage: Storage, query: Location) -> bool:
    return any(name[:1].isdigit() for name in storage.names(query / "offsets"))


def clear_cut_first_write(checkpoints: Checkpoints, storage: Storage | None = None) -> list[Location]:
    """Remove what a query killed inside its first offsets write left: Spark writes `offsets/0` as a hidden
    temp file and renames it, and from 4.1 a query with no batch refuses to start while `offsets` or
    `commits` holds any file (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY), so the run could never start
    again. Only a query with no batch file is touched: what it removes was never a batch. The removed files."""
    storage = storage or Storage()
    removed: list[Location] = []
    for query in (checkpoints.sequencer, checkpoints.partitions):
        if _has_progress(storage, query):
            continue
        for log in (query / "offsets", query / "commits"):
            for name in storage.names(log):
                if name.startswith("."):  # `.0.<uuid>.tmp` and its `..0.<uuid>.tmp.crc`
                    storage.delete(log / name)
                    removed.append(log / name)
    return removed


def _has_data(storage: Storage, *tables: Location) -> bool:
    return any(storage.exists(table / "_delta_log") for table in tables)


def check_pairing(lake: Lake, checkpoints: Checkpoints, storage: Storage | None = None) -> str:
    """The pipeline id shared by this checkpoint and these tables (paired on the first start); a
    UsageError naming the fix when they do not belong together. `storage` reaches URIs (default: local)."""
    storage = storage or Storage()
    lake_marker = _read(storage, lake.audit / MARKER)
    ckpt_marker = _read(storage, checkpoints.root / CHECKPOINT_MARKER)
    sequencer_progress = _has_progress(storage, checkpoints.sequencer)
    partitions_progress = _has_progress(storage, checkpoints.partitions)
    # `commands` is left out: every start creates it empty before the first batch.
    sequencer_data = _has_data(storage, lake.bronze, lake.quarantine, lake.requests)
    partitions_data = _has_data(storage, lake.audit, lake.decisions)
    progress, data = sequencer_progress or partitions_progress, sequencer_data or partitions_data
    checkpoint_lost = (sequencer_data and not sequencer_progress) or (partitions_data and not partitions_progress)

    def mismatch(detail: str) -> UsageError:
        return UsageError(f"checkpoint {checkpoints.root} and audit table {lake.audit} do not belong together "
                          f"({detail}): pass the --checkpoint-dir and --audit-table of one pipeline")

    tables = ", ".join(str(t) for t in (lake.audit, lake.bronze, lake.commands, lake.decisions, lake.quarantine,
                                        lake.requests))
    deleted = UsageError(
        f"audit table {lake.audit} has data but checkpoint {checkpoints.root} is missing or incomplete (deleted?): "
        f"a new checkpoint would process the events topic again into the same tables. Restore the checkpoint "
        f"directory, or move the tables ({tables}) "
        f"aside to rebuild them from the start (docs/reliability.md)")
    history = UsageError(
        f"checkpoint {checkpoints.root} has progress but audit table {lake.audit} has no data: the run would "
        f"resume mid-log and the tables would miss the history before it. Pass the audit table this checkpoint "
        f"was used with{' (' + str(ckpt_marker.get('audit_table')) + ')' if ckpt_marker else ''}, or a new "
        f"--checkpoint-dir to process the events topic from the start")

    if lake_marker and ckpt_marker:
        if lake_marker["pipeline_id"] != ckpt_marker["pipeline_id"]:
            raise mismatch(f"the checkpoint was paired with {ckpt_marker.get('audit_table')}, the audit table "
                           f"with {lake_marker.get('checkpoint_dir')}")
        if checkpoint_lost:
            raise deleted
        return str(lake_marker["pipeline_id"])
    if lake_marker:
        if progress:
            raise mismatch(f"the audit table was paired with {lake_marker.get('checkpoint_dir')}")
        if data:
            raise deleted
    elif ckpt_marker:
        if data:
            raise mismatch(f"the checkpoint was paired with {ckpt_marker.get('audit_table')}")
        if progress:
            raise history
    elif checkpoint_lost:
        raise deleted
    elif progress and not data:
        raise history
    # A first start, one that crashed before both markers were written, or a pipeline older than the
    # markers (progress and data, nothing to compare): pair them now.
    pipeline_id = str((lake_marker or ckpt_marker or {}).get("pipeline_id") or uuid.uuid4())
    _write(storage, lake.audit / MARKER, {"pipeline_id": pipeline_id, "checkpoint_dir": str(checkpoints.root)})
    _write(storage, checkpoints.root / CHECKPOINT_MARKER, {"pipeline_id": pipeline_id, "audit_table": str(lake.audit)})
    return pipeline_id
