"""Kafka's ReplicaStateMachineTest, re-expressed through `apply_command` and `Controller.handle`.

Replica states are observed in the record (`replica_states`) and in the audit row's `replica_states`.
Invalid (from, to) pairs that no command can request are checked at table level in test_states.py."""

from __future__ import annotations

from typing import Any

from statemachine.partition import apply_command
from statemachine.record import Action, PartitionRecord
from statemachine.states import PartitionState, ReplicaState

from .cluster import BROKER, OTHER, Cluster, command

P = PartitionState
R = ReplicaState


def record(replicas: tuple[int, ...], leader: int, isr: tuple[int, ...], replica_states: dict[int, ReplicaState],
           state: PartitionState = P.ONLINE, **fields: Any) -> PartitionRecord:
    return PartitionRecord("t", 0, state=state, replicas=replicas, leader=leader, leader_epoch=2, isr=isr,
                           partition_epoch=4, replica_states=replica_states, **fields)


# -- startup of a (new) controller: replica states re-derived from broker liveness -------------------------

def test_failover_marks_replica_on_live_broker_online() -> None:
    before = record((BROKER,), BROKER, (BROKER,), {BROKER: R.OFFLINE})
    applied = apply_command(before, command(Action.CONTROLLER_FAILOVER, live={BROKER}))
    assert applied.record is not None
    assert applied.record.replica_states == {BROKER: R.ONLINE}
    assert applied.audit.replica_states == {BROKER: "OnlineReplica"}
    assert applied.decisions == []  # no leader/ISR change


def test_failover_marks_replica_on_dead_broker_offline() -> None:
    before = record((BROKER,), BROKER, (BROKER,), {BROKER: R.ONLINE})
    applied = apply_command(before, command(Action.CONTROLLER_FAILOVER, live=set()))
    assert applied.record is not None
    assert applied.record.replica_states == {BROKER: R.OFFLINE}
    assert applied.record.state is P.OFFLINE
    assert applied.record.leader == -1
    assert applied.record.isr == (BROKER,)


def test_failover_with_replica_without_leader_on_dead_broker() -> None:
    # Kafka: the only replica is on broker 100, which is not live; broker 5 is.
    cluster = Cluster()
    cluster.start(BROKER)
    cluster.create("t", [100])
    out = cluster.controller_change()
    assert cluster.replica_states("t", 0) == {100: "OfflineReplica"}
    assert cluster.rec("t", 0).state is P.NEW
    assert out.decisions == []


# -- NonExistentReplica / NewReplica -----------------------------------------------------------------------

def reassigning(cluster: Cluster) -> None:
    cluster.start(1, 2, 3, 4)
    cluster.create("t", [1, 2, 3])
    cluster.reassign(("t", 0, [1, 2, 4]))


def test_nonexistent_to_new_replica_when_a_reassignment_adds_it() -> None:
    cluster = Cluster()
    reassigning(cluster)
    assert cluster.replica_states("t", 0) == {1: "OnlineReplica", 2: "OnlineReplica", 3: "OnlineReplica",
                                              4: "NewReplica"}


def test_new_to_online_replica_at_creation() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    out = cluster.create("t", [1, 2])
    assert cluster.replica_states("t", 0) == {1: "OnlineReplica", 2: "OnlineReplica"}
    assert out.row("t", 0).replica_states == {1: "OnlineReplica", 2: "OnlineReplica"}


def test_new_to_online_replica_when_the_reassignment_completes() -> None:
    cluster = Cluster()
    reassigning(cluster)
    cluster.isr_change("t", 0, [1, 2, 3, 4])
    assert cluster.rec("t", 0).replicas == (1, 2, 4)
    assert cluster.replica_states("t", 0) == {1: "OnlineReplica", 2: "OnlineReplica", 4: "OnlineReplica"}


def test_new_to_offline_replica_when_its_broker_fails_before_catching_up() -> None:
    cluster = Cluster()
    reassigning(cluster)
    before = cluster.rec("t", 0)
    out = cluster.failure(4)
    assert cluster.replica_states("t", 0)[4] == "OfflineReplica"
    # Not in the ISR: nothing to write.
    assert out.decisions == []
    assert cluster.rec("t", 0).partition_epoch == before.partition_epoch


def test_creation_moves_every_replica_to_online_replica() -> None:
    cluster = Cluster()
    cluster.start(1)
    cluster.create("t", [1, 2])
    assert cluster.replica_states("t", 0) == {1: "OnlineReplica", 2: "OnlineReplica"}


# -- OnlineReplica -------------------------------------------------------------------------------------------

def test_online_to_online_replica_on_controller_failover_changes_nothing() -> None:
    cluster = Cluster()
    cluster.start(BROKER)
    cluster.create("t", [BROKER])
    before = cluster.rec("t", 0)
    out = cluster.controller_change()
    assert out.row("t", 0).outcome == "NO_OP"
    assert out.decisions == []
    assert cluster.rec("t", 0) == before
    assert cluster.replica_states("t", 0) == {BROKER: "OnlineReplica"}


