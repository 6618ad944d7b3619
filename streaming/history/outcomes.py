"""Outcomes per partition: where a replay under other rules ends up beside the real controller.

Pure. A migration asks less than the agreement does: not whether every write is the same (a ZooKeeper-era
controller and Kafka 4's write different records for the same incident), but whether the incident ends the same
for each partition: its final leader and ISR, and whether it needed an unclean election (data possibly lost). The
controller's unclean elections are read from its states: a new leader from outside the ISR before it, alone in
the ISR; isrflow's are its OFFLINE_UNCLEAN elections.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from itertools import pairwise
from typing import Any

from streaming.history.histories import by_partition

UNCLEAN = "OFFLINE_UNCLEAN"


def _controller_unclean(states: list[Mapping[str, Any]]) -> int:
    elections = 0
    for before, after in pairwise(states):
        leader = after["leader"]
        if leader >= 0 and leader != before["leader"] and leader not in before["isr"] and after["isr"] == [leader]:
            elections += 1
    return elections


def deleted_topics(events: Iterable[Mapping[str, Any]]) -> set[str]:
    """Topics the history deletes and does not create again: gone on both sides, whatever each wrote last."""
    gone: set[str] = set()
    for e in events:
        if e.get("type") == "DeleteTopic":
            gone.add(e["topic"])
        elif e.get("type") == "CreateTopic":
            gone.discard(e["topic"])
    return gone


def outcome_rows(observed: Iterable[Mapping[str, Any]], decisions: Iterable[Mapping[str, Any]],
                 deleted: Collection[str] = ()) -> list[dict[str, Any]]:
    """One row per partition either side wrote, of a topic not `deleted`: the final leader and ISR (as a set) and
    the unclean elections of the controller and of isrflow, and which of the three differ."""
    theirs, ours = by_partition(observed), by_partition(decisions)
    rows = []
    for key in sorted(k for k in set(theirs) | set(ours) if k[0] not in deleted):
        mine, states = ours.get(key, []), theirs.get(key, [])
        controller = {"leader": states[-1]["leader"], "isr": sorted(states[-1]["isr"]),
                      "unclean_elections": _controller_unclean(states)} if states else None
        isrflow = {"leader": mine[-1]["leader"], "isr": sorted(mine[-1]["isr"]),
                   "unclean_elections": sum(1 for d in mine if d.get("election") == UNCLEAN)} if mine else None
        differing = [f for f in ("leader", "isr", "unclean_elections")
                     if controller is None or isrflow is None or
                     (bool(controller[f]) if f == "unclean_elections" else controller[f]) !=
                     (bool(isrflow[f]) if f == "unclean_elections" else isrflow[f])]
        rows.append({"topic": key[0], "partition": key[1], "controller": controller, "isrflow": isrflow,
                     "differing": differing})
    return rows
