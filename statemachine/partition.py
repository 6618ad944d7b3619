"""One partition's controller logic: `apply_command(record, command)`.

This is the function the Spark operator runs per TopicPartition group and the local engine runs
in-process. It reads like Kafka's PartitionStateMachine / ReplicaStateMachine: each handler takes one command's
`Step` (statemachine.step) through the state changes and writes the controller makes for it.

The handlers, one per command `Action`, by concept: statemachine.leader_changes (elections, reassignments),
statemachine.isr_changes, statemachine.broker_changes, statemachine.topic_deletion, over the shared steps of
statemachine.replica_steps; a partition's creation, restore and failover are here.
"""

from __future__ import annotations

from collections.abc import Callable

from statemachine.broker_changes import (
    _on_broker_failure,
    _on_broker_startup,
    _on_controlled_shutdown,
    _on_log_dir_failure,
    _on_unclean_registration,
)
from statemachine.directories import on_assign_replicas_to_dirs
from statemachine.errors import Error, Outcome, Rejection
from statemachine.isr_changes import (
    _on_clear_elr,
    _on_complete_reassignment,
    _on_isr_change,
    _on_isr_change_notification,
)
from statemachine.leader_changes import (
    _bring_online,
    _on_elect_preferred,
    _on_elect_unclean,
    _on_reassign,
    _on_try_election,
    _progress_reassignment,
    _resume_reassignment_being_deleted,
    _start_reassignment,
)
from statemachine.record import NO_LEADER, Action, Applied, Command, PartitionRecord
from statemachine.replica_steps import _offline_replica, _require_partition
from statemachine.requests import Phase
from statemachine.rules import ZK, Rules
from statemachine.states import IllegalTransition, PartitionState, ReplicaState
from statemachine.step import Step, audit
from statemachine.topic_deletion import (
    _on_complete_deletion,
    _on_delete,
    _on_replica_deleted,
    _on_replica_deletion_failed,
    _on_resume_deletion,
    _on_retry_deletion,
)
from statemachine.visit_order import replica_state_machine_order

P = PartitionState
R = ReplicaState


# -- triggers -------------------------------------------------------------------------------------

def _on_create(s: Step) -> None:
    """onNewPartitionCreation: New, replicas NewReplica, INITIAL election, replicas online. With no live
    replica the New -> Online change fails: the controller audits that as a step of its own (TRY_ELECTION),
    so this step only records the creation."""
    replicas = s.command.replicas or ()
    s.move(P.NEW)
    s.record = s.record.evolve(replicas=replicas)
    for broker in replicas:
        s.move_replica(broker, R.NEW)
    if any(r in s.command.live_brokers for r in replicas):
        _bring_online(s, unclean_allowed=False)
    for broker in replicas:
        s.move_replica(broker, R.ONLINE)


