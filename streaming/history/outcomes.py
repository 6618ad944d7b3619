"""Outcomes per partition: where a replay under other rules ends up beside the real controller.

Pure. A migration asks less than the agreement does: not whether every write is the same (a ZooKeeper-era
controller and Kafka 4's write different records for the same incident), but whether the incident ends the same
for each partition: its final leader and ISR, and whether it needed an unclean election (data possibly lost). The
controller's unclean elections are read from its states: a new leader from outside the ISR before it, alone in
the ISR; isrflow's are its OFFLINE_UNCLEAN elections.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

UNCLEAN = "OFFLINE_UNCLEAN"


def _unclean(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """The controller's write `after` is an unclean election: a new leader from outside the ISR before it, alone in
    the ISR."""
    leader = after["leader"]
    return leader >= 0 and leader != before["leader"] and leader not in before["isr"] and after["isr"] == [leader]


def deleted_topics(events: Iterable[Mapping[str, Any]]) -> set[str]:
    """Topics the history deletes and does not create again: gone on both sides, whatever each wrote last."""
    gone: set[str] = set()
    for e in events:
        note_topic(gone, e.get("type"), e.get("topic"))
    return gone


def note_topic(gone: set[str], kind: Any, topic: Any) -> None:
    """`deleted_topics`' step for one event (or one audit row of it, by its event_type): a DeleteTopic's topic is
    gone until a CreateTopic makes it again."""
    if kind == "DeleteTopic" and topic:
        gone.add(topic)
    elif kind == "CreateTopic" and topic:
        gone.discard(topic)


def outcome_rows(observed: Iterable[Mapping[str, Any]], decisions: Iterable[Mapping[str, Any]],
                 deleted: Collection[str] = ()) -> list[dict[str, Any]]:
    """One row per partition either side wrote, of a topic not `deleted`: the final leader and ISR (as a set) and
    the unclean elections of the controller and of isrflow, and which of the three differ. Both sides are read
    once, in order, keeping only each partition's last state and count."""
    theirs: dict[tuple[str, int], dict[str, Any]] = {}
    last: dict[tuple[str, int], Mapping[str, Any]] = {}
    for o in observed:
        key = (o["topic"], o["partition"])
        before = last.get(key)
        unclean = theirs[key]["unclean_elections"] if key in theirs else 0
        theirs[key] = {"leader": o["leader"], "isr": sorted(o["isr"]),
                       "unclean_elections": unclean + (before is not None and _unclean(before, o))}
        last[key] = {"leader": o["leader"], "isr": list(o["isr"])}
    ours: dict[tuple[str, int], dict[str, Any]] = {}
    for d in decisions:
        key = (d["topic"], d["partition"])
        unclean = ours[key]["unclean_elections"] if key in ours else 0
        ours[key] = {"leader": d["leader"], "isr": sorted(d["isr"]),
                     "unclean_elections": unclean + (d.get("election") == UNCLEAN)}
    rows = []
    for key in sorted(k for k in theirs.keys() | ours.keys() if k[0] not in deleted):
        controller, isrflow = theirs.get(key), ours.get(key)
        differing = [f for f in ("leader", "isr", "unclean_elections")
                     if controller is None or isrflow is None or
                     (bool(controller[f]) if f == "unclean_elections" else controller[f]) !=
                     (bool(isrflow[f]) if f == "unclean_elections" else isrflow[f])]
        rows.append({"topic": key[0], "partition": key[1], "controller": controller, "isrflow": isrflow,
                     "differing": differing})
    return rows
