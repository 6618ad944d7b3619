"""One partition's controller logic: `apply_command(record, command)`.

This is the function the Spark operator runs per TopicPartition group and the local engine runs
in-process. It reads like Kafka's PartitionStateMachine / ReplicaStateMachine: every state change goes
through `_Step.move` / `_Step.move_replica`, which check the valid previous states, and every write of
leader/ISR goes through `_Step.write`, which bumps the epochs and records the LeaderAndIsr decision.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace

from schemas.events import LeaderRecoveryState
from schemas.records import AuditRow, Decision
from statemachine import elections
from statemachine.elections import Elected
from statemachine.errors import Error, Outcome, Rejection
from statemachine.features import is_alter_partition_supported
from statemachine.record import NO_LEADER, Action, Applied, Command, PartitionRecord
from statemachine.requests import LEADER_DURING_DELETE, NO_EPOCH, Added, Phase, RequestPartition, RequestType
from statemachine.rules import (
    ZK,
    Rules,
    eligible_leader_replicas,
    elr_after_disabling,
    elr_that_can_lead_without_the_feature,
    last_known_leader,
    reassignment_from_original,
)
from statemachine.states import (
    VALID_PREVIOUS_REPLICA_STATES,
    IllegalTransition,
    PartitionState,
    ReplicaState,
    check_partition_transition,
    check_replica_transition,
)
from statemachine.visit_order import replica_state_machine_order

P = PartitionState
R = ReplicaState


def metadata_state(rec: PartitionRecord) -> RequestPartition | None:
    """A partition in UpdateMetadata: as the controller holds it (its cache: PartitionRecord.controller_view), leader
    and leader epoch -2 while its topic is being deleted; None when it never had a leader (the controller leaves it
    out)."""
    if not rec.has_leader_and_isr:
        return None
    deleting = rec.queued_for_deletion
    isr, partition_epoch = rec.controller_view
    return RequestPartition(rec.topic, rec.partition, LEADER_DURING_DELETE if deleting else rec.leader,
                            LEADER_DURING_DELETE if deleting else rec.leader_epoch, isr, partition_epoch, rec.replicas)


_NOT_RECORDING = nullcontext()


class _Step:
    """The effect of one command on one partition, built up as the controller would apply it."""

    def __init__(self, before: PartitionRecord, command: Command, rules: Rules = ZK, requests: bool = False) -> None:
        self.before = before
        self.command = command
        self.rules = rules
        self.record = before
        self.decisions: list[Decision] = []
        self.election: str | None = None
        self.notes: list[str] = []
        # An election this command needed and could not run (the error if nothing else changed).
        self.failed: Error | None = None
        # ELR (KIP-966): the ISR the operation's ELR is computed from when the leader came from the ELR (the ISR
        # before that election, empty), and the brokers whose unclean shutdown takes them out of it.
        self.elr_basis: tuple[int, ...] | None = None
        self.unclean_shutdown: tuple[int, ...] = ()
        # A ClearElrRecord: the ELR is emptied as such, not recomputed.
        self.elr_cleared = False
        # The requests the ZK controller adds to its batches for this partition (statemachine.requests), when asked
        # for, and the step of the handler that sends them (None outside one, or not asked: nothing is recorded).
        self.requests = requests
        self.sent: list[Added] = []
        self.phase: Phase | None = None
        self.sub = 0

    @property
    def elr_on(self) -> bool:
        """Eligible Leader Replicas: the rule set has them and the cluster's feature is on."""
        return self.rules.eligible_leader_replicas and self.command.elr_enabled

    # -- state machine transitions ------------------------------------------------------------
    def move(self, target: PartitionState) -> None:
        check_partition_transition(self.record.state, target)
        self.record = self.record.evolve(state=target)

    def move_replica(self, broker: int, target: ReplicaState) -> None:
        states = self.record.replica_states
        check_replica_transition(broker, states.get(broker, R.NON_EXISTENT), target)
        updated = dict(states)
        if target is R.NON_EXISTENT:
            del updated[broker]
        else:
            updated[broker] = target
        self.record = self.record.evolve(replica_states=updated)

    # -- requests (ControllerBrokerRequestBatch) ----------------------------------------------------
    def batch(self, phase: Phase) -> AbstractContextManager[None]:
        """The requests added inside go out in one batch of `phase`; inside another step, in a batch of its own
        after the ones before it (a reassignment's election), and what follows in yet another. Not recording (the
        Spark operator's per-group calls): a shared no-op, nothing built per call."""
        return self._batch(phase) if self.requests else _NOT_RECORDING

    @contextmanager
    def _batch(self, phase: Phase) -> Iterator[None]:
        if self.phase is None:
            self.phase, self.sub = phase, 0
            try:
                yield
            finally:
                self.phase = None
            return
        self.sub += 1
        yield
        self.sub += 1

    def _add(self, request: RequestType, brokers: Iterable[int], partition: RequestPartition | None) -> None:
        registered = self.command.live_or_shutting_down
        self.sent.append(Added(self.phase, self.sub, request, tuple(b for b in brokers if b in registered),
                               partition))

    def send_metadata(self) -> None:
        """addUpdateMetadataRequestForBrokers(every registered broker, this partition): its state as the controller
        holds it (leader -2 while its topic is being deleted); only the brokers when it never had a leader."""
        if self.phase is None:
            return
        self._add(RequestType.UPDATE_METADATA, sorted(self.command.live_or_shutting_down), metadata_state(self.record))

    def send_leader_and_isr(self, brokers: Iterable[int], is_new: bool = False) -> None:
        """addLeaderAndIsrRequestForBrokers: the partition's state as the controller holds it to `brokers`, and
        UpdateMetadata of it to every registered broker."""
        if self.phase is None:
            return
        rec = self.record
        isr, partition_epoch = rec.controller_view
        self._add(RequestType.LEADER_AND_ISR, brokers, RequestPartition(
            rec.topic, rec.partition, rec.leader, rec.leader_epoch, isr, partition_epoch, rec.replicas,
            rec.adding_replicas, rec.removing_replicas, is_new=is_new))
        self.send_metadata()

    def send_stop_replica(self, broker: int, delete: bool) -> None:
        """addStopReplicaRequestForBrokers: the leader epoch as it stands (-2 while the topic is being deleted)."""
        if self.phase is None:
            return
        rec = self.record
        epoch = LEADER_DURING_DELETE if rec.queued_for_deletion else (
            rec.leader_epoch if rec.has_leader_and_isr else NO_EPOCH)
        self._add(RequestType.STOP_REPLICA, (broker,),
                  RequestPartition(rec.topic, rec.partition, leader_epoch=epoch, delete=delete))

    # -- writes ---------------------------------------------------------------------------------
    def write(self, leader: int, isr: Iterable[int], recipients: Iterable[int], *,
              election: Elected | None = None,
              leader_recovery_state: LeaderRecoveryState | None = None,
              is_new: bool = False, bump_leader_epoch: bool = True, initial: bool = False,
              sent: bool = True) -> None:
        """A controller write of leader/ISR: leader_epoch + 1 (not for a leader's own ISR change)
        and partition_epoch + 1, except the very first write, which starts both at 0. Unless `sent` is False,
        the new state goes to `recipients` in a LeaderAndIsr request (and to every broker in UpdateMetadata)."""
        rec = self.record
        self.record = rec.evolve(
            leader=leader, isr=tuple(isr),
            leader_epoch=rec.leader_epoch + (1 if bump_leader_epoch and not initial else 0),
            partition_epoch=rec.partition_epoch + (0 if initial else 1),
            leader_recovery_state=leader_recovery_state or rec.leader_recovery_state,
            cached_isr=None, cached_partition_epoch=None,  # the controller's cache holds what it writes
        )
        if election is not None:
            self.election = str(election.election)
        recipients = tuple(recipients)
        self.decisions.append(self._decision(recipients, election, is_new))
        if sent:
            self.send_leader_and_isr(recipients, is_new)

    def _decision(self, recipients: tuple[int, ...], election: Elected | None, is_new: bool) -> Decision:
        rec, cmd = self.record, self.command
        return Decision(
            topic=rec.topic, partition=rec.partition, controller_epoch=cmd.controller_epoch, leader=rec.leader,
            leader_epoch=rec.leader_epoch, isr=rec.isr, partition_epoch=rec.partition_epoch, replicas=rec.replicas,
            adding_replicas=rec.adding_replicas, removing_replicas=rec.removing_replicas,
            leader_recovery_state=rec.leader_recovery_state, is_new=is_new, recipients=recipients,
            election=None if election is None else election.election, cause=cmd.event_type,
            cause_event_id=cmd.event_id, source_offset=cmd.source_offset, event_ts=cmd.event_ts,
            eligible_leader_replicas=rec.eligible_leader_replicas, last_known_elr=rec.last_known_elr,
        )

    def elect(self, elected: Elected | None, failure: Error, why: str) -> bool:
        """Apply an election's result, or note that it failed (leader, ISR and state stay as they were)."""
        if elected is None:
            self.failed = failure
            self.notes.append(f"{why} ({failure})")
            return False
        self.move(P.ONLINE)
        initial = elected.election is elections.Election.INITIAL
        recovery = elected.leader_recovery_state
        if recovery is LeaderRecoveryState.RECOVERING:  # an unclean leader: KIP-704, by metadata version
            recovery = self.rules.unclean_recovery_state(self.command.metadata_version)
        self.write(elected.leader, elected.isr, elected.recipients, election=elected,
                   leader_recovery_state=recovery, is_new=initial, initial=initial)
        return True

    def note(self, text: str) -> None:
        self.notes.append(text)

    def read_state(self) -> None:
        """The ZooKeeper-era controller reads the partition's state from ZooKeeper into its cache."""
        if self.record.cached_isr is not None:
            self.record = self.record.evolve(cached_isr=None, cached_partition_epoch=None)

    # -- result ---------------------------------------------------------------------------------
    def _settle_elr(self) -> None:
        """The operation's ELR and last known leader, from the partition before it and its final leader and
        ISR, as PartitionChangeBuilder.build computes them once per operation. An unclean election empties
        the ELR; a leader taken from the ELR leaves it."""
        before, rec = self.before, self.record
        if self.election == elections.Election.OFFLINE_UNCLEAN:
            elr: tuple[int, ...] = ()
        else:
            basis = rec.isr if self.elr_basis is None else self.elr_basis
            elr = tuple(r for r in eligible_leader_replicas(before.eligible_leader_replicas, before.isr, basis,
                                                            self.command.min_isr, self.unclean_shutdown)
                        if r != rec.leader)
        last_known = last_known_leader(before.leader, before.isr, before.last_known_elr, rec.isr, rec.leader)
        self.record = rec.evolve(eligible_leader_replicas=elr, last_known_elr=last_known)
        self.decisions[-1] = replace(self.decisions[-1], eligible_leader_replicas=elr, last_known_elr=last_known)

    def _drop_elr(self) -> None:
        """The feature turned off while the partition still holds an ELR: this change empties it
        (rules.elr_after_disabling)."""
        elr, last_known = elr_after_disabling(self.before.last_known_elr)
        self.record = self.record.evolve(eligible_leader_replicas=elr, last_known_elr=last_known)
        self.decisions[-1] = replace(self.decisions[-1], eligible_leader_replicas=elr, last_known_elr=last_known)

    def finish(self) -> Applied:
        if self.decisions and self.elr_on and not self.elr_cleared:
            self._settle_elr()
        elif self.decisions and self.rules.eligible_leader_replicas and self.record.eligible_leader_replicas:
            self._drop_elr()
        if self.decisions:
            # The rule set decides what the operation's writes publish; the record keeps the published epochs
            # (the partition's own, when nothing is published). Under ZK rules every write is published as is.
            self.decisions = self.rules.decisions(self.before, self.decisions, self.command.metadata_version)
            published = self.decisions[-1] if self.decisions else self.before
            epochs = (published.leader_epoch, published.partition_epoch)
            if epochs != (self.record.leader_epoch, self.record.partition_epoch):
                self.record = self.record.evolve(leader_epoch=epochs[0], partition_epoch=epochs[1])
        changed = self.record != self.before
        if changed:
            outcome, error = Outcome.ACCEPTED, None
        elif self.failed is not None:
            outcome, error = Outcome.REJECTED, self.failed
        else:
            outcome, error = Outcome.NO_OP, None
        return self._result(self.record if changed else self.before, outcome, error, "; ".join(self.notes))

    def reject(self, error: Error, message: str) -> Applied:
        self.decisions = []
        self.sent = []
        self.election = None
        return self._result(self.before, Outcome.REJECTED, error, message)

    def _result(self, record: PartitionRecord, outcome: Outcome, error: Error | None, message: str) -> Applied:
        before = self.before
        audit = _audit(
            self.command, outcome, error, message or None, topic=before.topic, partition=before.partition,
            from_state=before.state, to_state=record.state, leader_before=before.leader, leader_after=record.leader,
            leader_epoch_before=before.leader_epoch, leader_epoch_after=record.leader_epoch,
            isr_before=before.isr, isr_after=record.isr, partition_epoch_before=before.partition_epoch,
            partition_epoch_after=record.partition_epoch,
            election=self.election if outcome is Outcome.ACCEPTED else None,
            replica_states=dict(sorted(record.replica_states.items())), replicas_after=record.replicas,
            leader_recovery_state_after=record.leader_recovery_state)
        kept = None if record.state is P.NON_EXISTENT else record
        return Applied(kept, self.decisions if outcome is Outcome.ACCEPTED else [], audit, tuple(self.sent))