def _on_controller_failover(s: Step) -> None:
    """onControllerFailover: replica states re-derived (offline ones leave the ISR), partition states
    re-derived, New/Offline partitions elect, reassignments and deletions resume."""
    _require_partition(s)
    s.read_state()  # initializeControllerContext reads every partition's state
    live = s.command.live_brokers
    if s.command.queued_for_deletion:  # TopicDeletionManager.init: a topic asked deleted while no controller was active
        s.record = s.record.evolve(queued_for_deletion=True, reassignment_in_progress=False)
    restarted = _reassignment_lost(s)
    if restarted is None and s.command.replicas is not None and not s.record.queued_for_deletion:
        _read_reassignment(s)
    elif s.record.reassignment_in_progress and not (s.record.adding_replicas or s.record.removing_replicas):
        # A reassignment whose completion threw (no leader yet: leader_changes._progress_reassignment) lived in the
        # old controller's memory only: ZooKeeper holds nothing of it for this one to resume.
        s.record = s.record.evolve(reassignment_in_progress=False)
    if s.record.queued_for_deletion:
        # ReplicaStateMachine.initializeReplicaState: the new controller knows every replica of the assignment again,
        # also those the old one had deleted (the topic's znodes go only once all are): online on live brokers,
        # ReplicaDeletionIneligible on dead ones, which startup then takes offline (out of the ISR). Whether the
        # deletion goes on is the topic's to say (RESUME_DELETION, fanned out by the controller).
        s.record = s.record.evolve(replica_states={b: R.ONLINE if b in live else R.DELETION_INELIGIBLE
                                                   for b in s.record.replicas})
    # ReplicaStateMachine.startup: every live replica to OnlineReplica (each gets the partition's state, which the
    # new controller does not know it has), then the dead ones to OfflineReplica (out of the ISR).
    with s.batch(Phase.ONLINE_REPLICA):
        for broker in sorted(b for b in s.record.replica_states if b in live):
            if s.record.replica_states[broker] is not R.ONLINE:
                s.move_replica(broker, R.ONLINE)
            if s.record.has_leader_and_isr:
                s.send_leader_and_isr((broker,))
    with s.batch(Phase.OFFLINE_REPLICA):
        for broker in replica_state_machine_order(b for b in s.record.replica_states if b not in live):
            _offline_replica(s, broker)
    if s.record.queued_for_deletion:
        _resume_reassignment_being_deleted(s)
        return
    if s.record.has_leader_and_isr and s.record.leader not in live and s.record.state is not P.OFFLINE:
        s.move(P.OFFLINE)
    _bring_online(s, s.command.unclean_allowed)
    if restarted is not None:
        with s.batch(Phase.REASSIGNMENT):
            _start_reassignment(s, restarted)
    elif s.record.reassignment_in_progress:
        with s.batch(Phase.REASSIGNMENT):
            _progress_reassignment(s)


def _reassignment_lost(s: Step) -> tuple[int, ...] | None:
    """A reassignment in progress that /brokers/topics no longer holds (a CreatePartitions read before the old
    controller's assignment write put the original replicas back) while /admin/reassign_partitions still names it:
    the new controller reads the original replicas alone, knows no state of the new ones (NonExistentReplica, not
    offline), and starts the reassignment over (processZkPartitionReassignment: U1 again, then A; seed 1547, Kafka
    3.0.2: t1-2 to [4], broker 4 dead, its NewReplica transition sending an UpdateMetadata). Its target, if so."""
    rec = s.record
    if not s.command.reassignment_restarted or rec.queued_for_deletion or \
            not (rec.adding_replicas or rec.removing_replicas):
        return None
    target, origin = rec.target_replicas, s.command.replicas or rec.origin_replicas
    s.record = rec.evolve(replicas=origin, adding_replicas=(), removing_replicas=(), reassignment_in_progress=False,
                          replica_states={b: state for b, state in rec.replica_states.items() if b in origin})
    return target


def _read_reassignment(s: Step) -> None:
    """The reassignment in progress the new controller read from /brokers/topics/T (initializeControllerContext):
    the old controller, dead inside an event, may have written every step of its completion but the assignment,
    which goes last (onPartitionReassignment B6); the failover completes it again (seed 311). The replicas it knows
    again are online on live brokers, else ReplicaDeletionIneligible (initializeReplicaState), for the startup to take
    offline."""
    cmd = s.command
    replicas = cmd.replicas or ()
    s.record = s.record.evolve(replicas=replicas, adding_replicas=cmd.adding_replicas or (),
                               removing_replicas=cmd.removing_replicas or (), reassignment_in_progress=True,
                               replica_states={**{b: R.ONLINE if b in cmd.live_brokers else R.DELETION_INELIGIBLE
                                                  for b in replicas}, **s.record.replica_states})


