"""A log dir failing under a broker in ZooKeeper mode (LogDirEventNotification): the replicas it answered
KAFKA_STORAGE_ERROR for go offline, only those; they cannot lead afterwards; a startup or a failover asks the broker
again and takes them offline again."""

from __future__ import annotations

from .cluster import Cluster, Result


def failed_dir(c: Cluster, broker: int, *replicas: tuple[str, int]) -> Result:
    return c.send("LogDirEventNotification", broker_id=broker,
                  offline_replicas=[{"topic": t, "partition": p} for t, p in replicas])


def answer(c: Cluster, broker: int, *replicas: tuple[str, int]) -> Result:
    return c.send("LeaderAndIsrResponseReceived", broker_id=broker,
                  offline_replicas=[{"topic": t, "partition": p} for t, p in replicas])


def jbod() -> Cluster:
    """Brokers 1-3; t-0 led by 2, t-1 followed by 2, t-2 led by 2 (not in the failed dir), u-0 only on 2."""
    c = Cluster()
    c.start(1, 2, 3)
    c.create("t", [2, 1, 3], [1, 2, 3], [2, 3, 1])
    c.create("u", [2])
    return c


def test_only_the_failed_dirs_replicas_leave_leaderships_and_isrs() -> None:
    c = jbod()
    result = failed_dir(c, 2, ("t", 0), ("t", 1), ("u", 0))
    led = result.decision("t", 0)
    assert (led.leader, sorted(led.isr)) == (1, [1, 3])
    followed = result.decision("t", 1)
    assert (followed.leader, sorted(followed.isr)) == (1, [1, 3])
    # Its only replica: no other leader, the last ISR member stays (leader -1).
    alone = result.decision("u", 0)
    assert (alone.leader, alone.isr) == (-1, (2,))
    assert result.decisions_for("t", 2) == []  # in the broker's other dir: untouched
    assert c.rec("t", 2).leader == 2
    assert {d.cause for d in result.decisions} == {"LogDirEventNotification"}
    assert "3 in failed dirs, 3 newly offline: t-0, t-1, u-0" in result.cluster_row.message


def test_a_replica_in_a_failed_dir_is_not_elected_while_its_broker_lives() -> None:
    c = jbod()
    failed_dir(c, 2, ("t", 1))
    # t-1's leader 1 fails: 3 leads, not 2, whose replica is offline though its broker is live.
    d = c.failure(1).decision("t", 1)
    assert (d.leader, d.isr) == (3, (3,))
    # Its replica of t-0, in its other dir, still leads.
    assert c.rec("t", 0).leader == 2


def test_the_same_dir_announced_again_changes_nothing() -> None:
    c = jbod()
    failed_dir(c, 2, ("t", 0))
    again = failed_dir(c, 2, ("t", 0))
    assert again.decisions == []
    assert "1 in failed dirs, 0 newly offline" in again.cluster_row.message


def test_a_restarted_broker_is_asked_again_its_replicas_elected_then_offline_again() -> None:
    c = jbod()
    failed_dir(c, 2, ("u", 0))
    c.failure(2)
    started = c.startup(2)
    # onBrokerStartup forgets the broker's offline replicas: u-0 elects 2; its answer takes it offline again.
    assert [(d.leader, d.isr) for d in started.decisions_for("u", 0)] == [(2, (2,)), (-1, (2,))]
    assert c.rec("u", 0).leader == -1


