"""ReassignPartitions: start, completion when the ISR catches up, cancel, refusals; epochs across a reassignment of a
partition that never had a leader.

JSON events in (through `parse_event`), decisions and audit rows out (through `Controller.handle`), for the
triggers of docs/semantics.md."""

from __future__ import annotations

import pytest

from statemachine.controller import ControllerConfig
from statemachine.features import ZOOKEEPER_ERA_PROTOCOL
from statemachine.rules import KRAFT, ZK
from statemachine.states import PartitionState, ReplicaState

from .cluster import UNCLEAN, assert_rejected, assert_unchanged, cluster_with, snapshot

P = PartitionState
R = ReplicaState


# =====================================================================================================
# ReassignPartitions
# =====================================================================================================

def test_reassignment_start() -> None:
    cluster = cluster_with(1, 2, 3, 4, 5)
    cluster.create("t", [1, 2, 3])
    out = cluster.reassign(("t", 0, [4, 5, 2]))
    d = out.decision("t", 0)
    # RS = (target ++ origin).distinct, AR = RS - origin, RR = RS - target.
    assert (d.replicas, d.adding_replicas, d.removing_replicas) == ((4, 5, 2, 1, 3), (4, 5), (1, 3))
    assert (d.leader, d.isr, d.election) == (1, (1, 2, 3), None)
    assert (d.leader_epoch, d.partition_epoch) == (1, 1)
    # The LeaderAndIsr goes to the origin replicas and to the adding ones.
    assert sorted(d.recipients) == [1, 2, 3, 4, 5]
    row = out.row("t", 0)
    assert row.outcome == "ACCEPTED"
    assert row.replica_states == {1: "OnlineReplica", 2: "OnlineReplica", 3: "OnlineReplica",
                                     4: "NewReplica", 5: "NewReplica"}
    rec = cluster.rec("t", 0)
    assert rec.reassignment_in_progress
    assert rec.target_replicas == (4, 5, 2)
    assert set(rec.origin_replicas) == {1, 2, 3}


def test_reassignment_completes_when_the_isr_catches_up_moving_the_leader() -> None:
    cluster = cluster_with(1, 2, 3, 4, 5)
    cluster.create("t", (1, 2, 3))
    cluster.reassign(("t", 0, (4, 5, 2)))
    partial = cluster.isr_change("t", 0, (1, 2, 3, 4))
    assert [d.partition_epoch for d in partial.decisions] == [2]
    assert cluster.rec("t", 0).reassignment_in_progress
    out = cluster.isr_change("t", 0, (1, 2, 3, 4, 5))
    summary = [(d.leader, d.isr, d.replicas, d.adding_replicas, d.removing_replicas, d.election,
                d.leader_epoch, d.partition_epoch) for d in out.decisions]
    assert summary == [
        # the leader's ISR change itself: partition epoch only
        (1, (1, 2, 3, 4, 5), (4, 5, 2, 1, 3), (4, 5), (1, 3), None, 1, 3),
        # RS = target; the leader 1 is not in the target: REASSIGN election, ISR unchanged
        (4, (1, 2, 3, 4, 5), (4, 5, 2), (), (), "REASSIGN", 2, 4),
        # each removing replica goes offline: out of the ISR
        (4, (2, 3, 4, 5), (4, 5, 2), (), (), None, 3, 5),
        (4, (2, 4, 5), (4, 5, 2), (), (), None, 4, 6),
    ]
    assert out.decisions[1].recipients == (4, 5, 2)
    row = out.row("t", 0)
    assert (row.outcome, row.election) == ("ACCEPTED", "REASSIGN")
    assert set(row.replica_states) == {2, 4, 5}  # RR replicas deleted: NonExistentReplica
    rec = cluster.rec("t", 0)
    assert (rec.replicas, rec.adding_replicas, rec.removing_replicas, rec.leader, rec.isr) == (
        (4, 5, 2), (), (), 4, (2, 4, 5))
    assert not rec.reassignment_in_progress


