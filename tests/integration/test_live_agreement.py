"""The partition query's agreement step (streaming/history/live.py) on real Delta tables with Spark: it compares
only behind a bridge (an observed table), and a re-run of a micro-batch appends its rows once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from schemas.tables import OBSERVED
from streaming.engine.sequencer import append_idempotent
from streaming.history.live import agreement_writer
from streaming.io.delta import read_delta
from streaming.io.layout import Lake

pytestmark = pytest.mark.spark

SIDE = {"leader": 2, "isr": [2, 3], "leader_epoch": 1, "partition_epoch": 1, "leader_recovery_state": "RECOVERED",
        "eligible_leader_replicas": [], "last_known_elr": []}


def observed(partition: int, source_offset: int, event_id: str) -> dict[str, Any]:
    return {**SIDE, "topic": "t", "partition": partition, "replicas": [1, 2, 3], "adding_replicas": [],
            "removing_replicas": [], "directories": [], "source_offset": source_offset, "cause": "BrokerChange",
            "cause_event_id": event_id, "decision": True, "batch_id": 0}


def decision(partition: int, leader_epoch: int) -> dict[str, Any]:
    return {**SIDE, "topic": "t", "partition": partition, "leader_epoch": leader_epoch, "source_offset": 40,
            "cause": "BrokerChange", "cause_event_id": "kraft-9"}


def test_agreement_only_behind_a_bridge_and_once_per_batch(spark: Any, tmp_path: Path) -> None:
    lake = Lake.beside(tmp_path / "audit")
    agree = agreement_writer(lake)
    audit = spark.createDataFrame([("kraft-9",), ("kraft-9",), ("kraft-12",)], "event_id string")
    decisions = [decision(0, 1), decision(1, 2)]  # partition 1: a leader epoch bump the controller did not make
    assert agree(audit, decisions, 0) is None  # no observed table: `run` is not behind a bridge
    assert not (lake.agreement / "_delta_log").exists()
    # The controller's changes: two for the batch's event, one for an event of another batch.
    append_idempotent(spark, [observed(0, 7, "kraft-9"), observed(1, 8, "kraft-9"), observed(0, 30, "kraft-31")],
                      OBSERVED, lake.observed, "isrflow-observed", 0)
    first = agree(audit, decisions, 0)
    assert [(r["partition"], r["match"]) for r in first] == [(0, True), (1, False)]
    assert agree(audit, decisions, 0) == first  # the batch re-run after a failure
    rows = sorted(read_delta(lake.agreement), key=lambda r: r["partition"])
    assert [(r["partition"], r["source_offset"], r["match"], list(r["differing"]), r["batch_id"]) for r in rows] == [
        (0, 7, True, [], 0), (1, 8, False, ["leader_epoch"], 0)]
    # A batch whose events the controller changed nothing for, and isrflow decided nothing: no rows.
    assert agree(spark.createDataFrame([("kraft-12",)], "event_id string"), [], 1) == []
    assert len(read_delta(lake.agreement)) == 2
