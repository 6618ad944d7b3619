"""Feature levels: metadata.version and eligible.leader.replicas.version apply from their offset in the log on
(UpdateFeatures), and the kraft rules follow the metadata version where Kafka's controller does, each policy on
both sides of its boundary."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from schemas.events import Malformed, UpdateFeatures, parse_event
from statemachine.controller import Controller, ControllerConfig
from statemachine.features import (
    LATEST_KNOWN,
    LATEST_PRODUCTION,
    METADATA_VERSIONS,
    is_elr_supported,
    is_leader_epoch_bump_required_on_isr_shrink,
    is_leader_recovery_supported,
    metadata_version_level,
    unknown_metadata_version,
)
from statemachine.rules import (
    eligible_leader_replicas_enabled,
    elr_after_disabling,
    elr_that_can_lead_without_the_feature,
    rules_named,
)
from streaming.cli import _controller_config, build_parser, main
from streaming.kraft.convert import convert, event_offset

from .cluster import Cluster, event_json
from .test_kraft_convert import Log, change, pcr, started_cluster
from .test_kraft_rules import elr_cluster, elr_state, epochs

MV, ELR = "metadata.version", "eligible.leader.replicas.version"
IBP_3_1_IV0, IBP_3_2_IV0, IBP_3_5_IV2, IBP_3_6_IV0, IBP_4_0_IV0, IBP_4_0_IV1 = 2, 3, 11, 12, 22, 23


def at(metadata_version: int, rules_name: str = "kraft", **config: object) -> Cluster:
    c = Cluster(ControllerConfig(rules=rules_named(rules_name), metadata_version=metadata_version, **config))
    c.start(1, 2, 3)
    c.create("t", [1, 2, 3])
    return c


def features(c: Cluster, **levels: int) -> str:
    """An UpdateFeatures; its result's cluster row message."""
    result = c.send("UpdateFeatures", features={k.replace("_", "."): v for k, v in levels.items()})
    return result.cluster_row.message or ""


def test_metadata_versions_by_name_release_or_level() -> None:
    assert metadata_version_level("3.5-IV2") == metadata_version_level("3.5") == metadata_version_level("11") == 11
    assert metadata_version_level("4.1-IV1") == LATEST_PRODUCTION == 27
    for bad in ("3.5-IV9", "5.0", "0", "99", "", "latest"):
        with pytest.raises(ValueError, match=r"metadata\.version"):
            metadata_version_level(bad)


def test_the_predicates_change_at_their_versions() -> None:
    assert not is_leader_recovery_supported(IBP_3_1_IV0) and is_leader_recovery_supported(IBP_3_2_IV0)
    assert is_leader_epoch_bump_required_on_isr_shrink(IBP_3_5_IV2)
    assert not is_leader_epoch_bump_required_on_isr_shrink(IBP_3_6_IV0)
    assert not is_elr_supported(IBP_4_0_IV0) and is_elr_supported(IBP_4_0_IV1)
    assert not eligible_leader_replicas_enabled(1, IBP_4_0_IV0)
    assert eligible_leader_replicas_enabled(1, IBP_4_0_IV1) and not eligible_leader_replicas_enabled(0, IBP_4_0_IV1)
    assert elr_after_disabling((2,)) == ((), (2,))


def test_an_isr_shrink_bumps_the_leader_epoch_below_3_6_iv0() -> None:
    # A follower fenced: ISR shrink, same leader.
    assert epochs(at(IBP_3_5_IV2).failure(3).decision("t", 0)) == (1, [1, 2], 1, 1)
    assert epochs(at(IBP_3_6_IV0).failure(3).decision("t", 0)) == (1, [1, 2], 0, 1)
    # The leader's own AlterPartition: a shrink bumps below 3.6-IV0, a growth never does.
    old = at(IBP_3_5_IV2)
    assert epochs(old.isr_change("t", 0, [1, 2]).decision("t", 0)) == (1, [1, 2], 1, 1)
    assert epochs(old.isr_change("t", 0, [1, 2, 3]).decision("t", 0)) == (1, [1, 2, 3], 1, 2)
    assert epochs(at(IBP_3_6_IV0).isr_change("t", 0, [1, 2]).decision("t", 0)) == (1, [1, 2], 0, 1)


