"""Agreement per partition history (streaming/history/histories.py), the report's section and the check rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from streaming.history.agreement import agreement_rate, agreement_rows
from streaming.history.histories import history_rows, history_totals


def _state(offset: int, leader: int, isr: list[int], leader_epoch: int, partition_epoch: int, *,
           cause: str = "BrokerChange", decision: bool = True, partition: int = 0) -> dict[str, Any]:
    return {"topic": "t", "partition": partition, "source_offset": offset, "cause": cause,
            "cause_event_id": f"kraft-{offset}", "leader": leader, "isr": isr, "leader_epoch": leader_epoch,
            "partition_epoch": partition_epoch, "leader_recovery_state": "RECOVERED", "decision": decision}


CREATED = _state(3, 1, [1, 2, 3], 0, 0, cause="CreateTopic")
FAILOVER = _state(9, 2, [2, 3], 1, 1)


def test_equal_histories_compare_every_state_and_the_isr_as_a_set() -> None:
    ours = [CREATED, {**FAILOVER, "isr": [3, 2]}]
    [row] = history_rows([CREATED, FAILOVER], ours)
    assert row["match"] and row["states_compared"] == 2 and row["states_equal"] == 2
    assert row["first_difference"] is None


def test_a_missed_isr_expansion_parts_the_histories_where_per_decision_agreement_sees_nothing() -> None:
    # The leader's AlterPartition adds broker 1 back: a state the controller wrote, not a decision.
    expansion = _state(12, 2, [1, 2, 3], 1, 2, cause="IsrChange", decision=False)
    shrink = _state(20, 2, [2, 3], 1, 3, cause="IsrChange")
    controller = [CREATED, FAILOVER, expansion, shrink]
    ours = [CREATED, FAILOVER, {**shrink, "partition_epoch": 2}]  # isrflow never grew the ISR
    rows = agreement_rows(controller, ours)
    assert agreement_rate(rows) < 1.0  # the shrink's partition epoch is one behind...
    [history] = history_rows(controller, ours)
    assert not history["match"] and history["states_compared"] == 4 and history["states_equal"] == 2
    first = history["first_difference"]  # ...because the histories parted two states earlier
    assert first["state"] == 2 and first["source_offset"] == 12
    assert first["differing"] == ["isr"]
    assert first["controller"]["isr"] == [1, 2, 3] and first["isrflow"]["isr"] == [2, 3]


def test_a_write_only_one_side_made_is_a_difference_with_no_state_on_the_other() -> None:
    extra = _state(15, 3, [3], 2, 2)
    [history] = history_rows([CREATED, FAILOVER], [CREATED, FAILOVER, extra])
    assert not history["match"] and history["states_equal"] == 2 and history["states_compared"] == 3
    assert history["first_difference"]["controller"] is None
    assert history["first_difference"]["isrflow"]["source_offset"] == 15


def test_totals_count_partitions_and_states_on_either_side() -> None:
    other = _state(4, 2, [2], 0, 0, cause="CreateTopic", partition=1)
    rows = history_rows([CREATED, FAILOVER, other], [CREATED, FAILOVER])
    assert [(r["partition"], r["match"]) for r in rows] == [(0, True), (1, False)]
    assert history_totals(rows) == (2, 1, 3, 2)


def _replay_dir(tmp_path: Path, controller: list[dict[str, Any]], ours: list[dict[str, Any]]) -> Path:
    from streaming.history.outputs import write_agreement

    for name, rows in (("observed.jsonl", controller), ("decisions.jsonl", ours)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_agreement(tmp_path, tmp_path / "observed.jsonl", tmp_path / "decisions.jsonl")
    return tmp_path


def test_replay_writes_histories_beside_agreement_and_says_how_many_are_equal(tmp_path: Path) -> None:
    from streaming.history.outputs import write_agreement

    _replay_dir(tmp_path, [CREATED, FAILOVER], [CREATED])
    agreed = write_agreement(tmp_path, tmp_path / "observed.jsonl", tmp_path / "decisions.jsonl")
    assert (agreed.partitions, agreed.partitions_equal, agreed.states, agreed.states_equal) == (1, 0, 2, 1)
    assert "partition histories: 0 of 1 equal, 1 of 2 states equal" in agreed.describe(tmp_path)
    [row] = [json.loads(line) for line in (tmp_path / "histories.jsonl").read_text().splitlines()]
    assert row["first_difference"]["source_offset"] == 9


def test_report_shows_the_first_difference_of_each_partition(tmp_path: Path) -> None:
    from streaming.analysis.agreement import agreement_section

    html = agreement_section(_replay_dir(tmp_path, [CREATED, FAILOVER], [CREATED, {**FAILOVER, "leader": 3}]))
    assert html is not None and "0 of 1 partitions went through the same sequence of states" in html
    assert "state 2, metadata offset 9" in html and "<b>leader=2</b>" in html and "<b>leader=3</b>" in html


def test_check_fails_when_a_partition_history_differs_and_passes_when_all_are_equal(tmp_path: Path) -> None:
    from streaming.quality.agreement import HISTORY_RULE, agreement_results

    audit = tmp_path / "audit"
    assert agreement_results(audit) == []  # not a replay of a controller's history
    _replay_dir(tmp_path, [CREATED, FAILOVER], [CREATED])
    failed = {r.name: r for r in agreement_results(audit)}[HISTORY_RULE]
    assert failed.fails_check and failed.unexpected == 1
    assert failed.examples[0]["source_offset"] == 9
    _replay_dir(tmp_path, [CREATED, FAILOVER], [CREATED, FAILOVER])
    assert not any(r.fails_check for r in agreement_results(audit))
