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
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from schemas import codec
from schemas.events import ControllerEvent
from statemachine.errors import Error, Outcome
from statemachine.partition import apply_command
from statemachine.record import Action, Applied, Command, PartitionRecord
from statemachine.states import PartitionState

UNCLEAN_CONFIG = "unclean.leader.election.enable"
ADMIN_EVENTS = frozenset(
    {"CreateTopic", "CreatePartitions", "DeleteTopic", "ReassignPartitions", "ElectLeaders", "AlterTopicConfig"})
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
    # An event_id applied at offset o makes any event with the same id at an offset up to o + this
    # window a duplicate (rejected). Older ids are forgotten, so the controller's memory stays bounded.
    duplicate_window: int = 100_000


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


class _Rejected(Exception):
    def __init__(self, error: Error, message: str) -> None:
        super().__init__(message)
        self.error, self.message = error, message


class _Fanout:
    """Collects one event's commands, applying each to the controller's partition records at once."""

    def __init__(self, controller: Controller, event: ControllerEvent, source_offset: int) -> None:
        self.controller = controller
        self.event = event
        self.source_offset = source_offset
        self.handled: list[Handled] = []
        # "first": the log's first controller epoch was adopted; "takeover": a failover ran.
        self.failover: str | None = None
        self._steps: dict[Key, int] = {}
        self._facts: tuple[frozenset[int], frozenset[int]] | None = None

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
        ev = self.event
        command = Command(action=action, event_id=ev.event_id, event_type=ev.type, source_offset=self.source_offset,
                          controller_epoch=self.controller.cluster.controller_epoch, event_ts=ev.ts,
                          principal=ev.principal, live_brokers=live, shutting_down_brokers=shutting_down, **fields)
        partitions = self.controller.partitions
        key = None if command.partition is None else (command.topic, command.partition)
        applied = apply_command(partitions.get(key) if key else None, command)
        if key is not None:
            if applied.record is None:
                partitions.pop(key, None)
            else:
                partitions[key] = applied.record
        self.handled.append(Handled(command, applied))

    def partition(self, action: Action, key: Key, *, unclean_allowed: bool | None = None,
                  **fields: Any) -> None:
        step = self._steps.get(key, 0)
        self._steps[key] = step + 1
        self._emit(action, topic=key[0], partition=key[1], step=step,
                   unclean_allowed=self.controller.unclean_allowed(key[0]) if unclean_allowed is None
                   else unclean_allowed, **fields)

    def cluster(self, message: str, outcome: Outcome = Outcome.ACCEPTED, error: Error | None = None) -> None:
        fields = self.event.fields
        self._emit(Action.CLUSTER, topic=fields.get("topic"), broker_id=fields.get("broker_id"), outcome=outcome,
                   error=error, message=message)

    def reject(self, error: Error, message: str) -> None:
        """Refused before fan-out: on the partition's own row when the event names exactly one."""
        ev = self.event
        if ev.type == "IsrChange":
            self.partition(Action.REJECT, (ev.fields["topic"], ev.fields["partition"]),
                           error=error, message=message)
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

    def partitions_of(self, topic: str) -> list[Key]:
        return [(topic, p) for p in range(self.cluster.topics.get(topic, 0)) if (topic, p) in self.partitions]

    def partitions_on(self, broker: int) -> list[Key]:
        return sorted(k for k, r in self.partitions.items() if broker in r.replicas)

    # -- the entry point -------------------------------------------------------------------------------
    def handle(self, event: ControllerEvent, source_offset: int) -> list[Handled]:
        """Apply one event of the log; returns every command it produced, each with its result."""
        out = _Fanout(self, event, source_offset)
        cv = self.cluster
        try:
            self._check_duplicate(event.event_id, source_offset)
            if event.controller_epoch < cv.controller_epoch:
                raise _Rejected(Error.STALE_CONTROLLER_EPOCH,
                                f"controller epoch {event.controller_epoch} is older than the active "
                                f"{cv.controller_epoch}")
            if event.controller_epoch > cv.controller_epoch:
                self._failover(out)
            if (self.config.super_users is not None and event.type in ADMIN_EVENTS
                    and event.principal not in self.config.super_users):
                raise _Rejected(Error.CLUSTER_AUTHORIZATION_FAILED,
                                f"principal {event.principal} may not issue {event.type}")
            _HANDLERS[event.type](self, out)
        except _Rejected as rejected:
            out.reject(rejected.error, rejected.message)
        if not out.handled:
            out.cluster("nothing to do", Outcome.NO_OP)
        self._finish_deletions(out)
        return out.handled

    def _check_duplicate(self, event_id: str, offset: int) -> None:
        seen, window = self.cluster.seen_event_ids, self.config.duplicate_window
        applied_at = seen.get(event_id)
        if applied_at is not None and offset - applied_at <= window:
            raise _Rejected(Error.DUPLICATE_EVENT, f"event_id {event_id} was already applied at offset "
                                                   f"{applied_at}")
        seen.pop(event_id, None)
        seen[event_id] = offset
        # Forget ids beyond the window, in one pass once the oldest is a whole window behind (amortised O(1)).
        if offset - next(iter(seen.values())) > 2 * window:
            self.cluster.seen_event_ids = {e: o for e, o in seen.items() if offset - o <= window}

    # -- controller epoch ------------------------------------------------------------------------------
    def _failover(self, out: _Fanout) -> None:
        cv, ev = self.cluster, out.event
        first = cv.controller_epoch < 0
        cv.controller_epoch = ev.controller_epoch
        cv.controller_id = ev.fields["controller_id"] if ev.type == "ControllerChange" else -1
        if first:
            out.failover = "first"  # the log's first controller: nothing to take over from
            return
        out.failover = "takeover"
        # A new controller knows nothing of the old one's shutting-down brokers (they retry).
        cv.shutting_down.clear()
        out.facts_changed()
        for key in sorted(self.partitions):
            out.partition(Action.CONTROLLER_FAILOVER, key)
        who = f"controller {cv.controller_id}" if cv.controller_id >= 0 else "a new controller (implicit)"
        out.cluster(f"controller failover: {who} at epoch {cv.controller_epoch}; "
                    f"{len(self.partitions)} partition(s) re-examined")

    def _on_controller_change(self, out: _Fanout) -> None:
        cv = self.cluster
        if out.failover == "first":
            out.cluster(f"controller {cv.controller_id} active at epoch {cv.controller_epoch}")
        elif out.failover is None:
            out.cluster(f"controller epoch {cv.controller_epoch} is already active "
                        f"(controller {cv.controller_id})", Outcome.NO_OP)

    # -- brokers ---------------------------------------------------------------------------------------
    def _on_broker_change(self, out: _Fanout) -> None:
        f = out.event.fields
        broker, epoch = f["broker_id"], f["broker_epoch"]
        {"STARTUP": self._broker_startup, "FAILURE": self._broker_failure,
         "CONTROLLED_SHUTDOWN": self._controlled_shutdown}[f["change"]](out, broker, epoch)

    def _broker_startup(self, out: _Fanout, broker: int, epoch: int) -> None:
        cv = self.cluster
        last = cv.last_broker_epochs.get(broker)
        if last is not None and epoch <= last:
            raise _Rejected(Error.STALE_BROKER_EPOCH,
                            f"broker {broker} registration epoch {epoch} is not newer than {last}")
        cv.last_broker_epochs[broker] = epoch
        hosted = self.partitions_on(broker)
        bounced = broker in cv.broker_epochs
        if bounced:
            # Re-registered without a failure in between: Kafka handles it as a failure then a startup.
            self._unregister(out, broker)
            for key in hosted:
                out.partition(Action.BROKER_FAILURE, key, broker_id=broker)
        cv.broker_epochs[broker] = epoch
        out.facts_changed()
        for key in hosted:
            out.partition(Action.BROKER_STARTUP, key, broker_id=broker)
        out.cluster(f"broker {broker} started with epoch {epoch}" + (" (bounce: failure, then startup)"
                    if bounced else "") + f"; hosts {len(hosted)} partition(s)")

    def _unregister(self, out: _Fanout, broker: int) -> None:
        del self.cluster.broker_epochs[broker]
        self.cluster.shutting_down.discard(broker)
        out.facts_changed()

    def _broker_failure(self, out: _Fanout, broker: int, epoch: int) -> None:
        registered = self.cluster.broker_epochs.get(broker)
        if registered is None:
            raise _Rejected(Error.BROKER_NOT_AVAILABLE, f"broker {broker} is not registered")
        if epoch < registered:
            raise _Rejected(Error.STALE_BROKER_EPOCH,
                            f"failure of broker {broker} epoch {epoch}, but epoch {registered} is registered")
        self._unregister(out, broker)
        hosted = self.partitions_on(broker)
        # Kafka's partitionsWithOfflineLeader also takes in partitions still led by a shutting-down broker
        # (their controlled-shutdown election had failed): they elect now too.
        live = self.cluster.live_brokers
        led_elsewhere = [k for k, r in self.partitions.items()
                         if r.leader >= 0 and r.leader not in live and broker not in r.replicas
                         and not r.queued_for_deletion]
        for key in sorted(hosted + led_elsewhere):
            out.partition(Action.BROKER_FAILURE, key, broker_id=broker)
        offline = [k for k in hosted if k in self.partitions and self.partitions[k].state is PartitionState.OFFLINE]
        out.cluster(f"broker {broker} failed; hosted {len(hosted)} partition(s); {len(offline)} offline: "
                    + _names(offline))

    def _controlled_shutdown(self, out: _Fanout, broker: int, epoch: int) -> None:
        registered = self.cluster.broker_epochs.get(broker)
        if registered is not None and epoch < registered:
            raise _Rejected(Error.STALE_BROKER_EPOCH,
                            f"controlled shutdown of broker {broker} epoch {epoch}, but {registered} is registered")
        if registered is None:
            raise _Rejected(Error.BROKER_NOT_AVAILABLE, f"broker {broker} is not registered")
        self.cluster.shutting_down.add(broker)
        out.facts_changed()
        hosted = self.partitions_on(broker)
        for key in hosted:
            out.partition(Action.CONTROLLED_SHUTDOWN, key, broker_id=broker)
        still_led = [k for k in hosted if k in self.partitions and self.partitions[k].leader == broker]
        out.cluster(f"broker {broker} shutting down; still leads {len(still_led)} partition(s): "
                    + _names(still_led))

    def _on_isr_change(self, out: _Fanout) -> None:
        f = out.event.fields
        registered = self.cluster.broker_epochs.get(f["broker_id"])
        if registered is None or registered != f["broker_epoch"]:
            raise _Rejected(Error.STALE_BROKER_EPOCH,
                            f"sender broker {f['broker_id']} epoch {f['broker_epoch']} is not the registered "
                            f"{registered}")
        out.partition(Action.ISR_CHANGE, (f["topic"], f["partition"]), broker_id=f["broker_id"],
                      isr=tuple(f["isr"]), leader_epoch=f["leader_epoch"], partition_epoch=f["partition_epoch"],
                      leader_recovery_state=f["leader_recovery_state"])

    # -- topics ----------------------------------------------------------------------------------------
    def _on_create_topic(self, out: _Fanout) -> None:
        f, cv = out.event.fields, self.cluster
        topic = f["topic"]
        if not _LEGAL_TOPIC.fullmatch(topic) or topic in (".", ".."):
            raise _Rejected(Error.INVALID_TOPIC_EXCEPTION, f"illegal topic name '{topic}'")
        if topic in cv.topics:
            raise _Rejected(Error.TOPIC_ALREADY_EXISTS, f"topic {topic} already exists"
                            + (" (queued for deletion)" if topic in cv.topics_queued_for_deletion else ""))
        if not f["assignment"]:
            raise _Rejected(Error.INVALID_PARTITIONS, "a topic needs at least one partition")
        assignment = _checked_assignment(f["assignment"], 0, None, Error.INVALID_REPLICA_ASSIGNMENT)
        _check_configs(f["configs"])
        cv.topics[topic] = len(assignment)
        if f["configs"]:
            cv.topic_configs[topic] = dict(f["configs"])
        for p, replicas in enumerate(assignment):
            out.partition(Action.CREATE, (topic, p), replicas=replicas)

    def _on_create_partitions(self, out: _Fanout) -> None:
        f, cv = out.event.fields, self.cluster
        topic = f["topic"]
        if topic not in cv.topics:
            raise _Rejected(Error.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic} does not exist")
        if topic in cv.topics_queued_for_deletion:
            raise _Rejected(Error.INVALID_TOPIC_EXCEPTION, f"topic {topic} is queued for deletion")
        if not f["assignment"]:
            raise _Rejected(Error.INVALID_PARTITIONS, "no partitions to add")
        count = cv.topics[topic]
        first = self.partitions.get((topic, 0))
        rf = len(first.target_replicas) if first else None
        assignment = _checked_assignment(f["assignment"], count, rf, Error.INVALID_PARTITIONS)
        cv.topics[topic] = count + len(assignment)
        for i, replicas in enumerate(assignment):
            out.partition(Action.CREATE, (topic, count + i), replicas=replicas)

    def _on_delete_topic(self, out: _Fanout) -> None:
        topic, cv = out.event.fields["topic"], self.cluster
        if topic not in cv.topics:
            raise _Rejected(Error.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic} does not exist")
        if topic in cv.topics_queued_for_deletion:
            out.cluster(f"topic {topic} is already queued for deletion", Outcome.NO_OP)
            return
        cv.topics_queued_for_deletion.add(topic)
        for key in self.partitions_of(topic):
            out.partition(Action.DELETE, key)

    def _finish_deletions(self, out: _Fanout) -> None:
        cv = self.cluster
        touched = {h.command.topic for h in out.handled if h.command.topic in cv.topics_queued_for_deletion}
        for topic in touched:
            if not self.partitions_of(topic):
                del cv.topics[topic]
                cv.topic_configs.pop(topic, None)
                cv.topics_queued_for_deletion.discard(topic)

    def _on_alter_topic_config(self, out: _Fanout) -> None:
        f, cv = out.event.fields, self.cluster
        topic = f["topic"]
        if topic not in cv.topics:
            raise _Rejected(Error.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic} does not exist")
        _check_configs(f["configs"])
        was_unclean = self.unclean_allowed(topic)
        configs = cv.topic_configs.setdefault(topic, {})
        for name, value in f["configs"].items():
            if value is None:
                configs.pop(name, None)
            else:
                configs[name] = value
        if not configs:
            del cv.topic_configs[topic]
        out.cluster(f"topic {topic} configs: " + ", ".join(f"{k}={v}" for k, v in sorted(f["configs"].items(),
                                                                                           key=str)))
        if self.unclean_allowed(topic) and not was_unclean and topic not in cv.topics_queued_for_deletion:
            for key in self.partitions_of(topic):
                if self.partitions[key].state in (PartitionState.NEW, PartitionState.OFFLINE):
                    out.partition(Action.TRY_ELECTION, key)

    # -- admin elections and reassignments -------------------------------------------------------------
    def _on_reassign_partitions(self, out: _Fanout) -> None:
        for ref in out.event.fields["partitions"]:
            target = ref["replicas"]
            out.partition(Action.REASSIGN, (ref["topic"], ref["partition"]),
                          replicas=None if target is None else tuple(target))

    def _on_elect_leaders(self, out: _Fanout) -> None:
        f = out.event.fields
        refs = f["partitions"]
        keys = sorted(self.partitions) if refs is None else [(r["topic"], r["partition"]) for r in refs]
        unclean = f["election_type"] == "UNCLEAN"
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
        threshold = self.config.leader_imbalance_per_broker_percentage / 100
        live = self.cluster.live_brokers
        by_preferred: dict[int, list[tuple[Key, PartitionRecord]]] = {}
        for key, rec in sorted(self.partitions.items()):
            if rec.replicas and not rec.queued_for_deletion:
                by_preferred.setdefault(rec.replicas[0], []).append((key, rec))
        reports = []
        for broker, hosted in sorted(by_preferred.items()):
            not_preferred = [(k, r) for k, r in hosted if r.has_leader_and_isr and r.leader != broker]
            ratio = len(not_preferred) / len(hosted)
            if ratio <= threshold:
                continue
            candidates = [k for k, r in not_preferred if broker in live and broker in r.isr]
            reports.append(f"broker {broker} leads {len(hosted) - len(not_preferred)}/{len(hosted)} of its "
                           f"preferred partitions (imbalance {ratio:.0%}): {len(candidates)} preferred election(s)")
            for key in candidates:
                out.partition(Action.ELECT_PREFERRED, key)
        out.cluster("; ".join(reports) if reports else
                    f"no broker above leader.imbalance.per.broker.percentage="
                    f"{self.config.leader_imbalance_per_broker_percentage}")


