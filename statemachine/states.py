"""Partition and replica states, each declared with its valid previous states (as in Kafka's
PartitionStateMachine.scala and ReplicaStateMachine.scala)."""

from __future__ import annotations

from enum import StrEnum


class PartitionState(StrEnum):
    NON_EXISTENT = "NonExistentPartition"
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"


class ReplicaState(StrEnum):
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT = "NonExistentReplica"


P = PartitionState
R = ReplicaState

VALID_PREVIOUS_PARTITION_STATES: dict[PartitionState, frozenset[PartitionState]] = {
    P.NEW: frozenset({P.NON_EXISTENT}),
    P.ONLINE: frozenset({P.NEW, P.ONLINE, P.OFFLINE}),
    P.OFFLINE: frozenset({P.NEW, P.ONLINE, P.OFFLINE}),
    P.NON_EXISTENT: frozenset({P.OFFLINE}),
}

VALID_PREVIOUS_REPLICA_STATES: dict[ReplicaState, frozenset[ReplicaState]] = {
    R.NEW: frozenset({R.NON_EXISTENT}),
    R.ONLINE: frozenset({R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE}),
    R.OFFLINE: frozenset({R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE}),
    R.DELETION_STARTED: frozenset({R.OFFLINE}),
    R.DELETION_SUCCESSFUL: frozenset({R.DELETION_STARTED}),
    R.DELETION_INELIGIBLE: frozenset({R.OFFLINE, R.DELETION_STARTED}),
    R.NON_EXISTENT: frozenset({R.DELETION_SUCCESSFUL}),
}


class IllegalTransition(Exception):
    """A state change outside the target's valid previous states: the whole command is rejected."""


def check_partition_transition(current: PartitionState, target: PartitionState) -> None:
    if current not in VALID_PREVIOUS_PARTITION_STATES[target]:
        raise IllegalTransition(
            f"partition cannot move from {current} to {target}: valid previous states of {target} are "
            + ", ".join(sorted(VALID_PREVIOUS_PARTITION_STATES[target]))
        )


def check_replica_transition(broker: int, current: ReplicaState, target: ReplicaState) -> None:
    if current not in VALID_PREVIOUS_REPLICA_STATES[target]:
        raise IllegalTransition(
            f"replica on broker {broker} cannot move from {current} to {target}: valid previous states of "
            f"{target} are " + ", ".join(sorted(VALID_PREVIOUS_REPLICA_STATES[target]))
        )
