"""The incident report of a replay: `DIR/report.html`, one self-contained file.

`write_report(out_dir)` reads what a replay wrote (`DIR/audit` and `DIR/quarantine` as Delta tables,
`DIR/decisions.jsonl` when present) and renders one HTML page with no external resource: a summary in plain words
computed from the data, plots over time (matplotlib, Agg, embedded as base64 PNG) and tables. Both replay
engines write the same tables, so they get the same report.

Definitions the report uses (docs/incident-analysis.md says more):
- time is the events' `ts` (`event_ts` in the audit), made monotonic along the log: the log's order decides,
  so an event that carries an older `ts` than one before it (a redelivery) is drawn at the later time;
- a partition is *offline* while it exists and has no leader (leader -1);
- a partition is *under-replicated* while it has a leader and its ISR is smaller than its replica set
  (the audit's `replicas_after`; during a reassignment the target replicas, as Kafka counts it, when the
  decisions name the removing replicas);
- a *leader change* is a partition getting a leader other than the one it had, not counting the first
  election of a new partition.

Run `python -m streaming.analysis.report DIR` to (re)write the report of an existing replay output folder.
"""

from __future__ import annotations

import base64
import io
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from itertools import groupby
from pathlib import Path
from typing import Any

from streaming.analysis.agreement import agreement_section
from streaming.io.delta import read_decisions_jsonl, read_delta

TEMPLATES = Path(__file__).resolve().parent / "templates"
NO_LEADER = -1
OFFLINE = "OfflinePartition"
NON_EXISTENT = "NonExistentPartition"
UNCLEAN = "OFFLINE_UNCLEAN"
ELECTION_ORDER = ("INITIAL", "OFFLINE", "OFFLINE_UNCLEAN", "CONTROLLED_SHUTDOWN", "REASSIGN", "PREFERRED")
ELECTION_COLORS = {"INITIAL": "#9e9e9e", "OFFLINE": "#e07b39", "OFFLINE_UNCLEAN": "#b71c1c",
                   "CONTROLLED_SHUTDOWN": "#f2b134", "REASSIGN": "#7b5ea7", "PREFERRED": "#3a7dc9"}
BROKER_EVENT_STYLE = {"FAILURE": ("#c62828", "--", "failed"), "CONTROLLED_SHUTDOWN": ("#ef6c00", ":", "shutdown"),
                      "STARTUP": ("#2e7d32", "-.", "started")}
TABLE_LIMIT = 50

Key = tuple[str, int]


# -- reading -----------------------------------------------------------------------------------------

@dataclass
class Inputs:
    audit: list[dict[str, Any]]
    decisions: list[dict[str, Any]]
    quarantine: list[dict[str, Any]]
    source: str = ""


def read_inputs(out_dir: Path) -> Inputs:
    """The replay's outputs; a missing decisions file or quarantine table counts as empty."""
    if not (out_dir / "audit" / "_delta_log").is_dir():
        raise FileNotFoundError(f"no audit table (Delta) in {out_dir / 'audit'}")
    audit = read_delta(out_dir / "audit")
    decisions_path = out_dir / "decisions.jsonl"
    decisions = read_decisions_jsonl(decisions_path) if decisions_path.exists() else []
    quarantine_path = out_dir / "quarantine"
    quarantine = read_delta(quarantine_path) if (quarantine_path / "_delta_log").is_dir() else []
    return Inputs(audit, decisions, quarantine, str(out_dir))


def audit_sort_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """Log order; an event's cluster-level row first, then its partitions; several rows of one event for
    one partition (an implicit failover, a bounce) chain by their epochs, whatever order a table kept."""
    partition = row.get("partition")
    return (row["source_offset"], partition is not None, row.get("topic") or "",
            -1 if partition is None else partition,
            _int(row.get("partition_epoch_before")), _int(row.get("partition_epoch_after")),
            _int(row.get("leader_epoch_before")), _int(row.get("leader_epoch_after")))


def _int(value: Any) -> int:
    return -1 if value is None else int(value)