def test_a_startups_answer_queued_behind_an_alter_isr_takes_the_replicas_offline_after_it() -> None:
    # zk campaign seed 1255 (Kafka 2.8.2): broker 4 registered again with its failed dir; its KAFKA_STORAGE_ERROR answer
    # to the startup's LeaderAndIsr came as the controller handled leader 2's AlterIsr of t0-0, and was handled after
    # it. Here: broker 2's answer for u-0 queued behind leader 1's ISR change of t-1.
    c = jbod()
    failed_dir(c, 2, ("u", 0))
    c.failure(2)
    started = c.startup(2, storage_error_answer_queued=True)
    # The startup forgot the broker's offline replicas and asks again; until the answer, u-0 counts online.
    assert [(d.leader, d.isr) for d in started.decisions_for("u", 0)] == [(2, (2,))]
    assert 2 not in c.controller.cluster.replicas_on_offline_dirs
    changed = c.isr_change("t", 1, [1, 3, 2])
    assert [(d.topic, d.leader, sorted(d.isr)) for d in changed.decisions] == [("t", 1, [1, 2, 3])]
    # Its answer, an event of its own after the IsrChange.
    answered = answer(c, 2, ("u", 0))
    assert [(d.topic, d.leader, sorted(d.isr)) for d in answered.decisions] == [("u", -1, [2])]
    assert c.controller.cluster.replicas_on_offline_dirs == {2: frozenset({("u", 0)})}
    # Without the queued answer the startup takes u-0 offline itself (as before).
    c = jbod()
    failed_dir(c, 2, ("u", 0))
    c.failure(2)
    assert [(d.leader, d.isr) for d in c.startup(2).decisions_for("u", 0)] == [(2, (2,)), (-1, (2,))]


def test_a_startups_answer_for_a_dir_failed_while_down_queued_behind_an_alter_isr_is_handled_after_it() -> None:
    # zk campaign seed 1477 (Kafka 3.0.2): a dir of broker 3 failed while it was down; its startup's event names the
    # replicas it answered KAFKA_STORAGE_ERROR for, but the controller handled two AlterIsrs before that answer.
    # Here broker 2's dir failed while it was down (no notification), its answer for u-0 after t-1's ISR change.
    c = jbod()
    c.failure(2)
    u0 = [{"topic": "u", "partition": 0}]
    started = c.startup(2, offline_replicas=u0, storage_error_answer_queued=True)
    assert [(d.leader, d.isr) for d in started.decisions_for("u", 0)] == [(2, (2,))]
    assert 2 not in c.controller.cluster.replicas_on_offline_dirs
    c.isr_change("t", 1, [1, 3, 2])
    answered = answer(c, 2, ("u", 0))
    assert [(d.topic, d.leader, sorted(d.isr)) for d in answered.decisions] == [("u", -1, [2])]
    # Not queued: the startup takes u-0 offline itself.
    c = jbod()
    c.failure(2)
    assert [(d.leader, d.isr) for d in c.startup(2, offline_replicas=u0).decisions_for("u", 0)] == [
        (2, (2,)), (-1, (2,))]


def test_a_storage_error_answer_takes_the_replicas_not_known_offline_offline() -> None:
    # processLeaderAndIsrResponseReceived: the answer's replicas join the broker's replicasOnOfflineDirs, the new ones
    # go offline (onReplicasBecomeOffline): t-0 led by 2 gets a new leader, t-1 loses 2 from its ISR.
    c = jbod()
    failed_dir(c, 2, ("t", 0))
    result = answer(c, 2, ("t", 0), ("t", 1))
    assert [(d.topic, d.partition, d.leader, sorted(d.isr)) for d in result.decisions] == [("t", 1, 1, [1, 3])]
    assert {d.cause for d in result.decisions} == {"LeaderAndIsrResponseReceived"}
    assert c.controller.cluster.replicas_on_offline_dirs == {2: frozenset({("t", 0), ("t", 1)})}
    assert "2 replica(s) in failed dirs, 1 newly offline: t-1" in result.cluster_row.message
    # Answered again: nothing new, nothing sent.
    assert answer(c, 2, ("t", 1)).decisions == []


def test_a_storage_error_answer_of_a_broker_gone_or_of_replicas_it_does_not_host_changes_nothing() -> None:
    c = jbod()
    assert answer(c, 1, ("u", 0)).cluster_row.outcome == "NO_OP"  # broker 1 hosts no replica of u-0
    c.failure(2)
    gone = answer(c, 2, ("t", 0))
    assert (gone.decisions, gone.cluster_row.outcome) == ([], "NO_OP")
    assert 2 not in c.controller.cluster.replicas_on_offline_dirs


