"""Outcomes per partition: where a replay under other rules ends up beside the real controller.

Pure. A migration asks less than the agreement does: not whether every write is the same (a ZooKeeper-era
controller and Kafka 4's write different records for the same incident), but whether the incident ends the same
for each partition: its final leader and ISR, and whether it needed an unclean election (data possibly lost). The
controller's unclean elections are read from its states: a new leader from outside the ISR before it, alone in
the ISR; isrflow's are its OFFLINE_UNCLEAN elections.
"""

from __future__ import annotations

from collections import Counter
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


# The events `deleted_topics` reads (`note_topic`): a reader of a whole events file need parse no other line.
TOPIC_EVENTS = ("DeleteTopic", "CreateTopic")


def note_topic(gone: set[str], kind: Any, topic: Any) -> None:
    """`deleted_topics`' step for one event (or one audit row of it, by its event_type): a DeleteTopic's topic is
    gone until a CreateTopic makes it again."""
    if kind == "DeleteTopic" and topic:
        gone.add(topic)
    elif kind == "CreateTopic" and topic:
        gone.discard(topic)


class ControllerOutcomes:
    """The controller's side of `outcome_rows`, one partition change at a time: each partition's last state (a
    mapping with at least its leader and ISR: the report's controller story keeps its own there, and reads it back
    from `last`) and how many unclean elections it went through."""

    def __init__(self) -> None:
        self.last: dict[tuple[str, int], Mapping[str, Any]] = {}
        self.unclean: Counter[tuple[str, int]] = Counter()

    def note(self, key: tuple[str, int], state: Mapping[str, Any]) -> None:
        before = self.last.get(key)
        if before is not None and _unclean(before, state):
            self.unclean[key] += 1
        self.last[key] = state

    def outcomes(self) -> dict[tuple[str, int], dict[str, Any]]:
        return {key: {"leader": state["leader"], "isr": sorted(state["isr"]), "unclean_elections": self.unclean[key]}
                for key, state in self.last.items()}


def controller_outcomes(observed: Iterable[Mapping[str, Any]]) -> ControllerOutcomes:
    """The controller's partition changes (observed.jsonl's rows) folded, in order."""
    controller = ControllerOutcomes()
    for o in observed:
        controller.note((o["topic"], o["partition"]), {"leader": o["leader"], "isr": list(o["isr"])})
    return controller


def outcome_rows(observed: Iterable[Mapping[str, Any]], decisions: Iterable[Mapping[str, Any]],
                 deleted: Collection[str] = ()) -> list[dict[str, Any]]:
    """One row per partition either side wrote, of a topic not `deleted`: the final leader and ISR (as a set) and
    the unclean elections of the controller and of isrflow, and which of the three differ. Both sides are read
    once, in order, keeping only each partition's last state and count."""
    return compared_outcomes(controller_outcomes(observed), decisions, deleted)


def compared_outcomes(controller: ControllerOutcomes, decisions: Iterable[Mapping[str, Any]],
                      deleted: Collection[str] = ()) -> list[dict[str, Any]]:
    """`outcome_rows` with the controller's side folded already (by the report's controller story)."""
    theirs = controller.outcomes()
    last: dict[tuple[str, int], tuple[Any, Any]] = {}  # each partition's last leader and ISR: its outcome made once
    unclean: Counter[tuple[str, int]] = Counter()
    for d in decisions:
        key = (d["topic"], d["partition"])
        last[key] = d["leader"], d["isr"]
        if d.get("election") == UNCLEAN:
            unclean[key] += 1
    ours = {key: {"leader": leader, "isr": sorted(isr), "unclean_elections": unclean[key]}
            for key, (leader, isr) in last.items()}
    rows = []
    for key in sorted(k for k in theirs.keys() | ours.keys() if k[0] not in deleted):
        controller_end, isrflow = theirs.get(key), ours.get(key)
        differing = [f for f in ("leader", "isr", "unclean_elections")
                     if controller_end is None or isrflow is None or
                     (bool(controller_end[f]) if f == "unclean_elections" else controller_end[f]) !=
                     (bool(isrflow[f]) if f == "unclean_elections" else isrflow[f])]
        rows.append({"topic": key[0], "partition": key[1], "controller": controller_end, "isrflow": isrflow,
                     "differing": differing})
    return rows
