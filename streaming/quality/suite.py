"""Data quality of the audit table: a versioned Great Expectations suite, run through Spark.

`isrflow check AUDIT_TABLE` (`check_command`) validates a whole audit table (and the decisions beside it, when
there are any); `quality_on_batch` validates one micro-batch's audit rows inside the streaming query and appends
one result row per expectation to a Delta table.

How it is put together:
- `prepare` turns the audit rows into the *prepared audit*: the audit columns plus `q_*` context columns that
  several rules need (physical row order, a partition's incarnation, the previous row's epochs, the highest
  controller epoch earlier in the log, the decisions each row produced, the partition's replicas). Its windows
  and joins run once, into a local checkpoint.
- `RULES` lists the expectations as Spark SQL over `{batch}` (the prepared audit) returning the offending rows
  (pure data, testable without Spark or GX). Rules that need the decisions read the temporary view
  `isrflow_decisions`. `build_suite` turns them into the GX 1.x `ExpectationSuite` `isrflow_audit_v1`: one
  `ExpectNoIsrflowViolations` (an `UnexpectedRowsExpectation`) per rule, all sharing one query so that GX
  computes it once (see `rule_expectation_class`).
- Severity: the unclean-election rule has GX severity `warning` (data-loss risk: reported, never fails a check);
  every other rule is `critical`.
- GX runs in an ephemeral (in-memory) context: nothing is written unless HTML results are asked for, and then
  only into that folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from schemas.tables import QUALITY_RESULT
from statemachine.errors import Error, Outcome
from statemachine.states import VALID_PREVIOUS_PARTITION_STATES, PartitionState
from streaming.errors import UsageError
from streaming.io.delta import now_utc

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SUITE_NAME = "isrflow_audit_v1"
SUITE_VERSION = 1
DECISIONS_VIEW = "isrflow_decisions"
RESULTS_APP_ID = "isrflow-quality"
EXAMPLE_COLUMNS = ("event_id", "topic", "partition", "source_offset")
REQUIRED_COLUMNS = ("event_id", "event_type", "source_offset", "outcome")
MAX_EXAMPLES = 5
SINGLE_PARTITION_MAX_ROWS = 2_000_000  # larger audits are prepared and validated in Spark's own partitioning

Severity = Literal["critical", "warning"]
# What a suite variant can rely on: the decisions beside the audit, the partitions' replicas (the audit's
# replicas_after column, or the decisions' replicas).
DECISIONS = "decisions"
REPLICAS = "replicas"
ALL_CAPABILITIES = frozenset({DECISIONS, REPLICAS})

P = PartitionState
NON_EXISTENT = P.NON_EXISTENT.value
LEADER_STATES = (P.ONLINE.value, P.OFFLINE.value)  # the states of a partition that has been elected (or deleted)
NO_LEADER = -1


# -- the rules (pure) -------------------------------------------------------------------------------------------

def reachable_transitions(
    valid_previous: Mapping[PartitionState, Iterable[PartitionState]] = VALID_PREVIOUS_PARTITION_STATES,
    terminal: PartitionState | None = P.NON_EXISTENT,
) -> frozenset[tuple[str, str]]:
    """Every (from_state, to_state) an accepted audit row may show: staying put, or any chain of valid
    transitions, since one event may pass a partition through intermediate states (Online -> Offline -> Online
    on a broker failure, New -> Online on creation, Online -> Offline -> NonExistent on a deletion).

    `terminal` ends a chain: a partition's incarnation ends at NonExistentPartition, and one event never deletes
    and re-creates a partition, so a chain does not continue through it (else every state would reach every
    other one, NewPartition included, through NonExistentPartition)."""
    step: dict[str, set[str]] = {}
    for target, previous in valid_previous.items():
        for source in previous:
            step.setdefault(str(source), set()).add(str(target))
    states = {str(s) for s in valid_previous} | set(step)
    end = None if terminal is None else str(terminal)
    pairs: set[tuple[str, str]] = set()
    for start in states:
        pairs.add((start, start))
        frontier, seen = [start], set()
        while frontier:
            node = frontier.pop()
            if node == end and node != start:
                continue
            for nxt in step.get(node, ()):
                if nxt not in seen:
                    seen.add(nxt)
                    frontier.append(nxt)
        pairs.update((start, s) for s in seen)
    return frozenset(pairs)


def _sql_str(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _values_table(pairs: Iterable[tuple[str, str]], alias: str, columns: tuple[str, str]) -> str:
    rows = ", ".join(f"({_sql_str(a)}, {_sql_str(b)})" for a, b in sorted(pairs))
    return f"(SELECT * FROM VALUES {rows} AS {alias}({columns[0]}, {columns[1]}))"


def _examples_select(detail_sql: str, prefix: str = "") -> str:
    """The projection every SQL rule returns: the row's identity and a short description of the violation."""
    cols = ", ".join(f"{prefix}{c}" for c in EXAMPLE_COLUMNS)
    return f"SELECT {cols}, {detail_sql} AS detail"