def parse_ts(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def pname(topic: str | None, partition: int | None) -> str:
    return f"{topic}-{partition}"


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def names(keys: Iterable[Key], limit: int = 8) -> str:
    keys = sorted(keys)
    text = ", ".join(pname(*k) for k in keys[:limit])
    return text + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def key_of(row: Mapping[str, Any]) -> Key:
    return row["topic"], int(row["partition"])


# -- cluster-level events ------------------------------------------------------------------------------------
# Not audit columns, so still read from the cluster row's message: a BrokerChange's kind and a startup's
# broker epoch (a follower's controlled shutdown and its failure leave alike partition rows, a broker hosting
# no partition none), a failover's controller id, a fenced event's own epoch.

_BROKER_CHANGE = re.compile(r"^broker \d+ (started with epoch (\d+)|failed|shutting down)")
_CHANGE_KIND = {"started": "STARTUP", "failed": "FAILURE", "shutting": "CONTROLLED_SHUTDOWN"}
_FAILOVER = re.compile(r"^controller failover: (?:controller (\d+))?")
_STALE_EPOCH = re.compile(r"controller epoch (\d+) is older than the active")


@dataclass(frozen=True)
class BrokerEvent:
    offset: int
    time: datetime | None
    broker: int
    change: str  # STARTUP / FAILURE / CONTROLLED_SHUTDOWN
    epoch: int | None
    event_id: str


def broker_event(row: Mapping[str, Any], time: datetime | None) -> BrokerEvent | None:
    """The broker change an accepted cluster-level BrokerChange row describes: the broker from `broker_id`,
    the kind (and a startup's epoch) from the message."""
    if (row.get("event_type") != "BrokerChange" or row.get("outcome") != "ACCEPTED"
            or row.get("partition") is not None or row.get("broker_id") is None):
        return None
    m = _BROKER_CHANGE.match(row.get("message") or "")
    if m is None:
        return None
    epoch = None if m.group(2) is None else int(m.group(2))
    return BrokerEvent(row["source_offset"], time, int(row["broker_id"]), _CHANGE_KIND[m.group(1).split()[0]],
                       epoch, row["event_id"])


# -- the analysis ------------------------------------------------------------------------------------------

@dataclass
class _Partition:
    state: str = NON_EXISTENT
    leader: int = NO_LEADER
    isr: tuple[int, ...] = ()
    replicas: tuple[int, ...] = ()  # the audit's replicas_after
    removing: tuple[int, ...] = ()  # a reassignment's removing replicas, from the decisions when present

    @property
    def offline(self) -> bool:
        return self.state != NON_EXISTENT and self.leader == NO_LEADER

    @property
    def under_replicated(self) -> bool:
        if self.leader == NO_LEADER or self.state == NON_EXISTENT:
            return False
        return len(self.isr) < len([r for r in self.replicas if r not in self.removing])


@dataclass
class Point:
    """The cluster after one event of the log."""

    offset: int
    time: datetime | None
    offline: int
    under_replicated: int
    leaders: dict[int, int]  # broker -> partitions it leads


@dataclass
class Analysis:
    inputs: Inputs
    audit: list[dict[str, Any]]  # in log order (audit_sort_key)
    decisions: list[dict[str, Any]]
    times: dict[int, datetime | None]  # source_offset -> monotonic event time
    points: list[Point]
    broker_events: list[BrokerEvent]
    partitions: dict[Key, _Partition]  # as the log leaves them
    topics: set[str]
    brokers: set[int]
    ever_offline: set[Key]
    ever_under_replicated: set[Key]
    leader_changes: list[dict[str, Any]]  # audit rows that gave a partition a different leader
    elections: list[dict[str, Any]]  # audit rows with an election
    unclean: list[dict[str, Any]]
    rejected: list[dict[str, Any]]
    summary: list[str] = field(default_factory=list)

    @property
    def events(self) -> int:
        return len({r["source_offset"] for r in self.audit})

    def _peak(self, attr: str) -> tuple[int, Point | None]:
        best = max(self.points, key=lambda p: getattr(p, attr), default=None)
        return (getattr(best, attr) if best else 0), best

    @property
    def offline_peak(self) -> tuple[int, Point | None]:
        return self._peak("offline")

    @property
    def under_replicated_peak(self) -> tuple[int, Point | None]:
        return self._peak("under_replicated")

    @property
    def offline_at_end(self) -> list[Key]:
        return sorted(k for k, p in self.partitions.items() if p.offline)

    @property
    def under_replicated_at_end(self) -> list[Key]:
        return sorted(k for k, p in self.partitions.items() if p.under_replicated)

    def rejected_by_error(self) -> dict[str, int]:
        """Rejected audit rows per error name (the audit's own count)."""
        return dict(Counter(r.get("error") or "(none)" for r in self.rejected).most_common())

    def time_of(self, offset: int) -> datetime | None:
        return self.times.get(offset)

    @cached_property
    def first_partition_offset(self) -> int | None:
        return min((r["source_offset"] for r in self.audit if r.get("partition") is not None), default=None)

    def cluster_coming_up(self, e: BrokerEvent) -> bool:
        """A broker registering before any partition exists."""
        first = self.first_partition_offset
        return e.change == "STARTUP" and (first is None or e.offset < first)


def _monotonic_times(audit: Sequence[Mapping[str, Any]]) -> dict[int, datetime | None]:
    """Each offset's event time, never earlier than the one before it (log order decides)."""
    raw: dict[int, datetime | None] = {}
    for row in audit:
        offset = row["source_offset"]
        if offset not in raw or raw[offset] is None:
            raw[offset] = parse_ts(row.get("event_ts"))
    times: dict[int, datetime | None] = {}
    latest: datetime | None = None
    for offset in sorted(raw):
        t = raw[offset]
        if t is not None and (latest is None or t > latest):
            latest = t
        times[offset] = latest
    return times


def analyse(inputs: Inputs) -> Analysis:
    audit = sorted(inputs.audit, key=audit_sort_key)
    decisions = sorted(inputs.decisions, key=lambda d: (d["source_offset"], d["topic"], d["partition"],
                                                        d["partition_epoch"]))
    times = _monotonic_times(audit)
    removing_at: dict[int, dict[Key, tuple[int, ...]]] = defaultdict(dict)  # the last decision's, per event
    for d in decisions:
        removing_at[d["source_offset"]][key_of(d)] = tuple(d.get("removing_replicas") or ())

    parts: dict[Key, _Partition] = {}
    offline: set[Key] = set()
    urp: set[Key] = set()
    leaders: Counter[int] = Counter()
    points: list[Point] = []
    ever_offline: set[Key] = set()
    ever_urp: set[Key] = set()
    broker_events: list[BrokerEvent] = []
    brokers: set[int] = set()
    topics: set[str] = set()

    def update(key: Key, **changes: Any) -> None:
        """Change a partition (a deleted one leaves `parts`), keeping the counts and sets in step."""
        p = parts.setdefault(key, _Partition())
        if p.leader != NO_LEADER:
            leaders[p.leader] -= 1
        vars(p).update(changes)
        if p.state == NON_EXISTENT:
            del parts[key]
        elif p.leader != NO_LEADER:
            leaders[p.leader] += 1
        for flag, bucket, ever in ((p.offline, offline, ever_offline), (p.under_replicated, urp, ever_urp)):
            if flag:
                bucket.add(key)
                ever.add(key)
            else:
                bucket.discard(key)

    for offset, rows in groupby(audit, key=lambda r: r["source_offset"]):
        for row in rows:
            if row.get("partition") is None:
                be = broker_event(row, times.get(offset))
                if be is not None:
                    broker_events.append(be)
                    brokers.add(be.broker)
            elif row.get("outcome") != "REJECTED" and row.get("to_state") is not None:
                topics.add(row["topic"])
                update(key_of(row), state=row["to_state"], leader=_int(row.get("leader_after")),
                       isr=tuple(row.get("isr_after") or ()), replicas=tuple(row.get("replicas_after") or ()))
                brokers.update(*(row.get(c) or () for c in ("replicas_after", "isr_after", "replica_states")))
        for key, removing in removing_at.get(offset, {}).items():
            if key in parts:
                update(key, removing=removing)
        points.append(Point(offset, times.get(offset), len(offline), len(urp),
                            {b: n for b, n in leaders.items() if n > 0}))

    part_rows = [r for r in audit if r.get("partition") is not None]
    leader_changes = [r for r in part_rows if r.get("outcome") == "ACCEPTED"
                      and _int(r.get("leader_after")) != NO_LEADER
                      and _int(r.get("leader_after")) != _int(r.get("leader_before"))
                      and r.get("from_state") != NON_EXISTENT]
    elections = [r for r in part_rows if r.get("election")]
    analysis = Analysis(
        inputs=inputs, audit=audit, decisions=decisions, times=times, points=points,
        broker_events=broker_events, partitions=parts, topics=topics, brokers=brokers,
        ever_offline=ever_offline, ever_under_replicated=ever_urp, leader_changes=leader_changes,
        elections=elections, unclean=[r for r in elections if r["election"] == UNCLEAN],
        rejected=[r for r in audit if r.get("outcome") == "REJECTED"],
    )
    analysis.summary = summarise(analysis)
    return analysis


# -- the summary in plain words ---------------------------------------------------------------------------

Story = list[tuple[int, str]]  # (source_offset, sentence): the summary tells the log in its order


class _Clock:
    """Formats event times: HH:MM:SS when the whole log is one UTC day, else with the date."""

    def __init__(self, times: Iterable[datetime | None]) -> None:
        days = {t.date() for t in times if t is not None}
        self.one_day = len(days) <= 1

    def __call__(self, t: datetime | None, offset: int | None = None) -> str:
        if t is None:
            return f"offset {offset}" if offset is not None else "?"
        return t.strftime("%H:%M:%S" if self.one_day else "%Y-%m-%d %H:%M:%S")


def duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, s = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {s} s" if s else f"{minutes} min"
    hours, m = divmod(minutes, 60)
    return f"{hours} h {m} min"


def _and(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


class _Story:
    """What summarise needs about the log, indexed once."""

    def __init__(self, a: Analysis) -> None:
        self.a = a
        self.clock = _Clock(a.times.values())
        self.by_part: dict[Key, list[Mapping[str, Any]]] = defaultdict(list)
        self.rows_at: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
        self.cluster_rows: list[Mapping[str, Any]] = []
        for r in a.audit:
            if r.get("partition") is None:
                self.cluster_rows.append(r)
            else:
                self.by_part[key_of(r)].append(r)
                self.rows_at[r["source_offset"]].append(r)
        self.position = {id(r): i for rows in self.by_part.values() for i, r in enumerate(rows)}

    def at(self, offset: int) -> str:
        return self.clock(self.a.time_of(offset), offset)

    def after(self, row: Mapping[str, Any], accepts: Any) -> Mapping[str, Any] | None:
        """The partition's first accepted row after `row` that `accepts`."""
        rows = self.by_part[key_of(row)]
        return next((r for r in rows[self.position[id(row)] + 1:] if r.get("outcome") == "ACCEPTED" and accepts(r)),
                    None)

    def span(self, rows: Sequence[Mapping[str, Any]]) -> str:
        """'At T' or 'Between T1 and T2': when a run of rows happened."""
        first, last = self.at(rows[0]["source_offset"]), self.at(rows[-1]["source_offset"])
        return f"At {first}" if first == last else f"Between {first} and {last}"


def summarise(a: Analysis) -> list[str]:
    if not a.audit:
        return ["The audit table is empty: the log had no well-formed event."
                + (f" {plural(len(a.inputs.quarantine), 'record')} quarantined." if a.inputs.quarantine else "")]
    s = _Story(a)
    known = [t for t in a.times.values() if t is not None]
    offsets = sorted(a.times)
    span = ""
    if known:
        first, last = min(known), max(known)
        span = (f" from {first.strftime('%Y-%m-%d %H:%M:%S')} to {s.clock(last)} UTC"
                f" ({duration((last - first).total_seconds())})")
    lines = [
        f"Replayed {plural(a.events, 'event')} (offsets {offsets[0]} to {offsets[-1]}){span}: "
        f"{plural(len(s.by_part), 'partition')} in {plural(len(a.topics), 'topic')} on "
        f"{plural(len(a.brokers), 'broker')}; {plural(len(a.decisions), 'LeaderAndIsr decision')}, "
        f"{plural(len(a.rejected), 'rejected audit row')}, {plural(len(a.inputs.quarantine), 'quarantined record')}."]
    story: Story = []
    for part in (_broker_story, _topic_story, _controller_story, _fenced_story, _config_story, _isr_shrink_story,
                 _preferred_story, _reassignment_story):
        story.extend(part(s))
    lines.extend(text for _, text in sorted(story, key=lambda item: item[0]))
    lines.extend(_unclean_lines(s))
    lines.extend(_worst_lines(s))
    lines.extend(_rejection_lines(a))
    lines.extend(_quarantine_lines(a))
    lines.extend(_end_lines(a))
    return lines


def _isr_left(rows: Iterable[Mapping[str, Any]], broker: int) -> list[Mapping[str, Any]]:
    return [r for r in rows if broker in (r.get("isr_before") or []) and broker not in (r.get("isr_after") or [])
            and _int(r.get("leader_before")) != broker]


def _broker_story(s: _Story) -> Story:
    a = s.a
    out: Story = []
    registered: set[int] = set()
    events = list(a.broker_events)
    # Brokers registering before any partition exists: the cluster coming up.
    initial = [e for e in events if a.cluster_coming_up(e)]
    if initial:
        brokers = [str(e.broker) for e in initial]
        out.append((initial[0].offset, f"{plural(len(initial), 'broker')} ({', '.join(brokers)}) registered at "
                                       f"{s.at(initial[0].offset)}."))
        registered.update(e.broker for e in initial)
    used = {id(e) for e in initial}
    for n, e in enumerate(events):
        if id(e) in used:
            continue
        used.add(id(e))
        rows = s.rows_at.get(e.offset, [])
        when = s.at(e.offset)
        if e.change == "STARTUP" and e.broker not in registered:
            joined = [e]
            for x in events[n + 1:]:
                if x.change != "STARTUP" or x.broker in registered or s.rows_at.get(x.offset):
                    break
                joined.append(x)
                used.add(id(x))
            registered.update(x.broker for x in joined)
            who = _and([str(x.broker) for x in joined])
            out.append((e.offset, f"Broker{'s' if len(joined) > 1 else ''} {who} joined the cluster at "
                                  f"{_and([s.at(x.offset) for x in joined]) if len(joined) < 4 else when}."))
            continue
        registered.add(e.broker)
        if e.change == "CONTROLLED_SHUTDOWN":
            out.append((e.offset, _restart_text(s, e, events[n + 1:], used)))
        elif e.change == "FAILURE":
            out.append((e.offset, _failure_text(s, e)))
        else:
            elected = [r for r in rows if _int(r.get("leader_before")) == NO_LEADER
                       and _int(r.get("leader_after")) != NO_LEADER]
            text = f"Broker {e.broker} came back at {when} (epoch {e.epoch})"
            if elected:
                text += (f" and {plural(len(elected), 'offline partition')} elected a leader at once "
                         f"({names((key_of(r) for r in elected), 5)})")
            out.append((e.offset, text + _rejoin_text(s, e) + "."))
    return out


def _restart_text(s: _Story, e: BrokerEvent, later: Sequence[BrokerEvent], used: set[int]) -> str:
    """A controlled shutdown, folded with the stop and the restart that usually follow it."""
    rows = s.rows_at.get(e.offset, [])
    mine = [x for x in later if x.broker == e.broker]
    stop = mine[0] if mine and mine[0].change == "FAILURE" else None
    start = mine[1] if stop is not None and len(mine) > 1 and mine[1].change == "STARTUP" else None
    if not rows:
        text = f"Broker {e.broker}, hosting no partition, shut down at {s.at(e.offset)}"
    else:
        moved = [r for r in rows if _int(r.get("leader_before")) == e.broker
                 and _int(r.get("leader_after")) not in (e.broker, NO_LEADER)]
        kept = [r for r in rows if _int(r.get("leader_after")) == e.broker]
        shrunk = _isr_left(rows, e.broker)
        text = (f"Broker {e.broker} {'restarted' if start else 'shut down'}: its controlled shutdown at "
                f"{s.at(e.offset)} moved leadership of {plural(len(moved), 'partition')} to other replicas"
                + (f" ({len(kept)} stayed on it: no other live ISR member)" if kept else "")
                + f" and took it out of {plural(len(shrunk), 'more ISR', 'more ISRs')}")
    if stop is None:
        return text + "."
    used.add(id(stop))
    lost = [r for r in s.rows_at.get(stop.offset, []) if _int(r.get("leader_before")) == stop.broker]
    text += f"; it stopped at {s.at(stop.offset)}"
    if lost:
        text += f" still leading {plural(len(lost), 'partition')}"
    if start is None:
        return text + " and did not come back before the end of the log."
    used.add(id(start))
    return (text + f" and was back at {s.at(start.offset)} (epoch {start.epoch}, down "
            f"{_gap(stop.time, start.time)})" + _rejoin_text(s, start) + ".")


def _failure_text(s: _Story, e: BrokerEvent) -> str:
    a = s.a
    rows = s.rows_at.get(e.offset, [])
    lost = [r for r in rows if _int(r.get("leader_before")) == e.broker]
    followers = _isr_left(rows, e.broker)
    if not lost:
        return (f"Broker {e.broker} failed at {s.at(e.offset)}; it led no partition"
                + (f" and left {plural(len(followers), 'ISR')}." if followers else "."))
    startups = {x.offset: x for x in a.broker_events if x.change == "STARTUP"}
    same_second: list[Key] = []
    waited: dict[str, list[Key]] = defaultdict(list)
    for r in lost:
        key = key_of(r)
        if _int(r.get("leader_after")) != NO_LEADER:
            same_second.append(key)
            continue
        back = s.after(r, lambda x: _int(x.get("leader_after")) != NO_LEADER or x.get("to_state") == NON_EXISTENT)
        if back is None:
            waited["stayed offline to the end of the log"].append(key)
            continue
        back_time = a.time_of(back["source_offset"])
        if e.time is not None and back_time is not None and back_time - e.time < timedelta(seconds=1):
            same_second.append(key)
            continue
        waited[_recovery_reason(s, back, startups)].append(key)
    text = (f"Broker {e.broker} failed at {s.at(e.offset)}; {plural(len(lost), 'partition')} lost "
            f"{'its' if len(lost) == 1 else 'their'} leader; {len(same_second)} had a new leader in the same second")
    for reason, keys in sorted(waited.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        text += f"; {len(keys)} ({names(keys, 5)}) {reason}"
    if followers:
        text += f"; it also left {plural(len(followers), 'ISR')} as a follower"
    return text + "."


def _gap(start: datetime | None, end: datetime | None) -> str:
    if start is None or end is None:
        return "?"
    return duration((end - start).total_seconds())


def _recovery_reason(s: _Story, back: Mapping[str, Any], startups: Mapping[int, BrokerEvent]) -> str:
    when = s.at(back["source_offset"])
    if back.get("to_state") == NON_EXISTENT:
        return f"stayed offline until deleted at {when}"
    if back.get("election") == UNCLEAN:
        return f"stayed offline until an unclean election at {when} ({back['event_type']})"
    started = startups.get(back["source_offset"])
    if started is not None:
        return f"stayed offline until broker {started.broker} returned at {when}"
    return f"stayed offline until {back['event_type']} at {when}"


def _rejoin_text(s: _Story, start: BrokerEvent) -> str:
    """How the restarted broker's replicas came back into the ISRs, up to its next change."""
    nxt = min((e.offset for e in s.a.broker_events if e.broker == start.broker and e.offset > start.offset),
              default=None)
    rejoined: list[int] = []
    for rows in s.by_part.values():
        for r in rows:
            o = r["source_offset"]
            if o <= start.offset or (nxt is not None and o >= nxt):
                continue
            if start.broker not in (r.get("isr_before") or []) and start.broker in (r.get("isr_after") or []):
                rejoined.append(o)
                break
    if not rejoined:
        return ""
    return f"; its replicas rejoined {plural(len(rejoined), 'ISR')} by {s.at(max(rejoined))}"


def _controller_story(s: _Story) -> Story:
    out: Story = []
    for r in s.cluster_rows:
        if r.get("outcome") != "ACCEPTED":
            continue
        m = _FAILOVER.match(r.get("message") or "")
        if not m:
            continue
        who = f"controller {m.group(1)}" if m.group(1) else "a new controller (no ControllerChange in the log)"
        epoch = r.get("controller_epoch")
        rows = [x for x in s.rows_at.get(r["source_offset"], []) if x["event_type"] == r["event_type"]]
        changed = [x for x in rows if x.get("outcome") == "ACCEPTED"]
        out.append((r["source_offset"], f"At {s.at(r['source_offset'])} {who} took over at epoch {epoch} and "
                                        f"re-examined {plural(len(rows), 'partition')}"
                                        + (f": {len(changed)} changed." if changed else ": none needed a change.")))
    return out


def _topic_story(s: _Story) -> Story:
    """Topics created (consecutive creations in one sentence), partitions added, topics deleted."""
    out: Story = []
    created: list[tuple[int, str, int]] = []  # (offset, topic, partitions)

    def flush() -> None:
        if created:
            what = _and([f"{t} ({plural(n, 'partition')})" for _, t, n in created])
            out.append((created[0][0], f"Topic{'s' if len(created) > 1 else ''} {what} created at "
                                       f"{s.at(created[0][0])}."))
            created.clear()

    for offset in sorted(s.rows_at):
        rows = [r for r in s.rows_at[offset] if r.get("outcome") == "ACCEPTED"]
        kinds = {r["event_type"] for r in rows}
        if kinds == {"CreateTopic"}:
            created.append((offset, rows[0]["topic"], len(rows)))
            continue
        flush()
        if kinds == {"CreatePartitions"}:
            out.append((offset, f"At {s.at(offset)} {plural(len(rows), 'partition')} added to topic "
                                f"{rows[0]['topic']}."))
        elif kinds == {"DeleteTopic"}:
            topic = rows[0]["topic"]
            keys = {key_of(r) for r in rows}
            gone = [max(r["source_offset"] for r in s.by_part[k] if r.get("to_state") == NON_EXISTENT)
                    for k in keys if any(r.get("to_state") == NON_EXISTENT for r in s.by_part[k])]
            text = f"At {s.at(offset)} topic {topic} was deleted ({plural(len(keys), 'partition')})"
            if len(gone) < len(keys):
                text += f"; {len(keys) - len(gone)} still waiting at the end of the log for dead brokers to return"
            elif max(gone) > offset:
                text += f"; the deletion completed at {s.at(max(gone))}, once the dead brokers returned"
            out.append((offset, text + "."))
    flush()
    return out


def _fenced_story(s: _Story) -> Story:
    """Events a fenced (zombie) controller logged at an old epoch, in runs per (old, active) epoch."""
    runs: dict[tuple[int, int], list[Mapping[str, Any]]] = defaultdict(list)
    seen: set[int] = set()
    for r in s.a.rejected:
        m = _STALE_EPOCH.search(r.get("message") or "") if r.get("error") == "STALE_CONTROLLER_EPOCH" else None
        if m and r["source_offset"] not in seen:
            seen.add(r["source_offset"])
            runs[(int(m.group(1)), int(r["controller_epoch"]))].append(r)
    out: Story = []
    for (old, active), rows in sorted(runs.items()):
        kinds = ", ".join(k if n == 1 else f"{n} {k}" for k, n in Counter(r["event_type"] for r in rows).items())
        out.append((rows[0]["source_offset"], f"{s.span(rows)} a fenced controller still at epoch {old} (epoch "
                    f"{active} was active) logged {plural(len(rows), 'event')} ({kinds}): "
                    f"{'all' if len(rows) > 1 else 'it was'} rejected with STALE_CONTROLLER_EPOCH, nothing applied."))
    return out


def _config_story(s: _Story) -> Story:
    out: Story = []
    for r in s.cluster_rows:
        if r.get("event_type") != "AlterTopicConfig" or r.get("outcome") != "ACCEPTED":
            continue
        _, _, configs = (r.get("message") or "").partition("configs: ")
        settings = [c.replace("=None", " back to the cluster default") for c in configs.split(", ") if c]
        text = f"At {s.at(r['source_offset'])} topic {r.get('topic')} was reconfigured: {_and(settings) or '?'}"
        rows = s.rows_at.get(r["source_offset"], [])
        elected = [x for x in rows if x.get("election")]
        failed = [x for x in rows if x.get("outcome") == "REJECTED"]
        if elected:
            text += (f"; {plural(len(elected), 'offline partition')} elected a leader ("
                     + ", ".join(f"{pname(x['topic'], x['partition'])}: {x['election']}" for x in elected[:5]) + ")")
        if failed:
            text += (f"; {len(failed)} could not ({names(key_of(x) for x in failed)}: "
                     f"{failed[0].get('error')})")
        out.append((r["source_offset"], text + "."))
    return out


def _isr_shrink_story(s: _Story) -> Story:
    """Leaders dropping a follower from the ISR (IsrChange), in runs per broker."""
    removed: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    for rows in s.by_part.values():
        for r in rows:
            if r["event_type"] == "IsrChange" and r.get("outcome") == "ACCEPTED":
                # A replica a completed reassignment removed is no longer in replica_states: not a lagging one.
                still = (r.get("replica_states") or {}).keys()
                for b in set(r.get("isr_before") or []) - set(r.get("isr_after") or []):
                    if b in still:
                        removed[b].append(r)
    out: Story = []
    for broker, rows in sorted(removed.items()):
        rows = sorted(rows, key=lambda r: r["source_offset"])
        cuts = sorted(e.offset for e in s.a.broker_events if e.broker == broker)
        run: list[Mapping[str, Any]] = []

        def flush(run: list[Mapping[str, Any]], broker: int = broker) -> None:
            if not run:
                return
            out.append((run[0]["source_offset"], f"{s.span(run)} partition leaders dropped broker {broker} from "
                               f"{plural(len(run), 'ISR')} (IsrChange: the follower fell behind)."))

        for r in rows:
            if run and any(run[-1]["source_offset"] < c < r["source_offset"] for c in cuts):
                flush(run)
                run = []
            run.append(r)
        flush(run)
    return out


def _preferred_story(s: _Story) -> Story:
    by_event: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    for r in s.a.elections:
        if r["election"] == "PREFERRED":
            by_event[r["source_offset"]].append(r)
    out: Story = []
    for offset, rows in sorted(by_event.items()):
        kind = rows[0]["event_type"]
        what = ("the periodic leader imbalance check" if kind == "LeaderImbalanceCheck"
                else "a preferred leader election (ElectLeaders)" if kind == "ElectLeaders" else kind)
        gained = Counter(_int(r.get("leader_after")) for r in rows)
        out.append((offset, f"At {s.at(offset)} {what} moved {plural(len(rows), 'partition')} back to "
                            f"{'its' if len(rows) == 1 else 'their'} preferred leader ("
                            + ", ".join(f"{n} to broker {b}" for b, n in sorted(gained.items())) + ")."))
    return out


def reassignments(decisions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Reassignments seen in the decisions: started when adding/removing replicas appear, finished when they
    are gone again; cancelled when the replica set went back to the one it started from."""
    out: list[dict[str, Any]] = []
    open_: dict[Key, dict[str, Any]] = {}
    last_replicas: dict[Key, list[int]] = {}
    for d in decisions:
        key = (d["topic"], int(d["partition"]))
        adding, removing = d.get("adding_replicas") or [], d.get("removing_replicas") or []
        if adding or removing:
            target = [r for r in d["replicas"] if r not in removing]
            if key not in open_:
                origin = [r for r in d["replicas"] if r not in adding]
                open_[key] = {"partition": key, "from": last_replicas.get(key, origin), "target": target,
                              "started": d["source_offset"], "completed": None, "to": None, "cancelled": False}
            open_[key]["target"] = target
        elif key in open_:
            item = open_.pop(key)
            item.update(to=list(d["replicas"]), completed=d["source_offset"],
                        cancelled=set(d["replicas"]) == set(item["from"]))
            out.append(item)
        last_replicas[key] = list(d["replicas"])
    out.extend(open_.values())
    return sorted(out, key=lambda i: (i["started"], i["partition"]))


def _reassignment_story(s: _Story) -> Story:
    moves = reassignments(s.a.decisions)
    if not moves:
        return []
    done = [m for m in moves if m["completed"] is not None and not m["cancelled"]]
    cancelled = [m for m in moves if m["cancelled"]]
    pending = [m for m in moves if m["completed"] is None]
    moved_leaders = [r for r in s.a.elections if r["election"] == "REASSIGN"]
    text = f"{plural(len(moves), 'partition reassignment')} ran"
    if done:
        first, last = min(m["started"] for m in done), max(m["completed"] for m in done)
        sample = ", ".join(f"{pname(*m['partition'])} {m['from']} → {m['to']}" for m in done[:3])
        text += (f": {len(done)} completed between {s.at(first)} and {s.at(last)} ({sample}"
                 f"{', …' if len(done) > 3 else ''})")
        if moved_leaders:
            text += (f"; leadership moved to a new replica on {plural(len(moved_leaders), 'partition')} "
                     f"(REASSIGN elections)")
    if cancelled:
        text += f"; {len(cancelled)} cancelled ({names((m['partition'] for m in cancelled), 5)})"
    if pending:
        text += f"; {len(pending)} still in progress at the end ({names((m['partition'] for m in pending), 5)})"
    return [(moves[0]["started"], text + ".")]


def _unclean_lines(s: _Story) -> list[str]:
    a = s.a
    if not a.unclean:
        return []
    parts = [f"{pname(r['topic'], r['partition'])} at {s.at(r['source_offset'])} ({r['event_type']}: broker "
             f"{r['leader_after']} became leader with ISR {r.get('isr_after')}, the last ISR was {r.get('isr_before')})"
             for r in a.unclean]
    return [f"{plural(len(a.unclean), 'unclean election')} on " + "; ".join(parts)
            + ": data loss possible (the new leader was not in the ISR)."]


def _worst_lines(s: _Story) -> list[str]:
    a = s.a
    peak, at = a.offline_peak
    upeak, uat = a.under_replicated_peak
    parts = []
    if peak and at is not None:
        parts.append(f"{plural(peak, 'partition')} offline at once at {s.clock(at.time, at.offset)} "
                     f"({len(a.ever_offline)} offline at some point)")
    if upeak and uat is not None:
        parts.append(f"{upeak} under-replicated at {s.clock(uat.time, uat.offset)}")
    return ["At worst: " + "; ".join(parts) + "."] if parts else []


def _rejection_lines(a: Analysis) -> list[str]:
    if not a.rejected:
        return []
    return [f"{plural(len(a.rejected), 'audit row')} rejected: "
            + ", ".join(f"{n} {error}" for error, n in a.rejected_by_error().items()) + "."]


def _quarantine_lines(a: Analysis) -> list[str]:
    if not a.inputs.quarantine:
        return []
    q = sorted(a.inputs.quarantine, key=lambda r: r["source_offset"])
    reasons = Counter((r.get("error") or "unknown").split(":")[0] for r in q)
    offsets = ", ".join(str(r["source_offset"]) for r in q[:10]) + (" …" if len(q) > 10 else "")
    return [f"{plural(len(q), 'record')} could not be read and went to quarantine (offset{'s' if len(q) > 1 else ''} "
            f"{offsets}): " + ", ".join(f"{reason} ({n})" for reason, n in reasons.most_common(5)) + "."]


def _end_lines(a: Analysis) -> list[str]:
    end_offline = a.offline_at_end
    end_urp = a.under_replicated_at_end
    lines = []
    if end_offline:
        lines.append(f"At the end of the log {plural(len(end_offline), 'partition')} "
                     f"{'is' if len(end_offline) == 1 else 'are'} still offline: {names(end_offline)}.")
    else:
        lines.append(f"At the end of the log every partition ({len(a.partitions)}) has a leader.")
    if end_urp:
        lines.append(f"{plural(len(end_urp), 'partition')} {'is' if len(end_urp) == 1 else 'are'} still "
                     f"under-replicated: {names(end_urp)}.")
    return lines


# -- tables -------------------------------------------------------------------------------------------------

def _by(rows: Iterable[Mapping[str, Any]]) -> str:
    """' by P' for the principals who issued these rows' events (admin commands), else ''."""
    principals = sorted({r["principal"] for r in rows if r.get("principal")})
    return f" by {', '.join(principals)}" if principals else ""


def _recovered(s: _Story, unclean: Mapping[str, Any]) -> str:
    """How long the unclean leader stayed RECOVERING (leader_recovery_state_after)."""
    if unclean.get("leader_recovery_state_after") != "RECOVERING":
        return ""
    done = s.after(unclean, lambda r: r.get("leader_recovery_state_after") != "RECOVERING")
    return " (still RECOVERING at the end)" if done is None else f" (RECOVERING until {s.at(done['source_offset'])})"


def unclean_table(s: _Story) -> list[dict[str, Any]]:
    return [{"time": s.at(r["source_offset"]), "offset": r["source_offset"],
             "event": f"{r['event_type']} {r['event_id']}{_by([r])}", "partition": pname(r["topic"], r["partition"]),
             "leader": f"{r.get('leader_before')} → {r.get('leader_after')}{_recovered(s, r)}",
             "isr": f"{r.get('isr_before')} → {r.get('isr_after')}",
             "leader_epoch": f"{r.get('leader_epoch_before')} → {r.get('leader_epoch_after')}"} for r in s.a.unclean]


def rejection_table(s: _Story) -> list[dict[str, Any]]:
    a = s.a
    by_error: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in a.rejected:
        by_error[r.get("error") or "(none)"].append(r)
    out = []
    for error, rows in sorted(by_error.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        first = rows[0]
        out.append({"error": error, "rows": len(rows), "events": len({r["source_offset"] for r in rows}),
                    "types": ", ".join(f"{t} ({n}{_by(x for x in rows if x['event_type'] == t)})"
                                       for t, n in Counter(r["event_type"] for r in rows).most_common()),
                    "first": f"{s.at(first['source_offset'])} "
                             f"(offset {first['source_offset']})",
                    "where": "cluster" if first.get("partition") is None else pname(first["topic"], first["partition"]),
                    "message": first.get("message") or ""})
    return out


def leader_change_table(a: Analysis, limit: int = 15) -> list[dict[str, Any]]:
    changes = Counter(key_of(r) for r in a.leader_changes)
    elections: dict[Key, Counter[str]] = defaultdict(Counter)
    for r in a.elections:
        elections[key_of(r)][r["election"]] += 1
    offline: Counter[Key] = Counter()
    for r in a.audit:
        if (r.get("partition") is not None and r.get("outcome") == "ACCEPTED"
                and _int(r.get("leader_after")) == NO_LEADER and _int(r.get("leader_before")) != NO_LEADER):
            offline[key_of(r)] += 1
    out = []
    for key, n in sorted(changes.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]:
        p = a.partitions.get(key)
        out.append({"partition": pname(*key), "changes": n, "offline": offline[key],
                    "elections": ", ".join(f"{e} {c}" for e, c in sorted(elections[key].items(),
                                                                        key=lambda ec: ELECTION_ORDER.index(ec[0])
                                                                        if ec[0] in ELECTION_ORDER else 99)),
                    "leader": "deleted" if p is None else p.leader,
                    "isr": "" if p is None else list(p.isr)})
    return out


def quarantine_table(a: Analysis) -> list[dict[str, Any]]:
    out = []
    for q in sorted(a.inputs.quarantine, key=lambda r: r["source_offset"])[:TABLE_LIMIT]:
        raw = q.get("raw")
        text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes | bytearray) else str(raw or "")
        out.append({"offset": q["source_offset"], "source": q.get("source") or "", "error": q.get("error") or "",
                    "raw": text if len(text) <= 160 else text[:160] + "…"})
    return out


def broker_table(a: Analysis) -> list[dict[str, Any]]:
    last = a.points[-1].leaders if a.points else {}
    peak: Counter[int] = Counter()
    for p in a.points:
        for b, n in p.leaders.items():
            peak[b] = max(peak[b], n)
    changes = Counter((e.broker, e.change) for e in a.broker_events)
    gained = Counter(_int(r.get("leader_after")) for r in a.leader_changes)
    lost = Counter(_int(r.get("leader_before")) for r in a.audit
                   if r.get("partition") is not None and r.get("outcome") == "ACCEPTED"
                   and _int(r.get("leader_before")) != _int(r.get("leader_after")))
    return [{"broker": b, "failures": changes[(b, "FAILURE")], "shutdowns": changes[(b, "CONTROLLED_SHUTDOWN")],
             "startups": changes[(b, "STARTUP")], "gained": gained[b], "lost": lost[b], "peak": peak[b],
             "end": last.get(b, 0)} for b in sorted(a.brokers)]


# -- plots --------------------------------------------------------------------------------------------------

def _png(fig: Any) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, metadata={"Software": None})
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _figure(rows: int = 1, height: float = 3.0) -> tuple[Any, Any]:
    """A figure with `rows` stacked axes sharing x; fixed margins (a layout engine would draw it twice) with
    room on the right for legends."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12.0, height * rows))
    axes = fig.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]
    inch = 1 / (height * rows)
    fig.subplots_adjust(left=0.065, right=0.845, top=1 - 0.38 * inch, bottom=0.55 * inch, hspace=0.45 * rows / 2)
    return fig, axes


def _x(a: Analysis) -> tuple[list[Any], bool]:
    """The x values of the points: times when the log has them, else offsets."""
    if a.points and all(p.time is not None for p in a.points):
        return [p.time for p in a.points], True
    return [p.offset for p in a.points], False


def _style_axis(ax: Any, use_time: bool, span_s: float, bottom: bool, top: int | None = None) -> None:
    import matplotlib.dates as mdates
    from matplotlib.ticker import MaxNLocator

    if use_time:
        fmt = "%H:%M:%S" if span_s < 6 * 3600 else "%m-%d %H:%M"
        ax.xaxis.set_major_locator(mdates.AutoDateLocator(minticks=4, maxticks=10))
        ax.xaxis.set_major_formatter(mdates.DateFormatter(fmt, tz=UTC))
    if bottom:
        ax.set_xlabel("event time (UTC)" if use_time else "log offset")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
    ax.set_ylim(0, max(1.0, (top or 0) * 1.08))
    ax.grid(True, alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)


def _legend(ax: Any, handles: Sequence[Any] | None = None) -> None:
    kwargs: dict[str, Any] = {} if handles is None else {"handles": handles}
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8.5, frameon=False, borderaxespad=0.0, **kwargs)


def _span(xs: Sequence[Any], use_time: bool) -> float:
    if len(xs) < 2:
        return 0.0
    return (xs[-1] - xs[0]).total_seconds() if use_time else float(xs[-1] - xs[0])


def _marked_broker_events(a: Analysis) -> list[BrokerEvent]:
    """Broker events worth a marker: not the cluster coming up (startups before any partition exists)."""
    return [e for e in a.broker_events if not a.cluster_coming_up(e)]


def _broker_markers(ax: Any, a: Analysis, use_time: bool, label: bool, span_s: float) -> None:
    events = _marked_broker_events(a)
    if len(events) > 60:
        return
    last_label: Any = None
    for e in events:
        x = e.time if use_time else e.offset
        if x is None:
            continue
        color, style, word = BROKER_EVENT_STYLE[e.change]
        ax.axvline(x, color=color, linestyle=style, linewidth=1, alpha=0.8)
        # One label per cluster of close markers (a shutdown and the stop seconds later).
        close = last_label is not None and ((x - last_label).total_seconds() if use_time else x - last_label) \
            < 0.012 * max(span_s, 1.0)
        if label and not close:
            ax.annotate(f"b{e.broker} {word}", xy=(x, 1), xycoords=("data", "axes fraction"), rotation=90,
                        fontsize=7, color=color, va="top", ha="right", xytext=(-1, 0), textcoords="offset points")
            last_label = x


def _broker_event_handles(a: Analysis) -> list[Any]:
    from matplotlib.lines import Line2D

    changes = {e.change for e in _marked_broker_events(a)}
    return [Line2D([], [], color=c, linestyle=s, label=f"broker {w}") for ch, (c, s, w) in
            BROKER_EVENT_STYLE.items() if ch in changes]


def _step(ax: Any, xs: Sequence[Any], ys: Sequence[int], color: str, label: str) -> Any:
    (line,) = ax.step(xs, ys, where="post", color=color, linewidth=1.8, label=label)
    ax.fill_between(xs, ys, step="post", color=color, alpha=0.15)
    return line


def _bucket(span_s: float, use_time: bool) -> float:
    """A round bucket width giving at most ~60 bars over the span (seconds, or offsets)."""
    widths = ((1, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400) if use_time else
              (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 50000, 100000))
    for width in widths:
        if span_s / width <= 60:
            return width
    return span_s / 60


def _bucketed(a: Analysis, rows: Iterable[Mapping[str, Any]], category: Any, use_time: bool
              ) -> tuple[list[Any], dict[Any, list[int]], float]:
    xs, _ = _x(a)
    span_s = max(_span(xs, use_time), 1.0)
    width = _bucket(span_s, use_time)
    origin = xs[0] if xs else 0
    counts: dict[Any, Counter[int]] = defaultdict(Counter)
    for r in rows:
        x = a.time_of(r["source_offset"]) if use_time else r["source_offset"]
        if x is None:
            continue
        pos = (x - origin).total_seconds() if use_time else x - origin
        counts[category(r)][int(pos // width)] += 1
    n = int(span_s // width) + 1
    starts = [origin + (timedelta(seconds=i * width) if use_time else i * width) for i in range(n)]
    return starts, {c: [cnt[i] for i in range(n)] for c, cnt in counts.items()}, width


def _bars(ax: Any, starts: list[Any], series: Mapping[Any, list[int]], width: float, use_time: bool,
          colors: Mapping[Any, str], order: Sequence[Any], label_fmt: str) -> int:
    """Stacked bars; returns the tallest stack."""
    bottom = [0] * len(starts)
    bar_width = width / 86400 * 0.85 if use_time else width * 0.85
    for key in order:
        if key not in series:
            continue
        values = series[key]
        shown = [i for i, v in enumerate(values) if v]  # an empty bucket is no patch to draw
        ax.bar([starts[i] for i in shown], [values[i] for i in shown], width=bar_width,
               bottom=[bottom[i] for i in shown], align="edge", color=colors.get(key),
               label=label_fmt.format(key, sum(values)), linewidth=0)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    return max(bottom, default=0)


def _bucket_words(width: float, use_time: bool) -> str:
    return duration(width) if use_time else f"{width:g} offsets"


def plot_health(a: Analysis) -> str:
    xs, use_time = _x(a)
    span_s = _span(xs, use_time)
    fig, (ax1, ax2) = _figure(2, 2.5)
    offline = [p.offline for p in a.points]
    urp = [p.under_replicated for p in a.points]
    _step(ax1, xs, offline, "#c62828", "offline")
    ax1.set_ylabel("offline")
    ax1.set_title("Offline partitions (no leader), after each event", loc="left", fontsize=11)
    _step(ax2, xs, urp, "#ef6c00", "under-replicated")
    ax2.set_ylabel("under-replicated")
    ax2.set_title("Under-replicated partitions (ISR smaller than the replica set)", loc="left", fontsize=11)
    for ax, values in ((ax1, offline), (ax2, urp)):
        _broker_markers(ax, a, use_time, label=ax is ax1, span_s=span_s)
        _style_axis(ax, use_time, span_s, bottom=ax is ax2, top=max(values, default=0))
    handles = _broker_event_handles(a)
    if handles:
        _legend(ax1, handles)
    return _png(fig)


def plot_leaders(a: Analysis) -> str:
    import matplotlib as mpl

    xs, use_time = _x(a)
    span_s = _span(xs, use_time)
    fig, (ax1, ax2) = _figure(2, 2.7)
    brokers = sorted(a.brokers)
    cmap = mpl.colormaps["tab10"]
    colors = {b: mpl.colors.to_hex(cmap(i % 10)) for i, b in enumerate(brokers)}
    starts, series, width = _bucketed(a, a.leader_changes, lambda r: _int(r.get("leader_after")), use_time)
    tallest = _bars(ax1, starts, series, width, use_time, colors, brokers, "broker {} ({})")
    ax1.set_ylabel("leader changes")
    ax1.set_title(f"Leader changes, by the broker that became leader (per {_bucket_words(width, use_time)})",
                  loc="left", fontsize=11)
    if series:
        _legend(ax1)
    else:
        ax1.text(0.5, 0.5, "no leader change", transform=ax1.transAxes, ha="center", color="#777")
    most = 0
    for b in brokers:
        values = [p.leaders.get(b, 0) for p in a.points]
        most = max(most, *values) if values else most
        ax2.step(xs, values, where="post", color=colors[b], linewidth=1.6, label=f"broker {b}")
    ax2.set_ylabel("partitions led")
    ax2.set_title("Partitions led per broker, after each event", loc="left", fontsize=11)
    if brokers:
        _legend(ax2)
    _style_axis(ax1, use_time, span_s, bottom=False, top=tallest)
    _style_axis(ax2, use_time, span_s, bottom=True, top=most)
    return _png(fig)


def plot_elections(a: Analysis) -> str:
    xs, use_time = _x(a)
    span_s = _span(xs, use_time)
    fig, (ax,) = _figure(1, 3.0)
    starts, series, width = _bucketed(a, a.elections, lambda r: r["election"], use_time)
    order = [e for e in ELECTION_ORDER if e in series] + sorted(set(series) - set(ELECTION_ORDER))
    tallest = _bars(ax, starts, series, width, use_time, ELECTION_COLORS, order, "{} ({})")
    ax.set_ylabel("elections")
    ax.set_title(f"Elections by strategy (per {_bucket_words(width, use_time)})", loc="left", fontsize=11)
    if series:
        _legend(ax)
    else:
        ax.text(0.5, 0.5, "no election", transform=ax.transAxes, ha="center", color="#777")
    _style_axis(ax, use_time, span_s, bottom=True, top=tallest)
    return _png(fig)


# -- the page -----------------------------------------------------------------------------------------------

def build_context(a: Analysis) -> dict[str, Any]:
    s = _Story(a)
    peak, at = a.offline_peak
    upeak, _ = a.under_replicated_peak
    rejected = rejection_table(s)
    return {
        "source": a.inputs.source,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "summary": a.summary,
        "cards": [
            ("events", a.events), ("partitions", len({(r["topic"], r["partition"]) for r in a.audit
                                                   if r.get("partition") is not None})),
            ("decisions", len(a.decisions)), ("went offline", len(a.ever_offline)),
            ("offline at peak", peak), ("under-replicated at peak", upeak),
            ("unclean elections", len(a.unclean)), ("leader changes", len(a.leader_changes)),
            ("rejected rows", len(a.rejected)), ("quarantined", len(a.inputs.quarantine)),
        ],
        "alert": bool(a.unclean or a.offline_at_end),
        "plots": [
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
        ],
        "unclean": unclean_table(s),
        "rejected": rejected,
        "rejected_total": sum(r["rows"] for r in rejected),
        "leader_changes": leader_change_table(a),
        "leader_changes_total": len({key_of(r) for r in a.leader_changes}),
        "quarantine": quarantine_table(a),
        "quarantine_total": len(a.inputs.quarantine),
        "brokers": broker_table(a),
        "offline_peak_time": s.clock(at.time, at.offset) if at is not None and peak else None,
    }


def render(a: Analysis) -> str:
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["html"]),
                      trim_blocks=True, lstrip_blocks=True)
    return env.get_template("report.html").render(**build_context(a))


def build_report(out_dir: Path) -> Analysis:
    """The report's analysis of a replay output folder (what write_report renders)."""
    return analyse(read_inputs(out_dir))


def write_report(out_dir: Path) -> Path:
    """Write `out_dir/report.html` from the replay outputs in `out_dir`; returns its path."""
    out_dir = Path(out_dir)
    html = render(build_report(out_dir))
    section = agreement_section(out_dir)
    if section is not None:  # a replay of a KRaft metadata log
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
