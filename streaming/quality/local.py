"""The suite without Spark, for small audits (`isrflow check`'s local engine): the same rules as `rules.RULES`,
each rule's offending rows computed in Python over the audit's rows, read with delta-rs. A check then costs
seconds instead of a JVM, a Spark session and a first Delta read.

One function per rule name, each the SQL of the rule in `rules.py` read row by row, with SQL's nulls: a
comparison with a null is unknown and selects nothing, `concat` with a null is null. The prepared audit's
`q_*` columns are computed as `prepare.prepare` computes them. The results are the Spark engine's, rule by rule:
status, number of offending rows and examples (tests/integration/test_quality.py runs both on every injected
violation and compares them)."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from statemachine.errors import Error, Outcome
from statemachine.record import NO_LEADER
from streaming.io.delta import read_decisions_jsonl, read_delta
from streaming.io.storage import Location
from streaming.quality.prepare import DECISION_COLUMNS, NON_EXISTENT
from streaming.quality.results import QualityReport, RuleResult, status_of
from streaming.quality.rules import (
    LEADER_STATES,
    MAX_EXAMPLES,
    REQUIRED_COLUMNS,
    RULES,
    SUITE_NAME,
    capabilities_of,
    reachable_transitions,
    suite_rules,
)

Row = dict[str, Any]
# A rule's offending rows: (the prepared audit, the decisions of the audited offsets or None) -> examples.
RowRule = Callable[[list[Row], list[Row] | None], Iterable[Row]]

STALE = Error.STALE_CONTROLLER_EPOCH.value
OUTCOMES = frozenset(o.value for o in Outcome)
ERRORS = frozenset(e.value for e in Error)
ALLOWED = reachable_transitions()


def text(value: Any) -> str | None:
    """A value as Spark casts it to a string (arrays as `[1, 2]`, null as null)."""
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return "[" + ", ".join("null" if v is None else str(v) for v in value) + "]"
    return str(value)


def concat(*parts: Any) -> str | None:
    """Spark's `concat`: null when any part is null."""
    texts = [text(p) for p in parts]
    return None if any(t is None for t in texts) else "".join(texts)  # type: ignore[arg-type]


def coalesce(value: Any, default: str) -> str:
    return default if value is None else str(text(value))


def example(row: Row, detail: str | None) -> Row:
    return {"event_id": row["event_id"], "topic": row["topic"], "partition": row["partition"],
            "source_offset": row["source_offset"], "detail": detail}


def nulls_first(value: Any) -> tuple[bool, Any]:
    """A sort key that puts null first, as Spark's ascending order does."""
    return (value is not None, value if value is not None else 0)


def _ordered(rows: Iterable[Row]) -> dict[tuple[Any, ...], list[Row]]:
    """Rows grouped by (topic, partition), each group in log order (source_offset, then position)."""
    groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for row in rows:
        groups[(row["topic"], row["partition"])].append(row)
    for group in groups.values():
        group.sort(key=lambda r: (nulls_first(r["source_offset"]), r["q_seq"]))
    return groups


def _had_leader(row: Row) -> bool:
    return (row["leader_after"] is not None and row["leader_after"] != NO_LEADER) or bool(row["isr_before"])


def _chain(group: list[Row]) -> None:
    """q_incarnation, q_initialised and the previous live row's epochs, over one partition's rows in log order."""
    incarnation = 0
    previous: dict[int, Row] = {}
    initialised: dict[int, bool] = {}
    for row in group:
        incarnation += row["from_state"] == NON_EXISTENT and row["to_state"] != NON_EXISTENT
        row["q_incarnation"] = incarnation
        if not row["q_live"]:
            continue
        before = previous.get(incarnation)
        row["q_prev_leader_epoch_after"] = None if before is None else before["leader_epoch_after"]
        row["q_prev_partition_epoch_after"] = None if before is None else before["partition_epoch_after"]
        initialised[incarnation] = initialised.get(incarnation, False) or _had_leader(row)
        row["q_initialised"] = initialised[incarnation]
        previous[incarnation] = row