def test_a_failover_asks_the_brokers_again() -> None:
    c = jbod()
    failed_dir(c, 2, ("u", 0))
    result = c.controller_change(1)
    assert [(d.leader, d.isr) for d in result.decisions_for("u", 0)] == [(2, (2,)), (-1, (2,))]


def test_a_failovers_answers_are_handled_in_the_order_they_came() -> None:
    # Seeds 719 and 1115 (Kafka 2.8.2): each broker's KAFKA_STORAGE_ERROR answer to the failover's LeaderAndIsr is an
    # event of its own, handled as it came (its `Mark replicas` line): broker 3's before broker 2's here; without an
    # order, by id.
    def offline_order(**fields: object) -> list[int]:
        c = jbod()
        failed_dir(c, 2, ("u", 0))
        failed_dir(c, 3, ("t", 1))
        rows = c.controller_change(1, **fields).cluster_rows
        return [int(r.message.split()[1]) for r in rows if "answered KAFKA_STORAGE_ERROR again" in r.message]

    assert offline_order() == [2, 3]
    assert offline_order(answer_order=[3, 2]) == [3, 2]
    assert offline_order(answer_order=[3]) == [3, 2]


def test_a_failovers_answer_still_queued_leaves_its_replica_electable() -> None:
    # Seed 1269 (Kafka 3.5.2): brokers 2 and 4 both answered the failover's LeaderAndIsr with KAFKA_STORAGE_ERROR for
    # t0-1, 2 first. Broker 2's answer was handled before broker 4's came in: its election picked 4, broker 4's answer
    # then took 4 offline too. Without the order every answer counts as in at once (seed 437): 3 leads at once.
    def leaders(**fields: object) -> list[int]:
        c = Cluster()
        c.start(1, 2, 3)
        c.create("t", [2, 3, 1])
        answers = {"2": [{"topic": "t", "partition": 0}], "3": [{"topic": "t", "partition": 0}]}
        result = c.controller_change(1, offline_replicas=answers, **fields)
        return [d.leader for d in result.decisions_for("t", 0)]

    assert leaders(answer_order=[2, 3]) == [3, 1]
    assert leaders() == [1]


def test_a_notification_of_an_unregistered_broker_asks_nothing() -> None:
    c = jbod()
    c.failure(2)
    result = failed_dir(c, 2, ("t", 0))
    assert result.decisions == []
    assert result.cluster_row.outcome == "NO_OP"


def test_a_failover_takes_offline_the_replicas_its_answers_name() -> None:
    # A dir failed while no controller read the notification: the failover's LeaderAndIsr requests get the answer.
    c = jbod()
    answers = {"2": [{"topic": "u", "partition": 0}, {"topic": "t", "partition": 0}]}
    result = c.controller_change(1, offline_replicas=answers)
    assert [(d.leader, d.isr) for d in result.decisions_for("u", 0)] == [(-1, (2,))]
    assert (result.decision("t", 0).leader, sorted(result.decision("t", 0).isr)) == (1, [1, 3])
    assert c.controller.cluster.replicas_on_offline_dirs == {2: frozenset({("u", 0), ("t", 0)})}


