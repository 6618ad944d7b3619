"""The cluster side of the controller: the cluster view and the fan-out of each event into per-partition
commands, in log order.

`Controller.handle(event, offset)` checks what only the cluster can check (duplicates, controller and
broker epochs, authorization, topic existence), updates the cluster view, and expands the event into one
`Command` per partition it touches, each carrying the cluster facts as they stand at that point. It
also applies every command to its own copy of the partition records, because some of Kafka's decisions
need all partitions at once, at the event's exact position in the log: which partitions a broker hosts
right now (reassignments move them), the leader imbalance ratio per broker, when a topic deletion is
complete. The Spark sequencer keeps those commands; the local engine keeps the applied results. Both run
`apply_command`, so they cannot disagree.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, NamedTuple

from schemas import codec
from schemas.events import (
    ADMIN_EVENTS,
    AlterTopicConfig,
    AssignReplicasToDirs,
    BrokerChange,
    BrokerRegistration,
    ControllerChange,
    ControllerEvent,
    ControllerRegistration,
    CreatePartitions,
    CreateTopic,
    DeleteTopic,
    ElectLeaders,
    IsrChange,
    IsrChangeNotification,
    LeaderAndIsrResponseReceived,
    LeaderImbalanceCheck,
    LogDirEventNotification,
    LogDirsOffline,
    PartitionSnapshot,
    ReassignPartitions,
    UpdateFeatures,
)
from schemas.records import frozen_record
from statemachine.admin_checks import MIN_ISR_CONFIG, UNCLEAN_CONFIG
from statemachine.broker_events import BrokerEvents
from statemachine.checkpoint import SNAPSHOT_FORMAT, SNAPSHOT_VERSION, SnapshotError, read_snapshot
from statemachine.controller_epoch import ControllerEpoch
from statemachine.errors import Error, Outcome, Rejection
from statemachine.feature_events import FeatureEvents
from statemachine.features import LATEST_PRODUCTION
from statemachine.kraft_releases import DEFAULT_CONTROLLER_LEVEL, controller_level, on_controller_registration
from statemachine.log_dirs import (
    offline_replicas,
    on_assign_replicas_to_dirs,
    on_broker_registration,
    on_leader_and_isr_response,
    on_log_dir_event_notification,
    on_log_dirs_offline,
)
from statemachine.partition import apply_command
from statemachine.record import Action, Applied, Command, PartitionRecord
from statemachine.requests import Added, Phase, Request, RequestType, batches
from statemachine.rules import ZK, Rules
from statemachine.step import leader_and_isr_state, metadata_state
from statemachine.topic_deletion import replicas_not_deleted
from statemachine.topic_events import TopicEvents
from statemachine.zk_releases import LAST_ZOOKEEPER_RELEASE, KafkaRelease

Key = tuple[str, int]
# The release a log names (UpdateFeatures.kafka_version), parsed once per text: every partition command reads it.
_release_named = cache(KafkaRelease.parse)


@dataclass(frozen=True)
class ControllerConfig:
    """Cluster-wide defaults, with Kafka's names and defaults."""

    unclean_leader_election_enable: bool = False
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_per_broker_percentage: int = 10
    # Kafka's super.users: when set, admin commands from any other principal are refused.
    super_users: frozenset[str] | None = None
    # Which controller's rules: ZK (the design's, default) or KRAFT (Kafka 4.1), see statemachine.rules.
    rules: Rules = ZK
    # KRaft: the feature eligible.leader.replicas.version >= 1 (KIP-966; only rule sets with ELR use it), the
    # metadata.version feature level, both in force until the log's UpdateFeatures say otherwise, and the cluster
    # default of min.insync.replicas, which only the ELR reads.
    eligible_leader_replicas: bool = False
    metadata_version: int = LATEST_PRODUCTION
    # The controllers' release (the newest metadata.version level it supports) until the log registers one:
    # Kafka 4.1's (statemachine.kraft_releases).
    controller_level: int = DEFAULT_CONTROLLER_LEVEL
    min_insync_replicas: int = 1
    # The ZooKeeper-era controller's release (statemachine.zk_releases); None: not told, Kafka 3.9.1.
    kafka_version: KafkaRelease | None = None
    # An event_id applied at offset o makes any event with the same id at an offset up to o + this
    # window a duplicate (rejected). Older ids are forgotten, so the controller's memory stays bounded.
    duplicate_window: int = 100_000
    # A what-if replay of a real history under another controller's rules (a ZooKeeper cluster's under the kraft
    # rules): a leader's ISR change was sent against the epochs the real controller had given it, which these rules
    # number differently, so the current leader's request is taken at this partition's epochs.
    isr_changes_at_current_epochs: bool = False

    @property
    def release(self) -> KafkaRelease:
        return self.kafka_version or LAST_ZOOKEEPER_RELEASE


