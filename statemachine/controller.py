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
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from schemas import codec
from schemas.events import (
    ADMIN_EVENTS,
    AlterTopicConfig,
    BrokerChange,
    BrokerChangeKind,
    ControllerChange,
    ControllerEvent,
    CreatePartitions,
    CreateTopic,
    DeleteTopic,
    ElectionType,
    ElectLeaders,
    IsrChange,
    IsrChangeNotification,
    LeaderImbalanceCheck,
    PartitionSnapshot,
    ReassignPartitions,
    UpdateFeatures,
)
from statemachine.errors import Error, Outcome, Rejection
from statemachine.features import (
    ELIGIBLE_LEADER_REPLICAS_VERSION,
    LATEST_PRODUCTION,
    METADATA_VERSION,
    is_alter_partition_supported,
    is_elr_supported,
    metadata_version_name,
)
from statemachine.partition import apply_command, metadata_state, replicas_not_deleted
from statemachine.record import Action, Applied, Command, PartitionRecord
from statemachine.releases import (
    LAST_ZOOKEEPER_RELEASE,
    KafkaRelease,
    broker_failure_updates_metadata_when_nothing_changed,
    rebalance_waits_for_reassignments,
)
from statemachine.requests import Added, Phase, Request, RequestType, batches
from statemachine.rules import ZK, Rules, eligible_leader_replicas_enabled
from statemachine.states import PartitionState, ReplicaState

UNCLEAN_CONFIG = "unclean.leader.election.enable"
MIN_ISR_CONFIG = "min.insync.replicas"
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")

Key = tuple[str, int]


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
    min_insync_replicas: int = 1
    # The ZooKeeper-era controller's release (statemachine.releases); None: not told, Kafka 3.9.1.
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

    @property
    def live_brokers(self) -> frozenset[int]:
        return frozenset(b for b in self.broker_epochs if b not in self.shutting_down)


SNAPSHOT_FORMAT = "isrflow.controller"
SNAPSHOT_VERSION = 1


class SnapshotError(ValueError):
    """Bytes that are not a controller snapshot this version can read."""


def read_snapshot(snapshot: bytes) -> dict[str, Any]:
    try:
        body = json.loads(snapshot)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SnapshotError(f"not a JSON controller snapshot (corrupt or truncated): {e}") from e
    if not isinstance(body, dict) or body.get("format") != SNAPSHOT_FORMAT:
        raise SnapshotError(f"not an {SNAPSHOT_FORMAT} snapshot")
    if body.get("version") != SNAPSHOT_VERSION:
        raise SnapshotError(f"snapshot version {body.get('version')}; this isrflow reads version {SNAPSHOT_VERSION}")
    missing = {"full", "cluster", "partitions", "removed"} - body.keys()
    if missing:
        raise SnapshotError(f"snapshot lacks {sorted(missing)} (corrupt)")
    return body


@dataclass(frozen=True, slots=True)
class Handled:
    command: Command
    applied: Applied


