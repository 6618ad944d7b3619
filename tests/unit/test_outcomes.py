"""Outcomes per partition (streaming/history/outcomes.py): the final leader and ISR and the unclean elections of
the controller beside isrflow's, the migration question."""

from __future__ import annotations

from typing import Any

from streaming.history.outcomes import deleted_topics, outcome_rows


def state(topic: str, leader: int, isr: list[int], election: str | None = None) -> dict[str, Any]:
    return {"topic": topic, "partition": 0, "leader": leader, "isr": isr, "election": election}


def test_a_partition_ends_the_same_when_its_last_leader_and_isr_agree_whatever_the_path() -> None:
    # The controller wrote three states, isrflow two: the same end, no unclean election on either side.
    controller = [state("t", 1, [1, 2]), state("t", 2, [2]), state("t", 2, [2, 1])]
    isrflow = [state("t", 1, [1, 2], "INITIAL"), state("t", 2, [1, 2], "OFFLINE")]
    [row] = outcome_rows(controller, isrflow)
    assert row["differing"] == [] and row["controller"] == {"leader": 2, "isr": [1, 2], "unclean_elections": 0}


def test_an_unclean_election_on_one_side_only_is_a_different_outcome() -> None:
    controller = [state("t", 1, [1]), state("t", -1, [1]), state("t", 2, [2])]  # 2 was not in the ISR: unclean
    isrflow = [state("t", 1, [1], "INITIAL"), state("t", -1, [1]), state("t", 2, [2], "OFFLINE")]
    [row] = outcome_rows(controller, isrflow)
    assert (row["controller"]["unclean_elections"], row["isrflow"]["unclean_elections"]) == (1, 0)
    assert row["differing"] == ["unclean_elections"]


def test_a_deleted_topic_has_no_outcome_and_a_recreated_one_has() -> None:
    events = [{"type": "DeleteTopic", "topic": "gone"}, {"type": "DeleteTopic", "topic": "back"},
              {"type": "CreateTopic", "topic": "back"}]
    assert deleted_topics(events) == {"gone"}
    rows = outcome_rows([state("gone", -1, [1]), state("back", 1, [1])], [state("back", 1, [1], "INITIAL")],
                        deleted_topics(events))
    assert [(r["topic"], r["differing"]) for r in rows] == [("back", [])]
