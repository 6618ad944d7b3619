"""The report's sentence helpers."""

from __future__ import annotations

from streaming.analysis.words import and_list


def test_a_list_reads_as_english_and_an_empty_one_as_nothing() -> None:
    # An AlterTopicConfig row with no setting left to tell (a real campaign log had one) must not break the report.
    assert [and_list(items) for items in ([], ["a"], ["a", "b"], ["a", "b", "c"])] == [
        "", "a", "a and b", "a, b and c"]


def test_named_partitions_are_the_smallest_few_of_all_as_names_shows_them() -> None:
    """A broker's sentence names the NAMED smallest of the partitions it counts, without holding them all (facts.Named),
    also when two counts are merged (the partitions offline until the same moment, found by different rows)."""
    import random

    from streaming.analysis.facts import NAMED, Named
    from streaming.analysis.words import names

    rng = random.Random(30)
    for size in (0, 1, NAMED, NAMED + 1, 40):
        keys = [(rng.choice("abc"), rng.randrange(1000)) for _ in range(size)]
        one, left, right = Named(), Named(), Named()
        for n, key in enumerate(keys):
            one.add(key)
            (left if n % 2 else right).add(key)
        left.merge(right)
        assert one.n == left.n == size
        assert one.names() == left.names() == names(keys, NAMED)