@dataclass(frozen=True, slots=True)
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
        self._facts: tuple[frozenset[int], frozenset[int]] | None = None
        # Whether a replica of a topic being deleted was deleted by this event (its StopReplica answered, in Kafka's
        # terms): TopicDeletionManager.resumeDeletions then retries the replicas whose deletion failed.
        self.replica_deleted = False
        # What the commands (and the handler itself) add to the controller's request batches, when asked for:
        # (run, action, added), a run being a stretch of commands of one action, or one of the handler's own
        # UpdateMetadata batches.
        self.requests = requests
        self.sent: list[tuple[int, str, Added]] = []
        self._run: tuple[int, str] = (0, "")

    def _runs(self, action: str) -> int:
        """The run `action`'s additions belong to: the current one if it is of that action, else a new one."""
        if self._run[1] != action or action == Action.CLUSTER:
            self._run = (self._run[0] + 1, action)
        return self._run[0]

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

    def facts_changed(self) -> None:
        self._facts = None

    def _cluster_facts(self) -> tuple[frozenset[int], frozenset[int]]:
        if self._facts is None:
            cv = self.controller.cluster
            self._facts = (cv.live_brokers, frozenset(cv.shutting_down & cv.broker_epochs.keys()))
        return self._facts

    def _emit(self, action: Action, **fields: Any) -> None:
        """Build the command (the event's envelope, the cluster facts as they stand now, `fields`) and apply
        it at once to the controller's own record of the partition."""
        live, shutting_down = self._cluster_facts()
        ev, cv = self.event, self.controller.cluster
        command = Command(action=action, event_id=ev.event_id, event_type=ev.type, source_offset=self.source_offset,
                          controller_epoch=cv.controller_epoch, event_ts=ev.ts, principal=ev.principal,
                          live_brokers=live, shutting_down_brokers=shutting_down,
                          broker_change=ev.change if isinstance(ev, BrokerChange) else None,
                          broker_epoch=ev.broker_epoch if isinstance(ev, BrokerChange | IsrChange) else None,
                          controller_id=None if cv.controller_id < 0 else cv.controller_id,
                          event_controller_epoch=ev.controller_epoch, **fields)
        partitions = self.controller.partitions
        key = None if command.partition is None else (command.topic, command.partition)
        before = partitions.get(key) if key else None
        applied = apply_command(before, command, self.controller.config.rules, self.requests)
        after = applied.record
        if before is not None and after is not None and after.queued_for_deletion and \
                len(replicas_not_deleted(after)) < len(replicas_not_deleted(before)):
            self.replica_deleted = True
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
        step = self._steps.get(key, 0)
        self._steps[key] = step + 1
        self._emit(action, topic=key[0], partition=key[1], step=step,
                   unclean_allowed=self.controller.unclean_allowed(key[0]) if unclean_allowed is None
                   else unclean_allowed, min_isr=self.controller.min_isr(key[0]),
                   elr_enabled=self.controller.elr_on, metadata_version=self.controller.metadata_version,
                   kafka_release=self.controller.config.release, **fields)

    def cluster(self, message: str, outcome: Outcome = Outcome.ACCEPTED, error: Error | None = None, *,
                action: Action = Action.CLUSTER, **fields: Any) -> None:
        """The event's cluster-level row (no partition); its step orders it among the event's other ones."""
        ev = self.event
        step = self._steps.get(None, 0)
        self._steps[None] = step + 1
        self._emit(action, topic=getattr(ev, "topic", None), broker_id=getattr(ev, "broker_id", None), step=step,
                   outcome=outcome, error=error, message=message, **fields)

    def reject(self, error: Error, message: str) -> None:
        """Refused before fan-out: on the partition's own row when the event names exactly one."""
        ev = self.event
        if isinstance(ev, IsrChange):
            self.partition(Action.REJECT, (ev.topic, ev.partition), error=error, message=message)
        else:
            self.cluster(message, Outcome.REJECTED, error)


