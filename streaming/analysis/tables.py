"""The report's tables: unclean elections, rejections, leader changes, quarantine, brokers."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from schemas.events import (
    BrokerChangeKind,
    LeaderRecoveryState,
)
from statemachine.errors import Outcome
from statemachine.record import NO_LEADER
from streaming.analysis.timeline import ELECTION_ORDER, Analysis, Index, Key, as_int, key_of
from streaming.analysis.words import pname

TABLE_LIMIT = 50

# -- tables -------------------------------------------------------------------------------------------------

def _by(rows: Iterable[Mapping[str, Any]]) -> str:
    """' by P' for the principals who issued these rows' events (admin commands), else ''."""
    principals = sorted({r["principal"] for r in rows if r.get("principal")})
    return f" by {', '.join(principals)}" if principals else ""


def _recovered(s: Index, unclean: Mapping[str, Any]) -> str:
    """How long the unclean leader stayed RECOVERING (leader_recovery_state_after)."""
    if unclean.get("leader_recovery_state_after") != LeaderRecoveryState.RECOVERING:
        return ""
    done = s.after(unclean, lambda r: r.get("leader_recovery_state_after") != LeaderRecoveryState.RECOVERING)
    return " (still RECOVERING at the end)" if done is None else f" (RECOVERING until {s.at(done['source_offset'])})"


def unclean_table(s: Index) -> list[dict[str, Any]]:
    return [{"time": s.at(r["source_offset"]), "offset": r["source_offset"],
             "event": f"{r['event_type']} {r['event_id']}{_by([r])}", "partition": pname(r["topic"], r["partition"]),
             "leader": f"{r.get('leader_before')} → {r.get('leader_after')}{_recovered(s, r)}",
             "isr": f"{r.get('isr_before')} → {r.get('isr_after')}",
             "leader_epoch": f"{r.get('leader_epoch_before')} → {r.get('leader_epoch_after')}"} for r in s.a.unclean]


def rejection_table(s: Index) -> list[dict[str, Any]]:
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
        if (r.get("partition") is not None and r.get("outcome") == Outcome.ACCEPTED
                and as_int(r.get("leader_after")) == NO_LEADER and as_int(r.get("leader_before")) != NO_LEADER):
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
    gained = Counter(as_int(r.get("leader_after")) for r in a.leader_changes)
    lost = Counter(as_int(r.get("leader_before")) for r in a.audit
                   if r.get("partition") is not None and r.get("outcome") == Outcome.ACCEPTED
                   and as_int(r.get("leader_before")) != as_int(r.get("leader_after")))
    kind = BrokerChangeKind
    return [{"broker": b, "failures": changes[(b, kind.FAILURE)], "shutdowns": changes[(b, kind.CONTROLLED_SHUTDOWN)],
             "startups": changes[(b, kind.STARTUP)], "gained": gained[b], "lost": lost[b], "peak": peak[b],
             "end": last.get(b, 0)} for b in sorted(a.brokers)]


