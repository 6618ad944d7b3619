"""Kafka's PartitionStateMachineTest, re-expressed through `apply_command` (one partition, the cluster facts
carried by the command) and, where the case is about several partitions, through `Controller.handle`.

Kafka's setup: broker 5, controller epoch 50, partition t-0. Cases about ZooKeeper failures and
inter-broker protocol versions have no analogue here (see the module's last comment)."""

from __future__ import annotations

from typing import Any

import pytest

from statemachine.partition import apply_command
from statemachine.record import Action, PartitionRecord
from statemachine.states import PartitionState, ReplicaState

from .cluster import BROKER, EPOCH, OTHER, Cluster, command

P = PartitionState
R = ReplicaState


def record(state: PartitionState, replicas: tuple[int, ...], leader: int, isr: tuple[int, ...], *,
           leader_epoch: int = 3, partition_epoch: int = 5, replica_states: dict[int, ReplicaState] | None = None,
           **fields: Any) -> PartitionRecord:
    if replica_states is None:
        replica_states = {r: R.ONLINE for r in replicas}
    return PartitionRecord("t", 0, state=state, replicas=replicas, leader=leader, leader_epoch=leader_epoch, isr=isr,
                           partition_epoch=partition_epoch, replica_states=replica_states, **fields)


def new_partition(replicas: tuple[int, ...] = (BROKER,)) -> PartitionRecord:
    """A partition created while none of its replicas' brokers were live."""
    applied = apply_command(None, command(Action.CREATE, replicas=replicas))
    assert applied.record is not None
    assert applied.record.state is P.NEW
    return applied.record


# -- NonExistentPartition --------------------------------------------------------------------------------

def test_nonexistent_to_new_partition() -> None:
    applied = apply_command(None, command(Action.CREATE, replicas=(BROKER,)))
    assert applied.record is not None
    assert applied.record.state is P.NEW
    assert applied.record.leader == -1
    assert applied.record.isr == ()
    assert (applied.record.leader_epoch, applied.record.partition_epoch) == (0, 0)
    assert applied.decisions == []  # no leader: no LeaderAndIsr
    assert applied.audit.from_state == "NonExistentPartition"
    assert applied.audit.to_state == "NewPartition"
    # No live replica: the failed New -> Online change is the controller's next step (TRY_ELECTION), not this one.
    assert (applied.audit.outcome, applied.audit.error) == ("ACCEPTED", None)


@pytest.mark.parametrize("action", [Action.TRY_ELECTION, Action.BROKER_STARTUP, Action.ELECT_PREFERRED,
                                    Action.ELECT_UNCLEAN, Action.CONTROLLER_FAILOVER])
def test_invalid_nonexistent_to_online_partition(action: Action) -> None:
    applied = apply_command(None, command(action, live={BROKER}, broker_id=BROKER, unclean_allowed=True))
    assert applied.record is None
    assert applied.decisions == []
    assert applied.audit.outcome == "REJECTED"
    assert applied.audit.error == "UNKNOWN_TOPIC_OR_PARTITION"
    assert (applied.audit.from_state, applied.audit.to_state) == ("NonExistentPartition",) * 2


@pytest.mark.parametrize("action", [Action.BROKER_FAILURE, Action.DELETE, Action.CONTROLLED_SHUTDOWN])
def test_invalid_nonexistent_to_offline_partition(action: Action) -> None:
    applied = apply_command(None, command(action, broker_id=BROKER))
    assert applied.record is None
    assert applied.audit.outcome == "REJECTED"
    assert applied.audit.error == "UNKNOWN_TOPIC_OR_PARTITION"
    assert applied.audit.to_state == "NonExistentPartition"


# -- NewPartition --------------------------------------------------------------------------------------

def test_new_to_online_partition() -> None:
    before = new_partition()
    applied = apply_command(before, command(Action.BROKER_STARTUP, live={BROKER}, broker_id=BROKER))
    after = applied.record
    assert after is not None
    assert after.state is P.ONLINE
    assert (after.leader, after.isr) == (BROKER, (BROKER,))
    assert (after.leader_epoch, after.partition_epoch) == (0, 0)
    [decision] = applied.decisions
    assert decision.recipients == (BROKER,)
    assert decision.is_new is True
    assert decision.election == "INITIAL"
    assert decision.controller_epoch == EPOCH
    assert decision.replicas == (BROKER,)
    assert applied.audit.from_state == "NewPartition"
    assert applied.audit.to_state == "OnlinePartition"
    assert applied.audit.election == "INITIAL"


