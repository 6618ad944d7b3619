"""The report's tables: unclean elections, rejections, leader changes, quarantine, brokers."""

from __future__ import annotations

from collections import Counter
from typing import Any

from schemas.events import (
    BrokerChangeKind,
)
from streaming.analysis.facts import Unclean
from streaming.analysis.timeline import ELECTION_ORDER, Analysis, Index
from streaming.analysis.words import pname

TABLE_LIMIT = 50

# -- tables -------------------------------------------------------------------------------------------------

def _by(principals: set[str]) -> str:
    """' by P' for the principals who issued these rows' events (admin commands), else ''."""
    return f" by {', '.join(sorted(principals))}" if principals else ""


def _recovered(s: Index, unclean: Unclean) -> str:
    """How long the unclean leader stayed RECOVERING (leader_recovery_state_after)."""
    if not unclean.recovering:
        return ""
    done = unclean.recovered_at
    return " (still RECOVERING at the end)" if done is None else f" (RECOVERING until {s.at(done)})"


def unclean_table(s: Index) -> list[dict[str, Any]]:
    out = []
    for u in s.a.facts.unclean:
        r = u.row
        principal = {r["principal"]} if r.get("principal") else set()
        out.append({"time": s.at(r["source_offset"]), "offset": r["source_offset"],
                    "event": f"{r['event_type']} {r['event_id']}{_by(principal)}",
                    "partition": pname(r["topic"], r["partition"]),
                    "leader": f"{r.get('leader_before')} → {r.get('leader_after')}{_recovered(s, u)}",
                    "isr": f"{r.get('isr_before')} → {r.get('isr_after')}",
                    "leader_epoch": f"{r.get('leader_epoch_before')} → {r.get('leader_epoch_after')}"})
    return out


def rejection_table(s: Index) -> list[dict[str, Any]]:
    out = []
    for error, e in sorted(s.a.facts.rejections.items(), key=lambda kv: (-kv[1].rows, kv[0])):
        first = e.first
        out.append({"error": error, "rows": e.rows, "events": e.events,
                    "types": ", ".join(f"{t} ({n}{_by(e.principals[t])})" for t, n in e.types.most_common()),
                    "first": f"{s.at(first['source_offset'])} "
                             f"(offset {first['source_offset']})",
                    "where": "cluster" if first.get("partition") is None else pname(first["topic"], first["partition"]),
                    "message": first.get("message") or ""})
    return out


def leader_change_table(a: Analysis, limit: int = 15) -> list[dict[str, Any]]:
    f = a.facts
    out = []
    for key, n in sorted(f.changes.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]:
        p = a.partitions.get(key)
        elections = f.elections_by_key.get(key, Counter())
        out.append({"partition": pname(*key), "changes": n, "offline": f.offline_by_key[key],
                    "elections": ", ".join(f"{e} {c}" for e, c in sorted(elections.items(),
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
    led = {b: a.health.led_peak_and_end(b) for b in a.brokers}
    changes = Counter((e.broker, e.change) for e in a.broker_events)
    gained, lost = a.facts.gained, a.facts.lost
    kind = BrokerChangeKind
    return [{"broker": b, "failures": changes[(b, kind.FAILURE)], "shutdowns": changes[(b, kind.CONTROLLED_SHUTDOWN)],
             "startups": changes[(b, kind.STARTUP)], "gained": gained[b], "lost": lost[b],
             "peak": led[b][0], "end": led[b][1]}
            for b in sorted(a.brokers)]


