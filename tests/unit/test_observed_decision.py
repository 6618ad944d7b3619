"""The controller's own decisions beside the events, as `isrflow bridge` publishes them (ObservedDecision records)
and `isrflow run` compares them (the agreement of a micro-batch's events): pure, no Kafka, no Spark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from schemas.events import Malformed, ObservedDecision, parse_event, parse_record
from schemas.tables import AGREEMENT
from statemachine.controller import ControllerConfig
from statemachine.rules import KRAFT, ZK
from streaming.engine.counts import agreement_words, partitions_line
from streaming.engine.local import run_local
from streaming.history.agreement import agreement_rows, batch_agreement, from_table_rows, to_table_rows
from streaming.io.delta import write_delta
from streaming.jobs.bridge import ZOOKEEPER, with_observed
from streaming.kraft.convert import Converter, convert, event_offset

from .test_kraft_convert import change, pcr, register, started_cluster


def failure_then_shutdown() -> Any:
    """Broker 1 fails (kill -9), then broker 2 shuts down: two events that each change both partitions."""
    log = started_cluster()
    log.batch(pcr(0, isr=[2, 3], leader=2), pcr(1, isr=[2, 3]), change(1, 1, fenced=1))
    log.batch(change(2, 2, inControlledShutdown=1), pcr(0, isr=[3], leader=3), pcr(1, isr=[3], leader=3))
    return convert(log.records)


def published(records: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, bytes]]:
    """The records as the events topic holds them: values as JSON, each at its own offset."""
    return [(i, json.dumps(r).encode()) for i, (_, r) in enumerate(records)]


def test_each_event_is_followed_by_the_controllers_changes_it_caused_under_its_offset() -> None:
    result = failure_then_shutdown()
    records, waiting = with_observed(result.events, result.observed, -1)
    assert not waiting
    offsets = [o for o, _ in records]
    assert offsets == sorted(offsets)  # a resumed bridge starts after the highest: no gap, no duplicate
    observed = [(o, r) for o, r in records if r["type"] == "ObservedDecision"]
    assert sorted((r["source_offset"] for _, r in observed)) == sorted(o["source_offset"] for o in result.observed)
    events = {e["event_id"]: i for i, (_, e) in enumerate(records) if e["type"] != "ObservedDecision"}
    for i, (offset, r) in enumerate(records):
        if r["type"] == "ObservedDecision":
            cause = r["cause_event_id"]
            assert events[cause] < i and offset == event_offset(records[events[cause]][1])
    # The failure's two changes come right after it.
    failure = next(i for i, (_, e) in enumerate(records) if e.get("change") == "FAILURE")
    assert [(r["type"], r["partition"]) for _, r in records[failure + 1:failure + 3]] == [
        ("ObservedDecision", 0), ("ObservedDecision", 1)]


def test_an_observed_decision_parses_back_to_the_observed_row() -> None:
    result = failure_then_shutdown()
    records, _ = with_observed(result.events, result.observed, -1)
    parsed = [parse_record(json.dumps(r)) for _, r in records if r["type"] == "ObservedDecision"]
    assert all(isinstance(p, ObservedDecision) for p in parsed)
    assert [p.to_row() for p in parsed] == [  # type: ignore[union-attr]
        o for e in result.events for o in result.observed if o["cause_event_id"] == e["event_id"]]
    # It is no event: read as one, it is refused.
    assert isinstance(parse_event(json.dumps(records[-1][1])), Malformed)


def test_the_controller_does_not_act_on_observed_decisions() -> None:
    result = failure_then_shutdown()
    records, _ = with_observed(result.events, result.observed, -1)
    config = ControllerConfig(rules=KRAFT)
    alone = run_local(published([(event_offset(e), e) for e in result.events]), config)
    beside = run_local(published(records), config)
    assert not beside.quarantine
    # The same decisions (at other topic offsets: the observed records sit between the events).
    key = ("topic", "partition", "leader", "isr", "leader_epoch", "partition_epoch", "cause_event_id")
    assert [tuple(str(d[k]) for k in key) for d in beside.decisions] == [
        tuple(str(d[k]) for k in key) for d in alone.decisions]
    assert len(beside.audit) == len(alone.audit)


BASE = {"type": "ObservedDecision", "topic": "t", "partition": 0, "leader": 2, "isr": [2, 3], "leader_epoch": 1,
        "partition_epoch": 1, "replicas": [1, 2, 3], "adding_replicas": [], "removing_replicas": [],
        "leader_recovery_state": "RECOVERED", "eligible_leader_replicas": [], "last_known_elr": [],
        "source_offset": 17, "cause": "BrokerChange", "cause_event_id": "kraft-19", "decision": True}


@pytest.mark.parametrize(("change_", "reason"), [
    ({"isr": "2,3"}, "field 'isr' must be a list of integers"),
    ({"leader": -2}, "field 'leader' must be >= 0"),
    ({"decision": 1}, "field 'decision' must be true or false"),
    ({"leader_recovery_state": "FINE"}, "field 'leader_recovery_state' must be one of"),
    ({"source_offset": -1}, "field 'source_offset' must be >= 0"),
    ({"cause_event_id": 19}, "field 'cause_event_id' must be a string"),
    ({"partition_epoch": None}, "field 'partition_epoch' must be an integer"),
])
def test_a_malformed_observed_decision_is_malformed_with_the_field_named(change_: dict[str, Any],
                                                                         reason: str) -> None:
    parsed = parse_record(json.dumps({**BASE, **change_}))
    assert isinstance(parsed, Malformed) and reason in parsed.reason


def test_an_observed_decision_missing_a_field_is_malformed_and_a_change_of_no_event_is_read() -> None:
    parsed = parse_record(json.dumps({k: v for k, v in BASE.items() if k != "replicas"}))
    assert isinstance(parsed, Malformed) and parsed.reason == "missing field 'replicas'"
    unexplained = parse_record(json.dumps({**BASE, "cause": "Unexplained", "cause_event_id": None, "leader": -1}))
    assert isinstance(unexplained, ObservedDecision) and unexplained.cause_event_id is None


def test_a_change_at_a_brokers_unclean_registration_waits_for_its_startup() -> None:
    log = started_cluster()
    log.batch(pcr(0, isr=[], leader=-1, eligibleLeaderReplicas=[1], lastKnownElr=[1]), change(1, 1, fenced=1))
    log.batch(pcr(0, eligibleLeaderReplicas=[]), register(1, log.offset + 1, incarnation="again"))
    split = log.offset
    log.batch(change(1, 5, fenced=-1), pcr(0, isr=[1], leader=1, leaderRecoveryState=1, lastKnownElr=[]))
    # Two bridge rounds: the registration in the first, the STARTUP in the second.
    converter = Converter()
    first = converter.feed([r for r in log.records if r.offset < split])
    records, waiting = with_observed(list(first.events), list(first.observed), -1)
    assert [w["cause"] for w in waiting] == ["BrokerRegistration"]
    assert all(r["source_offset"] != waiting[0]["source_offset"] for _, r in records if "source_offset" in r)
    last = records[-1][0]
    first.events, first.observed = [], []
    second = converter.feed([r for r in log.records if r.offset >= split])
    later, still = with_observed(second.events, [*waiting, *second.observed], last)
    assert not still
    startup = next(i for i, (_, e) in enumerate(later) if e.get("change") == "STARTUP")
    assert [(r["type"], r["eligible_leader_replicas"]) for _, r in later[startup + 1:startup + 3]] == [
        ("ObservedDecision", []), ("ObservedDecision", [])]


def rows_of(result: Any, decisions: list[dict[str, Any]], event_ids: set[str]) -> list[dict[str, Any]]:
    return batch_agreement(reversed(result.observed), decisions, event_ids)


def test_a_batch_compares_only_its_events_and_finds_the_zk_rules_epoch_bump() -> None:
    result = failure_then_shutdown()
    failure = next(e["event_id"] for e in result.events if e.get("change") == "FAILURE")
    for rules, agreeing in ((KRAFT, True), (ZK, False)):
        decisions = run_local(published([(event_offset(e), e) for e in result.events]),
                              ControllerConfig(rules=rules)).decisions
        rows = rows_of(result, decisions, {failure})  # the table gives rows in any order
        assert {r["cause_event_id"] for r in rows} == {failure} and len(rows) == 2
        assert all(r["match"] for r in rows) is agreeing
        # The same rows as the whole history's, for that event.
        assert rows == [r for r in agreement_rows(result.observed, decisions) if r["cause_event_id"] == failure]
    # ZK bumps the leader epoch on the ISR shrink of partition 1 (its leader stays).
    assert [r["differing"] for r in rows if not r["match"]] == [["leader_epoch"]]


def test_the_agreement_table_holds_the_rows_and_check_fails_on_a_disagreement(tmp_path: Path) -> None:
    from streaming.quality.agreement import agreement_result

    result = failure_then_shutdown()
    events = {e["event_id"] for e in result.events}
    zk = run_local(published([(event_offset(e), e) for e in result.events]), ControllerConfig(rules=ZK)).decisions
    rows = batch_agreement(result.observed, zk, events)
    assert from_table_rows(to_table_rows(rows, 3)) == rows
    audit = tmp_path / "audit"
    assert agreement_result(audit) is None  # not behind a bridge
    write_delta(tmp_path / "agreement", to_table_rows(rows, 3), AGREEMENT)
    failed = agreement_result(audit)
    assert failed is not None and failed.fails_check
    assert failed.unexpected == sum(1 for r in rows if not r["match"]) > 0
    kraft = run_local(published([(event_offset(e), e) for e in result.events]),
                      ControllerConfig(rules=KRAFT)).decisions
    write_delta(tmp_path / "agreement", to_table_rows(batch_agreement(result.observed, kraft, events), 3),
                AGREEMENT)
    passed = agreement_result(audit)
    assert passed is not None and not passed.fails_check and passed.unexpected == 0


def test_a_zookeeper_controllers_write_goes_out_under_its_own_later_zxid() -> None:
    """The ZooKeeper-era controller writes an event's partition states in later transactions: a bridge resumed after
    the highest header has read them, and the headers never go down."""
    events = [{"type": "BrokerChange", "event_id": "zk-10-1"}, {"type": "IsrChange", "event_id": "zk-12-t-0"}]
    observed = [{"source_offset": 13, "cause_event_id": "zk-10-1"},
                {"source_offset": 12, "cause_event_id": "zk-12-t-0"}]
    records, waiting = with_observed(events, observed, 9, ZOOKEEPER)
    assert not waiting
    assert [(z, r["type"]) for z, r in records] == [
        (10, "BrokerChange"), (13, "ObservedDecision"), (13, "IsrChange"), (13, "ObservedDecision")]


def test_a_batch_of_only_isr_expansions_says_why_it_shows_no_agreement() -> None:
    """The progress line of `run` behind the bridge: a batch whose only decisions are a leader's ISR expansion has no
    election or ISR shrink of the controller's to compare, and says so instead of saying nothing."""
    log = started_cluster()
    log.batch(pcr(0, isr=[1, 2]))  # the leader shrinks its ISR: the controller's write is compared
    log.batch(pcr(0, isr=[1, 2, 3]))  # and expands it again: the controller's write, no election or ISR shrink
    result = convert(log.records)
    shrink, expansion = (e["event_id"] for e in result.events[-2:])
    decisions = run_local(published([(event_offset(e), e) for e in result.events]),
                          ControllerConfig(rules=KRAFT)).decisions

    def line(event_ids: set[str]) -> str:
        batch = [d for d in decisions if d["cause_event_id"] in event_ids]
        agreement = agreement_words(rows_of(result, batch, event_ids), len(batch))
        counts = {"commands": len(batch), "decisions": len(batch), "published": len(batch), "rejections": 0,
                  "steps": {}, "within": {}, "agreement": agreement}
        return partitions_line(4, counts, 2, 1.0)

    assert line({shrink}).endswith(", 1/1 agreeing")
    assert line({expansion}).endswith(", 1 not compared (no election or ISR shrink)")
    assert line({shrink, expansion}).endswith(", 1/1 agreeing, 1 not compared (no election or ISR shrink)")
    assert agreement_words([], 0) is None  # nothing decided: nothing to say