def test_an_unclean_leader_is_recovering_only_from_3_2_iv0() -> None:
    for version, recovery in ((IBP_3_1_IV0, "RECOVERED"), (IBP_3_2_IV0, "RECOVERING")):
        c = at(version)
        c.failure(2)
        c.failure(3)
        c.failure(1)  # ISR [1], no live member
        c.startup(2)
        elected = c.elect("UNCLEAN", ("t", 0)).decision("t", 0)
        assert (elected.leader, list(elected.isr), str(elected.leader_recovery_state)) == (2, [2], recovery), version
    # The ZooKeeper-era controller follows its inter.broker.protocol.version the same way (PartitionStateMachine's
    # leaderForOffline: isLeaderRecoverySupported); one before 3.0 (2.6: level 0) is below 3.2 too.
    for version, recovery in ((metadata_version_level("2.6"), "RECOVERED"), (IBP_3_1_IV0, "RECOVERED"),
                              (IBP_3_2_IV0, "RECOVERING")):
        z = at(version, "zk")
        z.failure(2)
        z.failure(3)
        z.failure(1)
        z.startup(2)
        assert str(z.elect("UNCLEAN", ("t", 0)).decision("t", 0).leader_recovery_state) == recovery, version


def test_eligible_leader_replicas_need_4_0_iv1_and_the_feature() -> None:
    def fence_the_last_member(version: int, elr: bool) -> tuple[int, list[int], list[int], list[int], str]:
        c = Cluster(ControllerConfig(rules=rules_named("kraft"), metadata_version=version,
                                     eligible_leader_replicas=elr))
        c.start(1)
        c.create("one", [1])
        return elr_state(c.failure(1).decision("one", 0))

    assert fence_the_last_member(IBP_4_0_IV0, True) == (-1, [1], [], [], "RECOVERED")  # kept: no ELR
    assert fence_the_last_member(IBP_4_0_IV1, True) == (-1, [], [1], [1], "RECOVERED")
    assert fence_the_last_member(IBP_4_0_IV1, False) == (-1, [1], [], [], "RECOVERED")


def test_update_features_apply_from_their_offset_and_commands_carry_them() -> None:
    c = at(IBP_3_5_IV2)
    assert epochs(c.failure(3).decision("t", 0))[2] == 1  # bumped at 3.5-IV2
    assert features(c, metadata_version=IBP_3_6_IV0) == "features: metadata.version 11 -> 12 (3.6-IV0)"
    assert c.controller.cluster.features == {MV: IBP_3_6_IV0}
    c.startup(3)
    assert {h.command.metadata_version for h in c.handled if h.command.partition is not None} == {IBP_3_6_IV0}
    c.isr_change("t", 0, [1, 2, 3])
    before = c.rec("t", 0).leader_epoch
    assert c.failure(2).decision("t", 0).leader_epoch == before  # not bumped from 3.6-IV0 on


def test_turning_elr_off_keeps_the_elr_until_the_next_change_which_empties_it() -> None:
    c = elr_cluster(min_isr=2)
    assert elr_state(c.isr_change("t", 0, [1]).decision("t", 0)) == (1, [1], [2, 3], [], "RECOVERED")
    assert features(c, eligible_leader_replicas_version=0) == f"features: {ELR} 1 -> 0"
    assert not c.controller.elr_on
    assert elr_state(c.rec("t", 0))[2] == [2, 3]  # no record of its own
    grown = c.isr_change("t", 0, [1, 2]).decision("t", 0)
    assert elr_state(grown) == (1, [1, 2], [], [], "RECOVERED")
    # With the feature off the last ISR member stays; on again, it may leave.
    assert elr_state(c.failure(1).decision("one", 0)) == (-1, [1], [], [], "RECOVERED")
    features(c, eligible_leader_replicas_version=1)
    c.startup(1)
    assert elr_state(c.failure(1).decision("one", 0)) == (-1, [], [1], [1], "RECOVERED")