def _on_restore(s: Step) -> None:
    """A partition seeded from a metadata snapshot: created (New, replicas NewReplica) and put in the state the
    snapshot holds, leader, ISR and epochs as written there. Online with a leader, else Offline; a replica is
    online when its broker is live. The snapshot records what was decided before it, so no decision."""
    cmd = s.command
    if s.record.state is not P.NON_EXISTENT:
        raise Rejection(Error.TOPIC_ALREADY_EXISTS, "a snapshot seeds only a partition that does not exist yet")
    replicas = cmd.replicas or ()
    s.move(P.NEW)
    for broker in replicas:
        s.move_replica(broker, R.NEW)
    leader = NO_LEADER if cmd.leader is None else cmd.leader
    s.move(P.ONLINE if leader != NO_LEADER else P.OFFLINE)
    adding, removing = cmd.adding_replicas or (), cmd.removing_replicas or ()
    s.record = s.record.evolve(replicas=replicas, adding_replicas=adding, removing_replicas=removing,
                       reassignment_in_progress=bool(adding or removing), leader=leader, isr=cmd.isr or (),
                       leader_epoch=cmd.leader_epoch or 0, partition_epoch=cmd.partition_epoch or 0,
                       leader_recovery_state=cmd.leader_recovery_state or s.record.leader_recovery_state,
                       eligible_leader_replicas=tuple(sorted(cmd.eligible_leader_replicas or ())),
                       last_known_elr=cmd.last_known_elr or ())
    s.assigned.update(zip(replicas, cmd.directories or (), strict=False))
    for broker in replicas:
        s.move_replica(broker, R.ONLINE if broker in cmd.live_brokers else R.OFFLINE)
    s.note("restored from a metadata snapshot")


def _on_reject(s: Step) -> None:
    raise Rejection(s.command.error or Error.INVALID_REQUEST, s.command.message or "")


_HANDLERS: dict[Action, Callable[[Step], None]] = {
    Action.CREATE: _on_create,
    Action.ISR_CHANGE: _on_isr_change,
    Action.ISR_CHANGE_NOTIFICATION: _on_isr_change_notification,
    Action.COMPLETE_REASSIGNMENT: _on_complete_reassignment,
    Action.BROKER_STARTUP: _on_broker_startup,
    Action.BROKER_FAILURE: _on_broker_failure,
    Action.CONTROLLED_SHUTDOWN: _on_controlled_shutdown,
    Action.REASSIGN: _on_reassign,
    Action.ELECT_PREFERRED: _on_elect_preferred,
    Action.ELECT_UNCLEAN: _on_elect_unclean,
    Action.TRY_ELECTION: _on_try_election,
    Action.DELETE: _on_delete,
    Action.RETRY_DELETION: _on_retry_deletion,
    Action.RESUME_DELETION: _on_resume_deletion,
    Action.REPLICA_DELETION_FAILED: _on_replica_deletion_failed,
    Action.REPLICA_DELETED: _on_replica_deleted,
    Action.COMPLETE_DELETION: _on_complete_deletion,
    Action.CONTROLLER_FAILOVER: _on_controller_failover,
    Action.UNCLEAN_REGISTRATION: _on_unclean_registration,
    Action.CLEAR_ELR: _on_clear_elr,
    Action.REJECT: _on_reject,
    Action.RESTORE: _on_restore,
    Action.ASSIGN_REPLICAS_TO_DIRS: on_assign_replicas_to_dirs,
    Action.LOG_DIR_FAILURE: _on_log_dir_failure,
}


def apply_command(record: PartitionRecord | None, command: Command, rules: Rules = ZK,
                  requests: bool = False) -> Applied:
    """Apply one command to one partition (None = the partition does not exist) under `rules`; with `requests`, also
    what the ZK controller adds to its request batches for it (Applied.sent)."""
    if command.partition is None:
        # An event's cluster-level verdict, reached before fan-out: no partition, no state.
        return Applied(record, [], audit(command, command.outcome or Outcome.ACCEPTED, command.error,
                                          command.message))
    assert command.topic is not None
    step = Step(record or PartitionRecord(command.topic, command.partition), command, rules, requests)
    try:
        _HANDLERS[command.action](step)
    except Rejection as rejected:
        return step.reject(rejected.error, rejected.message)
    except IllegalTransition as illegal:
        return step.reject(Error.INVALID_TRANSITION, str(illegal))
    return step.finish()