@dataclass
class ClusterView:
    controller_epoch: int = -1
    controller_id: int = -1
    # Registered brokers (live or shutting down) and their broker epochs.
    broker_epochs: dict[int, int] = field(default_factory=dict)
    # The newest epoch each broker id ever registered with: a restart must beat it.
    last_broker_epochs: dict[int, int] = field(default_factory=dict)
    shutting_down: set[int] = field(default_factory=set)
    topics: dict[str, int] = field(default_factory=dict)  # topic -> partition count
    topic_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    topics_queued_for_deletion: set[str] = field(default_factory=set)
    # event_id -> the offset it was applied at, in log order; only ids within the duplicate window count.
    seen_event_ids: dict[str, int] = field(default_factory=dict)
    # Finalized feature levels the log set (UpdateFeatures), metadata.version included; a feature it never set
    # has the configured level (ControllerConfig). Level 0: the feature is off.
    features: dict[str, int] = field(default_factory=dict)
    # KRaft (KIP-858): each registered broker's log dirs and the epoch it registered them with (BrokerRegistration).
    log_dirs: dict[int, tuple[str, ...]] = field(default_factory=dict)
    registered_epochs: dict[int, int] = field(default_factory=dict)
    # ZooKeeper mode: per broker, the replicas it answered KAFKA_STORAGE_ERROR for (replicasOnOfflineDirs): a log
    # dir failed under them, they cannot lead (statemachine.log_dirs); a broker whose failed dir held none of its
    # replicas has an empty set: it has an offline dir all the same.
    replicas_on_offline_dirs: dict[int, frozenset[tuple[str, int]]] = field(default_factory=dict)
    # ZooKeeper mode: per broker, its replicas of topics being deleted whose logs it deleted (their StopReplica
    # answered): whatever a later controller thinks of them, the broker holds no log of them any more.
    deleted_logs: dict[int, frozenset[tuple[str, int]]] = field(default_factory=dict)
    # ZooKeeper mode: a failover's replicas in failed dirs still to be answered for (`log_dirs.answered_again`) and
    # those its event names, while a reassignment the failover read is handled first (`reads_reassignment_znode`).
    failover_answers: dict[int, frozenset[tuple[str, int]]] = field(default_factory=dict)
    # ZooKeeper mode: the release the controllers run, as the log named it (UpdateFeatures.kafka_version).
    kafka_version: str | None = None
    # KRaft: each registered controller's newest metadata.version level, its release (statemachine.kraft_releases);
    # each registered broker's, the release while no controller registered (below metadata.version 3.7-IV0).
    controller_levels: dict[int, int] = field(default_factory=dict)
    broker_levels: dict[int, int] = field(default_factory=dict)

    @property
    def live_brokers(self) -> frozenset[int]:
        return frozenset(self.broker_epochs.keys() - self.shutting_down)


class _EventFacts(NamedTuple):
    """The cluster facts an event's commands carry, read once per event and again after the event changes one
    (`_Fanout.facts_changed`): the brokers, and the features and releases the rules read."""

    live: frozenset[int]
    shutting_down: frozenset[int]
    registered: frozenset[int]  # live or shutting down: every registered broker
    controller_level: int
    elr_enabled: bool
    metadata_version: int
    kafka_release: KafkaRelease
    unclean_by_config: bool  # whether the controller's release reads unclean.leader.election.enable


@frozen_record
class Handled:
    command: Command
    applied: Applied


@frozen_record
class HandledEvent:
    """An event's commands with their results, and the requests the ZK controller sends for it (none under other
    rules)."""

    handled: list[Handled]
    requests: list[Request]


