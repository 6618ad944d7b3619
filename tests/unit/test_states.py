"""The valid-previous-states tables, exactly as docs/semantics.md lists them: every (from, to) pair of partition
states and of replica states is checked, the valid ones pass, every other one raises IllegalTransition."""

from __future__ import annotations

import itertools

import pytest

from statemachine.states import (
    VALID_PREVIOUS_PARTITION_STATES,
    VALID_PREVIOUS_REPLICA_STATES,
    IllegalTransition,
    PartitionState,
    ReplicaState,
    check_partition_transition,
    check_replica_transition,
)

# Written out by name from docs/semantics.md, independently of the code's enum members.
SPEC_PARTITION: dict[str, set[str]] = {
    "NewPartition": {"NonExistentPartition"},
    "OnlinePartition": {"NewPartition", "OnlinePartition", "OfflinePartition"},
    "OfflinePartition": {"NewPartition", "OnlinePartition", "OfflinePartition"},
    "NonExistentPartition": {"OfflinePartition"},
}

SPEC_REPLICA: dict[str, set[str]] = {
    "NewReplica": {"NonExistentReplica"},
    "OnlineReplica": {"NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"},
    "OfflineReplica": {"NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"},
    "ReplicaDeletionStarted": {"OfflineReplica"},
    "ReplicaDeletionSuccessful": {"ReplicaDeletionStarted"},
    "ReplicaDeletionIneligible": {"OfflineReplica", "ReplicaDeletionStarted"},
    "NonExistentReplica": {"ReplicaDeletionSuccessful"},
}

PARTITION_PAIRS = list(itertools.product(PartitionState, PartitionState))
REPLICA_PAIRS = list(itertools.product(ReplicaState, ReplicaState))


def test_state_names_are_kafkas() -> None:
    assert {str(s) for s in PartitionState} == set(SPEC_PARTITION)
    assert {str(s) for s in ReplicaState} == set(SPEC_REPLICA)


def test_partition_table_matches_the_spec() -> None:
    assert {str(t): {str(s) for s in prev} for t, prev in VALID_PREVIOUS_PARTITION_STATES.items()} == SPEC_PARTITION


def test_replica_table_matches_the_spec() -> None:
    assert {str(t): {str(s) for s in prev} for t, prev in VALID_PREVIOUS_REPLICA_STATES.items()} == SPEC_REPLICA


@pytest.mark.parametrize(("current", "target"), PARTITION_PAIRS, ids=[f"{a}->{b}" for a, b in PARTITION_PAIRS])
def test_partition_transition(current: PartitionState, target: PartitionState) -> None:
    if str(current) in SPEC_PARTITION[str(target)]:
        check_partition_transition(current, target)
    else:
        with pytest.raises(IllegalTransition) as raised:
            check_partition_transition(current, target)
        # The message names both ends, for the audit row.
        assert str(current) in str(raised.value)
        assert str(target) in str(raised.value)


@pytest.mark.parametrize(("current", "target"), REPLICA_PAIRS, ids=[f"{a}->{b}" for a, b in REPLICA_PAIRS])
def test_replica_transition(current: ReplicaState, target: ReplicaState) -> None:
    if str(current) in SPEC_REPLICA[str(target)]:
        check_replica_transition(7, current, target)
    else:
        with pytest.raises(IllegalTransition) as raised:
            check_replica_transition(7, current, target)
        message = str(raised.value)
        assert "7" in message
        assert str(current) in message
        assert str(target) in message