def test_reassignment_completion_keeps_a_live_leader_that_is_in_the_target() -> None:
    cluster = cluster_with(1, 2, 3, 4)
    cluster.create("t", (1, 2, 3))
    cluster.reassign(("t", 0, (1, 2, 4)))
    out = cluster.isr_change("t", 0, (1, 2, 3, 4))
    summary = [(d.leader, d.isr, d.replicas, d.election, d.leader_epoch, d.partition_epoch)
               for d in out.decisions]
    assert summary == [
        (1, (1, 2, 3, 4), (1, 2, 4, 3), None, 1, 2),
        (1, (1, 2, 3, 4), (1, 2, 4), None, 2, 3),  # leader stays: epochs + 1
        (1, (1, 2, 4), (1, 2, 4), None, 3, 4),  # 3 leaves the ISR
    ]


def test_reassignment_already_within_the_isr_completes_at_once() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", (1, 2, 3))
    out = cluster.reassign(("t", 0, (2, 3)))
    summary = [(d.leader, d.isr, d.replicas, d.election, d.partition_epoch) for d in out.decisions]
    assert summary == [(2, (1, 2, 3), (2, 3), "REASSIGN", 1), (2, (2, 3), (2, 3), None, 2)]
    assert cluster.replica_states("t", 0) == {2: "OnlineReplica", 3: "OnlineReplica"}


def test_reassignment_cancel_goes_back_to_the_origin() -> None:
    cluster = cluster_with(1, 2, 3, 4)
    cluster.create("t", [1, 2, 3])
    cluster.reassign(("t", 0, [1, 2, 4]))
    out = cluster.reassign(("t", 0, None))
    d = out.decision("t", 0)
    assert (d.replicas, d.adding_replicas, d.removing_replicas, d.leader, d.isr) == (
        (1, 2, 3), (), (), 1, (1, 2, 3))
    assert (d.leader_epoch, d.partition_epoch) == (2, 2)
    assert cluster.replica_states("t", 0) == {1: "OnlineReplica", 2: "OnlineReplica", 3: "OnlineReplica"}
    assert not cluster.rec("t", 0).reassignment_in_progress
    # Nothing left to cancel.
    assert_rejected(cluster.reassign(("t", 0, None)).only_row, "NO_REASSIGNMENT_IN_PROGRESS")


def test_reassignment_cancel_returns_to_the_origin_replicas_in_kafka_order() -> None:
    """Kafka's origin is RS minus AR, in RS order (target first): cancelling [1, 2, 3] -> [4, 5, 2] gives
    back replicas 1, 2 and 3, ordered [2, 1, 3] (docs/semantics.md, 'Behaviour where the interface is silent')."""
    cluster = cluster_with(1, 2, 3, 4, 5)
    cluster.create("t", [1, 2, 3])
    cluster.reassign(("t", 0, [4, 5, 2]))
    out = cluster.reassign(("t", 0, None))
    assert out.decisions[-1].replicas == (2, 1, 3)
    rec = cluster.rec("t", 0)
    assert rec.replicas == (2, 1, 3) and rec.adding_replicas == () and rec.removing_replicas == ()
    assert 4 not in rec.replica_states and 5 not in rec.replica_states


def test_cancel_without_reassignment_in_progress() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    before = snapshot(cluster)
    out = cluster.reassign(("t", 0, None))
    assert_rejected(out.row("t", 0), "NO_REASSIGNMENT_IN_PROGRESS")
    assert_unchanged(cluster, before)


@pytest.mark.parametrize("target", [[], [1, 1], [1, -2], [1, 9], [1, 4]],
                         ids=["empty", "duplicate", "negative", "unregistered", "shutting-down"])
def test_reassignment_to_an_invalid_target(target: list[int]) -> None:
    cluster = cluster_with(1, 2, 3, 4)
    cluster.create("t", [1, 2, 3])
    cluster.shutdown(4)
    before = snapshot(cluster)
    out = cluster.reassign(("t", 0, target))
    assert_rejected(out.row("t", 0), "INVALID_REPLICA_ASSIGNMENT")
    assert out.decisions == []
    assert_unchanged(cluster, before)


