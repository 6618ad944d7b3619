"""The ZooKeeper importer on log dir failures (JBOD), deletions read in several passes and failovers cut short:
hand-written transactions (tests.unit.zk_ensemble), as test_zk_convert."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from streaming.zookeeper.context import NO_LEADER, Context, PartitionState
from streaming.zookeeper.controllerlog import ControllerReads, parse_controller_log
from streaming.zookeeper.convert import Converter, convert
from streaming.zookeeper.partitionstate import _live_replica_offline
from streaming.zookeeper.statechange import parse_offline_marks
from streaming.zookeeper.txnlog import ZnodeOp

from .zk_ensemble import (
    Ensemble,
    assert_every_history_equal,
    created,
    leaders_write_their_isr,
    replayed,
)

NOTIFICATION = "/log_dir_event_notification/log_dir_event_0000000000"


def announce_failed_dir(z: Ensemble, broker: int) -> None:
    """Broker `broker` announces a failed log dir (its znode NOTIFICATION)."""
    z.txn(z.sessions[broker], ZnodeOp("create", NOTIFICATION, b'{"version":1,"broker":%d,"event":1}' % broker, 0))


def log_dir_failure(z: Ensemble, broker: int) -> None:
    """Broker `broker` announces a failed log dir; the controller reads and deletes the notification."""
    announce_failed_dir(z, broker)
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 1), ZnodeOp("delete", NOTIFICATION))


def failed_under_2() -> Ensemble:
    """t-0 led by broker 2, t-1 followed by it; a log dir fails under it, t-0's leadership moves."""
    z = Ensemble()
    z.topic({0: [2, 1, 3], 1: [1, 2, 3]})
    z.state(0, 2, [2, 1, 3], 0)
    z.state(1, 1, [1, 2, 3], 0)
    log_dir_failure(z, 2)
    z.state(0, 1, [1, 3], 1)
    return z


def test_a_log_dir_failure_names_from_the_directory_alone_the_replicas_its_writes_drop() -> None:
    # t-1's replica on 2 is in its other dir: t-1 is not written.
    events, observed, decisions = replayed(failed_under_2().history())
    [event] = [e for e in events if e["type"] == "LogDirEventNotification"]
    assert (event["broker_id"], event["offline_replicas"]) == (2, [{"topic": "t", "partition": 0}])
    assert observed[-1]["cause_event_id"] == event["event_id"]
    assert_every_history_equal(observed, decisions)


def test_a_log_dir_failure_takes_its_replicas_from_the_controllers_mark() -> None:
    z = failed_under_2()
    z.state(1, 1, [1, 3], 1)  # both in the failed dir: t-1's ISR shrinks too
    at = datetime.fromtimestamp(z.txns[-3].time / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    marks = parse_offline_marks([f"[{at}] INFO [Controller id=1] Mark replicas t-1,t-0 on broker 2 as offline "
                                 "(state.change.logger)\n"])
    converted = Converter(offline_marks=marks).convert(z.history())
    [event] = [e for e in converted.events if e["type"] == "LogDirEventNotification"]
    assert sorted((r["topic"], r["partition"]) for r in event["offline_replicas"]) == [("t", 0), ("t", 1)]
    assert [o["cause"] for o in converted.observed[-2:]] == ["LogDirEventNotification"] * 2


def test_a_log_dir_notification_a_failover_deletes_unread_is_the_failovers_answer() -> None:
    # The controller (broker 1) is gone, its session not expired yet, when broker 2 announces a failed dir; broker 3's
    # failover deletes the notification unread and its LeaderAndIsr brings broker 2's answer: t-0 leaves 2.
    z = Ensemble()
    z.topic({0: [2, 1, 3]})
    z.state(0, 2, [2, 1, 3], 0)
    announce_failed_dir(z, 2)
    z.close(z.sessions[1], "/brokers/ids/1", "/controller")
    z.elect(3, 2)
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 2), ZnodeOp("delete", NOTIFICATION))
    z.state(0, 2, [2, 3], 1)  # the failover: dead 1 out of the ISR
    z.state(0, 3, [3], 2)  # then 2's answer: its replica offline, 3 leads
    events, observed, decisions = replayed(z.history())
    assert "LogDirEventNotification" not in {e["type"] for e in events}
    [failover] = [e for e in events if e["type"] == "ControllerChange" and e["controller_id"] == 3]
    assert failover["offline_replicas"] == {"2": [{"topic": "t", "partition": 0}]}
    assert observed[-1]["cause_event_id"] == failover["event_id"]
    assert_every_history_equal(observed, decisions)


def test_a_log_dir_notification_its_controller_logged_reading_before_a_failover_deleted_it_is_its_event() -> None:
    # Campaign seed 1435 (Kafka 2.8.2): controller 1 read broker 2's notification (controller.log: "Handling log
    # directory failure for brokers 2"), sent its LeaderAndIsr and hung before deleting it; broker 3's failover
    # deleted it. The notification is an event naming no replica (its answer never handled), the failover's
    # LeaderAndIsr brings the answer.
    z = Ensemble()
    z.topic({0: [2, 1, 3]})
    z.state(0, 2, [2, 1, 3], 0)
    announce_failed_dir(z, 2)
    at = datetime.fromtimestamp(z.txns[-1].time / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    logged = parse_controller_log([
        f"[{at}] INFO [Controller id=1] 1 successfully elected as the controller. Epoch incremented to 1 and epoch zk "
        "version is now 1", f"[{at}] INFO [Controller id=1] Handling log directory failure for brokers 2"])
    z.close(z.sessions[1], "/brokers/ids/1", "/controller")
    z.elect(3, 2)
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 2), ZnodeOp("delete", NOTIFICATION))
    z.state(0, 2, [2, 3], 1)  # the failover: dead 1 out of the ISR
    z.state(0, 3, [3], 2)  # then 2's answer: its replica offline, 3 leads
    converted = convert(z.history(), logged)
    [read] = [e for e in converted.events if e["type"] == "LogDirEventNotification"]
    assert (read["broker_id"], read["controller_epoch"], read["offline_replicas"]) == (2, 1, [])
    [failover] = [e for e in converted.events if e["type"] == "ControllerChange" and e["controller_id"] == 3]
    assert failover["offline_replicas"] == {"2": [{"topic": "t", "partition": 0}]}
    assert converted.observed[-1]["cause_event_id"] == failover["event_id"]


def test_a_notification_takes_the_mark_after_it_and_one_just_before() -> None:
    # Kafka 2.8.2, campaign seed 415: broker 1, the controller's own broker, answered KAFKA_STORAGE_ERROR for t0-1 to a
    # LeaderAndIsr sent for broker 2's failed dir, before its own notification (13.333) came; its answer to that
    # notification named the rest of its failed dir.
    lines = [f"[2026-11-26 21:26:13,{ms}] INFO [Controller id=1] Mark replicas {replicas} on broker {broker} as "
             "offline (state.change.logger)\n" for ms, replicas, broker in (("108", "t5-0,t0-1", 2), ("230", "t0-1", 1),
                                                                    ("410", "t3-0,t4-3", 1))]
    marks = parse_offline_marks(lines)
    at = int(datetime(2026, 11, 26, 21, 26, 13, tzinfo=UTC).timestamp() * 1000)
    assert marks.answer(2, at + 9) == {("t5", 0), ("t0", 1)}
    assert marks.answer(1, at + 333) == {("t0", 1), ("t3", 0), ("t4", 3)}
    assert marks.answer(1, at + 400) is None  # taken


def test_a_failovers_answers_come_in_the_order_its_controller_first_marked_each_broker() -> None:
    # Kafka 2.7.2, campaign seed 1240: controller 3 marked brokers 4 and 2 (notifications' answers), then controller 2,
    # elected at 32.542, broker 4's answer at 32.646 and broker 2's at 32.654. Those marks may be taken by another
    # lookup: the order reads them all.
    logged = (("15,850", 3, "t0-3,t0-0", 4), ("26,203", 3, "t0-2", 2), ("32,646", 2, "t0-3,t0-0", 4),
              ("32,654", 2, "t0-2", 2))
    lines = [f"[2026-11-27 09:28:{t}] INFO [Controller id={c}] Mark replicas {replicas} on broker {b} as offline "
             "(state.change.logger)\n" for t, c, replicas, b in logged]
    marks = parse_offline_marks(lines)
    at = int(datetime(2026, 11, 27, 9, 28, 32, 542000, tzinfo=UTC).timestamp() * 1000)
    assert marks.answer(4, at) == {("t0", 3), ("t0", 0)}  # taken
    assert marks.answer_order(2, at) == [4, 2]
    assert marks.answer_order(3, at) == []  # the deposed controller's marks came before


