"""`replay --engine local`: the whole event log through the core in-process, no Spark.

Small logs replay in seconds, and this engine is the oracle the Spark pipeline must match: it runs the
same `Controller.handle` and `apply_command`, and writes the same tables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemas.events import Malformed, ObservedDecision, parse_record
from schemas.records import to_row
from schemas.tables import AUDIT, QUARANTINE, REQUESTS
from statemachine.controller import Controller, ControllerConfig
from statemachine.errors import Outcome
from statemachine.requests import request_rows
from streaming.engine.collector import young_collection_only
from streaming.io.delta import now_utc, write_decisions_jsonl, write_delta
from streaming.io.jsonl import write_jsonl


@dataclass
class ReplayResult:
    events: int = 0
    quarantined: int = 0
    decisions: list[dict[str, Any]] = field(default_factory=list)
    audit: list[dict[str, Any]] = field(default_factory=list)
    quarantine: list[dict[str, Any]] = field(default_factory=list)
    # The ZK controller's requests (statemachine.requests), one row per request.
    requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rejected(self) -> int:
        return sum(1 for a in self.audit if a["outcome"] == Outcome.REJECTED)


def run_local(records: Iterable[tuple[int, bytes]], config: ControllerConfig | None = None,
              source: str = "file", progress: Callable[[int], None] | None = None) -> ReplayResult:
    """Apply every record in log order; malformed ones are quarantined and change nothing."""
    controller = Controller(config)
    result = ReplayResult()
    with young_collection_only():
        _replay(controller, result, records, source, progress)
    return result


def _replay(controller: Controller, result: ReplayResult, records: Iterable[tuple[int, bytes]], source: str,
            progress: Callable[[int], None] | None) -> None:
    for offset, raw in records:
        result.events += 1
        event = parse_record(raw)
        if isinstance(event, ObservedDecision):  # the controller's own decision (a bridged topic): no event
            pass
        elif isinstance(event, Malformed):
            result.quarantined += 1
            result.quarantine.append({"source": source, "source_offset": offset, "raw": raw,
                                      "error": event.reason, "batch_id": 0})
        else:
            handled_event = controller.handle_event(event, offset)
            for handled in handled_event.handled:
                result.decisions.extend(to_row(d) for d in handled.applied.decisions)
                result.audit.append({**to_row(handled.applied.audit), "batch_id": 0})
            result.requests.extend(to_row(r) for r in request_rows(
                handled_event.requests, event.event_id, event.type, offset, controller.cluster.controller_epoch))
        if progress is not None:
            progress(offset)


def write_outputs(result: ReplayResult, out_dir: Path) -> None:
    """DIR/decisions.jsonl, DIR/audit and DIR/quarantine (Delta), as docs/contract.md lists; the ZK controller's
    requests as DIR/requests.jsonl and DIR/requests (Delta)."""
    stamp = now_utc()
    out_dir.mkdir(parents=True, exist_ok=True)
    # The JSON text of the stamp, once: the encoder would write the datetime as this on every line.
    decided_at = stamp.isoformat()
    write_decisions_jsonl(out_dir / "decisions.jsonl", ({**d, "decided_at": decided_at} for d in result.decisions))
    write_delta(out_dir / "audit", [{**a, "processed_at": stamp} for a in result.audit], AUDIT)
    write_delta(out_dir / "quarantine", [{**q, "quarantined_at": stamp} for q in result.quarantine], QUARANTINE)
    write_jsonl(out_dir / "requests.jsonl", result.requests)
    write_delta(out_dir / "requests", [{**r, "processed_at": stamp} for r in result.requests], REQUESTS)