def test_reassignment_may_keep_a_dead_origin_replica() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3])
    cluster.failure(3)
    out = cluster.reassign(("t", 0, [3, 1]))
    assert out.row("t", 0).outcome == "ACCEPTED"


def test_reassignment_of_unknown_partition_and_per_partition_verdicts() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2], [2, 1])
    out = cluster.reassign(("t", 0, [2, 3]), ("t", 1, [2, 2]), ("t", 7, [1, 2]))
    assert out.row("t", 0).outcome == "ACCEPTED"
    assert_rejected(out.row("t", 1), "INVALID_REPLICA_ASSIGNMENT")
    assert_rejected(out.row("t", 7), "UNKNOWN_TOPIC_OR_PARTITION")
    assert cluster.record("t", 7) is None


def test_pending_reassignment_resumes_after_controller_failover() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2])
    cluster.reassign(("t", 0, [1, 3]))
    before = cluster.rec("t", 0)
    out = cluster.controller_change(controller_id=2)
    d = out.decision("t", 0)
    assert (d.replicas, d.adding_replicas, d.removing_replicas) == ((1, 3, 2), (3,), (2,))
    assert (d.leader_epoch, d.partition_epoch) == (before.leader_epoch + 1, before.partition_epoch + 1)
    assert d.controller_epoch == 2


def test_a_failover_completes_again_the_reassignment_its_predecessor_died_inside() -> None:
    # A real 3.5.2 cluster (zk campaign seed 311): the controller completed t-0's reassignment [1, 2] -> [1, 3] up to
    # the ISR shrink (B4) and was killed before its assignment write (B6). The next controller read the reassignment
    # still in progress in /brokers/topics/t and completed it again: a leader epoch bump, replica 2 offline (no
    # longer in the ISR: no write).
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2])
    cluster.reassign(("t", 0, [1, 3]))
    cluster.isr_change("t", 0, [1, 2, 3])  # completes: B3 bump, B4 ISR [1, 3]
    done = cluster.rec("t", 0)
    assert (done.replicas, done.isr, done.reassignment_in_progress) == ((1, 3), (1, 3), False)
    read = {"topic": "t", "partition": 0, "replicas": [1, 3, 2], "adding_replicas": [3], "removing_replicas": [2]}
    out = cluster.controller_change(controller_id=3, reassignments=[read])
    [bump] = out.decisions_for("t", 0)
    assert (bump.leader, bump.isr, bump.leader_epoch, bump.replicas) == (1, (1, 3), done.leader_epoch + 1, (1, 3))
    assert not cluster.rec("t", 0).reassignment_in_progress


def test_a_completion_cut_after_the_leader_moved_ends_there_and_the_next_failover_completes_it() -> None:
    # A real 3.9.1 cluster (zk campaign seed 443): t-0 reassigned from [3] to [2]; the AlterPartition adding 2 let the
    # completion start, which moved the leader to 2 (B3), and then its controller, broker 3, was killed before it took
    # 3 out of the ISR (B4). The next controller read the reassignment in /brokers/topics/t: its failover took the dead
    # 3 out of the ISR and completed the reassignment again (two leader epoch bumps).
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [3])
    cluster.reassign(("t", 0, [2]))
    out = cluster.isr_change("t", 0, [3, 2], controller_died_after_leader_move=True)
    accepted, moved = out.decisions_for("t", 0)
    assert (accepted.leader, accepted.isr, moved.leader, moved.isr) == (3, (3, 2), 2, (3, 2))
    assert moved.leader_epoch == accepted.leader_epoch + 1
    cut = cluster.rec("t", 0)
    assert (cut.replicas, cut.adding_replicas, cut.removing_replicas, cut.reassignment_in_progress) == \
        ((2, 3), (2,), (3,), True)
    read = {"topic": "t", "partition": 0, "replicas": [2, 3], "adding_replicas": [2], "removing_replicas": [3]}
    live = {str(b): cluster.broker_epochs[b] for b in (1, 2)}
    out = cluster.controller_change(controller_id=1, live_brokers=live, reassignments=[read])
    shrunk, completed = out.decisions_for("t", 0)
    assert [(d.leader, d.isr, d.leader_epoch) for d in (shrunk, completed)] == \
        [(2, (2,), moved.leader_epoch + 1), (2, (2,), moved.leader_epoch + 2)]
    assert (cluster.rec("t", 0).replicas, cluster.rec("t", 0).reassignment_in_progress) == ((2,), False)