def test_a_startup_takes_the_mark_after_it_unless_a_notification_of_the_broker_comes_first() -> None:
    # Campaign seed 805: broker 1's dir failed while it was down (no notification); controller 2 marked its replicas
    # at 34.213, answering the startup at 33.155. A mark after a later notification of the broker is that one's.
    lines = [f"[2026-11-27 01:33:{t}] INFO [Controller id=2] Mark replicas {replicas} on broker 1 as offline "
             "(state.change.logger)\n" for t, replicas in (("34,213", "t1-1,t1-0"), ("50,100", "t0-0"))]
    marks = parse_offline_marks(lines)
    at = int(datetime(2026, 11, 27, 1, 33, 33, 155000, tzinfo=UTC).timestamp() * 1000)
    assert marks.startup_answer(1, at, [at + 16_000]) == {("t1", 1), ("t1", 0)}
    assert marks.startup_answer(1, at, [at + 16_000]) == frozenset()  # taken; the next is the notification's
    assert marks.answer(1, at + 16_000) == {("t0", 0)}


def test_a_failovers_answers_are_ordered_by_the_new_controllers_first_mark_of_each_broker() -> None:
    # Campaign seed 1115 (Kafka 2.8.2): controller 1, elected at 25.547, marked broker 2's replicas (25.625), then
    # broker 1's (25.639); controller 3's earlier marks and ones before the election are not its answers.
    lines = [f"[2026-11-27 06:09:{t}] INFO [Controller id={c}] Mark replicas {replicas} on broker {broker} as "
             "offline (state.change.logger)\n" for t, c, replicas, broker in (
                 ("18,031", 3, "t0-2", 1), ("25,500", 1, "t0-2", 4), ("25,625", 1, "t0-2,t1-2", 2),
                 ("25,639", 1, "t0-2,t1-2", 1), ("26,000", 3, "t0-3", 3), ("28,234", 1, "t0-3", 2))]
    marks = parse_offline_marks(lines)
    at = int(datetime(2026, 11, 27, 6, 9, 25, 547_000, tzinfo=UTC).timestamp() * 1000)
    assert marks.answer_order(1, at) == [2, 1]
    assert marks.answer_order(1, at) == [2, 1]  # nothing taken


def test_a_mark_of_replicas_the_notification_did_not_ask_about_is_a_later_requests_answer() -> None:
    # Campaign seed 906 (Kafka 3.5.2): broker 3's notification (36.030) was asked about t0-0 only, its replica of t1-1
    # being a reassignment's NewReplica; the mark of t1-1 (38.696) answered a znode reassignment's LeaderAndIsr, a
    # request read at 38.503 whose answer's write came at 38.707.
    marks = parse_offline_marks(["[2026-11-27 02:18:38,696] INFO [Controller id=3] Mark replicas t1-1 on broker 3 as "
                                 "offline (state.change.logger)\n"])
    at = int(datetime(2026, 11, 27, 2, 18, 36, 30_000, tzinfo=UTC).timestamp() * 1000)
    assert marks.answer(3, at, frozenset({("t1", 1)})) is None
    assert not marks.request_answer(3, ("t1", 0), at + 2_473, at + 2_677)  # another partition's write
    assert marks.request_answer(3, ("t1", 1), at + 2_473, at + 2_677)
    assert not marks.request_answer(3, ("t1", 1), at + 2_473, at + 2_677)  # taken


def test_a_mark_before_the_notifications_leader_and_isr_answers_the_request_before_it() -> None:
    # Campaign seed 1113 (Kafka 2.7.2): an Admin API reassignment made broker 1 t1-3's leader (LeaderAndIsr at
    # 12.275); writing its checkpoint failed the dir, the notification came at 12.311, the mark of t1-3 at 12.318,
    # and the notification's LeaderAndIsr to broker 1 only at 12.370: the mark answers the request's.
    def line(ms: str, msg: str) -> str:
        return f"[2026-11-27 06:07:12,{ms}] INFO [Controller id=2{' epoch=1' if 'Sending' in msg else ''}] {msg} " \
               "(state.change.logger)\n"
    asked = [line(ms, "Sending LeaderAndIsr request to broker 1 with 1 become-leader and 0 become-follower "
                      "partitions") for ms in ("275", "370")]
    mark = line("318", "Mark replicas t1-3 on broker 1 as offline")
    notified = int(datetime(2026, 11, 27, 6, 7, 12, 311_000, tzinfo=UTC).timestamp() * 1000)
    marks = parse_offline_marks([asked[0], mark, asked[1]])
    assert marks.asked_at == {1: [notified - 36, notified + 59]}
    assert not marks.request_answer(1, ("t1", 0), notified, notified + 900, [notified])  # another partition
    assert marks.request_answer(1, ("t1", 3), notified, notified + 900, [notified])
    assert not marks.request_answer(1, ("t1", 3), notified, notified + 900, [notified])  # taken
    # Asked between the notification and the mark: the notification's answer. Logs cut to the marks: the same.
    between = line("315", "Sending LeaderAndIsr request to broker 1 with 3 become-leader and 0 become-follower "
                          "partitions")
    for lines in ([asked[0], between, mark], [mark]):
        assert not parse_offline_marks(lines).request_answer(1, ("t1", 3), notified, notified + 900, [notified])
    assert parse_offline_marks([mark]).request_answer(1, ("t1", 3), notified, notified + 900)  # no notification


def test_a_reassignments_own_leader_and_isr_after_the_notification_leaves_the_mark_to_the_request() -> None:
    # Campaign seed 1371 (Kafka 2.8.2): the znode reassignment sent broker 4 t0-0's LeaderAndIsr (12.451), broker 4's
    # notification came at .468 while the reassignment went on, its batch for t2-0 asked broker 4 again (.471, with
    # the reassignment's "Sent LeaderAndIsr request ... being reassigned" line), and t0-0 was marked at .494, before
    # the controller handled the notification: the mark answers the reassignment's request, not the notification.
    def line(ms: str, msg: str) -> str:
        return f"[2026-11-27 15:48:12,{ms}] INFO [Controller id=1 epoch=3] {msg} (state.change.logger)\n"
    sent = line("471", "Sending LeaderAndIsr request to broker 4 with 1 become-leader and 0 become-follower partitions")
    answer = "[2026-11-27 15:48:12,471] TRACE [Controller id=1 epoch=3] Received response LeaderAndIsrResponseData(" \
             "errorCode=0) for request LEADER_AND_ISR with correlation id 19 sent to broker 127.0.0.1:1 (id: 1 rack: " \
             "rack-0) (state.change.logger)\n"
    batch = [line("451", "Sending LeaderAndIsr request to broker 4 with 1 become-leader and 0 become-follower "
                         "partitions"),
             line("452", "Sent LeaderAndIsr request (Leader:4,ISR:4,1,LeaderEpoch:3,ZkVersion:3,ControllerEpoch:3) "
                         "with new replica assignment ReplicaAssignment(replicas=3,4,2,1, addingReplicas=2, "
                         "removingReplicas=1) to leader 4 for partition being reassigned t0-0"),
             sent, answer,
             line("471", "Sending UpdateMetadata request to brokers HashSet(1, 4) for 1 partitions"),
             line("471", "Sent LeaderAndIsr request (Leader:4,ISR:4,LeaderEpoch:2,ZkVersion:2,ControllerEpoch:3) with "
                         "new replica assignment ReplicaAssignment(replicas=3,2,4,1, addingReplicas=3,2, "
                         "removingReplicas=4,1) to leader 4 for partition being reassigned t2-0")]
    mark = line("494", "Mark replicas t0-0 on broker 4 as offline").replace(" epoch=3", "")
    notified = int(datetime(2026, 11, 27, 15, 48, 12, 468_000, tzinfo=UTC).timestamp() * 1000)
    marks = parse_offline_marks([*batch, mark])
    assert marks.asked_at == {4: []}
    assert marks.request_answer(4, ("t0", 0), notified, notified + 900, [notified])
    # Another request's LeaderAndIsr (no reassignment's line after its batch) asks: the notification's answer.
    other = line("480", "Sending UpdateMetadata request to brokers HashSet(1, 4) for 4 partitions")
    marks = parse_offline_marks([*batch[:4], other, mark])
    assert marks.asked_at == {4: [notified + 3]}
    assert not marks.request_answer(4, ("t0", 0), notified, notified + 900, [notified])


def test_a_notification_goes_after_the_events_the_controller_wrote_for_before_deleting_it() -> None:
    # Campaign seed 1113 (Kafka 2.7.2): broker 1's notification came 22 ms before broker 3's AlterIsr of t1-4 was
    # written, but the controller had queued that AlterIsr first: its write (and the completion it let go on) came
    # before the notification's delete, which processLogDirEventNotification writes right after its LeaderAndIsr.
    z = created()
    announce_failed_dir(z, 3)
    z.state(0, 1, [1, 2], 0)  # broker 3 out of t-0's ISR: an AlterIsr the controller handled before the notification
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 1), ZnodeOp("delete", NOTIFICATION))
    events, observed, decisions = replayed(z.history())
    assert [e["type"] for e in events[-2:]] == ["IsrChange", "LogDirEventNotification"]
    assert_every_history_equal(observed, decisions)
    # Deleted before the write: the write is after it.
    z = created()
    log_dir_failure(z, 3)
    z.state(0, 1, [1, 2], 0)
    events, _, _ = replayed(z.history())
    assert [e["type"] for e in events[-2:]] == ["LogDirEventNotification", "IsrChange"]


