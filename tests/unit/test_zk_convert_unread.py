"""The ZooKeeper importer on what a controller never read, or read late: a leader's own ISR write its dead controller
never completed, a new replica a log dir notification's LeaderAndIsr left out, and leaders' own ISR writes whose
completion checks waited in the controller's queue. Hand-written transactions (tests.unit.zk_ensemble), as
test_zk_convert_dirs."""

from __future__ import annotations

import json

from streaming.zookeeper.controllerlog import parse_controller_log
from streaming.zookeeper.convert import convert
from streaming.zookeeper.txnlog import ZnodeOp

from .zk_ensemble import Ensemble, assert_every_history_equal, leaders_write_their_isr, replayed

LOG_DIR_EVENT = "/log_dir_event_notification/log_dir_event_0000000000"


def test_a_leaders_own_isr_write_after_the_controllers_last_write_is_no_completion_when_its_session_then_ends() -> None:
    # Campaign seed 1494 (Kafka 3.9.1 at protocol 2.6): t1-3 reassigned from [2] to [1]; leader 2 took 1 into the ISR
    # 99 ms after controller 1's last write, its ZooKeeper link already cut (its session expired 6.2 s later). The
    # reassignment stayed in /brokers/topics/t1: controller 2's failover took dead broker 1 out of the ISR and resumed
    # it. Here the same, broker 1 the controller.
    z = leaders_write_their_isr()
    z.topic({0: [2]})
    z.state(0, 2, [2], 0)
    z.topic({0: [1, 2]}, op="setData", adding_replicas={0: [1]}, removing_replicas={0: [2]})
    z.state(0, 2, [2], 1)  # the reassignment's start (A1)
    z.state(0, 2, [2, 1], 1, session=z.sessions[2], by_leader=True)  # the leader's own write: every target in
    z.txn(z.sessions[2], ZnodeOp("create", "/isr_change_notification/isr_change_0000000001",
                                 b'{"version":1,"partitions":[{"topic":"t","partition":0}]}', 0))
    z.close(z.sessions[1], "/controller", "/brokers/ids/1")  # expired: nothing written since the leader's write
    z.elect(2, 2)
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 2),
          ZnodeOp("delete", "/isr_change_notification/isr_change_0000000001"))
    z.state(0, 2, [2], 2)  # the failover: replica 1 offline (dead broker), out of the ISR
    z.state(0, 2, [2], 3)  # the reassignment resumed (A1 again)
    events, observed, decisions = replayed(z.history())
    [isr_change] = [e for e in events if e["type"] == "IsrChange"]
    assert isr_change.get("controller_died_before_completion") is True
    assert decisions[-1]["replicas"] == [1, 2] and decisions[-1]["isr"] == [2]  # still reassigning
    assert_every_history_equal(observed, decisions)


def test_a_new_replica_the_notification_left_out_answers_the_next_request_that_names_it() -> None:
    # Campaign seed 1498 (Kafka 3.9.1 at protocol 2.6): t1-1's new replica on broker 3 (a reassignment onto it in
    # progress) was NewReplica when broker 3's dir failed: the notification's LeaderAndIsr left it out. Broker 2's
    # controlled shutdown 16 s later made 3 the leader; 3's KAFKA_STORAGE_ERROR answer to that LeaderAndIsr left t1-1
    # leaderless (3, the last ISR member, kept). isrflow took that write for the notification's answer, and took 3
    # out at the notification. Here the same: t-0 reassigned from [2, 1] to [3, 1].
    z = Ensemble()
    z.topic({0: [2, 1]})
    z.state(0, 2, [2, 1], 0)
    z.state(0, 2, [2], 0)  # the leader's AlterPartition: 1 fell behind
    z.topic({0: [3, 1, 2]}, op="setData", adding_replicas={0: [3]}, removing_replicas={0: [2]})
    z.state(0, 2, [2], 1)  # the reassignment's start (A1); replica 3 NewReplica
    z.state(0, 2, [2, 3], 1)  # the leader's AlterPartition: 3 caught up, 1 not yet
    z.txn(z.sessions[3], ZnodeOp("create", LOG_DIR_EVENT, b'{"version":1,"broker":3,"event":1}', 0))
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 1), ZnodeOp("delete", LOG_DIR_EVENT))
    z.wait(15_000)
    z.state(0, 3, [3], 2)  # broker 2's controlled shutdown elects 3
    z.state(0, -1, [3], 3)  # broker 3's answer: its replica offline, the last ISR member kept
    z.session_end(2, clean=True)
    events, observed, decisions = replayed(z.history())
    [notification] = [e for e in events if e["type"] == "LogDirEventNotification"]
    assert notification["offline_replicas"] == []
    assert [(e["type"], e.get("change"), e.get("broker_id")) for e in events[-3:]] == [
        ("BrokerChange", "CONTROLLED_SHUTDOWN", 2), ("LeaderAndIsrResponseReceived", None, 3),
        ("BrokerChange", "FAILURE", 2)]
    assert events[-2]["offline_replicas"] == [{"topic": "t", "partition": 0}]
    assert_every_history_equal(observed, decisions)