# What an audit row says about the partition, none of which a cluster-level row has.
_NO_PARTITION_FACTS: dict[str, object] = dict.fromkeys((
    "partition", "from_state", "to_state", "leader_before", "leader_after", "leader_epoch_before",
    "leader_epoch_after", "isr_before", "isr_after", "partition_epoch_before", "partition_epoch_after", "election",
    "replica_states", "replicas_after", "leader_recovery_state_after"))


def _audit(cmd: Command, outcome: Outcome, error: Error | None, message: str | None, **partition_facts: object
           ) -> AuditRow:
    """The audit row of a command: the event's facts from the command, the partition's from the caller (every
    one of them, topic included; none on a cluster-level row, whose topic is the event's if it names one)."""
    facts = partition_facts or {"topic": cmd.topic, **_NO_PARTITION_FACTS}
    return AuditRow(
        event_id=cmd.event_id, event_type=cmd.event_type, source_offset=cmd.source_offset, step=cmd.step,
        controller_epoch=cmd.controller_epoch, outcome=outcome, error=error, message=message,
        broker_id=cmd.broker_id, principal=cmd.principal, event_ts=cmd.event_ts, action=cmd.action,
        broker_change=cmd.broker_change, broker_epoch=cmd.broker_epoch, controller_id=cmd.controller_id,
        event_controller_epoch=cmd.event_controller_epoch,
        configs=None if cmd.configs is None else dict(sorted(cmd.configs.items())), **facts)


