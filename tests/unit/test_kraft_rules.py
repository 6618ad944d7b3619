"""The kraft rule set: where Kafka 4.1's controller decides differently, and zk unchanged beside it."""

from __future__ import annotations

from schemas.records import Decision
from statemachine.controller import ControllerConfig
from statemachine.partition import apply_command
from statemachine.record import Action, PartitionRecord
from statemachine.rules import KRAFT, ZK, rules_named
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