def test_a_notifications_answer_written_after_a_reassignment_handled_meanwhile_goes_with_that_request() -> None:
    # Campaign seed 1035 (Kafka 2.8.2): controller 3 read broker 4's notification (its LeaderAndIsr to broker 4),
    # then an Admin API reassignment of t2-0 that came meanwhile, then broker 4's answer ("Mark replicas t0-1 on
    # broker 4 as offline"): t0-1 without 4. The answer is handled after the request: its event carries it. Here
    # broker 3's notification, then a reassignment of t-0 taking 3 out, then the answer naming t-1.
    z = created()
    log_dir_failure(z, 3)
    z.topic({0: [1, 2, 3], 1: [2, 3, 1]}, op="setData", removing_replicas={0: [3]})  # U1
    z.state(0, 1, [1, 2, 3], 1)  # A1's bump
    z.state(1, 2, [2, 1], 1)  # the answer: 3 out of t-1's ISR
    at = datetime.fromtimestamp(z.txns[-1].time / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    mark = f"[{at}] INFO [Controller id=1] Mark replicas t-1 on broker 3 as offline (state.change.logger)\n"
    converted = Converter(offline_marks=parse_offline_marks([mark])).convert(z.history())
    events = converted.events
    assert [e["type"] for e in events[-3:]] == ["LogDirEventNotification", "ReassignPartitions",
                                                "LeaderAndIsrResponseReceived"]
    assert events[-3]["offline_replicas"] == []
    assert (events[-1]["broker_id"], events[-1]["offline_replicas"]) == (3, [{"topic": "t", "partition": 1}])
    assert converted.observed[-1]["cause_event_id"] == events[-1]["event_id"]
    # From the directory alone (no mark) the same: the answer's write comes after the request's (seed 1575).
    events = convert(z.history()).events
    assert [e["type"] for e in events[-3:]] == ["LogDirEventNotification", "ReassignPartitions",
                                                "LeaderAndIsrResponseReceived"]
    assert events[-3]["offline_replicas"] == []
    assert (events[-1]["broker_id"], events[-1]["offline_replicas"]) == (3, [{"topic": "t", "partition": 1}])


def test_a_notifications_answer_written_after_a_leaders_alter_isr_handled_meanwhile_goes_with_that_isr_change() -> None:
    # Campaign seed 1301 (Kafka 2.8.2): controller 1 read broker 3's notification (14:05:46.701), then leader 1's
    # AlterIsr of t1-0 queued meanwhile (written .730, its reassignment completed by .797), then broker 3's answer
    # ("Mark replicas t3-0,t6-0,t1-1 on broker 3 as offline", .799; written from .814). The answer is handled after
    # the IsrChange: its event carries it, and every write of it (a replica out of the ISR, one left leaderless).
    # Here t-0 reassigned from [1, 2] to [4, 2], broker 3's notification, then leader 1's AlterIsr taking 4 in,
    # which completes the reassignment, then the answer naming t-1 and t-2.
    z = Ensemble((1, 2, 3, 4))
    z.topic({0: [1, 2], 1: [2, 3], 2: [3, 4]})
    z.state(0, 1, [1, 2], 0)
    z.state(1, 2, [2, 3], 0)
    z.state(2, 3, [3, 4], 0)
    z.state(2, 3, [3], 0)  # leader 3's AlterIsr: 4 out
    z.topic({0: [4, 2, 1], 1: [2, 3], 2: [3, 4]}, op="setData", adding_replicas={0: [4]},
            removing_replicas={0: [1]})  # U1
    z.state(0, 1, [1, 2], 1)  # A1's bump
    log_dir_failure(z, 3)
    z.state(0, 1, [1, 2, 4], 1)  # leader 1's AlterIsr, written by the controller
    z.state(0, 4, [1, 2, 4], 2)  # the completion: 4 elected (B3), 1 out (B4), the assignment (B6)
    z.state(0, 4, [2, 4], 3)
    z.topic({0: [4, 2], 1: [2, 3], 2: [3, 4]}, op="setData")
    z.state(1, 2, [2], 1)  # the answer: 3 out of t-1's ISR
    z.state(2, NO_LEADER, [3], 1)  # and t-2 leaderless
    at = datetime.fromtimestamp(z.txns[-2].time / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    mark = f"[{at}] INFO [Controller id=1] Mark replicas t-1,t-2 on broker 3 as offline (state.change.logger)\n"
    converted = Converter(offline_marks=parse_offline_marks([mark])).convert(z.history())
    events = converted.events
    assert [e["type"] for e in events[-3:]] == ["LogDirEventNotification", "IsrChange", "LeaderAndIsrResponseReceived"]
    assert events[-3]["offline_replicas"] == []
    assert (events[-1]["broker_id"], events[-1]["offline_replicas"]) == (
        3, [{"topic": "t", "partition": 1}, {"topic": "t", "partition": 2}])
    assert [o["cause_event_id"] for o in converted.observed[-2:]] == [events[-1]["event_id"]] * 2
    assert not converted.unexplained
    # From the directory alone (no mark) the same: the answer's writes come after the IsrChange's (seed 1575).
    events, observed, decisions = replayed(z.history())
    assert [e["type"] for e in events[-3:]] == ["LogDirEventNotification", "IsrChange", "LeaderAndIsrResponseReceived"]
    assert events[-3]["offline_replicas"] == []
    assert events[-1]["offline_replicas"] == [{"topic": "t", "partition": 1}, {"topic": "t", "partition": 2}]
    assert_every_history_equal(observed, decisions)


def test_from_the_directory_alone_a_startups_write_taking_out_the_replica_it_elected_is_the_brokers_answer() -> None:
    # Campaign seed 1301 (Kafka 2.8.2): broker 4's dir failed while it was down (no notification); its startup
    # elected it for t2-0 (leader epoch 5), then its KAFKA_STORAGE_ERROR answer left t2-0 leaderless (6). Without the
    # marks the startup's event names the replica, as `startup_answer` does from them. Here broker 3 and t-0.
    z = Ensemble()
    z.topic({0: [3], 1: [1]})
    z.state(0, 3, [3], 0)
    z.state(1, 1, [1], 0)
    z.session_end(3)
    z.state(0, NO_LEADER, [3], 1)  # the failure
    z.register(3, 0x2003)
    z.state(0, 3, [3], 2)  # the startup elects 3
    z.state(0, NO_LEADER, [3], 3)  # its answer takes the replica offline
    events, observed, decisions = replayed(z.history())
    startup = events[-1]
    assert (startup["change"], startup["offline_replicas"]) == ("STARTUP", [{"topic": "t", "partition": 0}])
    assert [o["cause_event_id"] for o in observed[-2:]] == [startup["event_id"]] * 2
    assert_every_history_equal(observed, decisions)


def test_a_brokers_answer_to_a_controlled_shutdowns_request_before_its_notification_is_no_shutdown_of_its_own(
) -> None:
    # Campaign seed 1114 (Kafka 3.9.1 at protocol 2.6): broker 3's controlled shutdown made broker 4 t1-0's leader; 4's
    # dir failed as it handled that LeaderAndIsr, it answered KAFKA_STORAGE_ERROR for t1-0, and the controller took
    # 4 out (t1-0 elected 2) 14 ms before 4's notification came. Here broker 2 shuts down, 3 leads t-1 and answers.
    z = created()
    z.state(1, 3, [3, 1], 1)  # broker 2's controlled shutdown: t-1's leadership moves to 3
    z.state(0, 1, [1, 3], 1)
    z.state(1, 1, [1], 2)  # broker 3's answer: its replica of t-1 offline
    log_dir_failure(z, 3)  # t-0's replica on 3 is in its other dir: no write
    z.session_end(2, clean=True)
    events, observed, decisions = replayed(z.history())
    assert [(e["type"], e.get("change"), e.get("broker_id")) for e in events[-4:]] == [
        ("BrokerChange", "CONTROLLED_SHUTDOWN", 2), ("LeaderAndIsrResponseReceived", None, 3),
        ("LogDirEventNotification", None, 3), ("BrokerChange", "FAILURE", 2)]
    shutdown, answer = events[-4:-2]
    assert answer["offline_replicas"] == [{"topic": "t", "partition": 1}]
    assert [o["cause_event_id"] for o in observed[-3:]] == [shutdown["event_id"]] * 2 + [answer["event_id"]]
    assert_every_history_equal(observed, decisions)
    # Without the notification right after, the write is broker 3's controlled shutdown, as before.
    z = created()
    z.state(1, 3, [3, 1], 1)
    z.state(0, 1, [1, 3], 1)
    z.state(1, 1, [1], 2)
    events, _, _ = replayed(z.history())
    assert [(e.get("change"), e.get("broker_id")) for e in events[-2:]] == [("CONTROLLED_SHUTDOWN", 2),
                                                                           ("CONTROLLED_SHUTDOWN", 3)]


def test_a_reassignment_asked_again_keeps_the_new_replica_the_controller_held_before_in_a_notifications_answer(
) -> None:
    # Campaign seed 1030 (Kafka 2.7.2): t0-1's reassignment onto broker 4 was in progress when a controller took
    # replica 4 online; an Admin API reassignment to the same target bumped t0-1 again, and its NewReplica step failed
    # ("from OnlineReplica to NewReplica failed": NewReplica comes from NonExistentReplica alone). So broker 4's
    # notification asked about t0-1, and its answer's mark is the notification's. Here broker 4's restart takes the
    # replica online, and broker 3's failure comes before the request asked again.
    z = Ensemble((1, 2, 3, 4))
    z.topic({0: [2, 3], 1: [1, 3]})
    z.state(0, 2, [2, 3], 0)
    z.state(1, 1, [1, 3], 0)
    z.topic({0: [4, 3, 2], 1: [1, 3]}, op="setData", adding_replicas={0: [4]}, removing_replicas={0: [2]})
    z.state(0, 2, [2, 3], 1)  # the reassignment's start (A1); replica 4 NewReplica
    z.session_end(4)
    z.register(4, 0x2004)
    z.state(0, 2, [2, 3], 2)  # broker 4's startup resumes it; replica 4 online
    z.session_end(3)
    z.state(0, 2, [2], 3)
    z.state(1, 1, [1], 1)
    z.state(0, 2, [2], 4)  # the reassignment asked again
    announce_failed_dir(z, 4)
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 1), ZnodeOp("delete", NOTIFICATION))
    at = datetime.fromtimestamp(z.txns[-1].time / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    marks = parse_offline_marks([f"[{at}] INFO [Controller id=1] Mark replicas t-0 on broker 4 as offline "
                                 "(state.change.logger)\n"])
    events = Converter(offline_marks=marks).convert(z.history()).events
    assert [e["type"] for e in events[-3:]] == ["BrokerChange", "ReassignPartitions", "LogDirEventNotification"]
    assert events[-1]["offline_replicas"] == [{"topic": "t", "partition": 0}]


def test_the_unchanged_rewrite_after_a_znode_reassignments_bump_in_place_is_its_completion() -> None:
    # A real 3.9 run (zk campaign seed 303, from the ZooKeeper directory alone): a reassignment through the znode
    # names t-0 with the replicas it has: a bare bump, then /brokers/topics/t rewritten unchanged (B6). t-1 has no
    # leader: the rewrite is not a reassignment in place of t-1 (seed 111's reading of a rewrite with no bump).
    z = Ensemble()
    z.topic({0: [1, 3], 1: [2]})
    z.state(0, 1, [1, 3], 0)
    z.state(1, 2, [2], 0)
    z.session_end(2)
    z.state(1, -1, [2], 1)
    z.txn(0x3000, ZnodeOp("create", "/admin/reassign_partitions",
                          b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,3]}]}', 0))
    z.state(0, 1, [1, 3], 1)
    z.topic({0: [1, 3], 1: [2]}, op="setData")
    converted = convert(z.history())
    [reassignment] = [e for e in converted.events if e["type"] == "ReassignPartitions"]
    assert reassignment["partitions"] == [{"topic": "t", "partition": 0, "replicas": [1, 3]}]
    assert converted.observed[-1]["cause_event_id"] == reassignment["event_id"] and not converted.unexplained