class Controller:
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
    def unclean_allowed(self, topic: str) -> bool:
        value = self.cluster.topic_configs.get(topic, {}).get(UNCLEAN_CONFIG)
        return self.config.unclean_leader_election_enable if value is None else value.lower() == "true"

    def feature_level(self, name: str) -> int:
        """The finalized level of a feature: as the log last set it, else as configured (0: off)."""
        level = self.cluster.features.get(name)
        if level is not None:
            return level
        if name == METADATA_VERSION:
            return self.config.metadata_version
        return int(self.config.eligible_leader_replicas) if name == ELIGIBLE_LEADER_REPLICAS_VERSION else 0

    @property
    def metadata_version(self) -> int:
        return self.feature_level(METADATA_VERSION)

    @property
    def elr_on(self) -> bool:
        """Eligible Leader Replicas: the rule set has them and the cluster's feature is on (rules
        .eligible_leader_replicas_enabled)."""
        return self.config.rules.eligible_leader_replicas and eligible_leader_replicas_enabled(
            self.feature_level(ELIGIBLE_LEADER_REPLICAS_VERSION), self.metadata_version)

    def min_isr(self, topic: str) -> int:
        """The topic's min.insync.replicas, else the cluster default, at most its replication factor (that of
        partition 0, as ReplicationControlManager.getTopicEffectiveMinIsr)."""
        value = self.cluster.topic_configs.get(topic, {}).get(MIN_ISR_CONFIG)
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
        return HandledEvent(out.handled, batches(out.sent))

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

    # -- controller epoch ------------------------------------------------------------------------------
    def _failover(self, out: _Fanout) -> None:
        cv, ev = self.cluster, out.event
        first = cv.controller_epoch < 0
        cv.controller_epoch = ev.controller_epoch
        cv.controller_id = ev.controller_id if isinstance(ev, ControllerChange) else -1
        if isinstance(ev, ControllerChange) and ev.live_brokers is not None:
            self._read_registrations(ev.live_brokers, out)
        # onControllerFailover: every broker learns who is live before the state machines start.
        out.metadata(cv.broker_epochs)
        if first:
            out.failover = "first"  # the log's first controller: nothing to take over from
            return
        out.failover = "takeover"
        if not self.config.rules.reexamine_on_failover:
            out.cluster(f"controller epoch {cv.controller_epoch}: the new controller keeps the replicated state")
            return
        # A new controller knows nothing of the old one's shutting-down brokers (they retry).
        cv.shutting_down.clear()
        out.facts_changed()
        for key in sorted(self.partitions):
            out.partition(Action.CONTROLLER_FAILOVER, key)
        # TopicDeletionManager.init, then resumeDeletions: a topic being deleted goes on at once, unless a replica of
        # it is on a dead broker (ineligible until that broker starts).
        for topic in sorted(cv.topics_queued_for_deletion):
            keys = self.partitions_of(topic)
            if all(b in cv.live_brokers for key in keys for b in self.partitions[key].replicas):
                for key in keys:
                    if self.partitions[key].queued_for_deletion:
                        out.partition(Action.RESUME_DELETION, key)
        who = f"controller {cv.controller_id}" if cv.controller_id >= 0 else "a new controller (implicit)"
        out.cluster(f"controller failover: {who} at epoch {cv.controller_epoch}; "
                    f"{len(self.partitions)} partition(s) re-examined", action=Action.CONTROLLER_FAILOVER)

    def _read_registrations(self, live: Mapping[int, int], out: _Fanout) -> None:
        """The brokers a new controller finds registered (ZooKeeper's /brokers/ids at onControllerFailover): one
        that died, or registered again, while no controller was active is gone, or registered with its new epoch,
        from here on; no controller handled that change, so it decides nothing by itself."""
        cv = self.cluster
        for broker in sorted(set(cv.broker_epochs) - set(live)):
            del cv.broker_epochs[broker]
            cv.shutting_down.discard(broker)
        for broker, epoch in live.items():
            cv.broker_epochs[broker] = epoch
            cv.last_broker_epochs[broker] = max(epoch, cv.last_broker_epochs.get(broker, epoch))
        out.facts_changed()

    def _on_controller_change(self, out: _Fanout) -> None:
        cv = self.cluster
        if out.failover == "first":
            out.cluster(f"controller {cv.controller_id} active at epoch {cv.controller_epoch}")
        elif out.failover is None:
            out.cluster(f"controller epoch {cv.controller_epoch} is already active "
                        f"(controller {cv.controller_id})", Outcome.NO_OP)

    # -- features --------------------------------------------------------------------------------------
    def _on_update_features(self, ev: UpdateFeatures, out: _Fanout) -> None:
        """Finalized feature levels from this point of the log on (Kafka's FeatureLevelRecord), checked as
        FeatureControlManager does the dependencies the rules rely on; level 0 turns a feature off."""
        levels = {**self.cluster.features, **ev.features}
        version = levels.get(METADATA_VERSION, self.metadata_version)
        lowest = self.config.rules.minimum_metadata_version
        if METADATA_VERSION in ev.features and version < lowest:
            raise Rejection(Error.INVALID_UPDATE_VERSION,
                            f"{METADATA_VERSION} {version} is below the first version the {self.config.rules.name} "
                            f"rules run at, {lowest}")
        if levels.get(ELIGIBLE_LEADER_REPLICAS_VERSION, 0) >= 1 and not is_elr_supported(version):
            raise Rejection(Error.INVALID_UPDATE_VERSION,
                            f"{ELIGIBLE_LEADER_REPLICAS_VERSION} >= 1 needs {METADATA_VERSION} 4.0-IV1 or later, not "
                            f"{metadata_version_name(version)}")
        before = {name: self.feature_level(name) for name in ev.features}
        self.cluster.features.update(ev.features)
        out.cluster("features: " + ", ".join(
            f"{name} {before[name]} -> {level}" + (f" ({metadata_version_name(level)})" if name == METADATA_VERSION
                                                   else "") for name, level in sorted(ev.features.items())))

    # -- brokers ---------------------------------------------------------------------------------------
    def _on_broker_change(self, ev: BrokerChange, out: _Fanout) -> None:
        match ev.change:
            case BrokerChangeKind.STARTUP:
                self._broker_startup(out, ev.new_brokers or {ev.broker_id: ev.broker_epoch}, ev.unclean_shutdown)
            case BrokerChangeKind.FAILURE:
                self._broker_failure(out, ev.broker_id, ev.broker_epoch)
            case BrokerChangeKind.CONTROLLED_SHUTDOWN:
                self._controlled_shutdown(out, ev.broker_id, ev.broker_epoch)

    def _broker_startup(self, out: _Fanout, registered: Mapping[int, int], unclean_shutdown: bool = False) -> None:
        """onBrokerStartup for the brokers (id -> epoch) one read of the registrations found new. A broker already
        registered with its epoch is not new to the controller (processBrokerChange): a failover's read, or an
        earlier startup of brokers read together, took it."""
        cv = self.cluster
        new = {b: e for b, e in sorted(registered.items()) if cv.broker_epochs.get(b) != e}
        if not new:
            out.cluster(f"broker(s) {_listed(registered)} already registered with epoch(s) "
                        f"{_listed(registered.values())}: started before", Outcome.NO_OP)
            return
        for broker, epoch in new.items():
            last = cv.last_broker_epochs.get(broker)
            if last is not None and epoch <= last:
                raise Rejection(Error.STALE_BROKER_EPOCH,
                                f"broker {broker} registration epoch {epoch} is not newer than {last}")
        bounced = [b for b in new if b in cv.broker_epochs]
        for broker in bounced:
            # Re-registered without a failure in between: Kafka handles it as a failure then a startup.
            self._unregister(out, broker)
            for key in self.partitions_on(broker):
                out.partition(Action.BROKER_FAILURE, key, broker_id=broker)
        first = next(iter(new))
        for broker, epoch in new.items():
            if unclean_shutdown and self.elr_on:
                # Registered, still fenced: KRaft takes it out of every ISR and ELR before it can lead again.
                for key in self.partitions_on(broker):
                    rec = self.partitions[key]
                    if broker in rec.isr or broker in rec.eligible_leader_replicas:
                        out.partition(Action.UNCLEAN_REGISTRATION, key, broker_id=broker)
            cv.broker_epochs[broker] = cv.last_broker_epochs[broker] = epoch
        out.facts_changed()
        # onBrokerStartup: the other brokers learn of them, they learn every partition that has a leader.
        out.metadata(b for b in cv.broker_epochs if b not in new)
        out.metadata(new, (r for _, r in sorted(self.partitions.items())
                           if r.has_leader_and_isr and not r.queued_for_deletion))
        hosted = sorted({key for broker in new for key in self.partitions_on(broker)})
        together = tuple(new) if len(new) > 1 else ()
        for key in hosted:
            out.partition(Action.BROKER_STARTUP, key, broker_id=first, new_brokers=together)
        if self.config.rules.startup_elects_everywhere:
            # The cluster's other New and Offline partitions try too (seed 143: a New partition a failed reassignment
            # had given a live replica).
            self._try_elections(out, sorted(set(self.partitions) - set(hosted)))
        # Last, resumeDeletionForTopics: the failed deletions are retried (the new brokers' own replicas are online
        # by then), then the deletion of each topic with a replica there goes on in all its partitions at once
        # (onTopicDeletion: one UpdateMetadata naming them all, then one batch per replica state).
        queued = {k[0] for k in hosted} & cv.topics_queued_for_deletion
        if queued:
            self._resume_deletions(out)
        for key in sorted(k for topic in queued for k in self.partitions_of(topic)
                          if self.partitions[k].queued_for_deletion):
            out.partition(Action.RESUME_DELETION, key)
        started = (f"brokers {_listed(new)} started together with epochs {_listed(new.values())}" if together
                   else f"broker {first} started with epoch {new[first]}")
        out.cluster(started + (" (bounce: failure, then startup)" if bounced else "")
                    + f"; {'they host' if together else 'hosts'} {len(hosted)} partition(s)")

    def _unregister(self, out: _Fanout, broker: int) -> None:
        del self.cluster.broker_epochs[broker]
        self.cluster.shutting_down.discard(broker)
        out.facts_changed()

    def _broker_failure(self, out: _Fanout, broker: int, epoch: int) -> None:
        registered = self.cluster.broker_epochs.get(broker)
        if registered is None and self.config.rules.fenced_brokers_stay_registered and \
                self.cluster.last_broker_epochs.get(broker) == epoch:
            self._fenced_again(out, broker)
            return
        if registered is None:
            raise Rejection(Error.BROKER_NOT_AVAILABLE, f"broker {broker} is not registered")
        if epoch < registered:
            raise Rejection(Error.STALE_BROKER_EPOCH,
                            f"failure of broker {broker} epoch {epoch}, but epoch {registered} is registered")
        self._unregister(out, broker)
        offline_leaders = self._partitions_with_offline_leader()
        hosted = self.partitions_on(broker)
        # Kafka's partitionsWithOfflineLeader also takes in partitions still led by a shutting-down broker
        # (their controlled-shutdown election had failed): they elect now too.
        live = self.cluster.live_brokers
        led_elsewhere = [k for k, r in self.partitions.items()
                         if r.leader >= 0 and r.leader not in live and broker not in r.replicas
                         and not r.queued_for_deletion]
        for key in sorted(hosted + led_elsewhere):
            out.partition(Action.BROKER_FAILURE, key, broker_id=broker)
        if self._hosts_replicas_being_deleted(broker):
            self._resume_deletions(out)  # failReplicaDeletion, then resumeDeletions
        if broker_failure_updates_metadata_when_nothing_changed(self.config.release):
            nothing_changed = not any(k in self.partitions and not self.partitions[k].queued_for_deletion
                                      for k in hosted) and not any(
                d.election for h in out.handled for d in h.applied.decisions)
        else:
            nothing_changed = not offline_leaders
        if nothing_changed:
            out.metadata(self.cluster.broker_epochs)  # the brokers learn it is gone
        offline = [k for k in hosted if k in self.partitions and self.partitions[k].state is PartitionState.OFFLINE]
        out.cluster(f"broker {broker} failed; hosted {len(hosted)} partition(s); {len(offline)} offline: "
                    + _names(offline))

    def _partitions_with_offline_leader(self) -> list[Key]:
        """ControllerContext.partitionsWithOfflineLeader: the partitions with a leader and ISR, not being deleted,
        whose leader is not a live broker (leader -1 included)."""
        live = self.cluster.live_brokers
        return [k for k, r in self.partitions.items()
                if r.has_leader_and_isr and not r.queued_for_deletion and r.leader not in live]

    def _fenced_again(self, out: _Fanout, broker: int) -> None:
        """KRaft: a fenced broker keeps its registration, and its session timing out later fences it again (after
        a controlled shutdown, say), which takes it out of the ISRs it was left in: the last member of an ISR,
        once the ELR feature lets the ISR go empty."""
        in_isr = [k for k in self.partitions_on(broker) if broker in self.partitions[k].isr]
        for key in in_isr:
            out.partition(Action.BROKER_FAILURE, key, broker_id=broker)
        out.cluster(f"broker {broker} fenced again; still in {len(in_isr)} ISR(s): " + _names(in_isr))

    def _controlled_shutdown(self, out: _Fanout, broker: int, epoch: int) -> None:
        registered = self.cluster.broker_epochs.get(broker)
        if registered is not None and epoch < registered:
            raise Rejection(Error.STALE_BROKER_EPOCH,
                            f"controlled shutdown of broker {broker} epoch {epoch}, but {registered} is registered")
        if registered is None:
            raise Rejection(Error.BROKER_NOT_AVAILABLE, f"broker {broker} is not registered")
        self.cluster.shutting_down.add(broker)
        out.facts_changed()
        hosted = self.partitions_on(broker)
        for key in hosted:
            out.partition(Action.CONTROLLED_SHUTDOWN, key, broker_id=broker)
        still_led = [k for k in hosted if k in self.partitions and self.partitions[k].leader == broker]
        out.cluster(f"broker {broker} shutting down; still leads {len(still_led)} partition(s): "
                    + _names(still_led))

    def _on_isr_change(self, ev: IsrChange, out: _Fanout) -> None:
        registered = self.cluster.broker_epochs.get(ev.broker_id)
        if registered is None or registered != ev.broker_epoch:
            raise Rejection(Error.STALE_BROKER_EPOCH,
                            f"sender broker {ev.broker_id} epoch {ev.broker_epoch} is not the registered {registered}")
        leader_epoch, partition_epoch = ev.leader_epoch, ev.partition_epoch
        rec = self.partitions.get((ev.topic, ev.partition))
        if self.config.isr_changes_at_current_epochs and rec is not None and rec.leader == ev.broker_id:
            leader_epoch, partition_epoch = rec.leader_epoch, rec.partition_epoch
        out.partition(Action.ISR_CHANGE, (ev.topic, ev.partition), broker_id=ev.broker_id, isr=ev.isr,
                      leader_epoch=leader_epoch, partition_epoch=partition_epoch,
                      leader_recovery_state=ev.leader_recovery_state)
        # processAlterPartition: one UpdateMetadata naming every partition of the request, accepted or not, once all
        # are written (after the last one's change), before any reassignment it lets complete. Below protocol 2.7 the
        # leader wrote it itself: the controller sends nothing until it reads the notification.
        request = [(p.topic, p.partition) for p in ev.request_partitions] or [(ev.topic, ev.partition)]
        if is_alter_partition_supported(self.metadata_version) and request[-1] == (ev.topic, ev.partition):
            out.metadata(self.cluster.broker_epochs, (self.partitions[k] for k in request if k in self.partitions),
                         action=Action.ISR_CHANGE)

    def _on_isr_change_notification(self, ev: IsrChangeNotification, out: _Fanout) -> None:
        """processIsrChangeNotification: the named partitions' states read into the cache and one UpdateMetadata
        naming them (those that still exist) to every registered broker."""
        keys = sorted({(p.topic, p.partition) for p in ev.partitions} & self.partitions.keys())
        for key in keys:
            out.partition(Action.ISR_CHANGE_NOTIFICATION, key)
        if not keys:
            out.metadata(self.cluster.broker_epochs)

    # -- topics ----------------------------------------------------------------------------------------
    def _on_create_topic(self, ev: CreateTopic, out: _Fanout) -> None:
        cv, topic = self.cluster, ev.topic
        if not _LEGAL_TOPIC.fullmatch(topic) or topic in (".", ".."):
            raise Rejection(Error.INVALID_TOPIC_EXCEPTION, f"illegal topic name '{topic}'")
        if topic in cv.topics:
            raise Rejection(Error.TOPIC_ALREADY_EXISTS, f"topic {topic} already exists"
                            + (" (queued for deletion)" if topic in cv.topics_queued_for_deletion else ""))
        if not ev.assignment:
            raise Rejection(Error.INVALID_PARTITIONS, "a topic needs at least one partition")
        assignment = _checked_assignment(ev.assignment, 0, None, Error.INVALID_REPLICA_ASSIGNMENT)
        _check_configs(ev.configs)
        cv.topics[topic] = len(assignment)
        if ev.configs:
            cv.topic_configs[topic] = dict(ev.configs)
        self._create(out, topic, 0, assignment)

    def _create(self, out: _Fanout, topic: str, first: int, assignment: list[tuple[int, ...]]) -> None:
        """onNewPartitionCreation per new partition. One whose replicas are all on dead brokers stays New:
        its failed New -> Online change is a second, rejected step (NO_LIVE_REPLICA), as Kafka logs it."""
        for i, replicas in enumerate(assignment):
            key = (topic, first + i)
            out.partition(Action.CREATE, key, replicas=replicas)
            if self.partitions[key].state is PartitionState.NEW:
                out.partition(Action.TRY_ELECTION, key)

    def _on_partition_snapshot(self, ev: PartitionSnapshot, out: _Fanout) -> None:
        """A partition as a metadata snapshot holds it: the starting state of a log that begins there. It seeds a
        partition isrflow does not know; it never overwrites one (the log after the snapshot says what changed)."""
        cv, key = self.cluster, (ev.topic, ev.partition)
        if not _LEGAL_TOPIC.fullmatch(ev.topic) or ev.topic in (".", ".."):
            raise Rejection(Error.INVALID_TOPIC_EXCEPTION, f"illegal topic name '{ev.topic}'")
        if key in self.partitions:
            raise Rejection(Error.TOPIC_ALREADY_EXISTS,
                            f"partition {ev.topic}-{ev.partition} already exists: a snapshot only seeds a new one")
        _checked_assignment({str(ev.partition): ev.replicas}, ev.partition, None, Error.INVALID_REPLICA_ASSIGNMENT)
        outside = [b for b in (*ev.isr, *ev.adding_replicas, *ev.removing_replicas, *ev.eligible_leader_replicas,
                               *ev.last_known_elr) if b not in ev.replicas]
        both = set(ev.adding_replicas) & set(ev.removing_replicas)
        if outside or both or (ev.leader >= 0 and ev.leader not in ev.isr):
            raise Rejection(Error.INVALID_REPLICA_ASSIGNMENT,
                            f"ISR {list(ev.isr)}, leader {ev.leader}, ELR and the reassignment must lie within the "
                            f"replicas {list(ev.replicas)} (the leader in the ISR, adding and removing apart)")
        _check_configs(ev.configs)
        cv.topics[ev.topic] = max(cv.topics.get(ev.topic, 0), ev.partition + 1)
        if ev.configs:
            cv.topic_configs[ev.topic] = dict(ev.configs)
        out.partition(Action.RESTORE, key, replicas=ev.replicas, isr=ev.isr, leader=ev.leader,
                      leader_epoch=ev.leader_epoch, partition_epoch=ev.partition_epoch,
                      leader_recovery_state=ev.leader_recovery_state, adding_replicas=ev.adding_replicas,
                      removing_replicas=ev.removing_replicas, eligible_leader_replicas=ev.eligible_leader_replicas,
                      last_known_elr=ev.last_known_elr)

    def _on_create_partitions(self, ev: CreatePartitions, out: _Fanout) -> None:
        cv, topic = self.cluster, ev.topic
        if topic not in cv.topics:
            raise Rejection(Error.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic} does not exist")
        if topic in cv.topics_queued_for_deletion:
            raise Rejection(Error.INVALID_TOPIC_EXCEPTION, f"topic {topic} is queued for deletion")
        if not ev.assignment:
            raise Rejection(Error.INVALID_PARTITIONS, "no partitions to add")
        count = cv.topics[topic]
        first = self.partitions.get((topic, 0))
        rf = len(first.target_replicas) if first else None
        assignment = _checked_assignment(ev.assignment, count, rf, Error.INVALID_PARTITIONS)
        cv.topics[topic] = count + len(assignment)
        self._create(out, topic, count, assignment)

    def _on_delete_topic(self, ev: DeleteTopic, out: _Fanout) -> None:
        topic, cv = ev.topic, self.cluster
        if topic not in cv.topics:
            raise Rejection(Error.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic} does not exist")
        if topic in cv.topics_queued_for_deletion:
            out.cluster(f"topic {topic} is already queued for deletion", Outcome.NO_OP)
            return
        # One read of /admin/delete_topics: every topic it found, in one onTopicDeletion (one batch of requests).
        topics = [t for t in sorted({topic, *ev.topics}) if t in cv.topics and t not in cv.topics_queued_for_deletion]
        cv.topics_queued_for_deletion.update(topics)
        for key in [k for t in topics for k in self.partitions_of(t)]:
            out.partition(Action.DELETE, key)

    def _finish_deletions(self, out: _Fanout) -> None:
        cv = self.cluster
        if out.replica_deleted:  # their StopReplica answers are in: resumeDeletions
            self._resume_deletions(out)
        touched = {h.command.topic for h in out.handled if h.command.topic in cv.topics_queued_for_deletion}
        for topic in sorted(touched):
            keys = self.partitions_of(topic)
            if not any(replicas_not_deleted(self.partitions[k]) for k in keys):
                for key in keys:  # completeDeleteTopic
                    out.partition(Action.COMPLETE_DELETION, key)
            if not self.partitions_of(topic):
                del cv.topics[topic]
                cv.topic_configs.pop(topic, None)
                cv.topics_queued_for_deletion.discard(topic)

    def _resume_deletions(self, out: _Fanout) -> None:
        """TopicDeletionManager.resumeDeletions (after a replica's deletion, a replica host's failure or startup):
        every replica whose deletion failed, of any topic being deleted, is retried (RETRY_DELETION)."""
        live = self.cluster.live_brokers
        for topic in sorted(self.cluster.topics_queued_for_deletion):
            for key in self.partitions_of(topic):
                if any(state is ReplicaState.DELETION_INELIGIBLE and broker not in live
                       for broker, state in self.partitions[key].replica_states.items()):
                    out.partition(Action.RETRY_DELETION, key)

    def _hosts_replicas_being_deleted(self, broker: int) -> bool:
        queued = self.cluster.topics_queued_for_deletion
        return bool(queued) and any(broker in r.replicas for k, r in self.partitions.items() if k[0] in queued)

    def _on_alter_topic_config(self, ev: AlterTopicConfig, out: _Fanout) -> None:
        cv, topic = self.cluster, ev.topic
        if topic not in cv.topics:
            raise Rejection(Error.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic} does not exist")
        _check_configs(ev.configs)
        was_unclean = self.unclean_allowed(topic)
        configs = cv.topic_configs.setdefault(topic, {})
        for name, value in ev.configs.items():
            if value is None:
                configs.pop(name, None)
            else:
                configs[name] = value
        if not configs:
            del cv.topic_configs[topic]
        out.cluster(f"topic {topic} configs: " + ", ".join(f"{k}={v}" for k, v in sorted(ev.configs.items(),
                                                                                           key=str)),
                    configs=ev.configs)
        if MIN_ISR_CONFIG in ev.configs and self.elr_on and topic not in cv.topics_queued_for_deletion:
            for key in self.partitions_of(topic):
                out.partition(Action.CLEAR_ELR, key)
        if self.config.rules.elects_unclean_at_config_change and self.unclean_allowed(topic) and not was_unclean:
            self._try_elections(out, self.partitions_of(topic))

    def _try_elections(self, out: _Fanout, keys: Iterable[Key]) -> None:
        """triggerOnlinePartitionStateChange of `keys`: those New or Offline, of a topic not being deleted, elect."""
        for key in keys:
            rec = self.partitions[key]
            if rec.state in (PartitionState.NEW, PartitionState.OFFLINE) and not rec.queued_for_deletion:
                out.partition(Action.TRY_ELECTION, key)

    # -- admin elections and reassignments -------------------------------------------------------------
    def _on_reassign_partitions(self, ev: ReassignPartitions, out: _Fanout) -> None:
        for move in ev.partitions:
            out.partition(Action.REASSIGN, (move.topic, move.partition), replicas=move.replicas,
                          through_znode=ev.through_znode)

    def _on_elect_leaders(self, ev: ElectLeaders, out: _Fanout) -> None:
        keys = sorted(self.partitions) if ev.partitions is None else [(r.topic, r.partition) for r in ev.partitions]
        unclean = ev.election_type is ElectionType.UNCLEAN
        for key in keys:
            if unclean:
                out.partition(Action.ELECT_UNCLEAN, key, unclean_allowed=True)
            else:
                out.partition(Action.ELECT_PREFERRED, key)

    def _on_leader_imbalance_check(self, out: _Fanout) -> None:
        """checkAndTriggerAutoLeaderRebalance, on the partition records as of this event."""
        if not self.config.auto_leader_rebalance_enable:
            out.cluster("auto.leader.rebalance.enable=false: no check", Outcome.NO_OP)
            return
        if self.config.rules.rebalance_batch is not None:
            self._rebalance_every_partition(out, self.config.rules.rebalance_batch)
            return
        threshold = self.config.leader_imbalance_per_broker_percentage / 100
        live = self.cluster.live_brokers
        by_preferred: dict[int, list[tuple[Key, PartitionRecord]]] = {}
        for key, rec in sorted(self.partitions.items()):
            if rec.replicas and not rec.queued_for_deletion:
                by_preferred.setdefault(rec.replicas[0], []).append((key, rec))
        reports = []
        # Before KAFKA-10149 a reassignment in progress anywhere holds every election back.
        held_back = rebalance_waits_for_reassignments(self.config.release) and any(
            r.reassignment_in_progress for r in self.partitions.values())
        for broker, hosted in sorted(by_preferred.items()):
            not_preferred = [(k, r) for k, r in hosted if r.has_leader_and_isr and r.leader != broker]
            ratio = len(not_preferred) / len(hosted)
            if ratio <= threshold:
                continue
            candidates = [] if held_back else [k for k, r in not_preferred if broker in live and broker in r.isr]
            reports.append(f"broker {broker} leads {len(hosted) - len(not_preferred)}/{len(hosted)} of its "
                           f"preferred partitions (imbalance {ratio:.0%}): {len(candidates)} preferred election(s)")
            for key in candidates:
                out.partition(Action.ELECT_PREFERRED, key)
        out.cluster("; ".join(reports) if reports else
                    f"no broker above leader.imbalance.per.broker.percentage="
                    f"{self.config.leader_imbalance_per_broker_percentage}")


    def _rebalance_every_partition(self, out: _Fanout, batch: int) -> None:
        """KRaft: a preferred election for every partition not led by its preferred replica, if that replica
        can lead (live and in the ISR), at most `batch` per run."""
        live = self.cluster.live_brokers
        keys = [k for k, r in sorted(self.partitions.items())
                if r.replicas and r.has_leader_and_isr and not r.queued_for_deletion and r.leader != r.replicas[0]
                and r.replicas[0] in live and r.replicas[0] in r.isr][:batch]
        for key in keys:
            out.partition(Action.ELECT_PREFERRED, key)
        out.cluster(f"{len(keys)} partition(s) not led by their preferred replica: preferred election(s)")