def test_a_deletion_resumed_at_the_startup_of_a_broker_with_a_failed_dir_is_retried_per_answer() -> None:
    # Seeds 412, 422: d-0 on 2 (healthy dir), 1 and dead 3; e-0 only on 2, in its failed dir. Both deleted: 1's and
    # 2's replicas of d-0 go, 3's waits; e-0's fails at once (2 answered KAFKA_STORAGE_ERROR for it).
    c = Cluster()
    c.start(1, 2, 3)
    c.create("d", [2, 1, 3])
    c.create("e", [2])
    failed_dir(c, 2, ("e", 0))
    c.failure(3)
    c.delete("d")
    c.delete("e")
    assert c.replica_states("d", 0) == {1: "ReplicaDeletionSuccessful", 2: "ReplicaDeletionSuccessful",
                                        3: "OfflineReplica"}
    # Broker 2's session expires and a new controller takes over: it knows d-0's deleted replicas again (2's, on a
    # dead broker, failed and retried: OfflineReplica).
    c.failure(2)
    c.controller_change(1)
    assert c.replica_states("d", 0) == {1: "OnlineReplica", 2: "OfflineReplica", 3: "OfflineReplica"}
    # Broker 2 registers again. It holds no log of d-0 any more, and with a dir offline it creates none that is not
    # a new replica's: it answers KAFKA_STORAGE_ERROR for d-0 too. Its LeaderAndIsr answer, then its StopReplica
    # answer, each fail the deletion of its replicas and resumeDeletions retries them (a leader -1 bump where the
    # ISR is [2]); d-0 waits for 1's answer first, which the startup had taken offline and asked to delete.
    back = c.startup(2)
    e0 = [(d.leader, d.isr) for d in back.decisions_for("e", 0)]
    assert e0 == [(-1, (2,))] * 3  # offline for the resumed deletion, then a retry per answer
    assert [r.action for r in back.rows("d", 0)].count("RETRY_DELETION") == 1  # once 1 had answered
    assert c.replica_states("d", 0) == {1: "ReplicaDeletionSuccessful", 2: "OfflineReplica", 3: "OfflineReplica"}
    assert c.replica_states("e", 0) == {2: "OfflineReplica"}
    assert {"d", "e"} <= c.controller.cluster.topics_queued_for_deletion


def test_a_deletion_resumed_at_a_failover_is_retried_once_the_other_answers_are_in() -> None:
    # Seed 1412 (Kafka 3.9.1 at protocol 2.6): d-1 only on broker 2, in its failed dir; d's deletion halts on it
    # (a dead replica) once 1's replica of d-0 is deleted. A new controller knows neither: it resumes d, asking 1 and
    # 2 to delete. Broker 2's LeaderAndIsr answer fails d-1's deletion (ReplicaDeletionIneligible), its StopReplica
    # answer is KAFKA_STORAGE_ERROR, and broker 1's answer for d-0 ends in resumeDeletions, which retries d-1 (a
    # leader -1 bump, a StopReplica): d stays.
    c = Cluster()
    c.start(1, 2, 3)
    c.create("d", [1], [2])
    failed_dir(c, 2, ("d", 1))
    c.delete("d")
    assert c.replica_states("d", 0) == {1: "ReplicaDeletionSuccessful"}
    result = c.controller_change(3)
    actions = [r.action for r in result.rows("d", 1)]
    assert actions.count("RETRY_DELETION") == 1
    order = [(r.action, r.partition) for r in result.audits if r.topic == "d"]
    assert order.index(("RETRY_DELETION", 1)) > order.index(("REPLICA_DELETED", 0))  # after broker 1's answer
    assert c.replica_states("d", 0) == {1: "ReplicaDeletionSuccessful"}
    assert c.replica_states("d", 1) == {2: "OfflineReplica"}
    assert "d" in c.controller.cluster.topics_queued_for_deletion


def test_a_reassignment_in_place_sends_its_bump_to_a_replica_in_a_failed_dir_too() -> None:
    # updateLeaderEpochAndSendRequest sends the whole new replica set, a registered broker's offline replica too (zk
    # campaign seed 808: t6-0 reassigned in place reached broker 3, whose replica's dir had failed); an election
    # sends only to online replicas.
    c = jbod()
    failed_dir(c, 2, ("t", 1))
    bump = c.reassign(("t", 1, [1, 2, 3])).decision("t", 1)
    assert (bump.leader, sorted(bump.isr), bump.recipients) == (1, [1, 3], (1, 2, 3))
    elected = c.failure(1).decision("t", 1)
    assert (elected.leader, elected.recipients) == (3, (3,))