def test_a_znode_reassignments_bump_in_place_after_a_leaders_own_isr_write_is_still_its_own() -> None:
    # A real 2.6 run (zk campaign seed 1118): one reassignment through the znode of t-0 (from [2, 1, 3] to
    # [4, 5, 3]) and t-1 (reordered in place, from [3, 1, 2] to [1, 3, 2]). The controller started t-0 (its
    # assignment, A1's bump), wrote t-1's assignment (U1), and t-0's leader wrote its own ISR before t-1's bump (B3):
    # that bump is still the znode reassignment's, not an Admin API reassignment in place read from the unchanged
    # rewrite (B6) after it.
    z = leaders_write_their_isr((1, 2, 3, 4, 5))
    z.topic({0: [2, 1, 3], 1: [3, 1, 2]})
    z.state(0, 2, [2, 1, 3], 0)
    z.state(1, 3, [3, 1, 2], 0)
    z.txn(0x3000, ZnodeOp("create", "/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [4, 5, 3]},
        {"topic": "t", "partition": 1, "replicas": [1, 3, 2]}]}).encode(), 0))
    moving = {"adding_replicas": {0: [4, 5]}, "removing_replicas": {0: [2, 1]}}
    z.topic({0: [4, 5, 3, 2, 1], 1: [3, 1, 2]}, op="setData", **moving)
    z.state(0, 2, [2, 1, 3], 1)  # A1
    z.topic({0: [4, 5, 3, 2, 1], 1: [1, 3, 2]}, op="setData", **moving)  # t-1's U1
    z.state(0, 2, [2, 1, 3, 4], 1, session=z.sessions[2], by_leader=True)  # 5 not in yet: no completion
    z.state(1, 3, [3, 1, 2], 1)  # t-1's B3
    z.topic({0: [4, 5, 3, 2, 1], 1: [1, 3, 2]}, op="setData", **moving)  # t-1's B6
    events, observed, decisions = replayed(z.history())
    [reassignment] = [e for e in events if e["type"] == "ReassignPartitions"]
    assert reassignment["through_znode"]
    assert observed[-1]["cause_event_id"] == reassignment["event_id"]
    assert_every_history_equal(observed, decisions)


def test_a_znode_reassignments_rewrite_in_place_after_a_leaders_own_isr_write_is_still_its_own() -> None:
    # A real 2.6 run (zk campaign seed 1548, Kafka 3.9.1): one reassignment through the znode of t-2 (from [2] to
    # [3]), t-1 (from [1] to [3]) and t-0 (to the [4] it has, broker 4 dead: leaderless), started in that order.
    # t-2's leader wrote its own ISR with 3 in between t-1's assignment and bump; the controller then rewrote t-0's
    # assignment unchanged (its election failed: no bump) and took t-0 off the znode. That rewrite is the znode
    # reassignment's, not an Admin API reassignment in place of t-0; t-2's completion after it is the leader's
    # IsrChange (the watch's event, queued behind the znode's), not an admin preferred election.
    z = leaders_write_their_isr((1, 2, 3, 4))
    z.topic({0: [4], 1: [1], 2: [2]})
    z.state(0, 4, [4], 0)
    z.state(1, 1, [1], 0)
    z.state(2, 2, [2], 0)
    z.session_end(4)
    z.state(0, -1, [4], 1)
    z.txn(0x3000, ZnodeOp("create", "/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": p, "replicas": r} for p, r in ((0, [4]), (1, [3]), (2, [3]))]}).encode(), 0))
    z.topic({0: [4], 1: [1], 2: [3, 2]}, op="setData", adding_replicas={2: [3]}, removing_replicas={2: [2]})
    z.state(2, 2, [2], 1)  # t-2's A1
    moving = {"adding_replicas": {1: [3], 2: [3]}, "removing_replicas": {1: [1], 2: [2]}}
    z.topic({0: [4], 1: [3, 1], 2: [3, 2]}, op="setData", **moving)  # t-1's U1
    z.state(2, 2, [2, 3], 1, session=z.sessions[2], by_leader=True)
    z.state(1, 1, [1], 1)  # t-1's A1
    z.topic({0: [4], 1: [3, 1], 2: [3, 2]}, op="setData", **moving)  # t-0's rewrite in place
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 1), ZnodeOp(
        "setData", "/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
            {"topic": "t", "partition": p, "replicas": [3]} for p in (1, 2)]}).encode(), 1))
    z.state(2, 3, [2, 3], 2)  # t-2's B3
    z.state(2, 3, [3], 3)  # B4
    z.topic({0: [4], 1: [3, 1], 2: [3]}, op="setData", adding_replicas={1: [3]}, removing_replicas={1: [1]})  # B6
    events, observed, decisions = replayed(z.history())
    assert [e["type"] for e in events if e["type"] in ("ReassignPartitions", "ElectLeaders")] == ["ReassignPartitions"]
    [isr_change] = [e for e in events if e["type"] == "IsrChange"]
    assert [(r["leader"], r["isr"], r["cause_event_id"]) for r in observed[-2:]] == [
        (3, [2, 3], isr_change["event_id"]), (3, [3], isr_change["event_id"])]
    assert_every_history_equal(observed, decisions)