def test_a_reads_writes_after_a_later_reads_znode_are_its_own_while_it_has_written_nothing() -> None:
    # Campaign seeds 1514 (Kafka 3.9.1 at protocol 2.6) and 1519 (3.5.2): one DeleteTopics of u, v and w, read by the
    # controller as u, then v, then w (controller.log). v's znode came before u's write, w's after it but before the
    # first write of v's read: the controller handles its TopicDeletion events in order, so v's pass (its live
    # replicas offline) is v's read's, not w's, though w's request was the newest among the events.
    z = Ensemble()
    for topic, replicas in (("u", [1]), ("v", [1, 2]), ("w", [2])):
        z.txn(0x3000, ZnodeOp("create", f"/brokers/topics/{topic}",
                              json.dumps({"partitions": {"0": replicas}, "version": 3}).encode(), 0))
        z.state(0, replicas[0], replicas, 0, topic=topic)
    z.txn(0x3000, ZnodeOp("create", "/admin/delete_topics/u", None, 0))
    z.txn(0x3000, ZnodeOp("create", "/admin/delete_topics/v", None, 0))
    z.state(0, -1, [1], 1, topic="u")  # u's read: 1's replica offline
    z.txn(0x3000, ZnodeOp("create", "/admin/delete_topics/w", None, 0))
    z.state(0, 2, [2], 1, topic="v")  # v's read: 1's replica offline, then 2's
    z.state(0, -1, [2], 2, topic="v")
    z.state(0, -1, [2], 1, topic="w")  # w's read
    at = "[2026-11-27 21:48:10,000] INFO [Controller id=1] "
    reads = parse_controller_log([f"{at}1 successfully elected as the controller. Epoch incremented to 1 and epoch "
                                  "zk version is now 1",
                                  *(f"{at}Starting topic deletion for topics {t}" for t in ("u", "u,v", "u,v,w"))])
    converted = convert(z.history(), reads)
    requests = {e["topic"]: e["event_id"] for e in converted.events if e["type"] == "DeleteTopic"}
    assert [(o["topic"], o["cause_event_id"]) for o in converted.observed[-4:]] == [
        ("u", requests["u"]), ("v", requests["v"]), ("v", requests["v"]), ("w", requests["w"])]


