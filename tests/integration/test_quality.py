"""The data-quality suite on real audit tables: a clean replay of the bundled scenario passes, and for every
expectation a copy of it with one injected violation fails that expectation and no other, through
`isrflow check` (exit 1, the expectation named in the output).

One clean replay per module (local engine, seconds); each violation is a fresh Delta table written with
delta-rs. `isrflow check` checks these small tables with its local engine (no Spark); the same tables through
the Spark engine give the same results, expectation by expectation (`test_both_engines_give_the_same_results`).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from schemas.tables import AUDIT, Column, TableSchema
from streaming.cli import main
from streaming.engine.local import run_local, write_outputs
from streaming.io.delta import read_decisions_jsonl, read_delta, write_delta
from streaming.io.eventlog import read_event_log

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "streaming" / "scenarios" / "incident.jsonl"
# Null in a required column cannot be written with AUDIT's own (non-nullable) schema.
NULLABLE_AUDIT = TableSchema("audit", tuple(Column(c.name, c.type, True) for c in AUDIT.columns))

Rows = list[dict[str, Any]]


@pytest.fixture(scope="module")
def clean_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("quality") / "clean"
    write_outputs(run_local(read_event_log(SCENARIO)), out)
    return out


@pytest.fixture(scope="module")
def clean_audit(clean_dir: Path) -> Rows:
    return read_delta(clean_dir / "audit")


@pytest.fixture(scope="module")
def clean_decisions(clean_dir: Path) -> Rows:
    return read_decisions_jsonl(clean_dir / "decisions.jsonl")


def write_copy(folder: Path, audit: Rows, decisions: Rows | None, schema: TableSchema = AUDIT) -> Path:
    """An audit table (and decisions.jsonl beside it, in the given order) like replay's output."""
    write_delta(folder / "audit", audit, schema)
    if decisions is not None:
        with (folder / "decisions.jsonl").open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(d) + "\n" for d in decisions)
    return folder / "audit"


def run_check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, dict[str, list[str]]]:
    code = main(["check", *argv])
    out = capsys.readouterr().out
    lists = {}
    for key in ("failed", "warnings"):
        match = re.search(rf"^{key}: (.*)$", out, re.MULTILINE)
        assert match, f"no '{key}:' line in\n{out}"
        lists[key] = [] if match.group(1).strip() == "-" else [n.strip() for n in match.group(1).split(",")]
    return code, out, lists


def find(rows: Rows, offset: int, topic: str | None = None, partition: int | None = None) -> dict[str, Any]:
    matches = [r for r in rows if r["source_offset"] == offset and r["topic"] == topic
               and r["partition"] == partition]
    assert len(matches) == 1, (offset, topic, partition, matches)
    return matches[0]


# Each injection changes the clean audit (or decisions) in place; the comment says why no other rule fires.
def _null_event_id(audit: Rows, decisions: Rows) -> None:
    find(audit, 1)["event_id"] = None  # a cluster row: no partition rule looks at it


def _unknown_outcome(audit: Rows, decisions: Rows) -> None:
    find(audit, 1)["outcome"] = "MAYBE"  # not REJECTED and no error: error_set_iff_rejected still holds


def _unknown_error(audit: Rows, decisions: Rows) -> None:
    find(audit, 36)["error"] = "STALE_EPOCH"  # still REJECTED with an error; epoch 2 is not below 2


def _rejected_without_error(audit: Rows, decisions: Rows) -> None:
    find(audit, 35)["error"] = None  # its controller_epoch (2) is not below the earlier maximum (2)


def _accepted_back_to_new(audit: Rows, decisions: Rows) -> None:
    find(audit, 10, "orders", 0)["to_state"] = "NewPartition"  # Online -> New: not reachable


def _no_op_moves_leader(audit: Rows, decisions: Rows) -> None:
    find(audit, 34, "orders", 1)["leader_after"] = 4  # NO_OP row; 4 is in its ISR [2, 4, 3]


def _leader_outside_isr(audit: Rows, decisions: Rows) -> None:
    find(audit, 10, "orders", 0)["leader_after"] = 4  # ISR [2, 3, 1]


def _empty_isr(audit: Rows, decisions: Rows) -> None:
    find(audit, 21, "orders", 2)["isr_after"] = []  # OfflinePartition with leader -1