def test_a_failover_starts_over_a_znode_reassignment_an_admin_write_took_off_the_topics_assignment() -> None:
    # A real 3.0.2 run (zk campaign seed 1547): /admin/reassign_partitions asked t-0 from [2] to [4]; the controller
    # wrote t's assignment with it, then a CreatePartitions of t (the admin's write, read before the controller's) put
    # t-0 back on [2] alone. The next controller reads [2] and starts the znode's reassignment over: its failover
    # says so; one whose znode reassignment /brokers/topics still holds says nothing of it.
    def failover(overwritten: bool) -> dict[str, Any]:
        z = Ensemble((1, 2, 3, 4))
        z.topic({0: [2]})
        z.state(0, 2, [2], 0)
        z.txn(0x3000, ZnodeOp("create", "/admin/reassign_partitions",
                              b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4]}]}', 0))
        z.topic({0: [4, 2]}, op="setData", adding_replicas={0: [4]}, removing_replicas={0: [2]})
        z.state(0, 2, [2], 1)
        if overwritten:
            z.txn(0x3001, ZnodeOp("setData", "/brokers/topics/t", json.dumps(
                {"partitions": {"0": [2], "1": [3]}, "version": 3}).encode(), 0))
        z.session_end(1)
        z.elect(3, 2)
        [event] = [e for e in convert(z.history()).events if e["type"] == "ControllerChange" and
                   e["controller_epoch"] == 2]
        return event

    assert failover(overwritten=True)["restarted_reassignments"] == [
        {"topic": "t", "partition": 0, "replicas": [2], "adding_replicas": [], "removing_replicas": []}]
    assert "restarted_reassignments" not in failover(overwritten=False)


def test_a_deletion_the_controllers_session_ended_inside_is_marked_unanswered_and_a_completed_one_is_not() -> None:
    # zklog/regressions/zookeeper-3.0-deletion-cut-short: both replicas live, the topic's znodes still there when the
    # controller's session ends: its StopReplica answers never came back to it.
    def deleted(completed: bool) -> dict[str, Any]:
        z = created()
        z.txn(0x3000, ZnodeOp("create", "/admin/delete_topics/t", None, 0))
        z.state(0, -1, [1], 1)
        if completed:
            z.txn(z.controller, ZnodeOp("delete", "/brokers/topics/t"))
        z.close(z.controller, "/controller", "/brokers/ids/1", clean=True)
        [event] = [e for e in convert(z.history()).events if e["type"] == "DeleteTopic"]
        return event

    assert deleted(completed=False)["stop_replica_answered"] is False
    assert "stop_replica_answered" not in deleted(completed=True)


def test_a_startup_queued_before_a_leaders_own_isr_write_completes_the_reassignment_the_write_caught_up() -> None:
    # A real 2.6 run (zk campaign seed 702): t-0 being reassigned from [3, 1] to [2, 3]; broker 2 registered again
    # and the leader, 3, then wrote the ISR [3, 1, 2] itself. The startup, queued first, read that ISR from
    # ZooKeeper and completed the reassignment (a bump, then 1 out of the ISR, then the assignment): the IsrChange is
    # marked so that isrflow leaves the completion to the startup.
    z = leaders_write_their_isr()
    z.topic({0: [3, 1]})
    z.state(0, 3, [3, 1], 0)
    z.topic({0: [2, 3, 1]}, op="setData", adding_replicas={0: [2]}, removing_replicas={0: [1]})
    z.state(0, 3, [3, 1], 1)  # A: 2 not yet in the ISR
    z.session_end(2)
    z.register(2, 0x2002)
    z.state(0, 3, [3, 1, 2], 1, by_leader=True)
    z.state(0, 3, [3, 1, 2], 2)  # the startup's completion: B3, B4, B6
    z.state(0, 3, [3, 2], 3)
    z.topic({0: [2, 3]}, op="setData")
    events, observed, decisions = replayed(z.history())
    [isr_change] = [e for e in events if e["type"] == "IsrChange"]
    assert isr_change.get("reassignment_completed_by_queued_event") is True
    assert [o["cause"] for o in observed[-2:]] == ["BrokerChange"] * 2
    assert_every_history_equal(observed, decisions)


def test_a_cancel_written_right_after_a_leaders_own_isr_write_that_caught_up_takes_the_completion() -> None:
    # A real 3.9.1 run at protocol 2.6 (zk campaign seed 1208): t-0 being reassigned from [3] to [2]; its leader, 3,
    # wrote the ISR [3, 2] itself, and the controller's next write was the cancel's assignment [3], in the same ms:
    # the cancel was queued before the watch's completion. It read that ISR: 2 out of it, then a bare bump (3 kept);
    # the IsrChange leaves the completion to it, or isrflow would move the leader onto 2 first.
    z = leaders_write_their_isr()
    z.topic({0: [3]})
    z.state(0, 3, [3], 0)
    z.topic({0: [2, 3]}, op="setData", adding_replicas={0: [2]}, removing_replicas={0: [3]})
    z.state(0, 3, [3], 1)  # A1
    z.state(0, 3, [3, 2], 1, session=z.sessions[3], by_leader=True)
    z.topic({0: [3]}, op="setData")  # the cancel: U1
    z.state(0, 3, [3], 2)  # 2, no longer a replica, out of the ISR
    z.state(0, 3, [3], 3)  # B3: leader 3 kept, a bare bump
    events, observed, decisions = replayed(z.history())
    [isr_change] = [e for e in events if e["type"] == "IsrChange"]
    assert isr_change.get("reassignment_completed_by_queued_event") is True
    assert [o["cause"] for o in observed[-2:]] == ["ReassignPartitions"] * 2
    assert_every_history_equal(observed, decisions)


def test_a_completion_whose_watch_fired_after_a_request_was_taken_is_the_leaders_isr_changes() -> None:
    # A real 3.9.1 run at protocol 2.6 (zk campaign seed 808): t-0's leader took its target replica into the ISR
    # itself; an Admin API reassignment of t-1, asked again, was taken first (its bump is the controller's next
    # write), and the watch on t-0's state queued the completion behind it. Its bump and ISR shrink are the ISR
    # change's, not an unexplained write and broker 3's controlled shutdown, and the IsrChange goes after the request.
    z = leaders_write_their_isr()
    z.topic({0: [2, 3], 1: [3, 2]})
    z.state(0, 2, [2, 3], 0)
    z.state(1, 3, [3, 2], 0)
    z.topic({0: [2, 1, 3], 1: [3, 2]}, op="setData", adding_replicas={0: [1]}, removing_replicas={0: [3]})
    z.state(0, 2, [2, 3], 1)
    z.topic({0: [2, 1, 3], 1: [1, 3, 2]}, op="setData", adding_replicas={0: [1], 1: [1]},
            removing_replicas={0: [3], 1: [3, 2]})
    z.state(1, 3, [3, 2], 1)
    z.state(0, 2, [2, 3, 1], 1, session=z.sessions[2], by_leader=True)
    z.state(1, 3, [3, 2], 2)  # t-1's reassignment asked again: a bare bump
    # A follower polling here holds the IsrChange back: its completion may still come, behind the request.
    follower = Converter()
    [isr_write] = follower.feed(z.txns).events[-2:-1]
    assert follower.unsettled_from(0) == int(isr_write["event_id"].split("-")[1])
    z.state(0, 2, [2, 3, 1], 2)  # t-0's completion: B3, B4, B6
    z.state(0, 2, [2, 1], 3)
    z.topic({0: [2, 1], 1: [1, 3, 2]}, op="setData", adding_replicas={1: [1]}, removing_replicas={1: [3, 2]})
    events, observed, decisions = replayed(z.history())
    assert not [e for e in events if e.get("change") == "CONTROLLED_SHUTDOWN"]
    assert [e["type"] for e in events[-2:]] == ["ReassignPartitions", "IsrChange"]  # as the controller handled them
    [isr_change] = [e for e in events if e["type"] == "IsrChange"]
    assert [o["cause_event_id"] for o in observed[-2:]] == [isr_change["event_id"]] * 2
    assert_every_history_equal(observed, decisions)


def other_topic(z: Ensemble, name: str, partitions: dict[int, tuple[int, list[int]]]) -> None:
    """Topic `name` created (the admin's write), each partition's first state written by the controller:
    partition -> (leader, isr); its replicas are its ISR."""
    data = {"partitions": {str(p): isr for p, (_, isr) in partitions.items()}, "version": 3}
    z.txn(0x3000, ZnodeOp("create", f"/brokers/topics/{name}", json.dumps(data).encode(), 0))
    for p, (leader, isr) in partitions.items():
        z.state(p, leader, isr, 0, topic=name)


def test_an_isr_change_the_controller_writes_after_a_deletions_first_write_ends_that_deletions_read() -> None:
    # A real 3.9 run (zk campaign seed 411): one DeleteTopics of u and w, their znodes one after the other; the
    # controller's first read took u alone (its replica offline), then it wrote w-0's AlterPartition, then deleted w:
    # a deletion takes all its read's live replicas offline before the controller handles anything else.
    z = created()
    other_topic(z, "u", {0: (3, [3])})
    other_topic(z, "w", {0: (1, [1, 2])})
    z.state(0, 1, [1], 0, topic="w")  # 2 left w-0's ISR
    z.txn(0x3000, ZnodeOp("create", "/admin/delete_topics/u", None, 0))
    z.txn(0x3000, ZnodeOp("create", "/admin/delete_topics/w", None, 0))
    z.state(0, -1, [3], 1, topic="u")
    z.state(0, 1, [1, 2], 0, topic="w")  # w-0's leader takes 2 back
    z.state(0, -1, [2], 1, topic="w")  # w deleted: 1's replica offline, then 2's (the last ISR member stays)
    z.state(0, -1, [2], 2, topic="w")
    events, observed, decisions = replayed(z.history())
    assert [(e["type"], e.get("topic")) for e in events[-3:]] == [
        ("DeleteTopic", "u"), ("IsrChange", "w"), ("DeleteTopic", "w")]
    assert not any("topics" in e for e in events[-3:])
    assert [o["cause_event_id"] for o in observed[-3:]] == [events[-2]["event_id"]] + [events[-1]["event_id"]] * 2
    assert_every_history_equal(observed, decisions)


