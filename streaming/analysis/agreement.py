"""The report's "isrflow vs the controller" section, for a replay of a real controller's history: the agreement
rate and every disagreement with both sides and the partition's recent changes at the controller, then the
partition histories and, for each that differs, where it first parts from the controller's; then the outcome per
partition (final leader and ISR, unclean elections), which is what a replay under other rules (a ZooKeeper
cluster's history under the kraft rules: the migration question) is read for."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from html import escape
from pathlib import Path
from typing import Any

from streaming.analysis.columns import observed_rows, outcome_decisions
from streaming.analysis.controller_story import SHOWN, Agreement, read_agreement
from streaming.history.agreement import COMPARED
from streaming.history.outcomes import (
    TOPIC_EVENTS,
    ControllerOutcomes,
    compared_outcomes,
    controller_outcomes,
    deleted_topics,
)
from streaming.io.jsonl import jsonl_rows, jsonl_rows_naming, read_jsonl
from streaming.zookeeper.requests import REQUEST_WORDS, requests_agreement

RECENT = 3
SHOWN_REQUESTS = 20  # the first disagreeing requests the report lists


def _side(values: Mapping[str, Any] | None, differing: list[str]) -> str:
    if values is None:
        return "<em>no decision</em>"
    return "<br>".join((f"<b>{f}={escape(str(values.get(f)))}</b>" if f in differing
                        else f"{f}={escape(str(values.get(f)))}") for f in COMPARED)


def _recent(out_dir: Path, bad: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """For each shown disagreement (by position), the controller's last RECENT changes of its partition before it:
    one pass over the observed changes, keeping only the shown disagreements' partitions."""
    wanted = {(r["topic"], r["partition"]) for r in bad}
    history: dict[tuple[str, int], list[dict[str, Any]]] = {key: [] for key in wanted}
    for o in observed_rows(out_dir) or ():
        key = (o["topic"], o["partition"])
        if key in history:
            history[key].append({f: o.get(f) for f in ("source_offset", "cause", "leader", "isr", "leader_epoch",
                                                       "partition_epoch")})
    return {n: [o for o in history[(r["topic"], r["partition"])] if o["source_offset"] < r["source_offset"]][-RECENT:]
            for n, r in enumerate(bad)}


def agreement_section(out_dir: Path, agreement: Agreement | None = None,
                      controller: ControllerOutcomes | None = None, outcomes: list[str] | None = None) -> str | None:
    """The section's HTML, or None when neither a replay of a real controller's history nor a run behind a bridge
    compared anything. The agreement and the controller's changes as the controller's story read them
    (`read_agreement`, `TrueStory.controller`), or read here: the figures count every row, the table shows the first
    SHOWN disagreements in log order. `outcomes`: the section's `outcome_parts`, when written already."""
    out_dir = Path(out_dir)
    if agreement is None:
        agreement = read_agreement(out_dir)
    if agreement is None:
        return None
    figures, bad = agreement.figures, agreement.shown
    wrong = figures.disagreements
    parts = ['<h2 id="agreement">isrflow vs the controller</h2>',
             f"<p>{figures.rate:.1%} of {figures.decisions} decisions the real controller wrote "
             f"(elections and ISR shrinks) are reproduced exactly (leader, ISR, leader epoch, partition epoch, "
             f"recovery state); {wrong} disagree.</p>"]
    if bad:
        parts.append("<table><tr><th>partition</th><th>metadata offset</th><th>cause</th><th>controller</th>"
                     "<th>isrflow</th><th>recent changes at the controller</th></tr>")
        recent = _recent(out_dir, bad)
        for n, r in enumerate(bad):
            history = "<br>".join(escape(f"@{o['source_offset']} {o['cause']}: leader {o['leader']} isr {o['isr']} "
                                         f"epochs {o['leader_epoch']}/{o['partition_epoch']}") for o in recent[n])
            parts.append(f"<tr><td>{escape(r['topic'])}-{r['partition']}</td><td>{r['source_offset']}</td>"
                         f"<td>{escape(str(r['cause']))} {escape(str(r['cause_event_id']))}</td>"
                         f"<td>{_side(r['controller'], r['differing'])}</td>"
                         f"<td>{_side(r['isrflow'], r['differing'])}</td><td>{history}</td></tr>")
        parts.append("</table>")
        if wrong > len(bad):
            parts.append(f'<p class="more">The first {len(bad)} of {wrong} disagreements; every one is in '
                         f"<code>agreement.jsonl</code>.</p>")
    histories_path = out_dir / "histories.jsonl"
    if histories_path.exists():
        parts.extend(_histories(jsonl_rows(histories_path)))
    parts.extend(outcomes if outcomes is not None else outcome_parts(out_dir, controller))
    return "\n".join(parts)


def outcome_parts(out_dir: Path, controller: ControllerOutcomes | None = None) -> list[str]:
    """The section's outcome per partition, isrflow's decisions beside the controller's changes (as the story read
    them, or read here). It reads no agreement: a replay's report writes it while another process writes that."""
    decisions_path = Path(out_dir) / "decisions.jsonl"
    if controller is None:
        controller = controller_outcomes(observed_rows(out_dir) or ())
    if not controller.last or not decisions_path.exists():  # no controller's change: no outcomes to compare
        return []
    events = (e for path in sorted(Path(out_dir).glob("*/events.jsonl")) for e in jsonl_rows_naming(path, TOPIC_EVENTS))
    return _outcomes(compared_outcomes(controller, outcome_decisions(decisions_path), deleted_topics(events)))


