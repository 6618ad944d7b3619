"""The kraft rule set: where Kafka 4.1's controller decides differently, and zk unchanged beside it."""

from __future__ import annotations

from dataclasses import replace

from schemas.records import Decision
from statemachine import elections
from statemachine.controller import ControllerConfig
from statemachine.partition import apply_command
from statemachine.record import Action, PartitionRecord
from statemachine.rules import KRAFT, ZK, eligible_leader_replicas, last_known_leader, rules_named
from statemachine.states import PartitionState, ReplicaState

from .cluster import Cluster, command


def cluster(rules_name: str) -> Cluster:
    c = Cluster(ControllerConfig(rules=rules_named(rules_name)))
    c.start(1, 2, 3)
    c.create("t", [1, 2, 3], [2, 3, 1])
    c.create("two", [2, 3])
    return c


def epochs(d: Decision) -> tuple[int, list[int], int, int]:
    return d.leader, sorted(d.isr), d.leader_epoch, d.partition_epoch


def test_follower_failure_bumps_the_leader_epoch_only_under_zk() -> None:
    assert epochs(cluster("zk").failure(3).decision("t", 0)) == (1, [1, 2], 1, 1)
    assert epochs(cluster("kraft").failure(3).decision("t", 0)) == (1, [1, 2], 0, 1)


def test_leader_failure_is_one_record_with_one_leader_epoch_bump() -> None:
    result = cluster("kraft").failure(1)
    assert [epochs(d) for d in result.decisions_for("t", 0)] == [(2, [2, 3], 1, 1)]


def test_controlled_shutdown_of_the_last_isr_member_leaves_the_partition_leaderless_under_kraft() -> None:
    for name, expected in (("zk", []), ("kraft", [(-1, [2], 1, 2)])):
        c = cluster(name)
        c.failure(3)  # two-0 [2, 3]: ISR [2]
        assert [epochs(d) for d in c.shutdown(2).decisions_for("two", 0)] == expected, name


def test_controlled_shutdown_covers_single_replica_partitions_under_kraft() -> None:
    for name, expected in (("zk", []), ("kraft", [(-1, [3], 1, 1)])):
        c = cluster(name)
        c.create("one", [3])
        assert [epochs(d) for d in c.shutdown(3).decisions_for("one", 0)] == expected, name


def test_reassignment_start_keeps_the_leader_epoch_and_completion_is_one_record() -> None:
    c = cluster("kraft")
    c.failure(3)
    start = c.reassign(("two", 0, [2, 1])).decision("two", 0)  # adds 1; 3 (fenced) is removed once 1 catches up
    assert (start.leader_epoch, start.partition_epoch, start.replicas) == (0, 2, (2, 1, 3))
    done = c.isr_change("two", 0, [2, 1], broker=2).decision("two", 0)
    assert (done.leader, list(done.isr), list(done.replicas)) == (2, [2, 1], [2, 1])
    # One record: the ISR growth and the completion; replica 3 left the replica set, so the leader epoch moves.
    assert (done.leader_epoch, done.partition_epoch) == (1, 3)
    z = cluster("zk")
    z.failure(3)
    assert z.reassign(("two", 0, [2, 1])).decisions_for("two", 0)[0].leader_epoch == 2


def test_reassignment_onto_a_fenced_broker_is_accepted_only_under_kraft() -> None:
    for name, error in (("zk", "INVALID_REPLICA_ASSIGNMENT"), ("kraft", None)):
        c = cluster(name)
        c.failure(1)
        assert c.reassign(("two", 0, [2, 1])).row("two", 0).error == error, name


def test_the_default_rules_are_zk() -> None:
    assert ControllerConfig().rules is ZK
    assert rules_named("kraft") is KRAFT