def test_a_deletion_write_pipelined_with_a_later_requests_first_write_is_of_the_later_read() -> None:
    # A real 3.9 run (zk campaign seed 443): DeleteTopics of u and w, then of v: the controller's first read took u
    # alone; w's first write came in one broker batch with v's (pipelined: consecutive cxids), so the later read
    # took w with v.
    z = created()
    for name in ("u", "w", "v"):
        other_topic(z, name, {0: (3 if name == "u" else 1, [3] if name == "u" else [1])})
    z.txn(0x3000, ZnodeOp("create", "/admin/delete_topics/u", None, 0))
    z.txn(0x3000, ZnodeOp("create", "/admin/delete_topics/w", None, 0))
    z.state(0, -1, [3], 1, topic="u")
    z.txn(0x3000, ZnodeOp("create", "/admin/delete_topics/v", None, 0))
    z.reads(z.controller, 2)  # the next read of /admin/delete_topics, and of the states
    z.state(0, -1, [1], 1, topic="w")  # broker 1's batch of the second pass
    z.state(0, -1, [1], 1, topic="v")
    events, observed, decisions = replayed(z.history())
    deletions = {e["topic"]: e for e in events if e["type"] == "DeleteTopic"}
    assert "topics" not in deletions["u"] and deletions["w"]["topics"] == deletions["v"]["topics"] == ["v", "w"]
    assert [o["cause_event_id"] for o in observed[-2:]] == [deletions["w"]["event_id"]] * 2
    assert_every_history_equal(observed, decisions)


def test_a_broker_dropped_from_a_reassigning_partition_after_a_failovers_last_write_is_its_controlled_shutdown(
) -> None:
    # A real 3.9 run (zk campaign seed 439): a new controller's failover resumed t-0's reassignment (a bump) and
    # ended with its delete of /admin/preferred_replica_election, failing (NONODE: none there); broker 3 dropped from
    # t-0's ISR after that is broker 3's controlled shutdown, not the failover's.
    def writes_after(failover_ended: bool) -> list[tuple[str, str | None]]:
        z = Ensemble((4, 1, 2, 3, 5))
        z.topic({0: [1, 2, 3]})
        z.state(0, 1, [1, 2, 3], 0)
        z.topic({0: [1, 2, 3, 5]}, op="setData", adding_replicas={0: [5]})
        z.state(0, 1, [1, 2, 3], 1)
        z.close(z.sessions[4], "/controller", "/brokers/ids/4")
        z.controller = z.sessions[1]
        z.txn(z.controller, ZnodeOp("create", "/controller", b'{"brokerid":1}'),
              ZnodeOp("setData", "/controller_epoch", b"2", 2))
        z.state(0, 1, [1, 2, 3], 2)  # the failover resumes the reassignment
        if failover_ended:
            z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 2), ZnodeOp("error", error=-101))
        z.state(0, 1, [1, 2], 3)
        z.session_end(3, clean=True)
        events, observed, decisions = replayed(z.history())
        if failover_ended:
            assert_every_history_equal(observed, decisions)
        causes = {e["event_id"]: (e["type"], e.get("change")) for e in events}
        return [causes[o["cause_event_id"]] for o in observed[-2:]]

    assert writes_after(failover_ended=True) == [("ControllerChange", None), ("BrokerChange", "CONTROLLED_SHUTDOWN")]
    # Without its end in the log, a reassigning partition's write before the next input may still be the failover's.
    assert writes_after(failover_ended=False) == [("ControllerChange", None)] * 2


def test_an_isr_change_whose_completion_the_controllers_death_cut_says_where() -> None:
    # A real 3.9 run (zk campaign seed 443): t-0 reassigned from [3] to [2]; 2 joined the ISR, the completion moved
    # the leader to 2 (B3), and the controller, broker 3, was killed before 3 left the ISR (B4). A real 2.8.2 run
    # (seed 1211): the controller was paused right after the AlterPartition's write, before the completion wrote.
    def isr_change(written: int) -> dict[str, Any]:
        z = Ensemble((3, 1, 2))
        z.topic({0: [3]})
        z.state(0, 3, [3], 0)
        z.topic({0: [2, 3]}, op="setData", adding_replicas={0: [2]}, removing_replicas={0: [3]})
        z.state(0, 3, [3], 1)
        z.state(0, 3, [3, 2], 1)  # the AlterPartition
        if written >= 1:
            z.state(0, 2, [3, 2], 2)  # B3
        if written >= 2:
            z.state(0, 2, [2], 3)  # B4, then B6
            z.topic({0: [2]}, op="setData")
        z.close(z.sessions[3], "/controller", "/brokers/ids/3")
        [event] = [e for e in convert(z.history()).events if e["type"] == "IsrChange"]
        return {k: v for k, v in event.items() if k.startswith("controller_died")}

    assert isr_change(written=0) == {"controller_died_before_completion": True}
    assert isr_change(written=1) == {"controller_died_after_leader_move": True}
    assert isr_change(written=2) == {}


def test_a_broker_down_at_the_failover_that_deleted_its_notification_unread_answers_at_its_startup() -> None:
    # A real 2.8.2 run (zk campaign seed 437, from the ZooKeeper directory alone): a dir failed under broker 2, the
    # controller, whose session then expired; broker 1's failover deleted the notification unread while broker 2 was
    # down. At broker 2's re-registration its startup elected it for t-1 and its answer (KAFKA_STORAGE_ERROR) took
    # it offline again: the failover's ControllerChange restores that answer.
    z = Ensemble((2, 1, 3))
    z.topic({0: [2, 3], 1: [2, 3]})
    z.state(0, 2, [2, 3], 0)
    z.state(1, 2, [2, 3], 0)
    z.state(1, 2, [2], 0)  # 3 out of t-1's ISR (its leader's AlterPartition)
    announce_failed_dir(z, 2)
    z.close(z.sessions[2], "/brokers/ids/2", "/controller")
    z.controller = z.sessions[1]
    z.txn(z.controller, ZnodeOp("create", "/controller", b'{"brokerid":1}'),
          ZnodeOp("setData", "/controller_epoch", b"2", 2))
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 2), ZnodeOp("delete", NOTIFICATION))
    z.state(0, -1, [3], 1)  # the failover: the dead 2's replicas offline, then t-0 elects 3; t-1 keeps its last
    z.state(1, -1, [2], 1)  # ISR member (no unclean election)
    z.state(0, 3, [3], 2)
    z.register(2, 0x2002)
    z.state(1, 2, [2], 2)  # the startup elects 2 for t-1; its answer takes it offline again
    z.state(1, -1, [2], 3)
    events, observed, decisions = replayed(z.history())
    [failover] = [e for e in events if e["type"] == "ControllerChange" and e["controller_id"] == 1]
    [startup] = [e for e in events if e["type"] == "BrokerChange" and e["change"] == "STARTUP"]
    assert failover["offline_replicas"] == {"2": [{"topic": "t", "partition": 1}]}
    assert [o["cause_event_id"] for o in observed[-2:]] == [startup["event_id"]] * 2
    assert_every_history_equal(observed, decisions)


def _controller_log(*lines: str) -> ControllerReads:
    """Controller 1's controller.log, elected at epoch 1, with `lines` after its election."""
    at = "[2023-11-14 22:13:20,000] INFO [Controller id=1] "
    return parse_controller_log([f"{at}1 successfully elected as the controller. Epoch incremented to 1 and epoch zk "
                                 "version is now 1", *(f"{at}{line}" for line in lines)])


def test_a_failover_its_controllers_log_names_ends_at_its_failed_delete_of_the_election_znode_too() -> None:
    # A real 2.7.2 run (zk campaign seed 1203): controller 2's failover, its read of /brokers/ids in controller.log,
    # ended with its delete of /admin/preferred_replica_election failing (NONODE); a reassignment asked through the
    # znode after that is a request of its own, not one the failover read (initializePartitionReassignments, seed
    # 1108), whatever the log says of the failover.
    z = Ensemble()
    z.topic({0: [1], 1: [2]})
    z.state(0, 1, [1], 0)
    z.state(1, 2, [2], 0)
    z.close(z.controller, "/controller", "/brokers/ids/1")  # controller 1's broker dies
    z.controller = z.sessions[2]
    z.txn(z.controller, ZnodeOp("create", "/controller", b'{"brokerid":2}'), ZnodeOp("setData", "/controller_epoch",
                                                                                        b"2", 2))
    z.state(0, -1, [1], 1)
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 2), ZnodeOp("error", error=-101))
    z.txn(0x3000, ZnodeOp("create", "/admin/reassign_partitions",
                          b'{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[2,3]}]}', 0))
    z.topic({0: [1], 1: [2, 3]}, op="setData", adding_replicas={1: [3]})
    z.state(1, 2, [2], 1)
    at = "[2023-11-14 22:13:20,000] INFO [Controller id=2] "
    logged = parse_controller_log([f"{at}2 successfully elected as the controller. Epoch incremented to 2 and epoch "
                                   "zk version is now 2",
                                   f"{at}Initialized broker epochs cache: HashMap(2 -> 2, 3 -> 3)"])
    for reads in (None, logged):
        events = convert(z.history(), reads).events
        assert [e["type"] for e in events[-2:]] == ["ControllerChange", "ReassignPartitions"]
        assert not [e for e in events if e.get("read_at_failover") or e.get("reads_reassignment_znode")]


