"""The report's HTML page (jinja2, templates/report.html): the summary, the cards, the plots embedded as base64
PNG and the tables, with no external resource."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from streaming.analysis.controller_story import TrueStory
from streaming.analysis.plots import plot_elections, plot_health, plot_leaders
from streaming.analysis.tables import (
    broker_table,
    leader_change_table,
    quarantine_table,
    rejection_table,
    unclean_table,
)
from streaming.analysis.timeline import Analysis

TEMPLATES = Path(__file__).resolve().parent / "templates"


def build_context(a: Analysis, story: TrueStory | None = None, plots: list[dict[str, str]] | None = None
                  ) -> dict[str, Any]:
    """The template's values; `story`, for a real controller's history, goes first (controller_story); `plots`:
    `page_plots(a)`, when drawn already."""
    s = a.index
    peak, at = a.offline_peak
    upeak, _ = a.under_replicated_peak
    rejected = rejection_table(s)
    return {
        "source": a.inputs.source,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "summary": a.summary,
        "warnings": story.warnings if story is not None else [],
        "true_story": story.lines if story is not None else [],
        "agreement": story.figures.counted() if story is not None and story.figures is not None else None,
        "cards": [
            ("events", a.events), ("partitions", len(a.facts.keys)),
            ("decisions", a.inputs.decision_count), ("went offline", len(a.ever_offline)),
            ("offline at peak", peak), ("under-replicated at peak", upeak),
            ("unclean elections", len(a.facts.unclean)), ("leader changes", a.leader_changes),
            ("rejected rows", a.rejected), ("quarantined", len(a.inputs.quarantine)),
        ],
        "alert": bool(a.facts.unclean or a.offline_at_end),
        "plots": plots if plots is not None else page_plots(a),
        "unclean": unclean_table(s),
        "rejected": rejected,
        "rejected_total": sum(r["rows"] for r in rejected),
        "leader_changes": leader_change_table(a),
        "leader_changes_total": len(a.facts.changes),
        "quarantine": quarantine_table(a),
        "quarantine_total": len(a.inputs.quarantine),
        "brokers": broker_table(a),
        "offline_peak_time": s.clock(at.time, at.offset) if at is not None and peak else None,
    }


def page_plots(a: Analysis) -> list[dict[str, str]]:
    """The page's plots (matplotlib, as base64 PNG), from the analysis alone."""
    return [
        {"id": "plot-health", "title": "Offline and under-replicated partitions", "png": plot_health(a),
         "caption": "Offline: the partition exists and has no leader. Under-replicated: it has a leader and "
                    "an ISR smaller than its (target) replica set. Dashed lines mark broker failures, "
                    "dotted ones controlled shutdowns, dash-dotted ones broker startups."},
        {"id": "plot-leaders", "title": "Leader changes per broker", "png": plot_leaders(a),
         "caption": "Top: leader changes, coloured by the broker that became leader (the first election of "
                    "a new partition is not counted). Bottom: how many partitions each broker leads."},
        {"id": "plot-elections", "title": "Elections by strategy", "png": plot_elections(a),
         "caption": "Every election the controller ran, by Kafka's strategy: INITIAL (new partition), OFFLINE, "
                    "OFFLINE_UNCLEAN (leader outside the ISR: data loss possible), CONTROLLED_SHUTDOWN, "
                    "REASSIGN, PREFERRED."},
    ]


def render(a: Analysis, story: TrueStory | None = None, plots: list[dict[str, str]] | None = None) -> str:
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["html"]),
                      trim_blocks=True, lstrip_blocks=True)
    return env.get_template("report.html").render(**build_context(a, story, plots))
