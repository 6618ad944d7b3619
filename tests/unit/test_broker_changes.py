"""BrokerChange: startup (and a bounce), failure, controlled shutdown, and their broker epochs.

JSON events in (through `parse_event`), decisions and audit rows out (through `Controller.handle`), for the
triggers of docs/semantics.md."""

from __future__ import annotations

import pytest

from statemachine.record import Action
from statemachine.states import PartitionState, ReplicaState

from .cluster import UNCLEAN, Cluster, assert_rejected, assert_unchanged, cluster_with, snapshot

P = PartitionState
R = ReplicaState


# =====================================================================================================
# Broker STARTUP
# =====================================================================================================

def test_startup_registers_the_broker() -> None:
    cluster = Cluster()
    out = cluster.startup(1, epoch=100)
    assert out.cluster_row.outcome == "ACCEPTED"
    assert out.cluster_row.event_type == "BrokerChange"
    assert cluster.controller.cluster.live_brokers == {1}


@pytest.mark.parametrize("epoch", [5, 10])
def test_startup_with_a_stale_broker_epoch_is_rejected(epoch: int) -> None:
    cluster = cluster_with(1, 2)
    cluster.startup(1, epoch=10)  # bounce to 10
    cluster.create("t", [1, 2])
    cluster.failure(1, epoch=10)
    before = snapshot(cluster)
    out = cluster.startup(1, epoch=epoch)
    assert_rejected(out.only_row, "STALE_BROKER_EPOCH")
    assert out.decisions == []
    assert_unchanged(cluster, before)
    assert 1 not in cluster.controller.cluster.live_brokers


def test_startup_epoch_must_beat_the_last_registration_even_after_a_failure() -> None:
    cluster = Cluster()
    cluster.startup(1, epoch=50)
    cluster.failure(1, epoch=50)
    assert_rejected(cluster.startup(1, epoch=50).only_row, "STALE_BROKER_EPOCH")
    assert cluster.startup(1, epoch=51).only_row.outcome == "ACCEPTED"


def test_brokers_read_together_start_in_the_first_of_their_events() -> None:
    # ZooKeeper: one read of /brokers/ids found brokers 2 and 3 registered (processBrokerChange): one onBrokerStartup
    # brings both replicas online and elects from both; the second registration's event finds its broker started.
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [2, 3])
    cluster.failure(2)
    cluster.failure(3)
    assert (cluster.rec("t", 0).state, cluster.rec("t", 0).isr) == (P.OFFLINE, (3,))
    together = {"2": 40, "3": 41}
    out = cluster.startup(2, epoch=40, new_brokers=together)
    assert out.cluster_row.message.startswith("brokers 2, 3 started together with epochs 40, 41")
    d = out.decision("t", 0)
    assert (d.leader, d.isr, d.election) == (3, (3,), "OFFLINE")
    assert cluster.rec("t", 0).replica_states == {2: R.ONLINE, 3: R.ONLINE}
    assert cluster.controller.cluster.broker_epochs == {1: 10, 2: 40, 3: 41}
    same = cluster.startup(3, epoch=41, new_brokers=together)
    assert (same.only_row.outcome, same.decisions) == ("NO_OP", [])


def test_a_startup_of_a_broker_a_failover_read_finds_it_started() -> None:
    # The new controller read broker 2's registration at its failover (ControllerChange live_brokers): the
    # registration's own event tells the controller nothing new (processBrokerChange: same epoch, not new).
    cluster = Cluster()
    cluster.controller_change(1, live_brokers={"1": 10, "2": 12})
    out = cluster.startup(2, epoch=12)
    assert (out.only_row.outcome, out.decisions) == ("NO_OP", [])
    assert cluster.controller.cluster.broker_epochs == {1: 10, 2: 12}


def test_brokers_read_together_are_rejected_if_one_epoch_is_stale() -> None:
    cluster = cluster_with(1, 2)
    cluster.failure(2)
    assert_rejected(cluster.startup(3, epoch=30, new_brokers={"2": 5, "3": 30}).only_row, "STALE_BROKER_EPOCH")
    assert cluster.controller.cluster.live_brokers == {1}


