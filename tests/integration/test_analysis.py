"""Incident analysis against the real things: `inspect` on the state store a Spark replay left, the report and
`explain` of a Spark replay equal to the local engine's, and the report opened in headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from statemachine.controller import ControllerConfig
from streaming.analysis.explain import explain
from streaming.analysis.inspect import read_state, state_dir
from streaming.analysis.report import build_report, write_report
from streaming.cli import main
from streaming.engine.local import run_local, write_outputs
from streaming.io.delta import read_decisions_jsonl
from streaming.io.eventlog import read_event_log

ROOT = Path(__file__).resolve().parents[2]
INCIDENT = ROOT / "streaming" / "scenarios" / "incident.jsonl"
ARTIFACTS = ROOT / "test-artifacts"
COMPARED = ("leader", "isr", "leader_epoch", "partition_epoch", "replicas", "adding_replicas", "removing_replicas",
            "leader_recovery_state")


def _last_decisions(out: Path) -> dict[tuple[str, int], dict[str, Any]]:
    last: dict[tuple[str, int], dict[str, Any]] = {}
    for d in read_decisions_jsonl(out / "decisions.jsonl"):  # log order
        last[(d["topic"], d["partition"])] = d
    return last


@pytest.fixture(scope="module")
def spark_replay(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from streaming.jobs.replay import replay_spark

    out = tmp_path_factory.mktemp("spark-replay") / "out"
    replay_spark(spark, INCIDENT, out, ControllerConfig())
    return out


@pytest.fixture(scope="module")
def local_replay(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("local-replay") / "out"
    write_outputs(run_local(read_event_log(INCIDENT), ControllerConfig()), out)
    return out


@pytest.mark.spark
def test_inspect_records_equal_the_last_decision_per_partition(spark: Any, spark_replay: Path) -> None:
    records = read_state(spark, spark_replay / "_pipeline" / "checkpoints")
    last = _last_decisions(spark_replay)
    assert [(r["topic"], r["partition"]) for r in records] == sorted(last)
    for r in records:
        d = last[(r["topic"], r["partition"])]
        assert {c: r[c] for c in COMPARED} == {c: d[c] for c in COMPARED}, (r["topic"], r["partition"])
        assert r["state"] == ("OfflinePartition" if d["leader"] == -1 else "OnlinePartition")
        assert set(r["replica_states"]) <= set(r["replicas"]) | set(r["removing_replicas"])
    # The reassigned partition holds its new replica set and no reassignment in progress.
    orders0 = next(r for r in records if (r["topic"], r["partition"]) == ("orders", 0))
    assert orders0["replicas"] == [2, 4, 3] and not orders0["reassignment_in_progress"]
    # The query folder itself is accepted too, and the filters narrow it.
    narrowed = read_state(spark, spark_replay / "_pipeline" / "checkpoints" / "partitions", "payments", 0)
    assert narrowed == [r for r in records if (r["topic"], r["partition"]) == ("payments", 0)]


@pytest.mark.spark
def test_inspect_command_json_and_table(spark: Any, spark_replay: Path, capsys: pytest.CaptureFixture[str]) -> None:
    checkpoints = spark_replay / "_pipeline" / "checkpoints"
    assert main(["inspect", str(checkpoints), "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    expected = read_state(spark, checkpoints)
    assert len(lines) == len(expected)
    for got, want in zip(lines, expected, strict=True):
        assert got == {**want, "replica_states": {str(k): v for k, v in want["replica_states"].items()}}

    assert main(["inspect", str(checkpoints), "--topic", "payments"]) == 0
    table = capsys.readouterr().out
    assert "4 partition state records" in table and "payments" in table and "orders" not in table
    assert not spark.sparkContext._jsc.sc().isStopped()  # the session inspect found is left running

    assert main(["inspect", str(checkpoints), "--topic", "nope"]) == 2
    assert "no state record" in capsys.readouterr().err


@pytest.mark.spark
def test_spark_replay_report_and_explain_equal_the_local_engine(spark_replay: Path, local_replay: Path) -> None:
    report = write_report(spark_replay)
    html = report.read_text(encoding="utf-8")
    assert html.count("data:image/png;base64,") == 3
    assert build_report(spark_replay).summary == build_report(local_replay).summary
    for topic, partition in (("payments", 0), ("orders", 0), ("orders", 2)):
        # The controller's requests (zk rules) included: both engines write requests.jsonl.
        assert explain(spark_replay, topic, partition) == explain(local_replay, topic, partition)
    assert "\n  requests   batch " in explain(spark_replay, "payments", 0)
    # The audit table path works as a source too (decisions.jsonl found beside it).
    assert explain(spark_replay / "audit", "payments", 0) == explain(spark_replay, "payments", 0)


def test_state_dir_resolution(tmp_path: Path) -> None:
    (tmp_path / "root" / "partitions" / "state").mkdir(parents=True)
    assert state_dir(tmp_path / "root") == tmp_path / "root" / "partitions"
    assert state_dir(tmp_path / "root" / "partitions") == tmp_path / "root" / "partitions"
    (tmp_path / "young" / "partitions" / "offsets").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="has not committed"):
        state_dir(tmp_path / "young")
    with pytest.raises(FileNotFoundError, match="not a checkpoint"):
        state_dir(tmp_path)
    with pytest.raises(FileNotFoundError, match="no such checkpoint"):
        state_dir(tmp_path / "missing")


# -- the report in a real browser ------------------------------------------------------------------------

def ensure_chromium() -> str:
    """Debian's chromium: installed here when missing and we are root, else the test is skipped."""
    found = shutil.which("chromium")
    if found:
        return found
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("chromium is not installed and the tests are not running as root, so they cannot install it "
                    "(apt-get update && apt-get install -y chromium)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]):
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"could not install chromium ({' '.join(command)}): {exc}")
        if done.returncode != 0:
            pytest.skip(f"could not install chromium ({' '.join(command)} exited {done.returncode}): "
                        f"{done.stderr.strip()[-500:]}")
    found = shutil.which("chromium")
    if not found:
        pytest.skip("apt-get installed chromium but it is not on PATH")
    return found


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars"]


