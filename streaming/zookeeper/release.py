"""What a ZooKeeper-mode cluster's own writes say of its inter.broker.protocol.version and of its release.

The protocol, from ZooKeeper's directory (Kafka's BrokerIdZNode, FeatureZNode, TopicPartitionStateZNode and
IsrChangeNotificationHandler at 2.8.2 and 3.9):
- a leader's ISR change announced under /isr_change_notification: below 2.7-IV2 (the importer reads the cluster so,
  level 0);
- a broker registration (/brokers/ids/N) of version 4: below 2.7-IV0 (version 5, with `features`, from 2.7-IV0);
- /feature of version 2: 3.3-IV0 or later (version 1 before; status 0, disabled, below 2.7-IV0);
- a partition state carrying `leader_recovery_state` (an unclean leader RECOVERING, KIP-704): 3.2-IV0 or later.
A registration of version 5 with none of the later signs is a protocol from 2.7-IV2 up to 3.1, whose controllers
decide alike: leaders send AlterIsr, an unclean election writes no recovery state (`IBP_2_7_IV2`). From 3.2-IV0 on
the zk rules decide alike at every level, so nothing is said then and the configured version holds.

The release, from the brokers' server.log files when they are at hand: each broker logs `Kafka version: X` as it
starts (AppInfoParser). Nothing in ZooKeeper names it, but /controller tells the releases before 3.4 (version 1)
from the later ones (version 2, with kraftControllerEpoch, whatever the protocol): those are taken as the last of
their generation, for the policies that differ before 3.4 (statemachine.zk_releases).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from statemachine.features import IBP_2_7_IV2, METADATA_VERSION, ZOOKEEPER_ERA_PROTOCOL, metadata_version_name
from statemachine.zk_releases import KafkaRelease
from streaming.zookeeper.statechange import read_broker_logs
from streaming.zookeeper.txnlog import ZkHistory, ZkSnapshot, ZkTxn

# The releases a directory with no broker log is taken as, by generation.
LAST_2_X = KafkaRelease(2, 8, 2)
LAST_BEFORE_3_4 = KafkaRelease(3, 3, 2)

_REGISTRATION = re.compile(r"^/brokers/ids/\d+$")
_STATE = re.compile(r"^/brokers/topics/[^/]+/partitions/\d+/state$")
_VERSION_LINE = re.compile(r"\] INFO Kafka version: (?P<version>[\w.-]+) \(org\.apache\.kafka\.common\.utils\."
                           r"AppInfoParser\)")


@dataclass(frozen=True)
class ClusterRelease:
    """The protocol's level (statemachine.features; None: nothing says one the zk rules tell apart), the release its
    brokers logged (None: not read), and what said so."""

    metadata_version: int | None
    kafka_version: KafkaRelease | None
    evidence: tuple[str, ...]

    def describe(self) -> str:
        protocol = ("the configured one" if self.metadata_version is None
                    else metadata_version_name(self.metadata_version))
        release = "not named" if self.kafka_version is None else str(self.kafka_version)
        return f"protocol {protocol}, release {release} ({'; '.join(self.evidence) or 'no sign'})"


def _writes(snapshot: ZkSnapshot | None, txns: Iterable[ZkTxn]) -> Iterable[tuple[str, bytes]]:
    """Every znode's data as the snapshot holds it, then as each logged create or setData wrote it."""
    if snapshot is not None:
        for node in snapshot.nodes.values():
            yield node.path, node.data
    for txn in txns:
        for op in txn.ops:
            if op.kind in ("create", "setData") and op.data is not None:
                yield op.path, op.data


