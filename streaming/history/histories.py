"""Agreement per partition history: the sequence of states the real controller wrote for each partition, beside
the sequence isrflow wrote.

Pure. The per-decision agreement (agreement.py) asks whether isrflow made each decision the controller made; a
history also catches what that misses: a write isrflow makes where the controller made none, or the other way
round, and a difference that a later decision hides. The controller's states are every partition change it
wrote (`observed` rows, in log order, including a leader's ISR expansions, which are not decisions); isrflow's
are its decisions, in order. The n-th states of both are compared with the fields of agreement.py (sets as
sets), so the first difference names the offset where the two histories part.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from streaming.history.agreement import COMPARED, differing_fields

Key = tuple[str, int]


def by_partition(rows: Iterable[Mapping[str, Any]]) -> dict[Key, list[Mapping[str, Any]]]:
    out: dict[Key, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        out[(r["topic"], r["partition"])].append(r)
    return out


def _side(row: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {"source_offset": row["source_offset"], "cause": row.get("cause"), **{f: row.get(f) for f in COMPARED}}


def history_rows(observed: Iterable[Mapping[str, Any]],
                 decisions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per partition either side wrote: states compared, states equal, and the first difference."""
    return list(history_stream(observed, decisions))


def history_stream(observed: Iterable[Mapping[str, Any]],
                   decisions: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """`history_rows` one partition at a time, in the same order: a writer holds none of them."""
    theirs, ours = by_partition(observed), by_partition(decisions)
    for key in sorted(theirs.keys() | ours.keys()):
        controller, isrflow = theirs.get(key, []), ours.get(key, [])
        compared = max(len(controller), len(isrflow))
        differing_each = [differing_fields(c, i) for c, i in zip(controller, isrflow, strict=False)]  # each pair once
        equal = differing_each.count([])
        first = next((n for n, differing in enumerate(differing_each) if differing),
                     None if len(controller) == len(isrflow) else len(differing_each))
        difference = None
        if first is not None:
            c = controller[first] if first < len(controller) else None
            i = isrflow[first] if first < len(isrflow) else None
            both = [r for r in (c, i) if r is not None]
            differing = list(COMPARED) if c is None or i is None else differing_each[first]
            difference = {"state": first, "source_offset": min(r["source_offset"] for r in both),
                          "differing": differing, "controller": _side(c), "isrflow": _side(i)}
        yield {"topic": key[0], "partition": key[1], "states_compared": compared, "states_equal": equal,
               "match": first is None, "first_difference": difference}


def history_totals(rows: Iterable[Mapping[str, Any]]) -> tuple[int, int, int, int]:
    """(partitions, partitions with an equal history, states compared, states equal), in one pass."""
    partitions = equal = states = states_equal = 0
    for r in rows:
        partitions += 1
        equal += bool(r["match"])
        states += r["states_compared"]
        states_equal += r["states_equal"]
    return partitions, equal, states, states_equal
