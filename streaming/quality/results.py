"""The verdict of a suite run, pure: one `RuleResult` per expectation, the `QualityReport` with its exit code,
and how an offending row is labelled for people."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from streaming.quality.rules import Severity

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


def example_label(row: Mapping[str, Any]) -> str:
    where = f"{row.get('topic')}-{row.get('partition')}" if row.get("partition") is not None else "cluster"
    text = f"{row.get('event_id')} {where} @{row.get('source_offset')}"
    detail = row.get("detail")
    return f"{text} ({detail})" if detail else text