class _Fanout:
    """Collects one event's commands, applying each to the controller's partition records at once."""

    def __init__(self, controller: Controller, event: ControllerEvent, source_offset: int,
                 requests: bool = False) -> None:
        self.controller = controller
        self.event = event
        self.source_offset = source_offset
        self.handled: list[Handled] = []
        # "first": the log's first controller epoch was adopted; "takeover": a failover ran.
        self.failover: str | None = None
        self._steps: dict[Key | None, int] = {}  # None: the event's cluster-level rows
        self._facts: _EventFacts | None = None
        # Whether a replica of a topic being deleted was deleted by this event (its StopReplica answered, in Kafka's
        # terms): TopicDeletionManager.resumeDeletions then retries the replicas whose deletion failed.
        self.replica_deleted = False
        # What the commands (and the handler itself) add to the controller's request batches, when asked for:
        # (run, action, added), a run being a stretch of commands of one action, or one of the handler's own
        # UpdateMetadata batches.
        self.requests = requests
        self.sent: list[tuple[int, str, Added]] = []
        self._run: tuple[int, str] = (0, "")
        # A failover's reassignments that /admin/reassign_partitions still named: resumed first (requests.batches).
        self.from_znode: frozenset[Key] = frozenset()

    def _runs(self, action: str) -> int:
        """The run `action`'s additions belong to: the current one if it is of that action, else a new one. A
        startup's elections of the cluster's other New and Offline partitions join its run: onBrokerStartup's one
        triggerOnlinePartitionStateChange elects them with the new brokers' partitions, one batch (seed 1208)."""
        joins = action == Action.TRY_ELECTION and self._run[1] == Action.BROKER_STARTUP
        if (self._run[1] != action and not joins) or action == Action.CLUSTER:
            self._run = (self._run[0] + 1, action)
        return self._run[0]

    def end_run(self) -> None:
        """The additions that follow go in batches of their own, also when of the same action: another event the
        controller handles within this one (a broker's answer to its LeaderAndIsr)."""
        self._run = (self._run[0], "")

    def metadata(self, brokers: Iterable[int], records: Iterable[PartitionRecord] = (), *,
                 action: Action = Action.CLUSTER) -> None:
        """sendUpdateMetadataRequest(brokers, partitions): to the registered `brokers`, a batch of its own; with an
        `action`, the metadata batch of that action's commands just emitted (before their later steps)."""
        if not self.requests:
            return
        registered = self.controller.cluster.broker_epochs.keys()
        to = tuple(sorted(b for b in brokers if b in registered))
        run = self._runs(action)
        self.sent.append((run, action, Added(Phase.METADATA, 0, RequestType.UPDATE_METADATA, to, None)))
        for rec in records:
            self.sent.append((run, action, Added(Phase.METADATA, 0, RequestType.UPDATE_METADATA, to,
                                                 metadata_state(rec))))

    def created_earlier(self, records: Iterable[PartitionRecord]) -> None:
        """The creation requests of partitions the events just before this one created, read with its topic by one
        read of /brokers/topics (CreateTopic.topics): in this event's creation batch, as the partition's INITIAL
        election adds them (LeaderAndIsr, isNew, to its live replicas, its ISR; UpdateMetadata to every registered
        broker). Nothing for one left New (no live replica)."""
        if not self.requests:
            return
        registered = self.controller.cluster.broker_epochs.keys()
        to = tuple(sorted(registered))
        run = self._runs(Action.CREATE)
        for rec in records:
            if not rec.has_leader_and_isr:
                continue
            self.sent.append((run, Action.CREATE, Added(Phase.ELECTION, 0, RequestType.LEADER_AND_ISR, tuple(
                b for b in rec.isr if b in registered), leader_and_isr_state(rec, is_new=True))))
            self.sent.append((run, Action.CREATE, Added(Phase.ELECTION, 0, RequestType.UPDATE_METADATA, to,
                                                        metadata_state(rec))))

    def facts_changed(self) -> None:
        """The event changed a cluster fact its commands carry (brokers, features, releases): read them again."""
        self._facts = None

    def _cluster_facts(self) -> _EventFacts:
        if self._facts is None:
            controller, cv = self.controller, self.controller.cluster
            level = controller_level(controller)
            self._facts = _EventFacts(cv.live_brokers, frozenset(cv.shutting_down & cv.broker_epochs.keys()),
                                      frozenset(cv.broker_epochs), level, controller.elr_on,
                                      controller.metadata_version, controller.release,
                                      controller.config.rules.unclean_by_config(level))
        return self._facts

    def _emit(self, action: Action, fields: dict[str, Any], offline: frozenset[int] = frozenset()) -> None:
        """Build the command (the event's envelope, the cluster facts as they stand now, less the brokers whose
        replica of the partition is `offline`, and `fields`, the command's own) and apply it at once to the
        controller's own record of the partition."""
        facts = self._cluster_facts()
        live, shutting_down, offline_shutting_down = facts.live, facts.shutting_down, frozenset()
        if offline:
            offline &= facts.registered
            offline_shutting_down = offline & shutting_down
            live, shutting_down = live - offline, shutting_down - offline
        ev, cv = self.event, self.controller.cluster
        command = Command(action=action, event_id=ev.event_id, event_type=ev.type, source_offset=self.source_offset,
                          controller_epoch=cv.controller_epoch, event_ts=ev.ts, principal=ev.principal,
                          live_brokers=live, shutting_down_brokers=shutting_down, offline_replicas=offline,
                          offline_replicas_shutting_down=offline_shutting_down,
                          broker_change=ev.change if isinstance(ev, BrokerChange) else None,
                          broker_epoch=ev.broker_epoch if isinstance(ev, BrokerChange | IsrChange) else None,
                          controller_id=None if cv.controller_id < 0 else cv.controller_id,
                          event_controller_epoch=ev.controller_epoch, **fields)
        partitions = self.controller.partitions
        key = None if command.partition is None else (command.topic, command.partition)
        before = partitions.get(key) if key else None
        applied = apply_command(before, command, self.controller.config.rules, self.requests)
        after = applied.record
        if before is not None and after is not None and after.queued_for_deletion:
            pending, left = replicas_not_deleted(before), replicas_not_deleted(after)
            if len(left) < len(pending):
                self.replica_deleted = True
                logs = cv.deleted_logs
                for broker in set(pending) - set(left):
                    logs[broker] = logs.get(broker, frozenset()) | {(after.topic, after.partition)}
        if key is not None:
            if applied.record is None:
                partitions.pop(key, None)
            else:
                partitions[key] = applied.record
        if applied.sent:
            run = self._runs(action)
            self.sent.extend((run, action, added) for added in applied.sent)
        self.handled.append(Handled(command, applied))

    def partition(self, action: Action, key: Key, *, unclean_allowed: bool | None = None,
                  **fields: Any) -> None:
        controller, (topic, partition) = self.controller, key
        step = self._steps.get(key, 0)
        self._steps[key] = step + 1
        facts = self._cluster_facts()
        if unclean_allowed is None:
            unclean_allowed = facts.unclean_by_config and controller.unclean_configured(topic)
        self._emit(action, {"topic": topic, "partition": partition, "step": step, "unclean_allowed": unclean_allowed,
                            "min_isr": controller.min_isr(topic), "elr_enabled": facts.elr_enabled,
                            "metadata_version": facts.metadata_version, "kafka_release": facts.kafka_release,
                            "controller_level": facts.controller_level, **fields},
                   offline_replicas(controller.cluster, controller.partitions.get(key)))

    def cluster(self, message: str, outcome: Outcome = Outcome.ACCEPTED, error: Error | None = None, *,
                action: Action = Action.CLUSTER, **fields: Any) -> None:
        """The event's cluster-level row (no partition); its step orders it among the event's other ones."""
        ev = self.event
        step = self._steps.get(None, 0)
        self._steps[None] = step + 1
        self._emit(action, {"topic": getattr(ev, "topic", None), "broker_id": getattr(ev, "broker_id", None),
                            "step": step, "outcome": outcome, "error": error, "message": message, **fields})

    def reject(self, error: Error, message: str) -> None:
        """Refused before fan-out: on the partition's own row when the event names exactly one."""
        ev = self.event
        if isinstance(ev, IsrChange):
            self.partition(Action.REJECT, (ev.topic, ev.partition), error=error, message=message)
        else:
            self.cluster(message, Outcome.REJECTED, error)