def test_preferred_election_of_a_leaderless_partition_falls_back_to_another_replica_under_kraft() -> None:
    # t-0 [3, 1, 2]: its leader 1 is gone, not yet re-elected; the preferred replica 3 is not in the ISR.
    rec = PartitionRecord("t", 0, state=PartitionState.ONLINE, replicas=(3, 1, 2), leader=1, leader_epoch=4,
                          isr=(1, 2), partition_epoch=6,
                          replica_states={b: ReplicaState.ONLINE for b in (1, 2, 3)})
    elect = command(Action.ELECT_PREFERRED, live={2, 3})
    assert apply_command(rec, elect, ZK).audit.error == "PREFERRED_LEADER_NOT_AVAILABLE"
    applied = apply_command(rec, elect, KRAFT)
    assert [epochs(d) for d in applied.decisions] == [(2, [2], 5, 7)]


def test_automatic_rebalance_elects_every_partition_off_its_preferred_replica_under_kraft() -> None:
    for name, expected in (("zk", 0), ("kraft", 1)):
        c = Cluster(ControllerConfig(rules=rules_named(name)))
        c.start(1, 2)
        c.create("t", *([1, 2] for _ in range(10)))
        c.failure(1)
        c.startup(1)
        for p in range(10):
            c.isr_change("t", p, [2, 1])
        c.elect("PREFERRED", *(("t", p) for p in range(9)))
        # Broker 1 leads 9 of its 10 preferred partitions: 10% is not above ZK's 10% threshold.
        result = c.imbalance_check()
        assert len([d for d in result.decisions if d.election == "PREFERRED"]) == expected, name


def test_a_new_controller_epoch_reexamines_partitions_only_under_zk() -> None:
    for name, rewritten in (("zk", True), ("kraft", False)):
        c = cluster(name)
        c.controller.cluster.broker_epochs.pop(1)  # broker 1 vanished while no controller was active
        result = c.controller_change(controller_id=0, epoch=2)
        assert bool(result.decisions_for("t", 0)) is rewritten, name
        assert (c.rec("t", 0).leader == 1) is not rewritten, name


# -- Eligible Leader Replicas (KIP-966): the kraft rules with eligible.leader.replicas.version >= 1 -------------

def elr_cluster(min_isr: int = 1, elr: bool = True, rules_name: str = "kraft") -> Cluster:
    c = Cluster(ControllerConfig(rules=rules_named(rules_name), eligible_leader_replicas=elr,
                                 min_insync_replicas=min_isr))
    c.start(1, 2, 3)
    c.create("one", [1])
    c.create("t", [1, 2, 3])
    return c


def elr_state(d: Decision | PartitionRecord) -> tuple[int, list[int], list[int], list[int], str]:
    return (d.leader, sorted(d.isr), list(d.eligible_leader_replicas), list(d.last_known_elr),
            str(d.leader_recovery_state))


def test_the_elr_policies_follow_partition_change_builder() -> None:
    # Below min ISR, who leaves the ISR stays eligible, unless its shutdown was unclean; at min ISR, no ELR.
    assert eligible_leader_replicas((), (1, 2, 3), (3,), 2) == (1, 2)
    assert eligible_leader_replicas((1,), (2, 3), (3,), 2, unclean_shutdown=(1,)) == (2,)
    assert eligible_leader_replicas((1,), (2, 3), (2, 3), 2) == ()
    # The leader is remembered when the ISR empties, forgotten once there is a leader again.
    assert last_known_leader(1, (1,), (), (), -1) == (1,)
    assert last_known_leader(-1, (), (1,), (), -1) == (1,)
    assert last_known_leader(-1, (), (1,), (2,), 2) == ()


def test_the_eligible_election_takes_the_isr_then_the_elr_then_the_last_known_leader() -> None:
    live = {1, 2, 3}
    assert elections.eligible((1, 2, 3), (2, 3), (1,), (), live, False).leader == 2
    from_elr = elections.eligible((1, 2, 3), (), (3, 2), (), live, False)
    assert (from_elr.leader, from_elr.isr, from_elr.leader_recovery_state) == (2, (2,), None)
    last_known = elections.eligible((1, 2, 3), (), (), (3,), live, False)
    assert (last_known.leader, last_known.isr, str(last_known.leader_recovery_state)) == (3, (3,), "RECOVERING")
    assert last_known.election is elections.Election.OFFLINE_UNCLEAN
    # A dead ELR member blocks the last known leader; only an unclean election gets past it.
    assert elections.eligible((1, 2), (), (1,), (1,), {2}, False) is None
    assert elections.eligible((1, 2), (), (1,), (1,), {2}, True).leader == 2
    assert elections.eligible((1, 2), (), (), (1,), {2}, False) is None  # the last known leader is not live


