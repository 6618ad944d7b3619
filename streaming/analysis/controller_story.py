"""The cluster's story from the controller's own records, for a replay of a real controller's history.

isrflow's replay can be wrong (a record kind it does not model, a rule of a release it has not learnt); the
controller's partition changes (`observed.jsonl` of a replay, the `observed` Delta table of `isrflow run` behind a
bridge) are what happened. So on a real history the report's "What happened" tells those first, event by event in
the log's order (consecutive events of one kind in one line), marks each place where isrflow's decisions differ
(agreement.jsonl / the agreement table), and ends with the partitions as the controller's records leave them beside
isrflow's. Above everything, `warnings` says how far the replay can be trusted (streaming.history.trust).

Read as streams, row by row (the observed and agreement JSON lines, or their Delta tables a batch at a time),
keeping one state per partition, the run being told and a count per event isrflow disagrees on: memory grows with
the partitions and the disagreeing events, not with the controller's changes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from statemachine.record import NO_LEADER
from streaming.analysis.columns import agreement_rows_in, event_offsets, observed_rows
from streaming.analysis.timeline import Index
from streaming.analysis.words import Key, and_list, names, plural, pname
from streaming.history.outcomes import ControllerOutcomes
from streaming.history.trust import AgreementFigures, ImportFacts, trust_warnings
from streaming.io.jsonl import jsonl_rows

STORY_LINES = 40  # runs of events told one line each; the rest in one closing line
EXAMPLES = 3  # partitions named per kind of change and per disagreement
SHOWN = 500  # the first disagreements and differing histories the report lists (all are in the JSON lines files)


@dataclass
class TrueStory:
    """The top of a real history's report: the warnings, then the controller's story, each line with whether it
    marks a difference of isrflow's."""

    warnings: list[str]
    lines: list[tuple[str, bool]]
    agreement: Agreement | None  # the agreement as read for the story, for the report's agreement section too
    controller: ControllerOutcomes  # the controller's changes as the story read them, for the section's outcomes

    @property
    def figures(self) -> AgreementFigures | None:
        return self.agreement.figures if self.agreement is not None else None


@dataclass
class _Differences:
    """isrflow's disagreements per cause event: [the controller's decisions isrflow got wrong, decisions isrflow made
    where the controller made none, the first few named]."""

    by_event: dict[str, list[Any]] = field(default_factory=dict)

    def add(self, row: Mapping[str, Any]) -> None:
        entry = self.by_event.setdefault(row.get("cause_event_id") or "", [0, 0, []])
        alone = row.get("controller") is None  # isrflow decided where the controller changed nothing
        entry[1 if alone else 0] += 1
        if len(entry[2]) < EXAMPLES:
            where = pname(row["topic"], row["partition"])
            entry[2].append(f"{where}: isrflow's change, none at the controller" if alone
                            else f"{where} at offset {row['source_offset']}: "
                                 + ("no decision of isrflow's" if row.get("isrflow") is None
                                    else ", ".join(row["differing"])))


@dataclass
class Agreement:
    """A replay's or a run's agreement, read once: isrflow's disagreements per event, the figures, and the SHOWN
    lowest-offset disagreements in log order (a table returns rows in any order) for the report to list."""

    differences: _Differences
    figures: AgreementFigures
    shown: list[dict[str, Any]]


def _by_offset(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda x: x["source_offset"])[:SHOWN]


def read_agreement(out_dir: Path) -> Agreement | None:
    """The agreement of a replay (agreement.jsonl, histories.jsonl) or of a run (the agreement table), read as a
    stream; None when there is none."""
    rows = agreement_rows_in(out_dir)
    if rows is None:
        return None
    differences = _Differences()
    shown: list[dict[str, Any]] = []
    decisions = disagreements = 0
    for row in rows:
        decisions += 1
        if not row["match"]:
            disagreements += 1
            differences.add(row)
            shown.append(row)
            if len(shown) > 2 * SHOWN:  # keep the list short: the lowest offsets win
                shown = _by_offset(shown)
    partitions = equal = 0
    if (out_dir / "histories.jsonl").exists():
        for row in jsonl_rows(out_dir / "histories.jsonl"):
            partitions += 1
            equal += bool(row["match"])
    return Agreement(differences, AgreementFigures(decisions, disagreements, partitions, equal), _by_offset(shown))


def real_history_warnings(out_dir: Path) -> list[str]:
    """What the report of `out_dir` says first (empty for a replay that is not of a real history, or that agrees)."""
    found = read_agreement(out_dir)
    return trust_warnings(ImportFacts.read(out_dir), found.figures if found is not None else None)