def test_a_new_replica_the_notification_did_not_name_goes_offline_at_a_later_reassignments_answer() -> None:
    # zk campaign seed 906 (Kafka 3.5.2): x-0's new replica on 2, NewReplica while its reassignment waited for 4, was
    # in the dir that failed; the notification's LeaderAndIsr left it out (NewReplica -> OnlineReplica sends nothing),
    # so its answer named none. A later reassignment's LeaderAndIsr (A1, to every replica) got KAFKA_STORAGE_ERROR for
    # it: 2 leaves the ISR after that request's own bump.
    c = jbod()
    c.create("x", [1, 3])
    c.reassign(("x", 0, [1, 3, 2, 4]), through_znode=True)
    c.isr_change("x", 0, [1, 3, 2])
    assert failed_dir(c, 2).decisions == []
    reassigned = c.reassign(("x", 0, [2, 4]), through_znode=True)
    assert [(d.leader, sorted(d.isr)) for d in reassigned.decisions_for("x", 0)] == [(1, [1, 2, 3])]
    result = answer(c, 2, ("x", 0))  # its own event, after the request
    assert [(d.leader, sorted(d.isr)) for d in result.decisions_for("x", 0)] == [(1, [1, 3])]
    assert c.controller.cluster.replicas_on_offline_dirs == {2: frozenset({("x", 0)})}
    assert "answered KAFKA_STORAGE_ERROR for 1 replica(s) in failed dirs, 1 newly offline: x-0" in \
        result.cluster_row.message
    # Its partition, not the broker: 2 still leads t-0, in its other dir.
    assert c.rec("t", 0).leader == 2


def test_a_reassignment_asked_again_onto_a_live_brokers_failed_replica_bumps_again() -> None:
    # zk campaign seed 1034 (Kafka 3.9.1 at protocol 2.6): t2-0's Admin API reassignment onto broker 3, whose replica of
    # t2-0 had failed with its dir, asked again: validateReplicas checks the new replicas against liveBrokerIds (any
    # registered broker not shutting down), not their log dirs, so the controller bumped the leader epoch again.
    c = jbod()
    c.create("x", [1])
    first = c.reassign(("x", 0, [2, 1])).decision("x", 0)
    failed_dir(c, 2, ("x", 0))
    again = c.reassign(("x", 0, [2, 1]))
    bump = again.decision("x", 0)
    assert (bump.leader, bump.isr, bump.leader_epoch, bump.replicas) == (1, (1,), first.leader_epoch + 1, (2, 1))
    # A broker that is not registered is refused still.
    refused = c.reassign(("x", 0, [4, 1]))
    assert refused.decisions == [] and "not live: [4]" in refused.rows("x", 0)[0].message


def test_a_new_controller_forgets_a_failed_replica_it_did_not_ask_about_and_learns_it_again() -> None:
    # zk campaign seed 1034 (Kafka 3.9.1 at protocol 2.6): x-0 moved off broker 2 after its replica failed with the
    # dir; the next controller's failover asked broker 2 of its other replicas only (replicasOnOfflineDirs starts
    # empty). x-0's reassignment back onto 2 got KAFKA_STORAGE_ERROR: newly offline, though 2 is in no ISR of it.
    c = jbod()
    c.create("x", [2, 1])
    failed_dir(c, 2, ("x", 0), ("u", 0))
    c.reassign(("x", 0, [1]), through_znode=True)
    assert c.rec("x", 0).replicas == (1,)
    c.controller_change(1)
    assert c.controller.cluster.replicas_on_offline_dirs == {2: frozenset({("u", 0)})}
    c.reassign(("x", 0, [1, 2]))
    result = answer(c, 2, ("x", 0))
    assert "1 newly offline: x-0" in result.cluster_row.message
    assert c.controller.cluster.replicas_on_offline_dirs == {2: frozenset({("u", 0), ("x", 0)})}


