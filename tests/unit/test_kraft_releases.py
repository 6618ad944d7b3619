"""Where the kraft rules follow the controller's Kafka release rather than the metadata.version: the release a
ControllerRegistration names (statemachine.kraft_releases)."""

from __future__ import annotations

import pytest

from statemachine.controller import ControllerConfig
from statemachine.features import metadata_version_level
from statemachine.kraft_releases import RELEASE_LEVELS, release_name
from statemachine.rules import KRAFT

from .cluster import Cluster


def reassigning_with_a_fenced_target(release: str | None, by_brokers: bool = False) -> Cluster:
    """t-0 on [1, 3, 4] with broker 4 fenced (ISR [1, 3]), reassigned to [2, 4, 1]: adding 2, removing 3; then
    the leader's AlterPartition lets 2 in. The release from a controller's registration, or `by_brokers` from the
    brokers' (as below metadata.version 3.7-IV0, where controllers do not register)."""
    c = Cluster(ControllerConfig(rules=KRAFT))
    c.start(1, 2, 3, 4)
    if release is not None and by_brokers:
        for b in (1, 2, 3, 4):
            c.send("BrokerRegistration", broker_id=b, broker_epoch=c.broker_epochs[b], log_dirs=[],
                   max_metadata_version=RELEASE_LEVELS[release])
    elif release is not None:
        c.send("ControllerRegistration", controller_id=100, max_metadata_version=RELEASE_LEVELS[release])
    c.create("t", [1, 3, 4])
    c.failure(4)
    c.reassign(("t", 0, [2, 4, 1]))
    rec = c.rec("t", 0)
    assert (rec.replicas, rec.adding_replicas, rec.removing_replicas) == ((2, 4, 1, 3), (2,), (3,))
    c.isr_change("t", 0, [1, 3, 2])
    return c


@pytest.mark.parametrize("release", ["3.7", "4.3", "4.4"])
@pytest.mark.parametrize("by_brokers", [False, True])
def test_on_3_7_and_from_4_3_a_reassignment_completes_once_its_adding_replicas_caught_up(release: str,
                                                                                         by_brokers: bool) -> None:
    rec = reassigning_with_a_fenced_target(release, by_brokers).rec("t", 0)
    assert (rec.replicas, rec.isr, rec.adding_replicas, rec.removing_replicas) == ((2, 4, 1), (1, 2), (), ())


@pytest.mark.parametrize("release", [None, "3.8", "3.9", "4.1", "4.2"])
def test_from_3_8_to_4_2_it_waits_for_every_target_replica(release: str | None) -> None:
    for by_brokers in (False, True):
        rec = reassigning_with_a_fenced_target(release, by_brokers).rec("t", 0)
        assert (rec.replicas, rec.adding_replicas, rec.removing_replicas) == ((2, 4, 1, 3), (2,), (3,))


@pytest.mark.parametrize(("release", "completes"), [("3.7", True), ("3.8", False), ("4.3", False)])
def test_removing_more_than_it_adds_waits_for_a_fenced_target_replica_except_on_3_7(release: str,
                                                                                    completes: bool) -> None:
    """t-0 on [1, 2, 3, 4] with broker 2 fenced (ISR [1, 3, 4]), reassigned to [1, 2]: adding none, removing 3
    and 4; target replica 2 is not in the ISR."""
    c = Cluster(ControllerConfig(rules=KRAFT))
    c.send("ControllerRegistration", controller_id=100, max_metadata_version=RELEASE_LEVELS[release])
    c.start(1, 2, 3, 4)
    c.create("t", [1, 2, 3, 4])
    c.failure(2)
    c.reassign(("t", 0, [1, 2]))
    rec = c.rec("t", 0)
    assert (rec.replicas, rec.removing_replicas) == (((1, 2), ()) if completes else ((1, 2, 3, 4), (3, 4)))


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
