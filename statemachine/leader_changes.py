"""What moves a partition's leader or replica set: bringing it online (PartitionStateMachine's elections, with the
ELR), the admin elections (preferred, unclean, a topic's retry) and reassignments (onPartitionReassignment).
They call each other (an election can complete a reassignment, a reassignment can need an election), so they
live together. The election strategies themselves are in statemachine.elections.
"""

from __future__ import annotations

from statemachine import elections
from statemachine.errors import Error, Rejection
from statemachine.record import NO_LEADER, PartitionRecord
from statemachine.replica_steps import _delete_replicas, _online_replica, _require_partition
from statemachine.requests import Phase
from statemachine.rules import (
    eligible_leader_replicas,
    elr_that_can_lead_without_the_feature,
    reassignment_from_original,
)
from statemachine.states import PartitionState, ReplicaState
from statemachine.step import Step

P = PartitionState
R = ReplicaState


def _bring_online(s: Step, unclean_allowed: bool) -> None:
    """triggerOnlinePartitionStateChange for one partition: New -> INITIAL, Offline -> OFFLINE."""
    isr, created = s.record.isr, s.record.state is P.NEW
    with s.batch(Phase.ELECTION):
        _elect_online(s, unclean_allowed)
    rec = s.record
    if rec.isr != isr and not created and rec.reassignment_in_progress and _reassignment_caught_up(s, rec) and \
            s.rules.reassigning_states_watched(s.command.metadata_version):
        # The election's write fired the watch on the state znode: the reassignment completes next (seed 128: an
        # unclean election of the one target replica). Not a New partition's first election, which creates the
        # znode: the controller's reads of it before (getData of a znode that is not there) set no watch (seed
        # 1008: t2-2, reassigned before it had a state, stayed reassigning).
        with s.batch(Phase.REASSIGNMENT):
            _progress_reassignment(s)


def _elect_online(s: Step, unclean_allowed: bool) -> None:
    rec, cmd = s.record, s.command
    if rec.state is P.NEW:
        s.elect(elections.initial(rec.replicas, cmd.live_brokers), Error.NO_LIVE_REPLICA,
                f"no live replica among {list(rec.replicas)}: stays {P.NEW}")
    elif rec.state is P.OFFLINE and s.elr_on:
        _elect_eligible(s, rec.isr, unclean_allowed)
    elif rec.state is P.OFFLINE and s.rules.eligible_leader_replicas and (
            kept := elr_that_can_lead_without_the_feature(rec.isr, rec.eligible_leader_replicas)):
        s.elect(elections.eligible(rec.replicas, rec.isr, kept, (), cmd.live_brokers, unclean_allowed),
                Error.ELIGIBLE_LEADERS_NOT_AVAILABLE, f"no live replica in the ELR {list(kept)} left from when it was "
                f"on" + ("" if unclean_allowed else " and unclean election disabled") + f": stays {P.OFFLINE}")
    elif rec.state is P.OFFLINE:
        # ZK: a live ISR member that is no longer a replica means a clean election only, which it cannot win.
        live_isr = [r for r in rec.isr if r in cmd.live_brokers] if s.rules.unclean_needs_the_isr_offline else []
        why = (f" and live ISR member(s) {live_isr} not replicas (no unclean election)" if live_isr else
               "" if unclean_allowed else " and unclean election disabled")
        s.elect(elections.offline(rec.replicas, rec.isr, cmd.live_brokers, unclean_allowed and not live_isr),
                Error.ELIGIBLE_LEADERS_NOT_AVAILABLE, f"no live replica in ISR {list(rec.isr)}{why}: stays {P.OFFLINE}")


def _elect_eligible(s: Step, isr: tuple[int, ...], unclean_allowed: bool) -> bool:
    """KRaft with ELR: elect from the live part of `isr`, else from the ELR that this change leaves, else the
    last known leader (elections.eligible)."""
    rec, live = s.record, s.command.live_brokers
    target = tuple(r for r in isr if r in live)
    elr = eligible_leader_replicas(rec.eligible_leader_replicas, rec.isr, target, s.command.min_isr,
                                   s.unclean_shutdown)
    elected = elections.eligible(rec.replicas, target, elr, rec.last_known_elr, live, unclean_allowed)
    if elected is not None and elected.election is elections.Election.OFFLINE and not target:
        s.elr_basis = ()  # led from the ELR: the ELR is what the empty ISR left
    return s.elect(elected, Error.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                   f"no live replica in ISR {list(rec.isr)}, ELR {list(elr)} or last known leader "
                   f"{list(rec.last_known_elr)}" + ("" if unclean_allowed else " and unclean election disabled")
                   + f": stays {P.OFFLINE}")