def test_fencing_the_last_isr_member_empties_the_isr_into_the_elr() -> None:
    c = elr_cluster()
    fenced = c.failure(1).decision("one", 0)
    assert elr_state(fenced) == (-1, [], [1], [1], "RECOVERED")
    assert (fenced.leader_epoch, fenced.partition_epoch) == (1, 1)
    # Without the feature, the kraft rules keep the last ISR member (Kafka 4.1 with ELR off).
    assert elr_state(elr_cluster(elr=False).failure(1).decision("one", 0)) == (-1, [1], [], [], "RECOVERED")
    # The zk rules have no ELR whatever the config says.
    assert elr_state(elr_cluster(rules_name="zk").failure(1).decision("one", 0))[2:4] == ([], [])


def test_a_cleanly_restarted_elr_member_leads_again_as_a_clean_election() -> None:
    c = elr_cluster()
    c.failure(1)
    result = c.startup(1)
    assert elr_state(result.decision("one", 0)) == (1, [1], [], [], "RECOVERED")


def test_an_unclean_restart_leaves_the_elr_first_and_the_last_known_leader_leads_recovering() -> None:
    c = elr_cluster()
    c.failure(1)
    result = c.startup(1, unclean_shutdown=True)
    removed, elected = result.decisions_for("one", 0)
    assert elr_state(removed) == (-1, [], [], [1], "RECOVERED")
    assert (removed.leader_epoch, removed.partition_epoch) == (1, 2)  # an ELR-only change: partition epoch only
    assert elr_state(elected) == (1, [1], [], [], "RECOVERING")
    assert (elected.leader_epoch, elected.partition_epoch, elected.election) == (2, 3, "OFFLINE_UNCLEAN")
    assert [r.action for r in result.rows("one", 0)] == ["UNCLEAN_REGISTRATION", "BROKER_STARTUP"]


def test_an_elr_member_that_is_not_live_blocks_the_last_known_leader_unless_unclean_is_allowed() -> None:
    c = elr_cluster()
    c.create("two", [2, 1])
    c.failure(2)  # two-0: ISR [1]
    c.failure(1)  # ISR [], ELR [1], last known leader 1
    assert elr_state(c.rec("two", 0)) == (-1, [], [1], [1], "RECOVERED")
    assert c.startup(2, unclean_shutdown=True).decisions_for("two", 0) == []  # 2 was in neither ISR nor ELR
    assert elr_state(c.rec("two", 0))[0] == -1
    elected = c.elect("UNCLEAN", ("two", 0)).decision("two", 0)
    assert elr_state(elected) == (2, [2], [], [], "RECOVERING")


def test_an_isr_shrink_below_min_isr_moves_the_leavers_into_the_elr_and_growth_clears_it() -> None:
    c = elr_cluster(min_isr=2)
    shrink = c.isr_change("t", 0, [1]).decision("t", 0)
    assert elr_state(shrink) == (1, [1], [2, 3], [], "RECOVERED")
    # The leader fails: its ISR is empty, the ELR (2, 3) can lead, and 2 becomes the ISR alone.
    elected = c.failure(1).decision("t", 0)
    assert elr_state(elected) == (2, [2], [1, 3], [], "RECOVERED")
    grown = c.isr_change("t", 0, [2, 3]).decision("t", 0)
    assert elr_state(grown) == (2, [2, 3], [], [], "RECOVERED")


def test_a_min_isr_change_clears_the_elr_with_one_partition_epoch() -> None:
    c = elr_cluster()
    c.failure(1)
    before = c.rec("one", 0)
    cleared = c.alter("one", {"min.insync.replicas": "1"}).decision("one", 0)
    assert elr_state(cleared) == (-1, [], [], [], "RECOVERED")
    assert (cleared.leader_epoch, cleared.partition_epoch) == (before.leader_epoch, before.partition_epoch + 1)
    assert c.alter("one", {"min.insync.replicas": "2"}).decisions_for("one", 0) == []  # nothing left to clear
    assert c.alter("one", {"min.insync.replicas": "x"}).cluster_row.error == "INVALID_REQUEST"


