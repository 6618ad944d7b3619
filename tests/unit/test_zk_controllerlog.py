"""streaming/zookeeper/controllerlog.py on the real controller.log files of a ZooKeeper-mode cluster's three brokers
(tests/unit/zkdata/controller/: broker 1 the first controller, through two brokers' deaths and restarts; broker 3 the
next one after broker 1 was killed; broker 2 elected at epoch 3 after that)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from streaming.zookeeper.controllerlog import BrokerRead, parse_controller_log, read_controller_logs

DATA = Path(__file__).parent / "zkdata" / "controller"


def test_each_failovers_read_of_the_registrations_is_keyed_by_its_controller_epoch() -> None:
    reads = read_controller_logs(DATA)
    assert reads.failovers == {1: {1: 57, 2: 60, 3: 61}, 2: {2: 97, 3: 116}, 3: {2: 97}}


def test_each_brokerchange_read_names_the_brokers_it_found_new_dead_or_bounced_in_order() -> None:
    reads = read_controller_logs(DATA)
    assert [(r.controller_id, r.new, r.dead, r.bounced) for r in reads.broker_reads[1]] == [
        (1, (), (2,), ()), (1, (), (3,), ()), (1, (2,), (), ()), (1, (3,), (), ())]
    assert reads.broker_reads[2] == [BrokerRead(3, 2, datetime(2026, 11, 25, 12, 48, 47, 907000), (1,), (), ())]
    # Every other line (DEBUG lines, request threads, stack traces) is counted, not read.
    assert reads.other_lines > 400


def test_a_read_before_any_election_in_a_file_belongs_to_no_epoch() -> None:
    line = ("[2026-11-25 12:48:35,528] INFO [Controller id=1] Newly added brokers: , deleted brokers: 2, bounced "
            "brokers: , all live brokers: 1,3 (kafka.controller.KafkaController)")
    reads = parse_controller_log([line])
    assert not reads and reads.other_lines == 1


def _line(time: str, msg: str, level: str = "INFO") -> str:
    return f"[2026-11-27 05:21:{time}] {level} [Controller id=1] {msg} (kafka.controller.KafkaController)"


def _stop_replica_answer(time: str, broker: int, errors: str, map_type: str = "Map") -> str:
    """The controller's DEBUG line for a broker's StopReplica (delete) answer; `errors`: `T-P -> ERROR, ...`."""
    return _line(time, f"Delete topic callback invoked on StopReplica response received from broker {broker}: request "
                       f"error = NONE, partition errors = {map_type}({errors})", "DEBUG")


ELECTED = _line("10,048", "1 successfully elected as the controller. Epoch incremented to 4 and epoch zk version is "
                          "now 4")
ANSWER_T4 = _stop_replica_answer("31,431", 1, "t4-1 -> NONE, t4-0 -> NONE")


def test_a_stop_replica_answer_logged_after_a_later_deletion_read_is_that_reads() -> None:
    # Campaign seed 1042 (controller 1's controller.log): t4 read alone, then t0 and t1; broker 1's answer for t4
    # came after the second read, which it goes with.
    reads = parse_controller_log([ELECTED, _line("31,357", "Starting topic deletion for topics t4"),
                                  _line("31,378", "Starting topic deletion for topics t4,t0,t1"), ANSWER_T4])
    assert reads.deletion_reads == {4: [frozenset({"t4"}), frozenset({"t0", "t1"})]}
    assert reads.late_answers == {4: {1: frozenset({"t4"})}}


def test_an_answer_before_the_next_read_or_after_a_broker_read_is_not_late() -> None:
    first = [ELECTED, _line("31,357", "Starting topic deletion for topics t4")]
    later = _line("31,378", "Starting topic deletion for topics t4,t0,t1")
    assert not parse_controller_log([*first, ANSWER_T4, later]).late_answers
    # A startup since the read resumes the deletion with requests of its own: the answer may be theirs.
    startup = _line("31,370", "Newly added brokers: 2, deleted brokers: , bounced brokers: , all live brokers: 1,2")
    assert not parse_controller_log([*first, startup, later, ANSWER_T4]).late_answers


def test_the_stop_replica_answers_after_a_broker_read_name_their_brokers_in_order() -> None:
    # Seed 1105: broker 3's startup resumed the deletion of t4, t0 and t3; broker 3 answered (KAFKA_STORAGE_ERROR),
    # then broker 4, then broker 1. After the next read of /admin/delete_topics an answer is that read's.
    startup = _line("25,367", "Newly added brokers: 3, deleted brokers: , bounced brokers: , all live brokers: 1,2,3,4")
    answers = [_stop_replica_answer(f"25,4{i}0", b, "t0-1 -> NONE", "HashMap") for i, b in enumerate((3, 3, 4, 1))]
    reads = parse_controller_log([ELECTED, startup, *answers, _line("26,000", "Starting topic deletion for topics t5"),
                                  ANSWER_T4])
    assert [r.answers for r in reads.broker_reads[4]] == [[3, 3, 4, 1]]
    # When each was logged (ms as UTC): seed 1417's came after later events (context.answers_behind).
    assert reads.broker_reads[4][0].answered_at[:3] == [
        int(datetime(2026, 11, 27, 5, 21, 25, ms * 1000, tzinfo=UTC).timestamp() * 1000) for ms in (400, 410, 420)]


def test_a_storage_error_answer_to_a_reads_own_deletion_names_its_broker_and_replicas() -> None:
    # Campaign seed 1274 (Kafka 3.9.1): broker 2's dir failed as it deleted t2-0; its answer to the read's StopReplica
    # is that read's, not one after a startup's resumed deletion, nor one naming no KAFKA_STORAGE_ERROR.
    read = [ELECTED, _line("43,308", "Starting topic deletion for topics t2")]
    failed = _stop_replica_answer("43,361", 2, "t2-0 -> KAFKA_STORAGE_ERROR")
    ok = _stop_replica_answer("43,369", 4, "t2-0 -> NONE")
    assert parse_controller_log([*read, failed, ok]).storage_error_answers == {4: {0: {2: frozenset({("t2", 0)})}}}
    startup = _line("43,340", "Newly added brokers: 2, deleted brokers: , bounced brokers: , all live brokers: 1,2")
    assert not parse_controller_log([*read, startup, failed]).storage_error_answers
    assert not parse_controller_log([*read, ok]).storage_error_answers


def test_a_failed_brokers_notification_before_another_answer_to_the_read_is_noted() -> None:
    # Campaign seed 1412 (Kafka 3.9.1): broker 3 answered t2-1's deletion with KAFKA_STORAGE_ERROR; the controller
    # handled its notification (04,273) before broker 1's answer (04,288). Not when the answers were in before it
    # (seed 1274), nor for a broker that failed nothing.
    read = [ELECTED, _line("04,141", "Starting topic deletion for topics t2")]
    failed = _stop_replica_answer("04,256", 3, "t2-1 -> KAFKA_STORAGE_ERROR")
    ok = _stop_replica_answer("04,288", 1, "t2-1 -> NONE, t2-0 -> NONE")
    notified = _line("04,273", "Handling log directory failure for brokers 3")
    assert parse_controller_log([*read, failed, notified, ok]).notified_before_answers == {4: {0: {3}}}
    assert not parse_controller_log([*read, failed, ok, notified]).notified_before_answers
    other = _line("04,273", "Handling log directory failure for brokers 2")
    assert not parse_controller_log([*read, failed, other, ok]).notified_before_answers


def test_each_read_of_log_dir_notifications_names_its_brokers_and_a_failovers_own_call_none() -> None:
    # Kafka 2.8.2 (campaign seed 1435): onBrokerLogDirFailure logs the brokers whose notifications it read; a
    # failover calls it with none.
    at = "[2026-11-27 18:04:32,019] INFO [Controller id=3] "
    reads = parse_controller_log([f"{at}3 successfully elected as the controller. Epoch incremented to 1 and epoch zk "
                                  "version is now 1", f"{at}Handling log directory failure for brokers 1,4",
                                  f"{at}Handling log directory failure for brokers "])
    assert reads.log_dir_reads == {1: [(int(datetime(2026, 11, 27, 18, 4, 32, 19000, UTC).timestamp() * 1000),
                                        (1, 4))]}
