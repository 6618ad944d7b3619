"""What a replay beside a real controller writes, for every source of a real history (KRaft, ZooKeeper): the
observed and per-decision rows as JSON lines, the agreement per decision (`agreement.jsonl`) and per partition
history (`histories.jsonl`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streaming.engine.collector import young_collection_only
from streaming.history.agreement import COMPARED, agreement_rate, agreement_rows
from streaming.history.histories import history_stream, history_totals
from streaming.history.trust import AgreementFigures
from streaming.io.jsonl import growing_jsonl_rows, jsonl_rows, read_jsonl, write_jsonl
from streaming.io.rows import Row, make_row, row_class

# What the agreement and the histories read of a row of either side.
_READ = ("topic", "partition", "source_offset", "cause", "cause_event_id", "decision", *COMPARED)


class _Compared:
    """Rows of partition states (observed.jsonl, decisions.jsonl) with only the fields compared, equal values shared
    (the same lists of brokers and log dirs, the same strings, over and over): a fraction of the memory of every
    field of every row. Nothing downstream changes a row."""

    def __init__(self) -> None:
        self.strings: dict[str, str] = {}
        self.lists: dict[tuple[Any, ...], list[Any]] = {}
        self.cls = row_class(_READ)  # in slots: a fraction of a dict's memory

    def row(self, row: dict[str, Any]) -> Row:
        read = [row.get(f) for f in _READ]
        for n, value in enumerate(read):
            if value.__class__ is str:
                read[n] = self.strings.setdefault(value, value)
            elif value.__class__ is list:
                read[n] = self.lists.setdefault(tuple(value), value)
        return make_row(self.cls, read)


def _compared_rows(observed: Path, decisions: Path, written: Callable[[], bool] | None) -> tuple[list[Row], list[Row]]:
    """Both files' rows as compared; with `written`, read as they grow until it says both are whole."""
    compared = _Compared()
    if written is None:
        return ([compared.row(r) for r in jsonl_rows(observed)], [compared.row(r) for r in jsonl_rows(decisions)])
    sides: tuple[list[Row], list[Row]] = ([], [])
    for n, row in growing_jsonl_rows((observed, decisions), written):
        sides[n].append(compared.row(row))
    return sides


@dataclass(frozen=True)
class Agreement:
    """A replay beside the controller: per decision (agreement.jsonl) and per partition history
    (histories.jsonl)."""

    rate: float
    decisions: int
    disagreements: int
    partitions: int
    partitions_equal: int
    states: int
    states_equal: int

    @property
    def figures(self) -> AgreementFigures:
        return AgreementFigures(self.decisions, self.disagreements, self.partitions, self.partitions_equal)

    def describe(self, out: Path) -> str:
        return (f"agreement with the controller: {self.rate:.1%} of {self.decisions} observed decisions "
                f"({self.disagreements} disagreements) in {out / 'agreement.jsonl'}\n"
                f"  partition histories: {self.partitions_equal} of {self.partitions} equal, {self.states_equal} of "
                f"{self.states} states equal, in {out / 'histories.jsonl'}")


def write_agreement(out: Path, observed: Path, decisions: Path, written: Callable[[], bool] | None = None
                    ) -> Agreement:
    """`out/agreement.jsonl` (per observed decision) and `out/histories.jsonl` (per partition) from the observed
    partition changes and isrflow's decisions. `written`, when given, says whether both files are whole: until it
    does, they are read as a replay writes them (streaming.io.jsonl.growing_jsonl_rows)."""
    with young_collection_only():  # a row per observed change and per decision, none in a cycle
        controller, ours = _compared_rows(observed, decisions, written)
        rows = agreement_rows(controller, ours)
        write_jsonl(out / "agreement.jsonl", rows)
        figures = agreement_rate(rows), len(rows), sum(1 for r in rows if not r["match"])
        del rows  # written: not held beside the histories
        tallied: list[dict[str, Any]] = []  # what the totals read of each history, not its first difference

        def written(histories: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
            for h in histories:
                tallied.append({k: h[k] for k in ("match", "states_compared", "states_equal")})
                yield h

        write_jsonl(out / "histories.jsonl", written(history_stream(controller, ours)))
    return Agreement(*figures, *history_totals(tallied))


def _cell(values: Mapping[str, Any] | None) -> str:
    if values is None:
        return "-"
    return f"leader {values['leader']} isr {sorted(values['isr'])} epochs {values['leader_epoch']}/" \
           f"{values['partition_epoch']}"


def show_agreement(work: Path, audit: Path, decisions_topic: str, rules: str) -> int:
    """A demo's last word: `isrflow run`'s decisions (the Delta table beside `audit`) next to the real controller's
    (`work/observed.jsonl`), printed as a table with the agreement; 0 when every one is reproduced."""
    from streaming.io.delta import read_delta, write_decisions_jsonl
    from streaming.io.layout import Lake

    decisions = Lake.beside(audit).decisions
    write_decisions_jsonl(work / "decisions.jsonl", read_delta(decisions))
    histories = write_agreement(work, work / "observed.jsonl", work / "decisions.jsonl")
    rows = read_jsonl(work / "agreement.jsonl")
    print(f"\n{'partition':<12} {'cause':<18} {'real controller':<36} {'isrflow (' + rules + ')':<36} match")
    for r in rows:
        print(f"{r['topic'] + '-' + str(r['partition']):<12} {r['cause']:<18} {_cell(r['controller']):<36} "
              f"{_cell(r['isrflow']):<36} {'yes' if r['match'] else 'NO: ' + ', '.join(r['differing'])}")
    agreed = sum(1 for r in rows if r["match"])
    print(f"\nagreement: {agreed}/{len(rows)} decisions of the real controller reproduced by `isrflow run`; "
          f"decisions on {decisions_topic} and in {decisions} (Delta); partition histories: "
          f"{histories.partitions_equal}/{histories.partitions} equal")
    return 0 if agreed == len(rows) and histories.partitions_equal == histories.partitions else 1
