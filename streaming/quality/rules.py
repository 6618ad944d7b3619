"""The suite's rules, pure: each expectation's name, description, severity and Spark SQL over the prepared audit
(`streaming.quality.prepare`), and the suite variants the inputs allow. No Spark, no Great Expectations: the
rules are data, tested without either.

- `RULES` lists the expectations as Spark SQL over `{batch}` (the prepared audit) returning the offending rows.
  Rules that need the decisions read the temporary view `isrflow_decisions`.
- Severity: the unclean-election rule has GX severity `warning` (data-loss risk: reported, never fails a check);
  every other rule is `critical`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from statemachine.errors import Error, Outcome
from statemachine.states import VALID_PREVIOUS_PARTITION_STATES, PartitionState

SUITE_NAME = "isrflow_audit_v1"
SUITE_VERSION = 1
DECISIONS_VIEW = "isrflow_decisions"
EXAMPLE_COLUMNS = ("event_id", "topic", "partition", "source_offset")
REQUIRED_COLUMNS = ("event_id", "event_type", "source_offset", "outcome")
MAX_EXAMPLES = 5

Severity = Literal["critical", "warning"]
# What a suite variant can rely on: the decisions beside the audit, the partitions' replicas (the audit's
# replicas_after column, or the decisions' replicas).
DECISIONS = "decisions"
REPLICAS = "replicas"
ALL_CAPABILITIES = frozenset({DECISIONS, REPLICAS})

P = PartitionState
LEADER_STATES = (P.ONLINE.value, P.OFFLINE.value)  # the states of a partition that has been elected (or deleted)


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




def sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _values_table(pairs: Iterable[tuple[str, str]], alias: str, columns: tuple[str, str]) -> str:
    rows = ", ".join(f"({sql_string(a)}, {sql_string(b)})" for a, b in sorted(pairs))
    return f"(SELECT * FROM VALUES {rows} AS {alias}({columns[0]}, {columns[1]}))"


def _examples_select(detail_sql: str, prefix: str = "") -> str:
    """The projection every SQL rule returns: the row's identity and a short description of the violation."""
    cols = ", ".join(f"{prefix}{c}" for c in EXAMPLE_COLUMNS)
    return f"SELECT {cols}, {detail_sql} AS detail"


def _in_list(values: Iterable[str]) -> str:
    return "(" + ", ".join(sql_string(v) for v in values) + ")"


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
