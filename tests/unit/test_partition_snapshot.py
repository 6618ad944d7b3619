"""PartitionSnapshot: a partition seeded as a KRaft metadata snapshot holds it (the starting state of a log that
begins at a snapshot). It is created in the state written there, decides nothing, and the log after it goes on
from its epochs; it never overwrites a partition that exists, and refuses a state Kafka could not hold."""

from __future__ import annotations

from typing import Any

from statemachine.states import PartitionState, ReplicaState

from .cluster import Cluster, assert_rejected, cluster_with, snapshot


def seed(cluster: Cluster, partition: int = 0, **fields: Any) -> Any:
    body = {"topic": "t", "partition": partition, "replicas": [1, 2, 3], "isr": [1, 2], "leader": 1,
            "leader_epoch": 4, "partition_epoch": 9, **fields}
    return cluster.send("PartitionSnapshot", **body)


def test_a_snapshot_seeds_the_partition_as_it_stood_and_decides_nothing() -> None:
    cluster = cluster_with(1, 2)
    out = seed(cluster, configs={"unclean.leader.election.enable": "true"})
    assert out.decisions == []
    row = out.row("t", 0)
    assert (row.outcome, row.from_state, row.to_state, row.action) == (
        "ACCEPTED", "NonExistentPartition", "OnlinePartition", "RESTORE")
    rec = cluster.controller.partitions[("t", 0)]
    assert (rec.leader, rec.isr, rec.leader_epoch, rec.partition_epoch) == (1, (1, 2), 4, 9)
    # Broker 3 is not live: its replica is offline.
    assert rec.replica_states == {1: ReplicaState.ONLINE, 2: ReplicaState.ONLINE, 3: ReplicaState.OFFLINE}
    assert cluster.controller.cluster.topics["t"] == 1
    assert cluster.controller.unclean_allowed("t")


def test_the_log_after_the_snapshot_goes_on_from_its_epochs() -> None:
    cluster = cluster_with(1, 2)
    seed(cluster)
    out = cluster.failure(1)
    d = out.decision("t", 0)
    assert (d.leader, d.isr, d.leader_epoch, d.partition_epoch) == (2, (2,), 5, 10)


def test_a_leaderless_partition_is_seeded_offline() -> None:
    cluster = cluster_with(1)
    seed(cluster, isr=[3], leader=-1)
    assert cluster.controller.partitions[("t", 0)].state is PartitionState.OFFLINE


def test_a_snapshot_never_overwrites_and_refuses_impossible_states() -> None:
    cluster = cluster_with(1, 2)
    seed(cluster)
    before = snapshot(cluster)
    assert_rejected(seed(cluster, leader_epoch=8).cluster_row, "TOPIC_ALREADY_EXISTS")
    assert_rejected(seed(cluster, partition=1, isr=[1, 4]).cluster_row, "INVALID_REPLICA_ASSIGNMENT")
    assert_rejected(seed(cluster, partition=1, leader=3).cluster_row, "INVALID_REPLICA_ASSIGNMENT")
    assert_rejected(seed(cluster, partition=1, replicas=[1, 1]).cluster_row, "INVALID_REPLICA_ASSIGNMENT")
    assert cluster.controller.partitions == before