def test_turning_elr_off_keeps_the_last_known_leader_and_the_kept_elr_can_still_lead() -> None:
    def leaderless_with_elr_then_off() -> Cluster:
        c = elr_cluster()
        c.create("two", [2, 1])
        c.failure(2)
        c.failure(1)  # two-0: ISR [], ELR [1], last known leader 1
        features(c, eligible_leader_replicas_version=0)
        return c

    c = leaderless_with_elr_then_off()
    c.startup(2)
    assert elr_state(c.elect("UNCLEAN", ("two", 0)).decision("two", 0)) == (2, [2], [], [1], "RECOVERING")
    # The ELR it kept leads once live, cleanly; the change empties the ELR, the last known leader stays.
    elected = leaderless_with_elr_then_off().startup(1).decision("two", 0)
    assert elr_state(elected) == (1, [1], [], [1], "RECOVERED") and elected.election == "OFFLINE"
    assert elr_that_can_lead_without_the_feature((), (1,)) == (1,)
    assert elr_that_can_lead_without_the_feature((2,), (1,)) == ()


def test_feature_updates_the_rules_cannot_run_at_are_refused_and_bad_shapes_quarantined() -> None:
    c = at(IBP_4_0_IV0)
    row = c.send("UpdateFeatures", features={ELR: 1}).cluster_row
    assert (row.outcome, row.error) == ("REJECTED", "INVALID_UPDATE_VERSION")
    assert c.send("UpdateFeatures", features={MV: 0}).cluster_row.error == "INVALID_UPDATE_VERSION"
    # -1, a ZooKeeper-era AlterIsr protocol (statemachine.features.IBP_2_7_IV2), is a valid event no KRaft runs at.
    assert c.send("UpdateFeatures", features={MV: -1}).cluster_row.error == "INVALID_UPDATE_VERSION"
    assert c.controller.cluster.features == {}
    assert features(c, metadata_version=IBP_4_0_IV1, eligible_leader_replicas_version=1).startswith("features:")
    assert c.controller.elr_on
    for bad in ({}, {MV: -2}, {ELR: -1}, {MV: "27"}, {MV: 2**15}, {"": 1}, [MV]):
        parsed = parse_event(event_json("UpdateFeatures", event_id="f", controller_epoch=1, features=bad))
        assert isinstance(parsed, Malformed) and "features" in parsed.reason, bad
    ok = parse_event(event_json("UpdateFeatures", event_id="f", controller_epoch=1, features={MV: 27}))
    assert isinstance(ok, UpdateFeatures) and json.loads(ok.to_json())["features"] == {MV: 27}


def test_a_checkpoint_without_feature_levels_restores_with_the_configured_ones() -> None:
    c = at(IBP_3_5_IV2)
    features(c, metadata_version=IBP_3_6_IV0)
    body = json.loads(c.controller.snapshot())
    restored = Controller(ControllerConfig(rules=rules_named("kraft"), metadata_version=IBP_3_5_IV2))
    restored.restore(json.dumps(body).encode())
    assert restored.metadata_version == IBP_3_6_IV0
    del body["cluster"]["features"]  # as an older isrflow wrote it
    restored.restore(json.dumps(body).encode())
    assert (restored.cluster.features, restored.metadata_version) == ({}, IBP_3_5_IV2)