def _progress_reassignment(s: Step) -> None:
    """onPartitionReassignment: phase A while the targets are not all in the ISR, else phase B."""
    rec, cmd = s.record, s.command
    target = rec.target_replicas
    if not _reassignment_caught_up(s, rec):
        # A: LeaderAndIsr (epoch bump) to the whole RS, the original replicas as they are, the new ones as new
        # (updateLeaderEpochAndSendRequest); the new replicas start. Under ZK a partition that never had a leader has
        # no LeaderAndIsr to send: its first decision stays its INITIAL election.
        if rec.has_leader_and_isr or s.rules.registered_from_creation:
            _update_leader_epoch_and_send(s)
        for broker in rec.adding_replicas:
            if broker not in s.record.replica_states:
                with s.batch(Phase.ONLINE_REPLICA):  # NewReplica, one batch each
                    s.move_replica(broker, R.NEW)
                    if s.record.has_leader_and_isr and s.record.leader != broker:
                        s.send_leader_and_isr((broker,), is_new=True)
        s.note(f"reassignment to {list(target)} waits for the ISR {list(rec.isr)}")
        return
    if not rec.has_leader_and_isr and not s.rules.registered_from_creation:
        # ZK: B with no state znode is a reassignment adding and removing nothing (to the replicas the partition has).
        # B3 reads the leader from partitionLeadershipInfo, which a partition that never had a leader lacks: it throws
        # (NoSuchElementException, every ZooKeeper-era release) after B2. Nothing is written or sent, and the partition
        # stays in partitionsBeingReassigned, in memory only: a broker's startup onto it completes it right after
        # electing it (maybeResumeReassignments), a new controller forgets it (seed 1497: t5-1 to its one replica [3]
        # while broker 3 was down; at 3's startup its election, then a leader epoch bump and the assignment rewritten).
        s.record = rec.evolve(replicas=target, reassignment_in_progress=True)
        s.note(f"no leader yet: the completion to {list(target)} threw, it stays in progress")
        return
    # B: targets caught up. AR online, RS = target, leader moved if it must, RR out and deleted.
    with s.batch(Phase.ONLINE_REPLICA):
        for broker in rec.adding_replicas:
            _online_replica(s, broker)
    removing = rec.removing_replicas
    s.record = s.record.evolve(replicas=target, adding_replicas=(), removing_replicas=(),
                       reassignment_in_progress=False)
    moved = rec.leader not in target or rec.leader not in cmd.live_brokers
    # ZK (moveReassignedPartitionLeaderIfRequired): a leader that stays (alive, among the targets) gets a leader epoch
    # bump for the new replica set; an election that finds no leader writes nothing. KRaft: the change carries the
    # new replica set even when no target replica could take the lead.
    with s.batch(Phase.ELECTION):  # B3, a batch of its own: an election, or updateLeaderEpochAndSendRequest
        elected = moved and s.elect(elections.reassign(target, rec.isr, cmd.live_brokers),
                                    Error.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                                    f"no live target replica of {list(target)} in ISR {list(rec.isr)} to lead")
        if not elected and (not moved or not s.rules.reassignment_steps_bump_the_leader_epoch):
            # updateLeaderEpochAndSendRequest sends to the whole new replica set: also a registered broker's replica
            # in a failed log dir (seed 808: t6-0's in-place reassignment reached broker 3, which ignored it)
            registered = cmd.registered_brokers  # a union of three sets per read: once, not once per replica
            s.write(rec.leader, rec.isr, (r for r in target if r in registered))
    if s.command.controller_died_after_leader_move:
        # Its new replica set lived in its memory only (B2): ZooKeeper keeps the reassignment, for the next failover.
        s.record = s.record.evolve(replicas=rec.replicas, adding_replicas=rec.adding_replicas,
                                   removing_replicas=removing, reassignment_in_progress=True)
        s.note(f"the controller died here, before taking {list(removing)} out of the ISR")
        return
    _delete_replicas(s, removing)
    if s.command.controller_died_after_assignment:
        # The controller went no further than its write of the new assignment: that write threw (its session had
        # expired; seed 1288) or it died before removing the partition from /admin/reassign_partitions (seed 1408):
        # the UpdateMetadata after it was never sent.
        s.note(f"the controller died at its write of the assignment {list(target)}: no UpdateMetadata")
        return
    with s.batch(Phase.METADATA):  # the new replicas and ISR to every broker
        s.send_metadata()
    s.note(f"reassignment completed: replicas {list(target)}")
    _elect_if_leaderless(s)


