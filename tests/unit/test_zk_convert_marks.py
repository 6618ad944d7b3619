"""The ZooKeeper importer on the controllers' `Mark replicas ... as offline` lines: which event a mark answers
(hand-written transactions, tests.unit.zk_ensemble, and marks as the state-change logs hold them)."""

from __future__ import annotations

from pathlib import Path

from streaming.zookeeper.convert import Converter
from streaming.zookeeper.statechange import parse_offline_marks
from streaming.zookeeper.txnlog import ZkHistory, ZkSnapshot, Znode, ZnodeOp

from .test_zk_convert_dirs import log_dir_failure
from .zk_ensemble import Ensemble, assert_every_history_equal, created, mark_line, replayed


def test_a_notification_takes_only_a_mark_of_the_controller_that_read_it() -> None:
    # Campaign seed 1291 (Kafka 2.8.2): broker 1's notification, read by controller 1, named nothing new (no mark);
    # 28 s and two failovers later controller 2 marked t1-0 on broker 1, its answer to a reassignment.
    lines = [mark_line(1_000_000 + 27_742, "t1-0", 1, 2), mark_line(1_000_000 + 27_800, "t1-1", 1)]
    assert parse_offline_marks(lines).answer(1, 1_000_000, reader=1) == {("t1", 1)}
    marks = parse_offline_marks(lines)
    assert marks.answer(1, 1_000_000, reader=3) is None
    assert marks.request_answer(1, ("t1", 0), 1_000_000 + 27_723, 1_000_000 + 28_723)  # left for the request
    assert parse_offline_marks(lines).answer(1, 1_000_000) == {("t1", 0)}  # the reader unknown: the first


def _failover_after_notification() -> Ensemble:
    """Controller 1 reads broker 2's notification (deleting it), then dies; broker 3's failover; 5 s later a mark of
    t-0 on broker 2 (by the controller given to `mark_line`)."""
    z = Ensemble()
    z.topic({0: [2, 1, 3]})
    z.state(0, 2, [2, 1, 3], 0)
    log_dir_failure(z, 2)
    z.wait(1_000)  # controller 1 dies a second later
    z.close(z.sessions[1], "/brokers/ids/1", "/controller")
    z.elect(3, 2)
    z.wait(5_000)
    return z


def test_a_later_controllers_mark_of_the_broker_is_not_its_read_notifications_answer() -> None:
    for marked_by, named in ((1, [{"topic": "t", "partition": 0}]), (3, [])):
        z = _failover_after_notification()
        marks = parse_offline_marks([mark_line(z.now, "t-0", 2, marked_by)])
        [event] = [e for e in Converter(offline_marks=marks).convert(z.history()).events
                   if e["type"] == "LogDirEventNotification"]
        assert event["offline_replicas"] == named, marked_by


def test_a_controller_elected_before_the_retained_history_reads_notifications_too() -> None:
    # The history starts at a snapshot holding /controller (broker 1's session): controller 1 still read broker 2's
    # notification, and controller 3's later mark is not its answer.
    z = _failover_after_notification()
    seeded = 4  # the registrations and controller 1's election, in the snapshot
    nodes = {f"/brokers/ids/{b}": Znode(f"/brokers/ids/{b}", b"{}", 0, b, b, z.sessions[b]) for b in (1, 2, 3)}
    nodes["/controller"] = Znode("/controller", b'{"brokerid":1}', 0, seeded, seeded, z.sessions[1])
    nodes["/controller_epoch"] = Znode("/controller_epoch", b"1", 1, seeded, seeded, 0)
    history = ZkHistory(ZkSnapshot(seeded, nodes, {}, Path("snapshot.4")), z.txns[seeded:], [], "test")
    marks = parse_offline_marks([mark_line(z.now, "t-0", 2, 3)])
    [event] = [e for e in Converter(offline_marks=marks).convert(history).events
               if e["type"] == "LogDirEventNotification"]
    assert event["offline_replicas"] == []


