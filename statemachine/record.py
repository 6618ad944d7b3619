"""The per-partition record, the per-partition command, and what applying one to the other yields."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from schemas.events import LeaderRecoveryState
from schemas.records import AuditRow, Decision
from statemachine.errors import Error, Outcome
from statemachine.states import PartitionState, ReplicaState

NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    """One partition as Kafka's controller context and state machines see it. Immutable: a command
    builds a new record, so a rejected command leaves the old one untouched."""

    topic: str
    partition: int
    state: PartitionState = PartitionState.NON_EXISTENT
    # RS, ordered; during a reassignment RS = (target ++ origin).distinct.
    replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    leader: int = NO_LEADER
    leader_epoch: int = 0
    isr: tuple[int, ...] = ()
    partition_epoch: int = 0
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    replica_states: Mapping[int, ReplicaState] = field(default_factory=dict)
    # A cancel can leave AR and RR empty while the controller still waits for the ISR to catch up.
    reassignment_in_progress: bool = False
    queued_for_deletion: bool = False

    @property
    def has_leader_and_isr(self) -> bool:
        """Kafka's `partitionLeadershipInfo.isDefined`: set by the first election, never emptied."""
        return bool(self.isr)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing_replicas)

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding_replicas)

    def to_row(self) -> dict[str, Any]:
        """The state-store row (schemas.tables.PARTITION_STATE)."""
        return {
            "topic": self.topic, "partition": self.partition, "state": str(self.state),
            "replicas": list(self.replicas), "adding_replicas": list(self.adding_replicas),
            "removing_replicas": list(self.removing_replicas), "leader": self.leader,
            "leader_epoch": self.leader_epoch, "isr": list(self.isr), "partition_epoch": self.partition_epoch,
            "leader_recovery_state": str(self.leader_recovery_state),
            "replica_states": {b: str(s) for b, s in self.replica_states.items()},
            "reassignment_in_progress": self.reassignment_in_progress,
            "queued_for_deletion": self.queued_for_deletion,
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> PartitionRecord:
        return cls(
            topic=row["topic"], partition=int(row["partition"]), state=PartitionState(row["state"]),
            replicas=tuple(int(r) for r in row["replicas"]),
            adding_replicas=tuple(int(r) for r in row["adding_replicas"]),
            removing_replicas=tuple(int(r) for r in row["removing_replicas"]),
            leader=int(row["leader"]), leader_epoch=int(row["leader_epoch"]),
            isr=tuple(int(r) for r in row["isr"]), partition_epoch=int(row["partition_epoch"]),
            leader_recovery_state=LeaderRecoveryState(row["leader_recovery_state"]),
            replica_states={int(b): ReplicaState(s) for b, s in row["replica_states"].items()},
            reassignment_in_progress=bool(row["reassignment_in_progress"]),
            queued_for_deletion=bool(row["queued_for_deletion"]),
        )


class Action(StrEnum):
    """What a command asks of one partition."""

    CREATE = "CREATE"
    ISR_CHANGE = "ISR_CHANGE"
    BROKER_STARTUP = "BROKER_STARTUP"
    BROKER_FAILURE = "BROKER_FAILURE"
    CONTROLLED_SHUTDOWN = "CONTROLLED_SHUTDOWN"
    REASSIGN = "REASSIGN"
    ELECT_PREFERRED = "ELECT_PREFERRED"
    ELECT_UNCLEAN = "ELECT_UNCLEAN"
    TRY_ELECTION = "TRY_ELECTION"
    DELETE = "DELETE"
    CONTROLLER_FAILOVER = "CONTROLLER_FAILOVER"
    # Refused before it reached the partition (stale epochs, duplicates): audited, nothing applied.
    REJECT = "REJECT"
    # No partition: the cluster-level audit row of an event.
    CLUSTER = "CLUSTER"


@dataclass(frozen=True, slots=True)
class Command:
    """One event's work for one partition, with the cluster facts as they stood at the event."""

    action: Action
    event_id: str
    event_type: str
    source_offset: int
    controller_epoch: int
    topic: str | None = None
    partition: int | None = None
    # Orders several commands of one event for the same partition (an implicit failover, a bounce).
    step: int = 0
    event_ts: str | None = None
    principal: str | None = None
    broker_id: int | None = None
    # CREATE: the assignment; REASSIGN: the target (None = cancel).
    replicas: tuple[int, ...] | None = None
    # ISR_CHANGE: the AlterPartition request.
    isr: tuple[int, ...] | None = None
    leader_epoch: int | None = None
    partition_epoch: int | None = None
    leader_recovery_state: LeaderRecoveryState | None = None
    # Registered and not shutting down.
    live_brokers: frozenset[int] = frozenset()
    shutting_down_brokers: frozenset[int] = frozenset()
    unclean_allowed: bool = False
    # REJECT and CLUSTER: the verdict reached before fan-out.
    outcome: Outcome | None = None
    error: Error | None = None
    message: str | None = None
    # Facts of the event the audit keeps: a BrokerChange's kind, the sender's or broker's epoch, the active
    # controller (None when a failover did not name it), the epoch the event carried, an AlterTopicConfig's
    # changes.
    broker_change: str | None = None
    broker_epoch: int | None = None
    controller_id: int | None = None
    event_controller_epoch: int | None = None
    configs: Mapping[str, str | None] | None = None

    @property
    def live_or_shutting_down(self) -> frozenset[int]:
        return self.live_brokers | self.shutting_down_brokers

    def to_row(self) -> dict[str, Any]:
        """The silver row (schemas.tables.COMMAND)."""
        return {
            "topic": self.topic, "partition": self.partition, "source_offset": self.source_offset,
            "step": self.step, "event_id": self.event_id, "event_type": self.event_type,
            "event_ts": self.event_ts, "principal": self.principal, "controller_epoch": self.controller_epoch,
            "action": str(self.action),
            "broker_id": self.broker_id,
            "replicas": None if self.replicas is None else list(self.replicas),
            "isr": None if self.isr is None else list(self.isr),
            "leader_epoch": self.leader_epoch, "partition_epoch": self.partition_epoch,
            "leader_recovery_state": self.leader_recovery_state,
            "live_brokers": sorted(self.live_brokers),
            "shutting_down_brokers": sorted(self.shutting_down_brokers),
            "unclean_allowed": self.unclean_allowed,
            "outcome": None if self.outcome is None else str(self.outcome),
            "error": None if self.error is None else str(self.error),
            "message": self.message,
            "broker_change": self.broker_change, "broker_epoch": self.broker_epoch,
            "controller_id": self.controller_id, "event_controller_epoch": self.event_controller_epoch,
            "configs": None if self.configs is None else dict(self.configs),
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Command:
        def ints(value: Any) -> tuple[int, ...] | None:
            return None if value is None else tuple(int(v) for v in value)

        def opt_int(value: Any) -> int | None:
            return None if value is None else int(value)

        return cls(
            action=Action(row["action"]), event_id=row["event_id"], event_type=row["event_type"],
            source_offset=int(row["source_offset"]), controller_epoch=int(row["controller_epoch"]),
            topic=row["topic"], partition=opt_int(row["partition"]), step=int(row["step"]),
            event_ts=row["event_ts"], principal=row["principal"], broker_id=opt_int(row["broker_id"]),
            replicas=ints(row["replicas"]),
            isr=ints(row["isr"]), leader_epoch=opt_int(row["leader_epoch"]),
            partition_epoch=opt_int(row["partition_epoch"]),
            leader_recovery_state=None if row["leader_recovery_state"] is None
            else LeaderRecoveryState(row["leader_recovery_state"]),
            live_brokers=frozenset(int(b) for b in row["live_brokers"]),
            shutting_down_brokers=frozenset(int(b) for b in row["shutting_down_brokers"]),
            unclean_allowed=bool(row["unclean_allowed"]),
            outcome=None if row["outcome"] is None else Outcome(row["outcome"]),
            error=None if row["error"] is None else Error(row["error"]),
            message=row["message"], broker_change=row["broker_change"], broker_epoch=opt_int(row["broker_epoch"]),
            controller_id=opt_int(row["controller_id"]),
            event_controller_epoch=opt_int(row["event_controller_epoch"]),
            configs=None if row["configs"] is None else dict(row["configs"]),
        )


@dataclass(frozen=True, slots=True)
class Applied:
    """The result of one command: the partition's new record (None once it no longer exists), the
    LeaderAndIsr decisions in order, and the one audit row."""

    record: PartitionRecord | None
    decisions: list[Decision]
    audit: AuditRow