def test_startup_brings_replicas_online_and_elects_offline_partitions() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(2)
    cluster.failure(1)
    assert cluster.rec("t", 0).state is P.OFFLINE
    assert cluster.rec("t", 0).isr == (1,)
    out = cluster.startup(1)
    d = out.decision("t", 0)
    assert (d.leader, d.isr, d.recipients, d.election, d.is_new) == (1, (1,), (1,), "OFFLINE", False)
    row = out.row("t", 0)
    assert (row.from_state, row.to_state) == ("OfflinePartition", "OnlinePartition")
    assert row.replica_states == {1: "OnlineReplica", 2: "OfflineReplica"}
    assert (d.leader_epoch, d.partition_epoch) == (row.leader_epoch_before + 1,
                                                         row.partition_epoch_before + 1)


def test_startup_of_a_replica_outside_the_isr_elects_nobody_when_unclean_is_off() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(2)
    cluster.failure(1)
    out = cluster.startup(2)
    assert out.decisions == []
    rec = cluster.rec("t", 0)
    assert (rec.state, rec.leader, rec.isr) == (P.OFFLINE, -1, (1,))
    assert rec.replica_states[2] is R.ONLINE


def test_startup_election_follows_the_topic_unclean_config() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2], configs={UNCLEAN: "true"})
    cluster.failure(2)
    cluster.failure(1)
    out = cluster.startup(2)
    d = out.decision("t", 0)
    assert (d.leader, d.isr, d.election, d.leader_recovery_state) == (
        2, (2,), "OFFLINE_UNCLEAN", "RECOVERING")


def test_startup_without_failure_is_a_bounce() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    out = cluster.startup(1)
    # Handled as a failure then a startup: leadership moves to 2, 1 comes back as a follower outside the ISR.
    assert [h.command.action for h in out.handled] == [Action.BROKER_FAILURE, Action.BROKER_STARTUP, Action.CLUSTER]
    assert [h.command.step for h in out.handled[:2]] == [0, 1]
    d = out.decision("t", 0)
    assert (d.leader, d.isr, d.election) == (2, (2,), "OFFLINE")
    assert cluster.replica_states("t", 0) == {1: "OnlineReplica", 2: "OnlineReplica"}
    assert (out.cluster_row.broker_change, out.cluster_row.broker_id) == ("STARTUP", 1)
    assert 1 in cluster.controller.cluster.live_brokers


def test_startup_resumes_a_reassignment_waiting_on_the_broker() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2])
    cluster.reassign(("t", 0, [1, 3]))
    cluster.failure(3)
    before = cluster.rec("t", 0)
    out = cluster.startup(3)
    d = out.decision("t", 0)
    # Phase A again: LeaderAndIsr with the full RS, epochs + 1.
    assert (d.replicas, d.adding_replicas, d.removing_replicas) == ((1, 3, 2), (3,), (2,))
    assert (d.leader_epoch, d.partition_epoch) == (before.leader_epoch + 1, before.partition_epoch + 1)
    assert 3 in d.recipients


# =====================================================================================================
# Broker FAILURE
# =====================================================================================================

def test_failure_of_a_leader_elects_a_live_isr_member() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3])
    out = cluster.failure(1)
    d = out.decision("t", 0)
    assert (d.leader, d.isr, d.recipients, d.election) == (2, (2, 3), (2, 3), "OFFLINE")
    assert (d.leader_epoch, d.partition_epoch) == (1, 1)
    row = out.row("t", 0)
    assert (row.from_state, row.to_state, row.outcome) == ("OnlinePartition", "OnlinePartition", "ACCEPTED")
    assert row.replica_states == {1: "OfflineReplica", 2: "OnlineReplica", 3: "OnlineReplica"}
    assert [r for r in out.audits if r.to_state == "OfflinePartition"] == []
    assert 1 not in cluster.controller.cluster.broker_epochs


