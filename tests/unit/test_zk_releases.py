"""The ZooKeeper-era controller by protocol and by release (statemachine.features, statemachine.zk_releases): what a
Kafka 2.8.2 cluster at its own protocol decides where Kafka 3.9.1's controller decides otherwise, and the protocol and
release a cluster's own writes and logs show (streaming.zookeeper.release)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemas.events import UpdateFeatures, parse_event
from statemachine.controller import Controller, ControllerConfig
from statemachine.features import (
    IBP_2_7_IV2,
    ZOOKEEPER_ERA_PROTOCOL,
    is_alter_partition_supported,
    metadata_version_level,
    metadata_version_name,
)
from statemachine.requests import RequestType
from statemachine.zk_releases import KafkaRelease
from streaming.zookeeper.files import read_zk_history
from streaming.zookeeper.release import read_release, with_protocol

from .cluster import Cluster, cluster_with

KAFKA_2_8 = ControllerConfig(metadata_version=IBP_2_7_IV2, kafka_version=KafkaRelease.parse("2.8.2"))
REGRESSIONS = Path(__file__).parents[1] / "integration" / "zklog" / "regressions"


def test_2_7_and_2_8_are_alter_isr_protocols_and_2_6_is_not() -> None:
    for name in ("2.7", "2.7-IV2", "2.8", "2.8-IV1", "3.0-IV0"):
        assert metadata_version_level(name) == IBP_2_7_IV2, name
    for name in ("2.6", "2.7-IV0", "2.7-IV1", "2.4"):
        assert metadata_version_level(name) == ZOOKEEPER_ERA_PROTOCOL, name
    assert is_alter_partition_supported(IBP_2_7_IV2) and not is_alter_partition_supported(ZOOKEEPER_ERA_PROTOCOL)
    assert metadata_version_name(IBP_2_7_IV2) == "an inter.broker.protocol.version from 2.7-IV2 to 3.0-IV0"


def test_releases_read_as_kafka_writes_them() -> None:
    assert KafkaRelease.parse("2.8.2") < KafkaRelease.parse("3.1") < KafkaRelease.parse("3.9.1")
    assert str(KafkaRelease.parse("3.3")) == "3.3.0"
    with pytest.raises(ValueError):
        KafkaRelease.parse("2.8.2-SNAPSHOT")


def test_an_unclean_election_at_protocol_2_8_writes_no_recovery_state() -> None:
    # KIP-704 came with 3.2-IV0: PartitionStateMachine.leaderForOffline leaves the state as it was before it.
    for config, recovery in ((KAFKA_2_8, "RECOVERED"), (ControllerConfig(), "RECOVERING")):
        c = cluster_with(1, 2, 3, config=config)
        c.create("t", [1, 2, 3])
        for broker in (2, 3, 1):
            c.failure(broker)
        c.startup(2)
        elected = c.elect("UNCLEAN", ("t", 0)).decision("t", 0)
        assert (elected.leader, str(elected.leader_recovery_state)) == (2, recovery)


def test_kafka_2_8_takes_an_alter_isr_naming_a_dead_broker_and_3_3_on_refuse_it() -> None:
    # KIP-841 came to the ZooKeeper-era controller's processAlterPartition in 3.3, whatever the protocol.
    for release, outcome in (("2.8.2", "ACCEPTED"), ("3.3.0", "REJECTED")):
        c = cluster_with(1, 2, config=ControllerConfig(metadata_version=IBP_2_7_IV2,
                                                       kafka_version=KafkaRelease.parse(release)))
        c.create("t", [1, 2])
        c.failure(2)
        row = c.isr_change("t", 0, [1, 2], broker=1, leader_epoch=1, partition_epoch=1).only_row
        assert row.outcome == outcome, release


def _failure_update_metadata(config: ControllerConfig, leaderless: bool) -> int:
    """How many UpdateMetadata requests naming no partition the failure of broker 3, a follower only, sends."""
    events = [{"type": "ControllerChange", "controller_id": 1, "live_brokers": {"1": 10, "2": 20, "3": 30, "4": 40}},
              {"type": "CreateTopic", "topic": "t", "assignment": {"0": [1, 3], "1": [2, 3]}},
              *([{"type": "CreateTopic", "topic": "u", "assignment": {"0": [4]}},
                 {"type": "BrokerChange", "broker_id": 4, "change": "FAILURE", "broker_epoch": 40}]  # u-0 leaderless
                if leaderless else []),
              {"type": "BrokerChange", "broker_id": 3, "change": "FAILURE", "broker_epoch": 30}]
    controller = Controller(config)
    for offset, event in enumerate(events):
        raw = json.dumps({"event_id": f"e{offset}", "controller_epoch": 1, "ts": "2026-11-26T17:00:00Z", **event})
        requests = controller.handle_event(parse_event(raw.encode()), offset).requests
    return sum(1 for r in requests if r.request is RequestType.UPDATE_METADATA and not r.partitions)


def test_a_broker_failure_sends_its_own_update_metadata_by_the_releases_rule() -> None:
    # KAFKA-13225 (3.1): only when nothing changed; before, when no partition of the cluster had an offline leader.
    assert _failure_update_metadata(ControllerConfig(), leaderless=False) == 0  # its replicas went offline
    assert _failure_update_metadata(KAFKA_2_8, leaderless=False) == 3  # no offline leader: every live broker
    assert _failure_update_metadata(KAFKA_2_8, leaderless=True) == 0  # u-0 has none


def test_before_3_4_a_reassignment_in_progress_holds_the_automatic_preferred_election_back() -> None:
    for config, elected in ((ControllerConfig(), True), (KAFKA_2_8, False)):
        c = cluster_with(1, 2, 3, config=config)
        c.create("t", [1, 2])
        c.create("u", [3])
        c.failure(1)
        c.startup(1)
        c.isr_change("t", 0, [2, 1])  # broker 1 caught up: t-0 can go back to its preferred leader
        c.failure(3)  # the reassignment of u-0 to [2] waits for broker 2 to catch up
        c.reassign(("u", 0, [2]))
        assert c.rec("u", 0).reassignment_in_progress
        out = c.imbalance_check()
        assert bool(out.decisions_for("t", 0)) is elected


def test_the_protocol_is_read_from_what_the_cluster_wrote() -> None:
    below_2_7 = read_release(read_zk_history(REGRESSIONS / "zookeeper-2.6-seed-2" / "version-2"))
    assert below_2_7.metadata_version == ZOOKEEPER_ERA_PROTOCOL
    own_3_9 = read_release(read_zk_history(REGRESSIONS / "zookeeper-3.9-seed-1" / "version-2"))
    assert own_3_9.metadata_version is None and own_3_9.kafka_version is None  # /feature version 2: 3.3-IV0 on
    assert "/feature of version 2" in own_3_9.describe()


def test_a_release_before_3_4_is_read_from_controller_znode_version_1() -> None:
    # /controller gained kraftControllerEpoch (version 2) in 3.4, at every protocol: without a server.log, a version 1
    # alone is taken as the last release of its generation.
    for run, release in (("zookeeper-2.8-scripted", "2.8.2"), ("zookeeper-3.0-scripted", "2.8.2")):
        read = read_release(read_zk_history(REGRESSIONS / run / "version-2"))
        assert read.kafka_version == KafkaRelease.parse(release), run
        assert "/controller of version 1 (a release before 3.4)" in read.describe()
    for run in ("zookeeper-3.5-scripted", "zookeeper-2.6-seed-2"):  # 3.5.2; 3.9.1 at protocol 2.6
        assert read_release(read_zk_history(REGRESSIONS / run / "version-2")).kafka_version is None, run


def test_a_kafka_2_8_clusters_protocol_starts_its_events_and_its_server_log_names_the_release() -> None:
    run = REGRESSIONS / "zookeeper-2.8-scripted"
    history = read_zk_history(run / "version-2")
    release = read_release(history, run / "server")
    assert (release.metadata_version, release.kafka_version) == (IBP_2_7_IV2, KafkaRelease.parse("2.8.2"))
    first = {"type": "CreateTopic", "event_id": "zk-5", "ts": "2026-11-26T17:00:00.000Z", "controller_epoch": 1}
    protocol, *rest = with_protocol(release, history, [first])
    assert rest == [first] and protocol == {"type": "UpdateFeatures", "event_id": "zk-0-protocol", "ts": first["ts"],
                                            "controller_epoch": 0, "features": {"metadata.version": IBP_2_7_IV2},
                                            "kafka_version": "2.8.2"}
    event = parse_event(json.dumps(protocol))
    assert isinstance(event, UpdateFeatures), event  # a level below 0, and still a valid event
    controller = Controller(ControllerConfig())
    controller.handle_event(event, 0)
    assert controller.metadata_version == IBP_2_7_IV2


def test_the_release_an_update_features_names_is_followed_unless_configured() -> None:
    # The importer and the bridge name the release the cluster's writes imply (UpdateFeatures.kafka_version).
    c = Cluster()
    assert c.controller.release == KafkaRelease(3, 9, 1)
    row = c.send("UpdateFeatures", features={"metadata.version": IBP_2_7_IV2}, kafka_version="2.8.2").cluster_row
    assert row.outcome == "ACCEPTED" and "the controllers run Kafka 2.8.2" in row.message
    assert c.controller.release == KafkaRelease(2, 8, 2)
    configured = Cluster(ControllerConfig(kafka_version=KafkaRelease(3, 0, 2)))
    configured.send("UpdateFeatures", features={"metadata.version": IBP_2_7_IV2}, kafka_version="2.8.2")
    assert configured.controller.release == KafkaRelease(3, 0, 2)
    bad = Cluster().send("UpdateFeatures", features={"metadata.version": IBP_2_7_IV2}, kafka_version="two").cluster_row
    assert (bad.outcome, bad.error) == ("REJECTED", "INVALID_REQUEST")
