"""The effect of one command on one partition, built up as Kafka's controller applies it: every state change goes
through `Step.move` / `Step.move_replica`, which check the valid previous states, and every write of leader/ISR
through `Step.write`, which bumps the epochs and records the LeaderAndIsr decision; `Step.finish` settles what one
operation publishes (the rule set's records, the ELR, the replicas' directories). The handlers are in
statemachine.partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

from schemas.events import LeaderRecoveryState
from schemas.records import AuditRow, Decision
from statemachine import elections
from statemachine.directories import directories_for
from statemachine.elections import Elected
from statemachine.errors import Error, Outcome
from statemachine.record import Applied, Command, PartitionRecord
from statemachine.requests import LEADER_DURING_DELETE, NO_EPOCH, Added, Phase, RequestPartition, RequestType
from statemachine.rules import ZK, Rules, eligible_leader_replicas, elr_after_disabling, last_known_leader
from statemachine.states import PartitionState, ReplicaState, check_partition_transition, check_replica_transition

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


def leader_and_isr_state(rec: PartitionRecord, is_new: bool = False) -> RequestPartition:
    """A partition in LeaderAndIsr: as the controller holds it (its cache: PartitionRecord.controller_view)."""
    isr, partition_epoch = rec.controller_view
    return RequestPartition(rec.topic, rec.partition, rec.leader, rec.leader_epoch, isr, partition_epoch, rec.replicas,
                            rec.adding_replicas, rec.removing_replicas, is_new=is_new)


_NOT_RECORDING = nullcontext()


class Step:
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
        # KRaft: the directories this operation sets for brokers' replicas (AssignReplicasToDirs).
        self.assigned: dict[int, str] = {}
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
        if target is not self.record.state:  # a legal move to where it is (Online to Online) copies nothing
            self.record = self.record.evolve(state=target)

    def move_replica(self, broker: int, target: ReplicaState) -> None:
        states = self.record.replica_states
        check_replica_transition(broker, states.get(broker, R.NON_EXISTENT), target)
        if states.get(broker) is target:  # a legal move to where it is (Online to Online) copies nothing
            return
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
        registered = self.command.registered_brokers
        self.sent.append(Added(self.phase, self.sub, request, tuple(b for b in brokers if b in registered),
                               partition))

    def send_metadata(self) -> None:
        """addUpdateMetadataRequestForBrokers(every registered broker, this partition): its state as the controller
        holds it (leader -2 while its topic is being deleted); only the brokers when it never had a leader."""
        if self.phase is None:
            return
        self._add(RequestType.UPDATE_METADATA, sorted(self.command.registered_brokers), metadata_state(self.record))

    def send_leader_and_isr(self, brokers: Iterable[int], is_new: bool = False) -> None:
        """addLeaderAndIsrRequestForBrokers: the partition's state as the controller holds it to `brokers`, and
        UpdateMetadata of it to every registered broker."""
        if self.phase is None:
            return
        self._add(RequestType.LEADER_AND_ISR, brokers, leader_and_isr_state(self.record, is_new))
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
            directories=rec.directories,
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
        self.decisions[-1] = self.decisions[-1].evolve(eligible_leader_replicas=elr, last_known_elr=last_known)

    def _drop_elr(self) -> None:
        """The feature turned off while the partition still holds an ELR: this change empties it
        (rules.elr_after_disabling)."""
        elr, last_known = elr_after_disabling(self.before.last_known_elr)
        self.record = self.record.evolve(eligible_leader_replicas=elr, last_known_elr=last_known)
        self.decisions[-1] = self.decisions[-1].evolve(eligible_leader_replicas=elr, last_known_elr=last_known)

    def _settle_directories(self) -> None:
        """The replicas' directories as the operation's record leaves them (directories.directories_for)."""
        before, rec, cmd = self.before, self.record, self.command
        directories = directories_for(before.replicas, before.directories, rec.replicas, self.assigned,
                                      cmd.default_directories or {}, cmd.metadata_version)
        # Most operations leave them as they were: no copy then (the core's most frequent one otherwise).
        if directories != rec.directories:
            self.record = rec.evolve(directories=directories)
        if self.decisions and directories != self.decisions[-1].directories:
            self.decisions[-1] = self.decisions[-1].evolve(directories=directories)

    def finish(self) -> Applied:
        if self.rules.assigns_directories and (self.decisions or self.record.replicas != self.before.replicas):
            self._settle_directories()
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
        row = audit(self.command, outcome, error, message or None, {
            "topic": before.topic, "partition": before.partition, "from_state": before.state,
            "to_state": record.state, "leader_before": before.leader, "leader_after": record.leader,
            "leader_epoch_before": before.leader_epoch, "leader_epoch_after": record.leader_epoch,
            "isr_before": before.isr, "isr_after": record.isr, "partition_epoch_before": before.partition_epoch,
            "partition_epoch_after": record.partition_epoch,
            "election": self.election if outcome is Outcome.ACCEPTED else None,
            "replica_states": dict(sorted(record.replica_states.items())), "replicas_after": record.replicas,
            "leader_recovery_state_after": record.leader_recovery_state})
        kept = None if record.state is P.NON_EXISTENT else record
        return Applied(kept, self.decisions if outcome is Outcome.ACCEPTED else [], row, tuple(self.sent))


# What an audit row says about the partition, none of which a cluster-level row has.
_NO_PARTITION_FACTS: dict[str, object] = dict.fromkeys((
    "partition", "from_state", "to_state", "leader_before", "leader_after", "leader_epoch_before",
    "leader_epoch_after", "isr_before", "isr_after", "partition_epoch_before", "partition_epoch_after", "election",
    "replica_states", "replicas_after", "leader_recovery_state_after"))


def audit(cmd: Command, outcome: Outcome, error: Error | None, message: str | None,
          partition_facts: dict[str, object] | None = None) -> AuditRow:
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
