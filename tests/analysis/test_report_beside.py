"""The report of `replay --engine local` written beside the engine (streaming.jobs.beside: a process of its own that
reads the audit's record batches as the engine makes them) is the report `isrflow report DIR` writes from the
finished folder; an error of the report's process is raised in the replay's with its words, and no process is left."""

from __future__ import annotations

import multiprocessing
import re
from pathlib import Path

import pytest

from statemachine.controller import ControllerConfig
from statemachine.rules import rules_named
from streaming.analysis.report import write_report
from streaming.engine.local import replay_local
from streaming.io import columns
from streaming.io.eventlog import read_event_log
from streaming.jobs.beside import ReportBeside
from streaming.jobs.replay import ReplayOptions, replay

ROOT = Path(__file__).resolve().parents[2]
ZK_HISTORY = ROOT / "tests" / "integration" / "zklog" / "zookeeper-3.9-ibp-2.6"  # a real cluster's, with observed


def _page(path: Path) -> str:
    """A report but the time it was generated."""
    return re.sub(r"generated [0-9-]+ [0-9:]+ UTC", "generated T", path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("source, rules", [(str(ROOT / "examples" / "reassignment.jsonl"), "zk"),
                                           (str(ROOT / "examples" / "double-failure-unclean.jsonl"), "kraft"),
                                           (f"zk:{ZK_HISTORY}", "zk")])
def test_the_report_beside_the_engine_is_the_report_of_the_folder(tmp_path: Path, source: str, rules: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(columns, "BATCH_ROWS", 7)  # many record batches through the pipe, events cut across them
    out = tmp_path / "out"
    said = replay(ReplayOptions(source, out, engine="local", config=ControllerConfig(rules=rules_named(rules))))

    assert f"{out / 'report.html'}" in said
    again = write_report(out, tmp_path / "again.html")  # what `isrflow report DIR --out FILE` runs
    assert _page(out / "report.html") == _page(again)
    assert ("isrflow vs the controller" in _page(again)) == source.startswith("zk:")
    assert not multiprocessing.active_children()


def _batches(tmp_path: Path) -> list[object]:
    made: list[object] = []
    replay_local(read_event_log(ROOT / "examples" / "reassignment.jsonl"), tmp_path / "replay", ControllerConfig(),
                 audit_batches=made.append)
    return made


def test_an_error_writing_the_report_is_raised_in_the_replays_process(tmp_path: Path) -> None:
    batches = _batches(tmp_path)
    (tmp_path / "file").write_text("")
    with ReportBeside(tmp_path / "replay", tmp_path / "file" / "report.html", agreement=False) as beside:
        for batch in batches:
            beside.send(batch)
        beside.replayed()
        with pytest.raises(FileExistsError, match=re.escape(str(tmp_path / "file"))):
            beside.result()
    assert beside._process.exitcode == 0 and not multiprocessing.active_children()


def test_an_error_reading_the_batches_is_raised_at_the_next_send(tmp_path: Path) -> None:
    import pyarrow as pa

    batches = _batches(tmp_path)
    with (pytest.raises(pa.ArrowInvalid, match="malformed"),
          ReportBeside(tmp_path / "replay", tmp_path / "report.html", agreement=False) as beside):
        beside.send(pa.RecordBatch.from_pydict({"not": ["an audit row"]}))  # its columns are not the audit's
        for batch in batches * 1000:  # until the pipe says the process has ended
            beside.send(batch)
    assert not multiprocessing.active_children()


def test_the_report_process_is_stopped_when_the_replay_fails(tmp_path: Path) -> None:
    with (pytest.raises(RuntimeError, match="the engine failed"),
          ReportBeside(tmp_path, tmp_path / "report.html", agreement=True) as beside):
        pid = beside._process.pid
        raise RuntimeError("the engine failed")
    assert not Path(f"/proc/{pid}").exists() and not multiprocessing.active_children()