def test_a_controller_dead_before_the_completion_wrote_leaves_it_to_the_next_failover() -> None:
    # A real 2.8.2 cluster (zk campaign seed 1211): t-0 reassigned from [1, 4] to [2, 3]; the AlterPartition taking 2
    # into the ISR was written, and the controller's broker 1 (the leader) paused before maybeCompleteReassignment read
    # the state. The next controller's failover took 1 offline (leader -1), elected 2, and completed the reassignment.
    cluster = cluster_with(1, 2, 3, 4)
    cluster.create("t", [1, 4])
    cluster.reassign(("t", 0, [2, 3]))
    cluster.isr_change("t", 0, [1, 4, 3])
    out = cluster.isr_change("t", 0, [1, 4, 3, 2], controller_died_before_completion=True)
    [accepted] = out.decisions_for("t", 0)
    assert (accepted.leader, accepted.isr) == (1, (1, 4, 3, 2))
    cut = cluster.rec("t", 0)
    assert (cut.replicas, cut.reassignment_in_progress) == ((2, 3, 1, 4), True)
    read = {"topic": "t", "partition": 0, "replicas": [2, 3, 1, 4], "adding_replicas": [2, 3],
            "removing_replicas": [1, 4]}
    live = {str(b): cluster.broker_epochs[b] for b in (2, 3, 4)}
    out = cluster.controller_change(controller_id=4, live_brokers=live, reassignments=[read])
    assert [(d.leader, d.isr) for d in out.decisions_for("t", 0)][:2] == [(-1, (4, 3, 2)), (2, (4, 3, 2))]
    assert (cluster.rec("t", 0).replicas, cluster.rec("t", 0).isr, cluster.rec("t", 0).reassignment_in_progress) == \
        ((2, 3), (3, 2), False)


# =====================================================================================================
# Epochs across a reassignment of a partition that never had a leader
# =====================================================================================================

def test_partition_epoch_rises_with_every_decision_even_before_the_first_leader() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [4, 5])  # no live replica: NewPartition
    decisions = cluster.reassign(("t", 0, [1, 2])).decisions
    decisions += cluster.startup(4).decisions  # a replica's broker appears: first election
    assert cluster.rec("t", 0).leader != -1
    epochs = [d.partition_epoch for d in decisions]
    assert epochs == sorted(set(epochs)), f"partition epochs {epochs} must strictly rise"


def test_cancel_dropping_the_whole_isr_leaves_the_last_member_under_zk_and_is_refused_under_kraft() -> None:
    for rules in (ZK, KRAFT):
        cluster = cluster_with(1, 2, config=ControllerConfig(rules=rules))
        cluster.create("t", [1])
        cluster.reassign(("t", 0, [1, 2]))
        cluster.failure(1)
        cluster.elect("UNCLEAN", ("t", 0))  # the adding replica 2 becomes the only ISR member
        assert cluster.rec("t", 0).isr == (2,)
        out = cluster.reassign(("t", 0, None))
        rec = cluster.rec("t", 0)
        if rules is KRAFT:
            assert_rejected(out.only_row, "INVALID_REPLICA_ASSIGNMENT")
            assert set(rec.isr) <= set(rec.replicas), rec
        else:
            # What a real Kafka 3.9 controller wrote (zk campaign seed 17): the cancel takes replica 2 offline (the
            # last ISR member stays, the leader goes) and finds no leader among the original replicas; to its
            # partition state machine the partition is still online (removeReplicasFromIsr changes no state).
            assert (rec.replicas, rec.leader, rec.isr, rec.state) == ((1,), -1, (2,), P.ONLINE)
            assert [(d.leader, d.isr) for d in out.decisions] == [(-1, (2,))]


