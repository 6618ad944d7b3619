"""Running the suite: `run_suite` validates audit rows (and their decisions) through the GX adapter;
`isrflow check AUDIT_TABLE` (`check`) validates a whole audit table (and the decisions beside it, when there are
any) and prints the verdict; `quality_on_batch` validates one micro-batch's audit rows inside the streaming query
and appends one result row per expectation to a Delta table (`batch_check` is the query's hook for it)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schemas.tables import QUALITY_RESULT
from streaming.errors import UsageError
from streaming.io.delta import now_utc
from streaming.io.storage import Location, Storage, location
from streaming.quality.gx import gx_runtime, rule_result
from streaming.quality.prepare import DECISION_COLUMNS, find_decisions, is_delta_table, prepare, read_decisions
from streaming.quality.results import QualityReport, RuleResult, example_label
from streaming.quality.rules import DECISIONS_VIEW, RULES, SUITE_NAME, SUITE_VERSION, capabilities_of, suite_rules

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

RESULTS_APP_ID = "isrflow-quality"
SINGLE_PARTITION_MAX_ROWS = 2_000_000  # larger audits are prepared and validated in Spark's own partitioning


class _QuietWindowWarning:
    """Mutes Spark's "No Partition Defined for Window operation" warning while the suite runs: the prepared
    audit is one partition on purpose, and GX's own index lookups trigger it too. Restores the level after."""

    LOGGER = "org.apache.spark.sql.execution.window.WindowExec"

    def __init__(self, spark: SparkSession) -> None:
        self.jvm = getattr(spark, "_jvm", None)
        self.previous: Any = None

    def __enter__(self) -> None:
        try:
            log4j = self.jvm.org.apache.logging.log4j
            self.previous = log4j.LogManager.getLogger(self.LOGGER).getLevel()
            log4j.core.config.Configurator.setLevel(self.LOGGER, log4j.Level.ERROR)
        except Exception:  # no JVM (Spark Connect) or another logging backend: keep the warning
            self.jvm = None

    def __exit__(self, *exc: object) -> None:
        if self.jvm is not None:
            self.jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(self.LOGGER, self.previous)


def run_suite(spark: SparkSession, audit: DataFrame, decisions: DataFrame | None = None,
              html_dir: Path | None = None, small: bool | None = None) -> QualityReport:
    """Validate audit rows (and their decisions) with the suite; write GX's HTML results into `html_dir`.

    `small`: prepare the audit in one partition (None: decide by its size, which costs a count). The prepared
    audit and the decisions are local checkpoints: computed once, and the validation's query plans against
    them instead of re-analysing the windows and joins."""
    from pyspark.sql import functions as F

    started = time.perf_counter()
    capabilities = capabilities_of(audit.columns, decisions is not None)
    rules = suite_rules(capabilities)
    html_index = None
    rows: int | None = None
    results = [RuleResult(r.name, r.severity, "passed", 0, description=r.description) for r in rules]
    with _QuietWindowWarning(spark):
        if small is None or decisions is not None:
            stats = audit.agg(F.count(F.lit(1)).alias("n"), F.min("source_offset").alias("lo"),
                              F.max("source_offset").alias("hi")).first()
            rows = int(stats["n"])
            small = rows <= SINGLE_PARTITION_MAX_ROWS if small is None else small
        if rows != 0:
            if decisions is not None:
                decisions = decisions.select(*DECISION_COLUMNS)
                decisions = (decisions.coalesce(1) if small else decisions).localCheckpoint(eager=True)
                # The view the rules read: the decisions of the audited offsets (all of them, or --since-batch's).
                decisions.where(F.col("source_offset").between(stats["lo"], stats["hi"])).createOrReplaceTempView(
                    DECISIONS_VIEW)
            prepared = prepare(audit, decisions, single_partition=bool(small)).localCheckpoint(eager=True)
            rows = prepared.count() if rows is None else rows
        if rows:
            validation, html_index = gx_runtime(spark).validate(prepared, capabilities, html_dir)
            by_name = {r.expectation_config.meta["name"]: r for r in validation.results}
            results = [rule_result(rule, by_name[rule.name]) for rule in rules]
    applied = {r.name for r in rules}
    skipped = list(dict.fromkeys(r.name for r in RULES if r.name not in applied))
    return QualityReport(SUITE_NAME, capabilities, rows or 0, results, time.perf_counter() - started, skipped,
                         html_index)


# -- `isrflow check` ---------------------------------------------------------------------------------------------

_STYLE = {"passed": "green", "failed": "bold red", "warning": "yellow", "error": "bold red"}


def print_report(report: QualityReport, source: str, decisions: Location | None) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console() if sys.stdout.isatty() else Console(width=160, no_color=True)
    table = Table(title=f"{report.suite} on {source}", title_justify="left")
    table.add_column("status", no_wrap=True)
    table.add_column("expectation", no_wrap=True)
    table.add_column("rows", justify="right", no_wrap=True)
    table.add_column("examples (event_id topic-partition @source_offset)")
    for r in report.results:
        examples = "\n".join(example_label(e) for e in r.examples[:3]) or r.message
        table.add_row(f"[{_STYLE[r.status]}]{r.status.upper()}[/]", r.name, str(r.unexpected), escape(examples))
    for name in report.skipped:
        rule = next(r for r in RULES if r.name == name)
        table.add_row("[dim]SKIPPED[/]", name, "-", f"needs {', '.join(sorted(rule.requires))} (not available)")
    console.print(table)
    print(f"{report.audit_rows} audit rows; decisions: {decisions if decisions else 'none found'}; "
          f"{len(report.results)} expectations in {report.seconds:.1f}s")
    passed = sum(1 for r in report.results if r.status == "passed")
    print(f"passed: {passed} of {len(report.results)}")
    print(f"warnings: {', '.join(report.warnings) or '-'}")
    print(f"failed: {', '.join(report.failed) or '-'}")
    if report.html_index is not None:
        print(f"HTML results: {report.html_index}")


