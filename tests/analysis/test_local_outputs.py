"""`replay_local` (the outputs written as the replay goes, from the records' columns) writes what
`write_outputs(run_local(...))` writes (the rows, kept as dicts, then written): the same decisions.jsonl lines, audit,
quarantine and requests rows and requests.jsonl, under both rule sets, with a malformed record among the events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from statemachine.controller import ControllerConfig
from statemachine.rules import rules_named
from streaming.engine.local import replay_local, run_local, write_outputs
from streaming.io import columns
from streaming.io.delta import RUN_DEPENDENT_COLUMNS, read_delta
from streaming.io.eventlog import read_event_log

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _lines(path: Path) -> list[dict[str, object]]:
    return [{k: v for k, v in json.loads(line).items() if k not in RUN_DEPENDENT_COLUMNS}
            for line in path.read_text(encoding="utf-8").splitlines()]


def _rows(table: Path) -> list[dict[str, object]]:
    return [{k: v for k, v in row.items() if k not in RUN_DEPENDENT_COLUMNS} for row in read_delta(table)]


@pytest.mark.parametrize("rules", ["zk", "kraft"])
@pytest.mark.parametrize("example", ["double-failure-unclean.jsonl", "reassignment.jsonl", "zombie-controller.jsonl"])
def test_streamed_outputs_equal_the_rows_written_at_the_end(tmp_path: Path, example: str, rules: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(columns, "BATCH_ROWS", 7)  # several record batches, kept in order
    records = [*read_event_log(EXAMPLES / example)]
    records.insert(3, (3, b'{"type": "BrokerChange", "event_id": "broken"}'))  # quarantined
    records = [(offset, raw) for offset, (_, raw) in enumerate(records)]
    config = ControllerConfig(rules=rules_named(rules))
    write_outputs(run_local(records, config), tmp_path / "rows")
    summary = replay_local(records, tmp_path / "columns", config)

    assert summary.quarantined == 1 and summary.decisions > 0
    assert (_lines(tmp_path / "columns" / "decisions.jsonl")
            == _lines(tmp_path / "rows" / "decisions.jsonl"))
    assert summary.decisions == len(_lines(tmp_path / "rows" / "decisions.jsonl"))
    for table in ("audit", "quarantine", "requests"):
        assert _rows(tmp_path / "columns" / table) == _rows(tmp_path / "rows" / table), table
    assert ((tmp_path / "columns" / "requests.jsonl").read_bytes()
            == (tmp_path / "rows" / "requests.jsonl").read_bytes())
    assert (rules == "zk") == bool(_rows(tmp_path / "rows" / "requests"))
