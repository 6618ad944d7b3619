"""`isrflow check`'s rules for a replay of a real controller's history: every decision the controller wrote must
be reproduced (agreement.jsonl beside the audit table, written by `replay kraft:PATH`, and the agreement Delta
table beside it, written by `isrflow run` behind `isrflow bridge`), and every partition must go through the
same states (histories.jsonl)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from streaming.history.agreement import from_table_rows
from streaming.io.layout import Lake
from streaming.quality.results import RuleResult

RULE = "isrflow_agrees_with_the_controller"
HISTORY_RULE = "isrflow_reproduces_every_partition_history"


def _rows(path: Path) -> list[dict[str, Any]] | None:
    if not path.exists():
        return None
    with path.open() as fh:
        return [json.loads(line) for line in fh if line.strip()]


def agreement_results(audit_table: Path) -> list[RuleResult]:
    """Both rules' results; none when the audit table did not come from a replay of a controller's history."""
    return [r for r in (agreement_result(audit_table), histories_result(audit_table)) if r is not None]


def _agreement_rows(audit_table: Path) -> list[dict[str, Any]] | None:
    """agreement.jsonl's rows and the agreement table's beside the audit table (None when neither exists)."""
    replayed = _rows(Path(audit_table).parent / "agreement.jsonl")
    table = Lake.beside(Path(audit_table)).agreement
    if not (table / "_delta_log").is_dir():
        return replayed
    from streaming.io.delta import read_delta

    return [*(replayed or []), *from_table_rows(read_delta(table))]


def agreement_result(audit_table: Path) -> RuleResult | None:
    """The per-decision rule's result, or None when the audit table did not come from a KRaft replay or a run
    behind `isrflow bridge`."""
    rows = _agreement_rows(audit_table)
    if rows is None:
        return None
    bad = [r for r in rows if not r["match"]]
    examples = [{"event_id": r["cause_event_id"], "topic": r["topic"], "partition": r["partition"],
                 "source_offset": r["source_offset"], "detail": "differs: " + ", ".join(r["differing"])}
                for r in bad[:20]]
    return RuleResult(RULE, "critical", "failed" if bad else "passed", len(bad), examples,
                      "every observed controller decision has an equal isrflow decision",
                      f"{len(rows) - len(bad)}/{len(rows)} observed decisions agree")


def histories_result(audit_table: Path) -> RuleResult | None:
    """The per-partition-history rule's result, or None without histories.jsonl."""
    rows = _rows(Path(audit_table).parent / "histories.jsonl")
    if rows is None:
        return None
    bad = [r for r in rows if not r["match"]]
    examples = [{"topic": r["topic"], "partition": r["partition"],
                 "source_offset": r["first_difference"]["source_offset"],
                 "detail": f"state {r['first_difference']['state'] + 1} differs: "
                           + ", ".join(r["first_difference"]["differing"])} for r in bad[:20]]
    return RuleResult(HISTORY_RULE, "critical", "failed" if bad else "passed", len(bad), examples,
                      "every partition goes through the controller's sequence of states",
                      f"{len(rows) - len(bad)}/{len(rows)} partition histories equal")