def test_failure_of_a_follower_shrinks_the_isr() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3])
    out = cluster.failure(3)
    d = out.decision("t", 0)
    assert (d.leader, d.isr, d.election) == (1, (1, 2), None)
    assert (d.leader_epoch, d.partition_epoch) == (1, 1)
    assert d.recipients == (1, 2)


def test_failure_of_the_last_isr_member_takes_the_partition_offline_keeping_the_isr() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(2)
    out = cluster.failure(1)
    d = out.decision("t", 0)
    # The ISR never becomes empty: the last member stays, the leader goes to -1.
    assert (d.leader, d.isr, d.election) == (-1, (1,), None)
    assert (d.leader_epoch, d.partition_epoch) == (2, 2)
    row = out.row("t", 0)
    assert (row.from_state, row.to_state) == ("OnlinePartition", "OfflinePartition")
    assert [(r.topic, r.partition) for r in out.audits if r.to_state == "OfflinePartition"] == [("t", 0)]


def test_failure_of_a_replica_outside_the_isr_writes_nothing() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(2)
    cluster.startup(2)
    out = cluster.failure(2)
    assert out.decisions == []
    assert out.row("t", 0).outcome == "ACCEPTED"  # the replica went offline
    assert cluster.replica_states("t", 0)[2] == "OfflineReplica"


def test_failure_with_a_stale_epoch_is_rejected() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    before = snapshot(cluster)
    out = cluster.failure(1, epoch=cluster.broker_epochs[1] - 1)
    assert_rejected(out.only_row, "STALE_BROKER_EPOCH")
    assert_unchanged(cluster, before)
    assert 1 in cluster.controller.cluster.live_brokers


def test_failure_of_an_unregistered_broker() -> None:
    cluster = cluster_with(1)
    assert_rejected(cluster.failure(7, epoch=1).only_row, "BROKER_NOT_AVAILABLE")


def test_failure_removes_the_broker_from_the_shutting_down_set() -> None:
    cluster = cluster_with(1, 2)
    cluster.shutdown(1)
    assert cluster.controller.cluster.shutting_down == {1}
    cluster.failure(1)
    assert cluster.controller.cluster.shutting_down == set()
    # A later startup is a plain startup, not a bounce.
    out = cluster.startup(1)
    assert Action.BROKER_FAILURE not in [h.command.action for h in out.handled]


@pytest.mark.parametrize("unclean", [True, False])
def test_any_failure_takes_offline_partitions_still_led_by_a_shutting_down_broker(unclean: bool) -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2], configs={UNCLEAN: str(unclean).lower()})
    cluster.isr_change("t", 0, [1])
    cluster.shutdown(1)  # no other ISR member: 1 keeps leading while shutting down
    assert cluster.rec("t", 0).leader == 1
    out = cluster.failure(3)  # a broker t-0 does not even live on
    rec = cluster.rec("t", 0)
    if unclean:
        d = out.decision("t", 0)
        assert (d.leader, d.isr, d.election, d.leader_recovery_state) == (
            2, (2,), "OFFLINE_UNCLEAN", "RECOVERING")
        assert rec.state is P.ONLINE
    else:
        assert out.decisions == []
        assert rec.state is P.OFFLINE
        assert out.row("t", 0).to_state == "OfflinePartition"


def test_isr_never_becomes_empty_as_every_broker_fails() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3], [3, 2, 1])
    for broker in (1, 2, 3):
        cluster.failure(broker)
        for p in (0, 1):
            assert cluster.rec("t", p).isr, f"ISR of t-{p} empty after broker {broker} failed"
    assert {cluster.rec("t", p).leader for p in (0, 1)} == {-1}
    # The last broker to fail is the last ISR member of both.
    assert cluster.rec("t", 0).isr == cluster.rec("t", 1).isr == (3,)


# =====================================================================================================
# CONTROLLED_SHUTDOWN
# =====================================================================================================

