"""The summary's sentences about brokers: the cluster coming up, restarts, failures and what they cost."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from schemas.events import (
    BrokerChangeKind,
)
from statemachine.elections import Election
from statemachine.record import NO_LEADER
from streaming.analysis.timeline import NON_EXISTENT, BrokerEvent, Index, Story, as_int, key_of
from streaming.analysis.words import Key, and_list, gap, names, plural


def _isr_left(rows: Iterable[Mapping[str, Any]], broker: int) -> list[Mapping[str, Any]]:
    return [r for r in rows if broker in (r.get("isr_before") or []) and broker not in (r.get("isr_after") or [])
            and as_int(r.get("leader_before")) != broker]


def broker_story(s: Index) -> Story:
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
        if e.change is BrokerChangeKind.STARTUP and e.broker not in registered:
            joined = [e]
            for x in events[n + 1:]:
                if x.change is not BrokerChangeKind.STARTUP or x.broker in registered or s.rows_at.get(x.offset):
                    break
                joined.append(x)
                used.add(id(x))
            registered.update(x.broker for x in joined)
            who = and_list([str(x.broker) for x in joined])
            out.append((e.offset, f"Broker{'s' if len(joined) > 1 else ''} {who} joined the cluster at "
                                  f"{and_list([s.at(x.offset) for x in joined]) if len(joined) < 4 else when}."))
            continue
        registered.add(e.broker)
        if e.change is BrokerChangeKind.CONTROLLED_SHUTDOWN:
            out.append((e.offset, _restart_text(s, e, events[n + 1:], used)))
        elif e.change is BrokerChangeKind.FAILURE:
            out.append((e.offset, _failure_text(s, e)))
        else:
            elected = [r for r in rows if as_int(r.get("leader_before")) == NO_LEADER
                       and as_int(r.get("leader_after")) != NO_LEADER]
            text = f"Broker {e.broker} came back at {when} (epoch {e.epoch})"
            if elected:
                text += (f" and {plural(len(elected), 'offline partition')} elected a leader at once "
                         f"({names((key_of(r) for r in elected), 5)})")
            out.append((e.offset, text + _rejoin_text(s, e) + "."))
    return out


def _restart_text(s: Index, e: BrokerEvent, later: Sequence[BrokerEvent], used: set[int]) -> str:
    """A controlled shutdown, folded with the stop and the restart that usually follow it."""
    rows = s.rows_at.get(e.offset, [])
    mine = [x for x in later if x.broker == e.broker]
    stop = mine[0] if mine and mine[0].change is BrokerChangeKind.FAILURE else None
    start = mine[1] if stop is not None and len(mine) > 1 and mine[1].change is BrokerChangeKind.STARTUP else None
    if not rows:
        text = f"Broker {e.broker}, hosting no partition, shut down at {s.at(e.offset)}"
    else:
        moved = [r for r in rows if as_int(r.get("leader_before")) == e.broker
                 and as_int(r.get("leader_after")) not in (e.broker, NO_LEADER)]
        kept = [r for r in rows if as_int(r.get("leader_after")) == e.broker]
        shrunk = _isr_left(rows, e.broker)
        text = (f"Broker {e.broker} {'restarted' if start else 'shut down'}: its controlled shutdown at "
                f"{s.at(e.offset)} moved leadership of {plural(len(moved), 'partition')} to other replicas"
                + (f" ({len(kept)} stayed on it: no other live ISR member)" if kept else "")
                + f" and took it out of {plural(len(shrunk), 'more ISR', 'more ISRs')}")
    if stop is None:
        return text + "."
    used.add(id(stop))
    lost = [r for r in s.rows_at.get(stop.offset, []) if as_int(r.get("leader_before")) == stop.broker]
    text += f"; it stopped at {s.at(stop.offset)}"
    if lost:
        text += f" still leading {plural(len(lost), 'partition')}"
    if start is None:
        return text + " and did not come back before the end of the log."
    used.add(id(start))
    return (text + f" and was back at {s.at(start.offset)} (epoch {start.epoch}, down "
            f"{gap(stop.time, start.time)})" + _rejoin_text(s, start) + ".")


def _failure_text(s: Index, e: BrokerEvent) -> str:
    a = s.a
    rows = s.rows_at.get(e.offset, [])
    lost = [r for r in rows if as_int(r.get("leader_before")) == e.broker]
    followers = _isr_left(rows, e.broker)
    if not lost:
        return (f"Broker {e.broker} failed at {s.at(e.offset)}; it led no partition"
                + (f" and left {plural(len(followers), 'ISR')}." if followers else "."))
    startups = {x.offset: x for x in a.broker_events if x.change is BrokerChangeKind.STARTUP}
    same_second: list[Key] = []
    waited: dict[str, list[Key]] = defaultdict(list)
    for r in lost:
        key = key_of(r)
        if as_int(r.get("leader_after")) != NO_LEADER:
            same_second.append(key)
            continue
        back = s.after(r, lambda x: as_int(x.get("leader_after")) != NO_LEADER or x.get("to_state") == NON_EXISTENT)
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


def _recovery_reason(s: Index, back: Mapping[str, Any], startups: Mapping[int, BrokerEvent]) -> str:
    when = s.at(back["source_offset"])
    if back.get("to_state") == NON_EXISTENT:
        return f"stayed offline until deleted at {when}"
    if back.get("election") == Election.OFFLINE_UNCLEAN:
        return f"stayed offline until an unclean election at {when} ({back['event_type']})"
    started = startups.get(back["source_offset"])
    if started is not None:
        return f"stayed offline until broker {started.broker} returned at {when}"
    return f"stayed offline until {back['event_type']} at {when}"


def _rejoin_text(s: Index, start: BrokerEvent) -> str:
    """How the restarted broker's replicas came back into the ISRs, up to its next change. A partition created after
    it came back, with it in the ISR from the start, is none it rejoined."""
    nxt = min((e.offset for e in s.a.broker_events if e.broker == start.broker and e.offset > start.offset),
              default=None)
    rejoined: list[int] = []
    for rows in s.by_part.values():
        for r in rows:
            o = r["source_offset"]
            if o <= start.offset or (nxt is not None and o >= nxt):
                continue
            if r.get("from_state") == NON_EXISTENT:
                break
            if start.broker not in (r.get("isr_before") or []) and start.broker in (r.get("isr_after") or []):
                rejoined.append(o)
                break
    if not rejoined:
        return ""
    return f"; its replicas rejoined {plural(len(rejoined), 'ISR')} by {s.at(max(rejoined))}"


