"""The report's sentence helpers."""

from __future__ import annotations

from streaming.analysis.words import and_list


def test_a_list_reads_as_english_and_an_empty_one_as_nothing() -> None:
    # An AlterTopicConfig row with no setting left to tell (a real campaign log had one) must not break the report.
    assert [and_list(items) for items in ([], ["a"], ["a", "b"], ["a", "b", "c"])] == [
        "", "a", "a and b", "a, b and c"]