def test_with_the_controllers_log_a_retry_of_a_read_that_wrote_nothing_is_the_next_reads() -> None:
    # A real 2.7.2 run (zk campaign seed 1203): one DeleteTopics of a, b and c, read as a (its one replica on dead
    # broker 3: nothing written), b, then c. b's read enqueued b with resumeDeletions, which retried a-0's dead
    # replica first (a bare bump), before c's request, whose znode came before that retry, had written anything.
    z = Ensemble()
    for topic, replica in (("a", 3), ("b", 1), ("c", 2)):
        z.txn(0x3000, ZnodeOp("create", f"/brokers/topics/{topic}",
                              json.dumps({"partitions": {"0": [replica]}, "version": 3}).encode(), 0))
        z.state(0, replica, [replica], 0, topic=topic)
    z.session_end(3)
    z.state(0, -1, [3], 1, topic="a")
    for topic in "abc":
        z.txn(0x3000, ZnodeOp("create", f"/admin/delete_topics/{topic}", None, 0))
    z.state(0, -1, [3], 2, topic="a")  # a-0's retry
    z.state(0, -1, [1], 1, topic="b")  # b's live replica offline
    z.state(0, -1, [2], 1, topic="c")
    reads = _controller_log("Starting topic deletion for topics a", "Starting topic deletion for topics a,b",
                            "Starting topic deletion for topics a,b,c")
    converted = convert(z.history(), reads)
    requests = {e["topic"]: e["event_id"] for e in converted.events if e["type"] == "DeleteTopic"}
    assert [(o["topic"], o["cause_event_id"]) for o in converted.observed[-3:]] == [
        ("a", requests["b"]), ("b", requests["b"]), ("c", requests["c"])]


def test_a_registered_brokers_replica_in_a_failed_dir_is_not_a_live_replica_taken_offline() -> None:
    # A real 2.7.2 run (zk campaign seed 1250): t1-0 leaderless with ISR [3], broker 3 registered again but its replica
    # in a failed dir (a dead replica to onPartitionDeletion, isReplicaOnline). The bare bump retrying its deletion
    # takes no live replica offline: it is the retry of the later read whose queued StopReplica answers brought it
    # (`stop_replica_answers`), not a write of the earlier read's pass.
    ctx = Context()
    ctx.brokers = {3: 183}
    before, after = PartitionState(-1, (3,), 10, 11), PartitionState(-1, (3,), 11, 12)
    assert _live_replica_offline(ctx, ("t1", 0), before, after)
    ctx.failed_replicas[3] = {("t1", 2)}  # another of its replicas failed: t1-0's is live
    assert _live_replica_offline(ctx, ("t1", 0), before, after)
    ctx.failed_replicas[3].add(("t1", 0))
    assert not _live_replica_offline(ctx, ("t1", 0), before, after)
    # Out of the ISR likewise: only a replica in a live dir counts.
    ctx.brokers[1] = 240
    isr_1_3 = PartitionState(1, (1, 3), 10, 11)
    assert not _live_replica_offline(ctx, ("t1", 0), isr_1_3, PartitionState(1, (1,), 11, 12))
    assert _live_replica_offline(ctx, ("t1", 0), isr_1_3, PartitionState(-1, (3,), 11, 12))


def test_from_the_directory_alone_a_failovers_answer_electing_a_replica_in_a_failed_dir_orders_the_answers() -> None:
    # Campaign seed 1269 (Kafka 3.5.2), from its ZooKeeper directory alone: t-0's replicas on brokers 2 and 4 are in
    # failed dirs (both notifications read), its leader 3 dies with controller 1. Controller 2's failover elects 2
    # uncleanly; 2's answer elects 4, whose answer is still queued; 4's answer leaves t-0 leaderless. Counting every
    # answer in at once, isrflow wrote t-0 leaderless at 2's answer: the write electing 4 orders the answers.
    z = Ensemble((1, 2, 3, 4))
    z.txn(0x9000, ZnodeOp("create", "/config/topics/t",
                          b'{"version":1,"config":{"unclean.leader.election.enable":"true"}}', 0))
    z.topic({0: [3, 2, 4]})
    z.state(0, 3, [3, 2, 4], 0)
    log_dir_failure(z, 2)
    z.state(0, 3, [3, 4], 1)
    log_dir_failure(z, 4)
    z.state(0, 3, [3], 2)
    z.close(z.sessions[1], "/brokers/ids/1", "/controller")
    z.session_end(3)  # no controller reads it: the failover finds 3 gone
    z.elect(2, 2)
    z.state(0, NO_LEADER, [3], 3)  # the failover: dead 3's replica offline (ReplicaStateMachine.startup)
    z.state(0, 2, [2], 4, recovering=True)  # its unclean election: it knows no failed dir yet
    z.state(0, 4, [4], 5, recovering=True)  # broker 2's answer
    z.state(0, NO_LEADER, [4], 6, recovering=True)  # broker 4's answer
    events, observed, decisions = replayed(z.history())
    [failover] = [e for e in events if e["type"] == "ControllerChange" and e["controller_id"] == 2]
    assert failover["answer_order"] == [2, 4]
    assert_every_history_equal(observed, decisions)


def test_a_brokers_answer_marked_before_its_notification_and_written_after_it_is_the_requests() -> None:
    # Campaign seed 1479 (Kafka 3.5.2, two log dirs): broker 3's controlled shutdown made broker 2 t1-0's leader
    # (20:54:59.546); 2's dir failed writing t1-0's leader epoch checkpoint, and the controller marked its answer
    # (.589) before 2's notification came (.613), then wrote the answer (t1-0 leaderless, .615); the notification's
    # LeaderAndIsr (.664) carried that state. The answer is its own event after the shutdown, before the
    # notification, which names nothing. Here broker 2 shuts down, 3 leads t-1 and answers.
    z = created()
    z.state(1, 3, [3, 1], 1)  # broker 2's controlled shutdown: t-1's leadership moves to 3
    z.state(0, 1, [1, 3], 1)
    at = datetime.fromtimestamp(z.txns[-1].time / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    announce_failed_dir(z, 3)
    z.state(1, 1, [1], 2)  # broker 3's answer: its replica of t-1 offline
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 1), ZnodeOp("delete", NOTIFICATION))
    z.session_end(2, clean=True)
    mark = f"[{at}] INFO [Controller id=1] Mark replicas t-1 on broker 3 as offline (state.change.logger)\n"
    converted = Converter(offline_marks=parse_offline_marks([mark])).convert(z.history())
    events = converted.events
    assert [(e["type"], e.get("change"), e.get("broker_id")) for e in events[-4:]] == [
        ("BrokerChange", "CONTROLLED_SHUTDOWN", 2), ("LeaderAndIsrResponseReceived", None, 3),
        ("LogDirEventNotification", None, 3), ("BrokerChange", "FAILURE", 2)]
    answer, notification = events[-3:-1]
    assert answer["offline_replicas"] == [{"topic": "t", "partition": 1}]
    assert notification["offline_replicas"] == []
    assert converted.observed[-1]["cause_event_id"] == answer["event_id"]
    assert not converted.unexplained


def back_after_a_dir_failed_while_down() -> Ensemble:
    """t-0 on brokers 2 and 3; both fail, 2 last (t-0 leaderless, ISR [2]); a dir of broker 2 failed while it was down
    (no notification); back, its startup elects it for t-0."""
    z = Ensemble((1, 2, 3))
    z.topic({0: [2, 3]})
    z.state(0, 2, [2, 3], 0)
    z.session_end(3)
    z.state(0, 2, [2], 1)  # 3's failure
    z.session_end(2)
    z.state(0, NO_LEADER, [2], 2)  # 2's failure: its last ISR member, leaderless
    z.register(2, 0x2002)
    z.state(0, 2, [2], 3)  # the startup elects it
    return z


