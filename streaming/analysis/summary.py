"""The report's summary in plain words, computed from the timeline: the log told in its order, then the worst
moments, rejections, quarantine and the state at the end."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from schemas.events import (
    AlterTopicConfig,
    AssignReplicasToDirs,
    CreatePartitions,
    CreateTopic,
    DeleteTopic,
    ElectLeaders,
    IsrChange,
    LeaderImbalanceCheck,
    LogDirsOffline,
    UpdateFeatures,
)
from statemachine.elections import Election
from statemachine.errors import Error, Outcome
from statemachine.features import UNKNOWN_VERSION
from statemachine.record import Action
from streaming.analysis.brokers import broker_story
from streaming.analysis.timeline import NON_EXISTENT, Analysis, Index, Story, as_int, key_of, reassignments
from streaming.analysis.words import and_list, duration, names, plural, pname

# -- the summary in plain words ---------------------------------------------------------------------------


def summarise(a: Analysis) -> list[str]:
    if not a.audit:
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
        f"{plural(len(s.by_part), 'partition')} in {plural(len(a.topics), 'topic')} on "
        f"{plural(len(a.brokers), 'broker')}; {plural(a.inputs.decision_count, 'LeaderAndIsr decision')}, "
        f"{plural(len(a.rejected), 'rejected audit row')}, {plural(len(a.inputs.quarantine), 'quarantined record')}."]
    lines[:0] = [f"WARNING at {s.at(r['source_offset'])}: {r['message'].split('WARNING: ', 1)[1]}."
                 for r in s.cluster_rows if r.get("event_type") == UpdateFeatures.type
                 and UNKNOWN_VERSION in (r.get("message") or "")]
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
    out: Story = [(r["source_offset"], f"At {s.at(r['source_offset'])} {r['message']}.")
                  for r in s.cluster_rows
                  if r.get("event_type") == LogDirsOffline.type and r.get("outcome") == Outcome.ACCEPTED]
    assigned = sorted((r for r in s.a.audit if r.get("event_type") == AssignReplicasToDirs.type
                       and r.get("partition") is not None and r.get("outcome") == Outcome.ACCEPTED),
                      key=lambda r: r["source_offset"])
    if assigned:
        brokers = sorted({int(r["broker_id"]) for r in assigned})
        out.append((assigned[0]["source_offset"],
                    f"{s.span(assigned)} broker{'s' if len(brokers) > 1 else ''} {and_list(map(str, brokers))} placed "
                    f"{plural(len(assigned), 'replica')} in their log dirs (AssignReplicasToDirs: each a new partition "
                    f"epoch, no leader or ISR change)."))
    return out


def _controller_story(s: Index) -> Story:
    out: Story = []
    for r in s.cluster_rows:
        if r.get("outcome") != Outcome.ACCEPTED or r.get("action") != Action.CONTROLLER_FAILOVER:
            continue
        controller = r.get("controller_id")
        who = (f"controller {controller}" if controller is not None
               else "a new controller (no ControllerChange in the log)")
        epoch = r.get("controller_epoch")
        rows = [x for x in s.rows_at.get(r["source_offset"], []) if x.get("action") == Action.CONTROLLER_FAILOVER]
        changed = [x for x in rows if x.get("outcome") == Outcome.ACCEPTED]
        out.append((r["source_offset"], f"At {s.at(r['source_offset'])} {who} took over at epoch {epoch} and "
                                        f"re-examined {plural(len(rows), 'partition')}"
                                        + (f": {len(changed)} changed." if changed else ": none needed a change.")))
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

    for offset in sorted(s.rows_at):
        rows = [r for r in s.rows_at[offset] if r.get("outcome") == Outcome.ACCEPTED]
        kinds = {r["event_type"] for r in rows}
        if kinds == {CreateTopic.type}:
            created.append((offset, rows[0]["topic"], len(rows)))
            continue
        flush()
        if kinds == {CreatePartitions.type}:
            out.append((offset, f"At {s.at(offset)} {plural(len(rows), 'partition')} added to topic "
                                f"{rows[0]['topic']}."))
        elif kinds == {DeleteTopic.type}:
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


def _fenced_story(s: Index) -> Story:
    """Events a fenced (zombie) controller logged at an old epoch, in runs per (old, active) epoch."""
    runs: dict[tuple[int, int], list[Mapping[str, Any]]] = defaultdict(list)
    seen: set[int] = set()
    for r in s.a.rejected:
        if r.get("error") == Error.STALE_CONTROLLER_EPOCH and r["source_offset"] not in seen:
            seen.add(r["source_offset"])
            runs[(int(r["event_controller_epoch"]), int(r["controller_epoch"]))].append(r)
    out: Story = []
    for (old, active), rows in sorted(runs.items()):
        kinds = ", ".join(k if n == 1 else f"{n} {k}" for k, n in Counter(r["event_type"] for r in rows).items())
        out.append((rows[0]["source_offset"], f"{s.span(rows)} a fenced controller still at epoch {old} (epoch "
                    f"{active} was active) logged {plural(len(rows), 'event')} ({kinds}): "
                    f"{'all' if len(rows) > 1 else 'it was'} rejected with STALE_CONTROLLER_EPOCH, nothing applied."))
    return out


def _config_story(s: Index) -> Story:
    out: Story = []
    for r in s.cluster_rows:
        if r.get("event_type") != AlterTopicConfig.type or r.get("outcome") != Outcome.ACCEPTED:
            continue
        settings = [f"{name}={value}" if value is not None else f"{name} back to the cluster default"
                    for name, value in sorted((r.get("configs") or {}).items())]
        text = f"At {s.at(r['source_offset'])} topic {r.get('topic')} was reconfigured: {and_list(settings) or '?'}"
        rows = s.rows_at.get(r["source_offset"], [])
        elected = [x for x in rows if x.get("election")]
        failed = [x for x in rows if x.get("outcome") == Outcome.REJECTED]
        if elected:
            text += (f"; {plural(len(elected), 'offline partition')} elected a leader ("
                     + ", ".join(f"{pname(x['topic'], x['partition'])}: {x['election']}" for x in elected[:5]) + ")")
        if failed:
            text += (f"; {len(failed)} could not ({names(key_of(x) for x in failed)}: "
                     f"{failed[0].get('error')})")
        out.append((r["source_offset"], text + "."))
    return out


def _isr_shrink_story(s: Index) -> Story:
    """Leaders dropping a follower from the ISR (IsrChange), in runs per broker."""
    removed: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    for rows in s.by_part.values():
        for r in rows:
            if r["event_type"] == IsrChange.type and r.get("outcome") == Outcome.ACCEPTED:
                # A replica a completed reassignment removed is no longer in replica_states: not a lagging one.
                still = set(r.get("replica_states") or ())  # its brokers (a map, or the brokers alone: columns)
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


def _preferred_story(s: Index) -> Story:
    by_event: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    for r in s.a.elections:
        if r["election"] == Election.PREFERRED:
            by_event[r["source_offset"]].append(r)
    out: Story = []
    for offset, rows in sorted(by_event.items()):
        kind = rows[0]["event_type"]
        what = ("the periodic leader imbalance check" if kind == LeaderImbalanceCheck.type
                else "a preferred leader election (ElectLeaders)" if kind == ElectLeaders.type else kind)
        gained = Counter(as_int(r.get("leader_after")) for r in rows)
        out.append((offset, f"At {s.at(offset)} {what} moved {plural(len(rows), 'partition')} back to "
                            f"{'its' if len(rows) == 1 else 'their'} preferred leader ("
                            + ", ".join(f"{n} to broker {b}" for b, n in sorted(gained.items())) + ")."))
    return out


def _reassignment_story(s: Index) -> Story:
    moves = reassignments(s.a.decisions)
    if not moves:
        return []
    done = [m for m in moves if m["completed"] is not None and not m["cancelled"]]
    cancelled = [m for m in moves if m["cancelled"]]
    pending = [m for m in moves if m["completed"] is None]
    moved_leaders = [r for r in s.a.elections if r["election"] == Election.REASSIGN]
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