def test_new_target_dropping_the_leading_adding_replica_leaves_the_partition_without_a_leader() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1])
    cluster.reassign(("t", 0, [2, 3]))  # RS [2, 3, 1], AR [2, 3], RR [1]
    cluster.isr_change("t", 0, [1, 2])
    cluster.elect("PREFERRED", ("t", 0))  # the adding replica 2 leads
    assert cluster.rec("t", 0).leader == 2
    out = cluster.reassign(("t", 0, [3]))  # 2 is no longer wanted
    rec = cluster.rec("t", 0)
    # ZK's updateCurrentReassignment takes replica 2 offline (leader -1, ISR [1]) and elects nobody; the
    # reassignment goes on (3 is not in the ISR: a leader epoch bump, still without a leader).
    assert (rec.replicas, rec.leader, rec.isr) == ((3, 1), -1, (1,)), rec
    assert [(d.leader, d.isr) for d in out.decisions] == [(-1, (1,)), (-1, (1,))]


def test_completed_reassignment_without_a_leader_writes_only_under_kraft() -> None:
    for rules in (ZK, KRAFT):
        cluster = cluster_with(1, 2, config=ControllerConfig(rules=rules))
        cluster.create("t", [1, 2])
        cluster.isr_change("t", 0, [1])
        cluster.failure(1)  # offline: leader -1, ISR [1]
        before = cluster.rec("t", 0)
        out = cluster.reassign(("t", 0, [1]))  # the target is within the ISR: completes at once
        assert cluster.rec("t", 0).replicas == (1,)
        decisions = out.decisions_for("t", 0)
        if rules is KRAFT:  # the PartitionChangeRecord carries the new replicas
            assert decisions and decisions[-1].replicas == (1,)
            assert decisions[-1].partition_epoch > before.partition_epoch
        else:  # moveReassignedPartitionLeaderIfRequired: no leader to elect, nothing written (UpdateMetadata only)
            assert decisions == []


def test_isr_change_of_a_topic_being_deleted_does_not_resume_its_reassignment() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2])
    cluster.reassign(("t", 0, [1, 3]))
    cluster.failure(2)  # the deletion will wait on broker 2
    cluster.delete("t")  # broker 1's replica goes offline: leader -1
    out = cluster.isr_change("t", 0, [1, 3], broker=1)
    assert out.only_row.error != "INVALID_TRANSITION", out.only_row
    assert all(d.election is None for d in out.decisions)


def test_zk_no_unclean_election_while_a_live_broker_no_longer_a_replica_holds_the_isr() -> None:
    # What a real Kafka 3.9 controller did (zk campaign seed 17): a cancel away from the only ISR member left it in the
    # ISR of a leaderless partition; turning unclean election on then failed ("failed to change state ... from
    # OfflinePartition to OnlinePartition", nothing written): PartitionStateMachine elects partitions whose ISR has a
    # live broker cleanly only, and that broker is not a replica.
    cluster = cluster_with(1, 2)
    cluster.create("t", [2])
    cluster.reassign(("t", 0, [1]))  # RS [1, 2], AR [1]; 1 not yet in the ISR
    cluster.failure(2)
    cluster.elect("UNCLEAN", ("t", 0))  # 1 leads, alone in the ISR
    cluster.reassign(("t", 0, None))  # cancel: back to [2], whose broker is down; 1 goes offline, stays in the ISR
    cluster.controller_change(epoch=2)  # the failover finds no leader: OfflinePartition
    cluster.startup(2)  # clean election only: 2 is not in the ISR
    assert (cluster.rec("t", 0).replicas, cluster.rec("t", 0).leader, cluster.rec("t", 0).isr) == ((2,), -1, (1,))
    out = cluster.alter("t", {UNCLEAN: "true"})
    assert out.decisions == []
    rec = cluster.rec("t", 0)
    assert (rec.leader, rec.isr, rec.state) == (-1, (1,), P.OFFLINE)
    assert_rejected(cluster.elect("UNCLEAN", ("t", 0)).row("t", 0), "ELIGIBLE_LEADERS_NOT_AVAILABLE")