def _chromium(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
                           *args], capture_output=True, text=True, timeout=180, check=False)


def _failed_loads(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines()
            if re.search(r"Failed to load resource|net::ERR_|ERR_(NAME|CONNECTION|INTERNET)|Not allowed to load", line)]


@pytest.mark.parametrize("example", ["double-failure-unclean", "rolling-restart"])
def test_report_renders_in_headless_chromium(example: str, tmp_path: Path) -> None:
    binary = ensure_chromium()
    out = tmp_path / "out"
    write_outputs(run_local(read_event_log(ROOT / "examples" / f"{example}.jsonl"), ControllerConfig()), out)
    report = write_report(out)
    html = report.read_text(encoding="utf-8")
    # Self-contained: nothing for the browser to fetch.
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    assert "http://" not in html and "https://" not in html

    dom = _chromium(binary, tmp_path / "profile-dom", "--dump-dom", report.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    images = re.findall(r'<img src="data:image/png;base64,[A-Za-z0-9+/=]{1000,}"', dom.stdout)
    assert len(images) == 3
    assert "isrflow incident report" in dom.stdout and "What happened" in dom.stdout
    assert not _failed_loads(dom.stderr), _failed_loads(dom.stderr)

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / f"report-{example}.png"
    shot.unlink(missing_ok=True)
    taken = _chromium(binary, tmp_path / "profile-shot", f"--screenshot={shot}", "--window-size=1280,2000",
                      report.as_uri())
    assert taken.returncode == 0, taken.stderr[-2000:]
    assert not _failed_loads(taken.stderr), _failed_loads(taken.stderr)
    assert shot.is_file() and shot.stat().st_size > 50_000  # a rendered page, not a blank one
    shutil.copyfile(report, ARTIFACTS / f"report-{example}.html")
