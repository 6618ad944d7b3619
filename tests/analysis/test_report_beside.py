"""The report of `replay --engine local` written beside the engine (streaming.jobs.beside: a process of its own that
reads the audit's record batches as the engine makes them) is the report `isrflow report DIR` writes from the
finished folder; the agreement read as its files grow is the agreement of the whole files; an error of either
process is raised in the replay's with its words, and no process is left."""

from __future__ import annotations

import itertools
import multiprocessing
import re
import time
from pathlib import Path

import pytest

from statemachine.controller import ControllerConfig
from statemachine.rules import rules_named
from streaming.analysis.report import write_report
from streaming.engine.local import replay_local
from streaming.history.outputs import write_agreement
from streaming.io import columns
from streaming.io.eventlog import read_event_log
from streaming.jobs.beside import AgreementBeside, ReportBeside
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


def test_the_agreement_read_as_its_files_grow_is_the_agreement_of_the_whole_files(tmp_path: Path) -> None:
    import threading

    replay(ReplayOptions(f"zk:{ZK_HISTORY}", tmp_path / "out", engine="local", config=ControllerConfig()))
    whole = tmp_path / "out"
    growing = tmp_path / "growing"
    growing.mkdir()
    written = threading.Event()

    def write() -> None:  # both files a few lines at a time, the last line of decisions.jsonl without its newline
        lines = [(whole / name).read_text().splitlines(keepends=True) for name in ("observed.jsonl", "decisions.jsonl")]
        lines[1][-1] = lines[1][-1].rstrip("\n")
        try:
            with (growing / "observed.jsonl").open("w") as observed, (growing / "decisions.jsonl").open("w") as ours:
                for n, (a, b) in enumerate(itertools.zip_longest(*lines, fillvalue="")):
                    observed.write(a)
                    ours.write(b)
                    if n % 5 == 0:
                        observed.flush()
                        ours.flush()
                        time.sleep(0.005)
        finally:
            written.set()

    writer = threading.Thread(target=write)
    writer.start()
    agreed = write_agreement(growing, growing / "observed.jsonl", growing / "decisions.jsonl", written.is_set)
    writer.join()
    assert agreed == write_agreement(tmp_path, whole / "observed.jsonl", whole / "decisions.jsonl")
    assert agreed.decisions > 0
    for name in ("agreement.jsonl", "histories.jsonl"):
        assert (growing / name).read_bytes() == (whole / name).read_bytes() == (tmp_path / name).read_bytes()


def test_an_error_of_the_agreements_process_is_raised_with_its_words(tmp_path: Path) -> None:
    (tmp_path / "observed.jsonl").mkdir()  # not a file
    with (pytest.raises(IsADirectoryError, match=re.escape("observed.jsonl")),
          AgreementBeside(tmp_path, tmp_path / "observed.jsonl", tmp_path / "decisions.jsonl") as agreed):
        agreed.replayed()
        agreed.result()
    assert not multiprocessing.active_children()
