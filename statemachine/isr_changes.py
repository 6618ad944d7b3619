"""A partition's ISR and ELR changes: a leader's AlterPartition (AlterIsr), the ISR change notification of the
ZooKeeper-era controller, and the ELR cleared when min.insync.replicas changes (KRaft).
"""

from __future__ import annotations

from schemas.events import LeaderRecoveryState
from statemachine.errors import Error, Rejection
from statemachine.features import is_alter_partition_supported
from statemachine.leader_changes import _progress_reassignment, _reassignment_caught_up
from statemachine.replica_steps import _require_partition
from statemachine.requests import Phase
from statemachine.step import Step


def _on_isr_change(s: Step) -> None:
    """AlterPartition from the leader, validated in Kafka's order."""
    rec, cmd = s.record, s.command
    assert cmd.isr is not None and cmd.leader_epoch is not None and cmd.partition_epoch is not None
    if not rec.has_leader_and_isr:
        raise Rejection(Error.UNKNOWN_TOPIC_OR_PARTITION,
                        f"partition {rec.topic}-{rec.partition} does not exist or has no leader yet")
    if cmd.leader_epoch > rec.leader_epoch or cmd.partition_epoch > rec.partition_epoch:
        raise Rejection(Error.NOT_CONTROLLER,
                        f"request epochs (leader {cmd.leader_epoch}, partition {cmd.partition_epoch}) are ahead "
                        f"of the controller's ({rec.leader_epoch}, {rec.partition_epoch})")
    if cmd.leader_epoch < rec.leader_epoch:
        raise Rejection(Error.FENCED_LEADER_EPOCH,
                        f"leader epoch {cmd.leader_epoch} is older than {rec.leader_epoch}")
    recovery = cmd.leader_recovery_state or LeaderRecoveryState.RECOVERED
    if (cmd.broker_id == rec.leader and cmd.isr == rec.isr and recovery == rec.leader_recovery_state
            and cmd.partition_epoch <= rec.partition_epoch):
        if (s.rules.completes_reassignment_before_election and cmd.partition_epoch == rec.partition_epoch
                and rec.reassignment_in_progress and _reassignment_caught_up(s, rec)):
            # KRaft builds a change from every AlterPartition: an ISR that covers the targets completes the
            # reassignment an election left in progress.
            _progress_reassignment(s)
            return
        s.note("ISR already as requested")
        return
    if cmd.partition_epoch < rec.partition_epoch:
        raise Rejection(Error.INVALID_UPDATE_VERSION,
                        f"partition epoch {cmd.partition_epoch} is older than {rec.partition_epoch}")
    if recovery is LeaderRecoveryState.RECOVERING and len(cmd.isr) > 1:
        raise Rejection(Error.INVALID_REQUEST, "a RECOVERING leader must be alone in the ISR")
    if (rec.leader_recovery_state is LeaderRecoveryState.RECOVERED
            and recovery is LeaderRecoveryState.RECOVERING):
        raise Rejection(Error.INVALID_REQUEST, "leader recovery state cannot go from RECOVERED to RECOVERING")
    # KRaft's further checks, which keep the invariants a consumer relies on.
    if cmd.broker_id != rec.leader:
        raise Rejection(Error.INVALID_REQUEST, f"broker {cmd.broker_id} is not the leader ({rec.leader})")
    if rec.leader not in cmd.isr or len(set(cmd.isr)) != len(cmd.isr):
        raise Rejection(Error.INVALID_REQUEST, f"ISR {list(cmd.isr)} must hold the leader once, no duplicates")
    strangers = [r for r in cmd.isr if r not in rec.replicas]
    if strangers:
        raise Rejection(Error.INVALID_REQUEST, f"ISR members {strangers} are not replicas {list(rec.replicas)}")
    ineligible = [r for r in cmd.isr if r not in cmd.live_brokers]
    if ineligible and s.rules.isr_members_must_be_live(cmd.metadata_version, cmd.kafka_release):
        raise Rejection(Error.INELIGIBLE_REPLICA, f"ISR members {ineligible} are not live brokers")
    if cmd.write_failed:
        # processAlterIsr: the write threw (the deposed controller's session had expired); its UpdateMetadata still
        # goes out (the fan-out adds it), the cache keeps the state, and no reassignment is completed.
        raise Rejection(Error.UNKNOWN_SERVER_ERROR, f"the controller's write of ISR {list(cmd.isr)} failed: its "
                        "ZooKeeper session had expired")
    # No LeaderAndIsr: the ZK controller answers the leader and sends the request's UpdateMetadata (the controller's
    # fan-out adds it). Below protocol 2.7 the leader wrote it itself: the controller's cache keeps what it held until
    # it reads the leader's notification.
    cached = None if is_alter_partition_supported(cmd.metadata_version) else rec.controller_view
    s.write(rec.leader, cmd.isr, (rec.leader,), leader_recovery_state=recovery, bump_leader_epoch=False, sent=False)
    s.note(f"ISR {list(rec.isr)} -> {list(cmd.isr)}")
    if cached is not None:
        s.record = s.record.evolve(cached_isr=cached[0], cached_partition_epoch=cached[1])
        s.note("written by the leader itself (below protocol 2.7)")
    if cmd.reassignment_completed_by_queued_event:
        s.note("the reassignment it lets complete is completed by the event queued before it")
        return
    if cmd.controller_died_before_completion:
        # Its session expired before maybeCompleteReassignment read the state: ZooKeeper keeps the reassignment.
        s.note("the controller died before the reassignment it lets complete was completed")
        return
    if cmd.reassignment_completed_after_the_request:
        return  # COMPLETE_REASSIGNMENT, once the request's other partitions are written
    _maybe_complete_reassignment(s)