@pytest.mark.parametrize("protocol_below_2_7", [True, False])
def test_zk_unclean_election_of_the_one_target_completes_the_reassignment_below_protocol_2_7(
        protocol_below_2_7: bool) -> None:
    # What a real Kafka 3.9 controller did at inter.broker.protocol 2.6 (zk campaign seed 128): t0-1, replicas [2] with
    # broker 2 down, reassigned to [3]; turning unclean election on elected 3, alone in the ISR. The controller
    # watches a reassigning partition's state znode below protocol 2.7, its own write fired the watch, and the
    # reassignment completed next: a leader epoch bump, replicas [3]. From 2.7 on nothing watches the znode: the
    # reassignment waits for an AlterPartition.
    config = ControllerConfig(rules=ZK, metadata_version=ZOOKEEPER_ERA_PROTOCOL) if protocol_below_2_7 else None
    cluster = cluster_with(1, 2, 3, config=config)
    cluster.create("t", [2])
    cluster.failure(2)
    cluster.reassign(("t", 0, [3]))  # RS [3, 2], AR [3]; the partition stays leaderless
    out = cluster.alter("t", {UNCLEAN: "true"})
    steps = [(d.leader, d.isr, d.leader_epoch, d.replicas) for d in out.decisions]
    if protocol_below_2_7:
        assert steps == [(3, (3,), 3, (3, 2)), (3, (3,), 4, (3,))]
        assert not cluster.rec("t", 0).reassignment_in_progress
    else:
        assert steps == [(3, (3,), 3, (3, 2))]
        assert cluster.rec("t", 0).reassignment_in_progress


def test_zk_a_new_partition_a_reassignment_gave_a_live_replica_elects_at_any_brokers_startup() -> None:
    # What a real Kafka 3.9 controller did (zk campaign seed 143): t2-2 was created on broker 1, which was down, so
    # it stayed New; a reassignment to [3] gave it a live replica but elected nothing (it never had a leader). When
    # broker 2, no replica of it, started, onBrokerStartup tried every New and Offline partition of the cluster
    # (triggerOnlinePartitionStateChange) and elected 3. The kraft rules elect the new broker's partitions only.
    config = ControllerConfig(rules=ZK)
    cluster = cluster_with(1, 2, 3, config=config)
    cluster.failure(1)
    cluster.failure(2)
    cluster.create("t", [1])
    cluster.reassign(("t", 0, [3]))
    assert (cluster.rec("t", 0).state, cluster.rec("t", 0).replicas) == (P.NEW, (3, 1))
    out = cluster.startup(2)
    d = out.decision("t", 0)
    assert (d.leader, d.isr, d.leader_epoch, d.election) == (3, (3,), 0, "INITIAL")


