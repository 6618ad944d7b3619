"""The controller event log's records (docs/contract.md, section 1): parsing and validation.

`parse_event` never raises on bad input: it returns either a `ControllerEvent` or a `Malformed` with a
reason, which the caller quarantines with the record's offset. Only the shape is checked here; whether
Kafka's controller would accept the event is the state machine's business. `parse_record` reads the events
topic as `isrflow bridge` writes it: an event, or an `ObservedDecision` (the real controller's own partition
change, which is no event: the state machine never sees it).
"""

from __future__ import annotations

import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from schemas.event_fields import EVENT_FIELDS, OBSERVED_FIELDS, OPTIONAL_FIELDS
from schemas.fields import (
    Invalid,
    non_negative_int,
    required,
    short,
    string,
    string_list,
)
from schemas.records import ObservedDecision
from schemas.values import (
    BrokerChangeKind,
    DirectoryAssignment,
    ElectionType,
    LeaderRecoveryState,
    Move,
    PartitionRef,
    ReplicaAssignment,
)

# -- the events: one class per type, each with the envelope ---------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """The envelope every event carries."""

    type: ClassVar[str]
    event_id: str
    controller_epoch: int
    ts: str | None = None
    principal: str | None = None

    def to_json(self) -> str:
        """The canonical JSON the bronze table keeps: sorted keys, no spaces, every field of the type."""
        body = {"type": self.type, "event_id": self.event_id, "ts": self.ts, "controller_epoch": self.controller_epoch}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name not in _ENVELOPE and not (f.name in _ADDITIONS and value == f.default):
                body[f.name] = _plain(value)
        if self.principal is not None:
            body["principal"] = self.principal
        return json.dumps(body, sort_keys=True, separators=(",", ":"))


_ENVELOPE = frozenset({"event_id", "controller_epoch", "ts", "principal"})
# Optional fields added after contract v1: written only when they are not their default, so the canonical
# JSON of every v1 event stays as it was.
_ADDITIONS = frozenset({"unclean_shutdown", "request_partitions", "new_brokers", "directories", "through_znode",
                        "topics", "reassignments", "stop_replica_answered", "stop_replica_answers", "offline_replicas",
                        "kafka_version", "max_metadata_version", "reassignment_completed_by_queued_event",
                        "controller_died_after_leader_move", "controller_died_before_completion", "read_at_failover",
                        "reads_reassignment_znode", "write_failed", "znode_reassignments", "answer_order",
                        "stop_replica_answer_order", "storage_error_answer_queued", "storage_error_answers",
                        "controller_died_after_assignment", "topics_to_delete", "deletion_answers_queued",
                        "deletion_answers"})


