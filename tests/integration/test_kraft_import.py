"""Importing metadata logs that Kafka's own classes wrote (MetadataRecordSerde, MemoryRecords, FileRecords via
kraftlog/WriteMetadataLog.java): aborted transactions, several segments, record types isrflow does not model,
tagged fields at their defaults. Decoded by Kafka's DumpLogSegments, as for a real cluster."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from streaming.engine.connectors import java_executable
from streaming.errors import UsageError
from streaming.infra.jars import kafka_broker_classpath
from streaming.io.eventlog import Bounds
from streaming.kraft.convert import convert
from streaming.kraft.metadatalog import read_metadata_log

WRITER = Path(__file__).parent / "kraftlog" / "WriteMetadataLog.java"
T1, T2 = "AAu-oSgDTO63js0uIRkgdQ", "5fRr8uBcTpmuvpLw03GAoA"


def compile_writer(classes: Path) -> Path:
    javac = str(Path(java_executable()).with_name("javac"))
    subprocess.run([javac, "-d", str(classes), "-cp", kafka_broker_classpath(), str(WRITER)], check=True)
    return classes


@pytest.fixture(scope="module")
def writer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_writer(tmp_path_factory.mktemp("writer"))


def write_segment(writer: Path, path: Path, records: list[dict[str, Any]], base_offset: int = 0) -> Path:
    spec = path.with_suffix(".jsonl")
    spec.write_text("".join(json.dumps(r) + "\n" for r in records))
    done = subprocess.run([java_executable(), "-cp", f"{writer}:{kafka_broker_classpath()}", "WriteMetadataLog",
                           str(spec), str(path), str(base_offset)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    spec.unlink()
    return path


def rec(batch: int, type_: str, data: dict[str, Any], version: int = 0) -> dict[str, Any]:
    return {"batch": batch, "type": type_, "version": version, "data": data}


def topic(batch: int, name: str, topic_id: str, replicas: list[int]) -> list[dict[str, Any]]:
    return [rec(batch, "TOPIC_RECORD", {"name": name, "topicId": topic_id}),
            rec(batch, "PARTITION_RECORD", {"partitionId": 0, "topicId": topic_id, "replicas": replicas,
                                            "isr": replicas, "removingReplicas": [], "addingReplicas": [],
                                            "leader": replicas[0], "leaderEpoch": 0, "partitionEpoch": 0},
                version=0)]


def test_records_of_an_aborted_transaction_are_dropped(writer: Path, tmp_path: Path) -> None:
    segment = write_segment(writer, tmp_path / "00000000000000000000.log", [
        rec(0, "BEGIN_TRANSACTION_RECORD", {"name": "doomed"}),
        *topic(1, "aborted", T1, [1, 2]),
        rec(2, "ABORT_TRANSACTION_RECORD", {}),
        rec(3, "BEGIN_TRANSACTION_RECORD", {"name": "kept"}),
        *topic(4, "committed", T2, [2, 1]),
        rec(5, "END_TRANSACTION_RECORD", {}),
    ])
    log = read_metadata_log(segment)
    assert log.aborted == 2
    assert [r.type for r in log.records] == ["TOPIC_RECORD", "PARTITION_RECORD"]
    events = convert(log.records).events
    assert [(e["type"], e["topic"]) for e in events] == [("CreateTopic", "committed")]


def test_several_segments_unknown_types_and_tagged_defaults(writer: Path, tmp_path: Path) -> None:
    first = [*topic(0, "t", T1, [1, 2]),
             rec(1, "PRODUCER_IDS_RECORD", {"brokerId": 1, "brokerEpoch": 5, "nextProducerId": 1000}),
             rec(2, "NO_OP_RECORD", {})]
    write_segment(writer, tmp_path / "00000000000000000000.log", first)
    # The leader's AlterPartition: no `leader`, no `leaderRecoveryState` (tagged fields at their defaults).
    second = [rec(0, "PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": T1, "isr": [1]}),
              rec(1, "NO_OP_RECORD", {})]
    write_segment(writer, tmp_path / f"{len(first):020d}.log", second, base_offset=len(first))
    log = read_metadata_log(tmp_path)
    assert [p.name for p in log.files] == ["00000000000000000000.log", "00000000000000000004.log"]
    assert [r.offset for r in log.records] == list(range(len(first) + len(second)))
    result = convert(log.records)
    assert result.unknown == {"PRODUCER_IDS_RECORD": 1, "NO_OP_RECORD": 2}
    isr_change = result.events[-1]
    assert (isr_change["type"], isr_change["broker_id"], isr_change["isr"]) == ("IsrChange", 1, [1])
    last = result.observed[-1]
    assert (last["leader"], last["leader_epoch"], last["partition_epoch"], last["leader_recovery_state"]) == (
        1, 0, 1, "RECOVERED")


def test_a_window_of_a_directory_is_seeded_at_its_start_and_converts_only_its_records(writer: Path,
                                                                                      tmp_path: Path) -> None:
    change = {"partitionId": 0, "topicId": T1}
    write_segment(writer, tmp_path / "00000000000000000000.log", [
        *topic(0, "t", T1, [1, 2]),                                             # offsets 0, 1
        rec(1, "PARTITION_CHANGE_RECORD", {**change, "isr": [1]}),              # 2: the leader shrinks the ISR
        rec(2, "PARTITION_CHANGE_RECORD", {**change, "isr": [1, 2]}),           # 3: and expands it
        rec(3, "PARTITION_CHANGE_RECORD", {**change, "leader": 2}),             # 4: a preferred election
    ])
    # The writer stamps record i with 1_700_000_000_000 + i ms: offset 3 was written at ...003.
    for bounds in (Bounds(from_offset=3, to_offset=4), Bounds(from_time="2023-11-14T22:13:20.003Z",
                                                              to_time="2023-11-14T22:13:20.004Z")):
        log = read_metadata_log(tmp_path, bounds=bounds)
        assert (log.window, log.snapshot, log.origin) == ((3, 4), None, "offset 0")
        result = convert(log.records, log.window[0])
        # The creation and the shrink before the window are state: one seed, as the partition stood at offset 2.
        assert [(e["type"], e["event_id"]) for e in result.events] == [
            ("PartitionSnapshot", "kraft-2-snapshot-0"), ("IsrChange", "kraft-3")]
        assert (result.events[0]["isr"], result.events[0]["partition_epoch"]) == ([1], 1)
        assert [o["source_offset"] for o in result.observed] == [3]


def test_a_directory_whose_first_segment_no_snapshot_reaches_is_refused(writer: Path, tmp_path: Path) -> None:
    write_segment(writer, tmp_path / f"{5:020d}.log", topic(0, "t", T1, [1]), base_offset=5)
    with pytest.raises(UsageError, match="no snapshot reaches it"):
        read_metadata_log(tmp_path)