def test_zk_a_partition_a_completion_left_leaderless_elects_at_any_brokers_failure_not_at_a_startup() -> None:
    # What a real Kafka 2.8.2 controller did (zk campaign seed 707): t0-1 reassigned from [4] to [2]; broker 2 died
    # and the leader's AlterIsr then put 2 in the ISR, so the completion took leader 4 out with no live target to
    # elect: leader -1, ISR [2], still OnlinePartition. Broker 2's startup elected nothing (it tries New and Offline
    # partitions); broker 3's failure did (onReplicasBecomeOffline: every partition whose leader is not live). Below
    # protocol 2.7 here, where the leader's ISR naming a dead broker goes through as it did at 2.8.
    cluster = cluster_with(2, 3, 4, config=ControllerConfig(rules=ZK, metadata_version=ZOOKEEPER_ERA_PROTOCOL))
    cluster.create("t", [4])
    cluster.reassign(("t", 0, [2]))  # RS [2, 4], AR [2], RR [4]
    cluster.failure(2)
    cluster.isr_change("t", 0, [4, 2])  # completes: 4 out, no live replica of [2] to elect
    rec = cluster.rec("t", 0)
    assert (rec.replicas, rec.leader, rec.isr, rec.state) == ((2,), -1, (2,), P.ONLINE), rec
    assert cluster.startup(2).decisions_for("t", 0) == []
    assert [(d.leader, d.isr) for d in cluster.failure(3).decisions_for("t", 0)] == [(2, (2,))]


@pytest.mark.parametrize("queued", [True, False])
def test_zk_a_startup_queued_before_the_leaders_isr_write_completes_the_reassignment_below_protocol_2_7(
        queued: bool) -> None:
    # What a real Kafka 3.9.1 controller did at inter.broker.protocol 2.6 (zk campaign seed 702): t1-0 reassigned
    # from [1, 3] to [2, 3]; broker 2 registered again and 26 ms later the leader wrote the ISR [3, 1, 2] itself. The
    # startup, handled first, read that ISR from ZooKeeper and completed the reassignment (a leader epoch bump, then
    # 1 out of the ISR); the leader's change then found nothing to complete.
    cluster = cluster_with(1, 2, 3, config=ControllerConfig(rules=ZK, metadata_version=ZOOKEEPER_ERA_PROTOCOL))
    cluster.create("t", [3, 1])
    cluster.reassign(("t", 0, [2, 3]))  # RS [2, 3, 1], AR [2], RR [1]
    cluster.failure(2)
    out = cluster.isr_change("t", 0, [3, 1, 2], reassignment_completed_by_queued_event=queued)
    assert [d.isr for d in out.decisions_for("t", 0)] == ([(3, 1, 2)] if queued else [(3, 1, 2), (3, 1, 2), (3, 2)])
    assert cluster.rec("t", 0).reassignment_in_progress is queued
    started = [(d.leader, d.isr, d.replicas) for d in cluster.startup(2).decisions_for("t", 0)]
    assert started == ([(3, (3, 1, 2), (2, 3)), (3, (3, 2), (2, 3))] if queued else [])


@pytest.mark.parametrize("failover_first", [False, True])
def test_zk_a_reassignment_of_a_new_partition_to_its_own_replicas_completes_at_its_brokers_startup(
        failover_first: bool) -> None:
    # What a real Kafka 3.0.2 controller did (zk campaign seed 1497): t5-1, created on broker 3 while it was down
    # (New, no state znode), reassigned to [3]: nothing added or removed, so the completion ran at once and threw at
    # B3 (no leader to read), leaving the partition in partitionsBeingReassigned. Broker 3's startup elected it,
    # then resumed that reassignment: a leader epoch bump (B3), the assignment rewritten. A new controller in between
    # forgets it (ZooKeeper holds nothing of it): the startup only elects.
    cluster = cluster_with(1, 2, config=ControllerConfig(rules=ZK))
    cluster.create("t", [3])
    out = cluster.reassign(("t", 0, [3]))
    assert (out.decisions, cluster.rec("t", 0).state, cluster.rec("t", 0).reassignment_in_progress) == \
        ([], P.NEW, True)
    if failover_first:
        cluster.controller_change(controller_id=1)
    steps = [(d.leader, d.isr, d.leader_epoch, d.replicas, d.election)
             for d in cluster.startup(3).decisions_for("t", 0)]
    assert steps == [(3, (3,), 0, (3,), "INITIAL")] + ([] if failover_first else [(3, (3,), 1, (3,), None)])
    assert not cluster.rec("t", 0).reassignment_in_progress
