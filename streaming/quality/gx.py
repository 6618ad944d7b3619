"""The Great Expectations adapter: the rules as the GX 1.x `ExpectationSuite` `isrflow_audit_v1`, validated in an
ephemeral GX context over a Spark DataFrame, and GX's results read back as `RuleResult`s.

- `build_suite` makes one `ExpectNoIsrflowViolations` (an `UnexpectedRowsExpectation`) per rule, all sharing one
  query so that GX computes it once (see `rule_expectation_class`).
- GX runs in an ephemeral (in-memory) context: nothing is written unless HTML results are asked for, and then
  only into that folder. GX is imported on first use (it imports slowly), so importing this module is cheap.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streaming.quality.results import RuleResult, status_of
from streaming.quality.rules import (
    ALL_CAPABILITIES,
    MAX_EXAMPLES,
    SUITE_NAME,
    SUITE_VERSION,
    Rule,
    sql_string,
    suite_rules,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def combined_query(rules: Sequence[Rule]) -> str:
    """All the rules' queries as one (pure): each offending row tagged with its rule, the number of offending rows
    per rule (`q_unexpected`), and at most MAX_EXAMPLES rows per rule (so GX's 200-row cap never drops a rule)."""
    branches = " UNION ALL ".join(f"SELECT {sql_string(r.name)} AS rule, v.* FROM ({r.query}) v" for r in rules)
    return ("SELECT * FROM (SELECT u.*, COUNT(*) OVER (PARTITION BY rule) AS q_unexpected,"
            " ROW_NUMBER() OVER (PARTITION BY rule ORDER BY source_offset, event_id) AS q_rank"
            f" FROM ({branches}) u) WHERE q_rank <= {MAX_EXAMPLES}")


_RULE_EXPECTATION_CLASS: Any = None


def rule_expectation_class() -> Any:
    """`ExpectNoIsrflowViolations`: an UnexpectedRowsExpectation for one rule of the suite (field `rule`).

    Every expectation of a suite carries the same query, `combined_query` of the suite's rules, so GX computes
    that metric once per validation (one Spark job instead of two per rule: the difference between ~1 s and
    ~3 s per micro-batch) and each expectation reads its own rule's rows from it; success is no row. The rule's
    own SQL is in the expectation's notes. Defined on first use (GX imports slowly)."""
    global _RULE_EXPECTATION_CLASS
    if _RULE_EXPECTATION_CLASS is None:
        from great_expectations.expectations import UnexpectedRowsExpectation

        class ExpectNoIsrflowViolations(UnexpectedRowsExpectation):
            rule: str
            metric_dependencies = ("unexpected_rows_query.table",)
            success_keys = ("unexpected_rows_query", "rule")

            def _validate(self, metrics: dict, runtime_configuration: dict | None = None,
                          execution_engine: Any = None) -> dict:
                rows = [r for r in metrics["unexpected_rows_query.table"] or [] if r["rule"] == self.rule]
                count = int(rows[0]["q_unexpected"]) if rows else 0
                examples = [{k: v for k, v in r.items() if k not in ("rule", "q_unexpected", "q_rank")}
                            for r in sorted(rows, key=lambda r: r["q_rank"])]
                return {"success": count == 0,
                        "result": {"observed_value": count, "details": {"unexpected_rows": examples}}}

        _RULE_EXPECTATION_CLASS = ExpectNoIsrflowViolations
    return _RULE_EXPECTATION_CLASS


def build_suite(capabilities: frozenset[str] = ALL_CAPABILITIES) -> Any:
    """The GX ExpectationSuite `isrflow_audit_v1`, in the variant the inputs allow (see `Rule.applies`)."""
    import great_expectations as gx

    rules = suite_rules(capabilities)
    query = combined_query(rules)
    suite = gx.ExpectationSuite(
        name=SUITE_NAME,
        meta={"isrflow_suite_version": SUITE_VERSION, "capabilities": sorted(capabilities),
              "over": "the prepared audit (streaming.quality.prepare)"},
    )
    cls = rule_expectation_class()
    for rule in rules:
        suite.add_expectation(cls(
            unexpected_rows_query=query, rule=rule.name, severity=rule.severity,
            description=f"{rule.name}: {rule.description}" + (" (warning only)" if rule.severity == "warning" else ""),
            notes=f"Offending rows: {rule.query}",
            meta={"name": rule.name, "isrflow_suite_version": SUITE_VERSION},
        ))
    return suite


RESULT_FORMAT = "COMPLETE"  # ExpectNoIsrflowViolations returns its examples whatever the format


class _Gx:
    """One ephemeral GX context per Spark application: a Spark datasource with one DataFrame asset, and the
    suite in the variant last asked for. Reused across calls (a streaming query validates every micro-batch)."""

    def __init__(self, spark: SparkSession) -> None:
        os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        self.app_id = spark.sparkContext.applicationId
        self.context = gx.get_context(mode="ephemeral")
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
        for site in list(self.context.get_site_names()):  # the ephemeral default site: not wanted
            self.context.delete_data_docs_site(site)
        self.datasource = self.context.data_sources.add_spark("isrflow")
        asset = self.datasource.add_dataframe_asset("audit")
        self.batch_definition = asset.add_batch_definition_whole_dataframe("prepared_audit")
        self._variant: frozenset[str] | None = None
        self._suite: Any = None

    def suite(self, capabilities: frozenset[str]) -> Any:
        """The stored suite, switched to the variant asked for (the variants share the suite's name)."""
        if self._variant != capabilities:
            self._suite = self.context.suites.add_or_update(build_suite(capabilities))
            self._variant = capabilities
        return self._suite

    def validate(self, prepared: DataFrame, capabilities: frozenset[str],
                 html_dir: Path | None) -> tuple[Any, Path | None]:
        import great_expectations as gx

        # GX runs the SQL rules with `execution_engine.spark.sql`, over a temp view it registers through the
        # DataFrame: both must be one session (a foreachBatch DataFrame belongs to the query's own session).
        self.datasource.get_execution_engine().spark = prepared.sparkSession
        suite = self.suite(capabilities)
        if html_dir is None:
            batch = self.batch_definition.get_batch(batch_parameters={"dataframe": prepared})
            return batch.validate(suite, result_format=RESULT_FORMAT), None

        # Data Docs: a site in `html_dir` for this run only, fed by a checkpoint (the ephemeral context keeps
        # its stores in memory; the site is the only thing written).
        site = f"isrflow_{time.time_ns()}"
        html_dir.mkdir(parents=True, exist_ok=True)
        self.context.add_data_docs_site(site_name=site, site_config={
            "class_name": "SiteBuilder",
            "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(html_dir)},
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        })
        definition_name, checkpoint_name = f"isrflow_audit_{site}", f"isrflow_check_{site}"
        try:
            definition = self.context.validation_definitions.add(
                gx.ValidationDefinition(name=definition_name, data=self.batch_definition, suite=suite))
            checkpoint = self.context.checkpoints.add(gx.Checkpoint(
                name=checkpoint_name, validation_definitions=[definition], result_format=RESULT_FORMAT,
                actions=[gx.checkpoint.UpdateDataDocsAction(name="html", site_names=[site])]))
            result = checkpoint.run(batch_parameters={"dataframe": prepared})
        finally:
            self.context.delete_data_docs_site(site)
            for store, name in ((self.context.checkpoints, checkpoint_name),
                                (self.context.validation_definitions, definition_name)):
                with contextlib.suppress(Exception):  # not added (the run failed before): nothing to clean
                    store.delete(name=name)
        index = html_dir / "index.html"
        return next(iter(result.run_results.values())), index if index.exists() else None


_GX_RUNTIME: _Gx | None = None


def gx_runtime(spark: SparkSession) -> _Gx:
    global _GX_RUNTIME
    if _GX_RUNTIME is None or _GX_RUNTIME.app_id != spark.sparkContext.applicationId:
        _GX_RUNTIME = _Gx(spark)
    return _GX_RUNTIME



def rule_result(rule: Rule, gx_result: Any) -> RuleResult:
    result = dict(gx_result.result or {})
    info = gx_result.exception_info or {}
    raised = bool(info.get("raised_exception"))
    examples = list((result.get("details") or {}).get("unexpected_rows") or [])
    return RuleResult(
        name=rule.name, severity=rule.severity, status=status_of(bool(gx_result.success), rule.severity, raised),
        unexpected=int(result.get("observed_value") or 0), examples=[_plain(e) for e in examples[:MAX_EXAMPLES]],
        description=rule.description, message=str(info.get("exception_message") or "") if raised else "",
    )



def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)

