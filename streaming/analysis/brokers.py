"""The summary's sentences about brokers: the cluster coming up, restarts, failures and what they cost, from each
broker change's facts (streaming.analysis.facts.BrokerFacts)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from schemas.events import (
    BrokerChangeKind,
)
from streaming.analysis.facts import BrokerFacts, Named
from streaming.analysis.timeline import BrokerEvent, Index, Story
from streaming.analysis.words import and_list, gap, plural


def _facts(s: Index, e: BrokerEvent) -> BrokerFacts:
    return s.a.facts.brokers[(e.offset, e.broker)]


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
        facts = _facts(s, e)
        when = s.at(e.offset)
        if e.change is BrokerChangeKind.STARTUP and e.broker not in registered:
            joined = [e]
            for x in events[n + 1:]:
                if x.change is not BrokerChangeKind.STARTUP or x.broker in registered or _facts(s, x).has_rows:
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
            text = f"Broker {e.broker} came back at {when} (epoch {e.epoch})"
            if facts.elected.n:
                text += (f" and {plural(facts.elected.n, 'offline partition')} elected a leader at once "
                         f"({facts.elected.names()})")
            out.append((e.offset, text + _rejoin_text(s, e) + "."))
    return out


def _restart_text(s: Index, e: BrokerEvent, later: Sequence[BrokerEvent], used: set[int]) -> str:
    """A controlled shutdown, folded with the stop and the restart that usually follow it."""
    facts = _facts(s, e)
    mine = [x for x in later if x.broker == e.broker]
    stop = mine[0] if mine and mine[0].change is BrokerChangeKind.FAILURE else None
    start = mine[1] if stop is not None and len(mine) > 1 and mine[1].change is BrokerChangeKind.STARTUP else None
    if not facts.has_rows:
        text = f"Broker {e.broker}, hosting no partition, shut down at {s.at(e.offset)}"
    else:
        text = (f"Broker {e.broker} {'restarted' if start else 'shut down'}: its controlled shutdown at "
                f"{s.at(e.offset)} moved leadership of {plural(facts.moved, 'partition')} to other replicas"
                + (f" ({facts.kept} stayed on it: no other live ISR member)" if facts.kept else "")
                + f" and took it out of {plural(facts.isr_left, 'more ISR', 'more ISRs')}")
    if stop is None:
        return text + "."
    used.add(id(stop))
    lost = _facts(s, stop).lost
    text += f"; it stopped at {s.at(stop.offset)}"
    if lost:
        text += f" still leading {plural(lost, 'partition')}"
    if start is None:
        return text + " and did not come back before the end of the log."
    used.add(id(start))
    return (text + f" and was back at {s.at(start.offset)} (epoch {start.epoch}, down "
            f"{gap(stop.time, start.time)})" + _rejoin_text(s, start) + ".")


def _failure_text(s: Index, e: BrokerEvent) -> str:
    facts = _facts(s, e)
    if not facts.lost:
        return (f"Broker {e.broker} failed at {s.at(e.offset)}; it led no partition"
                + (f" and left {plural(facts.isr_left, 'ISR')}." if facts.isr_left else "."))
    startups = {x.offset: x for x in s.a.broker_events if x.change is BrokerChangeKind.STARTUP}
    waited: dict[str, Named] = defaultdict(Named)
    for (offset, deleted, unclean, event_type), keys in facts.waited.items():
        waited[_recovery_reason(s, offset, deleted, unclean, event_type, startups)].merge(keys)
    if facts.stayed_offline.n:
        waited["stayed offline to the end of the log"].merge(facts.stayed_offline)
    text = (f"Broker {e.broker} failed at {s.at(e.offset)}; {plural(facts.lost, 'partition')} lost "
            f"{'its' if facts.lost == 1 else 'their'} leader; {facts.same_second} had a new leader in the same second")
    for reason, keys in sorted(waited.items(), key=lambda kv: (-kv[1].n, kv[0])):
        text += f"; {keys.n} ({keys.names()}) {reason}"
    if facts.isr_left:
        text += f"; it also left {plural(facts.isr_left, 'ISR')} as a follower"
    return text + "."


def _recovery_reason(s: Index, offset: int, deleted: bool, unclean: bool, event_type: str,
                     startups: Mapping[int, BrokerEvent]) -> str:
    when = s.at(offset)
    if deleted:
        return f"stayed offline until deleted at {when}"
    if unclean:
        return f"stayed offline until an unclean election at {when} ({event_type})"
    started = startups.get(offset)
    if started is not None:
        return f"stayed offline until broker {started.broker} returned at {when}"
    return f"stayed offline until {event_type} at {when}"


def _rejoin_text(s: Index, start: BrokerEvent) -> str:
    """How the restarted broker's replicas came back into the ISRs, up to its next change. A partition created after
    it came back, with it in the ISR from the start, is none it rejoined."""
    facts = _facts(s, start)
    if not facts.rejoined:
        return ""
    return f"; its replicas rejoined {plural(facts.rejoined, 'ISR')} by {s.at(facts.rejoined_by)}"