def _two_answers(second_mark: bool) -> list[dict[str, object]]:
    """Broker 2's dir fails; controller 1 reads its notification. A first mark (t-0, an earlier request's answer)
    takes 2 out of t-0's ISR; with `second_mark` a later one (t-1, the notification's own answer) moves t-1's
    leadership off 2."""
    z = Ensemble()
    z.topic({0: [1, 2, 3], 1: [2, 1, 3]})
    z.state(0, 1, [1, 2, 3], 0)
    z.state(1, 2, [2, 1, 3], 0)
    log_dir_failure(z, 2)
    lines = [mark_line(z.now + 40, "t-0", 2)]
    z.wait(50)
    z.state(0, 1, [1, 3], 1)
    if second_mark:
        lines.append(mark_line(z.now + 20, "t-1", 2))
    z.wait(30)
    z.state(1, 1, [1, 3], 1)
    return Converter(offline_marks=parse_offline_marks(lines)).convert(z.history()).events


def test_a_later_mark_of_the_notifications_broker_is_its_own_answer() -> None:
    # Campaign seed 1372 (Kafka 3.9.1 at protocol 2.6): broker 4's answer to an earlier LeaderAndIsr marked t0-1 after
    # its notification was read, its answer to the notification's marked t1-1, its leader, 23 ms later.
    events = _two_answers(second_mark=True)
    [notification] = [e for e in events if e["type"] == "LogDirEventNotification"]
    assert notification["offline_replicas"] == [{"topic": "t", "partition": 0}]
    after = events[events.index(notification) + 1]
    assert (after["type"], after["broker_id"], after["offline_replicas"]) == \
        ("LeaderAndIsrResponseReceived", 2, [{"topic": "t", "partition": 1}])
    assert not [e for e in events if e.get("change") == "CONTROLLED_SHUTDOWN"]
    # Without the second mark the write is broker 2's controlled shutdown, as before.
    assert [e["broker_id"] for e in _two_answers(second_mark=False) if e.get("change") == "CONTROLLED_SHUTDOWN"] == [2]


def _startup_resuming_a_reassignment(adding: dict[int, list[int]], alter_isr: bool = False
                                     ) -> list[dict[str, object]]:
    """t-0 on brokers 1, 2, 3, with `adding` its reassignment's adding replicas; broker 2's dir fails, its
    notification answered for t-1; broker 3 dies and registers again (with `alter_isr`, leader 1's AlterIsr taking
    3 back into t-2's ISR is written right after), and 100 ms later controller 1 marks t-0 on broker 2."""
    z = Ensemble()
    z.topic({0: [1, 2, 3], 1: [2, 1], 2: [1, 3]}, **({"adding_replicas": adding} if adding else {}))
    z.state(0, 1, [1, 2], 0)
    z.state(1, 2, [2, 1], 0)
    z.state(2, 1, [1], 0)
    log_dir_failure(z, 2)
    lines = [mark_line(z.now + 10, "t-1", 2)]
    z.wait(50)
    z.state(1, 1, [1], 1)
    z.session_end(3)
    z.wait(1_000)
    z.register(3, session=0x2003)
    if alter_isr:
        z.state(2, 1, [1, 3], 0)
    lines.append(mark_line(z.now + 100, "t-0", 2))
    return Converter(offline_marks=parse_offline_marks(lines)).convert(z.history()).events


def test_another_brokers_answer_to_a_reassignment_a_startup_resumed_follows_the_startup() -> None:
    # Campaign seed 1426 (Kafka 3.9.1): broker 3's startup resumed t1-0's reassignment (its target replicas include
    # 3: maybeResumeReassignments), whose LeaderAndIsr went to every replica; broker 4, its dir failed, answered
    # KAFKA_STORAGE_ERROR for t1-0 (marked 97 ms after the registration): its own event right after the startup.
    events = _startup_resuming_a_reassignment({0: [3]})
    [startup] = [e for e in events if e.get("change") == "STARTUP"]
    after = events[events.index(startup) + 1]
    assert (after["type"], after["broker_id"], after["offline_replicas"]) == \
        ("LeaderAndIsrResponseReceived", 2, [{"topic": "t", "partition": 0}])
    # No reassignment in progress: the startup resumes none, asks broker 2 nothing, and the mark answers no request.
    assert not [e for e in _startup_resuming_a_reassignment({}) if e["type"] == "LeaderAndIsrResponseReceived"]


