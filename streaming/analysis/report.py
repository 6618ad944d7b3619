"""The incident report: one self-contained HTML file.

`write_report(out_dir)` reads what a replay wrote (`DIR/audit` and `DIR/quarantine` as Delta tables,
`DIR/decisions.jsonl` when present), or what `isrflow run` wrote (LAKE, the folder of its audit table, with its
`decisions` table), derives the timeline from the audit (streaming.analysis.timeline), tells it in plain words
(summary), and renders one HTML page with no external resource (page: plots and tables). Both replay engines write
the same tables, so they get the same report. docs/incident-analysis.md says more.

`isrflow report DIR_OR_LAKE [--out FILE]` (re)writes the report of an existing replay output folder or run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from streaming.analysis.agreement import agreement_section, requests_section
from streaming.analysis.controller_story import true_story
from streaming.analysis.page import render
from streaming.analysis.summary import summarise
from streaming.analysis.timeline import Analysis, analyse, read_inputs
from streaming.engine.collector import young_collection_only
from streaming.io.layout import ReplayOutput


def build_report(out_dir: Path) -> Analysis:
    """The report's analysis of a replay output folder, with its summary (what write_report renders)."""
    analysis = analyse(read_inputs(out_dir))
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


def write_report(out_dir: Path, target: Path | None = None, agreement_written: Callable[[], object] | None = None
                 ) -> Path:
    """Write the report of the outputs in `out_dir` to `target` (default: `default_target`); returns its path.
    `agreement_written`, when given, returns once `agreement.jsonl` and `histories.jsonl` are written (by another
    process): the analysis of the audit does not read them, the controller's story and its section do."""
    out_dir = Path(out_dir)
    with young_collection_only():  # the audit's rows and the timeline built from them, none in a cycle
        analysis = build_report(out_dir)
        if agreement_written is not None:
            agreement_written()
        story = true_story(analysis.index, out_dir)
        html = render(analysis, story)
    compared = (story.agreement, story.controller) if story is not None else (None, None)
    for section in (agreement_section(out_dir, *compared), requests_section(out_dir)):
        if section is not None:  # a replay of a real controller's history; the zk rules' requests
            html = html.replace("</main>", section + "\n</main>", 1)
    target = default_target(out_dir) if target is None else target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(target)
    return target

