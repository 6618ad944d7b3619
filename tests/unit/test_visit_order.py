"""The broker order of Kafka's ReplicaStateMachine.handleStateChanges (statemachine/visit_order.py)."""

from __future__ import annotations

from statemachine.visit_order import failover_resume_order, reassignment_order, replica_state_machine_order


def test_the_order_scala_iterates_a_hash_map_of_broker_ids() -> None:
    # What scala-library 2.13.15 (Kafka 3.9's) prints iterating immutable.HashMap keys of these ids, and what
    # List(...).groupBy returns (an immutable.HashMap for any size).
    assert replica_state_machine_order([4, 3]) == [3, 4]
    assert replica_state_machine_order(range(1, 11)) == [5, 10, 1, 6, 9, 2, 7, 3, 8, 4]
    assert replica_state_machine_order([6, 5, 4, 3, 2, 1]) == [5, 1, 6, 2, 3, 4]


def test_distinct_brokers_whatever_the_input_order() -> None:
    assert replica_state_machine_order([2, 1, 2]) == replica_state_machine_order([1, 2]) == [1, 2]
    assert replica_state_machine_order([]) == []


def test_one_requests_reassignments_start_in_the_order_of_the_controllers_hash_map() -> None:
    # Kafka 3.9.1 campaign seed 303: /admin/reassign_partitions named t0-0, t0-1, t1-0 and t1-2; the controller sent
    # their LeaderAndIsr requests for t0-1, t1-2, t0-0, t1-0 (its state-change.log), the iteration order of a Scala
    # 2.13 mutable.HashMap keyed by TopicPartition.
    assert reassignment_order([("t0", 0), ("t0", 1), ("t1", 0), ("t1", 2)]) == [
        ("t0", 1), ("t1", 2), ("t0", 0), ("t1", 0)]
    assert reassignment_order([("t0", 1), ("t0", 1)]) == [("t0", 1)]


def test_a_failover_resumes_first_the_reassignments_its_read_of_the_znode_found() -> None:
    # Kafka 2.7.2 campaign seed 1043: t1-1 and t1-0 in /admin/reassign_partitions, t0-0 not: t1-1, t1-0, t0-0 (the
    # hash set alone would give t0-0 first). Seed 1232 (Kafka 3.9.1): t0-0 in the znode, then t1-4 and t1-3.
    moving = [("t0", 0), ("t1", 0), ("t1", 1)]
    assert failover_resume_order(moving, []) == reassignment_order(moving) == [("t0", 0), ("t1", 1), ("t1", 0)]
    assert failover_resume_order(moving, [("t1", 0), ("t1", 1)]) == [("t1", 1), ("t1", 0), ("t0", 0)]
    assert failover_resume_order([("t1", 3), ("t1", 4), ("t0", 0)], [("t0", 0), ("t9", 9)]) == [
        ("t0", 0), ("t1", 4), ("t1", 3)]