def test_creation_with_a_live_replica_goes_straight_to_online() -> None:
    applied = apply_command(None, command(Action.CREATE, replicas=(BROKER, OTHER), live={BROKER, OTHER}))
    assert applied.record is not None
    assert applied.record.state is P.ONLINE
    assert applied.audit.from_state == "NonExistentPartition"
    assert applied.audit.to_state == "OnlinePartition"
    [decision] = applied.decisions
    assert (decision.leader, decision.isr, decision.recipients) == (BROKER, (BROKER, OTHER), (BROKER, OTHER))


def test_new_partition_stays_new_when_no_replica_is_live() -> None:
    before = new_partition((BROKER, OTHER))
    applied = apply_command(before, command(Action.TRY_ELECTION, live={9}))
    assert applied.record == before
    assert applied.decisions == []
    assert applied.audit.outcome == "REJECTED"
    assert applied.audit.error == "NO_LIVE_REPLICA"
    assert applied.audit.to_state == "NewPartition"


def test_new_to_offline_partition() -> None:
    # A New partition is taken offline when its topic is deleted; its dead broker makes the deletion wait.
    before = new_partition()
    applied = apply_command(before, command(Action.DELETE))
    assert applied.record is not None
    assert applied.record.state is P.OFFLINE
    assert applied.record.queued_for_deletion
    assert applied.audit.from_state == "NewPartition"
    assert applied.audit.to_state == "OfflinePartition"
    assert applied.decisions == []


# -- OnlinePartition -----------------------------------------------------------------------------------

def test_online_to_online_partition_preferred_election() -> None:
    before = record(P.ONLINE, (BROKER, OTHER), OTHER, (BROKER, OTHER))
    applied = apply_command(before, command(Action.ELECT_PREFERRED, live={BROKER, OTHER}))
    after = applied.record
    assert after is not None
    assert after.state is P.ONLINE
    assert (after.leader, after.isr) == (BROKER, (BROKER, OTHER))
    assert (after.leader_epoch, after.partition_epoch) == (4, 6)
    [decision] = applied.decisions
    assert decision.recipients == (BROKER, OTHER)
    assert decision.is_new is False
    assert decision.election == "PREFERRED"


def test_online_to_online_partition_for_controlled_shutdown() -> None:
    before = record(P.ONLINE, (BROKER, OTHER), BROKER, (BROKER, OTHER))
    applied = apply_command(before, command(Action.CONTROLLED_SHUTDOWN, broker_id=BROKER, live={OTHER},
                                            shutting_down={BROKER}))
    after = applied.record
    assert after is not None
    assert after.state is P.ONLINE
    assert (after.leader, after.isr) == (OTHER, (OTHER,))
    [decision] = applied.decisions
    # The LeaderAndIsr goes to both brokers, including the shutting-down one.
    assert decision.recipients == (BROKER, OTHER)
    assert decision.is_new is False
    assert decision.election == "CONTROLLED_SHUTDOWN"
    assert (decision.leader_epoch, decision.partition_epoch) == (4, 6)


def test_online_to_offline_partition() -> None:
    before = record(P.ONLINE, (BROKER,), BROKER, (BROKER,))
    applied = apply_command(before, command(Action.BROKER_FAILURE, broker_id=BROKER))
    after = applied.record
    assert after is not None
    assert after.state is P.OFFLINE
    assert after.leader == -1
    assert after.isr == (BROKER,)  # the last ISR member stays
    assert (after.leader_epoch, after.partition_epoch) == (4, 6)
    assert applied.audit.from_state == "OnlinePartition"
    assert applied.audit.to_state == "OfflinePartition"
    assert after.replica_states[BROKER] is R.OFFLINE