def _isr_beyond_replicas(audit: Rows, decisions: Rows) -> None:
    find(audit, 21, "orders", 2)["isr_after"] = [3, 9]  # replicas [3, 4, 1]; leader -1


def _leader_epoch_down(audit: Rows, decisions: Rows) -> None:
    find(audit, 24, "orders", 0)["leader_epoch_after"] = 2  # 3 -> 2; the next row starts at 3 >= 2


def _partition_epoch_jump(audit: Rows, decisions: Rows) -> None:
    find(audit, 10, "orders", 0)["partition_epoch_after"] = 3  # 1 -> 3 with one decision


def _duplicate_decision(audit: Rows, decisions: Rows) -> None:
    # offset 33 wrote orders-0 three times (7, 8, 9): the middle one claims 7 again; still 3 decisions
    next(d for d in decisions if d["source_offset"] == 33 and d["partition_epoch"] == 8)["partition_epoch"] = 7


def _orphan_decision(audit: Rows, decisions: Rows) -> None:
    orphan = copy.deepcopy([d for d in decisions if d["source_offset"] == 33][-1])
    orphan["partition"] = 9  # orders-9 does not exist: no audit row counts or checks it
    decisions.append(orphan)


def _controller_epoch_down(audit: Rows, decisions: Rows) -> None:
    find(audit, 20, "orders", 2)["controller_epoch"] = 0


VIOLATIONS: dict[str, tuple[Callable[[Rows, Rows], None], TableSchema]] = {
    "required_columns_not_null": (_null_event_id, NULLABLE_AUDIT),
    "outcome_is_known": (_unknown_outcome, AUDIT),
    "error_is_contract_name": (_unknown_error, AUDIT),
    "error_set_iff_rejected": (_rejected_without_error, AUDIT),
    "accepted_transitions_valid": (_accepted_back_to_new, AUDIT),
    "unchanged_unless_accepted": (_no_op_moves_leader, AUDIT),
    "leader_in_isr": (_leader_outside_isr, AUDIT),
    "isr_not_empty_once_initialised": (_empty_isr, AUDIT),
    "isr_subset_of_replicas": (_isr_beyond_replicas, AUDIT),
    "leader_epoch_never_decreases": (_leader_epoch_down, AUDIT),
    "partition_epoch_one_per_write": (_partition_epoch_jump, AUDIT),
    "decision_epoch_unique_per_incarnation": (_duplicate_decision, AUDIT),
    "decisions_have_accepted_audit_row": (_orphan_decision, AUDIT),
    "controller_epoch_never_decreases": (_controller_epoch_down, AUDIT),
}


def test_every_critical_expectation_has_a_violation_test() -> None:
    from streaming.quality.rules import RULES

    critical = {r.name for r in RULES if r.severity == "critical"}
    assert critical == set(VIOLATIONS)
    assert {r.name for r in RULES if r.severity == "warning"} == {"no_unclean_election"}


def test_clean_audit_passes_with_the_unclean_election_as_a_warning(
        clean_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        spark: Any) -> None:
    from great_expectations.data_context import EphemeralDataContext

    from streaming.quality.gx import gx_runtime
    from streaming.quality.rules import SUITE_NAME, rule_names

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)  # GX must not create a project (gx/, great_expectations.yml) where it runs
    html = tmp_path / "html"
    code, out, lists = run_check(capsys, str(clean_dir / "audit"), "--html", str(html))

    assert code == 0, out
    assert lists == {"failed": [], "warnings": ["no_unclean_election"]}
    assert "ev-000022 payments-0 @22" in out  # the unclean election's row, as an example
    assert f"passed: {len(rule_names()) - 1} of {len(rule_names())}" in out
    assert list(cwd.iterdir()) == []
    assert not (REPO / "gx").exists() and not (REPO / "great_expectations").exists()
    assert isinstance(gx_runtime(spark).context, EphemeralDataContext)
    index = html / "index.html"
    assert index.is_file() and SUITE_NAME in index.read_text(encoding="utf-8")
    pages = list((html / "validations").rglob("*.html"))
    assert pages and "no_unclean_election" in pages[0].read_text(encoding="utf-8")


