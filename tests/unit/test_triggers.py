"""Event-level scenarios for every trigger of docs/semantics.md: JSON events in (through `parse_event`), the
controller's LeaderAndIsr decisions and audit rows out (through `Controller.handle`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from schemas.events import ControllerEvent, Malformed, parse_event
from statemachine.controller import ControllerConfig
from statemachine.errors import Error
from statemachine.partition import apply_command
from statemachine.record import Action, Command, PartitionRecord
from statemachine.states import PartitionState, ReplicaState

from .eventlog import UNCLEAN, Cluster, Result, event_json

P = PartitionState
R = ReplicaState


def cluster_with(*brokers: int, config: ControllerConfig | None = None) -> Cluster:
    cluster = Cluster(config)
    cluster.start(*brokers)
    return cluster


def assert_rejected(row: dict, error: str) -> None:
    assert row["outcome"] == "REJECTED", row
    assert row["error"] == error, row


def assert_unchanged(cluster: Cluster, before: dict[tuple[str, int], PartitionRecord]) -> None:
    assert cluster.controller.partitions == before


def snapshot(cluster: Cluster) -> dict[tuple[str, int], PartitionRecord]:
    return dict(cluster.controller.partitions)


# =====================================================================================================
# Topic and partition creation
# =====================================================================================================

def test_create_topic_elects_initial_leaders() -> None:
    cluster = cluster_with(1, 2, 3)
    out = cluster.create("orders", [1, 2, 3], [2, 3, 1])
    assert [(d["topic"], d["partition"]) for d in out.decisions] == [("orders", 0), ("orders", 1)]
    d0 = out.decision("orders", 0)
    expected = {
        "topic": "orders", "partition": 0, "controller_epoch": 1, "leader": 1, "leader_epoch": 0, "isr": [1, 2, 3],
        "partition_epoch": 0, "replicas": [1, 2, 3], "adding_replicas": [], "removing_replicas": [],
        "leader_recovery_state": "RECOVERED", "is_new": True, "recipients": [1, 2, 3], "election": "INITIAL",
        "cause": "CreateTopic", "cause_event_id": out.event.event_id, "source_offset": cluster.offset - 1,
    }
    # Every contract field, with its value (the contract allows additional fields).
    assert {k: d0.get(k, "<missing>") for k in expected} == expected
    assert out.decision("orders", 1)["leader"] == 2
    row = out.row("orders", 0)
    assert (row["from_state"], row["to_state"], row["outcome"], row["error"]) == (
        "NonExistentPartition", "OnlinePartition", "ACCEPTED", None)
    assert (row["leader_before"], row["leader_after"]) == (-1, 1)
    assert (row["isr_before"], row["isr_after"]) == ([], [1, 2, 3])
    assert (row["partition_epoch_before"], row["partition_epoch_after"]) == (0, 0)
    assert row["election"] == "INITIAL"
    assert row["replica_states"] == {1: "OnlineReplica", 2: "OnlineReplica", 3: "OnlineReplica"}
    assert row["event_type"] == "CreateTopic"
    assert cluster.controller.cluster.topics == {"orders": 2}


def test_create_topic_with_a_dead_replica_leaves_it_out_of_the_isr() -> None:
    cluster = cluster_with(2, 3)
    out = cluster.create("t", [1, 2, 3])
    d = out.decision("t", 0)
    assert (d["leader"], d["isr"], d["recipients"], d["replicas"]) == (2, [2, 3], [2, 3], [1, 2, 3])


def test_partition_created_without_live_replica_stays_new_until_a_replica_starts() -> None:
    cluster = cluster_with(9)
    out = cluster.create("t", [1, 2])
    assert out.decisions == []
    assert out.row("t", 0)["to_state"] == "NewPartition"
    assert cluster.rec("t", 0).leader == -1
    started = cluster.startup(2)
    d = started.decision("t", 0)
    # The first leader of the partition: epochs start at 0, the LeaderAndIsr creates the replica.
    assert (d["leader"], d["isr"], d["recipients"], d["election"], d["is_new"]) == (2, [2], [2], "INITIAL", True)
    assert (d["leader_epoch"], d["partition_epoch"]) == (0, 0)
    assert started.row("t", 0)["from_state"] == "NewPartition"
    assert started.row("t", 0)["to_state"] == "OnlinePartition"


def test_create_partitions_adds_partitions_after_the_existing_ones() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2])
    before = cluster.rec("t", 0)
    out = cluster.send("CreatePartitions", topic="t", assignment={"1": [2, 3], "2": [3, 1]})
    assert [(d["partition"], d["leader"], d["is_new"], d["election"]) for d in out.decisions] == [
        (1, 2, True, "INITIAL"), (2, 3, True, "INITIAL")]
    assert all((d["leader_epoch"], d["partition_epoch"]) == (0, 0) for d in out.decisions)
    assert cluster.rec("t", 0) == before
    assert cluster.controller.cluster.topics["t"] == 3


@pytest.mark.parametrize(("assignment", "error"), [
    ({"2": [1, 2]}, "INVALID_PARTITIONS"),  # ids must continue from the current count
    ({}, "INVALID_PARTITIONS"),
    ({"1": [1]}, "INVALID_REPLICA_ASSIGNMENT"),  # replication factor differs from the topic's
    ({"1": [1, 1]}, "INVALID_REPLICA_ASSIGNMENT"),
    ({"1": [1, -3]}, "INVALID_REPLICA_ASSIGNMENT"),
])
def test_create_partitions_rejections(assignment: dict, error: str) -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    before = snapshot(cluster)
    out = cluster.send("CreatePartitions", topic="t", assignment=assignment)
    assert_rejected(out.cluster_row, error)
    assert out.cluster_row["topic"] == "t"
    assert out.decisions == []
    assert_unchanged(cluster, before)
    assert cluster.controller.cluster.topics["t"] == 1


def test_create_partitions_of_unknown_or_deleted_topic() -> None:
    cluster = cluster_with(1)
    assert_rejected(cluster.send("CreatePartitions", topic="nope", assignment={"0": [1]}).cluster_row,
                    "UNKNOWN_TOPIC_OR_PARTITION")
    cluster.create("t", [1, 2])  # broker 2 never started: the deletion will wait for it
    cluster.delete("t")
    out = cluster.send("CreatePartitions", topic="t", assignment={"1": [1, 2]})
    assert_rejected(out.cluster_row, "INVALID_TOPIC_EXCEPTION")


@pytest.mark.parametrize(("topic", "assignment", "configs", "error"), [
    ("t", {"0": [1]}, None, "TOPIC_ALREADY_EXISTS"),
    ("bad topic", {"0": [1]}, None, "INVALID_TOPIC_EXCEPTION"),
    ("..", {"0": [1]}, None, "INVALID_TOPIC_EXCEPTION"),
    ("x" * 250, {"0": [1]}, None, "INVALID_TOPIC_EXCEPTION"),
    ("u", {}, None, "INVALID_PARTITIONS"),
    ("u", {"0": [1, 2], "1": [1]}, None, "INVALID_REPLICA_ASSIGNMENT"),
    ("u", {"0": [1, 1]}, None, "INVALID_REPLICA_ASSIGNMENT"),
    ("u", {"0": []}, None, "INVALID_REPLICA_ASSIGNMENT"),
    ("u", {"0": [-1]}, None, "INVALID_REPLICA_ASSIGNMENT"),
    ("u", {"1": [1]}, None, "INVALID_REPLICA_ASSIGNMENT"),
    ("u", {"0": [1]}, {UNCLEAN: "yes"}, "INVALID_REQUEST"),
])
def test_create_topic_rejections(topic: str, assignment: dict, configs: dict | None, error: str) -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1])
    before = snapshot(cluster)
    fields = {"topic": topic, "assignment": assignment} | ({"configs": configs} if configs else {})
    out = cluster.send("CreateTopic", **fields)
    assert_rejected(out.only_row, error)
    assert out.only_row["partition"] is None
    assert out.decisions == []
    assert_unchanged(cluster, before)
    assert set(cluster.controller.cluster.topics) == {"t"}


def test_legal_topic_name_with_every_allowed_character() -> None:
    cluster = cluster_with(1)
    out = cluster.create("Orders.v2_eu-West", [1])
    assert out.row("Orders.v2_eu-West", 0)["outcome"] == "ACCEPTED"


# =====================================================================================================
# Broker STARTUP
# =====================================================================================================

def test_startup_registers_the_broker() -> None:
    cluster = Cluster()
    out = cluster.startup(1, epoch=100)
    assert out.cluster_row["outcome"] == "ACCEPTED"
    assert out.cluster_row["event_type"] == "BrokerChange"
    assert cluster.controller.cluster.live_brokers == {1}


@pytest.mark.parametrize("epoch", [5, 10])
def test_startup_with_a_stale_broker_epoch_is_rejected(epoch: int) -> None:
    cluster = cluster_with(1, 2)
    cluster.startup(1, epoch=10)  # bounce to 10
    cluster.create("t", [1, 2])
    cluster.failure(1, epoch=10)
    before = snapshot(cluster)
    out = cluster.startup(1, epoch=epoch)
    assert_rejected(out.only_row, "STALE_BROKER_EPOCH")
    assert out.decisions == []
    assert_unchanged(cluster, before)
    assert 1 not in cluster.controller.cluster.live_brokers


def test_startup_epoch_must_beat_the_last_registration_even_after_a_failure() -> None:
    cluster = Cluster()
    cluster.startup(1, epoch=50)
    cluster.failure(1, epoch=50)
    assert_rejected(cluster.startup(1, epoch=50).only_row, "STALE_BROKER_EPOCH")
    assert cluster.startup(1, epoch=51).only_row["outcome"] == "ACCEPTED"


def test_startup_brings_replicas_online_and_elects_offline_partitions() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(2)
    cluster.failure(1)
    assert cluster.rec("t", 0).state is P.OFFLINE
    assert cluster.rec("t", 0).isr == (1,)
    out = cluster.startup(1)
    d = out.decision("t", 0)
    assert (d["leader"], d["isr"], d["recipients"], d["election"], d["is_new"]) == (1, [1], [1], "OFFLINE", False)
    row = out.row("t", 0)
    assert (row["from_state"], row["to_state"]) == ("OfflinePartition", "OnlinePartition")
    assert row["replica_states"] == {1: "OnlineReplica", 2: "OfflineReplica"}
    assert (d["leader_epoch"], d["partition_epoch"]) == (row["leader_epoch_before"] + 1,
                                                         row["partition_epoch_before"] + 1)


def test_startup_of_a_replica_outside_the_isr_elects_nobody_when_unclean_is_off() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(2)
    cluster.failure(1)
    out = cluster.startup(2)
    assert out.decisions == []
    rec = cluster.rec("t", 0)
    assert (rec.state, rec.leader, rec.isr) == (P.OFFLINE, -1, (1,))
    assert rec.replica_states[2] is R.ONLINE


def test_startup_election_follows_the_topic_unclean_config() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2], configs={UNCLEAN: "true"})
    cluster.failure(2)
    cluster.failure(1)
    out = cluster.startup(2)
    d = out.decision("t", 0)
    assert (d["leader"], d["isr"], d["election"], d["leader_recovery_state"]) == (
        2, [2], "OFFLINE_UNCLEAN", "RECOVERING")


def test_startup_without_failure_is_a_bounce() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    out = cluster.startup(1)
    # Handled as a failure then a startup: leadership moves to 2, 1 comes back as a follower outside the ISR.
    assert [h.command.action for h in out.handled] == [Action.BROKER_FAILURE, Action.BROKER_STARTUP, Action.CLUSTER]
    assert [h.command.step for h in out.handled[:2]] == [0, 1]
    d = out.decision("t", 0)
    assert (d["leader"], d["isr"], d["election"]) == (2, [2], "OFFLINE")
    assert cluster.replica_states("t", 0) == {1: "OnlineReplica", 2: "OnlineReplica"}
    assert "bounce" in out.cluster_row["message"]
    assert 1 in cluster.controller.cluster.live_brokers


def test_startup_resumes_a_reassignment_waiting_on_the_broker() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2])
    cluster.reassign(("t", 0, [1, 3]))
    cluster.failure(3)
    before = cluster.rec("t", 0)
    out = cluster.startup(3)
    d = out.decision("t", 0)
    # Phase A again: LeaderAndIsr with the full RS, epochs + 1.
    assert (d["replicas"], d["adding_replicas"], d["removing_replicas"]) == ([1, 3, 2], [3], [2])
    assert (d["leader_epoch"], d["partition_epoch"]) == (before.leader_epoch + 1, before.partition_epoch + 1)
    assert 3 in d["recipients"]


# =====================================================================================================
# Broker FAILURE
# =====================================================================================================

def test_failure_of_a_leader_elects_a_live_isr_member() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3])
    out = cluster.failure(1)
    d = out.decision("t", 0)
    assert (d["leader"], d["isr"], d["recipients"], d["election"]) == (2, [2, 3], [2, 3], "OFFLINE")
    assert (d["leader_epoch"], d["partition_epoch"]) == (1, 1)
    row = out.row("t", 0)
    assert (row["from_state"], row["to_state"], row["outcome"]) == ("OnlinePartition", "OnlinePartition", "ACCEPTED")
    assert row["replica_states"] == {1: "OfflineReplica", 2: "OnlineReplica", 3: "OnlineReplica"}
    assert "0 offline" in out.cluster_row["message"]
    assert 1 not in cluster.controller.cluster.broker_epochs


def test_failure_of_a_follower_shrinks_the_isr() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3])
    out = cluster.failure(3)
    d = out.decision("t", 0)
    assert (d["leader"], d["isr"], d["election"]) == (1, [1, 2], None)
    assert (d["leader_epoch"], d["partition_epoch"]) == (1, 1)
    assert d["recipients"] == [1, 2]


def test_failure_of_the_last_isr_member_takes_the_partition_offline_keeping_the_isr() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(2)
    out = cluster.failure(1)
    d = out.decision("t", 0)
    # The ISR never becomes empty: the last member stays, the leader goes to -1.
    assert (d["leader"], d["isr"], d["election"]) == (-1, [1], None)
    assert (d["leader_epoch"], d["partition_epoch"]) == (2, 2)
    row = out.row("t", 0)
    assert (row["from_state"], row["to_state"]) == ("OnlinePartition", "OfflinePartition")
    assert "1 offline: t-0" in out.cluster_row["message"]


def test_failure_of_a_replica_outside_the_isr_writes_nothing() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(2)
    cluster.startup(2)
    out = cluster.failure(2)
    assert out.decisions == []
    assert out.row("t", 0)["outcome"] == "ACCEPTED"  # the replica went offline
    assert cluster.replica_states("t", 0)[2] == "OfflineReplica"


def test_failure_with_a_stale_epoch_is_rejected() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    before = snapshot(cluster)
    out = cluster.failure(1, epoch=cluster.broker_epochs[1] - 1)
    assert_rejected(out.only_row, "STALE_BROKER_EPOCH")
    assert_unchanged(cluster, before)
    assert 1 in cluster.controller.cluster.live_brokers


def test_failure_of_an_unregistered_broker() -> None:
    cluster = cluster_with(1)
    assert_rejected(cluster.failure(7, epoch=1).only_row, "BROKER_NOT_AVAILABLE")


def test_failure_removes_the_broker_from_the_shutting_down_set() -> None:
    cluster = cluster_with(1, 2)
    cluster.shutdown(1)
    assert cluster.controller.cluster.shutting_down == {1}
    cluster.failure(1)
    assert cluster.controller.cluster.shutting_down == set()
    # A later startup is a plain startup, not a bounce.
    out = cluster.startup(1)
    assert "bounce" not in out.cluster_row["message"]


@pytest.mark.parametrize("unclean", [True, False])
def test_any_failure_takes_offline_partitions_still_led_by_a_shutting_down_broker(unclean: bool) -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2], configs={UNCLEAN: str(unclean).lower()})
    cluster.isr_change("t", 0, [1])
    cluster.shutdown(1)  # no other ISR member: 1 keeps leading while shutting down
    assert cluster.rec("t", 0).leader == 1
    out = cluster.failure(3)  # a broker t-0 does not even live on
    rec = cluster.rec("t", 0)
    if unclean:
        d = out.decision("t", 0)
        assert (d["leader"], d["isr"], d["election"], d["leader_recovery_state"]) == (
            2, [2], "OFFLINE_UNCLEAN", "RECOVERING")
        assert rec.state is P.ONLINE
    else:
        assert out.decisions == []
        assert rec.state is P.OFFLINE
        assert out.row("t", 0)["to_state"] == "OfflinePartition"


def test_isr_never_becomes_empty_as_every_broker_fails() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3], [3, 2, 1])
    for broker in (1, 2, 3):
        cluster.failure(broker)
        for p in (0, 1):
            assert cluster.rec("t", p).isr, f"ISR of t-{p} empty after broker {broker} failed"
    assert {cluster.rec("t", p).leader for p in (0, 1)} == {-1}
    # The last broker to fail is the last ISR member of both.
    assert cluster.rec("t", 0).isr == cluster.rec("t", 1).isr == (3,)


# =====================================================================================================
# CONTROLLED_SHUTDOWN
# =====================================================================================================

def test_controlled_shutdown_moves_leadership_away() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3])
    out = cluster.shutdown(1)
    d = out.decision("t", 0)
    assert (d["leader"], d["isr"], d["recipients"], d["election"]) == (2, [2, 3], [1, 2, 3], "CONTROLLED_SHUTDOWN")
    assert (d["leader_epoch"], d["partition_epoch"]) == (1, 1)
    assert out.cluster_row["message"].endswith("still leads 0 partition(s): none")
    assert cluster.controller.cluster.shutting_down == {1}
    assert 1 not in cluster.controller.cluster.live_brokers


def test_controlled_shutdown_of_a_follower_takes_it_out_of_the_isr() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3])
    out = cluster.shutdown(3)
    d = out.decision("t", 0)
    assert (d["leader"], d["isr"], d["election"]) == (1, [1, 2], None)
    assert cluster.replica_states("t", 0)[3] == "OfflineReplica"


def test_controlled_shutdown_leaves_single_replica_partitions_alone() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("solo", [1])
    cluster.create("pair", [1, 2])
    out = cluster.shutdown(1)
    assert out.decisions_for("solo", 0) == []
    assert out.row("solo", 0)["outcome"] == "NO_OP"
    assert cluster.rec("solo", 0).leader == 1
    assert out.decision("pair", 0)["leader"] == 2
    assert out.cluster_row["message"].endswith("still leads 1 partition(s): solo-0")


def test_controlled_shutdown_with_no_other_isr_member_keeps_the_leader_and_lists_it() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.isr_change("t", 0, [1])
    out = cluster.shutdown(1)
    assert_rejected(out.row("t", 0), "ELIGIBLE_LEADERS_NOT_AVAILABLE")
    assert out.decisions == []
    assert cluster.rec("t", 0).leader == 1
    assert "still leads 1 partition(s): t-0" in out.cluster_row["message"]


def test_controlled_shutdown_of_unknown_or_stale_broker() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    before = snapshot(cluster)
    assert_rejected(cluster.shutdown(9, epoch=1).only_row, "BROKER_NOT_AVAILABLE")
    assert_rejected(cluster.shutdown(1, epoch=cluster.broker_epochs[1] - 1).only_row, "STALE_BROKER_EPOCH")
    assert_unchanged(cluster, before)
    assert cluster.controller.cluster.shutting_down == set()


def test_a_shutting_down_broker_is_not_live_for_elections_or_the_isr() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3])
    cluster.create("u", [3, 1])
    cluster.shutdown(1)
    # Preferred replica 1 is shutting down.
    assert_rejected(cluster.elect("PREFERRED", ("t", 0)).row("t", 0), "PREFERRED_LEADER_NOT_AVAILABLE")
    # The leader of u may not add it back to the ISR.
    assert_rejected(cluster.isr_change("u", 0, [3, 1]).row("u", 0), "INELIGIBLE_REPLICA")


def test_controlled_shutdown_ignores_topics_being_deleted() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3])
    cluster.failure(3)
    cluster.delete("t")  # waits on broker 3
    out = cluster.shutdown(1)
    assert out.decisions == []


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
    assert cluster.isr_change("t", 0, [2]).only_row["outcome"] == "ACCEPTED"
    rec = cluster.rec("t", 0)
    assert (rec.leader, rec.isr, rec.leader_epoch, rec.partition_epoch) == (2, (2,), 2, 3)
    return cluster


def test_isr_change_accepted_bumps_only_the_partition_epoch(isr_cluster: Cluster) -> None:
    out = isr_cluster.isr_change("t", 0, [2, 3])
    d = out.decision("t", 0)
    assert (d["leader"], d["isr"], d["leader_epoch"], d["partition_epoch"]) == (2, [2, 3], 2, 4)
    assert (d["election"], d["is_new"], d["recipients"]) == (None, False, [2])
    assert d["cause"] == "IsrChange"
    row = out.row("t", 0)
    assert (row["outcome"], row["error"], row["from_state"], row["to_state"]) == (
        "ACCEPTED", None, "OnlinePartition", "OnlinePartition")
    assert (row["isr_before"], row["isr_after"]) == ([2], [2, 3])
    assert (row["leader_epoch_before"], row["leader_epoch_after"]) == (2, 2)
    assert (row["partition_epoch_before"], row["partition_epoch_after"]) == (3, 4)


@pytest.mark.parametrize("partition_epoch", [3, 2, 0])
def test_isr_change_already_applied_is_an_idempotent_no_op(isr_cluster: Cluster, partition_epoch: int) -> None:
    before = snapshot(isr_cluster)
    out = isr_cluster.isr_change("t", 0, [2], partition_epoch=partition_epoch)
    assert out.only_row["outcome"] == "NO_OP"
    assert out.only_row["error"] is None
    assert out.decisions == []
    assert_unchanged(isr_cluster, before)


def test_isr_change_retried_after_acceptance_is_a_no_op(isr_cluster: Cluster) -> None:
    first = isr_cluster.isr_change("t", 0, [2, 3], partition_epoch=3)
    assert first.only_row["outcome"] == "ACCEPTED"
    again = isr_cluster.isr_change("t", 0, [2, 3], partition_epoch=3)
    assert again.only_row["outcome"] == "NO_OP"
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
    assert (row["topic"], row["partition"]) == (topic, partition)
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
    assert cluster.isr_change("t", 0, [2], recovery="RECOVERING").only_row["outcome"] == "NO_OP"
    # Recovery done.
    out = cluster.isr_change("t", 0, [2])
    d = out.decision("t", 0)
    assert (d["leader_recovery_state"], d["leader_epoch"], d["partition_epoch"]) == (
        "RECOVERED", rec.leader_epoch, rec.partition_epoch + 1)
    # Only then may the ISR grow.
    cluster.startup(1)
    assert cluster.isr_change("t", 0, [2, 1]).only_row["outcome"] == "ACCEPTED"


# =====================================================================================================
# ReassignPartitions
# =====================================================================================================

def test_reassignment_start() -> None:
    cluster = cluster_with(1, 2, 3, 4, 5)
    cluster.create("t", [1, 2, 3])
    out = cluster.reassign(("t", 0, [4, 5, 2]))
    d = out.decision("t", 0)
    # RS = (target ++ origin).distinct, AR = RS - origin, RR = RS - target.
    assert (d["replicas"], d["adding_replicas"], d["removing_replicas"]) == ([4, 5, 2, 1, 3], [4, 5], [1, 3])
    assert (d["leader"], d["isr"], d["election"]) == (1, [1, 2, 3], None)
    assert (d["leader_epoch"], d["partition_epoch"]) == (1, 1)
    # The LeaderAndIsr goes to the origin replicas and to the adding ones.
    assert sorted(d["recipients"]) == [1, 2, 3, 4, 5]
    row = out.row("t", 0)
    assert row["outcome"] == "ACCEPTED"
    assert row["replica_states"] == {1: "OnlineReplica", 2: "OnlineReplica", 3: "OnlineReplica",
                                     4: "NewReplica", 5: "NewReplica"}
    rec = cluster.rec("t", 0)
    assert rec.reassignment_in_progress
    assert rec.target_replicas == (4, 5, 2)
    assert set(rec.origin_replicas) == {1, 2, 3}


def test_reassignment_completes_when_the_isr_catches_up_moving_the_leader() -> None:
    cluster = cluster_with(1, 2, 3, 4, 5)
    cluster.create("t", [1, 2, 3])
    cluster.reassign(("t", 0, [4, 5, 2]))
    partial = cluster.isr_change("t", 0, [1, 2, 3, 4])
    assert [d["partition_epoch"] for d in partial.decisions] == [2]
    assert cluster.rec("t", 0).reassignment_in_progress
    out = cluster.isr_change("t", 0, [1, 2, 3, 4, 5])
    summary = [(d["leader"], d["isr"], d["replicas"], d["adding_replicas"], d["removing_replicas"], d["election"],
                d["leader_epoch"], d["partition_epoch"]) for d in out.decisions]
    assert summary == [
        # the leader's ISR change itself: partition epoch only
        (1, [1, 2, 3, 4, 5], [4, 5, 2, 1, 3], [4, 5], [1, 3], None, 1, 3),
        # RS = target; the leader 1 is not in the target: REASSIGN election, ISR unchanged
        (4, [1, 2, 3, 4, 5], [4, 5, 2], [], [], "REASSIGN", 2, 4),
        # each removing replica goes offline: out of the ISR
        (4, [2, 3, 4, 5], [4, 5, 2], [], [], None, 3, 5),
        (4, [2, 4, 5], [4, 5, 2], [], [], None, 4, 6),
    ]
    assert out.decisions[1]["recipients"] == [4, 5, 2]
    row = out.row("t", 0)
    assert (row["outcome"], row["election"]) == ("ACCEPTED", "REASSIGN")
    assert set(row["replica_states"]) == {2, 4, 5}  # RR replicas deleted: NonExistentReplica
    rec = cluster.rec("t", 0)
    assert (rec.replicas, rec.adding_replicas, rec.removing_replicas, rec.leader, rec.isr) == (
        (4, 5, 2), (), (), 4, (2, 4, 5))
    assert not rec.reassignment_in_progress


def test_reassignment_completion_keeps_a_live_leader_that_is_in_the_target() -> None:
    cluster = cluster_with(1, 2, 3, 4)
    cluster.create("t", [1, 2, 3])
    cluster.reassign(("t", 0, [1, 2, 4]))
    out = cluster.isr_change("t", 0, [1, 2, 3, 4])
    summary = [(d["leader"], d["isr"], d["replicas"], d["election"], d["leader_epoch"], d["partition_epoch"])
               for d in out.decisions]
    assert summary == [
        (1, [1, 2, 3, 4], [1, 2, 4, 3], None, 1, 2),
        (1, [1, 2, 3, 4], [1, 2, 4], None, 2, 3),  # leader stays: epochs + 1
        (1, [1, 2, 4], [1, 2, 4], None, 3, 4),  # 3 leaves the ISR
    ]


def test_reassignment_already_within_the_isr_completes_at_once() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3])
    out = cluster.reassign(("t", 0, [2, 3]))
    summary = [(d["leader"], d["isr"], d["replicas"], d["election"], d["partition_epoch"]) for d in out.decisions]
    assert summary == [(2, [1, 2, 3], [2, 3], "REASSIGN", 1), (2, [2, 3], [2, 3], None, 2)]
    assert cluster.replica_states("t", 0) == {2: "OnlineReplica", 3: "OnlineReplica"}


def test_reassignment_cancel_goes_back_to_the_origin() -> None:
    cluster = cluster_with(1, 2, 3, 4)
    cluster.create("t", [1, 2, 3])
    cluster.reassign(("t", 0, [1, 2, 4]))
    out = cluster.reassign(("t", 0, None))
    d = out.decision("t", 0)
    assert (d["replicas"], d["adding_replicas"], d["removing_replicas"], d["leader"], d["isr"]) == (
        [1, 2, 3], [], [], 1, [1, 2, 3])
    assert (d["leader_epoch"], d["partition_epoch"]) == (2, 2)
    assert cluster.replica_states("t", 0) == {1: "OnlineReplica", 2: "OnlineReplica", 3: "OnlineReplica"}
    assert not cluster.rec("t", 0).reassignment_in_progress
    # Nothing left to cancel.
    assert_rejected(cluster.reassign(("t", 0, None)).only_row, "NO_REASSIGNMENT_IN_PROGRESS")


def test_reassignment_cancel_returns_to_the_origin_replicas_in_kafka_order() -> None:
    """Kafka's origin is RS minus AR, in RS order (target first): cancelling [1, 2, 3] -> [4, 5, 2] gives
    back replicas 1, 2 and 3, ordered [2, 1, 3] (docs/semantics.md, 'Behaviour where the interface is silent')."""
    cluster = cluster_with(1, 2, 3, 4, 5)
    cluster.create("t", [1, 2, 3])
    cluster.reassign(("t", 0, [4, 5, 2]))
    out = cluster.reassign(("t", 0, None))
    assert out.decisions[-1]["replicas"] == [2, 1, 3]
    rec = cluster.rec("t", 0)
    assert rec.replicas == (2, 1, 3) and rec.adding_replicas == () and rec.removing_replicas == ()
    assert 4 not in rec.replica_states and 5 not in rec.replica_states


def test_cancel_without_reassignment_in_progress() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    before = snapshot(cluster)
    out = cluster.reassign(("t", 0, None))
    assert_rejected(out.row("t", 0), "NO_REASSIGNMENT_IN_PROGRESS")
    assert_unchanged(cluster, before)


@pytest.mark.parametrize("target", [[], [1, 1], [1, -2], [1, 9], [1, 4]],
                         ids=["empty", "duplicate", "negative", "unregistered", "shutting-down"])
def test_reassignment_to_an_invalid_target(target: list[int]) -> None:
    cluster = cluster_with(1, 2, 3, 4)
    cluster.create("t", [1, 2, 3])
    cluster.shutdown(4)
    before = snapshot(cluster)
    out = cluster.reassign(("t", 0, target))
    assert_rejected(out.row("t", 0), "INVALID_REPLICA_ASSIGNMENT")
    assert out.decisions == []
    assert_unchanged(cluster, before)


def test_reassignment_may_keep_a_dead_origin_replica() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3])
    cluster.failure(3)
    out = cluster.reassign(("t", 0, [3, 1]))
    assert out.row("t", 0)["outcome"] == "ACCEPTED"


def test_reassignment_of_unknown_partition_and_per_partition_verdicts() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2], [2, 1])
    out = cluster.reassign(("t", 0, [2, 3]), ("t", 1, [2, 2]), ("t", 7, [1, 2]))
    assert out.row("t", 0)["outcome"] == "ACCEPTED"
    assert_rejected(out.row("t", 1), "INVALID_REPLICA_ASSIGNMENT")
    assert_rejected(out.row("t", 7), "UNKNOWN_TOPIC_OR_PARTITION")
    assert cluster.record("t", 7) is None


def test_pending_reassignment_resumes_after_controller_failover() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2])
    cluster.reassign(("t", 0, [1, 3]))
    before = cluster.rec("t", 0)
    out = cluster.controller_change(controller_id=2)
    d = out.decision("t", 0)
    assert (d["replicas"], d["adding_replicas"], d["removing_replicas"]) == ([1, 3, 2], [3], [2])
    assert (d["leader_epoch"], d["partition_epoch"]) == (before.leader_epoch + 1, before.partition_epoch + 1)
    assert d["controller_epoch"] == 2


# =====================================================================================================
# ElectLeaders
# =====================================================================================================

def preferred_moved_away(cluster: Cluster) -> None:
    """t-0 on [1, 2]: broker 1 bounced, so 2 leads; 1 is back in the ISR."""
    cluster.start(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(1)
    cluster.startup(1)
    cluster.isr_change("t", 0, [2, 1])


def test_preferred_election_restores_the_preferred_leader() -> None:
    cluster = Cluster()
    preferred_moved_away(cluster)
    before = cluster.rec("t", 0)
    out = cluster.elect("PREFERRED", ("t", 0))
    d = out.decision("t", 0)
    assert (d["leader"], d["isr"], d["recipients"], d["election"], d["is_new"]) == (
        1, [2, 1], [1, 2], "PREFERRED", False)
    assert (d["leader_epoch"], d["partition_epoch"]) == (before.leader_epoch + 1, before.partition_epoch + 1)
    assert out.row("t", 0)["election"] == "PREFERRED"


def test_preferred_election_not_needed() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    out = cluster.elect("PREFERRED", ("t", 0))
    assert_rejected(out.row("t", 0), "ELECTION_NOT_NEEDED")
    assert out.decisions == []


def test_preferred_leader_not_available() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(1)
    # Dead.
    assert_rejected(cluster.elect("PREFERRED", ("t", 0)).row("t", 0), "PREFERRED_LEADER_NOT_AVAILABLE")
    # Live again but not yet in the ISR.
    cluster.startup(1)
    before = snapshot(cluster)
    assert_rejected(cluster.elect("PREFERRED", ("t", 0)).row("t", 0), "PREFERRED_LEADER_NOT_AVAILABLE")
    assert_unchanged(cluster, before)


def test_preferred_election_of_unknown_or_deleted_partition() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(2)
    cluster.delete("t")  # waits on broker 2
    out = cluster.elect("PREFERRED", ("t", 0), ("t", 3), ("x", 0))
    assert_rejected(out.row("t", 0), "INVALID_TOPIC_EXCEPTION")
    assert_rejected(out.row("t", 3), "UNKNOWN_TOPIC_OR_PARTITION")
    assert_rejected(out.row("x", 0), "UNKNOWN_TOPIC_OR_PARTITION")


def test_preferred_election_for_all_partitions() -> None:
    cluster = Cluster()
    preferred_moved_away(cluster)
    cluster.create("u", [2, 1])
    out = cluster.elect("PREFERRED", all_partitions=True)
    assert [(r["topic"], r["partition"], r["outcome"], r["error"]) for r in out.audits] == [
        ("t", 0, "ACCEPTED", None), ("u", 0, "REJECTED", "ELECTION_NOT_NEEDED")]


def test_unclean_election_of_an_offline_partition() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.isr_change("t", 0, [1])
    cluster.failure(1)
    out = cluster.elect("UNCLEAN", ("t", 0))
    d = out.decision("t", 0)
    assert (d["leader"], d["isr"], d["recipients"], d["election"], d["leader_recovery_state"]) == (
        2, [2], [2], "OFFLINE_UNCLEAN", "RECOVERING")
    row = out.row("t", 0)
    assert (row["from_state"], row["to_state"], row["election"]) == (
        "OfflinePartition", "OnlinePartition", "OFFLINE_UNCLEAN")


def test_unclean_election_not_needed_while_the_leader_is_live() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    assert_rejected(cluster.elect("UNCLEAN", ("t", 0)).row("t", 0), "ELECTION_NOT_NEEDED")


def test_unclean_election_with_no_live_replica() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(2)
    cluster.failure(1)
    before = snapshot(cluster)
    out = cluster.elect("UNCLEAN", ("t", 0))
    assert_rejected(out.row("t", 0), "ELIGIBLE_LEADERS_NOT_AVAILABLE")
    assert out.row("t", 0)["to_state"] == "OfflinePartition"
    assert_unchanged(cluster, before)


def test_unclean_election_replaces_a_shutting_down_leader() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.isr_change("t", 0, [1])
    cluster.shutdown(1)  # no other ISR member: 1 keeps leading
    out = cluster.elect("UNCLEAN", ("t", 0))
    d = out.decision("t", 0)
    assert (d["leader"], d["isr"], d["election"]) == (2, [2], "OFFLINE_UNCLEAN")
    assert out.row("t", 0)["to_state"] == "OnlinePartition"


def test_unclean_election_of_unknown_partition() -> None:
    cluster = cluster_with(1)
    assert_rejected(cluster.elect("UNCLEAN", ("t", 0)).only_row, "UNKNOWN_TOPIC_OR_PARTITION")


# =====================================================================================================
# AlterTopicConfig
# =====================================================================================================

def offline_without_isr(config: ControllerConfig | None = None, configs: dict | None = None) -> Cluster:
    """t-0 on [1, 2]: ISR [1], broker 1 dead, broker 2 live: offline, electable only uncleanly."""
    cluster = cluster_with(1, 2, config=config)
    cluster.create("t", [1, 2], configs=configs)
    cluster.isr_change("t", 0, [1])
    cluster.failure(1)
    assert cluster.rec("t", 0).state is P.OFFLINE
    return cluster


def test_turning_unclean_on_elects_offline_partitions() -> None:
    cluster = offline_without_isr()
    out = cluster.alter("t", {UNCLEAN: "true"})
    assert out.audits[0]["partition"] is None and out.audits[0]["outcome"] == "ACCEPTED"
    d = out.decision("t", 0)
    assert (d["leader"], d["isr"], d["election"], d["leader_recovery_state"], d["cause"]) == (
        2, [2], "OFFLINE_UNCLEAN", "RECOVERING", "AlterTopicConfig")
    assert cluster.controller.unclean_allowed("t")


def test_config_change_that_does_not_turn_unclean_on_elects_nothing() -> None:
    cluster = offline_without_isr()
    out = cluster.alter("t", {UNCLEAN: "false", "retention.ms": "1000"})
    assert out.decisions == []
    assert [r["partition"] for r in out.audits] == [None]
    assert cluster.rec("t", 0).state is P.OFFLINE


def test_null_restores_the_cluster_default() -> None:
    cluster = offline_without_isr(ControllerConfig(unclean_leader_election_enable=True), {UNCLEAN: "false"})
    assert cluster.rec("t", 0).leader == -1
    out = cluster.alter("t", {UNCLEAN: None})
    assert out.decision("t", 0)["election"] == "OFFLINE_UNCLEAN"
    assert "t" not in cluster.controller.cluster.topic_configs


def test_cluster_default_unclean_elects_at_failure() -> None:
    cluster = cluster_with(1, 2, config=ControllerConfig(unclean_leader_election_enable=True))
    cluster.create("t", [1, 2])
    cluster.isr_change("t", 0, [1])
    out = cluster.failure(1)
    d = out.decision("t", 0)
    assert (d["leader"], d["election"], d["leader_recovery_state"]) == (2, "OFFLINE_UNCLEAN", "RECOVERING")


def test_alter_config_rejections() -> None:
    cluster = offline_without_isr()
    assert_rejected(cluster.alter("nope", {UNCLEAN: "true"}).only_row, "UNKNOWN_TOPIC_OR_PARTITION")
    before = snapshot(cluster)
    assert_rejected(cluster.alter("t", {UNCLEAN: "sometimes"}).only_row, "INVALID_REQUEST")
    assert_unchanged(cluster, before)
    assert not cluster.controller.unclean_allowed("t")


def test_turning_unclean_on_for_a_topic_being_deleted_elects_nothing() -> None:
    cluster = offline_without_isr()
    cluster.delete("t")  # waits on broker 1
    out = cluster.alter("t", {UNCLEAN: "true"})
    assert out.decisions == []
    assert cluster.rec("t", 0).leader == -1


# =====================================================================================================
# LeaderImbalanceCheck
# =====================================================================================================

def imbalanced(not_preferred: int, total: int = 10, config: ControllerConfig | None = None,
               out_of_isr: int = 0) -> Cluster:
    """`total` partitions preferring broker 1 (RS [1, 2]); all but `not_preferred` led by 1. The last
    `out_of_isr` of the ones led by 2 do not have 1 in their ISR."""
    cluster = cluster_with(1, 2, config=config)
    cluster.create("t", *([[1, 2]] * total))
    cluster.shutdown(1)
    cluster.failure(1)
    cluster.startup(1)
    for p in range(total - out_of_isr):
        cluster.isr_change("t", p, [2, 1])
    if total > not_preferred:
        out = cluster.elect("PREFERRED", *[("t", p) for p in range(not_preferred, total)])
        assert not out.errors, out.errors
    assert sum(cluster.rec("t", p).leader != 1 for p in range(total)) == not_preferred
    return cluster


def test_imbalance_at_the_threshold_triggers_nothing() -> None:
    cluster = imbalanced(not_preferred=1)  # 1/10 = 10%, not above 10%
    out = cluster.imbalance_check()
    assert out.decisions == []
    assert out.only_row["outcome"] == "ACCEPTED"
    assert "leader.imbalance.per.broker.percentage=10" in out.only_row["message"]


def test_imbalance_above_the_threshold_elects_preferred_leaders() -> None:
    cluster = imbalanced(not_preferred=2)  # 20%
    out = cluster.imbalance_check()
    assert [(d["partition"], d["leader"], d["election"], d["cause"]) for d in out.decisions] == [
        (0, 1, "PREFERRED", "LeaderImbalanceCheck"), (1, 1, "PREFERRED", "LeaderImbalanceCheck")]
    assert "20%" in out.cluster_row["message"]
    assert all(cluster.rec("t", p).leader == 1 for p in range(10))


def test_imbalance_elects_only_where_the_preferred_replica_is_in_the_isr() -> None:
    cluster = imbalanced(not_preferred=10, out_of_isr=3)
    out = cluster.imbalance_check()
    assert [d["partition"] for d in out.decisions] == list(range(7))
    assert [cluster.rec("t", p).leader for p in range(7, 10)] == [2, 2, 2]


def test_imbalance_threshold_comes_from_the_config() -> None:
    cluster = imbalanced(not_preferred=2, config=ControllerConfig(leader_imbalance_per_broker_percentage=20))
    assert cluster.imbalance_check().decisions == []


def test_auto_leader_rebalance_disabled() -> None:
    cluster = imbalanced(not_preferred=10, config=ControllerConfig(auto_leader_rebalance_enable=False))
    out = cluster.imbalance_check()
    assert out.only_row["outcome"] == "NO_OP"
    assert out.decisions == []


# =====================================================================================================
# DeleteTopic
# =====================================================================================================

def test_delete_topic_with_live_brokers_is_immediate() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2], [2, 1], configs={UNCLEAN: "true"})
    out = cluster.delete("t")
    assert out.decisions == []
    for p in (0, 1):
        row = out.row("t", p)
        assert (row["from_state"], row["to_state"], row["outcome"], row["replica_states"]) == (
            "OnlinePartition", "NonExistentPartition", "ACCEPTED", {})
    assert cluster.controller.partitions == {}
    assert "t" not in cluster.controller.cluster.topics
    assert "t" not in cluster.controller.cluster.topic_configs
    assert "t" not in cluster.controller.cluster.topics_queued_for_deletion


def test_delete_topic_waits_for_a_dead_broker() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(2)
    out = cluster.delete("t")
    row = out.row("t", 0)
    assert (row["from_state"], row["to_state"]) == ("OnlinePartition", "OfflinePartition")
    assert row["replica_states"] == {2: "ReplicaDeletionIneligible"}
    assert out.decisions == []
    # Queued: the name is still taken, a second delete changes nothing.
    assert_rejected(cluster.create("t", [1]).only_row, "TOPIC_ALREADY_EXISTS")
    assert cluster.delete("t").only_row["outcome"] == "NO_OP"
    # The broker returns: the deletion completes.
    back = cluster.startup(2)
    assert back.row("t", 0)["to_state"] == "NonExistentPartition"
    assert back.decisions == []
    assert "t" not in cluster.controller.cluster.topics


def test_delete_topic_waits_for_a_shutting_down_broker_across_its_failure() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.shutdown(2)
    cluster.delete("t")
    assert cluster.replica_states("t", 0) == {2: "ReplicaDeletionIneligible"}
    cluster.failure(2)
    assert cluster.replica_states("t", 0) == {2: "ReplicaDeletionIneligible"}
    cluster.startup(2)
    assert cluster.record("t", 0) is None


def test_recreated_topic_restarts_its_epochs() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(1)
    cluster.startup(1)
    assert cluster.rec("t", 0).leader_epoch > 0
    cluster.delete("t")
    out = cluster.create("t", [2, 1])
    d = out.decision("t", 0)
    assert (d["leader"], d["leader_epoch"], d["partition_epoch"], d["is_new"], d["election"]) == (
        2, 0, 0, True, "INITIAL")
    assert out.row("t", 0)["from_state"] == "NonExistentPartition"


def test_delete_unknown_topic() -> None:
    cluster = cluster_with(1)
    assert_rejected(cluster.delete("nope").only_row, "UNKNOWN_TOPIC_OR_PARTITION")


def test_delete_topic_during_a_reassignment_deletes_the_adding_replicas_too() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2])
    cluster.reassign(("t", 0, [1, 3]))
    out = cluster.delete("t")
    assert out.row("t", 0)["to_state"] == "NonExistentPartition"
    assert cluster.controller.partitions == {}


# =====================================================================================================
# ControllerChange and failover
# =====================================================================================================

def test_first_controller_is_adopted_without_failover() -> None:
    cluster = Cluster(controller_epoch=5)
    out = cluster.controller_change(controller_id=3, epoch=5)
    assert out.only_row["outcome"] == "ACCEPTED"
    assert (cluster.controller.cluster.controller_epoch, cluster.controller.cluster.controller_id) == (5, 3)


def test_decisions_carry_the_new_controller_epoch() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    out = cluster.controller_change(controller_id=2)
    assert all(r["controller_epoch"] == 2 for r in out.audits)
    failed = cluster.failure(1)
    assert [d["controller_epoch"] for d in failed.decisions] == [2]
    assert {r["controller_epoch"] for r in failed.audits} == {2}


def test_failover_elects_a_partition_whose_leader_was_shutting_down() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.isr_change("t", 0, [1])
    cluster.shutdown(1)  # 1 keeps leading: no other ISR member
    cluster.failure(2)  # t-0 goes offline: its leader is not live
    assert cluster.rec("t", 0).state is P.OFFLINE
    out = cluster.controller_change(controller_id=2)
    # The new controller does not know of the shutdown: broker 1 is live again and is elected.
    assert cluster.controller.cluster.shutting_down == set()
    d = out.decision("t", 0)
    assert (d["leader"], d["isr"], d["election"], d["controller_epoch"], d["cause"]) == (
        1, [1], "OFFLINE", 2, "ControllerChange")
    assert out.row("t", 0)["to_state"] == "OnlinePartition"
    assert "controller 2 at epoch 2" in out.cluster_row["message"]


@pytest.mark.parametrize("event", ["failure", "isr", "delete", "imbalance"])
def test_stale_controller_epoch_is_rejected_and_not_applied(event: str) -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.controller_change(controller_id=2)
    before = snapshot(cluster)
    send: dict[str, Callable[[], Result]] = {
        "failure": lambda: cluster.failure(1, controller_epoch=1),
        "isr": lambda: cluster.isr_change("t", 0, [1], controller_epoch=1),
        "delete": lambda: cluster.delete("t", controller_epoch=1),
        "imbalance": lambda: cluster.imbalance_check(controller_epoch=1),
    }
    out = send[event]()
    assert_rejected(out.only_row, "STALE_CONTROLLER_EPOCH")
    assert_unchanged(cluster, before)
    assert cluster.controller.cluster.live_brokers == {1, 2}
    assert "t" in cluster.controller.cluster.topics


def test_stale_isr_change_is_audited_on_its_partition() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.controller_change()
    row = cluster.isr_change("t", 0, [1], controller_epoch=0).only_row
    assert (row["topic"], row["partition"], row["error"]) == ("t", 0, "STALE_CONTROLLER_EPOCH")


def test_controller_change_at_the_current_epoch_is_a_no_op() -> None:
    cluster = cluster_with(1)
    out = cluster.controller_change(epoch=1)
    assert out.only_row["outcome"] == "NO_OP"


def test_higher_epoch_on_any_event_is_an_implicit_failover() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.shutdown(2)
    cluster.controller_epoch = 7
    out = cluster.failure(1)
    actions = [h.command.action for h in out.handled]
    # Failover first (re-examining every partition), then the event itself at the new epoch.
    assert actions[:2] == [Action.CONTROLLER_FAILOVER, Action.CLUSTER]
    assert "implicit" in out.audits[1]["message"]
    assert Action.BROKER_FAILURE in actions[2:]
    assert {r["controller_epoch"] for r in out.audits} == {7}
    assert all(d["controller_epoch"] == 7 for d in out.decisions)
    assert cluster.controller.cluster.controller_epoch == 7
    # The new controller forgot the shutting-down set: 2 counts as live again (it will retry its shutdown).
    assert cluster.controller.cluster.shutting_down == set()
    assert cluster.controller.cluster.live_brokers == {2}


# =====================================================================================================
# Duplicates and authorization
# =====================================================================================================

def test_duplicate_event_id_is_never_applied_twice() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3])
    first = cluster.failure(1, event_id="dup")
    assert first.decisions
    before = snapshot(cluster)
    # Redelivery, and a different event reusing the id: both duplicates.
    for raw in (cluster.log[-1], cluster.json("BrokerChange", event_id="dup", broker_id=2, change="FAILURE",
                                              broker_epoch=cluster.broker_epochs[2])):
        out = cluster.feed(raw)
        assert_rejected(out.only_row, "DUPLICATE_EVENT")
        assert out.decisions == []
    assert_unchanged(cluster, before)
    assert cluster.controller.cluster.live_brokers == {2, 3}


def test_duplicate_isr_change_is_audited_on_its_partition() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.isr_change("t", 0, [1], event_id="isr-1")
    out = cluster.isr_change("t", 0, [1, 2], event_id="isr-1")
    row = out.only_row
    assert (row["topic"], row["partition"], row["error"]) == ("t", 0, "DUPLICATE_EVENT")
    assert cluster.rec("t", 0).isr == (1,)


def test_a_rejected_event_still_uses_up_its_id() -> None:
    cluster = cluster_with(1)
    assert_rejected(cluster.delete("nope", event_id="x").only_row, "UNKNOWN_TOPIC_OR_PARTITION")
    cluster.create("nope", [1])
    assert_rejected(cluster.delete("nope", event_id="x").only_row, "DUPLICATE_EVENT")
    assert cluster.record("nope", 0) is not None


def admin_events(cluster: Cluster) -> dict[str, Callable[..., Result]]:
    return {
        "CreateTopic": lambda **kw: cluster.create("new", [1, 2], **kw),
        "CreatePartitions": lambda **kw: cluster.send("CreatePartitions", topic="t", assignment={"1": [2, 1]}, **kw),
        "DeleteTopic": lambda **kw: cluster.delete("t", **kw),
        "ReassignPartitions": lambda **kw: cluster.reassign(("t", 0, [2, 3]), **kw),
        "ElectLeaders": lambda **kw: cluster.elect("PREFERRED", ("t", 0), **kw),
        "AlterTopicConfig": lambda **kw: cluster.alter("t", {UNCLEAN: "true"}, **kw),
    }


ADMIN = ["CreateTopic", "CreatePartitions", "DeleteTopic", "ReassignPartitions", "ElectLeaders", "AlterTopicConfig"]


def authorized_cluster() -> Cluster:
    cluster = cluster_with(1, 2, 3, config=ControllerConfig(super_users=frozenset({"User:ops"})))
    cluster.create("t", [1, 2], principal="User:ops")
    cluster.failure(1)
    cluster.startup(1)
    cluster.isr_change("t", 0, [2, 1])
    return cluster


@pytest.mark.parametrize("event", ADMIN)
@pytest.mark.parametrize("principal", [None, "User:eve"])
def test_admin_event_from_a_non_super_user_is_refused(event: str, principal: str | None) -> None:
    cluster = authorized_cluster()
    before = snapshot(cluster)
    topics = dict(cluster.controller.cluster.topics)
    out = admin_events(cluster)[event](principal=principal)
    row = out.only_row
    assert_rejected(row, "CLUSTER_AUTHORIZATION_FAILED")
    assert row["partition"] is None
    assert_unchanged(cluster, before)
    assert cluster.controller.cluster.topics == topics


@pytest.mark.parametrize("event", ADMIN)
def test_admin_event_from_a_super_user_is_applied(event: str) -> None:
    cluster = authorized_cluster()
    out = admin_events(cluster)[event](principal="User:ops")
    assert "CLUSTER_AUTHORIZATION_FAILED" not in out.errors
    assert any(r["outcome"] == "ACCEPTED" for r in out.audits)


def test_broker_and_controller_events_need_no_principal() -> None:
    cluster = authorized_cluster()
    for out in (cluster.isr_change("t", 0, [2]), cluster.shutdown(3), cluster.imbalance_check(),
                cluster.controller_change()):
        assert "CLUSTER_AUTHORIZATION_FAILED" not in out.errors


def test_without_super_users_any_principal_may_administer() -> None:
    cluster = cluster_with(1, 2)
    assert cluster.create("t", [1, 2], principal="User:anyone").row("t", 0)["outcome"] == "ACCEPTED"
    assert cluster.delete("t").row("t", 0)["outcome"] == "ACCEPTED"


# =====================================================================================================
# Epochs across a reassignment of a partition that never had a leader
# =====================================================================================================

def test_partition_epoch_rises_with_every_decision_even_before_the_first_leader() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [4, 5])  # no live replica: NewPartition
    decisions = cluster.reassign(("t", 0, [1, 2])).decisions
    decisions += cluster.startup(4).decisions  # a replica's broker appears: first election
    assert cluster.rec("t", 0).leader != -1
    epochs = [d["partition_epoch"] for d in decisions]
    assert epochs == sorted(set(epochs)), f"partition epochs {epochs} must strictly rise"


def test_cancel_keeps_the_isr_within_the_replicas() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1])
    cluster.reassign(("t", 0, [1, 2]))
    cluster.failure(1)
    cluster.elect("UNCLEAN", ("t", 0))  # the adding replica 2 becomes the only ISR member
    assert cluster.rec("t", 0).isr == (2,)
    cluster.reassign(("t", 0, None))
    rec = cluster.rec("t", 0)
    assert set(rec.isr) <= set(rec.replicas), rec
    assert rec.state is not P.ONLINE or rec.leader != -1, rec


def test_new_target_dropping_the_leading_adding_replica_elects_a_new_leader() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1])
    cluster.reassign(("t", 0, [2, 3]))  # RS [2, 3, 1], AR [2, 3], RR [1]
    cluster.isr_change("t", 0, [1, 2])
    cluster.elect("PREFERRED", ("t", 0))  # the adding replica 2 leads
    assert cluster.rec("t", 0).leader == 2
    cluster.reassign(("t", 0, [3]))  # 2 is no longer wanted
    rec = cluster.rec("t", 0)
    assert rec.leader != -1 or rec.state is not P.ONLINE, rec
    assert rec.leader == 1, rec


def test_completed_reassignment_without_new_leader_still_emits_a_decision() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.isr_change("t", 0, [1])
    cluster.failure(1)  # offline: leader -1, ISR [1]
    before = cluster.rec("t", 0)
    out = cluster.reassign(("t", 0, [1]))  # the target is within the ISR: completes at once
    assert cluster.rec("t", 0).replicas == (1,)
    decisions = out.decisions_for("t", 0)
    assert decisions, "the replicas changed from [1, 2] to [1] without a decision"
    assert decisions[-1]["replicas"] == [1]
    assert decisions[-1]["partition_epoch"] > before.partition_epoch


def test_isr_change_of_a_topic_being_deleted_does_not_resume_its_reassignment() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2])
    cluster.reassign(("t", 0, [1, 3]))
    cluster.failure(2)  # the deletion will wait on broker 2
    cluster.delete("t")
    out = cluster.isr_change("t", 0, [1, 3])
    assert out.only_row["error"] != "INVALID_TRANSITION", out.only_row
    assert all(d["election"] is None for d in out.decisions)


# =====================================================================================================
# Every error name of the contract shows up in some audit
# =====================================================================================================

def _errors_of(*outs: Result) -> set[str]:
    return set().union(*(o.errors for o in outs))


def _stale_controller_epoch() -> set[str]:
    cluster = cluster_with(1)
    cluster.controller_change()
    return cluster.imbalance_check(controller_epoch=0).errors


def _stale_broker_epoch() -> set[str]:
    cluster = cluster_with(1)
    return cluster.startup(1, epoch=1).errors


def _broker_not_available() -> set[str]:
    return cluster_with(1).shutdown(2, epoch=1).errors


def _unknown_topic_or_partition() -> set[str]:
    return cluster_with(1).delete("nope").errors


def _topic_already_exists() -> set[str]:
    cluster = cluster_with(1)
    cluster.create("t", [1])
    return cluster.create("t", [1]).errors


def _invalid_replica_assignment() -> set[str]:
    return cluster_with(1).create("t", [1, 1]).errors


def _invalid_partitions() -> set[str]:
    cluster = cluster_with(1)
    cluster.create("t", [1])
    return cluster.send("CreatePartitions", topic="t", assignment={"5": [1]}).errors


def _no_reassignment_in_progress() -> set[str]:
    cluster = cluster_with(1)
    cluster.create("t", [1])
    return cluster.reassign(("t", 0, None)).errors


def _isr(isr: list[int], **overrides: Any) -> set[str]:
    """t-0 on [1, 2, 3], broker 3 failed: leader 1, ISR [1, 2], epochs 1."""
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3])
    cluster.failure(3)
    return cluster.isr_change("t", 0, isr, **overrides).errors


def _invalid_topic_exception() -> set[str]:
    return cluster_with(1).create("no spaces", [1]).errors


def _election(kind: str, setup: Callable[[Cluster], object]) -> Callable[[], set[str]]:
    def scenario() -> set[str]:
        cluster = cluster_with(1, 2)
        cluster.create("t", [1, 2])
        setup(cluster)
        return cluster.elect(kind, ("t", 0)).errors
    return scenario


def _cluster_authorization_failed() -> set[str]:
    cluster = cluster_with(1, config=ControllerConfig(super_users=frozenset({"User:ops"})))
    return cluster.create("t", [1], principal="User:dev").errors


def _invalid_transition() -> set[str]:
    # No event asks for an illegal transition; the partition operator's own input can: a CREATE replayed
    # onto an existing partition.
    command = Command(action=Action.CREATE, event_id="e", event_type="CreateTopic", source_offset=0,
                      controller_epoch=1, topic="t", partition=0, replicas=(1,), live_brokers=frozenset({1}))
    first = apply_command(None, command)
    again = apply_command(first.record, command)
    return {a["error"] for a in (first.audit, again.audit) if a["error"]}


def _no_live_replica() -> set[str]:
    cluster = cluster_with(1)
    cluster.create("t", [2, 3])  # stays NewPartition
    return cluster.alter("t", {UNCLEAN: "true"}).errors  # tries again: still no live replica


def _duplicate_event() -> set[str]:
    cluster = cluster_with(1)
    cluster.imbalance_check(event_id="same")
    return cluster.imbalance_check(event_id="same").errors


ERROR_SCENARIOS: dict[Error, Callable[[], set[str]]] = {
    Error.STALE_CONTROLLER_EPOCH: _stale_controller_epoch,
    Error.STALE_BROKER_EPOCH: _stale_broker_epoch,
    Error.BROKER_NOT_AVAILABLE: _broker_not_available,
    Error.UNKNOWN_TOPIC_OR_PARTITION: _unknown_topic_or_partition,
    Error.TOPIC_ALREADY_EXISTS: _topic_already_exists,
    Error.INVALID_REPLICA_ASSIGNMENT: _invalid_replica_assignment,
    Error.INVALID_PARTITIONS: _invalid_partitions,
    Error.NO_REASSIGNMENT_IN_PROGRESS: _no_reassignment_in_progress,
    Error.FENCED_LEADER_EPOCH: lambda: _isr([1], leader_epoch=0),
    Error.INVALID_UPDATE_VERSION: lambda: _isr([1], partition_epoch=0),
    Error.INELIGIBLE_REPLICA: lambda: _isr([1, 2, 3]),
    Error.INVALID_REQUEST: lambda: _isr([1, 2], recovery="RECOVERING"),
    Error.NOT_CONTROLLER: lambda: _isr([1], partition_epoch=9),
    Error.ELECTION_NOT_NEEDED: _election("PREFERRED", lambda c: None),
    Error.PREFERRED_LEADER_NOT_AVAILABLE: _election("PREFERRED", lambda c: c.failure(1)),
    Error.ELIGIBLE_LEADERS_NOT_AVAILABLE: _election("UNCLEAN", lambda c: (c.failure(1), c.failure(2))),
    Error.INVALID_TOPIC_EXCEPTION: _invalid_topic_exception,
    Error.CLUSTER_AUTHORIZATION_FAILED: _cluster_authorization_failed,
    Error.INVALID_TRANSITION: _invalid_transition,
    Error.NO_LIVE_REPLICA: _no_live_replica,
    Error.DUPLICATE_EVENT: _duplicate_event,
}

CONTRACT_ERRORS = {
    "STALE_CONTROLLER_EPOCH", "STALE_BROKER_EPOCH", "BROKER_NOT_AVAILABLE", "UNKNOWN_TOPIC_OR_PARTITION",
    "TOPIC_ALREADY_EXISTS", "INVALID_REPLICA_ASSIGNMENT", "INVALID_PARTITIONS", "NO_REASSIGNMENT_IN_PROGRESS",
    "FENCED_LEADER_EPOCH", "INVALID_UPDATE_VERSION", "INELIGIBLE_REPLICA", "INVALID_REQUEST", "NOT_CONTROLLER",
    "ELECTION_NOT_NEEDED", "PREFERRED_LEADER_NOT_AVAILABLE", "ELIGIBLE_LEADERS_NOT_AVAILABLE",
    "INVALID_TOPIC_EXCEPTION", "CLUSTER_AUTHORIZATION_FAILED", "INVALID_TRANSITION", "NO_LIVE_REPLICA",
    "DUPLICATE_EVENT",
}


def test_error_enum_is_the_contract_list() -> None:
    assert {str(e) for e in Error} == CONTRACT_ERRORS


@pytest.mark.parametrize("error", list(ERROR_SCENARIOS), ids=str)
def test_error_appears_in_its_scenario(error: Error) -> None:
    assert str(error) in ERROR_SCENARIOS[error]()


def test_every_contract_error_appears_in_some_audit() -> None:
    seen: set[str] = set()
    for scenario in ERROR_SCENARIOS.values():
        seen |= scenario()
    assert seen >= CONTRACT_ERRORS, f"never audited: {sorted(CONTRACT_ERRORS - seen)}"
    assert seen <= CONTRACT_ERRORS, f"not in the contract: {sorted(seen - CONTRACT_ERRORS)}"


# =====================================================================================================
# parse_event: bad input is Malformed with a reason, never an exception
# =====================================================================================================

def envelope(event_type: str = "BrokerChange", **fields: object) -> dict:
    body = {"type": event_type, "event_id": "e-1", "ts": "2024-05-01T12:00:00Z", "controller_epoch": 3}
    if event_type == "BrokerChange":
        body |= {"broker_id": 1, "change": "STARTUP", "broker_epoch": 10}
    body |= fields
    return body


def without(body: dict, key: str) -> dict:
    return {k: v for k, v in body.items() if k != key}


MALFORMED: dict[str, tuple[object, str]] = {
    "null record": (None, "empty"),
    "not JSON": ("{not json", "not JSON"),
    "truncated JSON": (b'{"type": "BrokerChange"', "not JSON"),
    "not UTF-8": (b"\xff\xfe{}", "not JSON"),
    "JSON array": ("[1, 2]", "not a JSON object"),
    "JSON number": ("42", "not a JSON object"),
    "JSON string": ('"BrokerChange"', "not a JSON object"),
    "unknown type": (envelope("BrokerExplosion"), "unknown event type 'BrokerExplosion'"),
    "type not a string": (envelope() | {"type": 7}, "'type'"),
    "missing type": (without(envelope(), "type"), "missing field 'type'"),
    "missing event_id": (without(envelope(), "event_id"), "missing field 'event_id'"),
    "empty event_id": (envelope(event_id=""), "'event_id'"),
    "missing ts": (without(envelope(), "ts"), "missing field 'ts'"),
    "missing controller_epoch": (without(envelope(), "controller_epoch"), "missing field 'controller_epoch'"),
    "missing broker_id": (without(envelope(), "broker_id"), "missing field 'broker_id'"),
    "broker_id as string": (envelope(broker_id="1"), "'broker_id' must be an integer"),
    "broker_id as float": (envelope(broker_id=1.0), "'broker_id' must be an integer"),
    "broker_id as bool": (envelope(broker_id=True), "'broker_id' must be an integer"),
    "controller_epoch as bool": (envelope(controller_epoch=False), "'controller_epoch' must be an integer"),
    "negative broker id": (envelope(broker_id=-1), "'broker_id' must be >= 0"),
    "negative controller epoch": (envelope(controller_epoch=-2), "'controller_epoch' must be >= 0"),
    "unknown change": (envelope(change="REBOOT"), "'change' must be one of"),
    "principal not a string": (envelope(principal=5), "'principal'"),
    "isr not a list": (envelope("IsrChange", topic="t", partition=0, broker_id=1, broker_epoch=1, leader_epoch=0,
                                partition_epoch=0, isr="1,2"), "'isr'"),
    "isr with bool": (envelope("IsrChange", topic="t", partition=0, broker_id=1, broker_epoch=1, leader_epoch=0,
                               partition_epoch=0, isr=[1, True]), "'isr' must be an integer"),
    "unknown recovery state": (envelope("IsrChange", topic="t", partition=0, broker_id=1, broker_epoch=1,
                                        leader_epoch=0, partition_epoch=0, isr=[1], leader_recovery_state="DONE"),
                               "'leader_recovery_state'"),
    "topic not a string": (envelope("DeleteTopic", topic=3), "'topic' must be a string"),
    "assignment not an object": (envelope("CreateTopic", topic="t", assignment=[[1, 2]]), "'assignment'"),
    "assignment key not a partition id": (envelope("CreateTopic", topic="t", assignment={"a": [1]}),
                                          "'assignment'"),
    "assignment replicas with bool": (envelope("CreateTopic", topic="t", assignment={"0": [True]}),
                                      "'assignment'"),
    "config value not a string": (envelope("CreateTopic", topic="t", assignment={"0": [1]},
                                           configs={UNCLEAN: True}), "'configs'"),
    "config null at creation": (envelope("CreateTopic", topic="t", assignment={"0": [1]}, configs={UNCLEAN: None}),
                                "'configs'"),
    "reassignment without replicas": (envelope("ReassignPartitions", partitions=[{"topic": "t", "partition": 0}]),
                                      "missing field 'replicas'"),
    "reassignment partition as bool": (envelope("ReassignPartitions",
                                                partitions=[{"topic": "t", "partition": False, "replicas": [1]}]),
                                       "'partitions.partition' must be an integer"),
    "unknown election type": (envelope("ElectLeaders", election_type="RANDOM"), "'election_type'"),
    "election partitions not a list": (envelope("ElectLeaders", election_type="PREFERRED", partitions={"t": 0}),
                                       "'partitions'"),
    "controller id missing": (envelope("ControllerChange"), "missing field 'controller_id'"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_input(case: str) -> None:
    raw, reason = MALFORMED[case]
    if isinstance(raw, dict):
        raw = json.dumps(raw)
    parsed = parse_event(raw)  # type: ignore[arg-type]
    assert isinstance(parsed, Malformed), parsed
    assert reason in parsed.reason


def test_well_formed_events_parse_with_their_defaults() -> None:
    isr = parse_event(json.dumps(envelope("IsrChange", topic="t", partition=0, broker_id=1, broker_epoch=1,
                                          leader_epoch=0, partition_epoch=0, isr=[1])))
    assert isinstance(isr, ControllerEvent)
    assert isr.fields["leader_recovery_state"] == "RECOVERED"
    assert (isr.type, isr.event_id, isr.controller_epoch, isr.principal) == ("IsrChange", "e-1", 3, None)
    create = parse_event(json.dumps(envelope("CreateTopic", topic="t", assignment={"0": [1, 2]})).encode())
    assert isinstance(create, ControllerEvent)
    assert create.fields["configs"] == {}
    elect = parse_event(json.dumps(envelope("ElectLeaders", election_type="UNCLEAN")))
    assert isinstance(elect, ControllerEvent)
    assert elect.fields["partitions"] is None
    imbalance = parse_event(json.dumps(envelope("LeaderImbalanceCheck", principal="User:ops")))
    assert isinstance(imbalance, ControllerEvent)
    assert imbalance.principal == "User:ops"


def test_kafka_refusals_are_not_malformed() -> None:
    # A negative broker id in an admin tool's replica list is Kafka's INVALID_REPLICA_ASSIGNMENT, not bad input.
    raw = event_json("ReassignPartitions", event_id="r", controller_epoch=1,
                     partitions=[{"topic": "t", "partition": 0, "replicas": [1, -1]}])
    parsed = parse_event(raw)
    assert isinstance(parsed, ControllerEvent)
    assert parsed.fields["partitions"][0]["replicas"] == [1, -1]
    create = parse_event(event_json("CreateTopic", event_id="c", controller_epoch=1, topic="t",
                                    assignment={"0": [-4]}))
    assert isinstance(create, ControllerEvent)


def test_round_trip_through_to_json() -> None:
    raw = event_json("AlterTopicConfig", event_id="a", controller_epoch=2, principal="User:ops", topic="t",
                     configs={UNCLEAN: None})
    parsed = parse_event(raw)
    assert isinstance(parsed, ControllerEvent)
    again = parse_event(parsed.to_json())
    assert again == parsed