def _controller_epochs(rows: list[Row]) -> None:
    """q_prev_max_controller_epoch: the highest controller epoch at earlier offsets (stale rejections aside)."""
    per_offset: dict[int, int | None] = {}
    for row in rows:
        if row["error"] != STALE:
            epochs = [e for e in (per_offset.get(row["source_offset"]), row["controller_epoch"]) if e is not None]
            per_offset[row["source_offset"]] = max(epochs, default=None)
    earlier: dict[int, int | None] = {}
    highest: int | None = None
    for offset in sorted(per_offset, key=nulls_first):
        earlier[offset] = highest
        if per_offset[offset] is not None:
            highest = per_offset[offset] if highest is None else max(highest, per_offset[offset])  # type: ignore
    for row in rows:
        row["q_prev_max_controller_epoch"] = None if row["error"] == STALE else earlier.get(row["source_offset"])


def _with_decisions(rows: list[Row], decisions: list[Row]) -> None:
    """q_writes, q_group_epoch_delta, q_group_last, and q_replicas from the latest decision when the row has none."""
    writes: dict[tuple[Any, ...], int] = defaultdict(int)
    for d in decisions:
        if d["election"] != "INITIAL":
            writes[(d["source_offset"], d["topic"], d["partition"])] += 1
    groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for row in rows:
        if row["partition"] is not None:
            groups[(row["source_offset"], row["topic"], row["partition"])].append(row)
    for key, group in groups.items():
        deltas = [r["partition_epoch_after"] - r["partition_epoch_before"] for r in group
                  if r["partition_epoch_after"] is not None and r["partition_epoch_before"] is not None]
        last = max(r["q_seq"] for r in group)
        for row in group:
            row["q_writes"] = writes.get(key, 0)
            row["q_group_epoch_delta"] = sum(deltas) if deltas else None
            row["q_group_last"] = row["q_seq"] == last
    known: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for d in decisions:
        if d["replicas"] is not None and d["source_offset"] is not None:
            known[(d["topic"], d["partition"])].append(d)
    for key, group in _ordered(r for r in rows if r["partition"] is not None).items():
        latest = sorted(known.get(key, []), key=lambda d: (d["source_offset"], nulls_first(d["partition_epoch"])))
        i, replicas = 0, None
        for row in group:
            while i < len(latest) and latest[i]["source_offset"] <= row["source_offset"]:
                replicas, i = latest[i]["replicas"], i + 1
            if row["q_replicas"] is None:
                row["q_replicas"] = replicas


def prepare_rows(audit: list[Row], decisions: list[Row] | None, columns: Iterable[str]) -> list[Row]:
    """The prepared audit (`prepare.prepare`'s columns) as new rows, in the audit's own order."""
    own_replicas = "replicas_after" in set(columns)
    rows = []
    for seq, row in enumerate(audit):
        part = row["partition"] is not None
        live = part and not (row["from_state"] == NON_EXISTENT and row["to_state"] == NON_EXISTENT)
        rows.append({**row, "q_seq": seq, "q_live": live, "q_incarnation": None, "q_initialised": False,
                     "q_prev_leader_epoch_after": None, "q_prev_partition_epoch_after": None,
                     "q_replicas": row.get("replicas_after") if own_replicas else None,
                     "q_writes": None, "q_group_epoch_delta": None, "q_group_last": False})
    for group in _ordered(r for r in rows if r["partition"] is not None).values():
        _chain(group)
    _controller_epochs(rows)
    if decisions is not None:
        _with_decisions(rows, decisions)
    return rows


# -- the rules, by name (rules.py holds each one's SQL, description and severity) --------------------------------

def _part(rows: list[Row]) -> Iterator[Row]:
    return (r for r in rows if r["partition"] is not None)


