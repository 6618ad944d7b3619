"""The incident report: one self-contained HTML file.

`write_report(out_dir)` reads what a replay wrote (`DIR/audit` and `DIR/quarantine` as Delta tables,
`DIR/decisions.jsonl` when present), or what `isrflow run` wrote (LAKE, the folder of its audit table, with its
`decisions` table), derives the timeline from the audit (streaming.analysis.timeline), tells it in plain words
(summary), and renders one HTML page with no external resource (page: plots and tables). Both replay engines write
the same tables, so they get the same report. docs/incident-analysis.md says more.

`isrflow report DIR_OR_LAKE [--out FILE]` (re)writes the report of an existing replay output folder or run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from streaming.analysis.agreement import agreement_section, outcome_parts, requests_section
from streaming.analysis.columns import AuditRows
from streaming.analysis.controller_story import controller_changes
from streaming.analysis.page import page_plots, render
from streaming.analysis.summary import summarise
from streaming.analysis.timeline import Analysis, AuditPass, analyse, read_inputs
from streaming.engine.collector import young_collection_only
from streaming.io.layout import ReplayOutput


def build_report(out_dir: Path, audit: Iterable[Any] | None = None) -> Analysis:
    """The report's analysis of a replay output folder, with its summary (what write_report renders). `audit`, when
    given, is the audit's record batches as a local replay makes them (streaming.engine.local.replay_local): they
    are read as they come, before the replay has written its decisions, which are read once the batches end."""
    done = AuditPass().read(AuditRows(Path(out_dir) / "audit", audit)) if audit is not None else None
    analysis = analyse(read_inputs(out_dir), done)
    analysis.summary = summarise(analysis)
    return analysis


def default_target(out_dir: Path) -> Path:
    """Where the report of `out_dir` goes unless told: a replay's output folder (it has `decisions.jsonl`) holds
    its own, `DIR/report.html`, where every replay writes it; a run's LAKE is the folder of the tables `run` keeps
    writing, no place for a document: its report goes beside it, `LAKE-report.html`."""
    if ReplayOutput(out_dir).decisions_jsonl.exists():
        return ReplayOutput(out_dir).report
    lake = out_dir.resolve()
    return lake.with_name(f"{lake.name}-report.html")


def write_report(out_dir: Path, target: Path | None = None, agreement_written: Callable[[], object] | None = None,
                 audit: Iterable[Any] | None = None) -> Path:
    """Write the report of the outputs in `out_dir` to `target` (default: `default_target`); returns its path.
    `agreement_written`, when given, returns once `agreement.jsonl` and `histories.jsonl` are written (by another
    process): the analysis of the audit, the controller's own changes, the outcomes and the plots do not read them,
    the rest of the controller's story and its section do. `audit`: as `build_report`'s."""
    out_dir = Path(out_dir)
    with young_collection_only():  # the audit's rows and the timeline built from them, none in a cycle
        analysis = build_report(out_dir, audit)
        # First what reads no agreement (another process may still be writing it): the controller's changes, the
        # outcomes beside isrflow's decisions, the plots.
        changes = controller_changes(analysis.index, out_dir)
        outcomes = outcome_parts(out_dir, changes.controller) if changes is not None else None
        plots = page_plots(analysis)
        if agreement_written is not None:
            agreement_written()
        story = changes.story(out_dir) if changes is not None else None
        html = render(analysis, story, plots)
    compared = (story.agreement, story.controller, outcomes) if story is not None else (None, None, None)
    for section in (agreement_section(out_dir, *compared), requests_section(out_dir)):
        if section is not None:  # a replay of a real controller's history; the zk rules' requests
            html = html.replace("</main>", section + "\n</main>", 1)
    target = default_target(out_dir) if target is None else target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(target)
    return target