# -- shared steps ---------------------------------------------------------------------------------

def _require_partition(s: _Step) -> None:
    if s.record.state is P.NON_EXISTENT:
        raise Rejection(Error.UNKNOWN_TOPIC_OR_PARTITION,
                        f"partition {s.record.topic}-{s.record.partition} does not exist")


def _bring_online(s: _Step, unclean_allowed: bool) -> None:
    """triggerOnlinePartitionStateChange for one partition: New -> INITIAL, Offline -> OFFLINE."""
    isr = s.record.isr
    with s.batch(Phase.ELECTION):
        _elect_online(s, unclean_allowed)
    rec = s.record
    if rec.isr != isr and rec.reassignment_in_progress and _reassignment_caught_up(rec) and \
            s.rules.reassigning_states_watched(s.command.metadata_version):
        # The election's write fired the watch on the state znode: the reassignment completes next (seed 128: an
        # unclean election of the one target replica).
        with s.batch(Phase.REASSIGNMENT):
            _progress_reassignment(s)


def _elect_online(s: _Step, unclean_allowed: bool) -> None:
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


def _elect_eligible(s: _Step, isr: tuple[int, ...], unclean_allowed: bool) -> bool:
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


def _offline_replica(s: _Step, broker: int) -> None:
    """Replica -> OfflineReplica: StopReplica (no delete) to its broker. If the ISR holds it, the controller writes
    it out of the ISR (never emptying the ISR, unless ELR is on) and drops it as leader. For a topic being deleted
    the ZK controller still writes that (removeReplicasFromIsr) but sends no LeaderAndIsr; KRaft removes the topic
    in one record. The ZK controller sends the other replicas the partition's state, changed or not, and
    UpdateMetadata (only the live brokers, for a partition that never had a leader)."""
    s.move_replica(broker, R.OFFLINE)
    s.send_stop_replica(broker, delete=False)
    s.read_state()  # removeReplicasFromIsr reads the state, whether it writes or not
    rec = s.record
    if not rec.has_leader_and_isr:
        s.send_metadata()
        return
    if broker not in rec.isr or (rec.queued_for_deletion and not s.rules.deletion_writes_offline_replicas):
        if not rec.queued_for_deletion:
            s.send_leader_and_isr(r for r in rec.replicas if r != broker)
        return
    # The last member stays, unless ELR is on: then the ISR may go empty (the member moves to the ELR).
    isr = rec.isr if len(rec.isr) == 1 and not s.elr_on else tuple(r for r in rec.isr if r != broker)
    leader = NO_LEADER if rec.leader == broker else rec.leader
    live = s.command.live_or_shutting_down
    s.write(leader, isr, () if rec.queued_for_deletion else (r for r in rec.replicas if r != broker and r in live),
            sent=not rec.queued_for_deletion)
    s.note(f"replica {broker} offline: ISR {list(rec.isr)} -> {list(isr)}"
           + (", leader -1" if leader == NO_LEADER and rec.leader == broker else ""))