def test_controlled_shutdown_of_the_last_isr_member_with_elr_empties_the_isr() -> None:
    c = elr_cluster()
    assert elr_state(c.shutdown(1).decision("one", 0)) == (-1, [], [1], [1], "RECOVERED")


def test_effective_min_isr_is_at_most_the_replication_factor() -> None:
    c = elr_cluster(min_isr=3)
    c.create("two", [2, 3], configs={"min.insync.replicas": "5"})
    assert c.controller.min_isr("two") == 2
    assert c.controller.min_isr("t") == 3
    assert c.controller.min_isr("one") == 1


def test_preferred_election_of_a_leaderless_partition_takes_the_elr_then_the_last_known_leader() -> None:
    leaderless = PartitionRecord("t", 0, state=PartitionState.ONLINE, replicas=(3, 1, 2), leader=-1, leader_epoch=4,
                                 isr=(), partition_epoch=6, eligible_leader_replicas=(1, 3),
                                 replica_states={b: ReplicaState.ONLINE for b in (1, 2, 3)})
    elect = command(Action.ELECT_PREFERRED, live={1, 2, 3}, elr_enabled=True, min_isr=2)
    [d] = apply_command(leaderless, elect, KRAFT).decisions
    # The preferred replica is in the ELR: it becomes the ISR alone, cleanly; the other member stays eligible.
    assert (elr_state(d), d.leader_epoch, d.partition_epoch) == ((3, [3], [1], [], "RECOVERED"), 5, 7)
    only_last_known = replace(leaderless, eligible_leader_replicas=(), last_known_elr=(2,))
    [d] = apply_command(only_last_known, elect, KRAFT).decisions
    assert elr_state(d) == (2, [2], [], [], "RECOVERING")
    # The same request without the feature: nobody in the (empty) ISR can lead.
    assert apply_command(only_last_known, replace(elect, elr_enabled=False), KRAFT).decisions == []


def test_turning_unclean_election_on_elects_at_once_only_under_zk() -> None:
    for name in ("zk", "kraft"):
        c = cluster(name)
        c.failure(2)
        c.failure(3)  # two-0 [2, 3] is offline, 3 the last in its ISR
        assert c.startup(2).decisions_for("two", 0) == []  # 2 left the ISR: no clean election
        at_config = c.alter("two", {"unclean.leader.election.enable": "true"}).decisions_for("two", 0)
        if name == "zk":  # TopicConfigHandler: the controller elects the topic's offline partitions at once
            assert [(d.leader, list(d.isr), d.leader_recovery_state) for d in at_config] == [(2, [2], "RECOVERING")]
        else:  # the periodic task elects later: its own record, an event of its own
            assert at_config == []
            task = c.elect("UNCLEAN", ("two", 0)).decision("two", 0)
            assert (task.leader, list(task.isr), task.leader_recovery_state) == (2, [2], "RECOVERING")


def test_the_last_known_leader_is_the_leader_the_emptied_isr_had_and_none_when_already_leaderless() -> None:
    assert last_known_leader(3, (3,), (), (), -1) == (3,)
    assert last_known_leader(-1, (3,), (), (), -1) == ()  # fenced again: leader -1 already (Kafka 4.1)
    assert last_known_leader(-1, (), (3,), (3,), 3) == ()  # a leader again: forgotten


def test_a_fenced_broker_fenced_again_leaves_the_isrs_it_was_left_in_only_under_kraft() -> None:
    for name in ("zk", "kraft"):
        c = cluster(name)
        c.create("one", [3])
        c.failure(3)  # one-0: leader -1, ISR [3] (without ELR the last member stays)
        again = c.failure(3, epoch=c.controller.cluster.last_broker_epochs[3])
        if name == "zk":
            assert again.errors == {"BROKER_NOT_AVAILABLE"}
        else:
            assert "BROKER_NOT_AVAILABLE" not in again.errors and "fenced again" in again.cluster_row.message


