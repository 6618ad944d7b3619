"""DeleteTopic: replicas deleted, deletion waiting for dead brokers, the topic gone once every replica is.

JSON events in (through `parse_event`), decisions and audit rows out (through `Controller.handle`), for the
triggers of docs/semantics.md."""

from __future__ import annotations

from statemachine.states import PartitionState, ReplicaState

from .cluster import UNCLEAN, Cluster, assert_rejected, cluster_with

P = PartitionState
R = ReplicaState


# =====================================================================================================
# DeleteTopic
# =====================================================================================================

def test_delete_topic_with_live_brokers_is_immediate() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2], [2, 1], configs={UNCLEAN: "true"})
    out = cluster.delete("t")
    # Each live replica goes offline first (ReplicaStateMachine removeReplicasFromIsr): the state znode is written,
    # one replica at a time (the last ISR member stays), but no LeaderAndIsr is sent for a topic being deleted.
    assert [(d.leader, list(d.isr), d.leader_epoch, d.recipients) for d in out.decisions_for("t", 0)] == [
        (-1, [2], 1, ()), (-1, [2], 2, ())]
    assert [(d.leader, list(d.isr), d.leader_epoch, d.recipients) for d in out.decisions_for("t", 1)] == [
        (2, [2], 1, ()), (-1, [2], 2, ())]
    for p in (0, 1):
        # The replicas are deleted (ReplicaDeletionSuccessful), then, every replica of the topic deleted, the
        # partitions cease to exist (completeDeleteTopic), a step of their own.
        delete, complete = out.rows("t", p)
        assert (delete.from_state, delete.to_state, delete.outcome, set(delete.replica_states.values())) == (
            "OnlinePartition", "OfflinePartition", "ACCEPTED", {"ReplicaDeletionSuccessful"})
        assert (complete.action, complete.from_state, complete.to_state, complete.replica_states) == (
            "COMPLETE_DELETION", "OfflinePartition", "NonExistentPartition", {})
    assert cluster.controller.partitions == {}
    assert "t" not in cluster.controller.cluster.topics
    assert "t" not in cluster.controller.cluster.topic_configs
    assert "t" not in cluster.controller.cluster.topics_queued_for_deletion


def test_delete_topic_waits_for_a_dead_broker() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(2)
    out = cluster.delete("t")
    delete, retry = out.rows("t", 0)
    assert (delete.from_state, delete.to_state) == ("OnlinePartition", "OfflinePartition")
    # Broker 2's replica fails (ReplicaDeletionIneligible); once 1's is deleted, resumeDeletions retries it: back to
    # OfflineReplica, where it waits for its broker.
    assert (delete.replica_states, delete.action) == (
        {1: "ReplicaDeletionSuccessful", 2: "ReplicaDeletionIneligible"}, "DELETE")
    assert (retry.replica_states, retry.action) == (
        {1: "ReplicaDeletionSuccessful", 2: "OfflineReplica"}, "RETRY_DELETION")
    # Broker 1's live replica goes offline (its ISR write, no LeaderAndIsr); dead 2 waits, out of the ISR already.
    assert [(d.leader, list(d.isr), d.recipients) for d in out.decisions] == [(-1, [1], ())]
    # Queued: the name is still taken, a second delete changes nothing.
    assert_rejected(cluster.create("t", [1]).only_row, "TOPIC_ALREADY_EXISTS")
    assert cluster.delete("t").only_row.outcome == "NO_OP"
    # The broker returns: its replica online, then the deletion goes on (resumeDeletionForTopics) and completes.
    back = cluster.startup(2)
    assert [(r.action, r.to_state) for r in back.rows("t", 0)] == [
        ("BROKER_STARTUP", "OfflinePartition"), ("RESUME_DELETION", "OfflinePartition"),
        ("COMPLETE_DELETION", "NonExistentPartition")]
    assert back.decisions == []
    assert "t" not in cluster.controller.cluster.topics


def test_delete_topic_waits_for_a_shutting_down_broker_across_its_failure() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.shutdown(2)
    cluster.delete("t")
    # Not live for a deletion: it fails, and is retried once 1's replica is deleted (back to OfflineReplica).
    assert cluster.replica_states("t", 0) == {1: "ReplicaDeletionSuccessful", 2: "OfflineReplica"}
    cluster.failure(2)
    assert cluster.replica_states("t", 0) == {1: "ReplicaDeletionSuccessful", 2: "OfflineReplica"}
    cluster.startup(2)
    assert cluster.record("t", 0) is None


