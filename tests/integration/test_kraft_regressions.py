"""Real KRaft logs on which isrflow once disagreed with the controller (kept by `make kraft-campaign`, each with a
README saying what differed): every partition history and every decision must now be reproduced."""

from __future__ import annotations

from pathlib import Path

import pytest

from statemachine.controller import ControllerConfig
from statemachine.rules import KRAFT
from streaming.io.jsonl import read_jsonl
from streaming.jobs.replay import ReplayOptions, replay

REGRESSIONS = [pytest.param(p, id=p.name)
               for p in sorted((Path(__file__).parent / "kraftlog" / "regressions").iterdir())]


@pytest.mark.parametrize("log", REGRESSIONS)
def test_every_partition_history_of_a_kept_log_is_reproduced(log: Path, tmp_path: Path) -> None:
    summary = replay(ReplayOptions(f"kraft:{log}", tmp_path, engine="local", config=ControllerConfig(rules=KRAFT)))
    histories = read_jsonl(tmp_path / "histories.jsonl")
    assert histories and all(h["match"] for h in histories), [h["first_difference"] for h in histories
                                                              if not h["match"]]
    assert "agreement with the controller: 100.0%" in summary
