"""`isrflow demo --zookeeper`: a real ZooKeeper-mode cluster through a failure, a controlled shutdown and a
reassignment, its history decided by `isrflow run` under the zk rules; every decision of the real controller is shown
next to isrflow's. The cluster's processes are stopped by pid inside the demo."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from streaming.cli import main
from streaming.io.delta import read_delta
from streaming.io.jsonl import read_jsonl

pytestmark = pytest.mark.zk_cluster


def test_demo_zookeeper_runs_the_pipeline_on_a_real_cluster_and_agrees(spark: Any, tmp_path: Path,
                                                                       capsys: Any) -> None:
    assert main(["demo", "--zookeeper", "--work-dir", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    work = tmp_path / "demo-zookeeper"
    rows = read_jsonl(work / "agreement.jsonl")
    assert {"CreateTopic", "BrokerChange"} <= {r["cause"] for r in rows}
    assert len(rows) >= 10 and all(r["match"] for r in rows), [r for r in rows if not r["match"]]
    assert re.search(rf"agreement: {len(rows)}/{len(rows)} decisions of the real controller", out)
    # The import read what the controllers logged reading (their controller.log), the first one's failover at least.
    assert re.search(r"read what the controllers read from \S+controller: [1-9]\d* failovers", out)
    # and the leaders' AlterPartition requests (their server.log): the reassignment's new replica joined the ISR
    assert re.search(r"read the leaders' AlterPartition requests from \S+server: [1-9]\d* answered", out)
    assert all(h["match"] for h in read_jsonl(work / "histories.jsonl"))
    # The reassignment's states are part of the history, and the decisions came through the pipeline.
    observed = read_jsonl(work / "observed.jsonl")
    assert any(o["topic"] == "payments" and o["partition"] == 1 and o["replicas"] == [1, 3] for o in observed)
    assert len(read_delta(work / "decisions")) == len(observed)
