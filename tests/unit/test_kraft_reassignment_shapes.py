"""Every shape of reassignment record Kafka 4.1's controller writes (ReplicationControlManager: the start, the
completion with and without the leader's ISR change, the cancel through PartitionReassignmentRevert, a leader
removed, replicas reordered), read by the importer and replayed under the kraft rules: each partition goes
through the controller's states."""

from __future__ import annotations

import json
from typing import Any

from statemachine.controller import ControllerConfig
from statemachine.rules import KRAFT
from streaming.engine.local import run_local
from streaming.history.agreement import agreement_rows
from streaming.history.histories import history_rows
from streaming.kraft.convert import convert

from .test_kraft_convert import Log, change, pcr, register, started_cluster


def five_brokers() -> Log:
    log = started_cluster()
    for b in (4, 5):
        log.batch(register(b, log.offset))
        log.batch(change(b, log.offset - 1, fenced=-1))
    return log


def replayed(log: Log) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(events, the controller's states, isrflow's decisions) of the log under the kraft rules."""
    converted = convert(log.records)
    records = [(n, json.dumps(e).encode()) for n, e in enumerate(converted.events)]
    result = run_local(records, ControllerConfig(rules=KRAFT))
    assert result.rejected == 0, [a["message"] for a in result.audit if a["outcome"] == "REJECTED"]
    return converted.events, converted.observed, result.decisions


def assert_every_history_equal(observed: list[dict[str, Any]], decisions: list[dict[str, Any]]) -> None:
    histories = history_rows(observed, decisions)
    assert all(h["match"] for h in histories), [h["first_difference"] for h in histories if not h["match"]]
    assert all(r["match"] for r in agreement_rows(observed, decisions))


def test_a_cancel_that_shrinks_the_isr_is_a_cancel_not_the_leaders_isr_change() -> None:
    log = five_brokers()
    log.batch(pcr(0, replicas=[1, 4, 5, 2, 3], addingReplicas=[4, 5], removingReplicas=[2, 3]))  # -> [1, 4, 5]
    log.batch(pcr(0, isr=[1, 2, 3, 4]))  # 4 caught up; 5, throttled, has not
    # Cancelled: PartitionReassignmentRevert takes the adding replicas out of the replicas and the ISR; the
    # replica set lost members, so the leader epoch goes up (the record names the same leader).
    log.batch(pcr(0, replicas=[1, 2, 3], isr=[1, 2, 3], addingReplicas=[], removingReplicas=[], leader=1))
    events, observed, decisions = replayed(log)
    assert (events[-1]["type"], events[-1]["partitions"]) == ("ReassignPartitions",
                                                              [{"topic": "t", "partition": 0, "replicas": None}])
    assert observed[-1]["cause"] == "ReassignPartitions"
    last = decisions[-1]
    assert (last["replicas"], sorted(last["isr"]), last["leader"], last["leader_epoch"]) == ([1, 2, 3], [1, 2, 3],
                                                                                            1, 1)
    assert_every_history_equal(observed, decisions)


def test_a_completion_with_the_leaders_isr_change_removes_the_leader_and_elects_in_target_order() -> None:
    log = five_brokers()
    log.batch(pcr(0, replicas=[4, 2, 3, 1], addingReplicas=[4], removingReplicas=[1]))  # -> [4, 2, 3]
    # 4 caught up: the leader's AlterPartition completes the move in the same record, 1 (the leader) leaves.
    log.batch(pcr(0, isr=[2, 3, 4], replicas=[4, 2, 3], leader=4, addingReplicas=[], removingReplicas=[]))
    events, observed, decisions = replayed(log)
    assert [e["type"] for e in events[-2:]] == ["ReassignPartitions", "IsrChange"]
    assert (decisions[-1]["leader"], decisions[-1]["leader_epoch"], decisions[-1]["replicas"]) == (4, 1, [4, 2, 3])
    assert_every_history_equal(observed, decisions)


def test_a_removal_only_starts_and_completes_in_one_record() -> None:
    log = five_brokers()
    log.batch(pcr(1, replicas=[2, 3], isr=[2, 3], leader=2))  # [2, 3, 1] -> [2, 3]: the ISR already holds both
    events, observed, decisions = replayed(log)
    assert events[-1]["partitions"] == [{"topic": "t", "partition": 1, "replicas": [2, 3]}]
    assert (decisions[-1]["replicas"], decisions[-1]["leader_epoch"]) == ([2, 3], 1)
    assert_every_history_equal(observed, decisions)


def test_replicas_reordered_only_change_no_isr_and_keep_the_leader() -> None:
    log = five_brokers()
    log.batch(pcr(0, replicas=[3, 2, 1]))
    events, observed, decisions = replayed(log)
    assert events[-1]["partitions"] == [{"topic": "t", "partition": 0, "replicas": [3, 2, 1]}]
    assert (decisions[-1]["replicas"], decisions[-1]["leader"], decisions[-1]["leader_epoch"]) == ([3, 2, 1], 1, 0)
    assert_every_history_equal(observed, decisions)


def test_a_completion_that_sets_the_leader_recovered_is_the_leaders_alter_partition() -> None:
    log = five_brokers()
    log.batch(pcr(0, replicas=[4, 1, 2, 3], addingReplicas=[4], removingReplicas=[1, 2, 3]))  # -> [4]
    log.batch(pcr(0, isr=[2, 3], leader=2), pcr(1, isr=[2, 3]), change(1, 1, fenced=1))
    log.batch(pcr(0, isr=[3], leader=3), pcr(1, isr=[3], leader=3), change(2, 2, fenced=1))
    log.batch(pcr(0, leader=-1), pcr(1, leader=-1), change(3, 3, fenced=1))
    log.batch(pcr(0, isr=[4], leader=4, leaderRecoveryState=1))  # an unclean election: 4 leads, RECOVERING
    # 4 recovered: its AlterPartition (the only request that sets RECOVERED) brings an ISR that covers the target,
    # so the same record completes the move (one record, a replica set that lost members: a leader epoch bump).
    log.batch(pcr(0, replicas=[4], addingReplicas=[], removingReplicas=[], leader=4, leaderRecoveryState=0))
    events, observed, decisions = replayed(log)
    assert [e["type"] for e in events[-2:]] == ["ElectLeaders", "IsrChange"]
    last = decisions[-1]
    assert (last["replicas"], last["leader"], last["leader_recovery_state"]) == ([4], 4, "RECOVERED")
    assert_every_history_equal(observed, decisions)