@dataclass
class _Run:
    """Consecutive events of one cause and what the controller changed in them."""

    cause: str
    first: str  # the first event's id
    events: list[str] = field(default_factory=list)
    decisions: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def note(self, kind: str, example: str) -> None:
        self.kinds[kind] += 1
        shown = self.examples.setdefault(kind, [])
        if len(shown) < EXAMPLES:
            shown.append(example)


# What a change did, in the order the story tells them: (kind, what n of them are called).
_KINDS = (("created", ("new partition", None)), ("offline", ("partition taken offline", "partitions taken offline")),
          ("online", ("partition back online", "partitions back online")), ("leader", ("leader move", None)),
          ("shrink", ("ISR shrink", None)), ("expand", ("ISR expansion", None)),
          ("replicas", ("replica set change", None)), ("directories", ("log dir placement", None)),
          ("other", ("rewrite with no leader, ISR or replica change",
                     "rewrites with no leader, ISR or replica change")))
UNEXPLAINED = "Unexplained"  # the cause of a change no event explains (the ZooKeeper import's word)


def _kind(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> tuple[str, str]:
    """What one partition change did, and the partition named with it."""
    name = pname(after["topic"], after["partition"])
    leader = after["leader"]
    if before is None:
        return "created", f"{name} (leader {leader})"
    if leader != before["leader"]:
        if leader == NO_LEADER:
            return "offline", name
        if before["leader"] == NO_LEADER:
            return "online", f"{name} (leader {leader})"
        return "leader", f"{name} {before['leader']} → {leader}"
    isr, was = set(after["isr"]), set(before["isr"])
    if isr < was:
        return "shrink", f"{name} {sorted(was)} → {sorted(isr)}"
    if isr > was:
        return "expand", f"{name} {sorted(was)} → {sorted(isr)}"
    if after["replicas"] != before["replicas"]:
        return "replicas", f"{name} {before['replicas']} → {after['replicas']}"
    if before.get("directories") is not None and (after.get("directories") or []) != before["directories"]:
        return "directories", name
    return "other", name


class _Teller:
    def __init__(self, s: Index, audit: Path) -> None:
        self.s = s
        self.differences = _Differences()  # isrflow's, known once the agreement is read (`close`)
        self.audit = audit
        self.lines: list[tuple[str, bool]] = []
        self.told: list[_Run] = []  # the first STORY_LINES runs, told at `close` (their events' offsets read then)
        self.untold: list[_Run] = []
        self.seen: set[str] = set()

    def tell(self, run: _Run) -> None:
        self.seen.update(run.events)
        (self.untold if len(self.told) >= STORY_LINES else self.told).append(run)

    def _line(self, run: _Run, offset_of: Mapping[str, int]) -> tuple[str, bool]:
        offset, last = offset_of.get(run.first), offset_of.get(run.events[-1])
        when = f"At {run.first}" if offset is None else self.s.span(offset, offset if last is None else last)
        what = ("a change no event explains" if run.cause == UNEXPLAINED and len(run.events) == 1
                else f"{plural(len(run.events), run.cause + ' event')}" if len(run.events) > 1
                else f"{run.cause} ({run.first})")
        done = [plural(run.kinds[k], *noun) + f" ({', '.join(run.examples[k])}"
                + (", …)" if run.kinds[k] > EXAMPLES else ")") for k, noun in _KINDS if run.kinds[k]]
        text = f"{when} {what}: the controller wrote {and_list(done)}."
        differ = self._differ(run)
        return text + differ, bool(differ)

    def _differ(self, run: _Run) -> str:
        entries = [self.differences.by_event[e] for e in run.events if e in self.differences.by_event]
        if not entries:
            return ""
        wrong, alone = sum(e[0] for e in entries), sum(e[1] for e in entries)
        examples = [x for e in entries for x in e[2]][:EXAMPLES]
        counts = [f"{wrong} of the controller's {plural(run.decisions, 'decision')}" if wrong else "",
                  f"{plural(alone, 'change')} the controller did not make" if alone else ""]
        return (f" isrflow differs here: {and_list([c for c in counts if c])} ({'; '.join(examples)}"
                f"{'; …' if wrong + alone > EXAMPLES else ''}).")

    def close(self, differences: _Differences) -> None:
        self.differences = differences
        offset_of = event_offsets(self.audit, {e for run in self.told for e in (run.first, run.events[-1])})
        self.lines.extend(self._line(run, offset_of) for run in self.told)
        if self.untold:
            marked = sum(1 for run in self.untold if any(e in self.differences.by_event for e in run.events))
            events = sum(len(run.events) for run in self.untold)
            self.lines.append((f"… and {plural(events, 'more event')} with partition changes at the controller"
                               + (f"; isrflow differs in {marked} of these {plural(len(self.untold), 'run')}."
                                  if marked else "; isrflow agrees on all of them."), bool(marked)))
        alone = {e: v for e, v in self.differences.by_event.items() if e not in self.seen}
        if alone:
            count = sum(v[0] + v[1] for v in alone.values())
            examples = [x for v in alone.values() for x in v[2]][:EXAMPLES]
            more = "; …" if count > EXAMPLES else ""
            self.lines.append((f"isrflow made {plural(count, 'partition change')} the controller never made, for "
                               f"{plural(len(alone), 'event')}: {'; '.join(examples)}{more}.", True))


def _end_lines(s: Index, last: Mapping[Key, Mapping[str, Any]]) -> list[tuple[str, bool]]:
    """The partitions as the controller's records leave them, beside isrflow's end."""
    gone = s.a.facts.deleted_topics  # the log's, whatever isrflow made of them
    parts = {k: v for k, v in last.items() if k[0] not in gone}
    offline = sorted(k for k, v in parts.items() if v["leader"] == NO_LEADER)
    urp = sorted(k for k, v in parts.items() if v["leader"] != NO_LEADER
                 and len(v["isr"]) < len([r for r in v["replicas"] if r not in (v.get("removing_replicas") or ())]))
    text = (f"At the end of the log, by the controller's records, {plural(len(offline), 'partition')} "
            f"{'is' if len(offline) == 1 else 'are'} offline: {names(offline)}" if offline
            else f"At the end of the log, by the controller's records, every partition ({len(parts)}) has a leader")
    text += f"; {plural(len(urp), 'partition')} under-replicated ({names(urp)})." if urp else "."
    ours = [k for k in s.a.offline_at_end if k[0] not in gone]
    lines = [(text, False)]
    if ours != offline:
        lines.append((f"isrflow's replay ends otherwise: {plural(len(ours), 'partition')} offline"
                      + (f" ({names(ours)})" if ours else "")
                      + f" where the controller's records have {len(offline)}.", True))
    return lines


@dataclass
class ControllerChanges:
    """The controller's changes as the story reads them, before it reads the agreement: the runs told, each
    partition's last state (and unclean elections)."""

    teller: _Teller
    controller: ControllerOutcomes

    def story(self, out_dir: Path) -> TrueStory:
        """The story, with isrflow's differences from the agreement (read now)."""
        agreement = read_agreement(out_dir)
        self.teller.close(agreement.differences if agreement is not None else _Differences())
        figures = agreement.figures if agreement is not None else None
        return TrueStory(trust_warnings(ImportFacts.read(out_dir), figures),
                         self.teller.lines + _end_lines(self.teller.s, self.controller.last), agreement,
                         self.controller)


def controller_changes(s: Index, out_dir: Path) -> ControllerChanges | None:
    """The controller's changes of a real history, told run by run (None when `out_dir` holds no controller's
    records). They read no agreement: a replay's report reads them while another process writes it."""
    observed = observed_rows(out_dir)
    if observed is None:
        return None
    teller = _Teller(s, out_dir / "audit")
    seeds = s.a.facts.seeds  # a partition the log's snapshot holds: its state before the controller's first change
    controller = ControllerOutcomes()  # each partition's last state, its unclean elections counted on the way
    last = controller.last
    run: _Run | None = None
    for o in observed:
        event = o.get("cause_event_id") or f"metadata offset {o['source_offset']}"
        cause = o.get("cause") or UNEXPLAINED
        if run is None or run.cause != cause:
            if run is not None:
                teller.tell(run)
            run = _Run(cause, event)
        if not run.events or run.events[-1] != event:
            run.events.append(event)
        key = (o["topic"], int(o["partition"]))
        kind, example = _kind(last.get(key) or seeds.get(key), o)
        run.note(kind, example)
        run.decisions += bool(o.get("decision"))
        state = {f: o.get(f) for f in ("leader", "isr", "replicas", "removing_replicas")}
        state["directories"] = o.get("directories") or []
        controller.note(key, state)
    if run is not None:
        teller.tell(run)
    return ControllerChanges(teller, controller)

