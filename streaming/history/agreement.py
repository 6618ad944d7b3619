"""Agreement between isrflow's decisions and the real controller's (the `observed.jsonl` of an import).

Pure. An observed decision (an election or an ISR shrink the controller wrote) matches when isrflow's decision in
the same place, among those for the same partition caused by the same event, has the same leader, ISR (as a set:
KRaft keeps the order the leader sent), leader epoch, partition epoch, recovery state, (as sets) the Eligible
Leader Replicas and last known ELR (KIP-966; empty on both sides unless the cluster runs with ELR), and the replicas'
log directories in replica order (KIP-858; empty under the zk rules). A decision of
isrflow's with no partition change of the controller's for that partition and event is a disagreement too
(`controller` is then None).

The same place: the controller's writes for a partition and an event are paired with isrflow's from the last one
back. A KRaft operation is one record, so that is isrflow's last decision; the ZooKeeper-era controller writes a
partition several times for one event (an election, then a replica out of the ISR), and so does isrflow.

Live, behind `isrflow bridge`, each micro-batch of `isrflow run` compares the events it decided
(`batch_agreement`) and appends the rows to the agreement table (`to_table_rows`; `from_table_rows` reads them
back in agreement.jsonl's shape).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from typing import Any

COMPARED = ("leader", "isr", "leader_epoch", "partition_epoch", "leader_recovery_state", "eligible_leader_replicas",
            "last_known_elr", "directories")
_SETS = frozenset({"isr", "eligible_leader_replicas", "last_known_elr"})


def compared_value(row: Mapping[str, Any], name: str) -> Any:
    """A compared field as both sides are compared: sets sorted, a missing ELR empty."""
    value = row.get(name)
    if name in _SETS:
        return sorted(value or ())  # a decision written before ELR existed has none
    if name == "directories":
        return list(value or ())  # in replica order; none under the zk rules and before KIP-858
    return value


def differing_fields(controller: Mapping[str, Any], isrflow: Mapping[str, Any]) -> list[str]:
    """The compared fields on which the two sides differ. The replicas' directories count only where isrflow keeps
    them (the kraft rules; a what-if replay of a KRaft log under the zk rules keeps none)."""
    theirs, ours = controller.get, isrflow.get
    # Equal values compare equal (most fields of most rows, often the same shared list): only the others are
    # brought to their compared form.
    return [f for f in COMPARED if theirs(f) != ours(f) and (f != "directories" or ours("directories"))
            and compared_value(controller, f) != compared_value(isrflow, f)]


def agreement_rows(observed: Iterable[Mapping[str, Any]],
                   decisions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per observed decision: match, the differing fields, both sides."""
    ours: dict[tuple[str, int, str], list[Mapping[str, Any]]] = {}
    for d in decisions:
        ours.setdefault((d["topic"], d["partition"], d.get("cause_event_id") or ""), []).append(d)
    theirs: dict[tuple[str, int, str], list[Mapping[str, Any]]] = {}
    for o in observed:
        theirs.setdefault((o["topic"], o["partition"], o.get("cause_event_id") or ""), []).append(o)
    rows = []
    for key, writes in theirs.items():
        mine_all = ours.get(key, [])
        for back, o in enumerate(reversed(writes), start=1):
            if o.get("decision"):
                rows.append(_row(o, mine_all[-back] if back <= len(mine_all) else None))
    rows.sort(key=lambda r: r["source_offset"])
    for key, mine_all in ours.items():
        if key not in theirs:  # isrflow decided where the controller changed nothing
            mine = mine_all[-1]
            rows.append({"topic": mine["topic"], "partition": mine["partition"], "source_offset": mine["source_offset"],
                         "cause": mine.get("cause"), "cause_event_id": mine.get("cause_event_id"), "match": False,
                         "differing": list(COMPARED), "controller": None,
                         "isrflow": {f: mine.get(f) for f in COMPARED}})
    return rows


def _row(o: Mapping[str, Any], mine: Mapping[str, Any] | None) -> dict[str, Any]:
    """An observed decision beside isrflow's in the same place (None: isrflow wrote nothing there)."""
    differing = list(COMPARED) if mine is None else differing_fields(o, mine)
    return {
        "topic": o["topic"], "partition": o["partition"], "source_offset": o["source_offset"],
        "cause": o.get("cause"), "cause_event_id": o.get("cause_event_id"), "match": not differing,
        "differing": differing,
        "controller": {f: o.get(f) for f in COMPARED},
        "isrflow": None if mine is None else {f: mine.get(f) for f in COMPARED},
    }


def agreement_rate(rows: list[Mapping[str, Any]]) -> float:
    return sum(1 for r in rows if r["match"]) / len(rows) if rows else 1.0


def batch_agreement(observed: Iterable[Mapping[str, Any]], decisions: Iterable[Mapping[str, Any]],
                    event_ids: Collection[str]) -> list[dict[str, Any]]:
    """`agreement_rows` for the events a micro-batch of `isrflow run` decided: the controller's changes caused by
    those events beside isrflow's decisions of them (an event of the batch with neither gives no row). A table
    returns rows in any order: the controller's are put back in log order, which the pairing reads."""
    theirs = sorted((o for o in observed if o.get("cause_event_id") in event_ids), key=lambda o: o["source_offset"])
    return agreement_rows(theirs, [d for d in decisions if d.get("cause_event_id") in event_ids])


def to_table_rows(rows: Iterable[Mapping[str, Any]], batch_id: int) -> list[dict[str, Any]]:
    """Agreement rows as the agreement table holds them: each side as a JSON object (or null)."""
    return [{**r, "controller": _json_or_none(r["controller"]), "isrflow": _json_or_none(r["isrflow"]),
             "batch_id": batch_id} for r in rows]


def from_table_rows(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The agreement table's rows as agreement.jsonl has them (the sides as objects, no batch id)."""
    return [{**{k: v for k, v in r.items() if k != "batch_id"}, "differing": list(r["differing"]),
             "controller": _object_or_none(r["controller"]), "isrflow": _object_or_none(r["isrflow"])} for r in rows]


def _json_or_none(side: Mapping[str, Any] | None) -> str | None:
    return None if side is None else json.dumps(side, sort_keys=True, separators=(",", ":"))


def _object_or_none(text: str | None) -> dict[str, Any] | None:
    return None if text is None else json.loads(text)