def requests_section(out_dir: Path) -> str | None:
    """The controller's requests, as isrflow models them (a local replay under the zk rules: requests.jsonl), and
    beside the controller's own when its brokers' state-change logs were given (requests_agreement.jsonl)."""
    path = Path(out_dir) / "requests.jsonl"
    if not path.exists():
        return None
    rows = read_jsonl(path)
    if not rows:
        return None
    counts = {kind: sum(1 for r in rows if r["request"] == kind) for kind in REQUEST_WORDS}
    parts = ['<h2 id="requests">The controller\'s requests</h2>',
             f"<p>For {len({r['source_offset'] for r in rows})} events the ZooKeeper-era controller sends "
             + ", ".join(f"{n} {REQUEST_WORDS[k]}" for k, n in counts.items())
             + " requests (isrflow's model, <code>requests.jsonl</code>).</p>"]
    compared_path = Path(out_dir) / "requests_agreement.jsonl"
    if compared_path.exists():
        compared = read_jsonl(compared_path)
        parts.append(f"<p>Beside the controller's state-change logs, per broker in order: "
                     f"{escape(requests_agreement(compared).counted())} requests agree.</p>")
        bad = [r for r in compared if not r["match"]][:SHOWN_REQUESTS]
        if bad:
            parts.append("<table><tr><th>broker</th><th>request</th><th>controller</th><th>isrflow</th></tr>")
            for r in bad:
                parts.append(f"<tr><td>{r['broker']}</td><td>{REQUEST_WORDS[r['request']]}</td>"
                             f"<td>{_request(r['controller'])}</td><td>{_request(r['isrflow'])}</td></tr>")
            parts.append("</table>")
    return "\n".join(parts)


def _request(side: Mapping[str, Any] | None) -> str:
    if side is None:
        return "<em>none</em>"
    where = side.get("time") or f"offset {side.get('source_offset')} {side.get('event_type')} batch {side.get('batch')}"
    return escape(f"{where}: {side['partition_count']} partition(s) {', '.join(side['partitions'])}")


def _outcomes(rows: list[dict[str, Any]]) -> list[str]:
    """Where the incident ends differently per partition: what a migration (ZooKeeper to KRaft rules) asks."""
    differing = [r for r in rows if r["differing"]]
    parts = [f"<p>Outcomes: {len(rows) - len(differing)} of {len(rows)} partitions end with the controller's leader "
             f"and ISR, and with an unclean election where it needed one and nowhere else.</p>"]
    if differing:
        parts.append("<table><tr><th>partition</th><th>controller: leader, ISR, unclean elections</th>"
                     "<th>isrflow: leader, ISR, unclean elections</th><th>differs in</th></tr>")
        for r in differing:
            parts.append(f"<tr><td>{escape(r['topic'])}-{r['partition']}</td><td>{_outcome(r['controller'])}</td>"
                         f"<td>{_outcome(r['isrflow'])}</td><td>{escape(', '.join(r['differing']))}</td></tr>")
        parts.append("</table>")
    return parts


def _outcome(values: Mapping[str, Any] | None) -> str:
    if values is None:
        return "<em>never written</em>"
    return escape(f"{values['leader']}, {values['isr']}, {values['unclean_elections']}")


def _histories(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    partitions = equal = states = states_equal = 0
    differing: list[Mapping[str, Any]] = []  # the first SHOWN
    for r in rows:
        partitions += 1
        states += r["states_compared"]
        states_equal += r["states_equal"]
        if r["match"]:
            equal += 1
        elif len(differing) < SHOWN:
            differing.append(r)
    parts = [f"<p>Partition histories: {equal} of {partitions} partitions went through the "
             f"same sequence of states as at the controller ({states_equal} of {states} "
             f"states equal).</p>"]
    if differing:
        parts.append("<table><tr><th>partition</th><th>states equal</th><th>first difference</th>"
                     "<th>controller</th><th>isrflow</th></tr>")
        for r in differing:
            d = r["first_difference"]
            parts.append(f"<tr><td>{escape(r['topic'])}-{r['partition']}</td>"
                         f"<td>{r['states_equal']}/{r['states_compared']}</td>"
                         f"<td>state {d['state'] + 1}, metadata offset {d['source_offset']}</td>"
                         f"<td>{_state(d['controller'], d['differing'])}</td>"
                         f"<td>{_state(d['isrflow'], d['differing'])}</td></tr>")
        parts.append("</table>")
        if partitions - equal > len(differing):
            parts.append(f'<p class="more">The first {len(differing)} of {partitions - equal} differing histories; '
                         f"every one is in <code>histories.jsonl</code>.</p>")
    return parts


def _state(values: Mapping[str, Any] | None, differing: list[str]) -> str:
    if values is None:
        return "<em>no state</em>"
    return f"@{values['source_offset']} {escape(str(values.get('cause')))}<br>{_side(values, differing)}"
