"""`isrflow explain`: one partition's timeline from a replay output folder (local engine, no Spark)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from statemachine.controller import ControllerConfig
from streaming.analysis.explain import PartitionNotFound, explain
from streaming.cli import main
from streaming.engine.local import run_local, write_outputs
from streaming.io.eventlog import read_event_log

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("explain")
    out = {}
    for name in ("double-failure-unclean", "reassignment", "zombie-controller"):
        target = root / name
        write_outputs(run_local(read_event_log(ROOT / "examples" / f"{name}.jsonl"), ControllerConfig()), target)
        out[name] = target
    return out


def _entries(text: str) -> list[str]:
    """The timeline's entries (one per event row), each a block starting with 'offset N'."""
    return [block for block in text.split("\n\n") if block.startswith("offset ")]


def _entry(text: str, offset: int) -> str:
    found = [e for e in _entries(text) if re.match(rf"offset {offset}\s", e)]
    assert found, f"no entry for offset {offset}"
    return "\n\n".join(found)


def test_unclean_partition_timeline(outputs: dict[str, Path]) -> None:
    text = explain(outputs["double-failure-unclean"], "orders", 1)
    head = text.splitlines()
    assert head[0].startswith("orders-1: 8 events, offsets 6 to 22 (2026-05-14 09:30:03.000 to 2026-05-14 "
                              "09:55:53.000 UTC); 3 elections, 0 rejected, 7 decisions")
    assert head[1] == ("now: OnlinePartition, leader 4, ISR [4, 3], leader epoch 3, partition epoch 6, "
                       "replicas [2, 3, 4], recovery RECOVERED")
    assert head[2].startswith("WARNING: unclean election at offset 15")
    offsets = [int(e.split()[1]) for e in _entries(text)]
    assert offsets == sorted(offsets) == [6, 8, 13, 14, 15, 16, 20, 22]

    failure = _entry(text, 14)
    assert "BrokerChange  ev-000014  ACCEPTED  (broker 3 failed)" in failure
    assert "state      OnlinePartition -> OfflinePartition" in failure
    assert "leader     3 -> -1  (no leader: offline)" in failure

    unclean = _entry(text, 15)
    assert "ElectLeaders  ev-000015  ACCEPTED  by User:ops" in unclean  # the admin command's principal
    assert "state      OfflinePartition -> OnlinePartition" in unclean
    assert "leader     -1 -> 4  elected by OFFLINE_UNCLEAN" in unclean
    assert "ISR        [3] -> [4]" in unclean
    assert "epochs     leader 2 -> 3, partition 3 -> 4" in unclean
    assert "recovery   RECOVERED -> RECOVERING" in unclean
    assert ("decision   LeaderAndIsr: leader 4, leader epoch 3, ISR [4], partition epoch 4, replicas [2, 3, 4], "
            "recovery RECOVERING, election OFFLINE_UNCLEAN, to brokers [4]") in unclean

    recovered = _entry(text, 16)  # the unclean leader reports its log recovery done
    assert "IsrChange" in recovered and "recovery RECOVERED" in recovered and "partition 4 -> 5" in recovered
    assert "recovery   RECOVERING -> RECOVERED" in recovered
    assert sum("  recovery   " in e for e in _entries(text)) == 2  # shown only when it changes


def test_rejections_show_error_and_reason(outputs: dict[str, Path]) -> None:
    text = explain(outputs["double-failure-unclean"], "payments", 0)
    entry = _entry(text, 17)
    # The topic-level config change and the partition's refused election, both at offset 17.
    assert "AlterTopicConfig  ev-000017  ACCEPTED  (topic payments)  by User:ops" in entry
    assert "unclean.leader.election.enable=true" in entry
    assert "AlterTopicConfig  ev-000017  REJECTED ELIGIBLE_LEADERS_NOT_AVAILABLE" in entry
    assert "rejected   ELIGIBLE_LEADERS_NOT_AVAILABLE: no live replica in ISR [3]" in entry
    assert "unchanged  OfflinePartition, leader -1, ISR [3]" in entry


