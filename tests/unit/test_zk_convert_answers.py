"""The ZooKeeper importer on a broker's KAFKA_STORAGE_ERROR answer to a request's LeaderAndIsr, with the controller's
`Mark replicas` lines (streaming/zookeeper/logdirs.py, answers.py): hand-written transactions (tests.unit.zk_ensemble),
replayed under the ZooKeeper rules."""

from __future__ import annotations

from streaming.zookeeper.context import NO_LEADER
from streaming.zookeeper.convert import Converter
from streaming.zookeeper.statechange import parse_offline_marks
from streaming.zookeeper.txnlog import ZnodeOp

from .test_zk_convert_dirs import NOTIFICATION, announce_failed_dir
from .zk_ensemble import Ensemble, assert_every_history_equal, decisions_of, mark_line


def test_an_answer_to_a_reassignment_in_place_marked_before_the_notification_is_its_own_event() -> None:
    # Campaign seed 1543 (Kafka 2.7.2, three log dirs): an Admin API reassignment of t0-1 to the replica it had ([4])
    # bumped its leader epoch (00:18:29.856) and rewrote the assignment; broker 4, whose dir had failed, answered the
    # bump's LeaderAndIsr with KAFKA_STORAGE_ERROR (mark .888) before its notification came (.908), and the controller
    # wrote the answer (t0-1 leaderless, .916) before it read the notification, whose answer marked t3-0 alone (.952).
    # Here broker 3 leads t-0, alone in its ISR once broker 4 is gone, and follows t-1.
    z = Ensemble((1, 2, 3, 4))
    z.topic({0: [3, 4], 1: [2, 3]})
    z.state(0, 3, [3, 4], 0)
    z.state(1, 2, [2, 3], 0)
    z.session_end(4)
    z.state(0, 3, [3], 1)  # 4's failure
    z.wait(3000)
    z.state(0, 3, [3], 2)  # the reassignment in place: its bump (B3), then its assignment rewritten unchanged
    z.topic({0: [3, 4], 1: [2, 3]}, op="setData")
    z.wait(30)
    first = z.now
    z.wait(20)
    announce_failed_dir(z, 3)
    z.state(0, NO_LEADER, [3], 3)  # the reassignment's answer: t-0's last ISR member offline
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 1), ZnodeOp("delete", NOTIFICATION))
    second = z.now
    z.state(1, 2, [2], 1)  # the notification's answer: t-1's replica on 3 offline
    marks = parse_offline_marks([mark_line(first, "t-0", 3), mark_line(second, "t-1", 3)])
    converted = Converter(offline_marks=marks).convert(z.history())
    events = converted.events
    assert [(e["type"], e.get("broker_id")) for e in events[-3:]] == [
        ("ReassignPartitions", None), ("LeaderAndIsrResponseReceived", 3), ("LogDirEventNotification", 3)]
    answer, notification = events[-2:]
    assert answer["offline_replicas"] == [{"topic": "t", "partition": 0}]
    assert notification["offline_replicas"] == [{"topic": "t", "partition": 1}]
    assert [o["cause_event_id"] for o in converted.observed[-2:]] == [answer["event_id"], notification["event_id"]]
    assert not converted.unexplained
    # The notification's answer takes t-1 offline, not t-0 again (its replica there known offline already).
    assert_every_history_equal(converted.observed, decisions_of(events))