def test_controlled_shutdown_moves_leadership_away() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3])
    out = cluster.shutdown(1)
    d = out.decision("t", 0)
    assert (d.leader, d.isr, d.recipients, d.election) == (2, (2, 3), (1, 2, 3), "CONTROLLED_SHUTDOWN")
    assert (d.leader_epoch, d.partition_epoch) == (1, 1)
    assert [r for r in out.audits if r.leader_after == 1] == []  # leads nothing any more
    assert cluster.controller.cluster.shutting_down == {1}
    assert 1 not in cluster.controller.cluster.live_brokers


def test_controlled_shutdown_of_a_follower_takes_it_out_of_the_isr() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3])
    out = cluster.shutdown(3)
    d = out.decision("t", 0)
    assert (d.leader, d.isr, d.election) == (1, (1, 2), None)
    assert cluster.replica_states("t", 0)[3] == "OfflineReplica"


def test_controlled_shutdown_leaves_single_replica_partitions_alone() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("solo", [1])
    cluster.create("pair", [1, 2])
    out = cluster.shutdown(1)
    assert out.decisions_for("solo", 0) == []
    assert out.row("solo", 0).outcome == "NO_OP"
    assert cluster.rec("solo", 0).leader == 1
    assert out.decision("pair", 0).leader == 2
    assert [(r.topic, r.partition) for r in out.audits if r.leader_after == 1] == [("solo", 0)]


def test_controlled_shutdown_with_no_other_isr_member_keeps_the_leader_and_lists_it() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.isr_change("t", 0, [1])
    out = cluster.shutdown(1)
    assert_rejected(out.row("t", 0), "ELIGIBLE_LEADERS_NOT_AVAILABLE")
    assert out.decisions == []
    assert cluster.rec("t", 0).leader == 1
    assert [(r.topic, r.partition) for r in out.audits if r.leader_after == 1] == [("t", 0)]
    assert out.cluster_row.message  # the verdict in words, for a reader of the audit


def test_controlled_shutdown_of_unknown_or_stale_broker() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    before = snapshot(cluster)
    assert_rejected(cluster.shutdown(9, epoch=1).only_row, "BROKER_NOT_AVAILABLE")
    assert_rejected(cluster.shutdown(1, epoch=cluster.broker_epochs[1] - 1).only_row, "STALE_BROKER_EPOCH")
    assert_unchanged(cluster, before)
    assert cluster.controller.cluster.shutting_down == set()


def test_a_shutting_down_broker_is_not_live_for_elections_or_the_isr() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3])
    cluster.create("u", [3, 1])
    cluster.shutdown(1)
    # Preferred replica 1 is shutting down.
    assert_rejected(cluster.elect("PREFERRED", ("t", 0)).row("t", 0), "PREFERRED_LEADER_NOT_AVAILABLE")
    # The leader of u may not add it back to the ISR.
    assert_rejected(cluster.isr_change("u", 0, [3, 1]).row("u", 0), "INELIGIBLE_REPLICA")


def test_controlled_shutdown_ignores_topics_being_deleted() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3])
    cluster.failure(3)
    cluster.delete("t")  # waits on broker 3
    out = cluster.shutdown(1)
    assert out.decisions == []


def test_any_failure_elects_an_offline_partition_a_reassignment_gave_a_live_replica() -> None:
    # ZK (onReplicasBecomeOffline -> triggerOnlinePartitionStateChange): every Offline partition of the cluster tries
    # to elect at a broker's failure, not only those the broker hosts. Seed 1471 (Kafka 2.8.2): t0-0's one replica 2
    # died, a reassignment to [3] gave it live replica 3 without electing; broker 1's failure elected 3 uncleanly.
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [2], configs={UNCLEAN: "true"})
    cluster.create("u", [1])
    cluster.failure(2)
    cluster.reassign(("t", 0, [3]))
    rec = cluster.rec("t", 0)
    assert (rec.state, rec.leader, rec.replicas) == (P.OFFLINE, -1, (3, 2))
    out = cluster.failure(1)  # a broker t-0 has no replica on
    d = out.decision("t", 0)
    assert (d.leader, d.isr, d.election) == (3, (3,), "OFFLINE_UNCLEAN")
    assert cluster.rec("t", 0).state is P.ONLINE