def _json(data: bytes) -> dict[str, Any]:
    try:
        value = json.loads(data or b"{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass
class Signs:
    """What the writes show: the registrations' and /feature's versions, /controller's, whether a leader announced
    an ISR change, whether a state carried a recovery state. `add` more writes as they come (the bridge)."""

    registrations: set[int] = field(default_factory=set)
    features: set[int] = field(default_factory=set)
    controllers: set[int] = field(default_factory=set)
    notified: bool = False
    recovering: bool = False

    def add(self, snapshot: ZkSnapshot | None, txns: Iterable[ZkTxn]) -> Signs:
        for path, data in _writes(snapshot, txns):
            if path.startswith("/isr_change_notification/"):
                self.notified = True
            elif _REGISTRATION.match(path):
                self.registrations.add(int(_json(data).get("version", 0)))
            elif path == "/feature":
                self.features.add(int(_json(data).get("version", 0)))
            elif path == "/controller":
                self.controllers.add(int(_json(data).get("version", 0)))
            elif _STATE.match(path) and "leader_recovery_state" in _json(data):
                self.recovering = True
        return self

    def settled(self) -> bool:
        """Whether the protocol the writes so far show is the one later writes show too (the bridge publishes it
        then): a sign of level 0, or /feature written (3.3-IV0 on is its version 2), or nothing to say. Registrations
        of version 5 before the first controller wrote /feature may still turn out 3.3 or later."""
        return self.notified or 4 in self.registrations or bool(self.features) or 5 not in self.registrations

    def release(self, server_logs: Path | None = None) -> ClusterRelease:
        """The protocol the writes so far show; the release from the brokers' server.log, else as the writes imply
        (the bridge reads no broker log)."""
        level, why = _protocol(self)
        release, named = read_kafka_version(server_logs) if server_logs is not None else (None, [])
        if release is None:
            release, named = _release(self, level)
        return ClusterRelease(level, release, (*why, *named))


def _protocol(signs: Signs) -> tuple[int | None, list[str]]:
    """The protocol level the directory shows (None: from 3.2-IV0 on, or no sign), and why."""
    if signs.notified:
        return ZOOKEEPER_ERA_PROTOCOL, ["leaders announced ISR changes under /isr_change_notification"]
    if 4 in signs.registrations:
        return ZOOKEEPER_ERA_PROTOCOL, ["a broker registration of version 4 (below 2.7-IV0)"]
    if 2 in signs.features:
        return None, ["/feature of version 2 (3.3-IV0 or later)"]
    if signs.recovering:
        return None, ["a partition state with leader_recovery_state (3.2-IV0 or later)"]
    if 5 in signs.registrations:
        return IBP_2_7_IV2, ["broker registrations of version 5 and no sign of 3.2-IV0 (2.7-IV2 to 3.1)"]
    return None, []


def _release(signs: Signs, level: int | None) -> tuple[KafkaRelease | None, list[str]]:
    """The release the directory implies: a /controller of version 1 only (kraftControllerEpoch came with 3.4,
    whatever the protocol) is a release before 3.4, taken as the last of its generation, 2.8.2 for a protocol before
    3.0 and 3.3.2 else (None: 3.4 or later, or no sign)."""
    if not signs.controllers or 2 in signs.controllers:
        return None, []
    assumed = LAST_2_X if level in (ZOOKEEPER_ERA_PROTOCOL, IBP_2_7_IV2) else LAST_BEFORE_3_4
    return assumed, [f"/controller of version 1 (a release before 3.4): taken as {assumed}"]


def _named_versions(lines: Iterable[str], named: set[KafkaRelease]) -> set[KafkaRelease]:
    for line in lines:
        m = _VERSION_LINE.search(line)
        if m is not None:
            try:
                named.add(KafkaRelease.parse(m["version"]))
            except ValueError:  # a build's own version (3.9.1-SNAPSHOT): not a release
                continue
    return named


def read_kafka_version(server_logs: Path) -> tuple[KafkaRelease | None, list[str]]:
    """The release the brokers' server.log files name (the oldest, if they name several: a rolling upgrade)."""
    named = read_broker_logs(server_logs, _named_versions, set())
    if not named:
        return None, []
    return min(named), [f"server.log: Kafka version {', '.join(map(str, sorted(named)))}"]


def read_release(history: ZkHistory, server_logs: Path | None = None) -> ClusterRelease:
    """The protocol from the directory; the release from the brokers' server.log, else as the directory implies."""
    return Signs().add(history.snapshot, history.txns).release(server_logs)


def protocol_event(release: ClusterRelease, zxid: int, ts: str) -> dict[str, Any] | None:
    """The UpdateFeatures that puts `release` in force at `zxid`: metadata.version at the protocol's level, and the
    release the controllers run (`kafka_version`) when the writes imply one. None when no protocol is named (from
    3.2-IV0 on the zk rules decide alike: the configured version holds; a release implied alone, 3.3.2 from a
    /controller of version 1, is not published: it differs from 3.9.1 only in the automatic rebalance)."""
    if release.metadata_version is None:
        return None
    return {"type": "UpdateFeatures", "event_id": f"zk-{zxid}-protocol", "ts": ts, "controller_epoch": 0,
            "features": {METADATA_VERSION: release.metadata_version},
            **({"kafka_version": str(release.kafka_version)} if release.kafka_version is not None else {})}


def with_protocol(release: ClusterRelease, history: ZkHistory, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`events` with the protocol the directory shows in force from their start (`protocol_event` first, as a kraft:
    log's feature levels), unless nothing names one or the importer already set it (a leader's own ISR
    announcement, level 0). Like the importer's, it comes before any controller (epoch 0) at the history's start
    (its snapshot's zxid, or 0)."""
    if not events:
        return events
    own = next((e for e in events if e["type"] == "UpdateFeatures"), None)
    if own is not None:  # the importer's (level 0): the release goes with it
        if release.kafka_version is not None:
            own.setdefault("kafka_version", str(release.kafka_version))
        return events
    first = protocol_event(release, history.snapshot.zxid if history.snapshot is not None else 0, events[0]["ts"])
    return events if first is None else [first, *events]