@pytest.mark.parametrize("state", [P.NEW, P.ONLINE, P.OFFLINE])
def test_invalid_transition_to_new_partition_is_rejected_with_state_unchanged(state: PartitionState) -> None:
    leader = BROKER if state is P.ONLINE else -1
    before = record(state, (BROKER, OTHER), leader, () if state is P.NEW else (BROKER,))
    applied = apply_command(before, command(Action.CREATE, replicas=(OTHER,), live={BROKER, OTHER}))
    assert applied.record is before
    assert applied.decisions == []
    assert applied.audit.outcome == "REJECTED"
    assert applied.audit.error == "INVALID_TRANSITION"
    assert applied.audit.from_state == applied.audit.to_state == str(state)
    assert applied.audit.leader_after == leader
    assert applied.audit.message  # the refused transition in words


# -- OfflinePartition ----------------------------------------------------------------------------------

def test_offline_to_online_partition() -> None:
    before = record(P.OFFLINE, (BROKER,), -1, (BROKER,), replica_states={BROKER: R.OFFLINE})
    applied = apply_command(before, command(Action.BROKER_STARTUP, broker_id=BROKER, live={BROKER}))
    after = applied.record
    assert after is not None
    assert after.state is P.ONLINE
    assert (after.leader, after.isr) == (BROKER, (BROKER,))
    assert (after.leader_epoch, after.partition_epoch) == (4, 6)
    [decision] = applied.decisions
    assert decision.recipients == (BROKER,)
    assert decision.is_new is False
    assert decision.election == "OFFLINE"
    assert decision.leader_recovery_state == "RECOVERED"


@pytest.mark.parametrize("action", [Action.TRY_ELECTION, Action.ELECT_UNCLEAN])
def test_offline_to_unclean_online_partition(action: Action) -> None:
    # Leader X=6 alone in the ISR and dead, replicas [6, 5], live {5}: 5 is elected, uncleanly.
    leader = BROKER + 1
    before = record(P.OFFLINE, (leader, BROKER), leader, (leader,),
                    replica_states={leader: R.OFFLINE, BROKER: R.ONLINE})
    applied = apply_command(before, command(action, live={BROKER}, unclean_allowed=True))
    after = applied.record
    assert after is not None
    assert after.state is P.ONLINE
    assert (after.leader, after.isr) == (BROKER, (BROKER,))
    assert after.leader_recovery_state == "RECOVERING"
    [decision] = applied.decisions
    assert decision.recipients == (BROKER,)
    assert decision.election == "OFFLINE_UNCLEAN"
    assert decision.leader_recovery_state == "RECOVERING"
    assert decision.replicas == (leader, BROKER)
    assert decision.is_new is False


def test_offline_partition_stays_offline_when_unclean_is_disabled() -> None:
    leader = BROKER + 1
    before = record(P.OFFLINE, (leader, BROKER), leader, (leader,),
                    replica_states={leader: R.OFFLINE, BROKER: R.ONLINE})
    applied = apply_command(before, command(Action.TRY_ELECTION, live={BROKER}, unclean_allowed=False))
    assert applied.record == before
    assert applied.decisions == []
    assert applied.audit.outcome == "REJECTED"
    assert applied.audit.error == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    assert applied.audit.to_state == "OfflinePartition"


def test_offline_to_nonexistent_partition() -> None:
    before = record(P.OFFLINE, (BROKER,), -1, (BROKER,), replica_states={BROKER: R.OFFLINE})
    applied = apply_command(before, command(Action.DELETE, live={BROKER}))
    # The live replica goes offline before its deletion: the ZK controller writes the state (removeReplicasFromIsr,
    # the last ISR member stays, the leader epoch moves) and sends no LeaderAndIsr for a topic being deleted.
    assert [(d.leader, d.isr, d.recipients) for d in applied.decisions] == [(-1, (BROKER,), ())]
    assert applied.audit.outcome == "ACCEPTED"
    assert applied.audit.to_state == "OfflinePartition"
    assert applied.audit.replica_states == {BROKER: "ReplicaDeletionSuccessful"}
    # The topic's deletion completes (the controller asks once every replica of the topic is deleted).
    assert applied.record is not None
    done = apply_command(applied.record, command(Action.COMPLETE_DELETION, live={BROKER}))
    assert done.record is None
    assert (done.audit.from_state, done.audit.to_state, done.audit.replica_states) == (
        "OfflinePartition", "NonExistentPartition", {})


# -- several partitions: through the controller -----------------------------------------------------------

