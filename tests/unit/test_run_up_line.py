"""`isrflow run`'s line once both queries are up: printed once, after each query's first trigger, and saying "caught
up" only when neither had new events (a restart with nothing to do prints no progress line)."""

from __future__ import annotations

import re
from types import SimpleNamespace

from streaming.jobs.run import up_listener

SEQUENCER, PARTITIONS = "id-sequencer", "id-partitions"


def listener_and_lines() -> tuple[object, list[str]]:
    lines: list[str] = []
    listener = up_listener("controller-events", started=0.0, echo=lines.append)
    listener.onQueryStarted(SimpleNamespace(id=SEQUENCER, name="isrflow-sequencer"))
    listener.onQueryStarted(SimpleNamespace(id=PARTITIONS, name="isrflow-partitions"))
    return listener, lines


def progress(query_id: str) -> SimpleNamespace:
    return SimpleNamespace(progress=SimpleNamespace(id=query_id))


def test_an_idle_restart_says_it_is_up_and_caught_up_once_both_queries_looked() -> None:
    listener, lines = listener_and_lines()
    listener.onQueryIdle(SimpleNamespace(id=SEQUENCER))
    listener.onQueryIdle(SimpleNamespace(id=SEQUENCER))
    assert lines == []  # the partition query has not resumed yet
    listener.onQueryIdle(SimpleNamespace(id=PARTITIONS))
    listener.onQueryIdle(SimpleNamespace(id=PARTITIONS))
    assert len(lines) == 1
    assert re.fullmatch(r"isrflow run: up after \d+\.\ds: both queries resumed from their checkpoints, caught up "
                        r"with controller-events; a progress line follows each micro-batch with events", lines[0])


def test_a_restart_with_events_waiting_is_up_after_their_first_batches_without_claiming_to_be_caught_up() -> None:
    listener, lines = listener_and_lines()
    listener.onQueryProgress(progress(SEQUENCER))
    listener.onQueryIdle(SimpleNamespace(id=PARTITIONS))
    listener.onQueryProgress(progress(PARTITIONS))
    assert len(lines) == 1 and "resumed from their checkpoints;" in lines[0] and "caught up" not in lines[0]


def test_other_queries_of_the_session_do_not_count() -> None:
    listener, lines = listener_and_lines()
    listener.onQueryStarted(SimpleNamespace(id="other", name="someone-elses"))
    listener.onQueryIdle(SimpleNamespace(id="other"))
    listener.onQueryIdle(SimpleNamespace(id=SEQUENCER))
    assert lines == []
