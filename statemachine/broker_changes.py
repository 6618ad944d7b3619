"""What one partition does when a broker changes: its startup, its failure, its controlled shutdown (move the
leadership away or the follower out of the ISR) and, with the ELR, its registration after an unclean shutdown.
"""

from __future__ import annotations

from statemachine import elections
from statemachine.errors import Error
from statemachine.leader_changes import (
    _bring_online,
    _elect_eligible,
    _progress_reassignment,
    _reassignment_caught_up,
    _resume_reassignment_being_deleted,
)
from statemachine.record import NO_LEADER
from statemachine.replica_steps import _offline_replica, _online_replica, _require_partition
from statemachine.requests import Phase
from statemachine.states import VALID_PREVIOUS_REPLICA_STATES, PartitionState, ReplicaState
from statemachine.step import Step
from statemachine.topic_deletion import _fail_deletion, replicas_not_deleted

P = PartitionState
R = ReplicaState


def _on_broker_startup(s: Step) -> None:
    """onBrokerStartup: the new brokers' replicas online (one batch), then elections, reassignments; the deletion of
    a topic being deleted goes on after (RESUME_DELETION, fanned out by the controller for all the topic's
    partitions)."""
    assert s.command.broker_id is not None
    started = s.command.new_brokers or (s.command.broker_id,)
    _require_partition(s)
    # A deleted replica stays deleted (an invalid transition to Kafka).
    not_deleted = replicas_not_deleted(s.record)
    online = [b for b in started if b in not_deleted]
    if online:
        with s.batch(Phase.ONLINE_REPLICA):
            for broker in online:
                _online_replica(s, broker)
        s.note(f"replica{'s' if len(online) > 1 else ''} {', '.join(map(str, online))} online")
    onto_target = any(b in s.record.target_replicas for b in started)
    if s.record.queued_for_deletion:
        if onto_target:
            _resume_reassignment_being_deleted(s)
        return
    if s.rules.completes_reassignment_before_election:
        # KRaft writes only leaderless partitions at an unfence; one whose targets are all in the ISR it has
        # completes before its election.
        rec = s.record
        if rec.state is P.OFFLINE and rec.reassignment_in_progress and _reassignment_caught_up(s, rec):
            _progress_reassignment(s)
        _bring_online(s, s.command.unclean_allowed)
        return
    _bring_online(s, s.command.unclean_allowed)
    if s.record.reassignment_in_progress and onto_target:
        with s.batch(Phase.REASSIGNMENT):
            _progress_reassignment(s)


def _on_broker_failure(s: Step) -> None:
    """onBrokerFailure: Offline if its leader is gone, elections, then the broker's replica offline."""
    broker = s.command.broker_id
    assert broker is not None
    _require_partition(s)
    if s.record.queued_for_deletion:
        if broker in replicas_not_deleted(s.record):
            _fail_deletion(s, broker)  # failReplicaDeletion; resumeDeletions then retries (RETRY_DELETION)
        return
    rec = s.record
    if rec.has_leader_and_isr and rec.leader not in s.command.live_brokers:
        s.move(P.OFFLINE)
    _bring_online(s, s.command.unclean_allowed)
    # Its replica goes offline: the broker is gone, or (a log dir's answer) the replica is in the failed dir. A New
    # partition the answer's election tries elsewhere keeps the broker's registered replica online (seed 1008), and
    # one whose replica there an earlier answer took offline is not taken offline again (seed 1543).
    if s.command.replica_goes_offline and broker in s.record.replica_states and \
            broker not in s.command.live_brokers | s.command.shutting_down_brokers:
        with s.batch(Phase.OFFLINE_REPLICA):
            _offline_replica(s, broker)


def _on_log_dir_failure(s: Step) -> None:
    """onBrokerLogDirFailure: the broker's replica to OnlineReplica again, which sends it a LeaderAndIsr of the
    partition; its answer (KAFKA_STORAGE_ERROR for a replica in the failed dir) is the controller's next step. A
    replica being deleted takes it only from OfflineReplica or ReplicaDeletionIneligible (seed 1274: t2-0's failed
    deletion retried, then asked about and marked offline again; from ReplicaDeletionStarted or Successful no valid
    transition, nothing sent)."""
    broker = s.command.broker_id
    assert broker is not None
    _require_partition(s)
    state = s.record.replica_states.get(broker)
    if state is None or (s.record.queued_for_deletion and state not in VALID_PREVIOUS_REPLICA_STATES[R.ONLINE]):
        return
    with s.batch(Phase.ONLINE_REPLICA):
        _online_replica(s, broker)


def _on_controlled_shutdown(s: Step) -> None:
    """doControlledShutdown: move leadership away, or take the follower out of the ISR."""
    broker, cmd = s.command.broker_id, s.command
    assert broker is not None
    _require_partition(s)
    rec = s.record
    single = len(rec.replicas) <= 1 and s.rules.shutdown_skips_single_replica
    if single or not rec.has_leader_and_isr or rec.queued_for_deletion:
        s.note("nothing to move: single replica, no leader yet, or being deleted")
        return
    if rec.leader == broker:
        with s.batch(Phase.ELECTION):
            elected = s.elect(elections.controlled_shutdown(rec.replicas, rec.isr, cmd.live_or_shutting_down,
                                                            cmd.shutting_down_brokers),
                              Error.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                              f"no other live ISR member of {list(rec.isr)}: broker {broker} still leads")
        if elected:
            return
        remaining = tuple(r for r in rec.isr if r != broker)
        if s.elr_on and not remaining:
            s.failed = None
            s.move(P.OFFLINE)
            if _elect_eligible(s, remaining, s.command.unclean_allowed):
                return
            s.failed = None
            s.write(NO_LEADER, remaining, (r for r in rec.replicas if r != broker and r in cmd.live_brokers))
            s.note(f"broker {broker} gives up leadership with nobody to take over: ISR empty, ELR on")
            return
        fallback = s.rules.shutdown_fallback(rec.leader, rec.isr, rec.replicas, broker)
        if fallback is not None:
            s.move(P.OFFLINE)
            s.write(fallback[0], fallback[1], (r for r in rec.replicas if r != broker and r in cmd.live_brokers))
            s.note(f"{s.rules.name} rules: broker {broker} gives up leadership with nobody to take over")
    elif broker in rec.replica_states:
        with s.batch(Phase.FOLLOWERS_STOPPED):
            s.send_stop_replica(broker, delete=False)
        with s.batch(Phase.OFFLINE_REPLICA):
            _offline_replica(s, broker)


def _on_unclean_registration(s: Step) -> None:
    """KRaft with ELR: a broker registering after an unclean shutdown leaves every ISR and ELR first
    (ReplicationControlManager.handleBrokerUncleanShutdown): its log may have lost acknowledged records."""
    broker = s.command.broker_id
    assert broker is not None
    _require_partition(s)
    rec = s.record
    if not s.elr_on or (broker not in rec.isr and broker not in rec.eligible_leader_replicas):
        s.note(f"broker {broker} is in neither ISR nor ELR")
        return
    s.unclean_shutdown = (broker,)
    s.write(NO_LEADER if rec.leader == broker else rec.leader, (r for r in rec.isr if r != broker),
            (r for r in rec.replicas if r != broker and r in s.command.live_brokers), bump_leader_epoch=False)
    s.note(f"broker {broker} registered after an unclean shutdown: out of ISR and ELR")