ENGINES = ("auto", "local", "spark")
# Audits up to this many rows are checked without Spark by `check`'s auto engine (streaming.quality.local).
LOCAL_MAX_ROWS = 100_000


def check(table: str | Location, since_batch: int | None = None, html: Path | None = None,
          master: str | None = None, spark_conf: dict[str, str] | None = None, engine: str = "auto") -> int:
    """`isrflow check AUDIT_TABLE [--since-batch N] [--html DIR] [--engine E]`: 0 when every critical expectation
    holds, 1 when one fails. A missing table is a UsageError. The table may be a URI (reached through Spark).
    `engine`: `local` (no Spark: streaming.quality.local), `spark`, or `auto`: local for a local table of at most
    LOCAL_MAX_ROWS rows without --html (GX's Data Docs come from the Spark engine), else spark."""
    table = location(table, absolute=False)
    if isinstance(table, Path) and not is_delta_table(table):  # before Spark starts
        raise _missing(table)
    if _local_engine(table, html, engine) and isinstance(table, Path):
        report, decisions_path = local_report(table, since_batch)
    else:
        report, decisions_path = spark_report(table, since_batch, html, master, spark_conf)
    from streaming.quality.agreement import agreement_results  # a KRaft replay's extra rules

    if isinstance(table, Path):  # KRaft replays are local folders
        report.results.extend(agreement_results(table))
    source = str(table) + (f" (batches >= {since_batch})" if since_batch is not None else "")
    print_report(report, source, decisions_path)
    return report.exit_code


def _local_engine(table: Location, html: Path | None, engine: str) -> bool:
    if engine not in ENGINES:
        raise UsageError(f"--engine must be one of {', '.join(ENGINES)}, got {engine}")
    if engine == "local" and (html is not None or not isinstance(table, Path)):
        raise UsageError("--engine local checks a local table without --html (GX's Data Docs need --engine spark)")
    if engine != "auto":
        return engine == "local"
    if html is not None or not isinstance(table, Path):
        return False
    from streaming.quality.local import table_rows

    rows = table_rows(table)
    return rows is not None and rows <= LOCAL_MAX_ROWS


def _missing(table: Location) -> UsageError:
    return UsageError(f"no Delta table at {table} (no _delta_log folder)")


def local_report(table: Path, since_batch: int | None = None) -> tuple[QualityReport, Location | None]:
    """The suite on a local audit table and the decisions beside it, without Spark; and where they were."""
    from streaming.quality.local import read_audit, read_decision_rows, run_suite_local

    audit, columns = read_audit(table, since_batch)
    decisions_path = find_decisions(table)
    decisions = read_decision_rows(decisions_path) if decisions_path is not None else None
    return run_suite_local(audit, columns, decisions), decisions_path


def spark_report(table: Location, since_batch: int | None = None, html: Path | None = None, master: str | None = None,
                 spark_conf: dict[str, str] | None = None) -> tuple[QualityReport, Location | None]:
    """The suite on an audit table and the decisions beside it, through Spark and GX; and where they were."""
    from pyspark.sql import functions as F

    from streaming.engine.session import build_spark

    spark = build_spark(master=master, conf=spark_conf)
    storage = Storage(spark)
    if not is_delta_table(table, storage):
        raise _missing(table)
    audit = spark.read.format("delta").load(str(table))
    if since_batch is not None:
        audit = audit.where(F.col("batch_id") >= since_batch)
    decisions_path = find_decisions(table, storage)
    decisions = read_decisions(spark, decisions_path) if decisions_path is not None else None
    return run_suite(spark, audit, decisions, html), decisions_path


# -- per micro-batch ---------------------------------------------------------------------------------------------

def result_rows(report: QualityReport, batch_id: int, validated_at: Any) -> list[tuple[Any, ...]]:
    return [(batch_id, report.suite, SUITE_VERSION, r.name, r.severity, r.status, r.status == "passed",
             r.unexpected, json.dumps(r.examples) if r.examples else None, report.audit_rows, validated_at)
            for r in report.results]


def quality_on_batch(spark: SparkSession, audit_df: DataFrame, batch_id: int,
                     results_path: Location) -> dict[str, int]:
    """Run the suite (audit-only variant) on one micro-batch's audit rows and append one row per expectation
    to the Delta table at `results_path`, idempotently (txnAppId isrflow-quality, txnVersion = batch_id).
    Returns {"failed": n, "warnings": n}. An empty batch writes nothing."""
    report = run_suite(spark, audit_df, small=True)
    if report.audit_rows == 0:
        return {"failed": 0, "warnings": 0}
    frame = spark.createDataFrame(result_rows(report, batch_id, now_utc()), QUALITY_RESULT.to_spark())
    (frame.write.format("delta").mode("append").option("txnAppId", RESULTS_APP_ID)
     .option("txnVersion", batch_id).save(str(results_path)))
    return report.summary()


def batch_check(results_path: Location) -> Callable[[SparkSession, DataFrame, int], str]:
    """The partition query's per-batch hook for `run --quality`: results to `results_path`, a summary back."""

    def check(spark: SparkSession, audit_df: DataFrame, batch_id: int) -> str:
        summary = quality_on_batch(spark, audit_df, batch_id, results_path)
        return f"{summary['failed']} failed, {summary['warnings']} warnings"

    return check
