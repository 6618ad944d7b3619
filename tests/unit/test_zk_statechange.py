"""streaming/zookeeper/statechange.py on real state-change logs of a ZooKeeper-mode cluster (tests/unit/zkdata/
statechange/: controller 2's and broker 1's, while broker 1 was killed, restarted and its topic deleted)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from streaming.zookeeper.statechange import (
    LEADER_AND_ISR,
    STOP_REPLICA,
    UPDATE_METADATA,
    ControlRequest,
    PartitionInRequest,
    parse_state_change_log,
    read_state_change_log,
)

DATA = Path(__file__).parent / "zkdata" / "statechange"
CONTROLLER = read_state_change_log(DATA / "controller-2.state-change.log")
BROKER = read_state_change_log(DATA / "broker-1.state-change.log")


def sent(to: int, kind: str) -> list[ControlRequest]:
    return [r for r in CONTROLLER.requests if r.direction == "sent" and r.broker == to and r.request == kind]


def essentials(r: ControlRequest) -> list[tuple[object, ...]]:
    """What both sides of a request log of each partition."""
    return [(p.topic, p.partition, p.leader, p.leader_epoch, p.isr, p.zk_version, p.replicas, p.is_new, p.delete)
            for p in r.partitions]


def test_the_controllers_leader_and_isr_requests_hold_each_partitions_state_for_the_target_broker() -> None:
    [created, after_restart] = sent(1, LEADER_AND_ISR)
    assert (created.controller_id, created.controller_epoch, created.partition_count) == (2, 1, 2)
    assert created.time == datetime(2026, 11, 25, 3, 34, 15, 339000)
    assert created.correlation_id is None  # the controller's line does not name it
    assert created.partitions == (
        PartitionInRequest("t", 1, leader=2, leader_epoch=0, isr=(2, 3, 1), zk_version=0, replicas=(2, 3, 1),
                           controller_epoch=1, is_new=True, leader_recovery_state=0, become="follower"),
        PartitionInRequest("t", 0, leader=1, leader_epoch=0, isr=(1, 2, 3), zk_version=0, replicas=(1, 2, 3),
                           controller_epoch=1, is_new=True, leader_recovery_state=0, become="leader"))
    # Back after kill -9: it follows broker 2, which leads both at epoch 1, the dead broker out of the ISR.
    assert [(p.partition, p.leader, p.leader_epoch, p.isr, p.zk_version, p.is_new, p.become)
            for p in after_restart.partitions] == [(1, 2, 1, (2, 3), 1, False, "follower"),
                                                   (0, 2, 1, (2, 3), 1, False, "follower")]


def test_every_sent_request_holds_as_many_partitions_as_its_summary_line_counts() -> None:
    requests = [r for r in CONTROLLER.requests if r.direction == "sent"]
    assert {r.request for r in requests} == {LEADER_AND_ISR, UPDATE_METADATA, STOP_REPLICA}
    for r in requests:
        if r.request == UPDATE_METADATA:  # the controller lists no partitions of it, only their count
            assert r.partitions == () and r.partition_count is not None
        else:
            assert r.partition_count == len(r.partitions) > 0, r


def test_update_metadata_goes_to_each_broker_named_and_its_receivers_list_the_partitions() -> None:
    line = ("[2026-11-25 03:34:24,515] INFO [Controller id=2 epoch=1] Sending UpdateMetadata request to brokers "
            "HashSet(1, 2, 3) for 2 partitions (state.change.logger)")
    assert [(r.broker, r.partition_count) for r in parse_state_change_log([line]).requests] == [(1, 2), (2, 2), (3, 2)]
    received = [r for r in BROKER.requests if r.request == UPDATE_METADATA]
    assert [r.correlation_id for r in received] == [0, 2, 3, 4, 5]
    assert all(r.partition_count == len(r.partitions) for r in received)
    # The topic's deletion: its partitions leave the broker's metadata cache.
    assert received[-1].partitions == (PartitionInRequest("t", 1, delete=True), PartitionInRequest("t", 0, delete=True))


def test_what_the_broker_received_is_what_the_controller_sent_it() -> None:
    for kind in (LEADER_AND_ISR, STOP_REPLICA):
        got = [r for r in BROKER.requests if r.request == kind]
        assert got and all((r.controller_id, r.controller_epoch, r.broker) == (2, 1, 1) for r in got)
        assert [essentials(r) for r in got] == [essentials(r) for r in sent(1, kind)], kind
        assert all(r.time > s.time for r, s in zip(got, sent(1, kind), strict=True))


def test_a_correlation_id_the_controller_uses_again_after_a_restart_starts_a_new_request() -> None:
    # The controller numbers its requests to a broker from 0 again when the broker comes back.
    got = [r for r in BROKER.requests if r.request == LEADER_AND_ISR]
    assert [(r.correlation_id, r.partition_count, len(r.partitions)) for r in got] == [(1, 2, 2), (1, 2, 2)]


def test_stop_replica_carries_the_delete_flag_per_partition_and_before_version_3_per_request() -> None:
    # Topic deletion: first without deleting (the replicas go offline), then deleting; leader epoch -2 (deleting).
    [offline, delete] = sent(1, STOP_REPLICA)
    assert [(p.partition, p.leader_epoch, p.delete) for p in offline.partitions] == [(1, -2, False), (0, -2, False)]
    assert [p.delete for p in delete.partitions] == [True, True] and offline.delete is delete.delete is None
    # inter.broker.protocol.version 2.5: one request per flag, which the summary line names.
    old = read_state_change_log(DATA / "controller-2-ibp2.5.state-change.log")
    requests = [r for r in old.requests if r.direction == "sent" and r.request == STOP_REPLICA]
    assert [(r.broker, r.delete) for r in requests] == [(1, False), (2, False), (3, False), (1, True), (2, True),
                                                         (3, True)]
    assert all(p.delete == r.delete for r in requests for p in r.partitions)


def test_responses_name_the_broker_the_correlation_id_and_the_error() -> None:
    to_broker_1 = [(r.request, r.correlation_id, r.error_code) for r in CONTROLLER.responses if r.broker == 1]
    assert to_broker_1 == [(UPDATE_METADATA, 0, 0), (UPDATE_METADATA, 0, 0), (LEADER_AND_ISR, 1, 0),
                           (UPDATE_METADATA, 2, 0), (UPDATE_METADATA, 3, 0), (UPDATE_METADATA, 4, 0),
                           (UPDATE_METADATA, 5, 0), (STOP_REPLICA, 6, 0), (STOP_REPLICA, 7, 0)]
    assert all(r.controller_id == 2 and r.controller_epoch == 1 for r in CONTROLLER.responses)


def test_other_lines_are_counted_not_read() -> None:
    log = parse_state_change_log([
        "[2026-11-25 03:34:15,339] TRACE [Controller id=2 epoch=1] Changed state of replica 1 for partition t-0 "
        "from NewReplica to OnlineReplica (state.change.logger)",
        "kafka.common.StateChangeFailedException: Failed to elect leader for partition t-0",
        "\tat kafka.controller.ZkPartitionStateMachine.doHandleStateChanges(PartitionStateMachine.scala:1)",
    ])
    assert (log.requests, log.responses, log.other_lines) == ([], [], 3)
    assert BROKER.other_lines > 0 and CONTROLLER.other_lines > 0