def test_from_the_directory_alone_a_startups_write_leaving_its_broker_leaderless_names_a_dir_failed_while_down(
) -> None:
    # Campaign seed 1340 (Kafka 2.7.2), from its ZooKeeper directory alone: a dir of broker 2 failed while it was down
    # (no notification). Its startup elected it for t-0, its answer (KAFKA_STORAGE_ERROR) left t-0 leaderless with
    # the ISR kept; a later failover asks it again. The STARTUP names the replica, as its marks would.
    z = back_after_a_dir_failed_while_down()
    z.state(0, NO_LEADER, [2], 4)  # its answer
    z.close(z.sessions[1], "/brokers/ids/1", "/controller")
    z.elect(2, 2)
    z.state(0, 2, [2], 5)  # the failover elects it again (a new controller knows no failed dir)
    z.state(0, NO_LEADER, [2], 6)  # and its answer takes it offline again
    events, observed, decisions = replayed(z.history())
    [startup] = [e for e in events if e["type"] == "BrokerChange" and e["change"] == "STARTUP"]
    [failover] = [e for e in events if e["type"] == "ControllerChange" and e["controller_id"] == 2]
    assert startup["offline_replicas"] == [{"topic": "t", "partition": 0}]
    assert [o["cause_event_id"] for o in observed[-4:]] == [startup["event_id"]] * 2 + [failover["event_id"]] * 2
    assert_every_history_equal(observed, decisions)


def test_from_the_directory_alone_a_failovers_write_leaving_its_new_leader_leaderless_names_its_startups_answer(
) -> None:
    # Campaign seed 1240 (Kafka 2.7.2), from its ZooKeeper directory alone: a dir of broker 2 failed while it was down
    # (no notification); back, it was in no ISR, so its startup wrote nothing. Controller 3's failover elected it
    # uncleanly for t-0 and its answer left t-0 leaderless with the ISR kept: its STARTUP named that replica.
    z = Ensemble((1, 2, 3))
    z.txn(0x9000, ZnodeOp("create", "/config/topics/t",
                          b'{"version":1,"config":{"unclean.leader.election.enable":"true"}}', 0))
    z.topic({0: [1, 2]})
    z.state(0, 1, [1, 2], 0)
    z.session_end(2)
    z.state(0, 1, [1], 1)  # 2's failure
    z.register(2, 0x2002)
    z.close(z.sessions[1], "/brokers/ids/1", "/controller")
    z.elect(3, 2)
    z.state(0, NO_LEADER, [1], 2)  # the failover: dead 1's replica offline
    z.state(0, 2, [2], 3, recovering=True)  # its unclean election
    z.state(0, NO_LEADER, [2], 4, recovering=True)  # broker 2's answer
    events, observed, decisions = replayed(z.history())
    [startup] = [e for e in events if e["type"] == "BrokerChange" and e["change"] == "STARTUP"]
    [failover] = [e for e in events if e["type"] == "ControllerChange" and e["controller_id"] == 3]
    assert startup["offline_replicas"] == [{"topic": "t", "partition": 0}]
    assert [o["cause_event_id"] for o in observed[-3:]] == [failover["event_id"]] * 3
    assert_every_history_equal(observed, decisions)


def test_a_leaderless_write_after_a_broker_announced_a_failed_dir_since_its_startup_is_not_its_startups_answer(
) -> None:
    # As above, but broker 2 announces a failed dir after registering: that notification's answer names its
    # replicas, not its startup's.
    z = back_after_a_dir_failed_while_down()
    log_dir_failure(z, 2)
    z.state(0, NO_LEADER, [2], 4)
    events, observed, _ = replayed(z.history())
    [startup] = [e for e in events if e["type"] == "BrokerChange" and e["change"] == "STARTUP"]
    [notification] = [e for e in events if e["type"] == "LogDirEventNotification"]
    assert "offline_replicas" not in startup
    assert observed[-1]["cause_event_id"] == notification["event_id"]


def test_a_brokers_answer_to_a_reassignment_queued_behind_an_alter_isr_is_no_shutdown_of_its_own() -> None:
    # Campaign seed 1436 (Kafka 3.9.1): t1-0's Admin API reassignment (A1) made broker 1 write its leader epoch
    # checkpoint in a dir that failed; the controller took leader 4's AlterIsr of t0-2 first, then broker 1's
    # KAFKA_STORAGE_ERROR answer ("Mark replicas t1-0 on broker 1 as offline": t1-0 elected 4), 28 ms before broker
    # 1's notification. Here broker 2 leads t-0, reassigned from [2, 4] to [2, 3], and t-1's reassignment from [3, 1]
    # to [3, 4] completes on leader 3's AlterIsr taking 4 in.
    z = Ensemble((1, 2, 3, 4))
    z.topic({0: [2, 4], 1: [3, 1]})
    z.state(0, 2, [2, 4], 0)
    z.state(1, 3, [3, 1], 0)
    z.topic({0: [2, 3, 4], 1: [3, 4, 1]}, op="setData", adding_replicas={0: [3], 1: [4]},
            removing_replicas={0: [4], 1: [1]})  # U1
    z.state(0, 2, [2, 4], 1)  # A1's bumps
    z.state(1, 3, [3, 1], 1)
    z.state(1, 3, [3, 1, 4], 1)  # leader 3's AlterIsr, queued before the answer
    z.state(1, 3, [3, 1, 4], 2)  # the completion: B3's bump, B4's replica 1 out of the ISR, B6's assignment
    z.state(1, 3, [3, 4], 3)
    z.topic({0: [2, 3, 4], 1: [3, 4]}, op="setData", adding_replicas={0: [3]}, removing_replicas={0: [4]})
    z.state(0, 4, [4], 2)  # broker 2's answer: its replica of t-0 offline
    at = datetime.fromtimestamp(z.txns[-1].time / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    log_dir_failure(z, 2)
    mark = f"[{at}] INFO [Controller id=1] Mark replicas t-0 on broker 2 as offline (state.change.logger)\n"
    logged = Converter(offline_marks=parse_offline_marks([mark])).convert(z.history())
    events, observed, decisions = replayed(z.history())  # from the directory alone: the same
    assert events == logged.events
    assert [e["type"] for e in events[-4:]] == ["ReassignPartitions", "IsrChange", "LeaderAndIsrResponseReceived",
                                                "LogDirEventNotification"]
    assert (events[-2]["broker_id"], events[-2]["offline_replicas"]) == (2, [{"topic": "t", "partition": 0}])
    assert observed[-1]["cause_event_id"] == events[-2]["event_id"]
    assert_every_history_equal(observed, decisions)


def test_a_startups_answer_for_a_dir_failed_while_down_after_an_alter_isr_is_handled_after_it() -> None:
    # Campaign seed 1477 (Kafka 3.0.2, three log dirs): a dir of broker 3 failed while it was down (no notification).
    # Its startup (20:53:29.514) elected it for t0-1 and t1-1; leaders 2 and 4 then asked to take it back into t0-0's
    # and t0-4's ISRs (AlterIsr, written .840 and .849), and only then did the controller handle broker 3's
    # KAFKA_STORAGE_ERROR answer to the startup's LeaderAndIsr ("Mark replicas ... on broker 3", .854; its writes
    # from .867). The answer is its own event after the IsrChanges, not the startup's. Here t-0 led by 2 after its
    # startup, and leader 1's AlterIsr of t-1 taking 2 back.
    z = Ensemble((1, 2, 3))
    z.topic({0: [2, 3], 1: [1, 2]})
    z.state(0, 2, [2, 3], 0)
    z.state(1, 1, [1, 2], 0)
    z.session_end(3)
    z.state(0, 2, [2], 1)  # 3's failure
    z.session_end(2)
    z.state(0, NO_LEADER, [2], 2)  # 2's failure: t-0 leaderless, 2 out of t-1's ISR
    z.state(1, 1, [1], 1)
    z.register(2, 0x2002)
    z.state(0, 2, [2], 3)  # the startup elects 2
    z.state(1, 1, [1, 2], 1)  # leader 1's AlterIsr, written by the controller
    at = datetime.fromtimestamp(z.now / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    z.state(0, NO_LEADER, [2], 4)  # the answer
    mark = f"[{at}] INFO [Controller id=1] Mark replicas t-0 on broker 2 as offline (state.change.logger)\n"
    converted = Converter(offline_marks=parse_offline_marks([mark])).convert(z.history())
    events = converted.events
    assert [e["type"] for e in events[-3:]] == ["BrokerChange", "IsrChange", "LeaderAndIsrResponseReceived"]
    startup, answer = events[-3], events[-1]
    assert startup["storage_error_answer_queued"] is True
    assert (answer["broker_id"], answer["offline_replicas"]) == (2, [{"topic": "t", "partition": 0}])
    assert converted.observed[-1]["cause_event_id"] == answer["event_id"]
    assert not converted.unexplained
    # From the directory alone: the write after the IsrChange that leaves the startup's election leaderless is the
    # answer, after it (the startup names nothing).
    events, observed, decisions = replayed(z.history())
    assert [e["type"] for e in events[-3:]] == ["BrokerChange", "IsrChange", "LeaderAndIsrResponseReceived"]
    assert "offline_replicas" not in events[-3]
    assert events[-1]["offline_replicas"] == [{"topic": "t", "partition": 0}]
    assert observed[-1]["cause_event_id"] == events[-1]["event_id"]
    assert_every_history_equal(observed, decisions)