def test_a_notifications_answer_written_after_a_topic_creation_handled_meanwhile_goes_after_the_creation() -> None:
    # Campaign seed 1535 (Kafka 2.8.2): controller 4 read broker 3's notification (00:10:15.351, its LeaderAndIsr to
    # broker 3), then t7's creation, which came meanwhile (t7-0 written .379), then broker 3's answer ("Mark replicas
    # t0-0,t1-0 on broker 3 as offline", .382): t0-0 and t1-0 without 3, and their UpdateMetadata after t7-0's. The
    # answer is handled after the creation: its own event there. Here broker 3's notification, then topic u created,
    # then the answer naming t-0 and t-1.
    z = created()
    log_dir_failure(z, 3)
    z.txn(z.sessions[2], ZnodeOp("create", "/brokers/topics/u", b'{"partitions":{"0":[2]},"version":3}', 0))
    z.state(0, 2, [2], 0, topic="u")  # onNewPartitionCreation
    z.state(0, 1, [1, 2], 1)  # the answer: 3 out of t-0's ISR
    z.state(1, 2, [2, 1], 1)  # and t-1's
    mark = mark_line(z.txns[-2].time, "t-0,t-1", 3)
    converted = Converter(offline_marks=parse_offline_marks([mark])).convert(z.history())
    events = converted.events
    assert [e["type"] for e in events[-3:]] == ["LogDirEventNotification", "CreateTopic",
                                                "LeaderAndIsrResponseReceived"]
    assert events[-3]["offline_replicas"] == []
    assert (events[-1]["broker_id"], events[-1]["offline_replicas"]) == (
        3, [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}])
    assert [o["cause_event_id"] for o in converted.observed[-2:]] == [events[-1]["event_id"]] * 2
    assert not converted.unexplained
    # From the directory alone (no mark) the same: the answer's writes come after the creation's (seed 1575).
    events = Converter().convert(z.history()).events
    assert [e["type"] for e in events[-3:]] == ["LogDirEventNotification", "CreateTopic",
                                                "LeaderAndIsrResponseReceived"]
    assert events[-3]["offline_replicas"] == []
    assert events[-1]["offline_replicas"] == [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}]


def test_another_brokers_answer_to_a_resumed_reassignment_marked_after_an_alter_isr_is_handled_after_it() -> None:
    # Campaign seed 1550 (Kafka 2.7.2): broker 4's startup resumed t0-0's reassignment (00:29:40.177); leader 1's
    # AlterIsr of t4-1, t3-0 and t4-0 was written at .185 (its UpdateMetadata .191); broker 1's KAFKA_STORAGE_ERROR
    # answer was marked at .197: handled after the AlterIsr, its requests after the AlterIsr's.
    events = _startup_resuming_a_reassignment({0: [3]}, alter_isr=True)
    assert [e["type"] for e in events[-3:]] == ["BrokerChange", "IsrChange", "LeaderAndIsrResponseReceived"]
    assert (events[-1]["broker_id"], events[-1]["offline_replicas"]) == (2, [{"topic": "t", "partition": 0}])


def test_a_notifications_answer_after_an_admin_preferred_election_handled_meanwhile_goes_after_it() -> None:
    # Campaign seed 1575 (Kafka 2.8.2): controller 4 read broker 3's notification (01:02:55.700), then an Admin API
    # preferred election that came meanwhile, which made 3 t1-1's leader again (written .719), then broker 3's
    # answer (mark .796): t1-1 to 4, without 3 (.817). The answer goes after the election, with the marks and from
    # the directory alone; isrflow had taken t1-1 offline on 3 first, so the election had nothing to elect. Here t-0
    # led by 1 after broker 3's failure and restart, its preferred replica 3.
    z = Ensemble()
    z.topic({0: [3, 1, 2]})
    z.state(0, 3, [3, 1, 2], 0)
    z.session_end(3)
    z.state(0, 1, [1, 2], 1)
    z.register(3, session=0x2003)
    z.state(0, 1, [1, 2, 3], 1)  # leader 1's AlterIsr
    log_dir_failure(z, 3)
    z.state(0, 3, [1, 2, 3], 2)  # the preferred election: no znode
    z.state(0, 1, [1, 2], 3)  # the answer
    mark = mark_line(z.txns[-1].time - 1, "t-0", 3)
    for marks in ([mark], None):
        converted = Converter(offline_marks=parse_offline_marks(marks) if marks else None).convert(z.history())
        events = converted.events
        assert [e["type"] for e in events[-3:]] == ["LogDirEventNotification", "ElectLeaders",
                                                    "LeaderAndIsrResponseReceived"], marks
        assert events[-3]["offline_replicas"] == []
        assert events[-1]["offline_replicas"] == [{"topic": "t", "partition": 0}]
    events, observed, decisions = replayed(z.history())
    assert_every_history_equal(observed, decisions)