def test_leaders_own_isr_writes_during_another_completion_are_completed_in_the_order_of_the_bumps() -> None:
    # Campaign seed 1542 (Kafka 3.9.1 at protocol 2.6): one znode reassignment of t0-1, t1-2 and t1-0, bumped in that
    # order; each bump fired the watch on its state and queued the completion check. t0-1's leader took its targets
    # in first; during t0-1's completion t1-0's leader took its target in, then t1-2's: the controller completed
    # t1-2 before t1-0 (controller.log), as their bumps were queued, not as their leaders wrote. Here t-0, t-1, t-2
    # from [2] to [3].
    z = leaders_write_their_isr()
    z.topic({0: [2], 1: [2], 2: [2]})
    for p in range(3):
        z.state(p, 2, [2], 0)
    z.txn(0x3000, ZnodeOp("create", "/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": p, "replicas": [3]} for p in range(3)]}).encode(), 0))
    for p in range(3):  # the start of each: the assignment (U1), the bump (A1)
        moving = {q: [3] for q in range(p + 1)}
        z.topic({q: [3, 2] if q <= p else [2] for q in range(3)}, op="setData", adding_replicas=moving,
                removing_replicas={q: [2] for q in moving})
        z.state(p, 2, [2], 1)
    z.state(0, 2, [2, 3], 1, session=z.sessions[2], by_leader=True)
    z.state(0, 3, [2, 3], 2)  # t-0's completion: B3, B4, B6
    z.state(2, 2, [2, 3], 1, session=z.sessions[2], by_leader=True)  # t-2's leader first
    z.state(0, 3, [3], 3)
    z.topic({0: [3], 1: [3, 2], 2: [3, 2]}, op="setData", adding_replicas={1: [3], 2: [3]},
            removing_replicas={1: [2], 2: [2]})
    z.state(1, 2, [2, 3], 1, session=z.sessions[2], by_leader=True)
    for p in (1, 2):  # t-1's completion, then t-2's
        z.state(p, 3, [2, 3], 2)
        z.state(p, 3, [3], 3)
        z.topic({0: [3], 1: [3], 2: [3] if p == 2 else [3, 2]}, op="setData",
                **({} if p == 2 else {"adding_replicas": {2: [3]}, "removing_replicas": {2: [2]}}))
    events, observed, decisions = replayed(z.history())
    isr_changes = [e for e in events if e["type"] == "IsrChange"]
    assert [e["partition"] for e in isr_changes] == [0, 1, 2]  # as the controller handled them
    assert not [e for e in events if e["type"] == "ElectLeaders"]
    assert [(o["partition"], o["cause_event_id"]) for o in observed[-4:]] == [
        (1, isr_changes[1]["event_id"]), (1, isr_changes[1]["event_id"]),
        (2, isr_changes[2]["event_id"]), (2, isr_changes[2]["event_id"])]
    assert_every_history_equal(observed, decisions)


def test_an_offline_partitions_reassignment_in_place_was_read_once_the_controller_dropped_it_from_the_znode() -> None:
    # Campaign seed 1555 (Kafka 2.8.2): t0-0 and t1-1, both leaderless, reassigned through /admin/reassign_partitions
    # to the replicas they had: the controller failed to elect (no live replica), rewrote each assignment unchanged,
    # dropped each from the znode and deleted it, sending an UpdateMetadata of each to the live brokers (B8); its
    # session ended 40 s later. No partition state written, yet read. Here t-0 on [2, 3], both dead.
    z = Ensemble()
    z.topic({0: [2, 3]})
    z.state(0, 2, [2, 3], 0)
    z.session_end(2)
    z.state(0, 3, [3], 1)
    z.session_end(3)
    z.state(0, -1, [3], 2)
    z.txn(0x3000, ZnodeOp("create", "/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [2, 3]}]}).encode(), 0))
    z.topic({0: [2, 3]}, op="setData")  # B6, unchanged
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 1), ZnodeOp("delete", "/admin/reassign_partitions"))
    z.close(z.controller, "/brokers/ids/1", "/controller")
    events = convert(z.history()).events
    assert [e["partitions"] for e in events if e["type"] == "ReassignPartitions"] == [
        [{"topic": "t", "partition": 0, "replicas": [2, 3]}]]


def test_a_leaders_own_isr_write_after_a_notification_read_that_followed_a_startup_is_not_the_startups() -> None:
    # Campaign seed 1588 (Kafka 3.9.1 at protocol 2.6): broker 2 came back; its new session announced a stale ISR
    # change of t1-0, which the controller read (its delete) after handling the startup; leader 4 then took 2 back
    # into t1-0's ISR itself, announcing nothing before broker 2's log dir failed. The controller's cache kept the
    # ISR it read, so the leader's write goes after that read, not before the startup. Here t-0 led by 3.
    z = leaders_write_their_isr()
    z.topic({0: [3, 2]})
    z.state(0, 3, [3, 2], 0)
    z.session_end(2)
    z.state(0, 3, [3], 1)  # replica 2 offline: out of the ISR
    z.register(2, 0x2002)
    z.txn(z.sessions[2], ZnodeOp("create", "/isr_change_notification/isr_change_0000000001",
                                 b'{"version":1,"partitions":[{"topic":"t","partition":0}]}', 0))
    z.reads(z.controller, 2)
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 1),
          ZnodeOp("delete", "/isr_change_notification/isr_change_0000000001"))
    z.state(0, 3, [3, 2], 1, session=z.sessions[3], by_leader=True)
    events, observed, decisions = replayed(z.history())
    assert [e["type"] for e in events[-3:]] == ["BrokerChange", "IsrChangeNotification", "IsrChange"]
    assert_every_history_equal(observed, decisions)