def _in_list(values: Iterable[str]) -> str:
    return "(" + ", ".join(_sql_str(v) for v in values) + ")"


@dataclass(frozen=True)
class Rule:
    """One expectation of the suite: a Spark SQL query over `{batch}` (the prepared audit) returning the
    offending rows as EXAMPLE_COLUMNS + `detail`. A suite variant holds the rule when it has every capability
    in `requires` and none in `unless`."""

    name: str
    description: str
    query: str
    severity: Severity = "critical"
    requires: frozenset[str] = frozenset()
    unless: frozenset[str] = frozenset()

    def applies(self, capabilities: frozenset[str]) -> bool:
        return self.requires <= capabilities and not self.unless & capabilities


def _rules() -> tuple[Rule, ...]:
    allowed = _values_table(reachable_transitions(), "allowed", ("from_state", "to_state"))
    part = "partition IS NOT NULL"
    leader_states = _in_list(LEADER_STATES)
    null_columns = "concat_ws(', ', " + ", ".join(
        f"CASE WHEN {c} IS NULL THEN '{c}' END" for c in REQUIRED_COLUMNS) + ")"
    epoch_detail = ("concat('partition_epoch ', partition_epoch_before, ' -> ', partition_epoch_after, "
                    "', previous row ended at ', coalesce(cast(q_prev_partition_epoch_after AS string), '-')")
    return (
        Rule("required_columns_not_null", "event_id, event_type, source_offset and outcome are never null",
             _examples_select(f"concat('null: ', {null_columns})")
             + " FROM {batch} WHERE " + " OR ".join(f"{c} IS NULL" for c in REQUIRED_COLUMNS)),
        Rule("outcome_is_known", "outcome is one of ACCEPTED, REJECTED, NO_OP",
             _examples_select("concat('outcome ', outcome)")
             + f" FROM {{batch}} WHERE outcome NOT IN {_in_list(o.value for o in Outcome)}"),
        Rule("error_is_contract_name", "error, when set, is one of the contract's error names",
             _examples_select("concat('error ', error)")
             + f" FROM {{batch}} WHERE error NOT IN {_in_list(e.value for e in Error)}"),
        Rule("error_set_iff_rejected", "error is set exactly when outcome is REJECTED",
             _examples_select("concat('outcome ', outcome, ', error ', coalesce(error, 'null'))")
             + " FROM {batch} WHERE (outcome = 'REJECTED') <> (error IS NOT NULL)"),
        Rule("accepted_transitions_valid",
             "an accepted row leaves its partition in from_state or moves it to a state reachable from from_state "
             "through valid transitions (validPreviousStates; one event may pass through intermediate states)",
             _examples_select("concat(coalesce(b.from_state, 'null'), ' -> ', coalesce(b.to_state, 'null'))", "b.")
             + f" FROM {{batch}} b LEFT ANTI JOIN {allowed} a"
             " ON b.from_state = a.from_state AND b.to_state = a.to_state"
             f" WHERE b.{part} AND b.outcome = 'ACCEPTED'"),
        Rule("unchanged_unless_accepted",
             "a REJECTED or NO_OP row leaves its partition as it was: state, leader, ISR and epochs; no election",
             _examples_select("concat(outcome, ': ', from_state, ' -> ', to_state, ', leader ', leader_before, "
                              "' -> ', leader_after, ', isr ', cast(isr_before AS string), ' -> ', "
                              "cast(isr_after AS string), ', leader_epoch ', leader_epoch_before, ' -> ', "
                              "leader_epoch_after, ', partition_epoch ', partition_epoch_before, ' -> ', "
                              "partition_epoch_after, ', election ', coalesce(election, 'null'))")
             + f" FROM {{batch}} WHERE {part} AND outcome IN ('REJECTED', 'NO_OP') AND NOT ("
             "from_state <=> to_state AND leader_before <=> leader_after"
             " AND leader_epoch_before <=> leader_epoch_after AND isr_before <=> isr_after"
             " AND partition_epoch_before <=> partition_epoch_after AND election IS NULL)"),
        Rule("leader_in_isr", "leader_after is -1 (no leader) or a member of isr_after",
             _examples_select("concat('leader ', coalesce(cast(leader_after AS string), 'null'), ' not in isr ', "
                              "coalesce(cast(isr_after AS string), 'null'))")
             + f" FROM {{batch}} WHERE {part}"
             " AND NOT coalesce(leader_after = -1 OR array_contains(isr_after, leader_after), false)"),
        Rule("isr_not_empty_once_initialised",
             "isr_after is not empty once the partition has had a leader (in OnlinePartition or OfflinePartition; "
             "a NewPartition deleted before any election goes Offline with an empty ISR)",
             _examples_select("concat(to_state, ' with isr ', coalesce(cast(isr_after AS string), 'null'))")
             + f" FROM {{batch}} WHERE q_initialised AND to_state IN {leader_states}"
             " AND (isr_after IS NULL OR size(isr_after) = 0)"),
        Rule("isr_subset_of_replicas",
             "isr_after is a subset of the partition's replicas (the row's replicas_after, else those of the "
             "partition's latest decision at or before the row)",
             _examples_select("concat('isr ', cast(isr_after AS string), ' not within replicas ', "
                              "cast(q_replicas AS string))")
             + f" FROM {{batch}} WHERE {part} AND to_state IN {leader_states}"
             " AND q_replicas IS NOT NULL AND size(array_except(isr_after, q_replicas)) > 0",
             requires=frozenset({REPLICAS})),
        Rule("leader_epoch_never_decreases",
             "per partition incarnation, in log order, leader_epoch never decreases: within a row, nor from the "
             "previous row's leader_epoch_after",
             _examples_select("concat('leader_epoch ', leader_epoch_before, ' -> ', leader_epoch_after, "
                              "', previous row ended at ', coalesce(cast(q_prev_leader_epoch_after AS string), '-'))")
             + " FROM {batch} WHERE q_live AND (leader_epoch_after < leader_epoch_before"
             " OR leader_epoch_before < q_prev_leader_epoch_after)"),
        Rule("partition_epoch_one_per_write",
             "per partition incarnation, in log order, partition_epoch_before is the previous row's "
             "partition_epoch_after, and an event raises a partition's partition_epoch by exactly the number of "
             "decisions it produced for it (the INITIAL one starts at 0)",
             _examples_select(epoch_detail + ", ', event raised it by ', q_group_epoch_delta, ' with ', q_writes, "
                              "' decision(s)')")
             + f" FROM {{batch}} WHERE {part} AND ((q_live AND partition_epoch_before <> q_prev_partition_epoch_after)"
             " OR (q_group_last AND q_group_epoch_delta <> q_writes))",
             requires=frozenset({DECISIONS})),
        Rule("partition_epoch_one_per_write",
             "per partition incarnation, in log order, partition_epoch_before is the previous row's "
             "partition_epoch_after and no row lowers partition_epoch (without decisions, writes are not counted)",
             _examples_select(epoch_detail + ")")
             + " FROM {batch} WHERE q_live AND (partition_epoch_after < partition_epoch_before"
             " OR partition_epoch_before <> q_prev_partition_epoch_after)",
             unless=frozenset({DECISIONS})),
        Rule("decision_epoch_unique_per_incarnation",
             "no two decisions share (topic, partition, partition_epoch) within a partition's incarnation (an "
             "INITIAL election, or is_new at partition_epoch 0, starts one)",
             "WITH d AS (SELECT *, SUM(CASE WHEN election <=> 'INITIAL' OR (is_new AND partition_epoch = 0)"
             " THEN 1 ELSE 0 END) OVER (PARTITION BY topic, partition ORDER BY source_offset,"
             " CASE WHEN election <=> 'INITIAL' THEN 0 ELSE 1 END, partition_epoch"
             " ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS incarnation"
             f" FROM {DECISIONS_VIEW}),"
             " c AS (SELECT *, COUNT(*) OVER (PARTITION BY topic, partition, incarnation, partition_epoch) AS n"
             " FROM d) SELECT cause_event_id AS event_id, topic, partition, source_offset,"
             " concat('partition_epoch ', partition_epoch, ' decided ', n, ' times') AS detail FROM c WHERE n > 1",
             requires=frozenset({DECISIONS})),
        Rule("decisions_have_accepted_audit_row",
             "every decision belongs to an ACCEPTED audit row of its partition and event",
             "SELECT d.cause_event_id AS event_id, d.topic, d.partition, d.source_offset,"
             " concat('decision at partition_epoch ', d.partition_epoch, ' without an accepted audit row') AS detail"
             f" FROM {DECISIONS_VIEW} d"
             " LEFT ANTI JOIN (SELECT DISTINCT source_offset, topic, partition FROM {batch}"
             f" WHERE outcome = 'ACCEPTED' AND {part}) a"
             " ON d.source_offset = a.source_offset AND d.topic = a.topic AND d.partition = a.partition",
             requires=frozenset({DECISIONS})),
        Rule("controller_epoch_never_decreases",
             "in log order, controller_epoch never falls below one seen at an earlier offset (rows rejected as "
             "STALE_CONTROLLER_EPOCH aside)",
             _examples_select("concat('controller_epoch ', controller_epoch, ' after ', "
                              "q_prev_max_controller_epoch, ' earlier in the log')")
             + " FROM {batch} WHERE controller_epoch < q_prev_max_controller_epoch"),
        Rule("no_unclean_election",
             "no unclean leader election (OFFLINE_UNCLEAN): data-loss risk, so a warning, never a failure",
             _examples_select("concat('unclean election: leader ', leader_before, ' -> ', leader_after, ', isr ', "
                              "cast(isr_before AS string), ' -> ', cast(isr_after AS string))")
             + " FROM {batch} WHERE election = 'OFFLINE_UNCLEAN'",
             severity="warning"),
    )