def _required_columns_not_null(rows: list[Row], _: list[Row] | None) -> Iterator[Row]:
    for r in rows:
        nulls = [c for c in REQUIRED_COLUMNS if r[c] is None]
        if nulls:
            yield example(r, "null: " + ", ".join(nulls))


def _outcome_is_known(rows: list[Row], _: list[Row] | None) -> Iterator[Row]:
    return (example(r, f"outcome {r['outcome']}") for r in rows
            if r["outcome"] is not None and r["outcome"] not in OUTCOMES)


def _error_is_contract_name(rows: list[Row], _: list[Row] | None) -> Iterator[Row]:
    return (example(r, f"error {r['error']}") for r in rows if r["error"] is not None and r["error"] not in ERRORS)


def _error_set_iff_rejected(rows: list[Row], _: list[Row] | None) -> Iterator[Row]:
    return (example(r, concat("outcome ", r["outcome"], ", error ", coalesce(r["error"], "null"))) for r in rows
            if r["outcome"] is not None and (r["outcome"] == "REJECTED") != (r["error"] is not None))


def _accepted_transitions_valid(rows: list[Row], _: list[Row] | None) -> Iterator[Row]:
    return (example(r, f"{coalesce(r['from_state'], 'null')} -> {coalesce(r['to_state'], 'null')}")
            for r in _part(rows) if r["outcome"] == "ACCEPTED" and (r["from_state"], r["to_state"]) not in ALLOWED)


def _unchanged(r: Row) -> bool:
    return (r["from_state"] == r["to_state"] and r["leader_before"] == r["leader_after"]
            and r["leader_epoch_before"] == r["leader_epoch_after"] and text(r["isr_before"]) == text(r["isr_after"])
            and r["partition_epoch_before"] == r["partition_epoch_after"] and r["election"] is None)


def _unchanged_unless_accepted(rows: list[Row], _: list[Row] | None) -> Iterator[Row]:
    for r in _part(rows):
        if r["outcome"] in ("REJECTED", "NO_OP") and not _unchanged(r):
            yield example(r, concat(
                r["outcome"], ": ", r["from_state"], " -> ", r["to_state"], ", leader ", r["leader_before"], " -> ",
                r["leader_after"], ", isr ", r["isr_before"], " -> ", r["isr_after"], ", leader_epoch ",
                r["leader_epoch_before"], " -> ", r["leader_epoch_after"], ", partition_epoch ",
                r["partition_epoch_before"], " -> ", r["partition_epoch_after"], ", election ",
                coalesce(r["election"], "null")))


def _leader_in_isr(rows: list[Row], _: list[Row] | None) -> Iterator[Row]:
    for r in _part(rows):
        leader, isr = r["leader_after"], r["isr_after"]
        if not (leader == NO_LEADER or (leader is not None and isr is not None and leader in isr)):
            yield example(r, f"leader {coalesce(leader, 'null')} not in isr {coalesce(isr, 'null')}")


def _isr_not_empty_once_initialised(rows: list[Row], _: list[Row] | None) -> Iterator[Row]:
    return (example(r, concat(r["to_state"], " with isr ", coalesce(r["isr_after"], "null"))) for r in rows
            if r["q_initialised"] and r["to_state"] in LEADER_STATES and not r["isr_after"])


def _isr_subset_of_replicas(rows: list[Row], _: list[Row] | None) -> Iterator[Row]:
    return (example(r, concat("isr ", r["isr_after"], " not within replicas ", r["q_replicas"])) for r in _part(rows)
            if r["to_state"] in LEADER_STATES and r["q_replicas"] is not None and r["isr_after"] is not None
            and set(r["isr_after"]) - set(r["q_replicas"]))


def _below(a: Any, b: Any) -> bool:
    return a is not None and b is not None and a < b


