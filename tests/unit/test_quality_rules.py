"""The pure parts of the data-quality suite: its rules and variants, the transitions an accepted audit row may
show, and the report's verdict. No Spark, no Great Expectations."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from statemachine.errors import Error
from statemachine.states import PartitionState
from streaming.cli import key_values
from streaming.errors import UsageError
from streaming.quality.gx import combined_query
from streaming.quality.results import QualityReport, RuleResult, example_label, status_of
from streaming.quality.rules import (
    ALL_CAPABILITIES,
    DECISIONS,
    DECISIONS_VIEW,
    REPLICAS,
    RULES,
    capabilities_of,
    reachable_transitions,
    rule_names,
    suite_rules,
)

REPO = Path(__file__).resolve().parents[2]
P = PartitionState
STATES = [s.value for s in P]


def test_importing_the_suite_imports_neither_spark_nor_gx() -> None:
    modules = ("streaming.quality.rules, streaming.quality.gx, streaming.quality.prepare, streaming.quality.runner, "
               "streaming.quality.local")
    code = f"import sys, {modules}; print('pyspark' in sys.modules, 'great_expectations' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    assert out.split() == ["False", "False"]


def test_accepted_rows_may_pass_through_states_but_never_go_back_to_new() -> None:
    pairs = reachable_transitions()
    assert all((s, s) in pairs for s in STATES)
    # one event: broker failure and re-election, creation and election, deletion
    assert (P.ONLINE, P.ONLINE) in pairs and (P.NEW, P.ONLINE) in pairs and (P.ONLINE, P.NON_EXISTENT) in pairs
    assert (P.NON_EXISTENT, P.ONLINE) in pairs  # created and elected by one CreateTopic
    forbidden = {(a, b) for a in STATES for b in STATES} - pairs
    assert forbidden == {(P.ONLINE.value, P.NEW.value), (P.OFFLINE.value, P.NEW.value)}


def test_without_a_terminal_state_everything_reaches_everything() -> None:
    # Why the chain stops at NonExistentPartition: Offline -> NonExistent -> New would make New reachable.
    assert len(reachable_transitions(terminal=None)) == len(STATES) ** 2


def test_reachability_follows_the_table_given() -> None:
    table = {P.NEW: {P.NON_EXISTENT}, P.ONLINE: {P.NEW}}
    assert reachable_transitions(table, terminal=None) == {
        (P.NON_EXISTENT.value, P.NON_EXISTENT.value), (P.NEW.value, P.NEW.value), (P.ONLINE.value, P.ONLINE.value),
        (P.NON_EXISTENT.value, P.NEW.value), (P.NON_EXISTENT.value, P.ONLINE.value), (P.NEW.value, P.ONLINE.value),
    }


def test_rule_names_are_unique_per_variant_and_the_full_suite_has_them_all() -> None:
    for caps in (ALL_CAPABILITIES, frozenset({REPLICAS}), frozenset()):
        names = rule_names(caps)
        assert len(names) == len(set(names)), caps
    assert set(rule_names()) == {r.name for r in RULES}
    assert {
        "required_columns_not_null", "error_set_iff_rejected", "error_is_contract_name", "accepted_transitions_valid",
        "leader_in_isr", "isr_not_empty_once_initialised", "isr_subset_of_replicas", "leader_epoch_never_decreases",
        "partition_epoch_one_per_write", "decision_epoch_unique_per_incarnation", "controller_epoch_never_decreases",
        "no_unclean_election",
    } <= set(rule_names())


def test_the_local_engine_has_every_rule_and_no_other() -> None:
    from streaming.quality.local import ROW_RULES

    assert set(ROW_RULES) == {r.name for r in RULES}


def test_local_engine_writes_values_as_spark_casts_them() -> None:
    from streaming.quality.local import concat, nulls_first, text

    assert (text([1, 2]), text([]), text([1, None]), text(None), text(3)) == ("[1, 2]", "[]", "[1, null]", None, "3")
    assert concat("isr ", [3], " -> ", 2) == "isr [3] -> 2"
    assert concat("outcome ", None) is None
    assert sorted([3, None, 1], key=nulls_first) == [None, 1, 3]


def test_variants() -> None:
    full, audit_only, bare = rule_names(), rule_names(frozenset({REPLICAS})), rule_names(frozenset())
    assert set(full) - set(audit_only) == {"decision_epoch_unique_per_incarnation", "decisions_have_accepted_audit_row"}
    assert set(audit_only) - set(bare) == {"isr_subset_of_replicas"}
    # partition_epoch_one_per_write is in every variant, counting writes only with the decisions
    epoch = [r for r in RULES if r.name == "partition_epoch_one_per_write"]
    assert len(epoch) == 2
    assert [r.applies(ALL_CAPABILITIES) for r in epoch].count(True) == 1
    assert [r.applies(frozenset()) for r in epoch].count(True) == 1
    assert "q_writes" in next(r for r in epoch if r.applies(ALL_CAPABILITIES)).query


def test_capabilities_come_from_the_inputs() -> None:
    assert capabilities_of(["event_id", "replicas_after"], with_decisions=False) == {REPLICAS}
    assert capabilities_of(["event_id"], with_decisions=False) == frozenset()
    assert capabilities_of(["event_id"], with_decisions=True) == {DECISIONS, REPLICAS}


def test_only_the_unclean_election_rule_is_a_warning() -> None:
    assert [r.name for r in RULES if r.severity == "warning"] == ["no_unclean_election"]


def test_queries_read_the_batch_and_name_the_decisions_view_only_when_they_need_it() -> None:
    for rule in RULES:
        uses_decisions = DECISIONS_VIEW in rule.query or "q_writes" in rule.query
        assert uses_decisions == (DECISIONS in rule.requires), rule.name
        assert "{batch}" in rule.query or uses_decisions, rule.name
        # str.format-style substitution of {batch}: no other braces
        assert rule.query.replace("{batch}", "").count("{") == 0, rule.name


def test_error_names_are_the_contracts() -> None:
    query = next(r for r in RULES if r.name == "error_is_contract_name").query
    for error in Error:
        assert f"'{error.value}'" in query


def test_combined_query_tags_and_caps_each_rule() -> None:
    rules = suite_rules()
    query = combined_query(rules)
    assert query.count("UNION ALL") == len(rules) - 1
    assert all(f"SELECT '{r.name}' AS rule" in query for r in rules)
    assert "PARTITION BY rule" in query and "q_rank <= 5" in query


@pytest.mark.parametrize(("pairs", "expected"), [
    (None, {}),
    (["spark.sql.shuffle.partitions=4", "spark.x= a=b "], {"spark.sql.shuffle.partitions": "4", "spark.x": " a=b "}),
])
def test_key_values(pairs: list[str] | None, expected: dict[str, str]) -> None:
    assert key_values(pairs) == expected


@pytest.mark.parametrize("bad", ["spark.sql.shuffle.partitions", "=4"])
def test_key_values_rejects_pairs_without_key_or_equals(bad: str) -> None:
    with pytest.raises(UsageError, match="key=value"):
        key_values([bad])


def test_status_and_exit_code() -> None:
    assert status_of(True, "critical") == "passed"
    assert status_of(False, "critical") == "failed"
    assert status_of(False, "warning") == "warning"
    assert status_of(True, "critical", raised=True) == "error"

    def report(*results: RuleResult) -> QualityReport:
        return QualityReport("s", ALL_CAPABILITIES, 10, list(results))

    warned = report(RuleResult("a", "critical", "passed", 0), RuleResult("u", "warning", "warning", 2))
    assert (warned.exit_code, warned.summary()) == (0, {"failed": 0, "warnings": 1})
    failed = report(RuleResult("a", "critical", "failed", 1), RuleResult("b", "critical", "error", 0))
    assert (failed.exit_code, failed.failed, failed.summary()) == (1, ["a", "b"], {"failed": 2, "warnings": 0})


def test_example_label() -> None:
    row = {"event_id": "ev-1", "topic": "orders", "partition": 3, "source_offset": 7, "detail": "1 -> 3"}
    assert example_label(row) == "ev-1 orders-3 @7 (1 -> 3)"
    assert example_label({"event_id": "ev-2", "topic": None, "partition": None, "source_offset": 9}) == \
        "ev-2 cluster @9"