def test_zombie_controller_fenced_on_the_partition(outputs: dict[str, Path]) -> None:
    text = explain(outputs["zombie-controller"], "ledger", 2)
    entry = _entry(text, 20)
    assert "IsrChange  ev-000020  REJECTED STALE_CONTROLLER_EPOCH" in entry
    assert "controller epoch 1 is older than the active 2" in entry
    failover = _entry(text, 18)
    assert "(controller failover: controller 2 at epoch 2)" in failover and "no change" in failover


def test_reassignment_decisions_show_adding_and_removing(outputs: dict[str, Path]) -> None:
    text = explain(outputs["reassignment"], "inventory", 0)
    start = _entry(text, 7)
    assert "ReassignPartitions" in start
    assert "replicas [4, 2, 3, 1], adding [4], removing [1]" in start
    assert "replica states  4: NonExistentReplica -> NewReplica" in start
    done = _entry(text, 8)
    assert "leader     1 -> 4  elected by REASSIGN" in done
    assert "reassignment completed: replicas [4, 2, 3]" in done
    assert done.count("decision   LeaderAndIsr") == 3  # ISR expanded, leader moved, old replica out of the ISR
    assert "1: OnlineReplica -> NonExistentReplica" in done


def test_each_event_shows_the_requests_naming_the_partition_batch_by_batch(outputs: dict[str, Path]) -> None:
    text = explain(outputs["reassignment"], "inventory", 0)
    # Phase A: the new replica set to the whole replica set, then broker 4 as a new replica in a batch of its own.
    assert _entry(text, 7).splitlines()[-2:] == [
        "  requests   batch 0: LeaderAndIsr to [1, 2, 3, 4], UpdateMetadata to [1, 2, 3, 4, 5]",
        "  requests   batch 1: LeaderAndIsr to [4], UpdateMetadata to [1, 2, 3, 4, 5]"]
    # The ISR change completes it: the removed replica 1 is stopped, then deleted.
    done = _entry(text, 8)
    assert "StopReplica to [1]" in done and "  requests   batch 3: StopReplica (delete) to [1]" in done


def test_audit_table_path_finds_the_decisions_beside_it(outputs: dict[str, Path]) -> None:
    out = outputs["double-failure-unclean"]
    assert explain(out / "audit", "orders", 1) == explain(out, "orders", 1)


def test_without_decisions_the_timeline_still_reads(outputs: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    shutil.copytree(outputs["double-failure-unclean"] / "audit", tmp_path / "audit")
    text = explain(tmp_path, "orders", 1)
    assert "no decisions file found" in text.splitlines()[0]
    # The replica set and the recovery state are the audit's own.
    assert text.splitlines()[1].endswith("replicas [2, 3, 4], recovery RECOVERED")
    assert "elected by OFFLINE_UNCLEAN" in text and "decision " not in text


def test_partition_that_never_appears(outputs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    out = outputs["double-failure-unclean"]
    with pytest.raises(PartitionNotFound, match="orders-99 never appears"):
        explain(out, "orders", 99)
    assert main(["explain", str(out), "--topic", "orders", "--partition", "99"]) == 2
    err = capsys.readouterr().err
    assert "isrflow explain: partition orders-99 never appears" in err and "topic orders has partitions 0-9" in err
    assert main(["explain", str(out), "--topic", "nope", "--partition", "0"]) == 2
    assert "topics seen: orders, payments" in capsys.readouterr().err
    assert main(["explain", str(out / "missing"), "--topic", "orders", "--partition", "0"]) == 2
    assert "no such replay output folder" in capsys.readouterr().err


def test_command_prints_the_timeline(outputs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    out = outputs["double-failure-unclean"]
    assert main(["explain", str(out), "--topic", "orders", "--partition", "1"]) == 0
    assert capsys.readouterr().out == explain(out, "orders", 1)
