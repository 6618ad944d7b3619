"""Wrong or damaged state at start: a checkpoint paired with another audit table, a deleted checkpoint
while the tables remain. `isrflow run` refuses with a message naming the fix (exit 2) before it starts
Spark, and writes nothing."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from streaming.engine.pairing import CHECKPOINT_MARKER, MARKER, check_pairing, clear_cut_first_write
from streaming.errors import UsageError
from streaming.io.layout import Checkpoints, Lake

pytestmark = [pytest.mark.faults]


def pipeline(root: Path, name: str) -> tuple[Lake, Checkpoints]:
    return Lake.beside(root / name / "lake" / "audit"), Checkpoints(root / name / "ckpt")


def progress(lake: Lake, checkpoints: Checkpoints) -> None:
    """What a few micro-batches leave behind: offsets in both checkpoints, Delta logs in the tables."""
    for query in (checkpoints.sequencer, checkpoints.partitions):
        (query / "offsets").mkdir(parents=True, exist_ok=True)
        (query / "offsets" / "0").write_text("v1\n")
    for table in (lake.audit, lake.bronze, lake.decisions):
        (table / "_delta_log").mkdir(parents=True, exist_ok=True)


def test_first_start_pairs_and_later_starts_accept(tmp_path: Path) -> None:
    lake, checkpoints = pipeline(tmp_path, "a")
    pipeline_id = check_pairing(lake, checkpoints)
    assert (lake.audit / MARKER).exists() and (checkpoints.root / CHECKPOINT_MARKER).exists()
    progress(lake, checkpoints)
    assert check_pairing(lake, checkpoints) == pipeline_id


def test_a_checkpoint_paired_with_another_audit_table_is_refused(tmp_path: Path) -> None:
    lake_a, ckpt_a = pipeline(tmp_path, "a")
    lake_b, ckpt_b = pipeline(tmp_path, "b")
    for lake, ckpt in ((lake_a, ckpt_a), (lake_b, ckpt_b)):
        check_pairing(lake, ckpt)
        progress(lake, ckpt)
    with pytest.raises(UsageError, match=r"do not belong together.*pass the --checkpoint-dir and --audit-table"):
        check_pairing(lake_b, ckpt_a)
    # A new, empty audit table with a checkpoint that has progress: it would miss the history before.
    with pytest.raises(UsageError, match=r"would resume mid-log.*or a new --checkpoint-dir"):
        check_pairing(Lake.beside(tmp_path / "new" / "audit"), ckpt_a)
    assert not (tmp_path / "new" / "audit").exists()


def test_a_deleted_checkpoint_with_the_tables_left_is_refused(tmp_path: Path) -> None:
    lake, checkpoints = pipeline(tmp_path, "a")
    check_pairing(lake, checkpoints)
    progress(lake, checkpoints)
    shutil.rmtree(checkpoints.root)
    # Every table the queries write idempotently per batch id is to move aside, the zk rules' requests too.
    with pytest.raises(UsageError, match=r"missing or incomplete \(deleted\?\).*Restore the checkpoint.*"
                                         + re.escape(f"{lake.quarantine}, {lake.requests}) aside")):
        check_pairing(lake, checkpoints)


def test_one_query_checkpoint_deleted_is_refused(tmp_path: Path) -> None:
    """The partition query's folder alone gone: its batch ids would restart at 0 and the audit table's
    idempotent writes would skip them without a word."""
    lake, checkpoints = pipeline(tmp_path, "a")
    check_pairing(lake, checkpoints)
    progress(lake, checkpoints)
    shutil.rmtree(checkpoints.partitions)
    with pytest.raises(UsageError, match="missing or incomplete"):
        check_pairing(lake, checkpoints)


def cut_first_write(query: Path) -> list[Path]:
    """What a kill inside Spark's first offsets write leaves: the hidden temp file and its checksum."""
    (query / "offsets").mkdir(parents=True, exist_ok=True)
    files = [query / "offsets" / ".0.bda0ab31.tmp", query / "offsets" / "..0.bda0ab31.tmp.crc"]
    for f in files:
        f.write_text("v1\n")
    return files


def test_a_first_offsets_write_cut_by_a_kill_is_cleared_and_nothing_else(tmp_path: Path) -> None:
    """Crash-restart trial (2026-11-27): the partition query killed inside its first offsets write never
    started again (Spark 4.1: STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY). Its leftovers go; a query with a
    batch keeps every file, temp files included (Spark's own to resolve)."""
    lake, checkpoints = pipeline(tmp_path, "a")
    progress(lake, checkpoints)
    (checkpoints.partitions / "offsets" / "0").unlink()
    cut = cut_first_write(checkpoints.partitions)
    kept = cut_first_write(checkpoints.sequencer)
    assert sorted(clear_cut_first_write(checkpoints)) == sorted(cut)
    assert not any(f.exists() for f in cut)
    assert all(f.exists() for f in kept) and (checkpoints.sequencer / "offsets" / "0").exists()
    assert clear_cut_first_write(checkpoints) == []


def test_a_damaged_marker_is_named(tmp_path: Path) -> None:
    lake, checkpoints = pipeline(tmp_path, "a")
    check_pairing(lake, checkpoints)
    (checkpoints.root / CHECKPOINT_MARKER).write_text("{not json")
    with pytest.raises(UsageError, match=r"unreadable.*restore it"):
        check_pairing(lake, checkpoints)


def test_run_refuses_before_starting_spark(kafka_broker: Any, tmp_path: Path, capsys: Any) -> None:
    from streaming.cli import main
    from streaming.infra.localkafka import create_topic

    create_topic(kafka_broker.bootstrap_servers, "damaged-events", 1)
    lake, checkpoints = pipeline(tmp_path, "a")
    check_pairing(lake, checkpoints)
    progress(lake, checkpoints)
    shutil.rmtree(checkpoints.root)
    code = main(["run", "--bootstrap-servers", kafka_broker.bootstrap_servers, "--events-topic", "damaged-events",
                 "--decisions-topic", "d", "--audit-table", str(lake.audit), "--checkpoint-dir",
                 str(checkpoints.root)])
    assert code == 2
    err = capsys.readouterr().err
    assert "isrflow run: audit table" in err and "Restore the checkpoint directory" in err
    assert not checkpoints.root.exists()