def _names(keys: Iterable[Key], limit: int = 20) -> str:
    keys = list(keys)
    text = ", ".join(f"{t}-{p}" for t, p in keys[:limit])
    return text + (f" (+{len(keys) - limit} more)" if len(keys) > limit else "") if keys else "none"


def _checked_assignment(assignment: dict[str, list[int]], first_id: int, replication_factor: int | None,
                        id_error: Error) -> list[tuple[int, ...]]:
    """Partition ids must continue from `first_id` without gaps; replica lists must be non-empty, distinct,
    non-negative, and all of one size."""
    ids = sorted(int(k) for k in assignment)
    if ids != list(range(first_id, first_id + len(ids))):
        raise _Rejected(id_error, f"partition ids {ids} must be consecutive from {first_id}")
    lists = [tuple(assignment[str(i)]) for i in ids]
    for i, replicas in zip(ids, lists, strict=True):
        if not replicas or len(set(replicas)) != len(replicas) or any(r < 0 for r in replicas):
            raise _Rejected(Error.INVALID_REPLICA_ASSIGNMENT,
                            f"partition {i}: replicas {list(replicas)} must be non-empty, distinct and >= 0")
    sizes = {len(r) for r in lists} | ({replication_factor} if replication_factor else set())
    if len(sizes) > 1:
        raise _Rejected(Error.INVALID_REPLICA_ASSIGNMENT, f"inconsistent replication factors {sorted(sizes)}")
    return lists


def _check_configs(configs: dict[str, str | None]) -> None:
    value = configs.get(UNCLEAN_CONFIG)
    if value is not None and value.lower() not in ("true", "false"):
        raise _Rejected(Error.INVALID_REQUEST, f"{UNCLEAN_CONFIG} must be true or false, got '{value}'")


_HANDLERS = {
    "BrokerChange": Controller._on_broker_change,
    "IsrChange": Controller._on_isr_change,
    "CreateTopic": Controller._on_create_topic,
    "CreatePartitions": Controller._on_create_partitions,
    "DeleteTopic": Controller._on_delete_topic,
    "ReassignPartitions": Controller._on_reassign_partitions,
    "ElectLeaders": Controller._on_elect_leaders,
    "AlterTopicConfig": Controller._on_alter_topic_config,
    "ControllerChange": Controller._on_controller_change,
    "LeaderImbalanceCheck": Controller._on_leader_imbalance_check,
}