def _leader_epoch_never_decreases(rows: list[Row], _: list[Row] | None) -> Iterator[Row]:
    for r in rows:
        if r["q_live"] and (_below(r["leader_epoch_after"], r["leader_epoch_before"])
                            or _below(r["leader_epoch_before"], r["q_prev_leader_epoch_after"])):
            yield example(r, concat("leader_epoch ", r["leader_epoch_before"], " -> ", r["leader_epoch_after"],
                                    ", previous row ended at ", coalesce(r["q_prev_leader_epoch_after"], "-")))


def _differs(a: Any, b: Any) -> bool:
    return a is not None and b is not None and a != b


def _partition_epoch_one_per_write(rows: list[Row], decisions: list[Row] | None) -> Iterator[Row]:
    for r in _part(rows):
        chain = (r["partition_epoch_before"], " -> ", r["partition_epoch_after"], ", previous row ended at ",
                 coalesce(r["q_prev_partition_epoch_after"], "-"))
        broken = r["q_live"] and _differs(r["partition_epoch_before"], r["q_prev_partition_epoch_after"])
        if decisions is None:
            if broken or (r["q_live"] and _below(r["partition_epoch_after"], r["partition_epoch_before"])):
                yield example(r, concat("partition_epoch ", *chain))
        elif broken or (r["q_group_last"] and _differs(r["q_group_epoch_delta"], r["q_writes"])):
            yield example(r, concat("partition_epoch ", *chain, ", event raised it by ", r["q_group_epoch_delta"],
                                    " with ", r["q_writes"], " decision(s)"))


def _decision_epoch_unique_per_incarnation(_: list[Row], decisions: list[Row] | None) -> Iterator[Row]:
    groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for d in decisions or []:
        groups[(d["topic"], d["partition"])].append(d)
    for group in groups.values():
        group.sort(key=lambda d: (nulls_first(d["source_offset"]), d["election"] != "INITIAL",
                                  nulls_first(d["partition_epoch"])))
        incarnation, counted = 0, []
        for d in group:
            incarnation += d["election"] == "INITIAL" or (bool(d["is_new"]) and d["partition_epoch"] == 0)
            counted.append((incarnation, d))
        times: dict[tuple[int, Any], int] = defaultdict(int)
        for incarnation, d in counted:
            times[(incarnation, d["partition_epoch"])] += 1
        for incarnation, d in counted:
            n = times[(incarnation, d["partition_epoch"])]
            if n > 1:
                yield {**example({**d, "event_id": d["cause_event_id"]}, None),
                       "detail": concat("partition_epoch ", d["partition_epoch"], " decided ", n, " times")}


def _decisions_have_accepted_audit_row(rows: list[Row], decisions: list[Row] | None) -> Iterator[Row]:
    accepted = {(r["source_offset"], r["topic"], r["partition"]) for r in _part(rows) if r["outcome"] == "ACCEPTED"}
    for d in decisions or []:
        if (d["source_offset"], d["topic"], d["partition"]) not in accepted:
            yield example({**d, "event_id": d["cause_event_id"]}, concat(
                "decision at partition_epoch ", d["partition_epoch"], " without an accepted audit row"))


def _controller_epoch_never_decreases(rows: list[Row], _: list[Row] | None) -> Iterator[Row]:
    return (example(r, f"controller_epoch {r['controller_epoch']} after {r['q_prev_max_controller_epoch']} earlier "
                       "in the log") for r in rows if _below(r["controller_epoch"], r["q_prev_max_controller_epoch"]))


def _no_unclean_election(rows: list[Row], _: list[Row] | None) -> Iterator[Row]:
    return (example(r, concat("unclean election: leader ", r["leader_before"], " -> ", r["leader_after"], ", isr ",
                              r["isr_before"], " -> ", r["isr_after"])) for r in rows
            if r["election"] == "OFFLINE_UNCLEAN")