def _delete_replicas(s: _Step, replicas: Iterable[int], last: ReplicaState = R.NON_EXISTENT) -> None:
    """OfflineReplica -> ReplicaDeletionStarted -> ReplicaDeletionSuccessful -> NonExistentReplica: each step for
    all of them before the next, in one batch each (StopReplica, then StopReplica deleting), brokers in the
    ReplicaStateMachine's order (the ISR shrinks in that order). A topic's deletion stops at ReplicaDeletionSuccessful
    (`last`) until every replica of the topic is there."""
    order = replica_state_machine_order(replicas)
    with s.batch(Phase.OFFLINE_REPLICA):
        for broker in order:
            # Every one goes through OfflineReplica, as in Kafka, also one already offline: a restored (snapshot)
            # state can hold offline replicas in the ISR, and the transition takes them out.
            _offline_replica(s, broker)
    with s.batch(Phase.DELETION):
        for broker in order:
            s.move_replica(broker, R.DELETION_STARTED)
            s.send_stop_replica(broker, delete=True)
    for broker in order:
        s.move_replica(broker, R.DELETION_SUCCESSFUL)
        if last is R.NON_EXISTENT:
            s.move_replica(broker, R.NON_EXISTENT)


def _online_replica(s: _Step, broker: int) -> None:
    """Replica -> OnlineReplica: a replica that was not new gets the partition's state (when it has one)."""
    was = s.record.replica_states.get(broker)
    s.move_replica(broker, R.ONLINE)
    if was is not R.NEW and s.record.has_leader_and_isr:
        s.send_leader_and_isr((broker,))


