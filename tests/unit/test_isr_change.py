"""IsrChange (AlterPartition) from a partition's leader, checked in Kafka's order.

JSON events in (through `parse_event`), decisions and audit rows out (through `Controller.handle`), for the
triggers of docs/semantics.md."""

from __future__ import annotations

import pytest

from statemachine.states import PartitionState, ReplicaState

from .cluster import Cluster, assert_rejected, assert_unchanged, cluster_with, snapshot

P = PartitionState
R = ReplicaState


# =====================================================================================================
# IsrChange (AlterPartition), checked in Kafka's order
# =====================================================================================================

@pytest.fixture
def isr_cluster() -> Cluster:
    """t-0 on [2, 3, 4, 1], led by 2. Broker 4 failed and broker 1 is shutting down (both left the ISR),
    then the leader shrank the ISR to itself: leader 2, ISR [2], leader_epoch 2, partition_epoch 3.
    Broker 3 is live and outside the ISR: the natural request is [2, 3]."""
    cluster = cluster_with(1, 2, 3, 4)
    cluster.create("t", [2, 3, 4, 1])
    cluster.failure(4)
    cluster.shutdown(1)
    assert cluster.isr_change("t", 0, [2]).only_row.outcome == "ACCEPTED"
    rec = cluster.rec("t", 0)
    assert (rec.leader, rec.isr, rec.leader_epoch, rec.partition_epoch) == (2, (2,), 2, 3)
    return cluster


def test_isr_change_accepted_bumps_only_the_partition_epoch(isr_cluster: Cluster) -> None:
    out = isr_cluster.isr_change("t", 0, [2, 3])
    d = out.decision("t", 0)
    assert (d.leader, d.isr, d.leader_epoch, d.partition_epoch) == (2, (2, 3), 2, 4)
    assert (d.election, d.is_new, d.recipients) == (None, False, (2,))
    assert d.cause == "IsrChange"
    row = out.row("t", 0)
    assert (row.outcome, row.error, row.from_state, row.to_state) == (
        "ACCEPTED", None, "OnlinePartition", "OnlinePartition")
    assert (row.isr_before, row.isr_after) == ((2,), (2, 3))
    assert (row.leader_epoch_before, row.leader_epoch_after) == (2, 2)
    assert (row.partition_epoch_before, row.partition_epoch_after) == (3, 4)


@pytest.mark.parametrize("partition_epoch", [3, 2, 0])
def test_isr_change_already_applied_is_an_idempotent_no_op(isr_cluster: Cluster, partition_epoch: int) -> None:
    before = snapshot(isr_cluster)
    out = isr_cluster.isr_change("t", 0, [2], partition_epoch=partition_epoch)
    assert out.only_row.outcome == "NO_OP"
    assert out.only_row.error is None
    assert out.decisions == []
    assert_unchanged(isr_cluster, before)


def test_isr_change_retried_after_acceptance_is_a_no_op(isr_cluster: Cluster) -> None:
    first = isr_cluster.isr_change("t", 0, [2, 3], partition_epoch=3)
    assert first.only_row.outcome == "ACCEPTED"
    again = isr_cluster.isr_change("t", 0, [2, 3], partition_epoch=3)
    assert again.only_row.outcome == "NO_OP"
    assert isr_cluster.rec("t", 0).partition_epoch == 4


# request overrides -> the error. Several cases break more than one rule: the first rule of docs/semantics.md's
# order must win.
ISR_ERRORS: dict[str, tuple[dict, str]] = {
    "unknown sender": ({"broker": 9, "broker_epoch": 10}, "STALE_BROKER_EPOCH"),
    "older broker epoch": ({"broker_epoch": 1}, "STALE_BROKER_EPOCH"),
    "newer broker epoch": ({"broker_epoch": 999}, "STALE_BROKER_EPOCH"),
    "stale sender beats unknown partition": ({"partition": 5, "broker_epoch": 1}, "STALE_BROKER_EPOCH"),
    "unknown partition": ({"partition": 5}, "UNKNOWN_TOPIC_OR_PARTITION"),
    "unknown topic": ({"topic": "nope"}, "UNKNOWN_TOPIC_OR_PARTITION"),
    "unknown partition beats epochs ahead": ({"partition": 5, "leader_epoch": 99}, "UNKNOWN_TOPIC_OR_PARTITION"),
    "leader epoch ahead": ({"leader_epoch": 3}, "NOT_CONTROLLER"),
    "partition epoch ahead": ({"partition_epoch": 4}, "NOT_CONTROLLER"),
    "partition epoch ahead beats leader epoch behind": ({"leader_epoch": 1, "partition_epoch": 4},
                                                         "NOT_CONTROLLER"),
    "leader epoch behind": ({"leader_epoch": 1}, "FENCED_LEADER_EPOCH"),
    "leader epoch behind beats partition epoch behind": ({"leader_epoch": 1, "partition_epoch": 2},
                                                         "FENCED_LEADER_EPOCH"),
    "partition epoch behind": ({"partition_epoch": 2}, "INVALID_UPDATE_VERSION"),
    "partition epoch behind beats recovering with several": ({"partition_epoch": 2, "recovery": "RECOVERING"},
                                                             "INVALID_UPDATE_VERSION"),
    "recovering with several ISR members": ({"recovery": "RECOVERING"}, "INVALID_REQUEST"),
    "recovered to recovering": ({"isr": [2], "recovery": "RECOVERING", "partition_epoch": 3}, "INVALID_REQUEST"),
    "invalid request beats ineligible replica": ({"isr": [2, 4], "recovery": "RECOVERING"}, "INVALID_REQUEST"),
    "ISR member on a dead broker": ({"isr": [2, 4]}, "INELIGIBLE_REPLICA"),
    "ISR member on a shutting-down broker": ({"isr": [2, 3, 1]}, "INELIGIBLE_REPLICA"),
}