class Controller(ControllerEpoch, FeatureEvents, BrokerEvents, TopicEvents):
    """The cluster view plus every partition's record: the whole shadow controller, pure and in-process."""

    def __init__(self, config: ControllerConfig | None = None) -> None:
        self.config = config or ControllerConfig()
        self.cluster = ClusterView()
        self.partitions: dict[Key, PartitionRecord] = {}

    # -- persistence (the Spark sequencer saves this per micro-batch) --------------------------------
    def snapshot(self, keys: Iterable[Key] | None = None, seen_after: int = -1) -> bytes:
        """Versioned JSON, by field name (a checkpoint must outlive a change of class layout). Without `keys`:
        the whole controller. With `keys`: a change set, to `restore` on top of the state it followed: the
        cluster view, the records of `keys` (removed ones listed), the event ids seen after `seen_after`."""
        full = keys is None
        seen = self.cluster.seen_event_ids
        cluster = codec.encoder(ClusterView)(replace(self.cluster, seen_event_ids={}))
        if full:
            cluster["seen_event_ids"] = dict(seen)
        else:  # the ids are in log order: the newest ones are at the end
            recent = list(itertools.takewhile(lambda item: item[1] > seen_after, reversed(seen.items())))
            cluster["seen_event_ids"] = dict(reversed(recent))
        record = codec.encoder(PartitionRecord)
        chosen = sorted(self.partitions) if keys is None else sorted(set(keys))
        body = {"format": SNAPSHOT_FORMAT, "version": SNAPSHOT_VERSION, "full": full, "cluster": cluster,
                "partitions": [record(self.partitions[k]) for k in chosen if k in self.partitions],
                "removed": [list(k) for k in chosen if k not in self.partitions]}
        return json.dumps(body, separators=(",", ":")).encode()

    def restore(self, snapshot: bytes) -> int:
        """Load a `snapshot`: a whole one replaces the state, a change set updates it; returns the number of
        partition records it set or removed. SnapshotError if the bytes are not a snapshot of this format
        and version."""
        body = read_snapshot(snapshot)
        try:
            cluster = codec.decoder(ClusterView)(body["cluster"])
            records = [codec.decoder(PartitionRecord)(data) for data in body["partitions"]]
            removed = [(topic, partition) for topic, partition in body["removed"]]
        except (TypeError, ValueError, KeyError, AttributeError) as e:
            raise SnapshotError(f"snapshot content does not decode (corrupt): {e!r}") from e
        if body["full"]:
            self.partitions = {}
        else:
            cluster.seen_event_ids = {**self.cluster.seen_event_ids, **cluster.seen_event_ids}
        self.cluster = cluster
        for key in removed:
            self.partitions.pop(key, None)
        for r in records:
            self.partitions[(r.topic, r.partition)] = r
        return len(records) + len(removed)

    # -- queries ----------------------------------------------------------------------------------------
    @property
    def release(self) -> KafkaRelease:
        """The release whose controller the zk rules follow: as configured (--kafka-version), else as the log named
        it, else the last with ZooKeeper mode."""
        if self.config.kafka_version is None and self.cluster.kafka_version is not None:
            return _release_named(self.cluster.kafka_version)
        return self.config.release

    def unclean_allowed(self, topic: str) -> bool:
        """Whether the topic's config lets an offline partition elect uncleanly (under the kraft rules, only where
        the controller's release reads the config: `unclean_by_config`)."""
        return self.config.rules.unclean_by_config(controller_level(self)) and self.unclean_configured(topic)

    def unclean_configured(self, topic: str) -> bool:
        """The topic's unclean.leader.election.enable, else the cluster default."""
        configs = self.cluster.topic_configs.get(topic)
        value = configs.get(UNCLEAN_CONFIG) if configs else None
        return self.config.unclean_leader_election_enable if value is None else value.lower() == "true"

    def min_isr(self, topic: str) -> int:
        """The topic's min.insync.replicas, else the cluster default, at most its replication factor (that of
        partition 0, as ReplicationControlManager.getTopicEffectiveMinIsr)."""
        configs = self.cluster.topic_configs.get(topic)
        value = configs.get(MIN_ISR_CONFIG) if configs else None
        configured = self.config.min_insync_replicas if value is None else int(value)
        first = self.partitions.get((topic, 0))
        return min(configured, len(first.replicas)) if first is not None and first.replicas else configured

    def partitions_of(self, topic: str) -> list[Key]:
        return [(topic, p) for p in range(self.cluster.topics.get(topic, 0)) if (topic, p) in self.partitions]

    def partitions_on(self, broker: int) -> list[Key]:
        return sorted(k for k, r in self.partitions.items() if broker in r.replicas)

    # -- the entry point -------------------------------------------------------------------------------
    def handle(self, event: ControllerEvent, source_offset: int) -> list[Handled]:
        """Apply one event of the log; returns every command it produced, each with its result."""
        return self._handle(event, source_offset, requests=False).handled

    def handle_event(self, event: ControllerEvent, source_offset: int) -> HandledEvent:
        """`handle`, with the requests the ZK controller sends for the event (statemachine.requests; none under
        other rules)."""
        return self._handle(event, source_offset, requests=self.config.rules is ZK)

    def _handle(self, event: ControllerEvent, source_offset: int, requests: bool) -> HandledEvent:
        out = _Fanout(self, event, source_offset, requests)
        cv = self.cluster
        try:
            self._check_duplicate(event.event_id, source_offset)
            if event.controller_epoch < cv.controller_epoch:
                raise Rejection(Error.STALE_CONTROLLER_EPOCH,
                                f"controller epoch {event.controller_epoch} is older than the active "
                                f"{cv.controller_epoch}")
            if event.controller_epoch > cv.controller_epoch:
                self._failover(out)
            if (self.config.super_users is not None and isinstance(event, ADMIN_EVENTS)
                    and event.principal not in self.config.super_users):
                raise Rejection(Error.CLUSTER_AUTHORIZATION_FAILED,
                                f"principal {event.principal} may not issue {event.type}")
            self._dispatch(event, out)
        except Rejection as rejected:
            out.reject(rejected.error, rejected.message)
        if not out.handled:
            out.cluster("nothing to do", Outcome.NO_OP)
        self._finish_deletions(out)
        return HandledEvent(out.handled, batches(out.sent, out.from_znode) if out.sent else [])

    def _check_duplicate(self, event_id: str, offset: int) -> None:
        seen, window = self.cluster.seen_event_ids, self.config.duplicate_window
        applied_at = seen.get(event_id)
        if applied_at is not None and offset - applied_at <= window:
            raise Rejection(Error.DUPLICATE_EVENT, f"event_id {event_id} was already applied at offset "
                                                  f"{applied_at}")
        seen.pop(event_id, None)
        seen[event_id] = offset
        # Forget ids beyond the window, in one pass once the oldest is a whole window behind (amortised O(1)).
        if offset - next(iter(seen.values())) > 2 * window:
            self.cluster.seen_event_ids = {e: o for e, o in seen.items() if offset - o <= window}

    def _dispatch(self, event: ControllerEvent, out: _Fanout) -> None:
        match event:
            case BrokerChange():
                self._on_broker_change(event, out)
            case IsrChange():
                self._on_isr_change(event, out)
            case IsrChangeNotification():
                self._on_isr_change_notification(event, out)
            case CreateTopic():
                self._on_create_topic(event, out)
            case CreatePartitions():
                self._on_create_partitions(event, out)
            case DeleteTopic():
                self._on_delete_topic(event, out)
            case ReassignPartitions():
                self._on_reassign_partitions(event, out)
            case ElectLeaders():
                self._on_elect_leaders(event, out)
            case AlterTopicConfig():
                self._on_alter_topic_config(event, out)
            case ControllerChange():
                self._on_controller_change(out)
            case LeaderImbalanceCheck():
                self._on_leader_imbalance_check(out)
            case PartitionSnapshot():
                self._on_partition_snapshot(event, out)
            case UpdateFeatures():
                self._on_update_features(event, out)
            case BrokerRegistration():
                on_broker_registration(self, event, out)
            case AssignReplicasToDirs():
                on_assign_replicas_to_dirs(self, event, out)
            case LogDirsOffline():
                on_log_dirs_offline(self, event, out)
            case LogDirEventNotification():
                on_log_dir_event_notification(self, event, out)
            case LeaderAndIsrResponseReceived():
                on_leader_and_isr_response(self, event, out)
            case ControllerRegistration():
                on_controller_registration(self, event, out)

