"""Every error name of the contract shows up in some audit row.

JSON events in (through `parse_event`), decisions and audit rows out (through `Controller.handle`), for the
triggers of docs/semantics.md."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from statemachine.controller import ControllerConfig
from statemachine.errors import Error
from statemachine.partition import apply_command
from statemachine.record import Action, Command
from statemachine.states import PartitionState, ReplicaState

from .cluster import UNCLEAN, Cluster, Result, cluster_with

P = PartitionState
R = ReplicaState


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


def _not_leader_or_follower() -> set[str]:
    """A broker assigns a log dir to a replica it does not hold (ReplicationControlManager
    .handleAssignReplicasToDirs)."""
    cluster = cluster_with(1, 2)
    cluster.create("t", [1])
    cluster.send("BrokerRegistration", broker_id=2, broker_epoch=7, log_dirs=["d1", "d2"])
    return cluster.send("AssignReplicasToDirs", broker_id=2, broker_epoch=7,
                        assignments=[{"topic": "t", "partition": 0, "directory": "d1"}]).errors


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
    return {a.error for a in (first.audit, again.audit) if a.error}


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
    Error.NOT_LEADER_OR_FOLLOWER: _not_leader_or_follower,
    Error.UNKNOWN_SERVER_ERROR: lambda: _isr([1], write_failed=True),
    Error.INVALID_TRANSITION: _invalid_transition,
    Error.NO_LIVE_REPLICA: _no_live_replica,
    Error.DUPLICATE_EVENT: _duplicate_event,
}

CONTRACT_ERRORS = {
    "STALE_CONTROLLER_EPOCH", "STALE_BROKER_EPOCH", "BROKER_NOT_AVAILABLE", "UNKNOWN_TOPIC_OR_PARTITION",
    "TOPIC_ALREADY_EXISTS", "INVALID_REPLICA_ASSIGNMENT", "INVALID_PARTITIONS", "NO_REASSIGNMENT_IN_PROGRESS",
    "FENCED_LEADER_EPOCH", "INVALID_UPDATE_VERSION", "INELIGIBLE_REPLICA", "INVALID_REQUEST", "NOT_CONTROLLER",
    "ELECTION_NOT_NEEDED", "PREFERRED_LEADER_NOT_AVAILABLE", "ELIGIBLE_LEADERS_NOT_AVAILABLE",
    "INVALID_TOPIC_EXCEPTION", "CLUSTER_AUTHORIZATION_FAILED", "NOT_LEADER_OR_FOLLOWER", "UNKNOWN_SERVER_ERROR",
    "INVALID_TRANSITION", "NO_LIVE_REPLICA",
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


