"""`replay --engine local`: the whole event log through the core in-process, no Spark.

Small logs replay in seconds, and this engine is the oracle the Spark pipeline must match: it runs the
same `Controller.handle` and `apply_command`, and writes the same tables.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from schemas.events import Malformed, ObservedDecision, parse_record
from schemas.records import AuditRow, Decision, RequestRow, row_fields, to_row
from schemas.tables import AUDIT, QUARANTINE, REQUESTS
from statemachine.controller import Controller, ControllerConfig, Handled
from statemachine.errors import Outcome
from statemachine.requests import request_rows
from streaming.engine.collector import release_freed_memory, young_collection_only
from streaming.io.columns import RecordColumns
from streaming.io.delta import (
    DECISION_ORDER,
    decision_line,
    now_utc,
    write_arrow_delta,
    write_decisions_jsonl,
    write_delta,
)
from streaming.io.jsonl import jsonl_line, write_jsonl


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


class Replayed(NamedTuple):
    """What one record of the log did: why it was quarantined (None: it was read), the commands the controller
    handled for it, and the ZK controller's requests."""

    offset: int
    raw: bytes
    malformed: str | None
    handled: list[Handled]
    requests: list[RequestRow]


def replay_records(records: Iterable[tuple[int, bytes]], config: ControllerConfig | None = None,
                   progress: Callable[[int], None] | None = None) -> Iterator[Replayed]:
    """Apply every record in log order, one `Replayed` each; malformed ones change nothing. An ObservedDecision
    (the controller's own decision, on a bridged topic) is no event: it yields nothing."""
    controller = Controller(config)
    with young_collection_only():
        for offset, raw in records:
            event = parse_record(raw)
            if isinstance(event, Malformed):
                yield Replayed(offset, raw, event.reason, [], [])
            elif not isinstance(event, ObservedDecision):
                handled_event = controller.handle_event(event, offset)
                requests = handled_event.requests
                yield Replayed(offset, raw, None, handled_event.handled, request_rows(
                    requests, event.event_id, event.type, offset, controller.cluster.controller_epoch) if requests
                    else [])
            else:
                yield Replayed(offset, raw, None, [], [])
            if progress is not None:
                progress(offset)


def _quarantine_row(r: Replayed, source: str) -> dict[str, Any]:
    return {"source": source, "source_offset": r.offset, "raw": r.raw, "error": r.malformed, "batch_id": 0}


def run_local(records: Iterable[tuple[int, bytes]], config: ControllerConfig | None = None,
              source: str = "file", progress: Callable[[int], None] | None = None) -> ReplayResult:
    """Apply every record in log order; malformed ones are quarantined and change nothing. The outputs as rows."""
    result = ReplayResult()
    for r in replay_records(records, config, progress):
        result.events += 1
        if r.malformed is not None:
            result.quarantined += 1
            result.quarantine.append(_quarantine_row(r, source))
        for handled in r.handled:
            result.decisions.extend(to_row(d) for d in handled.applied.decisions)
            result.audit.append({**to_row(handled.applied.audit), "batch_id": 0})
        result.requests.extend(to_row(row) for row in r.requests)
    return result


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


@dataclass(frozen=True)
class LocalSummary:
    events: int
    quarantined: int
    decisions: int
    audit: int


_DECISION_VALUES = row_fields(Decision).values
_DECISION_ORDER = operator.attrgetter(*DECISION_ORDER)  # write_decisions_jsonl's order, on the records


def replay_local(records: Iterable[tuple[int, bytes]], out_dir: Path, config: ControllerConfig | None = None,
                 source: str = "file", progress: Callable[[int], None] | None = None,
                 audit_batches: Callable[[Any], None] | None = None) -> LocalSummary:
    """`write_outputs(run_local(...))` as the replay goes, the same files and tables: decisions.jsonl line by line
    (the decisions of a record share its offset, so sorting each record's decisions gives the file's order), the
    audit and requests as Arrow batches built from the records, so no output is ever held as row dicts.
    `audit_batches`, when given, is handed each batch of the audit (an Arrow record batch, in the table's order) as
    soon as it is made, the last one before the tables are written."""
    stamp = now_utc()
    decided_at = stamp.isoformat()
    out_dir.mkdir(parents=True, exist_ok=True)
    audit = RecordColumns(AUDIT, AuditRow, {"batch_id": 0, "processed_at": stamp}, audit_batches)
    requests = RecordColumns(REQUESTS, RequestRow, {"processed_at": stamp})
    quarantine: list[dict[str, Any]] = []
    events = decisions = 0
    with (out_dir / "decisions.jsonl").open("w", encoding="utf-8") as decisions_out, \
            (out_dir / "requests.jsonl").open("w") as requests_out:
        for r in replay_records(records, config, progress):
            events += 1
            if r.malformed is not None:
                quarantine.append({**_quarantine_row(r, source), "quarantined_at": stamp})
            made = [d for handled in r.handled for d in handled.applied.decisions]
            if len(made) > 1:
                made.sort(key=_DECISION_ORDER)
            decisions_out.writelines(decision_line(_DECISION_VALUES(d), decided_at) for d in made)
            decisions += len(made)
            for handled in r.handled:
                audit.add(handled.applied.audit)
            if r.requests:
                requests.extend(r.requests)
                requests_out.writelines(jsonl_line(to_row(row)) for row in r.requests)
    audit.flush()  # the last batch, to `audit_batches` before the tables are written
    release_freed_memory()  # glibc's free pages of the controller's state, before the tables are joined and written
    write_arrow_delta(out_dir / "audit", audit.table())
    write_delta(out_dir / "quarantine", quarantine, QUARANTINE)
    write_arrow_delta(out_dir / "requests", requests.table())
    return LocalSummary(events, len(quarantine), decisions, audit.count)