def _topic_deletion(s: _Step) -> None:
    """onTopicDeletion for this partition: UpdateMetadata (leader -2: brokers stop serving it), then its replicas'
    deletion."""
    with s.batch(Phase.DELETION):
        s.send_metadata()
        _continue_deletion(s)


def _continue_deletion(s: _Step) -> None:
    """TopicDeletionManager.onPartitionDeletion: delete every replica whose broker is live; one on a dead broker
    fails (ReplicaDeletionIneligible) and waits for that broker's startup (resumeDeletions retries the failed ones:
    RETRY_DELETION, fanned out by the controller). A deleted replica stays ReplicaDeletionSuccessful, and the partition
    with it, until every replica of the topic is deleted (COMPLETE_DELETION, fanned out by the controller)."""
    live = s.command.live_brokers
    pending = replicas_not_deleted(s.record)
    _delete_replicas(s, [b for b in pending if b in live], last=R.DELETION_SUCCESSFUL)
    for broker in sorted(b for b in pending if b not in live):
        _fail_deletion(s, broker)
    waiting = replicas_not_deleted(s.record)
    s.note(f"deletion waits for dead broker(s) {waiting}" if waiting else "every replica deleted")


def replicas_not_deleted(rec: PartitionRecord) -> list[int]:
    """The replicas of a partition whose deletion is not done (not ReplicaDeletionSuccessful), in id order."""
    return sorted(b for b, state in rec.replica_states.items() if state is not R.DELETION_SUCCESSFUL)