def _update_leader_epoch_and_send(s: Step) -> None:
    """updateLeaderEpochAndSendRequest (A1): the leader epoch bumped, LeaderAndIsr of the whole replica set to its
    registered replicas, the original ones as they are, the new ones as new."""
    rec = s.record
    live = s.command.live_or_shutting_down
    s.write(rec.leader, rec.isr, (r for r in rec.replicas if r in live), sent=False)
    s.send_leader_and_isr(rec.origin_replicas)
    s.send_leader_and_isr(rec.adding_replicas, is_new=True)


def _resume_reassignment_being_deleted(s: Step) -> None:
    """ZK: maybeResumeReassignments skips no topic, and a topic being deleted keeps its reassignment in
    /brokers/topics/T: a broker's startup onto its target and a new controller's failover (after its state machines
    started, initializePartitionReassignments) resume it. Not caught up, onPartitionReassignment bumps the leader epoch
    and sends the replica set (A1), before the deletion goes on; its new replicas are being deleted: NewReplica fails
    and sends nothing (seed 26 at a startup; seed 302 at a failover: a second write of a leaderless partition after
    its dead replica went offline)."""
    rec = s.record
    # A partition that never had a leader has no state to bump (as in _progress_reassignment).
    if s.rules.reassignment_steps_bump_the_leader_epoch and rec.has_leader_and_isr and \
            (rec.adding_replicas or rec.removing_replicas) and not _reassignment_caught_up(s, rec):
        with s.batch(Phase.REASSIGNMENT):
            _update_leader_epoch_and_send(s)


def _reassignment_caught_up(s: Step, rec: PartitionRecord) -> bool:
    """The reassignment can complete: nothing is being added or removed (a cancel, a reorder: ZK's
    isReassignmentComplete, KRaft's revert), or the ISR has caught up as the rule set says
    (rules.reassignment_caught_up)."""
    return not (rec.adding_replicas or rec.removing_replicas) or s.rules.reassignment_caught_up(
        rec.isr, rec.target_replicas, rec.adding_replicas, rec.removing_replicas, s.command.controller_level)


def _start_reassignment(s: Step, target: tuple[int, ...], cancel: bool = False) -> None:
    rec = s.record
    # A cancel goes back to the original replicas under every rule set; a new target is laid over the partition's
    # replicas as the rule set does it.
    reassign = reassignment_from_original if cancel else s.rules.reassignment_replicas
    replicas, adding, removing = reassign(rec.replicas, rec.adding_replicas, rec.removing_replicas, target)
    # Replicas the previous reassignment was adding that this one no longer wants.
    unneeded = [r for r in rec.replicas if r not in replicas]
    if s.rules.refuses_reassignment_dropping_the_isr and rec.isr and not any(r in replicas for r in rec.isr):
        # Deleting them would leave an ISR outside the replica set: KRaft refuses it, ZK leaves the last member there.
        raise Rejection(Error.INVALID_REPLICA_ASSIGNMENT,
                        f"replicas {list(replicas)} would drop every in-sync replica {list(rec.isr)}")
    s.record = rec.evolve(replicas=replicas, adding_replicas=adding, removing_replicas=removing,
                          reassignment_in_progress=True)
    _delete_replicas(s, unneeded)
    _elect_if_leaderless(s)
    _progress_reassignment(s)


def _elect_if_leaderless(s: Step) -> None:
    """KRaft: a reassignment that took the leader's replica away leaves the partition offline: elect as the
    controller does for an offline partition. ZK does not: its partition stays OnlinePartition without a leader
    (removeReplicasFromIsr changes no partition state) until a failover or a later reassignment."""
    rec = s.record
    if (s.rules.elects_when_a_reassignment_drops_the_leader and rec.has_leader_and_isr and rec.state is P.ONLINE
            and rec.leader not in s.command.live_brokers):
        s.move(P.OFFLINE)
        _bring_online(s, s.command.unclean_allowed)


