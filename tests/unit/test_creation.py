"""Topic and partition creation (CreateTopic, CreatePartitions): the INITIAL election, a creation on dead brokers,
refused assignments and names.

JSON events in (through `parse_event`), decisions and audit rows out (through `Controller.handle`), for the
triggers of docs/semantics.md."""

from __future__ import annotations

import pytest

from schemas.records import to_row
from statemachine.states import PartitionState, ReplicaState

from .cluster import UNCLEAN, assert_rejected, assert_unchanged, cluster_with, snapshot

P = PartitionState
R = ReplicaState


# =====================================================================================================
# Topic and partition creation
# =====================================================================================================

def test_create_topic_elects_initial_leaders() -> None:
    cluster = cluster_with(1, 2, 3)
    out = cluster.create("orders", [1, 2, 3], [2, 3, 1])
    assert [(d.topic, d.partition) for d in out.decisions] == [("orders", 0), ("orders", 1)]
    d0 = out.decision("orders", 0)
    expected = {
        "topic": "orders", "partition": 0, "controller_epoch": 1, "leader": 1, "leader_epoch": 0, "isr": [1, 2, 3],
        "partition_epoch": 0, "replicas": [1, 2, 3], "adding_replicas": [], "removing_replicas": [],
        "leader_recovery_state": "RECOVERED", "is_new": True, "recipients": [1, 2, 3], "election": "INITIAL",
        "cause": "CreateTopic", "cause_event_id": out.event.event_id, "source_offset": cluster.offset - 1,
    }
    # Every contract field, with its value (the contract allows additional fields).
    assert {k: to_row(d0).get(k, "<missing>") for k in expected} == expected
    assert out.decision("orders", 1).leader == 2
    row = out.row("orders", 0)
    assert (row.from_state, row.to_state, row.outcome, row.error) == (
        "NonExistentPartition", "OnlinePartition", "ACCEPTED", None)
    assert (row.leader_before, row.leader_after) == (-1, 1)
    assert (row.isr_before, row.isr_after) == ((), (1, 2, 3))
    assert (row.partition_epoch_before, row.partition_epoch_after) == (0, 0)
    assert row.election == "INITIAL"
    assert row.replica_states == {1: "OnlineReplica", 2: "OnlineReplica", 3: "OnlineReplica"}
    assert row.event_type == "CreateTopic"
    assert cluster.controller.cluster.topics == {"orders": 2}


def test_create_topic_with_a_dead_replica_leaves_it_out_of_the_isr() -> None:
    cluster = cluster_with(2, 3)
    out = cluster.create("t", [1, 2, 3])
    d = out.decision("t", 0)
    assert (d.leader, d.isr, d.recipients, d.replicas) == (2, (2, 3), (2, 3), (1, 2, 3))


def test_partition_created_without_live_replica_stays_new_until_a_replica_starts() -> None:
    cluster = cluster_with(9)
    out = cluster.create("t", [1, 2])
    assert out.decisions == []
    # Created (NonExistent -> New), then Kafka's failed New -> Online change as a rejected step of its own.
    assert [(r.step, r.from_state, r.to_state, r.outcome, r.error) for r in out.rows("t", 0)] == [
        (0, "NonExistentPartition", "NewPartition", "ACCEPTED", None),
        (1, "NewPartition", "NewPartition", "REJECTED", "NO_LIVE_REPLICA")]
    assert cluster.rec("t", 0).leader == -1
    started = cluster.startup(2)
    d = started.decision("t", 0)
    # The first leader of the partition: epochs start at 0, the LeaderAndIsr creates the replica.
    assert (d.leader, d.isr, d.recipients, d.election, d.is_new) == (2, (2,), (2,), "INITIAL", True)
    assert (d.leader_epoch, d.partition_epoch) == (0, 0)
    assert started.row("t", 0).from_state == "NewPartition"
    assert started.row("t", 0).to_state == "OnlinePartition"


def test_create_partitions_adds_partitions_after_the_existing_ones() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2])
    before = cluster.rec("t", 0)
    out = cluster.send("CreatePartitions", topic="t", assignment={"1": [2, 3], "2": [3, 1]})
    assert [(d.partition, d.leader, d.is_new, d.election) for d in out.decisions] == [
        (1, 2, True, "INITIAL"), (2, 3, True, "INITIAL")]
    assert all((d.leader_epoch, d.partition_epoch) == (0, 0) for d in out.decisions)
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
    assert out.cluster_row.topic == "t"
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
    assert out.only_row.partition is None
    assert out.decisions == []
    assert_unchanged(cluster, before)
    assert set(cluster.controller.cluster.topics) == {"t"}


def test_legal_topic_name_with_every_allowed_character() -> None:
    cluster = cluster_with(1)
    out = cluster.create("Orders.v2_eu-West", [1])
    assert out.row("Orders.v2_eu-West", 0).outcome == "ACCEPTED"