def test_a_failovers_answers_come_after_the_reassignment_it_read_from_the_znode() -> None:
    # zk campaign seed 1108 (Kafka 3.9.1 at protocol 2.6): the failover elected broker 2's replica of u-0 (its dir
    # failed, the new controller starts without knowing it), then read /admin/reassign_partitions
    # (initializePartitionReassignments) and bumped u-0 for that reassignment; the broker's KAFKA_STORAGE_ERROR answer
    # was handled after the whole failover ("Mark replicas" logged after its last write): u-0 leaderless then.
    c = jbod()
    failed_dir(c, 2, ("u", 0))
    failover = c.controller_change(1, reads_reassignment_znode=True)
    assert [(d.leader, d.isr) for d in failover.decisions_for("u", 0)] == [(2, (2,))]
    assert c.controller.cluster.replicas_on_offline_dirs == {}
    read = c.reassign(("u", 0, [3, 2]), through_znode=True, read_at_failover=True)
    assert [(d.leader, d.isr, d.replicas) for d in read.decisions_for("u", 0)] == [
        (2, (2,), (3, 2)), (-1, (2,), (3, 2))]
    assert c.controller.cluster.replicas_on_offline_dirs == {2: frozenset({("u", 0)})}
    # Without the znode read the answer closes the failover, as before.
    c = jbod()
    failed_dir(c, 2, ("u", 0))
    assert [(d.leader, d.isr) for d in c.controller_change(1).decisions_for("u", 0)] == [(2, (2,)), (-1, (2,))]


def test_another_brokers_answer_to_a_controlled_shutdowns_leader_and_isr_takes_its_replica_offline_after_it() -> None:
    # zk campaign seed 1114 (Kafka 3.9.1 at protocol 2.6): broker 3's controlled shutdown made broker 4 t1-0's leader;
    # broker 4's dir failed as it wrote t1-0's leader epoch checkpoint, it answered KAFKA_STORAGE_ERROR for t1-0, and
    # the controller took that replica offline after the shutdown (an election, 4 out of the ISR), before broker 4's
    # notification. Here: broker 1 shuts down, 2 takes t-1's leadership and answers for it.
    c = jbod()
    shutdown = c.shutdown(1)
    assert [(d.leader, sorted(d.isr)) for d in shutdown.decisions_for("t", 1)] == [(2, [2, 3])]
    result = answer(c, 2, ("t", 1))  # its own event, after the shutdown
    assert [(d.leader, sorted(d.isr)) for d in result.decisions] == [(3, [3])]
    assert [(d.leader, sorted(d.isr)) for d in shutdown.decisions_for("t", 0)] == [(2, [2, 3])]  # 1 out only
    assert c.controller.cluster.replicas_on_offline_dirs == {2: frozenset({("t", 1)})}
    assert "answered KAFKA_STORAGE_ERROR for 1 replica(s) in failed dirs, 1 newly offline: t-1" in \
        result.cluster_row.message
    # The notification that follows asks again: t-1 is known offline, nothing more goes.
    assert failed_dir(c, 2, ("t", 1)).decisions == []