@pytest.mark.parametrize("case", list(ISR_ERRORS))
def test_isr_change_validation_order(isr_cluster: Cluster, case: str) -> None:
    overrides, error = ISR_ERRORS[case]
    overrides = dict(overrides)
    topic = overrides.pop("topic", "t")
    partition = overrides.pop("partition", 0)
    isr = overrides.pop("isr", [2, 3])
    overrides.setdefault("broker", 2)
    overrides.setdefault("leader_epoch", 2)
    overrides.setdefault("partition_epoch", 3)
    before = snapshot(isr_cluster)
    out = isr_cluster.isr_change(topic, partition, isr, **overrides)
    row = out.only_row
    assert_rejected(row, error)
    # The rejection is audited on the partition's own row, not as a cluster row.
    assert (row.topic, row.partition) == (topic, partition)
    assert out.decisions == []
    assert_unchanged(isr_cluster, before)


def test_isr_change_for_a_partition_that_never_had_a_leader(isr_cluster: Cluster) -> None:
    isr_cluster.create("fresh", [7])
    out = isr_cluster.isr_change("fresh", 0, [7], broker=2, leader_epoch=0, partition_epoch=0)
    assert_rejected(out.only_row, "UNKNOWN_TOPIC_OR_PARTITION")


@pytest.mark.parametrize(("broker", "isr"), [
    (3, [3, 2]),  # sent by a follower
    (2, [3]),  # the leader left itself out
    (2, [2, 2]),  # duplicates
    (2, [2, 5]),  # 5 is not a replica
])
def test_isr_change_beyond_the_spec_list_is_refused_as_invalid_request(isr_cluster: Cluster, broker: int,
                                                                       isr: list[int]) -> None:
    # KRaft's further AlterPartition checks: they keep "leader in ISR, ISR within replicas" true.
    isr_cluster.start(5)
    out = isr_cluster.isr_change("t", 0, isr, broker=broker, leader_epoch=2, partition_epoch=3)
    assert_rejected(out.only_row, "INVALID_REQUEST")


def test_unclean_leader_recovers_through_its_isr_change() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.isr_change("t", 0, [1])
    cluster.failure(1)
    cluster.elect("UNCLEAN", ("t", 0))
    rec = cluster.rec("t", 0)
    assert (rec.leader, rec.leader_recovery_state) == (2, "RECOVERING")
    # Still recovering, alone in the ISR: the leader confirms, nothing to do.
    assert cluster.isr_change("t", 0, [2], recovery="RECOVERING").only_row.outcome == "NO_OP"
    # Recovery done.
    out = cluster.isr_change("t", 0, [2])
    d = out.decision("t", 0)
    assert (d.leader_recovery_state, d.leader_epoch, d.partition_epoch) == (
        "RECOVERED", rec.leader_epoch, rec.partition_epoch + 1)
    # Only then may the ISR grow.
    cluster.startup(1)
    assert cluster.isr_change("t", 0, [2, 1]).only_row.outcome == "ACCEPTED"


def test_a_kafka_2_cluster_takes_an_isr_naming_a_broker_it_has_not_seen_start_yet() -> None:
    # Below inter.broker.protocol 2.7 the leader writes its ISR to ZooKeeper itself: a broker it took back can be in
    # the ISR before the controller has handled that broker's startup. No liveness check (KIP-841) at level 0; from
    # Kafka 3.x on the controller refuses it.
    from statemachine.controller import ControllerConfig
    from statemachine.features import ZOOKEEPER_ERA_PROTOCOL

    for metadata_version, outcome in ((ZOOKEEPER_ERA_PROTOCOL, "ACCEPTED"), (None, "REJECTED")):
        config = ControllerConfig() if metadata_version is None else ControllerConfig(
            metadata_version=metadata_version)
        cluster = cluster_with(1, 2, config=config)
        cluster.create("t", [1, 2])
        cluster.failure(2)
        assert cluster.rec("t", 0).isr == (1,)
        row = cluster.isr_change("t", 0, [1, 2], broker=1, leader_epoch=1, partition_epoch=1).only_row
        assert row.outcome == outcome, row