def _on_complete_deletion(s: _Step) -> None:
    """TopicDeletionManager.completeDeleteTopic: every replica of the topic is deleted; they and the partition cease
    to exist."""
    _require_partition(s)
    for broker in sorted(s.record.replica_states):
        s.move_replica(broker, R.NON_EXISTENT)
    s.move(P.NON_EXISTENT)
    s.note("all replicas of the topic deleted")


def _fail_deletion(s: _Step, broker: int) -> None:
    """A replica whose deletion cannot go on (its broker is not live): ReplicaDeletionIneligible, from OfflineReplica
    or ReplicaDeletionStarted only (TopicDeletionManager.failReplicaDeletion). One still OnlineReplica (a deletion
    halted since the failover or its broker's startup had not started it) stays so: Kafka logs the transition as
    invalid and writes nothing."""
    state = s.record.replica_states[broker]
    if state in VALID_PREVIOUS_REPLICA_STATES[R.DELETION_INELIGIBLE]:
        s.move_replica(broker, R.DELETION_INELIGIBLE)
    elif state is not R.DELETION_INELIGIBLE:
        s.note(f"replica {broker} is {state}: not ReplicaDeletionIneligible")


def _on_resume_deletion(s: _Step) -> None:
    """TopicDeletionManager.onPartitionDeletion for a topic that is eligible again (after a failover, or a startup
    of one of its replicas' brokers): every replica not deleted yet is deleted, or fails on a dead broker."""
    _require_partition(s)
    _topic_deletion(s)


def _on_retry_deletion(s: _Step) -> None:
    """TopicDeletionManager.resumeDeletions retries each replica whose deletion failed: back to OfflineReplica, which
    takes it out of the ISR where it still is (the last member stays; the ZK controller writes that). A replica of a
    broker that is live again is not among them: its startup brought it online first."""
    _require_partition(s)
    live = s.command.live_brokers
    with s.batch(Phase.OFFLINE_REPLICA):
        for broker in replica_state_machine_order(b for b, state in s.record.replica_states.items()
                                                  if state is R.DELETION_INELIGIBLE and b not in live):
            _offline_replica(s, broker)


def _progress_reassignment(s: _Step) -> None:
    """onPartitionReassignment: phase A while the targets are not all in the ISR, else phase B."""
    rec, cmd = s.record, s.command
    target = rec.target_replicas
    live = cmd.live_or_shutting_down
    if not _reassignment_caught_up(rec):
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
            s.write(rec.leader, rec.isr, (r for r in target if r in live))
    _delete_replicas(s, removing)
    with s.batch(Phase.METADATA):  # the new replicas and ISR to every broker
        s.send_metadata()
    s.note(f"reassignment completed: replicas {list(target)}")
    _elect_if_leaderless(s)


def _update_leader_epoch_and_send(s: _Step) -> None:
    """updateLeaderEpochAndSendRequest (A1): the leader epoch bumped, LeaderAndIsr of the whole replica set to its
    registered replicas, the original ones as they are, the new ones as new."""
    rec = s.record
    live = s.command.live_or_shutting_down
    s.write(rec.leader, rec.isr, (r for r in rec.replicas if r in live), sent=False)
    s.send_leader_and_isr(rec.origin_replicas)
    s.send_leader_and_isr(rec.adding_replicas, is_new=True)


