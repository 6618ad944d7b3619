"""Admin-driven elections: ElectLeaders (preferred, unclean), AlterTopicConfig turning unclean election on, the
periodic LeaderImbalanceCheck.

JSON events in (through `parse_event`), decisions and audit rows out (through `Controller.handle`), for the
triggers of docs/semantics.md."""

from __future__ import annotations

from statemachine.controller import ControllerConfig
from statemachine.states import PartitionState, ReplicaState

from .cluster import UNCLEAN, Cluster, assert_rejected, assert_unchanged, cluster_with, snapshot

P = PartitionState
R = ReplicaState


# =====================================================================================================
# ElectLeaders
# =====================================================================================================

def preferred_moved_away(cluster: Cluster) -> None:
    """t-0 on [1, 2]: broker 1 bounced, so 2 leads; 1 is back in the ISR."""
    cluster.start(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(1)
    cluster.startup(1)
    cluster.isr_change("t", 0, [2, 1])


def test_preferred_election_restores_the_preferred_leader() -> None:
    cluster = Cluster()
    preferred_moved_away(cluster)
    before = cluster.rec("t", 0)
    out = cluster.elect("PREFERRED", ("t", 0))
    d = out.decision("t", 0)
    assert (d.leader, d.isr, d.recipients, d.election, d.is_new) == (
        1, (2, 1), (1, 2), "PREFERRED", False)
    assert (d.leader_epoch, d.partition_epoch) == (before.leader_epoch + 1, before.partition_epoch + 1)
    assert out.row("t", 0).election == "PREFERRED"


def test_preferred_election_not_needed() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    out = cluster.elect("PREFERRED", ("t", 0))
    assert_rejected(out.row("t", 0), "ELECTION_NOT_NEEDED")
    assert out.decisions == []


def test_preferred_leader_not_available() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(1)
    # Dead.
    assert_rejected(cluster.elect("PREFERRED", ("t", 0)).row("t", 0), "PREFERRED_LEADER_NOT_AVAILABLE")
    # Live again but not yet in the ISR.
    cluster.startup(1)
    before = snapshot(cluster)
    assert_rejected(cluster.elect("PREFERRED", ("t", 0)).row("t", 0), "PREFERRED_LEADER_NOT_AVAILABLE")
    assert_unchanged(cluster, before)


def test_preferred_election_of_unknown_or_deleted_partition() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(2)
    cluster.delete("t")  # waits on broker 2
    out = cluster.elect("PREFERRED", ("t", 0), ("t", 3), ("x", 0))
    assert_rejected(out.row("t", 0), "INVALID_TOPIC_EXCEPTION")
    assert_rejected(out.row("t", 3), "UNKNOWN_TOPIC_OR_PARTITION")
    assert_rejected(out.row("x", 0), "UNKNOWN_TOPIC_OR_PARTITION")


def test_preferred_election_for_all_partitions() -> None:
    cluster = Cluster()
    preferred_moved_away(cluster)
    cluster.create("u", [2, 1])
    out = cluster.elect("PREFERRED", all_partitions=True)
    assert [(r.topic, r.partition, r.outcome, r.error) for r in out.audits] == [
        ("t", 0, "ACCEPTED", None), ("u", 0, "REJECTED", "ELECTION_NOT_NEEDED")]


def test_unclean_election_of_an_offline_partition() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.isr_change("t", 0, [1])
    cluster.failure(1)
    out = cluster.elect("UNCLEAN", ("t", 0))
    d = out.decision("t", 0)
    assert (d.leader, d.isr, d.recipients, d.election, d.leader_recovery_state) == (
        2, (2,), (2,), "OFFLINE_UNCLEAN", "RECOVERING")
    row = out.row("t", 0)
    assert (row.from_state, row.to_state, row.election) == (
        "OfflinePartition", "OnlinePartition", "OFFLINE_UNCLEAN")


def test_unclean_election_not_needed_while_the_leader_is_live() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    assert_rejected(cluster.elect("UNCLEAN", ("t", 0)).row("t", 0), "ELECTION_NOT_NEEDED")


def test_unclean_election_with_no_live_replica() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(2)
    cluster.failure(1)
    before = snapshot(cluster)
    out = cluster.elect("UNCLEAN", ("t", 0))
    assert_rejected(out.row("t", 0), "ELIGIBLE_LEADERS_NOT_AVAILABLE")
    assert out.row("t", 0).to_state == "OfflinePartition"
    assert_unchanged(cluster, before)


def test_unclean_election_replaces_a_shutting_down_leader() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.isr_change("t", 0, [1])
    cluster.shutdown(1)  # no other ISR member: 1 keeps leading
    out = cluster.elect("UNCLEAN", ("t", 0))
    d = out.decision("t", 0)
    assert (d.leader, d.isr, d.election) == (2, (2,), "OFFLINE_UNCLEAN")
    assert out.row("t", 0).to_state == "OnlinePartition"


def test_unclean_election_of_unknown_partition() -> None:
    cluster = cluster_with(1)
    assert_rejected(cluster.elect("UNCLEAN", ("t", 0)).only_row, "UNKNOWN_TOPIC_OR_PARTITION")


# =====================================================================================================
# AlterTopicConfig
# =====================================================================================================

def offline_without_isr(config: ControllerConfig | None = None, configs: dict | None = None) -> Cluster:
    """t-0 on [1, 2]: ISR [1], broker 1 dead, broker 2 live: offline, electable only uncleanly."""
    cluster = cluster_with(1, 2, config=config)
    cluster.create("t", [1, 2], configs=configs)
    cluster.isr_change("t", 0, [1])
    cluster.failure(1)
    assert cluster.rec("t", 0).state is P.OFFLINE
    return cluster


def test_turning_unclean_on_elects_offline_partitions() -> None:
    cluster = offline_without_isr()
    out = cluster.alter("t", {UNCLEAN: "true"})
    assert out.audits[0].partition is None and out.audits[0].outcome == "ACCEPTED"
    d = out.decision("t", 0)
    assert (d.leader, d.isr, d.election, d.leader_recovery_state, d.cause) == (
        2, (2,), "OFFLINE_UNCLEAN", "RECOVERING", "AlterTopicConfig")
    assert cluster.controller.unclean_allowed("t")


def test_config_change_that_does_not_turn_unclean_on_elects_nothing() -> None:
    cluster = offline_without_isr()
    out = cluster.alter("t", {UNCLEAN: "false", "retention.ms": "1000"})
    assert out.decisions == []
    assert [r.partition for r in out.audits] == [None]
    assert cluster.rec("t", 0).state is P.OFFLINE


def test_null_restores_the_cluster_default() -> None:
    cluster = offline_without_isr(ControllerConfig(unclean_leader_election_enable=True), {UNCLEAN: "false"})
    assert cluster.rec("t", 0).leader == -1
    out = cluster.alter("t", {UNCLEAN: None})
    assert out.decision("t", 0).election == "OFFLINE_UNCLEAN"
    assert "t" not in cluster.controller.cluster.topic_configs


def test_cluster_default_unclean_elects_at_failure() -> None:
    cluster = cluster_with(1, 2, config=ControllerConfig(unclean_leader_election_enable=True))
    cluster.create("t", [1, 2])
    cluster.isr_change("t", 0, [1])
    out = cluster.failure(1)
    d = out.decision("t", 0)
    assert (d.leader, d.election, d.leader_recovery_state) == (2, "OFFLINE_UNCLEAN", "RECOVERING")


def test_alter_config_rejections() -> None:
    cluster = offline_without_isr()
    assert_rejected(cluster.alter("nope", {UNCLEAN: "true"}).only_row, "UNKNOWN_TOPIC_OR_PARTITION")
    before = snapshot(cluster)
    assert_rejected(cluster.alter("t", {UNCLEAN: "sometimes"}).only_row, "INVALID_REQUEST")
    assert_unchanged(cluster, before)
    assert not cluster.controller.unclean_allowed("t")


def test_turning_unclean_on_for_a_topic_being_deleted_elects_nothing() -> None:
    cluster = offline_without_isr()
    cluster.delete("t")  # waits on broker 1
    out = cluster.alter("t", {UNCLEAN: "true"})
    assert out.decisions == []
    assert cluster.rec("t", 0).leader == -1


# =====================================================================================================
# LeaderImbalanceCheck
# =====================================================================================================

def imbalanced(not_preferred: int, total: int = 10, config: ControllerConfig | None = None,
               out_of_isr: int = 0) -> Cluster:
    """`total` partitions preferring broker 1 (RS [1, 2]); all but `not_preferred` led by 1. The last
    `out_of_isr` of the ones led by 2 do not have 1 in their ISR."""
    cluster = cluster_with(1, 2, config=config)
    cluster.create("t", *([[1, 2]] * total))
    cluster.shutdown(1)
    cluster.failure(1)
    cluster.startup(1)
    for p in range(total - out_of_isr):
        cluster.isr_change("t", p, [2, 1])
    if total > not_preferred:
        out = cluster.elect("PREFERRED", *[("t", p) for p in range(not_preferred, total)])
        assert not out.errors, out.errors
    assert sum(cluster.rec("t", p).leader != 1 for p in range(total)) == not_preferred
    return cluster


def test_imbalance_at_the_threshold_triggers_nothing() -> None:
    cluster = imbalanced(not_preferred=1)  # 1/10 = 10%, not above 10%
    out = cluster.imbalance_check()
    assert out.decisions == []
    assert out.only_row.outcome == "ACCEPTED"
    assert out.only_row.partition is None and out.only_row.message  # says why nothing was elected


def test_imbalance_above_the_threshold_elects_preferred_leaders() -> None:
    cluster = imbalanced(not_preferred=2)  # 20%
    out = cluster.imbalance_check()
    assert [(d.partition, d.leader, d.election, d.cause) for d in out.decisions] == [
        (0, 1, "PREFERRED", "LeaderImbalanceCheck"), (1, 1, "PREFERRED", "LeaderImbalanceCheck")]
    assert out.cluster_row.outcome == "ACCEPTED"
    assert all(cluster.rec("t", p).leader == 1 for p in range(10))


def test_imbalance_elects_only_where_the_preferred_replica_is_in_the_isr() -> None:
    cluster = imbalanced(not_preferred=10, out_of_isr=3)
    out = cluster.imbalance_check()
    assert [d.partition for d in out.decisions] == list(range(7))
    assert [cluster.rec("t", p).leader for p in range(7, 10)] == [2, 2, 2]


def test_imbalance_threshold_comes_from_the_config() -> None:
    cluster = imbalanced(not_preferred=2, config=ControllerConfig(leader_imbalance_per_broker_percentage=20))
    assert cluster.imbalance_check().decisions == []


def test_auto_leader_rebalance_disabled() -> None:
    cluster = imbalanced(not_preferred=10, config=ControllerConfig(auto_leader_rebalance_enable=False))
    out = cluster.imbalance_check()
    assert out.only_row.outcome == "NO_OP"
    assert out.decisions == []