def test_recreated_topic_restarts_its_epochs() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.failure(1)
    cluster.startup(1)
    assert cluster.rec("t", 0).leader_epoch > 0
    cluster.delete("t")
    out = cluster.create("t", [2, 1])
    d = out.decision("t", 0)
    assert (d.leader, d.leader_epoch, d.partition_epoch, d.is_new, d.election) == (
        2, 0, 0, True, "INITIAL")
    assert out.row("t", 0).from_state == "NonExistentPartition"


def test_delete_unknown_topic() -> None:
    cluster = cluster_with(1)
    assert_rejected(cluster.delete("nope").only_row, "UNKNOWN_TOPIC_OR_PARTITION")


def test_delete_topic_during_a_reassignment_deletes_the_adding_replicas_too() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2])
    cluster.reassign(("t", 0, [1, 3]))
    out = cluster.delete("t")
    assert out.rows("t", 0)[-1].to_state == "NonExistentPartition"
    assert cluster.controller.partitions == {}


def test_a_reassignment_onto_a_starting_broker_bumps_the_leader_epoch_of_a_topic_being_deleted() -> None:
    # ZK's maybeResumeReassignments at a broker's startup does not skip a topic being deleted (zk campaign seed 26,
    # protocol 2.6): the partition's leader epoch moves once more (A1), sent to the replica set, before its deletion
    # goes on.
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2])
    cluster.reassign(("t", 0, [3, 1, 2]))  # 3 is added, not in the ISR yet
    cluster.failure(3)
    cluster.delete("t")  # 3's replica fails its deletion: it waits for 3
    before = cluster.rec("t", 0)
    out = cluster.startup(3)
    [bump] = out.decisions_for("t", 0)
    assert (bump.leader, bump.isr, bump.leader_epoch, bump.recipients) == (
        before.leader, before.isr, before.leader_epoch + 1, (3, 1, 2))
    assert cluster.record("t", 0) is None  # then every replica is deleted, and the topic with them


def test_a_failover_resumes_the_reassignment_of_a_topic_being_deleted_too() -> None:
    # ZK's failover resumes every reassignment in progress (initializePartitionReassignments ->
    # maybeResumeReassignments, after the state machines started), a topic being deleted too (zk campaign seed 302,
    # Kafka 2.8.2): the dead replica goes offline, then the leader epoch moves once more (A1).
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2])
    cluster.reassign(("t", 0, [3, 1]))  # 3 is added, not in the ISR yet; 2 is being removed
    cluster.failure(3)
    cluster.delete("t")  # 3's replica fails its deletion: it waits for 3
    before = cluster.rec("t", 0)
    out = cluster.controller_change(controller_id=2)
    [bump] = out.decisions_for("t", 0)
    assert (bump.leader, bump.isr, bump.leader_epoch) == (before.leader, before.isr, before.leader_epoch + 1)
    assert cluster.rec("t", 0).queued_for_deletion


def test_a_deletion_whose_stop_replica_answers_never_came_back_is_still_in_progress_at_the_failover() -> None:
    # A real 3.0.2 cluster (zklog/regressions/zookeeper-3.0-deletion-cut-short): topic c deleted just before the
    # controller's own broker shut down; the StopReplica answers never came back to it, and the next controller found
    # c still being deleted: the dead replica offline (a write), the deletion waiting for its broker's startup.
    cluster = cluster_with(1, 2, 3)
    cluster.create("c", [3, 1])
    cluster.delete("c", stop_replica_answered=False)
    assert cluster.rec("c", 0).replica_states == {3: R.DELETION_STARTED, 1: R.DELETION_STARTED}
    cluster.failure(3)
    before = cluster.rec("c", 0)
    out = cluster.controller_change(controller_id=1)
    [offline] = out.decisions_for("c", 0)
    assert (offline.leader, offline.isr, offline.leader_epoch) == (-1, (3,), before.leader_epoch + 1)
    out = cluster.startup(3)
    assert cluster.record("c", 0) is None  # deleted again at its broker's startup, and the topic with it


