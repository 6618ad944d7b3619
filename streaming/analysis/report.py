"""The incident report of a replay: `DIR/report.html`, one self-contained file.

`write_report(out_dir)` reads what a replay wrote (`DIR/audit` and `DIR/quarantine` as Delta tables,
`DIR/decisions.jsonl` when present), derives the timeline from the audit (streaming.analysis.timeline), tells it
in plain words (summary), and renders one HTML page with no external resource (page: plots and tables). Both
replay engines write the same tables, so they get the same report. docs/incident-analysis.md says more.

Run `python -m streaming.analysis.report DIR` to (re)write the report of an existing replay output folder.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from streaming.analysis.agreement import agreement_section, requests_section
from streaming.analysis.page import render
from streaming.analysis.summary import summarise
from streaming.analysis.timeline import Analysis, analyse, read_inputs
from streaming.engine.collector import young_collection_only


def build_report(out_dir: Path) -> Analysis:
    """The report's analysis of a replay output folder, with its summary (what write_report renders)."""
    analysis = analyse(read_inputs(out_dir))
    analysis.summary = summarise(analysis)
    return analysis


def write_report(out_dir: Path) -> Path:
    """Write `out_dir/report.html` from the replay outputs in `out_dir`; returns its path."""
    out_dir = Path(out_dir)
    with young_collection_only():  # the audit's rows and the timeline built from them, none in a cycle
        html = render(build_report(out_dir))
    for section in (agreement_section(out_dir), requests_section(out_dir)):
        if section is not None:  # a replay of a real controller's history; the zk rules' requests
            html = html.replace("</main>", section + "\n</main>", 1)
    target = out_dir / "report.html"
    tmp = target.with_suffix(".html.tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(target)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m streaming.analysis.report REPLAY_OUT_DIR", file=sys.stderr)
        return 2
    try:
        path = write_report(Path(args[0]))
    except FileNotFoundError as exc:
        print(f"isrflow report: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