def _reassignment_caught_up(rec: PartitionRecord) -> bool:
    """The reassignment can complete: nothing is being added or removed (a cancel, a reorder: ZK's
    isReassignmentComplete, KRaft's revert), or every target replica is in the ISR."""
    return not (rec.adding_replicas or rec.removing_replicas) or all(r in rec.isr for r in rec.target_replicas)


def _start_reassignment(s: _Step, target: tuple[int, ...], cancel: bool = False) -> None:
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


def _elect_if_leaderless(s: _Step) -> None:
    """KRaft: a reassignment that took the leader's replica away leaves the partition offline: elect as the
    controller does for an offline partition. ZK does not: its partition stays OnlinePartition without a leader
    (removeReplicasFromIsr changes no partition state) until a failover or a later reassignment."""
    rec = s.record
    if (s.rules.elects_when_a_reassignment_drops_the_leader and rec.has_leader_and_isr and rec.state is P.ONLINE
            and rec.leader not in s.command.live_brokers):
        s.move(P.OFFLINE)
        _bring_online(s, s.command.unclean_allowed)


# -- triggers -------------------------------------------------------------------------------------

def _on_create(s: _Step) -> None:
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


def _on_isr_change(s: _Step) -> None:
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
                and rec.reassignment_in_progress and _reassignment_caught_up(rec)):
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
    # No LeaderAndIsr: the ZK controller answers the leader and sends the request's UpdateMetadata (the controller's
    # fan-out adds it). Below protocol 2.7 the leader wrote it itself: the controller's cache keeps what it held until
    # it reads the leader's notification.
    cached = None if is_alter_partition_supported(cmd.metadata_version) else rec.controller_view
    s.write(rec.leader, cmd.isr, (rec.leader,), leader_recovery_state=recovery, bump_leader_epoch=False, sent=False)
    s.note(f"ISR {list(rec.isr)} -> {list(cmd.isr)}")
    if cached is not None:
        s.record = s.record.evolve(cached_isr=cached[0], cached_partition_epoch=cached[1])
        s.note("written by the leader itself (below protocol 2.7)")
    if s.record.reassignment_in_progress and all(r in s.record.isr for r in s.record.target_replicas):
        with s.batch(Phase.REASSIGNMENT):
            _progress_reassignment(s)


def _on_isr_change_notification(s: _Step) -> None:
    """processIsrChangeNotification for this partition: its state read from ZooKeeper into the controller's cache,
    and UpdateMetadata of it to every registered broker (one request for the notifications' partitions)."""
    _require_partition(s)
    if s.record.cached_isr is not None:
        s.note(f"the controller's cache reads ISR {list(s.record.isr)} (it held {list(s.record.cached_isr)})")
    s.read_state()
    with s.batch(Phase.METADATA):
        s.send_metadata()


def _on_broker_startup(s: _Step) -> None:
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
        rec = s.record
        if (s.rules.reassignment_steps_bump_the_leader_epoch and (rec.adding_replicas or rec.removing_replicas)
                and onto_target and not _reassignment_caught_up(rec)):
            # ZK: maybeResumeReassignments does not skip a topic being deleted (its reassignment stays in
            # /brokers/topics/T): a startup onto its target bumps the leader epoch again and sends the replica set
            # (A1), before the deletion goes on. Its new replicas are being deleted: NewReplica fails, sends nothing.
            with s.batch(Phase.REASSIGNMENT):
                _update_leader_epoch_and_send(s)
        return
    if s.rules.completes_reassignment_before_election:
        # KRaft writes only leaderless partitions at an unfence; one whose targets are all in the ISR it has
        # completes before its election.
        if s.record.state is P.OFFLINE and s.record.reassignment_in_progress and _reassignment_caught_up(s.record):
            _progress_reassignment(s)
        _bring_online(s, s.command.unclean_allowed)
        return
    _bring_online(s, s.command.unclean_allowed)
    if s.record.reassignment_in_progress and onto_target:
        with s.batch(Phase.REASSIGNMENT):
            _progress_reassignment(s)


def _on_broker_failure(s: _Step) -> None:
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
    if broker in s.record.replica_states:
        with s.batch(Phase.OFFLINE_REPLICA):
            _offline_replica(s, broker)