def offline_partitions(cluster: Cluster) -> list[tuple[str, int]]:
    return sorted(k for k, r in cluster.controller.partitions.items() if r.state is P.OFFLINE)


def test_offline_partitions_count_follows_the_broker() -> None:
    cluster = Cluster()
    cluster.start(BROKER)
    cluster.create("test", [BROKER], [BROKER], [BROKER], [BROKER])
    failed = cluster.failure(BROKER)
    assert offline_partitions(cluster) == [("test", p) for p in range(4)]
    assert [r.to_state for r in failed.audits if r.partition is not None] == ["OfflinePartition"] * 4
    assert all(cluster.rec("test", p).leader == -1 for p in range(4))
    cluster.startup(BROKER)
    assert offline_partitions(cluster) == []
    assert all(cluster.rec("test", p).leader == BROKER for p in range(4))


def test_partitions_of_a_topic_being_deleted_are_never_elected() -> None:
    cluster = Cluster()
    cluster.start(BROKER, OTHER)
    cluster.create("test", [BROKER, OTHER], [OTHER, BROKER])
    cluster.failure(OTHER)
    cluster.delete("test")
    assert all(cluster.rec("test", p).queued_for_deletion for p in range(2))
    # The surviving broker bounces: no election, no LeaderAndIsr for a topic being deleted.
    bounced = cluster.startup(BROKER)
    assert bounced.decisions == []
    assert all(cluster.rec("test", p).state is P.OFFLINE for p in range(2))
    # The dead broker returns: the deletion completes instead.
    back = cluster.startup(OTHER)
    assert back.decisions == []
    assert cluster.controller.partitions == {}
    assert [r.to_state for r in back.audits if r.partition is not None][-2:] == ["NonExistentPartition"] * 2


def test_deleting_offline_partitions_removes_them() -> None:
    cluster = Cluster()
    cluster.start(BROKER, OTHER)
    cluster.create("test", [BROKER], [BROKER])
    cluster.failure(BROKER)
    assert offline_partitions(cluster) == [("test", 0), ("test", 1)]
    cluster.delete("test")
    # Waiting on the dead broker, the partitions are queued for deletion, not candidates for election.
    assert all(cluster.rec("test", p).replica_states == {BROKER: R.DELETION_INELIGIBLE} for p in range(2))
    cluster.startup(BROKER)
    assert offline_partitions(cluster) == []
    assert cluster.controller.partitions == {}
    assert "test" not in cluster.controller.cluster.topics


# Kafka cases with no analogue here:
# - ...ZooKeeperClientExceptionFromCreateStates / ErrorCodeFromCreateStates / ...FromStateLookup: our state
#   lives in records, not ZooKeeper; there is no failed write to simulate.
# - testOfflinePartitionToUncleanOnlinePartitionTransition with isLeaderRecoverySupported=false: there is
#   no inter-broker protocol version; an unclean leader always starts RECOVERING (KIP-704).
# - testInvalidNewPartitionToNonexistentPartitionTransition / testInvalidOnlinePartitionToNonexistent...:
#   no command asks for X -> NonExistentPartition directly (deletion always goes through Offline); the
#   table itself is checked pair by pair in test_states.py.


def test_evolve_builds_what_dataclasses_replace_builds() -> None:
    """A command derives its records with PartitionRecord.evolve: the same record as dataclasses.replace, the
    original untouched, a name that is no field refused."""
    from dataclasses import fields, replace

    before = record(P.ONLINE, (1, 2, 3), 1, (1, 2), adding_replicas=(3,), last_known_elr=(2,))
    changes = {"state": P.OFFLINE, "replicas": (4,), "leader": 4, "isr": (4,), "leader_epoch": 9,
               "replica_states": {4: R.NEW}, "reassignment_in_progress": True, "eligible_leader_replicas": (2,)}
    evolved = before.evolve(**changes)
    assert evolved == replace(before, **changes)
    assert all(getattr(evolved, f.name) == changes.get(f.name, getattr(before, f.name)) for f in fields(before))
    assert before == record(P.ONLINE, (1, 2, 3), 1, (1, 2), adding_replicas=(3,), last_known_elr=(2,))
    with pytest.raises(AttributeError):
        before.evolve(lead=2)
