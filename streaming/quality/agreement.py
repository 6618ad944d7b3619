"""`isrflow check`'s rule for a replay of a KRaft metadata log: every decision the real controller wrote must be
reproduced (agreement.jsonl beside the audit table, written by `replay kraft:PATH`)."""

from __future__ import annotations

import json
from pathlib import Path

from streaming.quality.results import RuleResult

RULE = "isrflow_agrees_with_the_controller"


def agreement_result(audit_table: Path) -> RuleResult | None:
    """The rule's result, or None when the audit table did not come from a KRaft replay."""
    path = Path(audit_table).parent / "agreement.jsonl"
    if not path.exists():
        return None
    with path.open() as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    bad = [r for r in rows if not r["match"]]
    examples = [{"event_id": r["cause_event_id"], "topic": r["topic"], "partition": r["partition"],
                 "source_offset": r["source_offset"], "detail": "differs: " + ", ".join(r["differing"])}
                for r in bad[:20]]
    return RuleResult(RULE, "critical", "failed" if bad else "passed", len(bad), examples,
                      "every observed controller decision has an equal isrflow decision",
                      f"{len(rows) - len(bad)}/{len(rows)} observed decisions agree")