def _plain(value: Any) -> Any:
    if isinstance(value, PartitionRef | Move | DirectoryAssignment | ReplicaAssignment):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerChange(Event):
    type: ClassVar[str] = "BrokerChange"
    broker_id: int
    change: BrokerChangeKind
    broker_epoch: int
    # STARTUP only, an addition for KRaft: the broker's previous incarnation ended without a controlled shutdown,
    # so it registered "unclean" and the controller took it out of every ISR and ELR first
    # (ReplicationControlManager.handleBrokerUncleanShutdown). Matters only with Eligible Leader Replicas on.
    unclean_shutdown: bool = False
    # STARTUP only, an addition for ZooKeeper: the brokers the controller found newly registered in the one read of
    # /brokers/ids that took this one (this one among them), broker id -> broker epoch, when it took several; each of
    # their STARTUP events names them all. The ZooKeeper-era controller starts them with one onBrokerStartup
    # (KafkaController.processBrokerChange): the first of these events handled starts them all, the others find
    # their broker started. None: this broker alone.
    new_brokers: Mapping[int, int] | None = None
    # STARTUP only, an addition for ZooKeeper: the replicas the broker answered KAFKA_STORAGE_ERROR for to the
    # startup's LeaderAndIsr that the controller did not know were in a failed log dir (a dir that failed while the
    # broker was down announces itself by no notification); they go offline after the startup.
    offline_replicas: tuple[PartitionRef, ...] = ()
    # STARTUP only, an addition for ZooKeeper: the brokers in the order their answers to the StopReplica requests of
    # the deletion the startup resumed came back (controller.log), when several answered; each answer ends in
    # resumeDeletions, which retries a topic's failed replicas once its last answer is in. Empty: by broker id.
    stop_replica_answer_order: tuple[int, ...] = ()
    # STARTUP only, an addition for ZooKeeper: the broker's KAFKA_STORAGE_ERROR answer to the startup's LeaderAndIsr
    # (a dir known failed before) came while the controller handled a later event, and was handled after it: its own
    # LeaderAndIsrResponseReceived after that event, the startup takes none of the broker's replicas offline.
    storage_error_answer_queued: bool = False
    # STARTUP only, ZooKeeper: its resumed deletion's StopReplica answers are a later IsrChange's `deletion_answers`
    deletion_answers_queued: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class IsrChange(Event):
    """An AlterPartition request from the partition's leader."""

    type: ClassVar[str] = "IsrChange"
    topic: str
    partition: int
    broker_id: int
    broker_epoch: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    # Addition: the partitions of the AlterPartition request this change came in, when it named more than one
    # (this one among them), in the order of their IsrChange events, which follow one another. The ZooKeeper-era
    # controller answers the request with one UpdateMetadata naming them all, after the last one's change
    # (KafkaController.processAlterPartition). Empty: the request named this partition alone.
    request_partitions: tuple[PartitionRef, ...] = ()
    # Addition: below protocol 2.7, an ISR a leader wrote that lets a reassignment complete, which a broker's startup
    # queued before it completes instead, reading it (onBrokerStartup -> isReassignmentComplete). The startup is next.
    reassignment_completed_by_queued_event: bool = False
    # Addition (ZooKeeper): the controller died (kill -9) inside the reassignment completion this change let it start,
    # after it moved the leader (onPartitionReassignment B3) and before it took the removed replicas out of the ISR
    # (B4): its handling ends there, and /brokers/topics/T keeps the reassignment for the next controller's failover.
    controller_died_after_leader_move: bool = False
    # Addition (ZooKeeper): the controller died (paused or killed) right after writing this change, before the
    # reassignment completion it lets start wrote anything (processAlterIsr -> maybeCompleteReassignment read the state
    # after its session had expired): /brokers/topics/T keeps the reassignment for the next controller's failover.
    controller_died_before_completion: bool = False
    # Addition (ZooKeeper): the controller lost its session inside the reassignment completion this change let it
    # start: its write of the completed assignment (onPartitionReassignment B5) landed but threw (SessionExpired), so
    # the completion ends there, without its UpdateMetadata; ZooKeeper holds the completed assignment.
    controller_died_after_assignment: bool = False
    # Addition (ZooKeeper): a controller that had lost its session handled this request: its write of the new ISR
    # threw (the leader's answer: UNKNOWN_SERVER_ERROR), nothing was written, and it still sent the request's
    # UpdateMetadata to the brokers it knew (KafkaController.processAlterIsr). The event comes before the next
    # controller's, at the deposed controller's epoch.
    write_failed: bool = False
    # Addition (ZooKeeper): brokers whose StopReplica answers to a startup's resumed deletion came after this change
    deletion_answers: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class IsrChangeNotification(Event):
    """Below inter.broker.protocol 2.7, where a leader writes its own ISR to ZooKeeper and announces it under
    /isr_change_notification: the controller read those notifications, naming `partitions`
    (processIsrChangeNotification). It takes their leader and ISR from ZooKeeper into its cache and sends one
    UpdateMetadata naming them all. isrflow's addition to the contract, written by `import-zk`; it decides
    nothing."""

    type: ClassVar[str] = "IsrChangeNotification"
    partitions: tuple[PartitionRef, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopic(Event):
    type: ClassVar[str] = "CreateTopic"
    topic: str
    assignment: Mapping[str, tuple[int, ...]]  # partition id -> replicas, as the admin tool wrote them
    configs: Mapping[str, str] = field(default_factory=dict)
    # ZooKeeper mode (addition): every topic one read of /brokers/topics found new when it found several (this one
    # among them), in the order of their events, on each of their CreateTopic events: the controller creates them in
    # one onNewPartitionCreation, one batch of requests, sent at the last of those events (the others send none).
    # Empty: `topic` alone.
    topics: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatePartitions(Event):
    type: ClassVar[str] = "CreatePartitions"
    topic: str
    assignment: Mapping[str, tuple[int, ...]]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopic(Event):
    type: ClassVar[str] = "DeleteTopic"
    topic: str
    # Every topic one read of /admin/delete_topics found new when it found several (this one among them), on each
    # of their DeleteTopic events: the controller queues them with one onTopicDeletion, at the first of those
    # events; the others find their topic queued. Empty: `topic` alone.
    topics: tuple[str, ...] = ()
    # Whether the controller handled its replicas' StopReplica answers (TopicDeletionStopReplicaResponseReceived:
    # the replicas deleted, the deletion resumed or completed) before it stopped (addition; false: its session ended
    # with the topic still there though every replica was live, so the answers never came back to it).
    stop_replica_answered: bool = True
    # The topics an earlier read of /admin/delete_topics queued whose StopReplica answers the controller handled right
    # after this read's onTopicDeletion (addition; their events say `stop_replica_answered` false): their replicas
    # deleted, then resumeDeletions, which retries the failed replicas of every topic being deleted, this read's too.
    stop_replica_answers: tuple[str, ...] = ()
    # Addition (ZooKeeper): brokers that answered this read's StopReplica (delete) with KAFKA_STORAGE_ERROR, as broker
    # id -> partitions: a log dir that failed as they deleted the replica, announced by its notification only after.
    # Their deletion fails (ReplicaDeletionIneligible) and resumeDeletions retries it once the other answers are in.
    # With `stop_replica_answered` false, only these answers are handled here (the others come after the broker's
    # log dir notification: `LogDirEventNotification.deletion_answers`).
    storage_error_answers: Mapping[int, tuple[PartitionRef, ...]] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReassignPartitions(Event):
    type: ClassVar[str] = "ReassignPartitions"
    partitions: tuple[Move, ...]
    # Asked through ZooKeeper's /admin/reassign_partitions (ZkPartitionReassignment), not the Admin API: the
    # controller does not check that the target's new replicas are on live brokers.
    through_znode: bool = False
    # ZooKeeper mode (addition): read by a new controller's failover (initializePartitionReassignments), a step of
    # that ControllerChange (`reads_reassignment_znode`): the answers to the failover's requests come after it.
    read_at_failover: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeaders(Event):
    type: ClassVar[str] = "ElectLeaders"
    election_type: ElectionType
    partitions: tuple[PartitionRef, ...] | None = None  # None: every partition


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterTopicConfig(Event):
    type: ClassVar[str] = "AlterTopicConfig"
    topic: str
    configs: Mapping[str, str | None]  # None: back to the cluster default


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerChange(Event):
    type: ClassVar[str] = "ControllerChange"
    controller_id: int
    # The brokers registered when the new controller read the cluster, broker id -> broker epoch (addition; None:
    # not known). ZooKeeper-era onControllerFailover reads /brokers/ids: a broker that died or registered while no
    # controller was active (the old one died with it, say) is gone, or registered, from the failover on.
    live_brokers: Mapping[int, int] | None = None
    # ZooKeeper mode (addition): the replicas brokers answered KAFKA_STORAGE_ERROR for to the failover's LeaderAndIsr
    # requests, as broker id -> partitions: a log dir failed under them while no controller read its notification.
    offline_replicas: Mapping[int, tuple[PartitionRef, ...]] | None = None
    # The reassignments in progress the new controller read from /brokers/topics (addition; initializeControllerContext,
    # then resumed by initializePartitionReassignments): a controller that died inside an event may have left one
    # that its own writes had nearly completed (the assignment is written last).
    reassignments: tuple[ReplicaAssignment, ...] = ()
    # ZooKeeper mode (addition): the failover read a reassignment asked through /admin/reassign_partitions, the next
    # ReassignPartitions (`read_at_failover`): the brokers' answers to its requests are handled after that one.
    reads_reassignment_znode: bool = False
    # ZooKeeper mode (addition): those of `reassignments` that /admin/reassign_partitions still named: the failover
    # resumes them first, in the order of its read of the znode (processZkPartitionReassignment), then the others.
    znode_reassignments: tuple[PartitionRef, ...] = ()
    # ZooKeeper mode (addition): the assignments the new controller read in /brokers/topics (no replica being added or
    # removed) of partitions /admin/reassign_partitions names elsewhere: an admin write of the topic's assignment (a
    # CreatePartitions read before the old controller's write) put the original replicas back. The new controller
    # knows those replicas alone and starts the znode's reassignment over, with `znode_reassignments`.
    restarted_reassignments: tuple[ReplicaAssignment, ...] = ()
    # ZooKeeper mode (addition): the brokers in the order the new controller handled their KAFKA_STORAGE_ERROR answers
    # to its failover's LeaderAndIsr requests, each an event of its own queued as it came (its `Mark replicas`
    # lines); brokers not named after those named, by id. Empty: by id.
    answer_order: tuple[int, ...] = ()
    # ZooKeeper mode (addition): the topics /admin/delete_topics named that no controller had read (asked while none
    # was active): the failover queues them (TopicDeletionManager.init), ineligible while a replica is on a dead broker.
    topics_to_delete: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderImbalanceCheck(Event):
    type: ClassVar[str] = "LeaderImbalanceCheck"


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionSnapshot(Event):
    """A partition as a KRaft metadata snapshot holds it (a PartitionRecord with its epochs, and its topic's
    configs): the starting state of a log that begins at a snapshot. isrflow's addition to the contract,
    written by `import-kraft`; it seeds a partition isrflow does not know yet and decides nothing."""

    type: ClassVar[str] = "PartitionSnapshot"
    topic: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int  # -1: no leader
    leader_epoch: int
    partition_epoch: int
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    configs: Mapping[str, str] = field(default_factory=dict)
    # KIP-966, on a cluster with eligible leader replicas: the ELR and last known leader.
    eligible_leader_replicas: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    # KIP-858: each replica's log directory, in the order of `replicas`.
    directories: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateFeatures(Event):
    """Finalized feature levels from this point of the log on, as Kafka's UpdateFeatures API sets them (a KRaft
    FeatureLevelRecord each): feature name -> level, 0 = off. "metadata.version" is one; the kraft rules follow it
    and "eligible.leader.replicas.version". isrflow's addition to the contract, written by `import-kraft`."""

    type: ClassVar[str] = "UpdateFeatures"
    features: Mapping[str, int]
    # ZooKeeper mode: the Kafka release the controllers run ("2.8.2"), as `import-zk` and the bridge read it from the
    # cluster's writes (addition); the zk rules follow it unless run with --kafka-version.
    kafka_version: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _BrokerLogDirs(Event):
    """KRaft (KIP-858): a broker, at its epoch, and log dirs of it (their ids, as Kafka prints Uuids)."""

    broker_id: int
    broker_epoch: int
    log_dirs: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistration(_BrokerLogDirs):
    """A broker registered (a RegisterBrokerRecord) with these log dirs, in force until it registers again. Decides
    nothing: where new replicas on it go (statemachine.directories). `max_metadata_version`: the newest
    metadata.version its Kafka supports (its release), which the kraft rules follow while no controller has
    registered (statemachine.kraft_releases). Addition, written by `import-kraft`."""

    type: ClassVar[str] = "BrokerRegistration"
    max_metadata_version: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AssignReplicasToDirs(Event):
    """KRaft (KIP-858): a broker's AssignReplicasToDirs request, the log dir of each of its replicas it names (also
    the directory migration after an upgrade past metadata.version 3.7-IV2). Addition, written by `import-kraft`."""

    type: ClassVar[str] = "AssignReplicasToDirs"
    broker_id: int
    broker_epoch: int
    assignments: tuple[DirectoryAssignment, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerRegistration(Event):
    """KRaft: a controller registered (RegisterControllerRecord), supporting metadata.version up to this level: its
    Kafka release, which the kraft rules follow where a release decides differently (statemachine.kraft_releases).
    Addition, written by `import-kraft`."""

    type: ClassVar[str] = "ControllerRegistration"
    controller_id: int
    max_metadata_version: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LogDirsOffline(_BrokerLogDirs):
    """A broker's heartbeat named these log dirs of its registration offline (a disk failed): the controller takes
    its replicas in them offline, as for a failed broker but only for those partitions
    (ReplicationControlManager.handleDirectoriesOffline). Addition, written by `import-kraft`."""

    type: ClassVar[str] = "LogDirsOffline"


@dataclass(frozen=True, slots=True, kw_only=True)
class LogDirEventNotification(Event):
    """ZooKeeper mode: a log dir failed under broker `broker_id`, which wrote
    /log_dir_event_notification/log_dir_event_<seq>. The controller sends it a LeaderAndIsr of every replica it
    holds (onBrokerLogDirFailure); the broker answers KAFKA_STORAGE_ERROR for `offline_replicas`, the partitions of
    the failed dir, and those replicas go offline (processLeaderAndIsrResponseReceived, onReplicasBecomeOffline):
    leaders move away, ISRs shrink, only for those partitions. From then on they cannot lead. Addition, written by
    `import-zk` (the answer, which ZooKeeper does not log, from the controller's state-change.log, else inferred
    from the controller's writes that follow)."""

    type: ClassVar[str] = "LogDirEventNotification"
    broker_id: int
    offline_replicas: tuple[PartitionRef, ...] = ()
    # Addition: the topics being deleted whose other StopReplica (delete) answers the controller handled after this
    # notification, once this broker's KAFKA_STORAGE_ERROR answer for one of their replicas had failed it (their
    # DeleteTopic events say `stop_replica_answered` false): each answer ends in resumeDeletions, which finds the
    # failed replica OnlineReplica again (this notification's LeaderAndIsr) and retries nothing (seed 1412).
    deletion_answers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrResponseReceived(Event):
    """ZooKeeper mode: broker `broker_id` answered one of the controller's LeaderAndIsr requests KAFKA_STORAGE_ERROR
    for `offline_replicas` (in a failed log dir), an event of its own queued behind those before it
    (KafkaController's LeaderAndIsrResponseReceived). Those the controller did not know offline go offline
    (onReplicasBecomeOffline). Addition, written by `import-zk` from the controller's `Mark replicas` lines."""

    type: ClassVar[str] = "LeaderAndIsrResponseReceived"
    broker_id: int
    offline_replicas: tuple[PartitionRef, ...]


ControllerEvent = (BrokerChange | IsrChange | CreateTopic | CreatePartitions | DeleteTopic | ReassignPartitions
                   | ElectLeaders | AlterTopicConfig | ControllerChange | LeaderImbalanceCheck | PartitionSnapshot
                   | UpdateFeatures | IsrChangeNotification | BrokerRegistration | AssignReplicasToDirs
                   | LogDirsOffline | ControllerRegistration | LogDirEventNotification | LeaderAndIsrResponseReceived)
_CLASSES: dict[str, type[Event]] = {cls.type: cls for cls in typing.get_args(ControllerEvent)}
# What an admin client issues (Kafka's super.users guard them).
ADMIN_EVENTS = (CreateTopic, CreatePartitions, DeleteTopic, ReassignPartitions, ElectLeaders, AlterTopicConfig,
                UpdateFeatures)


@dataclass(frozen=True)
class Malformed:
    reason: str


EVENT_TYPES = tuple(EVENT_FIELDS)

# Kafka's default max.message.bytes is 1 MiB; the largest real event (a CreateTopic of thousands of
# partitions) is far below this, and a record this big would otherwise be parsed on the driver.
MAX_RECORD_BYTES = 4 * 1024 * 1024


def _no_constant(name: str) -> Any:
    raise Invalid(f"not JSON: {name} is not a number in JSON")


# NaN and Infinity: Python's json reads them, JSON has no such numbers. One decoder for every record
# (json.loads with an option builds one per call).
_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def parse_event(raw: bytes | str | None) -> ControllerEvent | Malformed:
    """Read one record of the event log. Bad input comes back as `Malformed(reason)`, never raised; so does an
    ObservedDecision, which is no event (read the bridge's topic with `parse_record`)."""
    record = parse_record(raw)
    if isinstance(record, ObservedDecision):
        return Malformed("an ObservedDecision is the controller's decision, not an event")
    return record


def parse_record(raw: bytes | str | None) -> ControllerEvent | ObservedDecision | Malformed:
    """Read one record of the events topic: an event or an ObservedDecision. Bad input comes back as
    `Malformed(reason)`, never raised."""
    if raw is None:
        return Malformed("empty record (null value)")
    if len(raw) > MAX_RECORD_BYTES:
        return Malformed(f"record of {len(raw)} bytes is larger than {MAX_RECORD_BYTES}")
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes | bytearray) else raw
        if text.startswith("\ufeff"):  # json.loads refuses a byte order mark; the decoder alone does not
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        obj = _DECODER.decode(text)
    except Invalid as exc:
        return Malformed(str(exc))
    except (UnicodeDecodeError, ValueError) as exc:  # ValueError: JSONDecodeError, ints beyond 4300 digits
        return Malformed(f"not JSON: {short(exc)}")
    except RecursionError:
        return Malformed("not JSON: nested too deeply")
    if not isinstance(obj, dict):
        return Malformed(f"not a JSON object: {type(obj).__name__}")
    try:
        if obj.get("type") == ObservedDecision.type:
            return ObservedDecision(**{name: validate(required(obj, name), name)
                                       for name, validate in OBSERVED_FIELDS.items()},
                                    directories=string_list(obj.get("directories", []), "directories"))
        return _validate(obj)
    except Invalid as exc:
        return Malformed(str(exc))


def _validate(obj: Mapping[str, Any]) -> ControllerEvent:
    event_type = string(required(obj, "type"), "type")
    if event_type not in EVENT_FIELDS:
        raise Invalid(f"unknown event type '{short(event_type)}' (known: {', '.join(EVENT_TYPES)})")
    event_id = string(required(obj, "event_id"), "event_id")
    if not event_id:
        raise Invalid("field 'event_id' must not be empty")
    ts = string(required(obj, "ts"), "ts")
    controller_epoch = non_negative_int(required(obj, "controller_epoch"), "controller_epoch")
    principal = obj.get("principal")
    if principal is not None:
        string(principal, "principal")
    fields: dict[str, Any] = {}
    for name, validate in EVENT_FIELDS[event_type].items():
        fields[name] = validate(required(obj, name), name)
    for name, (validate, default) in OPTIONAL_FIELDS.get(event_type, {}).items():
        fields[name] = validate(obj[name], name) if name in obj else default
    return _CLASSES[event_type](event_id=event_id, controller_epoch=controller_epoch, ts=ts, principal=principal,
                                **fields)
