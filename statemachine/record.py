"""The per-partition record, the per-partition command, and what applying one to the other yields."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from enum import StrEnum

from schemas.events import LeaderRecoveryState
from schemas.records import AuditRow, Decision, evolve, frozen_record
from statemachine.errors import Error, Outcome
from statemachine.features import LATEST_PRODUCTION
from statemachine.requests import Added
from statemachine.states import PartitionState, ReplicaState
from statemachine.zk_releases import LAST_ZOOKEEPER_RELEASE, KafkaRelease

NO_LEADER = -1


@frozen_record
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
    # KRaft with Eligible Leader Replicas on (KIP-966): replicas that left the ISR while it was below min ISR
    # and may still lead (sorted), and the leader it had when the ISR first went empty (one broker).
    eligible_leader_replicas: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    # KRaft (KIP-858): each replica's log directory, in the order of `replicas` (statemachine.directories); empty
    # under the zk rules.
    directories: tuple[str, ...] = ()
    # Below inter.broker.protocol 2.7: the ISR and zkVersion the ZooKeeper-era controller's cache
    # (partitionLeadershipInfo) still holds after the leader wrote its own, until the controller reads ZooKeeper
    # again (the leader's ISR change notification, a write of its own, a failover). The requests it builds from its
    # cache carry them. None: the cache holds the record's.
    cached_isr: tuple[int, ...] | None = None
    cached_partition_epoch: int | None = None

    @property
    def has_leader_and_isr(self) -> bool:
        """Kafka's `partitionLeadershipInfo.isDefined`: set by the first election, never emptied. With ELR on
        the ISR itself may go empty; the last known leader is then set until the next election."""
        return bool(self.isr) or bool(self.last_known_elr)

    @property
    def controller_view(self) -> tuple[tuple[int, ...], int]:
        """The ISR and partition epoch (zkVersion) as the ZooKeeper-era controller's cache holds them."""
        if self.cached_isr is None or self.cached_partition_epoch is None:
            return self.isr, self.partition_epoch
        return self.cached_isr, self.cached_partition_epoch

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing_replicas)

    def evolve(self, **changes: object) -> PartitionRecord:
        """A copy with `changes`, as dataclasses.replace builds it, without its per-call look at the fields and
        the frozen __init__: a command derives a record or two per step, which makes this the core's most
        frequent call. A name that is not a field raises AttributeError."""
        return evolve(self, **changes)

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding_replicas)


class Action(StrEnum):
    """What a command asks of one partition."""

    CREATE = "CREATE"
    ISR_CHANGE = "ISR_CHANGE"
    # Below inter.broker.protocol 2.7: the controller read the leaders' ISR change notifications.
    ISR_CHANGE_NOTIFICATION = "ISR_CHANGE_NOTIFICATION"
    # ZooKeeper mode: an AlterPartition naming several partitions answered, its UpdateMetadata sent: the reassignments
    # its ISR changes let complete complete (processAlterPartition -> maybeCompleteReassignment).
    COMPLETE_REASSIGNMENT = "COMPLETE_REASSIGNMENT"
    BROKER_STARTUP = "BROKER_STARTUP"
    BROKER_FAILURE = "BROKER_FAILURE"
    CONTROLLED_SHUTDOWN = "CONTROLLED_SHUTDOWN"
    REASSIGN = "REASSIGN"
    ELECT_PREFERRED = "ELECT_PREFERRED"
    ELECT_UNCLEAN = "ELECT_UNCLEAN"
    TRY_ELECTION = "TRY_ELECTION"
    DELETE = "DELETE"
    # TopicDeletionManager.resumeDeletions: replicas whose deletion failed are retried.
    RETRY_DELETION = "RETRY_DELETION"
    # TopicDeletionManager.onTopicDeletion of a topic eligible again: every replica not deleted yet is deleted.
    RESUME_DELETION = "RESUME_DELETION"
    # A broker's StopReplica (delete) answer, when the controller takes the answers one by one (a broker with a failed
    # log dir answers KAFKA_STORAGE_ERROR): failReplicaDeletion, completeReplicaDeletion.
    REPLICA_DELETION_FAILED = "REPLICA_DELETION_FAILED"
    REPLICA_DELETED = "REPLICA_DELETED"
    # TopicDeletionManager.completeDeleteTopic: every replica of the topic deleted, its partitions cease to exist.
    COMPLETE_DELETION = "COMPLETE_DELETION"
    CONTROLLER_FAILOVER = "CONTROLLER_FAILOVER"
    # KRaft with ELR: a broker back after an unclean shutdown leaves ISR and ELR; min ISR changed: ELR cleared.
    UNCLEAN_REGISTRATION = "UNCLEAN_REGISTRATION"
    CLEAR_ELR = "CLEAR_ELR"
    # ZooKeeper mode: a log dir failed under the broker; the controller asks it about its replica (a LeaderAndIsr).
    LOG_DIR_FAILURE = "LOG_DIR_FAILURE"
    # KRaft (KIP-858): a broker's AssignReplicasToDirs put its replica in one of its log dirs.
    ASSIGN_REPLICAS_TO_DIRS = "ASSIGN_REPLICAS_TO_DIRS"
    # A partition seeded from a metadata snapshot, as the snapshot holds it.
    RESTORE = "RESTORE"
    # Refused before it reached the partition (stale epochs, duplicates): audited, nothing applied.
    REJECT = "REJECT"
    # No partition: the cluster-level audit row of an event.
    CLUSTER = "CLUSTER"