RULES: tuple[Rule, ...] = _rules()


def suite_rules(capabilities: frozenset[str] = ALL_CAPABILITIES) -> list[Rule]:
    """The rules of a suite variant (by default the full suite: decisions and replicas known)."""
    return [r for r in RULES if r.applies(capabilities)]


def rule_names(capabilities: frozenset[str] = ALL_CAPABILITIES) -> list[str]:
    return [r.name for r in suite_rules(capabilities)]


def capabilities_of(audit_columns: Iterable[str], with_decisions: bool) -> frozenset[str]:
    caps = {DECISIONS, REPLICAS} if with_decisions else set()
    if "replicas_after" in set(audit_columns):
        caps.add(REPLICAS)
    return frozenset(caps)


# -- results (pure) ---------------------------------------------------------------------------------------------

Status = Literal["passed", "failed", "warning", "error"]


@dataclass
class RuleResult:
    name: str
    severity: Severity
    status: Status
    unexpected: int
    examples: list[dict[str, Any]] = field(default_factory=list)
    description: str = ""
    message: str = ""

    @property
    def fails_check(self) -> bool:
        return self.status in ("failed", "error")


@dataclass
class QualityReport:
    suite: str
    capabilities: frozenset[str]
    audit_rows: int
    results: list[RuleResult]
    seconds: float = 0.0
    skipped: list[str] = field(default_factory=list)
    html_index: Path | None = None

    @property
    def failed(self) -> list[str]:
        return [r.name for r in self.results if r.fails_check]

    @property
    def warnings(self) -> list[str]:
        return [r.name for r in self.results if r.status == "warning"]

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    def summary(self) -> dict[str, int]:
        return {"failed": len(self.failed), "warnings": len(self.warnings)}