def _on_reassign(s: Step) -> None:
    rec, target = s.record, s.command.replicas
    _require_partition(s)
    if rec.queued_for_deletion:
        raise Rejection(Error.UNKNOWN_TOPIC_OR_PARTITION, f"topic {rec.topic} is being deleted")
    if target is None:
        if not rec.reassignment_in_progress:
            raise Rejection(Error.NO_REASSIGNMENT_IN_PROGRESS, "no reassignment in progress to cancel")
        s.note(f"cancel: back to {list(rec.origin_replicas)}")
        with s.batch(Phase.REASSIGNMENT):
            _start_reassignment(s, rec.origin_replicas, cancel=True)
        return
    if not target or len(set(target)) != len(target) or any(r < 0 for r in target):
        raise Rejection(Error.INVALID_REPLICA_ASSIGNMENT,
                        f"target {list(target)} must be non-empty, without duplicates or negative ids")
    # validateReplicas: the Admin API's reassignments only (processApiPartitionReassignment), not the znode's; a new
    # replica in a failed log dir of a live broker passes (seed 1034: t2-0 asked again onto broker 3, whose replica
    # there had failed with its dir, bumped the leader epoch again).
    dead = [r for r in target if r not in rec.origin_replicas and r not in s.command.live_broker_ids]
    if dead and s.rules.reassign_to_live_brokers_only and not s.command.through_znode:
        raise Rejection(Error.INVALID_REPLICA_ASSIGNMENT, f"target adds brokers that are not live: {dead}")
    with s.batch(Phase.REASSIGNMENT):
        _start_reassignment(s, target)


def _on_elect_preferred(s: Step) -> None:
    rec = s.record
    _require_partition(s)
    if rec.queued_for_deletion:
        raise Rejection(Error.INVALID_TOPIC_EXCEPTION, f"topic {rec.topic} is being deleted")
    if rec.replicas and rec.leader == rec.replicas[0]:
        raise Rejection(Error.ELECTION_NOT_NEEDED, f"preferred replica {rec.replicas[0]} already leads")
    with s.batch(Phase.ELECTION):
        elected = s.elect(elections.preferred(rec.replicas, rec.isr, s.command.live_brokers),
                          Error.PREFERRED_LEADER_NOT_AVAILABLE,
                          f"preferred replica {rec.replicas[0]} is not live or not in ISR {list(rec.isr)}")
    if elected:
        return
    if s.rules.preferred_falls_back and rec.leader not in s.command.live_brokers:
        s.failed = None
        if rec.state is P.ONLINE:
            s.move(P.OFFLINE)
        _bring_online(s, unclean_allowed=False)
        if s.failed is None:
            return
    if _write_emptied_elr(s):
        return
    raise Rejection(Error.PREFERRED_LEADER_NOT_AVAILABLE, s.notes[-1])


def _on_elect_unclean(s: Step) -> None:
    rec = s.record
    _require_partition(s)
    if rec.queued_for_deletion:
        raise Rejection(Error.INVALID_TOPIC_EXCEPTION, f"topic {rec.topic} is being deleted")
    if rec.leader != NO_LEADER and rec.leader in s.command.live_brokers:
        raise Rejection(Error.ELECTION_NOT_NEEDED, f"leader {rec.leader} is live")
    if rec.state is P.ONLINE:
        s.move(P.OFFLINE)
    _bring_online(s, unclean_allowed=True)
    if s.failed is not None and not _write_emptied_elr(s):
        raise Rejection(Error.ELIGIBLE_LEADERS_NOT_AVAILABLE, s.notes[-1])


def _write_emptied_elr(s: Step) -> bool:
    """KRaft with the ELR feature off: an admin election that elects nobody still publishes the change that empties
    the ELR the partition kept from when it was on (ReplicationControlManager.electLeader writes whatever record
    PartitionChangeBuilder makes, and answers success; rules.elr_after_disabling)."""
    rec = s.record
    if not (s.rules.eligible_leader_replicas and not s.elr_on and rec.eligible_leader_replicas):
        return False
    s.failed = None
    s.note(f"elects nobody; the change empties the ELR {list(rec.eligible_leader_replicas)} kept from when the "
           f"feature was on")
    s.write(rec.leader, rec.isr, ())
    return True


def _on_try_election(s: Step) -> None:
    """A topic's unclean.leader.election.enable turned on: its New/Offline partitions try again."""
    _require_partition(s)
    if not s.record.queued_for_deletion:
        _bring_online(s, s.command.unclean_allowed)