ROW_RULES: dict[str, RowRule] = {
    "required_columns_not_null": _required_columns_not_null,
    "outcome_is_known": _outcome_is_known,
    "error_is_contract_name": _error_is_contract_name,
    "error_set_iff_rejected": _error_set_iff_rejected,
    "accepted_transitions_valid": _accepted_transitions_valid,
    "unchanged_unless_accepted": _unchanged_unless_accepted,
    "leader_in_isr": _leader_in_isr,
    "isr_not_empty_once_initialised": _isr_not_empty_once_initialised,
    "isr_subset_of_replicas": _isr_subset_of_replicas,
    "leader_epoch_never_decreases": _leader_epoch_never_decreases,
    "partition_epoch_one_per_write": _partition_epoch_one_per_write,
    "decision_epoch_unique_per_incarnation": _decision_epoch_unique_per_incarnation,
    "decisions_have_accepted_audit_row": _decisions_have_accepted_audit_row,
    "controller_epoch_never_decreases": _controller_epoch_never_decreases,
    "no_unclean_election": _no_unclean_election,
}


def _examples(offending: list[Row]) -> list[Row]:
    """The first MAX_EXAMPLES in log order (source_offset, then event_id, nulls first), as the Spark query ranks
    them."""
    return sorted(offending, key=lambda r: (nulls_first(r["source_offset"]), nulls_first(r["event_id"])))[
        :MAX_EXAMPLES]


def run_suite_local(audit: list[Row], columns: Iterable[str], decisions: list[Row] | None = None) -> QualityReport:
    """`runner.run_suite` on rows: the audit's (in the table's order; `columns`, the table's columns) and the
    decisions beside it (None: the audit-only variant)."""
    started = time.perf_counter()
    columns = list(columns)
    capabilities = capabilities_of(columns, decisions is not None)
    rules = suite_rules(capabilities)
    view = None
    if decisions is not None and audit:
        offsets = [r["source_offset"] for r in audit if r["source_offset"] is not None]
        low, high = min(offsets, default=None), max(offsets, default=None)
        view = [d for d in decisions if low is not None and high is not None
                and d["source_offset"] is not None and low <= d["source_offset"] <= high]
    prepared = prepare_rows(audit, decisions, columns) if audit else []
    results = []
    for rule in rules:
        offending = list(ROW_RULES[rule.name](prepared, view)) if audit else []
        results.append(RuleResult(rule.name, rule.severity, status_of(not offending, rule.severity), len(offending),
                                  _examples(offending), rule.description))
    applied = {r.name for r in rules}
    skipped = list(dict.fromkeys(r.name for r in RULES if r.name not in applied))
    return QualityReport(SUITE_NAME, capabilities, len(audit), results, time.perf_counter() - started, skipped)


# -- reading the tables without Spark -----------------------------------------------------------------------------

def table_rows(table: Path) -> int | None:
    """The rows of a local Delta table from its log's file statistics (None when a file has none)."""
    import pyarrow as pa
    from deltalake import DeltaTable

    counts = pa.record_batch(DeltaTable(str(table)).get_add_actions(flatten=True)).column("num_records").to_pylist()
    return None if any(c is None for c in counts) else sum(counts)


def read_audit(table: Path, since_batch: int | None = None) -> tuple[list[Row], list[str]]:
    """The audit table's rows in the table's order (those of micro-batches >= since_batch), and its columns."""
    from deltalake import DeltaTable

    columns = [f.name for f in DeltaTable(str(table)).schema().fields]
    rows = read_delta(table)
    if since_batch is not None:
        rows = [r for r in rows if r["batch_id"] is not None and r["batch_id"] >= since_batch]
    return rows, columns


def read_decision_rows(source: Location) -> list[Row]:
    """The decisions' DECISION_COLUMNS from a `decisions.jsonl` file or a `decisions` Delta table."""
    rows = read_decisions_jsonl(source) if source.name.endswith(".jsonl") else read_delta(source)  # type: ignore
    return [{c: r.get(c) for c in DECISION_COLUMNS} for r in rows]
