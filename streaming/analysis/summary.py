"""The report's summary in plain words, computed from the timeline: the log told in its order, then the worst
moments, rejections, quarantine and the state at the end."""

from __future__ import annotations

from collections import Counter

from schemas.events import (
    ElectLeaders,
    LeaderImbalanceCheck,
)
from streaming.analysis.brokers import broker_story
from streaming.analysis.timeline import Analysis, Index, Story, reassignments
from streaming.analysis.words import and_list, duration, names, plural, pname

# -- the summary in plain words ---------------------------------------------------------------------------


def summarise(a: Analysis) -> list[str]:
    f = a.facts
    if not f.rows:
        return ["The audit table is empty: the log had no well-formed event."
                + (f" {plural(len(a.inputs.quarantine), 'record')} quarantined." if a.inputs.quarantine else "")]
    s = a.index
    known = [t for t in a.times.values() if t is not None]
    offsets = sorted(a.times)
    span = ""
    if known:
        first, last = min(known), max(known)
        span = (f" from {first.strftime('%Y-%m-%d %H:%M:%S')} to {s.clock(last)} UTC"
                f" ({duration((last - first).total_seconds())})")
    lines = [
        f"Replayed {plural(a.events, 'event')} (offsets {offsets[0]} to {offsets[-1]}){span}: "
        f"{plural(len(f.keys), 'partition')} in {plural(len(a.topics), 'topic')} on "
        f"{plural(len(a.brokers), 'broker')}; {plural(a.inputs.decision_count, 'LeaderAndIsr decision')}, "
        f"{plural(f.rejected, 'rejected audit row')}, {plural(len(a.inputs.quarantine), 'quarantined record')}."]
    lines[:0] = [f"WARNING at {s.at(offset)}: {message.split('WARNING: ', 1)[1]}." for offset, message in f.warnings]
    story: Story = []
    for part in (broker_story, _topic_story, _controller_story, _fenced_story, _config_story, _isr_shrink_story,
                 _preferred_story, _reassignment_story, _log_dir_story):
        story.extend(part(s))
    lines.extend(text for _, text in sorted(story, key=lambda item: item[0]))
    lines.extend(_unclean_lines(s))
    lines.extend(_worst_lines(s))
    lines.extend(_rejection_lines(a))
    lines.extend(_quarantine_lines(a))
    lines.extend(_end_lines(a))
    return lines


def _log_dir_story(s: Index) -> Story:
    """KIP-858: log dirs that went offline (the controller's words), and the brokers' directory assignments in one
    sentence."""
    f = s.a.facts
    out: Story = [(offset, f"At {s.at(offset)} {message}.") for offset, message in f.log_dirs_offline]
    if f.assigned:
        first, last, n = f.assigned
        brokers = sorted(f.assigned_brokers)
        out.append((first, f"{s.span(first, last)} broker{'s' if len(brokers) > 1 else ''} "
                           f"{and_list(map(str, brokers))} placed {plural(n, 'replica')} in their log dirs "
                           f"(AssignReplicasToDirs: each a new partition epoch, no leader or ISR change)."))
    return out


def _controller_story(s: Index) -> Story:
    out: Story = []
    for offset, controller, epoch, rows, changed in s.a.facts.failovers:
        who = (f"controller {controller}" if controller is not None
               else "a new controller (no ControllerChange in the log)")
        out.append((offset, f"At {s.at(offset)} {who} took over at epoch {epoch} and "
                            f"re-examined {plural(rows, 'partition')}"
                            + (f": {changed} changed." if changed else ": none needed a change.")))
    return out


def _topic_story(s: Index) -> Story:
    """Topics created (consecutive creations in one sentence), partitions added, topics deleted."""
    out: Story = []
    created: list[tuple[int, str, int]] = []  # (offset, topic, partitions)

    def flush() -> None:
        if created:
            what = and_list([f"{t} ({plural(n, 'partition')})" for _, t, n in created])
            out.append((created[0][0], f"Topic{'s' if len(created) > 1 else ''} {what} created at "
                                       f"{s.at(created[0][0])}."))
            created.clear()

    gone_at = s.a.facts.gone_at
    for kind, *op in s.a.facts.topic_ops:
        if kind == "create":
            created.append((op[0], op[1], op[2]))
            continue
        flush()
        if kind == "partitions":
            offset, topic, n = op
            out.append((offset, f"At {s.at(offset)} {plural(n, 'partition')} added to topic {topic}."))
        elif kind == "delete":
            offset, topic, keys = op
            gone = [gone_at[k] for k in keys if k in gone_at]
            text = f"At {s.at(offset)} topic {topic} was deleted ({plural(len(keys), 'partition')})"
            if len(gone) < len(keys):
                text += f"; {len(keys) - len(gone)} still waiting at the end of the log for dead brokers to return"
            elif max(gone) > offset:
                text += f"; the deletion completed at {s.at(max(gone))}, once the dead brokers returned"
            out.append((offset, text + "."))
    flush()
    return out


