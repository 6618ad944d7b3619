"""`isrflow run`'s line once both queries are up: printed once, after each query's first trigger, and saying "caught
up" only when neither had new events (a restart with nothing to do prints no progress line)."""

from __future__ import annotations

import re
from types import SimpleNamespace

from streaming.jobs.run import UpLine

IDLE, BATCH = SimpleNamespace(numInputRows=0), SimpleNamespace(numInputRows=5)


def queries(*progress: list[SimpleNamespace]) -> list[SimpleNamespace]:
    """Queries with these progress reports of this run, oldest first."""
    return [SimpleNamespace(lastProgress=p[-1] if p else None, recentProgress=p) for p in progress]


def test_an_idle_restart_says_it_is_up_and_caught_up_once_both_queries_looked() -> None:
    lines: list[str] = []
    up = UpLine("controller-events", started=0.0, echo=lines.append)
    up.check(queries([], []))
    up.check(queries([IDLE], []))
    assert lines == []  # the partition query has not resumed yet
    up.check(queries([IDLE], [IDLE]))
    up.check(queries([IDLE, IDLE], [IDLE]))
    assert len(lines) == 1
    assert re.fullmatch(r"isrflow run: up after \d+\.\ds: both queries resumed from their checkpoints, caught up "
                        r"with controller-events; a progress line follows each micro-batch with events", lines[0])


def test_a_restart_with_events_waiting_is_up_without_claiming_to_be_caught_up() -> None:
    lines: list[str] = []
    up = UpLine("controller-events", started=0.0, echo=lines.append)
    up.check(queries([BATCH, IDLE], [IDLE]))  # the sequencer's first trigger had events, its next none
    assert len(lines) == 1 and "resumed from their checkpoints;" in lines[0] and "caught up" not in lines[0]