def _on_complete_reassignment(s: Step) -> None:
    """maybeCompleteReassignment, after an AlterPartition naming several partitions was written and its UpdateMetadata
    sent: this partition's reassignment completes if its ISR has caught up."""
    _require_partition(s)
    if not _maybe_complete_reassignment(s):
        s.note("no reassignment to complete")


def _maybe_complete_reassignment(s: Step) -> bool:
    """A reassignment in progress whose ISR has caught up completes (onPartitionReassignment, phase B). Returns
    whether it did."""
    rec = s.record
    if not (rec.reassignment_in_progress and s.rules.reassignment_caught_up(
            rec.isr, rec.target_replicas, rec.adding_replicas, rec.removing_replicas, s.command.controller_level)):
        return False
    with s.batch(Phase.REASSIGNMENT):
        _progress_reassignment(s)
    return True


def _on_isr_change_notification(s: Step) -> None:
    """processIsrChangeNotification for this partition: its state read from ZooKeeper into the controller's cache,
    and UpdateMetadata of it to every registered broker (one request for the notifications' partitions)."""
    _require_partition(s)
    if s.record.cached_isr is not None:
        s.note(f"the controller's cache reads ISR {list(s.record.isr)} (it held {list(s.record.cached_isr)})")
    s.read_state()
    with s.batch(Phase.METADATA):
        s.send_metadata()


def _on_clear_elr(s: Step) -> None:
    """KRaft: min.insync.replicas changed, so the topic's ELR no longer means what it did: cleared
    (ClearElrRecord, ReplicationControlManager.removeTopicElrs), partition epoch + 1 where there was one."""
    _require_partition(s)
    rec = s.record
    if not s.elr_on or not (rec.eligible_leader_replicas or rec.last_known_elr):
        s.note("no ELR to clear")
        return
    s.record = rec.evolve(eligible_leader_replicas=(), last_known_elr=())
    s.elr_cleared = True
    s.write(rec.leader, rec.isr, (r for r in rec.replicas if r in s.command.live_brokers), bump_leader_epoch=False)
    s.note(f"ELR {list(rec.eligible_leader_replicas)} and last known leader {list(rec.last_known_elr)} cleared")