def test_a_startup_asks_nothing_of_its_brokers_deleted_replicas_so_its_failed_dir_fails_no_deletion() -> None:
    # zk campaign seed 1117 (Kafka 3.0.2): broker 2 deleted its replica of d-0 (ReplicaDeletionSuccessful), d-1
    # waited for dead brokers 3 and 4; then a dir of 2 failed (u-0) and 2 restarted. onBrokerStartup's move to
    # OnlineReplica is no valid transition from ReplicaDeletionSuccessful: no LeaderAndIsr of d-0, so 2 answered
    # KAFKA_STORAGE_ERROR for u-0 alone, failed no deletion, and resumeDeletions did not retry d-1 (no leader -1 bump
    # of its ISR [4]).
    c = Cluster()
    c.start(1, 2, 3, 4)
    c.create("d", [2, 1], [3, 4])
    c.create("u", [2, 1])
    c.failure(3)
    c.failure(4)
    c.delete("d")
    assert c.replica_states("d", 0) == {1: "ReplicaDeletionSuccessful", 2: "ReplicaDeletionSuccessful"}
    assert (c.rec("d", 1).leader, c.rec("d", 1).isr) == (-1, (4,))
    failed_dir(c, 2, ("u", 0))
    c.failure(2)
    back = c.startup(2)
    assert back.decisions_for("d", 1) == []
    assert c.replica_states("d", 0) == {1: "ReplicaDeletionSuccessful", 2: "ReplicaDeletionSuccessful"}
    assert c.controller.cluster.replicas_on_offline_dirs == {2: frozenset({("u", 0)})}
    assert any("answered KAFKA_STORAGE_ERROR again for 1 replica(s) in failed dirs: u-0" in r.message
               for r in back.cluster_rows)


def test_a_notification_asks_nothing_of_the_brokers_deleted_replicas_so_its_answer_names_none() -> None:
    # zk campaign seed 1250 (Kafka 2.7.2): broker 2 deleted its replica of d-0 (ReplicaDeletionSuccessful), d waiting
    # for dead broker 3; then a dir of 2 failed. onBrokerLogDirFailure's move to OnlineReplica is no valid transition
    # from ReplicaDeletionSuccessful: no LeaderAndIsr of d-0 (Kafka logs "... to OnlineReplica failed"), so the
    # notification's answer cannot name it; nothing goes offline, and no UpdateMetadata announces it.
    c = Cluster()
    c.start(1, 2, 3)
    c.create("d", [2, 3])
    c.create("u", [2, 1])
    c.failure(3)
    c.delete("d")
    assert c.replica_states("d", 0)[2] == "ReplicaDeletionSuccessful"
    result = failed_dir(c, 2, ("d", 0))
    assert result.decisions == []
    assert "0 in failed dirs, 0 newly offline" in result.cluster_row.message
    assert c.controller.cluster.replicas_on_offline_dirs == {2: frozenset()}
    assert c.replica_states("d", 0)[2] == "ReplicaDeletionSuccessful"


def test_a_replica_an_earlier_answer_took_offline_stays_as_it_is_at_the_notifications_answer() -> None:
    # zk campaign seed 1543 (Kafka 2.7.2): broker 4 answered a reassignment's LeaderAndIsr of t0-1 (its only replica)
    # with KAFKA_STORAGE_ERROR before its notification was read: t0-1 leaderless, ISR [4]. The notification's answer
    # marked t3-0 alone (t0-1 known offline already); onReplicasBecomeOffline's election of the offline t0-1 failed,
    # and only t3-0's replica went offline (OfflineReplica): no second leader -1 bump of t0-1, nor one when t0 was
    # deleted later (its replica there OnlineReplica again since onBrokerLogDirFailure, so no deletion retry).
    # Here t-0 on brokers 3 and 1, 1 gone: 3 alone in its ISR.
    c = Cluster()
    c.start(1, 2, 3)
    c.create("t", [3, 1], [3, 2])
    c.failure(1)
    first = answer(c, 3, ("t", 0))
    assert [(d.leader, d.isr) for d in first.decisions_for("t", 0)] == [(-1, (3,))]
    epoch = c.rec("t", 0).leader_epoch
    notified = failed_dir(c, 3, ("t", 1))
    assert notified.decisions_for("t", 0) == []
    assert [(d.leader, d.isr) for d in notified.decisions_for("t", 1)] == [(2, (2,))]
    assert "1 in failed dirs, 1 newly offline: t-1" in notified.cluster_row.message
    assert c.delete("t").decisions_for("t", 0) == []
    assert (c.rec("t", 0).leader, c.rec("t", 0).isr, c.rec("t", 0).leader_epoch) == (-1, (3,), epoch)