@frozen_record
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
    # BROKER_STARTUP: the brokers started together (onBrokerStartup's newBrokers) when the controller read several
    # registrations at once; empty: `broker_id` alone.
    new_brokers: tuple[int, ...] = ()
    # BROKER_FAILURE: the broker's replica is one of those going offline (onReplicasBecomeOffline's newly offline
    # replicas); false: a partition whose replica there was known offline already only tries its election
    # (triggerOnlinePartitionStateChange).
    replica_goes_offline: bool = True
    # CREATE: the assignment; REASSIGN: the target (None = cancel).
    replicas: tuple[int, ...] | None = None
    # REASSIGN: asked through /admin/reassign_partitions (no check that the new replicas are live).
    through_znode: bool = False
    # DELETE: the replicas' StopReplica answers came back to the controller (false: it stopped first).
    stop_replica_answered: bool = True
    # CONTROLLER_FAILOVER: the failover's read of /admin/delete_topics queued the topic (asked while no controller was
    # active, so none had read it).
    queued_for_deletion: bool = False
    # CONTROLLER_FAILOVER: /brokers/topics lost the reassignment in progress (`replicas`: what it holds instead),
    # /admin/reassign_partitions still names it: the new controller starts it over.
    reassignment_restarted: bool = False
    # ISR_CHANGE: the reassignment it lets complete is completed by an event queued before it (a startup).
    reassignment_completed_by_queued_event: bool = False
    # ISR_CHANGE: the controller died inside the completion it lets start, after the leader moved (B3).
    controller_died_after_leader_move: bool = False
    # ISR_CHANGE: the controller died right after writing it, before the completion it lets start wrote anything.
    controller_died_before_completion: bool = False
    # ISR_CHANGE: the controller lost its session inside the completion it lets start: the completed assignment's
    # write (B5) landed but threw, so nothing after it was sent.
    controller_died_after_assignment: bool = False
    # ISR_CHANGE: handled by a controller that had lost its session: its write threw, nothing written.
    write_failed: bool = False
    # ISR_CHANGE: the AlterPartition names other partitions too, and the reassignment it lets complete is completed
    # once the whole request is written and its UpdateMetadata sent (COMPLETE_REASSIGNMENT, its last partition's).
    reassignment_completed_after_the_request: bool = False
    # ISR_CHANGE: the AlterPartition request. RESTORE: the snapshot's ISR, leader and reassignment too.
    isr: tuple[int, ...] | None = None
    leader: int | None = None
    adding_replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    leader_epoch: int | None = None
    partition_epoch: int | None = None
    leader_recovery_state: LeaderRecoveryState | None = None
    # RESTORE: the snapshot's Eligible Leader Replicas and last known ELR (KIP-966), and replicas' directories.
    eligible_leader_replicas: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None
    directories: tuple[str, ...] | None = None
    # ASSIGN_REPLICAS_TO_DIRS: the log dir `broker_id` puts its replica in. Commands that may add replicas (CREATE,
    # REASSIGN) under the kraft rules: where each registered broker puts a new one (directories.default_directory).
    directory: str | None = None
    default_directories: Mapping[int, str] | None = None
    # Registered and not shutting down.
    live_brokers: frozenset[int] = frozenset()
    shutting_down_brokers: frozenset[int] = frozenset()
    # Registered brokers whose replica of the partition is in a failed log dir: left out of the two above (they
    # cannot lead it), yet still sent the ZooKeeper-era controller's requests.
    offline_replicas: frozenset[int] = frozenset()
    # Those of `offline_replicas` shutting down: the rest are among the controller's liveBrokerIds.
    offline_replicas_shutting_down: frozenset[int] = frozenset()
    unclean_allowed: bool = False
    # KRaft: the topic's effective min.insync.replicas (at most its replication factor), whether Eligible Leader
    # Replicas are on (the feature eligible.leader.replicas.version on a metadata version that supports it) and the
    # cluster's metadata.version feature level, as they stood at the event.
    min_isr: int = 1
    elr_enabled: bool = False
    metadata_version: int = LATEST_PRODUCTION
    # The ZooKeeper-era controller's release (statemachine.zk_releases), whatever its protocol.
    kafka_release: KafkaRelease = LAST_ZOOKEEPER_RELEASE
    # KRaft: the controller's release, as the newest metadata.version level it supports (statemachine.kraft_releases).
    controller_level: int = LATEST_PRODUCTION
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

    @property
    def live_broker_ids(self) -> frozenset[int]:
        """The ZooKeeper-era controller's liveBrokerIds: registered and not shutting down, whatever the log dir of
        their replica of the partition (what validateReplicas checks a reassignment's new replicas against)."""
        return self.live_brokers | (self.offline_replicas - self.offline_replicas_shutting_down)

    @property
    def registered_brokers(self) -> frozenset[int]:
        """The brokers the controller's requests reach (liveOrShuttingDownBrokerIds)."""
        return self.live_brokers | self.shutting_down_brokers | self.offline_replicas


@frozen_record
class Applied:
    """The result of one command: the partition's new record (None once it no longer exists), the
    LeaderAndIsr decisions in order, the one audit row, and what the ZK controller adds to its request batches
    for it (statemachine.requests)."""

    record: PartitionRecord | None
    decisions: list[Decision]
    audit: AuditRow
    sent: tuple[Added, ...] = ()