def test_the_converter_emits_each_feature_level_at_its_offset() -> None:
    log = started_cluster()  # metadata.version 27 at offset 0
    log.batch(pcr(0, isr=[1, 2]))
    [off] = log.batch(("FEATURE_LEVEL_RECORD", {"name": ELR, "featureLevel": 0}))
    log.batch(change(3, 3, fenced=1))
    result = convert(log.records)
    updates = [e for e in result.events if e["type"] == "UpdateFeatures"]
    assert [(event_offset(e), e["features"]) for e in updates] == [(0, {MV: 27}), (off, {ELR: 0})]
    assert result.feature_changes == [(0, MV, 27), (off, ELR, 0)]
    offsets = [event_offset(e) for e in result.events]
    assert offsets == sorted(offsets) and result.events[offsets.index(off) - 1]["type"] == "IsrChange"
    assert result.features == {MV: 27, ELR: 0}


def test_a_snapshots_feature_levels_are_one_update_before_its_other_seeds() -> None:
    log = Log()
    snapshot = [("FEATURE_LEVEL_RECORD", {"name": MV, "featureLevel": IBP_3_5_IV2}),
                ("FEATURE_LEVEL_RECORD", {"name": ELR, "featureLevel": 0}),
                ("REGISTER_BROKER_RECORD", {"brokerId": 1, "incarnationId": "a", "brokerEpoch": 5, "fenced": False})]
    log.batch(*snapshot)
    log.records = [replace(r, snapshot=True) for r in log.records]
    result = convert(log.records, start=10)
    first, startup = result.events[:2]
    assert (first["type"], first["features"], event_offset(first)) == ("UpdateFeatures", {MV: 11, ELR: 0}, 9)
    assert first["event_id"] == "kraft-9-snapshot-features" and startup["type"] == "BrokerChange"
    assert result.feature_changes == [(9, ELR, 0), (9, MV, 11)]


def test_metadata_version_option() -> None:
    args = build_parser().parse_args(["replay", "x.jsonl", "--out", "o", "--metadata-version", "3.5-IV2"])
    assert _controller_config(args).metadata_version == IBP_3_5_IV2
    args = build_parser().parse_args(["replay", "x.jsonl", "--out", "o"])
    assert _controller_config(args).metadata_version == LATEST_PRODUCTION
    assert main(["replay", "x.jsonl", "--out", "o", "--metadata-version", "3.5-IV9"]) == 2


def test_old_metadata_version_record_shapes_are_an_isr_change_and_an_unclean_election() -> None:
    log = started_cluster()
    [shrink] = log.batch(pcr(0, isr=[1, 2], leader=1))  # below 3.6-IV0: `leader` set to the same leader
    log.batch(change(1, 1, fenced=1), change(2, 2, fenced=1))
    [unclean] = log.batch(pcr(0, isr=[3], leader=3))  # below 3.2-IV0: no leaderRecoveryState
    result = convert(log.records)
    by_offset = {event_offset(e): e for e in result.events}
    assert (by_offset[shrink]["type"], by_offset[shrink]["isr"]) == ("IsrChange", [1, 2])
    assert (by_offset[unclean]["type"], by_offset[unclean]["election_type"]) == ("ElectLeaders", "UNCLEAN")
    observed = {o["source_offset"]: o for o in result.observed}
    assert (observed[shrink]["leader_epoch"], observed[unclean]["leader_recovery_state"]) == (1, "RECOVERED")
    assert not result.unexplained


def test_a_level_newer_than_any_isrflow_knows_is_said_and_replayed_with_the_newest_rules() -> None:
    assert METADATA_VERSIONS[LATEST_KNOWN] == "4.4-IV2" and LATEST_KNOWN == 33
    c = Cluster(ControllerConfig(rules=rules_named("kraft")))
    c.start(1, 2, 3)
    c.create("t", [1, 2, 3])
    row = c.send("UpdateFeatures", features={"metadata.version": 34}).cluster_row
    assert row.outcome == "ACCEPTED"
    assert "WARNING: metadata.version level 34 is newer than any isrflow knows" in row.message
    assert "replayed with the rules of 4.4-IV2" in (unknown_metadata_version(34) or "")
    # The newest rules hold on: a follower leaving the ISR bumps no leader epoch (from 3.6-IV0 on).
    d = c.failure(3).decision("t", 0)
    assert (d.leader, d.leader_epoch) == (1, 0)
