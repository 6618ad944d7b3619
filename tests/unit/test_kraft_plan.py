"""Which files a metadata directory is read from, and why (file names only: planning reads no record), and how
a window's bounds become offsets."""

from __future__ import annotations

from pathlib import Path

import pytest

from streaming.errors import UsageError
from streaming.io.eventlog import Bounds
from streaming.kraft.metadatalog import MetadataRecord, Transactions, plan, resolve_window


def directory(tmp_path: Path, segments: list[int], snapshots: list[int]) -> Path:
    for base in segments:
        (tmp_path / f"{base:020d}.log").touch()
        (tmp_path / f"{base:020d}.index").touch()  # Kafka's other files are not read
    for end in snapshots:
        (tmp_path / f"{end:020d}-{3:010d}.checkpoint").touch()
    (tmp_path / "leader-epoch-checkpoint").touch()
    return tmp_path


def names(paths: list[Path]) -> list[int]:
    return [int(p.name[:20]) for p in paths]


def test_a_directory_holding_segment_0_is_read_from_0_whatever_its_snapshots(tmp_path: Path) -> None:
    found = plan(directory(tmp_path, [0, 100, 200], [90, 150, 240]))
    assert (found.snapshot, names(found.segments), found.start) == (None, [0, 100, 200], 0)
    assert found.reason == "offset 0: the first segment 00000000000000000000.log starts there"


def test_early_segments_deleted_start_at_the_oldest_snapshot_that_reaches_the_first_segment(tmp_path: Path) -> None:
    # Snapshot 50 ends before the first retained segment (100): the records 50..99 are gone, it cannot be the start.
    found = plan(directory(tmp_path, [100, 200, 300], [50, 120, 250]))
    assert found.snapshot is not None and found.snapshot.name == f"{120:020d}-{3:010d}.checkpoint"
    assert (names(found.segments), found.start) == ([100, 200, 300], 120)
    assert found.reason == (f"snapshot {found.snapshot.name}: the oldest one that reaches the first retained segment "
                            f"{100:020d}.log")
    # A snapshot that ends exactly where the first segment begins reaches it.
    (tmp_path / "exact").mkdir()
    found = plan(directory(tmp_path / "exact", [200, 300], [200]))
    assert (names(found.segments), found.start) == ([200, 300], 200)


def test_no_snapshot_reaching_the_first_segment_is_a_lost_state(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no snapshot reaches it"):
        plan(directory(tmp_path, [100, 200], [50]))


def test_snapshots_alone_start_at_the_newest(tmp_path: Path) -> None:
    found = plan(directory(tmp_path, [], [50, 120]))
    assert (found.snapshot.name[:20] if found.snapshot else None, found.segments, found.start) == (
        f"{120:020d}", [], 120)


def test_a_window_starts_at_the_newest_snapshot_at_or_before_it(tmp_path: Path) -> None:
    logs = directory(tmp_path, [0, 100, 200], [90, 150, 240])
    found = plan(logs, 180)
    assert (names(found.segments), found.start) == ([100, 200], 150)
    assert found.reason == f"snapshot {150:020d}-{3:010d}.checkpoint, the newest at or before offset 180"
    assert plan(logs, 150).start == 150
    # Before the first snapshot: from offset 0, the segments start there.
    assert (plan(logs, 60).snapshot, plan(logs, 60).start, plan(logs, 60).reason) == (None, 0, "offset 0")


def test_a_window_before_the_oldest_rebuildable_state_is_refused(tmp_path: Path) -> None:
    logs = directory(tmp_path, [100, 200], [50, 120, 250])
    assert plan(logs, 130).start == 120
    with pytest.raises(UsageError, match=r"offset 110 is before the oldest state .* offset 120"):
        plan(logs, 110)


def record(offset: int, batch: int, ms: int) -> MetadataRecord:
    return MetadataRecord(offset, batch, ms, 1, "NO_OP_RECORD", 0, {})


# Batches [10, 11, 12] at t=1000, [13] at 2000, [14, 15] at 3000.
RECORDS = [record(10, 10, 1000), record(11, 10, 1000), record(12, 10, 1000), record(13, 13, 2000),
           record(14, 14, 3000), record(15, 14, 3000)]


def test_a_window_holds_the_whole_batches_that_begin_inside_it() -> None:
    assert resolve_window(RECORDS, 10, Bounds()) == (10, 16)
    assert resolve_window(RECORDS, 10, Bounds(from_offset=13, to_offset=14)) == (13, 14)
    # An offset inside a batch: the batch began before the window, so the window starts after it.
    assert resolve_window(RECORDS, 10, Bounds(from_offset=11, to_offset=15)) == (13, 16)
    assert resolve_window(RECORDS, 10, Bounds(from_offset=2)) == (10, 16)  # no earlier history than its start
    assert resolve_window(RECORDS, 10, Bounds(from_offset=40)) == (40, 40)
    assert resolve_window(RECORDS, 10, Bounds(to_offset=99)) == (10, 16)  # no further than the log's end


def test_times_select_batches_by_their_create_time() -> None:
    iso = "1970-01-01T00:00:0{}Z".format
    assert resolve_window(RECORDS, 10, Bounds(from_time=iso("1.5"), to_time=iso(3))) == (13, 14)
    assert resolve_window(RECORDS, 10, Bounds(from_time=iso(2))) == (13, 16)
    assert resolve_window(RECORDS, 10, Bounds(to_time=iso(9))) == (10, 16)
    assert resolve_window(RECORDS, 10, Bounds(from_time=iso(9))) == (16, 16)


def test_an_open_transaction_waits_for_its_end_across_calls() -> None:
    def record(offset: int, type_: str) -> MetadataRecord:
        return MetadataRecord(offset, offset, 0, 1, type_, 0, {})

    transactions = Transactions()
    assert [r.offset for r in transactions.committed([record(0, "TOPIC_RECORD"),
                                                      record(1, "BEGIN_TRANSACTION_RECORD"),
                                                      record(2, "TOPIC_RECORD")])] == [0]
    assert [r.offset for r in transactions.committed([record(3, "PARTITION_RECORD"),
                                                      record(4, "END_TRANSACTION_RECORD")])] == [2, 3]
    transactions.committed([record(5, "BEGIN_TRANSACTION_RECORD"), record(6, "TOPIC_RECORD")])
    assert transactions.committed([record(7, "ABORT_TRANSACTION_RECORD"), record(8, "TOPIC_RECORD")]) == \
        [record(8, "TOPIC_RECORD")]
    assert transactions.aborted == 1 and transactions.pending is None