def test_a_new_reassignment_over_one_in_progress_starts_from_the_current_replicas_under_kraft() -> None:
    # two-0 [2, 3] -> [2, 1] is in progress ([2, 1, 3], adding [1], removing [3]: broker 1 has not caught up) when
    # it is sent to [4, 2]. ZK starts again from the original replicas [2, 3]; KRaft from the current ones, 1
    # included, each list in id order, so no replica leaves the set and the leader epoch stays.
    expected = {"zk": ((4, 2, 3), (4,), (3,), 2), "kraft": ((4, 2, 1, 3), (4,), (1, 3), 0)}
    for name, (replicas, adding, removing, leader_epoch) in expected.items():
        c = cluster(name)
        c.startup(4)
        c.reassign(("two", 0, [2, 1]))
        c.reassign(("two", 0, [4, 2]))
        rec = c.rec("two", 0)
        assert (rec.replicas, rec.adding_replicas, rec.removing_replicas, rec.leader_epoch) == (
            replicas, adding, removing, leader_epoch), name


def test_a_reassignment_to_what_is_in_progress_keeps_its_adding_and_removing_under_kraft() -> None:
    # KRaft sets adding/removing on the change only when they are not empty: a target equal to the current
    # replicas leaves the reassignment in progress as it is. ZK makes it a reassignment of its own.
    c = cluster("kraft")
    c.reassign(("two", 0, [2, 1]))
    result = c.reassign(("two", 0, [2, 1, 3]))
    rec = c.rec("two", 0)
    assert (rec.replicas, rec.adding_replicas, rec.removing_replicas) == ((2, 1, 3), (1,), (3,))
    assert result.decisions_for("two", 0) == []


def test_an_unclean_leader_at_broker_startup_completes_no_reassignment_under_kraft() -> None:
    # two-0 [2, 3] goes leaderless with broker 3 in its ISR, is reassigned to [3] (removing 2), and broker 3 comes
    # back. ZK elects 3 and then completes the reassignment; KRaft judges completion by the ISR the unfence
    # starts from: [3] already covers the target, so it completes too, in the same record as the election.
    for name in ("zk", "kraft"):
        c = cluster(name)
        c.failure(2)
        c.failure(3)
        c.reassign(("two", 0, [3]))
        c.startup(3)
        rec = c.rec("two", 0)
        assert (rec.leader, rec.isr, rec.replicas, rec.reassignment_in_progress) == (3, (3,), (3,), False), name


def test_a_reassignment_is_not_completed_by_the_isr_an_election_sets_under_kraft() -> None:
    # two-0 [3, 2], min ISR 2, ELR on. Brokers 2 and 3 fail: ISR empty, ELR [2, 3]. Reassigned to [3] (removing 2),
    # then broker 3 comes back and leads from the ELR with ISR [3]. ZK (no ELR: ISR [3] throughout) completes the
    # reassignment at that startup; KRaft judged completion by the empty ISR the unfence started from, and completes
    # it at the leader's next AlterPartition, even one that asks for the ISR it has.
    for name, in_progress_after_startup in (("zk", False), ("kraft", True)):
        c = Cluster(ControllerConfig(rules=rules_named(name)))
        c.start(1, 2, 3)
        c.send("UpdateFeatures", features={"eligible.leader.replicas.version": 1})
        c.create("two", [3, 2], configs={"min.insync.replicas": "2"})
        c.failure(2)
        c.failure(3)
        c.reassign(("two", 0, [3]))
        c.startup(3)
        rec = c.rec("two", 0)
        assert (rec.leader, rec.isr, rec.reassignment_in_progress) == (3, (3,), in_progress_after_startup), name
    done = c.isr_change("two", 0, [3], broker=3).decision("two", 0)
    assert (done.leader, list(done.isr), list(done.replicas), done.leader_epoch) == (3, [3], [3], rec.leader_epoch + 1)