def _listed(ids: Iterable[int]) -> str:
    return ", ".join(map(str, ids))


def _names(keys: Iterable[Key], limit: int = 20) -> str:
    keys = list(keys)
    text = ", ".join(f"{t}-{p}" for t, p in keys[:limit])
    return text + (f" (+{len(keys) - limit} more)" if len(keys) > limit else "") if keys else "none"


def _checked_assignment(assignment: Mapping[str, tuple[int, ...]], first_id: int, replication_factor: int | None,
                        id_error: Error) -> list[tuple[int, ...]]:
    """Partition ids must continue from `first_id` without gaps; replica lists must be non-empty, distinct,
    non-negative, and all of one size."""
    ids = sorted(int(k) for k in assignment)
    if ids != list(range(first_id, first_id + len(ids))):
        raise Rejection(id_error, f"partition ids {ids} must be consecutive from {first_id}")
    lists = [tuple(assignment[str(i)]) for i in ids]
    for i, replicas in zip(ids, lists, strict=True):
        if not replicas or len(set(replicas)) != len(replicas) or any(r < 0 for r in replicas):
            raise Rejection(Error.INVALID_REPLICA_ASSIGNMENT,
                            f"partition {i}: replicas {list(replicas)} must be non-empty, distinct and >= 0")
    sizes = {len(r) for r in lists} | ({replication_factor} if replication_factor else set())
    if len(sizes) > 1:
        raise Rejection(Error.INVALID_REPLICA_ASSIGNMENT, f"inconsistent replication factors {sorted(sizes)}")
    return lists


def _check_configs(configs: Mapping[str, str | None]) -> None:
    value = configs.get(UNCLEAN_CONFIG)
    if value is not None and value.lower() not in ("true", "false"):
        raise Rejection(Error.INVALID_REQUEST, f"{UNCLEAN_CONFIG} must be true or false, got '{value}'")
    value = configs.get(MIN_ISR_CONFIG)
    if value is not None and not (value.isascii() and value.isdigit() and 1 <= int(value) <= 2**31 - 1):
        raise Rejection(Error.INVALID_REQUEST, f"{MIN_ISR_CONFIG} must be an integer >= 1, got '{value}'")