def test_online_to_offline_replica_of_the_leader() -> None:
    # Kafka: replicas [5, 6], leader 5, ISR [5, 6]; replica 5 offline -> leader -1, ISR [6], LeaderAndIsr to 6.
    # Here 6 is shutting down, so no clean election can take over first.
    before = record((BROKER, OTHER), BROKER, (BROKER, OTHER), {BROKER: R.ONLINE, OTHER: R.ONLINE})
    applied = apply_command(before, command(Action.BROKER_FAILURE, broker_id=BROKER, shutting_down={OTHER}))
    after = applied.record
    assert after is not None
    assert after.replica_states[BROKER] is R.OFFLINE
    assert (after.leader, after.isr) == (-1, (OTHER,))
    assert (after.leader_epoch, after.partition_epoch) == (3, 5)
    [decision] = applied.decisions
    assert decision.recipients == (OTHER,)
    assert (decision.leader, decision.isr) == (-1, (OTHER,))
    assert decision.election is None


def test_online_to_offline_replica_of_a_follower() -> None:
    cluster = Cluster()
    cluster.start(BROKER, OTHER)
    cluster.create("t", [OTHER, BROKER])
    out = cluster.failure(BROKER)
    assert cluster.replica_states("t", 0) == {BROKER: "OfflineReplica", OTHER: "OnlineReplica"}
    decision = out.decision("t", 0)
    assert (decision.leader, decision.isr, decision.recipients) == (OTHER, (OTHER,), (OTHER,))
    assert (decision.leader_epoch, decision.partition_epoch) == (1, 1)


# -- OfflineReplica ------------------------------------------------------------------------------------------

def test_offline_to_online_replica_on_broker_startup() -> None:
    cluster = Cluster()
    cluster.start(BROKER, OTHER)
    cluster.create("t", [OTHER, BROKER])
    cluster.failure(BROKER)
    before = cluster.rec("t", 0)
    out = cluster.startup(BROKER)
    assert cluster.replica_states("t", 0) == {BROKER: "OnlineReplica", OTHER: "OnlineReplica"}
    assert out.row("t", 0).outcome == "ACCEPTED"
    # Rejoining the ISR is the leader's business (IsrChange): no epoch change here.
    after = cluster.rec("t", 0)
    assert (after.leader, after.isr, after.leader_epoch, after.partition_epoch) == (
        before.leader, before.isr, before.leader_epoch, before.partition_epoch)
    assert out.decisions == []


def test_offline_to_deletion_started_to_successful_to_nonexistent() -> None:
    before = record((BROKER,), -1, (BROKER,), {BROKER: R.OFFLINE}, state=P.OFFLINE)
    applied = apply_command(before, command(Action.DELETE, live={BROKER}))
    assert applied.audit.replica_states == {BROKER: "ReplicaDeletionSuccessful"}
    assert applied.record is not None
    done = apply_command(applied.record, command(Action.COMPLETE_DELETION, live={BROKER}))
    assert done.record is None
    assert done.audit.replica_states == {}
    assert done.audit.to_state == "NonExistentPartition"


def test_a_replica_on_a_dead_broker_fails_its_deletion_and_is_retried_back_to_offline() -> None:
    cluster = Cluster()
    cluster.start(BROKER, OTHER)
    cluster.create("t", [BROKER, OTHER])
    cluster.failure(OTHER)
    out = cluster.delete("t")
    # The live broker's replica was deleted (ReplicaDeletionSuccessful, until the whole topic is); the dead one's
    # failed (ReplicaDeletionIneligible) and, no deletion being in flight any more, was retried: OfflineReplica.
    deleted = "ReplicaDeletionSuccessful"
    assert [r.replica_states for r in out.rows("t", 0)] == [{BROKER: deleted, OTHER: "ReplicaDeletionIneligible"},
                                                            {BROKER: deleted, OTHER: "OfflineReplica"}]
    assert cluster.rec("t", 0).replicas == (BROKER, OTHER)


def test_deletion_ineligible_to_online_replica_when_its_broker_returns() -> None:
    cluster = Cluster()
    cluster.start(BROKER, OTHER)
    cluster.create("t", [BROKER, OTHER])
    cluster.failure(OTHER)
    cluster.delete("t")
    out = cluster.startup(OTHER)
    online, resumed, complete = out.rows("t", 0)
    # Ineligible -> Online at the startup, then deleted as the topic's deletion goes on (resumeDeletionForTopics);
    # then the topic's deletion completes.
    assert online.replica_states == {BROKER: "ReplicaDeletionSuccessful", OTHER: "OnlineReplica"}
    assert resumed.outcome == "ACCEPTED" and resumed.from_state == "OfflinePartition"
    assert set(resumed.replica_states.values()) == {"ReplicaDeletionSuccessful"}
    assert (complete.to_state, complete.replica_states) == ("NonExistentPartition", {})
    assert cluster.record("t", 0) is None


# Kafka cases with no analogue here:
# - testReplicaDeletionStartedToReplicaDeletionIneligibleTransition: a replica deletion cannot fail once
#   started (there is no StopReplica response in the event model).
# - the testInvalid*Transition cases (NonExistent -> Online/Offline/Deletion*, New -> NonExistent/Deletion*,
#   Online -> NonExistent/New/Deletion*, Offline -> NonExistent/New/DeletionSuccessful, DeletionStarted ->
#   NonExistent/New/Online/Offline, DeletionSuccessful -> New/Online/Offline/DeletionStarted/Ineligible,
#   DeletionIneligible -> NonExistent/New/DeletionStarted/DeletionSuccessful): no command requests them, so
#   each is asserted on the table in test_states.py.
# - testOnlineReplicaToOnlineReplicaTransition / testOfflineReplicaToOnlineReplicaTransition also check that
#   an unchanged LeaderAndIsr is resent; decisions are emitted only for changes (one per partition_epoch).
