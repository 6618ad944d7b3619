"""Following a live ZooKeeper server's files (streaming/zookeeper/follow.py): a real server's version-2 directory
(tests/integration/zklog) copied in stages, as a server writes it (log files cut at any byte, a new log after each
snapshot), polled between stages; what the polls hand out, in order, is what a conversion of the whole history
gives, and a follower resumed after any published zxid hands out exactly the rest."""

from __future__ import annotations

import itertools
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from statemachine.features import IBP_2_7_IV2, ZOOKEEPER_ERA_PROTOCOL
from streaming.zookeeper.convert import convert, event_zxid
from streaming.zookeeper.files import LOG_HEADER_BYTES, decode_txn, read_zk_history
from streaming.zookeeper.follow import SETTLE_MS, TransactionsLost, ZkFollower
from streaming.zookeeper.release import read_release, with_protocol

LOG = Path(__file__).parent / "zklog" / "zookeeper-3.9-ibp-default" / "version-2"


def whole() -> tuple[list[dict], list[dict]]:
    result = convert(read_zk_history(LOG))
    return result.events, result.observed


def copy_in_stages(target: Path, cuts: int) -> Iterator[None]:
    """Yield after each stage of copying LOG into `target`: every file in zxid order (as the server writes them),
    log files in `cuts` pieces cut at any byte."""
    files = sorted(LOG.iterdir(), key=lambda p: int(p.name.split(".")[1], 16))
    target.mkdir(parents=True)
    for f in files:
        data = f.read_bytes()
        if f.name.startswith("log."):
            step = max(len(data) // cuts, 1)
            for end in [*range(step, len(data), step), len(data)]:
                (target / f.name).write_bytes(data[:end])
                yield
        else:
            shutil.copy(f, target / f.name)


@pytest.mark.parametrize("cuts", [1, 7, 40])
def test_polls_between_stages_of_a_copy_give_what_the_whole_history_gives(tmp_path: Path, cuts: int) -> None:
    target = tmp_path / "version-2"
    stages = copy_in_stages(target, cuts)
    next(stages)  # snapshot.0 (an empty tree) and the first log's first piece are there
    follower = ZkFollower(target)
    events, observed = [], []
    for _ in itertools.chain([None], stages):
        polled = follower.poll()
        # As a bridge publishes them, at once: a poll hands out nothing the converter amends later.
        events += json.loads(json.dumps(polled.events))
        observed += json.loads(json.dumps(polled.observed))
    expected_events, expected_observed = whole()
    assert events == expected_events
    assert observed == expected_observed


def test_a_follower_resumed_after_a_published_zxid_hands_out_exactly_the_rest() -> None:
    expected, _ = whole()
    for published in (expected[3], expected[len(expected) // 2], expected[-2]):
        after = event_zxid(published)
        rest = ZkFollower(LOG, after=after).poll().events
        assert rest == [e for e in expected if event_zxid(e) > after]


def test_the_newest_event_waits_while_the_controller_may_still_write_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Live, the server's last transaction is recent: the newest event and what follows wait until two quiet
    seconds have passed, then go out whole."""
    expected = ZkFollower(LOG).poll().events
    newest = max(t.time for t in read_zk_history(LOG).txns) / 1000
    follower = ZkFollower(LOG)
    monkeypatch.setattr(time, "time", lambda: newest + 1)
    early = follower.poll().events
    assert early == expected[:len(early)] and len(early) < len(expected)
    monkeypatch.setattr(time, "time", lambda: newest + SETTLE_MS / 1000 + 1)
    assert early + follower.poll().events == expected


def test_the_partitions_of_one_alter_partition_request_go_out_together(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Live, a poll between the controller's writes of one AlterPartition request (campaign seed 21: t1-1 at zxid
    0xf2, t1-0 at 0xf3) hands out neither: the second names itself in the first's IsrChange event."""
    run = Path(__file__).parent / "zklog" / "requests" / "zookeeper-3.9-seed-21" / "version-2"
    target = tmp_path / "version-2"
    shutil.copytree(run, target)
    last = target / "log.ac"
    data = last.read_bytes()
    last.write_bytes(data[:_start_of(data, 0xF3)])  # the log up to the request's first write
    newest = max(t.time for t in read_zk_history(target).txns) / 1000
    monkeypatch.setattr(time, "time", lambda: newest + 1)
    follower = ZkFollower(target)
    early = follower.poll().events
    assert "zk-242-t1-1" not in [e["event_id"] for e in early]
    last.write_bytes(data)
    monkeypatch.setattr(time, "time", lambda: newest + SETTLE_MS / 1000 + 1)
    request = [e for e in early + follower.poll().events if e["type"] == "IsrChange" and e["topic"] == "t1"][-2:]
    both = [{"topic": "t1", "partition": 1}, {"topic": "t1", "partition": 0}]
    assert [(e["event_id"], e["request_partitions"]) for e in request] == [("zk-242-t1-1", both), ("zk-243-t1-0", both)]


def test_a_reassignment_request_waits_while_a_leaders_isr_write_may_still_go_before_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Live, below protocol 2.7 (campaign seed 1002): t0-0's leader wrote its own ISR (0x141) while the controller
    worked through one Admin API reassignment of four partitions, between t0-0's assignment (0x140) and its bump
    (0x144), which read it; the importer puts that IsrChange before the request. A poll between the two hands out
    neither (a follower resumed after 0x13a, the last write before the request)."""
    run = Path(__file__).parent / "zklog" / "regressions" / "zookeeper-2.6-dirs-2-seed-1002" / "version-2"
    target = tmp_path / "version-2"
    shutil.copytree(run, target)
    last = target / "log.13e"
    data = last.read_bytes()
    last.write_bytes(data[:_start_of(data, 0x142)])
    newest = max(t.time for t in read_zk_history(target).txns) / 1000
    monkeypatch.setattr(time, "time", lambda: newest + 1)
    follower = ZkFollower(target, after=0x13A)
    early = follower.poll().events
    assert not {"zk-315-t0", "zk-321-t0-0"} & {e["event_id"] for e in early}
    last.write_bytes(data)
    monkeypatch.setattr(time, "time", lambda: newest + SETTLE_MS / 1000 + 1)
    polled = early + follower.poll().events
    expected = [e for e in convert(read_zk_history(run)).events if event_zxid(e) > 0x13A]
    # all but the last failover's ControllerChange, which waits for the registrations it may still read
    assert polled == expected[:-1] and expected[-1]["type"] == "ControllerChange"
    ids = [e["event_id"] for e in polled]
    assert ids.index("zk-321-t0-0") < ids.index("zk-322-t1-1") < ids.index("zk-315-t0")


def _start_of(data: bytes, zxid: int) -> int:
    """Where the record of `zxid` starts in a log file's bytes (each record: checksum, length, the transaction,
    "B")."""
    position = LOG_HEADER_BYTES
    while True:
        length = int.from_bytes(data[position + 8:position + 12], "big")
        if decode_txn(data[position + 12:position + 12 + length]).zxid == zxid:
            return position
        position += 12 + length + 1


def test_transactions_purged_before_they_were_read_end_the_follower(tmp_path: Path) -> None:
    running = tmp_path / "running"
    running.mkdir()
    for name in ("snapshot.0", "log.1"):
        shutil.copy(LOG / name, running / name)
    follower = ZkFollower(running)
    follower.poll()
    # The server went on, autopurge deleted log.1 and log.48 before the follower read the end of them.
    (running / "log.1").unlink()
    for name in ("snapshot.99", "log.9b"):
        shutil.copy(LOG / name, running / name)
    with pytest.raises(TransactionsLost, match="were deleted"):
        follower.poll()
    # A bridge that published up to zxid 0x20, restarted once only the history from snapshot.99 on is retained
    # (autopurge keeps the log before the oldest snapshot it keeps).
    shutil.copy(LOG / "log.48", running / "log.48")
    with pytest.raises(TransactionsLost, match="purged before they were read"):
        ZkFollower(running, after=0x20)


@pytest.mark.parametrize(("kept", "level", "release"), [
    ("regressions/zookeeper-2.8-scripted", IBP_2_7_IV2, "2.8.2"),  # AlterIsr, /controller of version 1
    ("zookeeper-3.9-ibp-2.6", ZOOKEEPER_ERA_PROTOCOL, None),  # leaders write their ISR; Kafka 3.4 or later
])
def test_the_follower_publishes_the_protocol_and_release_replay_reads(tmp_path: Path, kept: str, level: int,
                                                                     release: str | None) -> None:
    source = Path(__file__).parent / "zklog" / kept / "version-2"
    history = read_zk_history(source)
    [replays] = [e for e in with_protocol(read_release(history), history, convert(history).events)
                 if e["type"] == "UpdateFeatures"]
    shutil.copytree(source, tmp_path / "version-2")
    follower = ZkFollower(tmp_path / "version-2")  # from the newest snapshot, its state seeded as events
    events = json.loads(json.dumps(follower.poll().events))
    first = events[0]
    assert (first["type"], first["features"], first.get("kafka_version")) == \
        ("UpdateFeatures", replays["features"], replays.get("kafka_version"))
    assert (first["features"], first.get("kafka_version")) == ({"metadata.version": level}, release)
    assert event_zxid(first) == max(int(p.name.split(".")[1], 16) for p in source.glob("snapshot.*"))