def test_a_deletion_asked_while_no_controller_was_active_is_queued_by_the_next_failover() -> None:
    # Campaign seed 1333 (Kafka 2.7.2, zklog/requests/zookeeper-2.7-dirs-2-seed-1333): t1 and t3 were asked deleted
    # as controller 4's session expired; its next failover read them (initializeControllerContext) and found both
    # ineligible, a replica of each on a dead broker: queued, nothing deleted, nothing written for the deletion.
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.create("u", [1])
    cluster.failure(2)
    before = cluster.rec("t", 0)
    out = cluster.controller_change(controller_id=1, topics_to_delete=["t", "u"])
    assert cluster.controller.cluster.topics_queued_for_deletion == {"t"}  # u's is done
    # t waits for broker 2 (its replica ReplicaDeletionIneligible, then offline at the startup of the state
    # machines, which writes nothing for a topic being deleted); u, every replica live, is deleted at once.
    assert out.decisions_for("t", 0) == []
    assert cluster.rec("t", 0).queued_for_deletion
    assert (cluster.rec("t", 0).leader_epoch, cluster.rec("t", 0).replica_states) == (
        before.leader_epoch, {1: R.ONLINE, 2: R.OFFLINE})
    assert cluster.record("u", 0) is None
    # Broker 2's startup resumes t's deletion, which completes.
    cluster.startup(2)
    assert cluster.record("t", 0) is None
    assert cluster.controller.cluster.topics_queued_for_deletion == set()


def _two_deletions_on_dead_brokers() -> Cluster:
    """a: a live replica on broker 1, one on dead 2; b: its one replica on dead 3, leaderless."""
    cluster = cluster_with(1, 2, 3)
    cluster.create("a", [1, 2])
    cluster.create("b", [3])
    cluster.failure(2)
    cluster.failure(3)
    return cluster


def test_an_earlier_reads_stop_replica_answers_queued_behind_a_later_read_retry_that_reads_dead_replicas() -> None:
    # Campaign seed 1042 (zklog/regressions/zookeeper-2.6-seed-1042): one DeleteTopics of t4, t0 and t1; the
    # controller read t4 alone (a live replica on broker 1, one on dead broker 2), then t0 and t1 (their one replica on
    # dead broker 3: ReplicaDeletionIneligible, nothing written); broker 1's StopReplica answer for t4 came after that
    # read, and its resumeDeletions retried t0's and t1's dead replicas: back to OfflineReplica, a leader epoch bump.
    cluster = _two_deletions_on_dead_brokers()
    cluster.delete("a", stop_replica_answered=False)
    assert cluster.rec("a", 0).replica_states == {1: R.DELETION_STARTED, 2: R.DELETION_INELIGIBLE}
    before = cluster.rec("b", 0)
    out = cluster.delete("b", stop_replica_answers=["a"])
    [retry] = out.decisions_for("b", 0)
    assert (retry.leader, retry.isr, retry.leader_epoch) == (-1, (3,), before.leader_epoch + 1)
    assert cluster.rec("a", 0).replica_states == {1: R.DELETION_SUCCESSFUL, 2: R.OFFLINE}
    assert cluster.rec("b", 0).replica_states == {3: R.OFFLINE}


def test_each_read_of_the_deletions_retries_the_failed_replicas_of_the_topics_queued_before_it() -> None:
    # Campaign seed 1203 (zklog/regressions/zookeeper-2.7-dirs-3-seed-1203): t4's one replica on dead broker 3, its
    # read wrote nothing (ReplicaDeletionIneligible); the next read, of t5, enqueued it with resumeDeletions, which
    # retried t4-0's failed replica first (back to OfflineReplica, a leader epoch bump), then started t5.
    cluster = _two_deletions_on_dead_brokers()
    assert cluster.delete("b").decisions == []
    assert cluster.rec("b", 0).replica_states == {3: R.DELETION_INELIGIBLE}
    before = cluster.rec("b", 0)
    out = cluster.delete("a")
    retry, *rest = out.decisions
    assert (retry.topic, retry.leader, retry.isr, retry.leader_epoch) == ("b", -1, (3,), before.leader_epoch + 1)
    assert [d.topic for d in rest] == ["a"]
    assert cluster.rec("b", 0).replica_states == {3: R.OFFLINE}
    # Retried once: the next read finds it OfflineReplica, not ReplicaDeletionIneligible.
    cluster.create("c", [1])
    assert [d.topic for d in cluster.delete("c").decisions] == ["c"]


def test_a_later_read_after_the_earlier_reads_answers_retries_nothing_of_its_own() -> None:
    # The same requests with broker 1's answer in before the second read (folded into the first): its
    # resumeDeletions found b not queued yet, and b's dead replica waits, ReplicaDeletionIneligible.
    cluster = _two_deletions_on_dead_brokers()
    cluster.delete("a")
    out = cluster.delete("b")
    assert out.decisions_for("b", 0) == []
    assert cluster.rec("b", 0).replica_states == {3: R.DELETION_INELIGIBLE}
