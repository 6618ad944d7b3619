"""The records' single definitions: the table columns derived from the dataclasses keep the external contract's
names and order, and the derived row conversion round-trips every record a controller emits."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from schemas.records import AuditRow, Decision, audit_sort_key, from_row, parse_ts, to_row
from schemas.tables import AUDIT, DECISION

from .cluster import Cluster

DECISION_COLUMNS = [
    "topic", "partition", "controller_epoch", "leader", "leader_epoch", "isr", "partition_epoch", "replicas",
    "adding_replicas", "removing_replicas", "leader_recovery_state", "is_new", "recipients", "election", "cause",
    "cause_event_id", "source_offset", "event_ts", "decided_at"]
AUDIT_COLUMNS = [
    "event_id", "event_type", "source_offset", "step", "batch_id", "topic", "partition", "controller_epoch",
    "from_state", "to_state", "outcome", "error", "message", "leader_before", "leader_after", "leader_epoch_before",
    "leader_epoch_after", "isr_before", "isr_after", "partition_epoch_before", "partition_epoch_after", "election",
    "replica_states", "replicas_after", "leader_recovery_state_after", "broker_id", "principal", "event_ts",
    "processed_at"]
DECISION_ADDITIONS = ["eligible_leader_replicas", "last_known_elr", "directories"]
AUDIT_ADDITIONS = ["action", "broker_change", "broker_epoch", "controller_id", "event_controller_epoch", "configs"]


def test_table_columns_keep_the_contract_order_with_additions_at_the_end() -> None:
    assert DECISION.names == DECISION_COLUMNS + DECISION_ADDITIONS
    assert AUDIT.names == AUDIT_COLUMNS + AUDIT_ADDITIONS
    types = {c.name: (c.type, c.nullable) for c in AUDIT.columns}
    assert types["source_offset"] == ("long", False)
    assert types["replica_states"] == ("map<int,string>", True)
    assert types["configs"] == ("map<string,string>", True)
    assert {c.name: (c.type, c.nullable) for c in DECISION.columns}["isr"] == ("array<int>", False)


def _busy_cluster() -> Cluster:
    cluster = Cluster()
    for broker in (1, 2, 3):
        cluster.startup(broker)
    cluster.create("t", [1, 2, 3], [2, 3, 1])
    cluster.alter("t", {"unclean.leader.election.enable": "true"})
    cluster.failure(1)
    cluster.controller_change(controller_id=2)
    return cluster


def test_rows_round_trip_and_hold_plain_values() -> None:
    cluster = _busy_cluster()
    out = cluster.failure(2)
    records = [*out.audits, *out.decisions]
    assert records and any(isinstance(r, Decision) for r in records)
    for record in records:
        row = to_row(record)
        assert from_row(type(record), row) == record
        # Plain values only: what Arrow, pandas and JSON take without help.
        for value in row.values():
            assert value is None or type(value) in (str, int, bool, list, dict), (value, type(value))


def test_audit_sort_key_orders_by_offset_then_cluster_row_then_step() -> None:
    cluster = Cluster()
    cluster.startup(1)
    cluster.create("t", [1, 2])  # broker 2 never started: the partition's rows are steps 0 and 1
    out = cluster.startup(2, controller_epoch=2)  # an implicit failover first, then the startup
    rows = [to_row(r) for r in out.audits]
    ordered = sorted(reversed(rows), key=audit_sort_key)  # whatever order a table kept them in
    assert [(r["partition"], r["step"], r["action"]) for r in ordered] == [
        (None, 0, "CONTROLLER_FAILOVER"), (None, 1, "CLUSTER"), (0, 0, "CONTROLLER_FAILOVER"), (0, 1, "BROKER_STARTUP")]


def test_parse_ts_reads_kafka_style_times_as_utc() -> None:
    assert parse_ts("2024-05-01T12:00:00Z") == parse_ts("2024-05-01T12:00:00+00:00") == parse_ts("2024-05-01T12:00:00")
    assert parse_ts("not a time") is None and parse_ts(None) is None


def test_audit_row_has_every_fact_the_analysis_reads() -> None:
    cluster = _busy_cluster()
    startup = cluster.startup(1).cluster_row
    assert (startup.broker_change, startup.broker_id, startup.broker_epoch) == ("STARTUP", 1, cluster.broker_epochs[1])
    alter = cluster.alter("t", {"unclean.leader.election.enable": None}).cluster_row
    assert alter.configs == {"unclean.leader.election.enable": None}
    fenced = cluster.imbalance_check(controller_epoch=1).only_row
    assert (fenced.error, fenced.event_controller_epoch, fenced.controller_epoch) == ("STALE_CONTROLLER_EPOCH", 1, 2)
    assert isinstance(fenced, AuditRow) and fenced.controller_id == 2


def _decision(**changes: object) -> Decision:
    fields = dict(topic="t", partition=0, controller_epoch=1, leader=1, leader_epoch=2, isr=(1, 2), partition_epoch=3,
                  replicas=(1, 2), adding_replicas=(), removing_replicas=(), leader_recovery_state="RECOVERED",
                  is_new=False, recipients=(1, 2), election=None, cause="IsrChange", cause_event_id="e-1",
                  source_offset=7, event_ts=None)
    return Decision(**{**fields, **changes})


def test_a_record_built_or_evolved_is_frozen_equal_hashable_and_picklable() -> None:
    # frozen_record builds a record as a plain class with the same slots and makes it the frozen class after: what
    # the core hands on must be the frozen record itself, as `dataclass(frozen=True, slots=True)` makes it.
    built = _decision()
    evolved = built.evolve(leader=2, leader_epoch=3)
    for record in (built, evolved):
        assert type(record) is Decision
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.leader = 5  # type: ignore[misc]
        assert pickle.loads(pickle.dumps(record)) == record
        assert dataclasses.replace(record) == record and hash(dataclasses.replace(record)) == hash(record)
    assert (evolved.leader, evolved.leader_epoch, evolved.isr) == (2, 3, (1, 2))
    assert evolved == _decision(leader=2, leader_epoch=3) and evolved != built
    assert built.eligible_leader_replicas == () and built.directories == ()  # the defaults, left out of the call
