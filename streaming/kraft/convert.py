"""From KRaft metadata records to isrflow's contract events, and the controller's own decisions.

Pure: a list of `MetadataRecord`s in, `Converted` out (events in log order, the observed partition states, the
counts of what was skipped). A controller operation is a run of records inside one Raft batch; one batch may
hold several operations, so records are split by pattern (see docs/kraft.md):

- REGISTER_BROKER_RECORD with a new incarnation: the broker's new epoch (its own offset); PCRs just before it
  that drop the broker from ISR/ELR belong to the registration.
- BROKER_REGISTRATION_CHANGE fenced=-1: BrokerChange STARTUP, with the elections of leaderless partitions after it.
- PCRs that drop X (ISR, ELR or leadership) then BROKER_REGISTRATION_CHANGE(X, fenced=1): BrokerChange FAILURE.
- BROKER_REGISTRATION_CHANGE(X, inControlledShutdown=1) then PCRs that drop X: CONTROLLED_SHUTDOWN.
- any other PCR stands alone: ISR only -> IsrChange from the leader; leader only -> ElectLeaders PREFERRED;
  `isr:[x], leader:x, leaderRecoveryState:1` -> ElectLeaders UNCLEAN; replicas/adding/removing -> ReassignPartitions
  (start, cancel, or completion, which the leader's AlterPartition triggers).
- the state before the first event (a snapshot's records, then the log's records before `start`: a window's start
  or the snapshot's end offset) -> read as state only, then BrokerChange STARTUP of each unfenced broker and one
  PartitionSnapshot per partition (leader, ISR, epochs as they stand, the topic's configs), at offset `start - 1`:
  they seed the state and decide nothing.
- TOPIC_RECORD [+ CONFIG_RECORD] + PARTITION_RECORDs -> CreateTopic; PARTITION_RECORD alone -> CreatePartitions;
  REMOVE_TOPIC_RECORD -> DeleteTopic; CONFIG_RECORD -> AlterTopicConfig (a cluster default goes to every topic
  without its own value; min.insync.replicas to every topic, whose ELR its ClearElrRecord clears).
- FEATURE_LEVEL_RECORD (metadata.version among them) -> UpdateFeatures at its offset; a snapshot's levels -> one
  UpdateFeatures before its other seeds.

Every partition change is also kept as the controller's observed state, with epochs computed by KRaft's merge
rules: leader_epoch +1 iff the change sets `leader`; partition_epoch +1 on every PartitionChangeRecord.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from streaming.kraft.directories import assigning_broker, assignment, log_dirs, supported_metadata_version
from streaming.kraft.metadatalog import TRANSACTION_MARKERS, MetadataRecord
from streaming.kraft.views import (
    NO_LEADER,
    Broker,
    Change,
    Converted,
    PartitionView,
    dropping,
    reassignment_target,
    topic_id_text,
)

TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
RECOVERY = {0: "RECOVERED", 1: "RECOVERING"}
SEED_CHUNK = 10_000  # a snapshot's seed events handed on at a time (`batches`)
# Cluster-default configs (broker resource "") the rules read, handed to each topic without its own value.
MIN_ISR = "min.insync.replicas"
INHERITED = frozenset({MIN_ISR, "unclean.leader.election.enable"})
# Records that carry state the converter needs. Others (producer ids, ACLs, quotas, controller registrations,
# no-ops, delegation tokens, ...) are counted and skipped.
MODELLED = frozenset({
    "REGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD", "UNREGISTER_BROKER_RECORD",
    "FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD", "TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_CHANGE_RECORD",
    "REMOVE_TOPIC_RECORD", "CONFIG_RECORD", "CLEAR_ELR_RECORD", "FEATURE_LEVEL_RECORD", "REGISTER_CONTROLLER_RECORD",
    *TRANSACTION_MARKERS})


class Converter:
    """Feed records in log order (`feed`); read `result`.

    `start`: the first log offset whose records are events. Everything before it (a snapshot's records, then the
    log's records before `start`) is state only: converted for what it leaves behind, its events and observed
    changes dropped; once it is read, that state becomes the seed events at `start - 1`, which decide nothing.
    The same holds for a log that begins at a snapshot (`start` = its end offset), a window of the history
    (`start` = the window's first offset) and a follower that resumes after the last offset it published:
    `Converter(start).feed(state)` seeds, a later `feed` of the records from `start` on converts them."""

    def __init__(self, start: int | None = None) -> None:
        self.result = Converted()
        self.start = start
        self._unseeded: MetadataRecord | None = None  # the last record of a state read and not seeded yet
        self.topic_names: dict[str, str] = {}  # topic id -> name
        self.partitions: dict[tuple[str, int], PartitionView] = {}
        self.brokers: dict[int, Broker] = {}
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.cluster_configs: dict[str, str] = {}
        self.features: dict[str, int] = {}
        self.controller_levels: dict[int, int] = {}  # controller id -> the newest metadata.version it supports
        # topic -> its last min.insync.replicas change (AlterTopicConfig event id): the cause of a ClearElrRecord.
        self._min_isr_events: dict[str, str] = {}
        self._creating: tuple[MetadataRecord, str, dict[str, str], dict[str, list[int]]] | None = None

    # ---- output -----------------------------------------------------------------------------------

    def _event(self, record: MetadataRecord, type_: str, id_suffix: str = "", **fields: Any) -> dict[str, Any]:
        ts = datetime.fromtimestamp(max(record.create_time, 0) / 1000, UTC).isoformat(timespec="milliseconds")
        event = {"type": type_, "event_id": f"kraft-{record.offset}{id_suffix}", "ts": ts.replace("+00:00", "Z"),
                 "controller_epoch": max(record.epoch, 0), **fields}
        self.result.events.append(event)
        return event

    def _observe(self, change: Change, cause: str, event_id: str | None) -> dict[str, Any]:
        v = change.after
        row = {
            "topic": change.key[0], "partition": change.key[1], "leader": v.leader, "isr": list(v.isr),
            "leader_epoch": v.leader_epoch, "partition_epoch": v.partition_epoch, "replicas": list(v.replicas),
            "adding_replicas": list(v.adding), "removing_replicas": list(v.removing),
            "leader_recovery_state": RECOVERY.get(v.leader_recovery_state, str(v.leader_recovery_state)),
            "eligible_leader_replicas": list(v.elr), "last_known_elr": list(v.last_known_elr),
            "directories": list(v.directories),
            "source_offset": change.record.offset, "cause": cause, "cause_event_id": event_id,
            "decision": change.before.leader != v.leader or not set(change.before.isr) <= set(v.isr),
        }
        self.result.observed.append(row)
        return row

    # ---- input ------------------------------------------------------------------------------------

    def _state(self, r: MetadataRecord) -> bool:
        return r.snapshot or (self.start is not None and r.offset < self.start)

    def feed(self, records: Iterable[MetadataRecord]) -> Converted:
        for _ in self.batches(records):
            pass
        return self.result

    def batches(self, records: Iterable[MetadataRecord]) -> Iterator[None]:
        """`feed`, pausing after each batch it converts: an operation is one batch, so what `result` holds then
        (its events in offset order, see `convert`) is all the batches so far make, and the caller may take it."""
        batch: list[MetadataRecord] = []
        for r in records:
            if batch and (r.batch != batch[0].batch or r.snapshot != batch[0].snapshot
                          or self._state(r) != self._state(batch[0])):
                self._convert(batch)
                yield
                batch = []
            if not self._state(r):
                yield from self._seed(r.offset)
            batch.append(r)
        if batch:
            self._convert(batch)
        yield from self._seed(None)
        yield

    def _convert(self, batch: list[MetadataRecord]) -> None:
        if batch[0].snapshot or not self._state(batch[0]):
            self._batch(batch)
            return
        # Log records before `start`: the usual conversion, for the state it leaves; what they decided is in the
        # seed, so their events and observed changes are dropped.
        kept, self.result = self.result, Converted()
        try:
            self._batch(batch)
        finally:
            read, self.result = self.result, kept
        self.result.unknown += read.unknown
        self.result.features = dict(self.features)
        self._unseeded = batch[-1]

    def _seed(self, next_offset: int | None) -> Iterator[None]:
        """The state read so far as events, once read, in an order that decides nothing: the live brokers first
        (no partition exists yet), then each partition as it stands; pausing every SEED_CHUNK events, so that a
        snapshot of a million partitions is not a million event dicts at once."""
        last, self._unseeded = self._unseeded, None
        if last is None:
            return
        end = self.start if self.start is not None else next_offset
        at = replace(last, offset=last.offset if end is None else end - 1)
        self._update_features(at, dict(self.features), "-snapshot-features")
        n = 0
        for controller_id, level in sorted(self.controller_levels.items()):
            self._event(at, "ControllerRegistration", f"-snapshot-{n}", controller_id=controller_id,
                        max_metadata_version=level)
            n += 1
        for broker_id, broker in sorted(self.brokers.items()):
            if broker.log_dirs or broker.max_level is not None:
                self._registration(at, broker_id, broker, f"-snapshot-{n}")
                n += 1
        for broker_id, broker in sorted(self.brokers.items()):
            changes = [] if broker.fenced else ["STARTUP", *(["CONTROLLED_SHUTDOWN"] if broker.in_controlled_shutdown
                                                               else [])]
            for change in changes:
                self._event(at, "BrokerChange", f"-snapshot-{n}", broker_id=broker_id, change=change,
                            broker_epoch=broker.epoch)
                n += 1
        for (topic, partition), v in sorted(self.partitions.items()):
            configs = {**self.cluster_configs, **self.topic_configs.get(topic, {})}
            self._event(at, "PartitionSnapshot", f"-snapshot-{n}", topic=topic, partition=partition,
                        replicas=list(v.replicas), isr=list(v.isr), leader=v.leader, leader_epoch=v.leader_epoch,
                        partition_epoch=v.partition_epoch,
                        leader_recovery_state=RECOVERY.get(v.leader_recovery_state, "RECOVERED"),
                        adding_replicas=list(v.adding), removing_replicas=list(v.removing),
                        **({"configs": configs} if configs else {}),
                        **({"eligible_leader_replicas": list(v.elr)} if v.elr else {}),
                        **({"last_known_elr": list(v.last_known_elr)} if v.last_known_elr else {}),
                        directories=list(v.directories))
            n += 1
            if len(self.result.events) >= SEED_CHUNK:
                yield

    def _batch(self, records: Sequence[MetadataRecord]) -> None:
        pending: list[Change] = []  # PCRs not yet given to an operation
        after: tuple[str, int, list[Change], dict[str, Any]] | None = None  # an open STARTUP/CS
        for r in records:
            if r.type not in MODELLED:
                self.result.unknown[r.type] += 1
                continue
            if r.snapshot:
                self._snapshot_record(r)
                continue
            if r.type == "PARTITION_CHANGE_RECORD":
                change = self._apply_change(r)
                if change is None:
                    continue
                if after is not None and self._belongs(after, change):
                    after[2].append(change)
                else:
                    pending.append(change)
                continue
            if r.type not in ("PARTITION_RECORD", "CONFIG_RECORD", "CLEAR_ELR_RECORD"):
                self._finish_create()  # a creation is TOPIC_RECORD [+ CONFIG, CLEAR_ELR] + PARTITION_RECORDs
            if r.type == "BROKER_REGISTRATION_CHANGE_RECORD" or r.type in ("FENCE_BROKER_RECORD",
                                                                             "UNFENCE_BROKER_RECORD"):
                after = self._close(after)
                after = self._registration_change(r, pending)
                pending = []
            elif r.type == "REGISTER_BROKER_RECORD":
                pending = self._register(r, pending)
            else:
                self._standalone(pending)
                pending = []
                self._other(r)
        self._finish_create()
        self._close(after)
        self._standalone(pending)

    # ---- brokers ----------------------------------------------------------------------------------

    def _register(self, r: MetadataRecord, pending: list[Change]) -> list[Change]:
        d = r.data
        broker_id, incarnation = d["brokerId"], d.get("incarnationId", "")
        known = self.brokers.get(broker_id)
        if known is not None and known.incarnation == incarnation:
            # An amended registration of the same process keeps its epoch.
            known.fenced = bool(d.get("fenced", known.fenced))
            if log_dirs(d) != known.log_dirs:
                known.log_dirs = log_dirs(d)
                self._registration(r, broker_id, known)
            return pending
        broker = Broker(d.get("brokerEpoch", r.offset), incarnation, bool(d.get("fenced", True)),
                        bool(d.get("inControlledShutdown", False)), log_dirs(d), supported_metadata_version(d))
        self.brokers[broker_id] = broker
        if broker.log_dirs or broker.max_level is not None:
            self._registration(r, broker_id, broker)
        # A broker back after an unclean shutdown is first removed from ISR and ELR (the broker is still fenced);
        # its STARTUP event says so and becomes the cause of these changes.
        mine, others = dropping(pending, broker_id)
        broker.unclean_registration = [self._observe(c, "BrokerRegistration", None) for c in mine]
        return others

    def _registration(self, r: MetadataRecord, broker_id: int, broker: Broker, id_suffix: str = "") -> None:
        level = {} if broker.max_level is None else {"max_metadata_version": broker.max_level}
        self._event(r, "BrokerRegistration", id_suffix, broker_id=broker_id, broker_epoch=broker.epoch,
                    log_dirs=list(broker.log_dirs), **level)

    def _registration_change(self, r: MetadataRecord, pending: list[Change]) -> tuple[str, int, list[Change],
                                                                                        dict[str, Any]] | None:
        d = r.data
        broker_id = d.get("brokerId", d.get("id"))
        broker = self.brokers.setdefault(broker_id, Broker(d.get("brokerEpoch", d.get("epoch", r.offset)), ""))
        fenced = 1 if r.type == "FENCE_BROKER_RECORD" else -1 if r.type == "UNFENCE_BROKER_RECORD" else \
            d.get("fenced", 0)
        if d.get("inControlledShutdown", 0) == 1:
            self._standalone(pending)
            broker.in_controlled_shutdown = True
            event = self._event(r, "BrokerChange", broker_id=broker_id, change="CONTROLLED_SHUTDOWN",
                                broker_epoch=broker.epoch)
            return "CONTROLLED_SHUTDOWN", broker_id, [], event
        if fenced == 1:
            mine, others = dropping(pending, broker_id)
            self._standalone(others)
            was_live = not broker.fenced
            broker.fenced, broker.in_controlled_shutdown = True, False
            if was_live or mine:
                event = self._event(r, "BrokerChange", broker_id=broker_id, change="FAILURE",
                                    broker_epoch=broker.epoch)
                for c in mine:
                    self._observe(c, "BrokerChange", event["event_id"])
            return None
        if fenced == 0 and "logDirs" in d:
            self._log_dirs_offline(r, broker_id, broker, pending)
            return None
        self._standalone(pending)
        if fenced == -1:
            broker.fenced = False
            unclean = {"unclean_shutdown": True} if broker.unclean_registration else {}
            event = self._event(r, "BrokerChange", broker_id=broker_id, change="STARTUP", broker_epoch=broker.epoch,
                                **unclean)
            for row in broker.unclean_registration:
                row.update(cause="BrokerChange", cause_event_id=event["event_id"])
            broker.unclean_registration = []
            return "STARTUP", broker_id, [], event
        return None

    def _log_dirs_offline(self, r: MetadataRecord, broker_id: int, broker: Broker, pending: list[Change]) -> None:
        """A heartbeat's offline log dirs (handleDirectoriesOffline): the changes just before that drop the broker,
        then its registration without those dirs."""
        offline = [x for x in broker.log_dirs if x not in r.data["logDirs"]]
        broker.log_dirs = list(r.data["logDirs"])
        # Only the partitions with the broker's replica in an offline dir are its changes: one Raft batch may also
        # hold another operation's, e.g. the leader's AlterPartition completing a reassignment off this broker.
        mine, others = dropping(pending, broker_id, offline)
        self._standalone(others)
        if offline:
            event = self._event(r, "LogDirsOffline", broker_id=broker_id, broker_epoch=broker.epoch,
                                log_dirs=offline)
            for c in mine:
                self._observe(c, "LogDirsOffline", event["event_id"])
        else:
            self._standalone(mine)

    @staticmethod
    def _belongs(after: tuple[str, int, list[Change], dict[str, Any]], c: Change) -> bool:
        kind, broker_id = after[0], after[1]
        if kind == "STARTUP":
            return c.before.leader == NO_LEADER and c.after.leader != NO_LEADER
        return c.before.drops(c.after, broker_id)

    def _close(self, after: tuple[str, int, list[Change], dict[str, Any]] | None) -> None:
        if after is not None:
            for c in after[2]:
                self._observe(c, "BrokerChange", after[3]["event_id"])

    # ---- partitions -------------------------------------------------------------------------------

    def _apply_change(self, r: MetadataRecord) -> Change | None:
        name = self.topic_names.get(topic_id_text(r.data["topicId"]))
        key = (name, r.data["partitionId"]) if name is not None else None
        before = self.partitions.get(key) if key else None
        if key is None or before is None:
            self.result.unexplained.append(r.offset)
            return None
        after = before.merge(r.data)
        self.partitions[key] = after
        return Change(r, key, before, after)

    def _standalone(self, changes: list[Change]) -> None:
        """PCRs no broker record explains, in order; consecutive elections of one kind make one event, and so do
        consecutive directory assignments of one broker."""
        run: list[Change] = []
        run_group: str | int | None = None  # the run's election type, or the broker assigning directories
        for c in changes:
            kind = self._kind(c)
            broker = assigning_broker(c.record.data, c.before, c.after) if kind == "UNEXPLAINED" else None
            group = broker if broker is not None else kind if kind in ("PREFERRED", "UNCLEAN") else None
            if run and group != run_group:
                self._run(run_group, run)
                run = []
            if group is None:
                self._single(kind, c)
            else:
                run.append(c)
                run_group = group
        if run:
            self._run(run_group, run)

    def _run(self, group: str | int | None, run: list[Change]) -> None:
        if isinstance(group, int):
            self._assign_directories(group, run)
        else:
            self._elect(str(group), run)

    def _assign_directories(self, broker_id: int, run: list[Change]) -> None:
        broker = self.brokers.get(broker_id)
        event = self._event(run[0].record, "AssignReplicasToDirs", broker_id=broker_id,
                            broker_epoch=broker.epoch if broker else 0,
                            assignments=[assignment(*c.key, broker_id, c.after) for c in run])
        for c in run:
            self._observe(c, "AssignReplicasToDirs", event["event_id"])

    @staticmethod
    def _kind(c: Change) -> str:
        d = c.record.data
        # Only the leader's AlterPartition sets a partition RECOVERED (ReplicationControlManager.alterPartition is the
        # one caller of setTargetLeaderRecoveryState), also when the ISR it brings completes a reassignment.
        if d.get("leaderRecoveryState") == 0 and c.before.leader_recovery_state == 1:
            return "ISR"
        if any(k in d for k in ("replicas", "addingReplicas", "removingReplicas")) and (
                c.before.replicas != c.after.replicas or c.before.adding or c.before.removing or c.after.adding
                or c.after.removing):
            b, a = c.before, c.after
            # The leader's AlterPartition completed a reassignment in progress: the replicas became its target.
            # Anything else is the admin's: a start (which may complete at once), or a cancel, whose revert
            # to the original replicas may shrink the ISR too (PartitionReassignmentRevert).
            completed = (b.adding or b.removing) and not a.adding and not a.removing and \
                a.replicas == tuple(r for r in b.replicas if r not in b.removing)
            if completed and "isr" in d and set(a.isr) != set(b.isr):
                return "ISR"
            return "REASSIGN"
        # An admin election that elected nobody while the ELR feature is off writes only the emptied ELR the
        # partition kept (the admin's type is not in the record; the kraft rules treat both types alike there).
        if set(d) <= {"partitionId", "topicId", "eligibleLeaderReplicas", "lastKnownElr"} and \
                c.before.elr and not c.after.elr and c.before.leader == NO_LEADER:
            return "UNCLEAN"
        # Below metadata version 3.2-IV0 (or when already RECOVERING) an unclean election sets no recovery state.
        if "isr" in d and "leader" in d and list(d["isr"]) == [d["leader"]] and (
                d.get("leaderRecoveryState") == 1 or d["leader"] not in c.before.isr):
            return "UNCLEAN"
        if "leader" in d and "isr" not in d and d["leader"] != NO_LEADER:
            return "PREFERRED"
        # Below metadata version 3.6-IV0 an ISR shrink also sets `leader`, to the same leader (a leader epoch bump).
        if "isr" in d and d.get("leader", c.before.leader) == c.before.leader:
            return "ISR"
        return "UNEXPLAINED"

    def _elect(self, kind: str, run: list[Change]) -> None:
        event = self._event(run[0].record, "ElectLeaders", election_type=kind,
                            partitions=[{"topic": c.key[0], "partition": c.key[1]} for c in run])
        for c in run:
            self._observe(c, "ElectLeaders", event["event_id"])

    def _single(self, kind: str, c: Change) -> None:
        topic, partition = c.key
        if kind == "ISR":
            b = c.before
            leader = self.brokers.get(b.leader)
            # What the leader asked for. When the change also completed a reassignment, the controller dropped
            # the removed replicas itself: the request was the old ISR plus the replicas that caught up.
            requested = list(c.after.isr) if c.after.replicas == b.replicas else \
                [*b.isr, *(r for r in c.after.isr if r not in b.isr)]
            event = self._event(
                c.record, "IsrChange", topic=topic, partition=partition, broker_id=max(b.leader, 0),
                broker_epoch=leader.epoch if leader else 0, leader_epoch=b.leader_epoch,
                partition_epoch=b.partition_epoch, isr=requested,
                leader_recovery_state=RECOVERY.get(c.after.leader_recovery_state, "RECOVERED"))
            self._observe(c, "IsrChange", event["event_id"])
        elif kind == "REASSIGN":
            b, a = c.before, c.after
            cancelled = (b.adding or b.removing) and not a.adding and not a.removing and \
                a.replicas == tuple(r for r in b.replicas if r not in b.adding)
            replicas = None if cancelled else reassignment_target(c.record.data, a)
            event = self._event(c.record, "ReassignPartitions",
                                partitions=[{"topic": topic, "partition": partition, "replicas": replicas}])
            self._observe(c, "ReassignPartitions", event["event_id"])
        else:
            self.result.unexplained.append(c.record.offset)
            self._observe(c, "Unexplained", None)

    # ---- topics, configs, features ----------------------------------------------------------------

    def _finish_create(self) -> None:
        if self._creating is None:
            return
        record, name, configs, assignment = self._creating
        self._creating = None
        # The cluster defaults the shadow controller reads, where the topic sets none: the event stream has no
        # cluster-config event, so each topic carries them.
        configs = {**{k: v for k, v in self.cluster_configs.items() if k in INHERITED}, **configs}
        fields: dict[str, Any] = {"topic": name, "assignment": assignment}
        if configs:
            fields["configs"] = configs
        self._event(record, "CreateTopic", **fields)

    def _other(self, r: MetadataRecord) -> None:
        d = r.data
        if r.type == "TOPIC_RECORD":
            self.topic_names[topic_id_text(d["topicId"])] = d["name"]
            self.topic_configs.setdefault(d["name"], {})
            self._creating = (r, d["name"], {}, {})
        elif r.type == "PARTITION_RECORD":
            self._partition_record(r)
        elif r.type == "CONFIG_RECORD":
            self._config(r)
        elif r.type == "REMOVE_TOPIC_RECORD":
            name = self.topic_names.pop(topic_id_text(d["topicId"]), None)
            if name is not None:
                for key in [k for k in self.partitions if k[0] == name]:
                    del self.partitions[key]
                self.topic_configs.pop(name, None)
                self._event(r, "DeleteTopic", topic=name)
        elif r.type == "UNREGISTER_BROKER_RECORD":
            self.brokers.pop(d.get("brokerId"), None)
        elif r.type == "FEATURE_LEVEL_RECORD":
            self.features[d["name"]] = d.get("featureLevel", 0)
            self.result.features = dict(self.features)
            self._update_features(r, {d["name"]: d.get("featureLevel", 0)})
        elif r.type == "CLEAR_ELR_RECORD":
            self._clear_elr(r)
        elif r.type == "REGISTER_CONTROLLER_RECORD":
            self._controller_registration(r, d)
        # Transaction markers: nothing to convert.

    def _controller_registration(self, r: MetadataRecord, d: dict[str, Any], id_suffix: str = "") -> None:
        level = supported_metadata_version(d)
        if level is not None:
            self.controller_levels[d["controllerId"]] = level
            self._event(r, "ControllerRegistration", id_suffix, controller_id=d["controllerId"],
                        max_metadata_version=level)

    def _update_features(self, r: MetadataRecord, levels: dict[str, int], id_suffix: str = "") -> None:
        """The levels in force from `r`'s offset on: the rules follow metadata.version and the ELR feature there."""
        if levels:
            self._event(r, "UpdateFeatures", id_suffix, features=levels)
            self.result.feature_changes.extend((r.offset, name, level) for name, level in sorted(levels.items()))

    def _clear_elr(self, r: MetadataRecord) -> None:
        """ClearElrRecord (min.insync.replicas changed; "" = every topic): partitions with an ELR or a last known
        leader lose both, partition epoch + 1 (ReplicationControlManager.removeTopicElrs); the cause is the
        config change that came with it."""
        topic = r.data.get("topicName", "")
        for key, view in list(self.partitions.items()):
            if (topic and key[0] != topic) or not (view.elr or view.last_known_elr):
                continue
            after = replace(view, elr=(), last_known_elr=(), partition_epoch=view.partition_epoch + 1)
            self.partitions[key] = after
            self._observe(Change(r, key, view, after), "AlterTopicConfig", self._min_isr_events.get(key[0]))

    def _partition_record(self, r: MetadataRecord) -> None:
        d = r.data
        name = self.topic_names.get(topic_id_text(d["topicId"]))
        if name is None:
            self.result.unexplained.append(r.offset)
            return
        view = PartitionView.from_record(d)
        key = (name, d["partitionId"])
        self.partitions[key] = view
        creating = self._creating
        if creating is not None and creating[1] == name:
            creating[3][str(d["partitionId"])] = list(view.replicas)
            event_id = f"kraft-{creating[0].offset}"
        else:
            event = self._event(r, "CreatePartitions", topic=name,
                                assignment={str(d["partitionId"]): list(view.replicas)})
            event_id = event["event_id"]
        self._observe(Change(r, key, replace(view, leader=NO_LEADER), view),
                      "CreateTopic" if creating is not None else "CreatePartitions", event_id)

    def _config(self, r: MetadataRecord) -> None:
        d = r.data
        name, value, resource = d["name"], d.get("value"), d.get("resourceName", "")
        if d.get("resourceType") == TOPIC_RESOURCE:
            configs = self.topic_configs.setdefault(resource, {})
            if value is None:
                configs.pop(name, None)
            else:
                configs[name] = value
            if self._creating is not None and self._creating[1] == resource and value is not None:
                self._creating[2][name] = value
            elif resource in self.topic_configs:
                # A deleted topic value falls back to the cluster default the log set, if any.
                fallback = self.cluster_configs.get(name) if name in INHERITED else None
                event = self._event(r, "AlterTopicConfig", topic=resource,
                                    configs={name: value if value is not None else fallback})
                if name == MIN_ISR:
                    self._min_isr_events[resource] = event["event_id"]
        elif d.get("resourceType") == BROKER_RESOURCE and resource == "":
            self.cluster_configs = {k: v for k, v in {**self.cluster_configs, name: value}.items() if v is not None}
            for topic, own in sorted(self.topic_configs.items()):  # by name: a snapshot's order is not the log's
                # A min.insync.replicas default clears every topic's ELR (ClearElrRecord ""): own values again too.
                if name not in own or name == MIN_ISR:
                    kept = {name: own.get(name, value)}
                    event = self._event(r, "AlterTopicConfig", f"-{topic}", topic=topic, configs=kept)
                    if name == MIN_ISR:
                        self._min_isr_events[topic] = event["event_id"]

    def _snapshot_record(self, r: MetadataRecord) -> None:
        """A snapshot is state, not history: it seeds the view, then the PartitionSnapshot events (`_seed`)."""
        self.result.snapshot_state = True
        self._unseeded = r
        d = r.data
        if r.type == "TOPIC_RECORD":
            self.topic_names[topic_id_text(d["topicId"])] = d["name"]
            self.topic_configs.setdefault(d["name"], {})
        elif r.type == "PARTITION_RECORD":
            name = self.topic_names.get(topic_id_text(d["topicId"]))
            if name is not None:
                self.partitions[(name, d["partitionId"])] = PartitionView.from_record(d)
        elif r.type == "REGISTER_BROKER_RECORD":
            self.brokers[d["brokerId"]] = Broker(d.get("brokerEpoch", 0), d.get("incarnationId", ""),
                                                 bool(d.get("fenced", True)), bool(d.get("inControlledShutdown")),
                                                 log_dirs(d), supported_metadata_version(d))
        elif r.type == "CONFIG_RECORD" and d.get("value") is not None:
            target = self.topic_configs.setdefault(d["resourceName"], {}) if d.get("resourceType") == TOPIC_RESOURCE \
                else self.cluster_configs
            target[d["name"]] = d["value"]
        elif r.type == "FEATURE_LEVEL_RECORD":
            self.features[d["name"]] = d.get("featureLevel", 0)
            self.result.features = dict(self.features)
        elif r.type == "REGISTER_CONTROLLER_RECORD" and (level := supported_metadata_version(d)) is not None:
            self.controller_levels[d["controllerId"]] = level


def event_offset(event: dict[str, Any]) -> int:
    """The metadata log offset an event was read at (its id is `kraft-<offset>[-<topic>]`)."""
    return int(event["event_id"].split("-")[1])


def convert(records: Iterable[MetadataRecord], start: int | None = None) -> Converted:
    """`records` as events from log offset `start` on, the records before it read as state (see `Converter`)."""
    result = Converter(start).feed(records)
    # Operations are recognised at their last record (a FAILURE at its fence): put events in log order.
    result.events.sort(key=event_offset)
    return result
