"""Each replica's log directory under the kraft rules (KIP-858): where a new replica goes, a broker's
AssignReplicasToDirs, the metadata versions before directory assignment, and a log dir going offline."""

from __future__ import annotations

from statemachine.controller import ControllerConfig
from statemachine.directories import MIGRATING, UNASSIGNED
from statemachine.features import metadata_version_level
from statemachine.rules import KRAFT

from .cluster import Cluster, Result


def jbod(metadata_version: str = "4.4-IV2") -> Cluster:
    """Brokers 1 and 2 with two log dirs each, broker 3 with one."""
    c = Cluster(ControllerConfig(rules=KRAFT, metadata_version=metadata_version_level(metadata_version)))
    c.start(1, 2, 3)
    for broker, dirs in ((1, ["a1", "b1"]), (2, ["a2", "b2"]), (3, ["a3"])):
        c.send("BrokerRegistration", broker_id=broker, broker_epoch=c.broker_epochs[broker], log_dirs=dirs)
    return c


def assign(c: Cluster, broker: int, *placed: tuple[str, int, str]) -> Result:
    return c.send("AssignReplicasToDirs", broker_id=broker, broker_epoch=c.broker_epochs[broker],
                  assignments=[{"topic": t, "partition": p, "directory": d} for t, p, d in placed])


def test_a_new_replica_goes_to_its_brokers_only_log_dir_else_waits_unassigned() -> None:
    c = jbod()
    created = c.create("t", [1, 2, 3])
    assert c.rec("t", 0).directories == (UNASSIGNED, UNASSIGNED, "a3")
    assert created.decision("t", 0).directories == (UNASSIGNED, UNASSIGNED, "a3")


def test_an_assignment_moves_one_replica_and_bumps_only_the_partition_epoch() -> None:
    c = jbod()
    c.create("t", [1, 2, 3])
    before = c.rec("t", 0)
    result = assign(c, 2, ("t", 0, "b2"))
    d = result.decision("t", 0)
    assert (d.leader, d.isr, d.leader_epoch, d.partition_epoch) == (1, (1, 2, 3), before.leader_epoch,
                                                                     before.partition_epoch + 1)
    assert d.directories == (UNASSIGNED, "b2", "a3")
    assert d.cause == "AssignReplicasToDirs"
    # The same assignment again changes nothing (PartitionChangeBuilder writes no record).
    assert assign(c, 2, ("t", 0, "b2")).decisions == []


def test_an_assignment_of_a_replica_the_broker_does_not_hold_is_refused() -> None:
    c = jbod()
    c.create("t", [1, 3])
    assert assign(c, 2, ("t", 0, "a2")).errors == {"NOT_LEADER_OR_FOLLOWER"}


def test_below_3_7_iv2_every_replica_is_migrating() -> None:
    c = jbod("3.6-IV2")
    c.create("t", [1, 2, 3])
    assert c.rec("t", 0).directories == (MIGRATING,) * 3


def test_a_reassignment_keeps_the_directories_of_the_replicas_that_stay() -> None:
    c = jbod()
    c.create("t", [1, 2])
    assign(c, 1, ("t", 0, "b1"))
    c.reassign(("t", 0, [1, 3]))
    assert dict(zip(c.rec("t", 0).replicas, c.rec("t", 0).directories, strict=True)) == {1: "b1", 2: UNASSIGNED,
                                                                                         3: "a3"}


def test_an_offline_log_dir_moves_only_its_partitions_and_its_replicas_cannot_lead_again() -> None:
    c = jbod()
    c.create("t", [1, 2, 3], [1, 3, 2])
    assign(c, 1, ("t", 0, "a1"), ("t", 1, "b1"))
    result = c.send("LogDirsOffline", broker_id=1, broker_epoch=c.broker_epochs[1], log_dirs=["a1"])
    moved = result.decision("t", 0)
    assert (moved.leader, sorted(moved.isr)) == (2, [2, 3])
    assert result.decisions_for("t", 1) == []  # broker 1's replica of t-1 is in b1, still online
    assert "went offline: 1 partition(s) in them; 1 leader(s) moved away from broker 1" in \
        result.cluster_row.message
    # A preferred election cannot bring broker 1 back as t-0's leader: its replica there is offline.
    assert c.elect("PREFERRED", ("t", 0)).decisions_for("t", 0) == []
    assert c.rec("t", 0).leader == 2


def test_an_intra_broker_move_is_an_assignment_from_one_log_dir_to_another_and_says_so() -> None:
    """AlterReplicaLogDirs: once broker 2 has swapped in its future replica, its AssignReplicasToDirs names the new
    dir; the controller writes the same directories-only change as for a first placement."""
    c = jbod()
    c.create("t", [1, 2, 3])
    placed = assign(c, 2, ("t", 0, "a2"))
    assert placed.row("t", 0).message == "broker 2 placed t-0 in log dir a2"
    before = c.rec("t", 0)
    moved = assign(c, 2, ("t", 0, "b2"))
    d = moved.decision("t", 0)
    assert (d.directories, d.leader_epoch, d.partition_epoch) == ((UNASSIGNED, "b2", "a3"), before.leader_epoch,
                                                                  before.partition_epoch + 1)
    assert moved.row("t", 0).message == "broker 2 moved t-0 from log dir a2 to b2"
    assert moved.cluster_row.message == "broker 2 assigns 1 replica(s) to its log dirs: moved t-0 from log dir a2 to b2"
