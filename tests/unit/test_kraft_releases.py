"""Where the kraft rules follow the controller's Kafka release rather than the metadata.version: the release a
ControllerRegistration names (statemachine.kraft_releases)."""

from __future__ import annotations

import pytest

from statemachine.controller import ControllerConfig
from statemachine.features import metadata_version_level
from statemachine.kraft_releases import RELEASE_LEVELS, release_name
from statemachine.rules import KRAFT

from .cluster import Cluster


def reassigning_with_a_fenced_target(release: str | None) -> Cluster:
    """t-0 on [1, 3, 4] with broker 4 fenced (ISR [1, 3]), reassigned to [2, 4, 1]: adding 2, removing 3; then
    the leader's AlterPartition lets 2 in."""
    c = Cluster(ControllerConfig(rules=KRAFT))
    if release is not None:
        c.send("ControllerRegistration", controller_id=100, max_metadata_version=RELEASE_LEVELS[release])
    c.start(1, 2, 3, 4)
    c.create("t", [1, 3, 4])
    c.failure(4)
    c.reassign(("t", 0, [2, 4, 1]))
    rec = c.rec("t", 0)
    assert (rec.replicas, rec.adding_replicas, rec.removing_replicas) == ((2, 4, 1, 3), (2,), (3,))
    c.isr_change("t", 0, [1, 3, 2])
    return c


@pytest.mark.parametrize("release", ["4.3", "4.4"])
def test_from_kafka_4_3_a_reassignment_completes_once_its_adding_replicas_caught_up(release: str) -> None:
    rec = reassigning_with_a_fenced_target(release).rec("t", 0)
    assert (rec.replicas, rec.isr, rec.adding_replicas, rec.removing_replicas) == ((2, 4, 1), (1, 2), (), ())


@pytest.mark.parametrize("release", [None, "4.1", "4.2"])
def test_before_kafka_4_3_it_waits_for_every_target_replica(release: str | None) -> None:
    rec = reassigning_with_a_fenced_target(release).rec("t", 0)
    assert (rec.replicas, rec.adding_replicas, rec.removing_replicas) == ((2, 4, 1, 3), (2,), (3,))


def test_a_controller_registration_names_its_release() -> None:
    c = Cluster(ControllerConfig(rules=KRAFT))
    row = c.send("ControllerRegistration", controller_id=100, max_metadata_version=33).cluster_row
    assert row.message == "controller 100 registered: Kafka 4.4 (metadata.version up to 4.4-IV2)"
    assert release_name(34) == "after 4.4"


def leaderless_with_a_live_replica_outside_the_isr(release: str) -> Cluster:
    """t-0 on [1, 2] with unclean.leader.election.enable=true, ELR off (3.x): broker 2 fails (ISR [1]), then broker
    1 (leaderless, ISR [1] kept); broker 2 comes back, a live replica outside the ISR."""
    c = Cluster(ControllerConfig(rules=KRAFT, metadata_version=metadata_version_level("3.7-IV4")))
    c.send("ControllerRegistration", controller_id=100, max_metadata_version=RELEASE_LEVELS[release])
    c.start(1, 2)
    c.create("t", [1, 2], configs={"unclean.leader.election.enable": "true"})
    c.failure(2)
    c.failure(1)
    assert (c.rec("t", 0).leader, c.rec("t", 0).isr) == (-1, (1,))
    c.startup(2)
    return c


@pytest.mark.parametrize("release", ["3.7", "3.8"])
def test_before_kafka_3_9_the_topic_config_never_elects_uncleanly(release: str) -> None:
    c = leaderless_with_a_live_replica_outside_the_isr(release)
    assert (c.rec("t", 0).leader, c.rec("t", 0).isr) == (-1, (1,))
    # An admin UNCLEAN election still does.
    c.elect("UNCLEAN", ("t", 0))
    assert (c.rec("t", 0).leader, c.rec("t", 0).isr) == (2, (2,))


@pytest.mark.parametrize("release", ["3.9", "4.4"])
def test_from_kafka_3_9_the_topic_config_elects_uncleanly(release: str) -> None:
    c = leaderless_with_a_live_replica_outside_the_isr(release)
    assert (c.rec("t", 0).leader, c.rec("t", 0).isr) == (2, (2,))