def _on_controlled_shutdown(s: _Step) -> None:
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


def _on_reassign(s: _Step) -> None:
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
    dead = [r for r in target if r not in rec.origin_replicas and r not in s.command.live_brokers]
    # validateReplicas: the Admin API's reassignments only (processApiPartitionReassignment), not the znode's.
    if dead and s.rules.reassign_to_live_brokers_only and not s.command.through_znode:
        raise Rejection(Error.INVALID_REPLICA_ASSIGNMENT, f"target adds brokers that are not live: {dead}")
    with s.batch(Phase.REASSIGNMENT):
        _start_reassignment(s, target)


def _on_elect_preferred(s: _Step) -> None:
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


def _on_elect_unclean(s: _Step) -> None:
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


def _write_emptied_elr(s: _Step) -> bool:
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


def _on_try_election(s: _Step) -> None:
    """A topic's unclean.leader.election.enable turned on: its New/Offline partitions try again."""
    _require_partition(s)
    if not s.record.queued_for_deletion:
        _bring_online(s, s.command.unclean_allowed)


def _on_delete(s: _Step) -> None:
    _require_partition(s)
    # A pending reassignment ends with the topic (every replica of RS is deleted): nothing resumes it.
    s.record = s.record.evolve(queued_for_deletion=True, reassignment_in_progress=False)
    s.move(P.OFFLINE)
    _topic_deletion(s)


def _on_controller_failover(s: _Step) -> None:
    """onControllerFailover: replica states re-derived (offline ones leave the ISR), partition states
    re-derived, New/Offline partitions elect, reassignments and deletions resume."""
    _require_partition(s)
    s.read_state()  # initializeControllerContext reads every partition's state
    live = s.command.live_brokers
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
        return
    if s.record.has_leader_and_isr and s.record.leader not in live and s.record.state is not P.OFFLINE:
        s.move(P.OFFLINE)
    _bring_online(s, s.command.unclean_allowed)
    if s.record.reassignment_in_progress:
        with s.batch(Phase.REASSIGNMENT):
            _progress_reassignment(s)


def _on_unclean_registration(s: _Step) -> None:
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


def _on_clear_elr(s: _Step) -> None:
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


def _on_restore(s: _Step) -> None:
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
    for broker in replicas:
        s.move_replica(broker, R.ONLINE if broker in cmd.live_brokers else R.OFFLINE)
    s.note("restored from a metadata snapshot")


def _on_reject(s: _Step) -> None:
    raise Rejection(s.command.error or Error.INVALID_REQUEST, s.command.message or "")


_HANDLERS: dict[Action, Callable[[_Step], None]] = {
    Action.CREATE: _on_create,
    Action.ISR_CHANGE: _on_isr_change,
    Action.ISR_CHANGE_NOTIFICATION: _on_isr_change_notification,
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
    Action.COMPLETE_DELETION: _on_complete_deletion,
    Action.CONTROLLER_FAILOVER: _on_controller_failover,
    Action.UNCLEAN_REGISTRATION: _on_unclean_registration,
    Action.CLEAR_ELR: _on_clear_elr,
    Action.REJECT: _on_reject,
    Action.RESTORE: _on_restore,
}


def apply_command(record: PartitionRecord | None, command: Command, rules: Rules = ZK,
                  requests: bool = False) -> Applied:
    """Apply one command to one partition (None = the partition does not exist) under `rules`; with `requests`, also
    what the ZK controller adds to its request batches for it (Applied.sent)."""
    if command.partition is None:
        # An event's cluster-level verdict, reached before fan-out: no partition, no state.
        return Applied(record, [], _audit(command, command.outcome or Outcome.ACCEPTED, command.error,
                                          command.message))
    assert command.topic is not None
    step = _Step(record or PartitionRecord(command.topic, command.partition), command, rules, requests)
    try:
        _HANDLERS[command.action](step)
    except Rejection as rejected:
        return step.reject(rejected.error, rejected.message)
    except IllegalTransition as illegal:
        return step.reject(Error.INVALID_TRANSITION, str(illegal))
    return step.finish()
