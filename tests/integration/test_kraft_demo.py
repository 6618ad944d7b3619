"""`isrflow demo --kraft`: a real 1-controller + 3-broker KRaft cluster, a broker killed and one shut down, the
metadata log bridged into a topic and decided by `isrflow run` under the kraft rules; the demo shows every
decision of the real controller next to isrflow's. The cluster's processes are stopped by pid inside the demo."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from streaming.cli import main
from streaming.io.delta import read_delta
from streaming.io.jsonl import read_jsonl

pytestmark = pytest.mark.kraft_cluster


def test_demo_kraft_runs_the_pipeline_on_a_real_cluster_and_agrees(spark: Any, tmp_path: Path, capsys: Any) -> None:
    assert main(["demo", "--kraft", "--work-dir", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    work = tmp_path / "demo-kraft"
    rows = read_jsonl(work / "agreement.jsonl")
    causes = {r["cause"] for r in rows}
    # The script's failure and controlled shutdown were decided, and every observed decision was reproduced.
    assert {"CreateTopic", "BrokerChange"} <= causes
    assert len(rows) >= 15 and all(r["match"] for r in rows), [r for r in rows if not r["match"]]
    assert re.search(rf"agreement: {len(rows)}/{len(rows)} decisions of the real controller", out)
    assert "kill -9 broker 1" in out and "SIGTERM broker 2" in out
    # The decisions came through the pipeline: in its Delta table, and published on the sink topic.
    decisions = read_delta(work / "decisions")
    published = [int(n) for n in re.findall(r"\((\d+) published\)", out)]
    assert len(decisions) == sum(published) >= len(rows)
    # `run` compared them itself, live, from the controller's decisions the bridge published beside the events.
    live = read_delta(work / "agreement")
    assert live and all(r["match"] for r in live), [r for r in live if not r["match"]]
    assert {(r["cause_event_id"], r["topic"], r["partition"]) for r in live} <= {
        (r["cause_event_id"], r["topic"], r["partition"]) for r in rows}
    assert re.search(rf"{len(live)}/{len(live)} agreeing", out)