def status_of(success: bool, severity: Severity, raised: bool = False) -> Status:
    if raised:
        return "error"
    if success:
        return "passed"
    return "warning" if severity == "warning" else "failed"


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def example_label(row: Mapping[str, Any]) -> str:
    where = f"{row.get('topic')}-{row.get('partition')}" if row.get("partition") is not None else "cluster"
    text = f"{row.get('event_id')} {where} @{row.get('source_offset')}"
    detail = row.get("detail")
    return f"{text} ({detail})" if detail else text


# -- preparing the audit (Spark) --------------------------------------------------------------------------------

_DECISION_COLUMNS = ("topic", "partition", "source_offset", "partition_epoch", "leader", "leader_epoch", "isr",
                     "replicas", "election", "is_new", "cause_event_id")


def prepare(audit: DataFrame, decisions: DataFrame | None = None, single_partition: bool = True) -> DataFrame:
    """The prepared audit: audit columns plus the rules' context columns. Not cached.

    With `single_partition` (the default, for the audits of one check or one micro-batch) the inputs are first
    coalesced to one partition: the windows and joins then need no shuffle, and the validation's many small
    queries run one task each.

    q_initialised: the incarnation has had a leader (a leader_after, or a non-empty isr_before) by this row;
    q_seq: the row's physical position (the audit has no step column; rows of one partition and event are
    written in order by one task, so their position orders them); q_incarnation: per partition, the number of
    incarnation starts (from NonExistentPartition to another state) up to the row; q_live: a partition row
    inside an incarnation; q_prev_*: the previous q_live row's epochs in the same incarnation;
    q_prev_max_controller_epoch: the highest controller epoch at earlier offsets (stale rejections aside);
    q_replicas: the row's replicas_after when the audit has that column, else (with decisions) the replicas of
    the partition's latest decision at or before the row; with decisions, q_writes (non-initial decisions of the
    row's partition and event), q_group_epoch_delta and q_group_last (the partition_epoch rise over the event's
    rows of the partition, and its last row)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if single_partition:
        audit = audit.coalesce(1)
        decisions = None if decisions is None else decisions.coalesce(1)
    base = audit.withColumn("q_seq", F.monotonically_increasing_id())
    is_part = F.col("partition").isNotNull()
    from_ne = F.col("from_state").eqNullSafe(NON_EXISTENT)
    to_ne = F.col("to_state").eqNullSafe(NON_EXISTENT)
    so_far = (Window.unboundedPreceding, Window.currentRow)
    by_partition = Window.partitionBy("topic", "partition").orderBy("source_offset", "q_seq").rowsBetween(*so_far)
    df = base.withColumns({
        "q_incarnation": F.when(is_part, F.sum(F.when(from_ne & ~to_ne, 1).otherwise(0)).over(by_partition)),
        "q_live": is_part & ~(from_ne & to_ne),
    })
    chain = Window.partitionBy("topic", "partition", "q_incarnation", "q_live").orderBy("source_offset", "q_seq")
    had_leader = (F.col("leader_after") != NO_LEADER) | (F.size("isr_before") > 0)
    own_replicas = "replicas_after" in audit.columns
    df = df.withColumns({
        "q_initialised": F.col("q_live") & (F.max(F.when(had_leader, 1).otherwise(0)).over(
            chain.rowsBetween(*so_far)) == 1),
        "q_prev_leader_epoch_after": F.when(F.col("q_live"), F.lag("leader_epoch_after").over(chain)),
        "q_prev_partition_epoch_after": F.when(F.col("q_live"), F.lag("partition_epoch_after").over(chain)),
        "q_replicas": F.col("replicas_after") if own_replicas else F.lit(None).cast("array<int>"),
    })

    # The highest controller epoch of the earlier offsets: a window over the whole log (one partition anyway).
    stale = F.col("error").eqNullSafe(Error.STALE_CONTROLLER_EPOCH.value)
    per_offset = (base.where(~stale).groupBy("source_offset").agg(F.max("controller_epoch").alias("q_offset_max"))
                  .select("source_offset", F.max("q_offset_max").over(Window.orderBy("source_offset").rowsBetween(
                      Window.unboundedPreceding, -1)).alias("q_earlier_max")))
    df = (df.join(per_offset, "source_offset", "left")
          .withColumn("q_prev_max_controller_epoch", F.when(~stale, F.col("q_earlier_max"))).drop("q_earlier_max"))

    if decisions is not None:
        d = decisions.select(*_DECISION_COLUMNS)
        writes = (d.where(~F.col("election").eqNullSafe("INITIAL"))
                  .groupBy("source_offset", "topic", "partition").agg(F.count(F.lit(1)).alias("q_decisions")))
        group = Window.partitionBy("source_offset", "topic", "partition")
        df = df.join(writes, ["source_offset", "topic", "partition"], "left").withColumns({
            "q_writes": F.when(is_part, F.coalesce(F.col("q_decisions"), F.lit(0))),
            "q_group_epoch_delta": F.when(is_part, F.sum(
                F.col("partition_epoch_after") - F.col("partition_epoch_before")).over(group)),
            "q_group_last": is_part & (F.col("q_seq") == F.max("q_seq").over(group)),
        }).drop("q_decisions")
        # Replicas of the latest decision at or before each row: rows and decisions in one per-partition order.
        array = "array<int>"
        rows = base.where(is_part).select("topic", "partition", "source_offset", F.lit(1).alias("k"),
                                          F.col("q_seq").alias("o"), F.lit(None).cast(array).alias("r"))
        decided = d.select("topic", "partition", "source_offset", F.lit(0).alias("k"),
                           F.col("partition_epoch").cast("long").alias("o"), F.col("replicas").cast(array).alias("r"))
        latest = Window.partitionBy("topic", "partition").orderBy("source_offset", "k", "o").rowsBetween(*so_far)
        known = (rows.unionByName(decided).withColumn("q_decided", F.last("r", ignorenulls=True).over(latest))
                 .where(F.col("k") == 1).select(F.col("o").alias("q_seq"), "q_decided"))
        df = (df.join(known, "q_seq", "left").withColumn("q_replicas", F.coalesce("q_replicas", "q_decided"))
              .drop("q_decided"))
    return df.coalesce(1) if single_partition else df


def read_decisions(spark: SparkSession, source: Path) -> DataFrame:
    """Decisions from a `decisions.jsonl` file or a `decisions` Delta table."""
    from schemas.tables import DECISION

    if source.is_file():
        schema = DECISION.without(*(c for c in DECISION.names if c not in _DECISION_COLUMNS)).to_spark()
        return spark.read.schema(schema).json(str(source))
    return spark.read.format("delta").load(str(source)).select(*_DECISION_COLUMNS)


def find_decisions(audit_table: Path) -> Path | None:
    """The decisions beside an audit table: `decisions.jsonl` (replay) or a `decisions` Delta table (run)."""
    jsonl = audit_table.parent / "decisions.jsonl"
    if jsonl.is_file():
        return jsonl
    table = audit_table.parent / "decisions"
    if is_delta_table(table):
        return table
    return None


def is_delta_table(path: Path) -> bool:
    return (path / "_delta_log").is_dir()


# -- Great Expectations ------------------------------------------------------------------------------------------

def combined_query(rules: Sequence[Rule]) -> str:
    """All the rules' queries as one (pure): each offending row tagged with its rule, the number of offending rows
    per rule (`q_unexpected`), and at most MAX_EXAMPLES rows per rule (so GX's 200-row cap never drops a rule)."""
    branches = " UNION ALL ".join(f"SELECT {_sql_str(r.name)} AS rule, v.* FROM ({r.query}) v" for r in rules)
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


def _gx(spark: SparkSession) -> _Gx:
    global _GX_RUNTIME
    if _GX_RUNTIME is None or _GX_RUNTIME.app_id != spark.sparkContext.applicationId:
        _GX_RUNTIME = _Gx(spark)
    return _GX_RUNTIME


def _rule_result(rule: Rule, gx_result: Any) -> RuleResult:
    result = dict(gx_result.result or {})
    info = gx_result.exception_info or {}
    raised = bool(info.get("raised_exception"))
    examples = list((result.get("details") or {}).get("unexpected_rows") or [])
    return RuleResult(
        name=rule.name, severity=rule.severity, status=status_of(bool(gx_result.success), rule.severity, raised),
        unexpected=int(result.get("observed_value") or 0), examples=[_plain(e) for e in examples[:MAX_EXAMPLES]],
        description=rule.description, message=str(info.get("exception_message") or "") if raised else "",
    )


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
                decisions = decisions.select(*_DECISION_COLUMNS)
                decisions = (decisions.coalesce(1) if small else decisions).localCheckpoint(eager=True)
                # The view the rules read: the decisions of the audited offsets (all of them, or --since-batch's).
                decisions.where(F.col("source_offset").between(stats["lo"], stats["hi"])).createOrReplaceTempView(
                    DECISIONS_VIEW)
            prepared = prepare(audit, decisions, single_partition=bool(small)).localCheckpoint(eager=True)
            rows = prepared.count() if rows is None else rows
        if rows:
            validation, html_index = _gx(spark).validate(prepared, capabilities, html_dir)
            by_name = {r.expectation_config.meta["name"]: r for r in validation.results}
            results = [_rule_result(rule, by_name[rule.name]) for rule in rules]
    applied = {r.name for r in rules}
    skipped = list(dict.fromkeys(r.name for r in RULES if r.name not in applied))
    return QualityReport(SUITE_NAME, capabilities, rows or 0, results, time.perf_counter() - started, skipped,
                         html_index)


# -- `isrflow check` ---------------------------------------------------------------------------------------------

_STYLE = {"passed": "green", "failed": "bold red", "warning": "yellow", "error": "bold red"}


def print_report(report: QualityReport, source: str, decisions: Path | None) -> None:
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


def check(table: Path, since_batch: int | None = None, html: Path | None = None, master: str = "local[2]",
          spark_conf: dict[str, str] | None = None) -> int:
    """`isrflow check AUDIT_TABLE [--since-batch N] [--html DIR]`: 0 when every critical expectation holds,
    1 when one fails. A missing table is a UsageError."""
    if not is_delta_table(table):
        raise UsageError(f"no Delta table at {table} (no _delta_log folder)")
    from pyspark.sql import functions as F

    from streaming.engine.session import build_spark

    spark = build_spark(master=master, conf=spark_conf)
    audit = spark.read.format("delta").load(str(table))
    if since_batch is not None:
        audit = audit.where(F.col("batch_id") >= since_batch)
    decisions_path = find_decisions(table)
    decisions = read_decisions(spark, decisions_path) if decisions_path is not None else None
    report = run_suite(spark, audit, decisions, html)
    from streaming.quality.agreement import agreement_result  # a KRaft replay's extra rule

    kraft = agreement_result(table)
    if kraft is not None:
        report.results.append(kraft)
    source = str(table) + (f" (batches >= {since_batch})" if since_batch is not None else "")
    print_report(report, source, decisions_path)
    return report.exit_code


# -- per micro-batch ---------------------------------------------------------------------------------------------

def result_rows(report: QualityReport, batch_id: int, validated_at: Any) -> list[tuple[Any, ...]]:
    return [(batch_id, report.suite, SUITE_VERSION, r.name, r.severity, r.status, r.status == "passed",
             r.unexpected, json.dumps(r.examples) if r.examples else None, report.audit_rows, validated_at)
            for r in report.results]


def quality_on_batch(spark: SparkSession, audit_df: DataFrame, batch_id: int, results_path: Path) -> dict[str, int]:
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


def batch_check(results_path: Path) -> Callable[[SparkSession, DataFrame, int], str]:
    """The partition query's per-batch hook for `run --quality`: results to `results_path`, a summary back."""

    def check(spark: SparkSession, audit_df: DataFrame, batch_id: int) -> str:
        summary = quality_on_batch(spark, audit_df, batch_id, results_path)
        return f"{summary['failed']} failed, {summary['warnings']} warnings"

    return check