def _fenced_story(s: Index) -> Story:
    """Events a fenced (zombie) controller logged at an old epoch, in runs per (old, active) epoch."""
    out: Story = []
    for (old, active), run in sorted(s.a.facts.fenced.items()):
        n = sum(run.types.values())
        kinds = ", ".join(k if c == 1 else f"{c} {k}" for k, c in run.types.items())
        out.append((run.first, f"{s.span(run.first, run.last)} a fenced controller still at epoch {old} (epoch "
                    f"{active} was active) logged {plural(n, 'event')} ({kinds}): "
                    f"{'all' if n > 1 else 'it was'} rejected with STALE_CONTROLLER_EPOCH, nothing applied."))
    return out


def _config_story(s: Index) -> Story:
    out: Story = []
    for c in s.a.facts.configs:
        settings = [f"{name}={value}" if value is not None else f"{name} back to the cluster default"
                    for name, value in sorted((c["configs"] or {}).items())]
        text = f"At {s.at(c['offset'])} topic {c['topic']} was reconfigured: {and_list(settings) or '?'}"
        if c["elected"]:
            text += (f"; {plural(c['elected'], 'offline partition')} elected a leader ("
                     + ", ".join(f"{pname(t, p)}: {e}" for t, p, e in c["shown"]) + ")")
        if c["failed"]:
            text += f"; {len(c['failed'])} could not ({names(c['failed'])}: {c['error']})"
        out.append((c["offset"], text + "."))
    return out


def _isr_shrink_story(s: Index) -> Story:
    """Leaders dropping a follower from the ISR (IsrChange), in runs per broker."""
    return [(first, f"{s.span(first, last)} partition leaders dropped broker {broker} from {plural(n, 'ISR')} "
                    f"(IsrChange: the follower fell behind).")
            for broker, runs in sorted(s.a.facts.shrinks.items()) for first, last, n in runs]


def _preferred_story(s: Index) -> Story:
    out: Story = []
    for offset, kind, n, gained in s.a.facts.preferred:
        what = ("the periodic leader imbalance check" if kind == LeaderImbalanceCheck.type
                else "a preferred leader election (ElectLeaders)" if kind == ElectLeaders.type else kind)
        out.append((offset, f"At {s.at(offset)} {what} moved {plural(n, 'partition')} back to "
                            f"{'its' if n == 1 else 'their'} preferred leader ("
                            + ", ".join(f"{c} to broker {b}" for b, c in sorted(gained.items())) + ")."))
    return out


def _reassignment_story(s: Index) -> Story:
    moves = reassignments(s.a.decisions)
    if not moves:
        return []
    done = [m for m in moves if m["completed"] is not None and not m["cancelled"]]
    cancelled = [m for m in moves if m["cancelled"]]
    pending = [m for m in moves if m["completed"] is None]
    moved_leaders = s.a.facts.reassign_elections
    text = f"{plural(len(moves), 'partition reassignment')} ran"
    if done:
        first, last = min(m["started"] for m in done), max(m["completed"] for m in done)
        sample = ", ".join(f"{pname(*m['partition'])} {m['from']} → {m['to']}" for m in done[:3])
        text += (f": {len(done)} completed between {s.at(first)} and {s.at(last)} ({sample}"
                 f"{', …' if len(done) > 3 else ''})")
        if moved_leaders:
            text += (f"; leadership moved to a new replica on {plural(moved_leaders, 'partition')} "
                     f"(REASSIGN elections)")
    if cancelled:
        text += f"; {len(cancelled)} cancelled ({names((m['partition'] for m in cancelled), 5)})"
    if pending:
        text += f"; {len(pending)} still in progress at the end ({names((m['partition'] for m in pending), 5)})"
    return [(moves[0]["started"], text + ".")]


def _unclean_lines(s: Index) -> list[str]:
    a = s.a
    if not a.unclean:
        return []
    parts = [f"{pname(r['topic'], r['partition'])} at {s.at(r['source_offset'])} ({r['event_type']}: broker "
             f"{r['leader_after']} became leader with ISR {r.get('isr_after')}, the last ISR was {r.get('isr_before')})"
             for r in a.unclean]
    return [f"{plural(len(a.unclean), 'unclean election')} on " + "; ".join(parts)
            + ": data loss possible (the new leader was not in the ISR)."]


def _worst_lines(s: Index) -> list[str]:
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
    return [f"{plural(a.rejected, 'audit row')} rejected: "
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


