"""The Spark sequencer's rows without Spark: each micro-batch's events through `Sequencer._sequence`, the controller
resumed from the state the batch before saved, as a restarted `run` resumes it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from statemachine.controller import ControllerConfig
from statemachine.rules import KRAFT
from streaming.cli import build_parser
from streaming.engine.counts import sequencer_line
from streaming.engine.local import run_local
from streaming.engine.sequencer import Sequencer, _BatchRows
from streaming.infra.scenario import incident_scenario
from streaming.io.delta import comparable
from streaming.io.layout import Lake
from streaming.jobs.bridge import with_observed

from .test_observed_decision import failure_then_shutdown, published


def sequenced(tmp_path: Path, log: list[bytes], size: int, config: ControllerConfig,
              requests: bool = True) -> list[dict[str, Any]]:
    """The requests rows of every micro-batch of `size` events, each by a new Sequencer (a restart)."""
    rows: list[dict[str, Any]] = []
    for batch_id, start in enumerate(range(0, len(log), size)):
        sequencer = Sequencer(None, Lake.beside(tmp_path / "audit"), tmp_path / "state", config, "file",
                              requests=requests)
        controller = sequencer._controller_before(batch_id)
        out = _BatchRows()
        batch = [{"source_offset": o, "value": raw} for o, raw in enumerate(log[start:start + size], start=start)]
        sequencer._sequence(controller, batch, batch_id, out)
        sequencer.state.save(controller, batch_id, out.touched, start - 1)
        rows.extend(out.request_rows())
    return rows


def test_the_sequencer_writes_the_local_engines_requests_over_micro_batches(tmp_path: Path) -> None:
    log = [line.encode() for line in incident_scenario().lines()]
    expected = run_local(enumerate(log)).requests
    assert expected
    got = sequenced(tmp_path, log, 4, ControllerConfig())
    assert comparable(got) == comparable(expected)
    assert all(r["processed_at"] is not None for r in got)


@pytest.mark.parametrize("config, requests", [(ControllerConfig(rules=KRAFT), True), (ControllerConfig(), False)],
                         ids=["kraft-rules", "run --no-requests"])
def test_no_requests_under_the_kraft_rules_or_when_turned_off(tmp_path: Path, config: ControllerConfig,
                                                              requests: bool) -> None:
    log = [line.encode() for line in incident_scenario().lines()]
    assert sequenced(tmp_path, log, 4, config, requests) == []


def test_run_writes_the_requests_unless_told_not_to() -> None:
    args = ["run", "--bootstrap-servers", "b", "--events-topic", "e", "--decisions-topic", "d", "--audit-table", "a"]
    assert build_parser().parse_args(args).requests
    assert not build_parser().parse_args([*args, "--no-requests"]).requests


def test_the_progress_line_counts_the_bridged_controller_decisions_apart_from_the_events(tmp_path: Path) -> None:
    """Behind `isrflow bridge` the events topic holds the controller's decisions (ObservedDecision) after each event:
    the sequencer's line counts events in as the events only."""
    result = failure_then_shutdown()
    records, _ = with_observed(result.events, result.observed, -1)
    sequencer = Sequencer(None, Lake.beside(tmp_path / "audit"), tmp_path / "state", ControllerConfig(rules=KRAFT),
                          "kafka")
    out = _BatchRows()
    batch = [{"source_offset": o, "value": raw} for o, raw in published(records)]
    sequencer._sequence(sequencer._controller_before(0), batch, 0, out)
    line = sequencer_line(0, {**out.counts(), "steps": {}, "within": {}}, 1.0)
    assert line.startswith(f"[sequencer] batch 0: {len(result.events)} events in, "
                           f"{len(result.observed)} controller decisions, 0 quarantined, ")
    assert len(result.observed) > 0 and len(batch) == len(result.events) + len(result.observed)
    # Not behind a bridge: the line as before.
    assert sequencer_line(1, {"events": 3, "observed": 0, "quarantined": 1, "commands": 2, "steps": {},
                              "within": {}}, 1.0).startswith("[sequencer] batch 1: 3 events in, 1 quarantined, ")