@pytest.mark.parametrize("expectation", sorted(VIOLATIONS))
def test_one_violation_fails_exactly_its_expectation(
        expectation: str, clean_audit: Rows, clean_decisions: Rows, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    inject, schema = VIOLATIONS[expectation]
    audit, decisions = copy.deepcopy(clean_audit), copy.deepcopy(clean_decisions)
    inject(audit, decisions)
    table = write_copy(tmp_path, audit, decisions, schema)

    code, out, lists = run_check(capsys, str(table))

    assert code == 1, out
    assert lists["failed"] == [expectation], out
    assert lists["warnings"] == ["no_unclean_election"]


def _results(report: Any) -> list[tuple[Any, ...]]:
    """What a report says of each expectation; examples in a full order (the engines rank ties either way)."""
    return [(r.name, r.severity, r.status, r.unexpected, r.description,
             sorted(r.examples, key=lambda e: json.dumps(e, sort_keys=True))) for r in report.results]


def _no_decisions(audit: Rows, decisions: Rows) -> None:
    decisions.clear()  # written as no decisions.jsonl: the audit-only variant


def _no_decisions_lowered_epoch(audit: Rows, decisions: Rows) -> None:
    decisions.clear()
    find(audit, 10, "orders", 0)["partition_epoch_after"] = 0


def _batches_with_a_violation_in_batch_0(audit: Rows, decisions: Rows) -> None:
    for row in audit:
        row["batch_id"] = row["source_offset"] // 10
    find(audit, 5, "orders", 0)["leader_after"] = 9


# Beside every violation: the clean audit, the audit-only variant, and a window of batches (since_batch).
ENGINE_CASES: dict[str, tuple[Callable[[Rows, Rows], None], TableSchema, int | None]] = {
    "clean": (lambda audit, decisions: None, AUDIT, None),
    "no decisions": (_no_decisions, AUDIT, None),
    "no decisions, epoch lowered": (_no_decisions_lowered_epoch, AUDIT, None),
    "since batch 2": (_batches_with_a_violation_in_batch_0, AUDIT, 2),
    "since batch 0": (_batches_with_a_violation_in_batch_0, AUDIT, 0),
    **{name: (inject, schema, None) for name, (inject, schema) in VIOLATIONS.items()},
}


@pytest.mark.parametrize("case", list(ENGINE_CASES))
def test_both_engines_give_the_same_results(case: str, clean_audit: Rows, clean_decisions: Rows, tmp_path: Path,
                                            spark: Any) -> None:
    from streaming.quality.runner import local_report, spark_report

    inject, schema, since_batch = ENGINE_CASES[case]
    audit, decisions = copy.deepcopy(clean_audit), copy.deepcopy(clean_decisions)
    inject(audit, decisions)
    table = write_copy(tmp_path, audit, decisions or None, schema)

    local, local_decisions = local_report(table, since_batch)
    on_spark, spark_decisions = spark_report(table, since_batch)

    assert local_decisions == spark_decisions
    assert (local.audit_rows, local.capabilities, local.skipped) == (
        on_spark.audit_rows, on_spark.capabilities, on_spark.skipped)
    assert _results(local) == _results(on_spark)
    assert local.exit_code == on_spark.exit_code == (0 if case in ("clean", "no decisions", "since batch 2") else 1)


def test_check_takes_the_local_engine_for_a_small_table_and_spark_on_request(
        clean_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import streaming.quality.runner as runner

    engines: list[str] = []
    for name in ("local_report", "spark_report"):
        original = getattr(runner, name)
        monkeypatch.setattr(runner, name, lambda *a, _f=original, _n=name, **k: engines.append(_n) or _f(*a, **k))
    outputs = []
    for argv in ([], ["--engine", "spark"], ["--engine", "local"]):
        code, out, lists = run_check(capsys, str(clean_dir / "audit"), *argv)
        assert (code, lists) == (0, {"failed": [], "warnings": ["no_unclean_election"]}), out
        outputs.append(re.sub(r"in \d+\.\ds", "in Ns", out))
    assert engines == ["local_report", "spark_report", "local_report"]
    assert outputs[0] == outputs[1] == outputs[2]  # what the user sees, but the seconds

    monkeypatch.setattr(runner, "LOCAL_MAX_ROWS", 10)  # the clean audit has 103 rows
    run_check(capsys, str(clean_dir / "audit"))
    assert engines[-1] == "spark_report"
    assert main(["check", str(clean_dir / "audit"), "--engine", "local", "--html", str(clean_dir / "html")]) == 2
    assert "--engine spark" in capsys.readouterr().err


def test_unclean_election_is_only_a_warning(clean_audit: Rows, clean_decisions: Rows, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    audit = copy.deepcopy(clean_audit)
    find(audit, 22, "payments", 0)["election"] = "OFFLINE"  # as if the election had been clean
    code, out, lists = run_check(capsys, str(write_copy(tmp_path, audit, clean_decisions)))
    assert (code, lists) == (0, {"failed": [], "warnings": []}), out


def test_without_decisions_the_audit_only_variant_runs(clean_audit: Rows, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from streaming.quality.rules import REPLICAS, rule_names

    code, out, lists = run_check(capsys, str(write_copy(tmp_path / "clean", clean_audit, None)))
    assert (code, lists) == (0, {"failed": [], "warnings": ["no_unclean_election"]}), out
    assert "decisions: none found" in out
    for name in set(rule_names()) - set(rule_names(frozenset({REPLICAS}))):  # the audit has replicas_after
        assert re.search(rf"SKIPPED.*{name}", out), name

    audit = copy.deepcopy(clean_audit)
    find(audit, 10, "orders", 0)["partition_epoch_after"] = 0  # 1 -> 0: lowered, and the next row starts at 2
    code, out, lists = run_check(capsys, str(write_copy(tmp_path / "bad", audit, None)))
    assert (code, lists["failed"]) == (1, ["partition_epoch_one_per_write"]), out


def test_since_batch_checks_later_batches_only(clean_audit: Rows, clean_decisions: Rows, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    audit = copy.deepcopy(clean_audit)
    for row in audit:
        row["batch_id"] = row["source_offset"] // 10
    find(audit, 5, "orders", 0)["leader_after"] = 9  # a violation in batch 0
    table = write_copy(tmp_path, audit, clean_decisions)

    code, out, lists = run_check(capsys, str(table), "--since-batch", "2")
    # Partitions enter the window mid-history: their first rows have no previous row to chain to.
    assert (code, lists["failed"]) == (0, []), out
    assert f"{sum(1 for r in audit if r['batch_id'] >= 2)} audit rows" in out

    code, out, lists = run_check(capsys, str(table), "--since-batch", "0")
    assert (code, lists["failed"]) == (1, ["leader_in_isr"]), out

    code, out, _ = run_check(capsys, str(table), "--since-batch", "99")
    assert code == 0 and "0 audit rows" in out


def test_missing_table_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(tmp_path / "nope")]) == 2
    assert "no Delta table" in capsys.readouterr().err


def test_quality_on_batch_appends_one_row_per_expectation_idempotently(
        spark: Any, clean_dir: Path, clean_audit: Rows, tmp_path: Path) -> None:
    from streaming.quality.rules import REPLICAS, rule_names
    from streaming.quality.runner import quality_on_batch

    results = tmp_path / "quality"
    summaries: list[tuple[int, dict[str, int]]] = []

    def each_batch(batch: Any, batch_id: int) -> None:  # as the streaming query calls it: the batch's own session
        summaries.append((batch_id, quality_on_batch(spark, batch, batch_id, results)))

    query = (spark.readStream.format("delta").load(str(clean_dir / "audit")).writeStream.foreachBatch(each_batch)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None
    assert summaries == [(0, {"failed": 0, "warnings": 1})]

    batch = spark.read.format("delta").load(str(clean_dir / "audit"))
    assert quality_on_batch(spark, batch, 0, results) == {"failed": 0, "warnings": 1}  # a re-run of batch 0

    audit = copy.deepcopy(clean_audit)
    _leader_outside_isr(audit, [])
    write_delta(tmp_path / "bad", audit, AUDIT)
    bad = spark.read.format("delta").load(str(tmp_path / "bad"))
    assert quality_on_batch(spark, bad, 1, results) == {"failed": 1, "warnings": 1}

    rows = read_delta(results)
    names = rule_names(frozenset({REPLICAS}))  # no decisions in a micro-batch's audit rows
    assert sorted((r["batch_id"], r["expectation"]) for r in rows) == sorted(
        [(0, n) for n in names] + [(1, n) for n in names])
    by_key = {(r["batch_id"], r["expectation"]): r for r in rows}
    failed = by_key[(1, "leader_in_isr")]
    assert (failed["status"], failed["success"], failed["unexpected_rows"]) == ("failed", False, 1)
    assert json.loads(failed["examples"])[0]["event_id"] == "ev-000010"
    assert by_key[(0, "no_unclean_election")]["status"] == "warning"
    assert all(r["audit_rows"] == len(clean_audit) for r in rows)
