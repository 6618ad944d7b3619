"""The example event logs: committed files are exactly what examples/generate.py writes, and each replays
(local engine) into the story its README tells."""

from __future__ import annotations

import importlib.util
import sys
import time
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from statemachine.controller import ControllerConfig
from streaming.engine.local import ReplayResult, run_local
from streaming.io.eventlog import read_event_log

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NAMES = ["rolling-restart.jsonl", "double-failure-unclean.jsonl", "reassignment.jsonl", "zombie-controller.jsonl"]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("examples_generate", EXAMPLES / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generate() -> ModuleType:
    return _generator()


@pytest.fixture(scope="module")
def timed() -> dict[str, tuple[ReplayResult, float]]:
    out = {}
    for name in NAMES:
        started = time.monotonic()
        result = run_local(read_event_log(EXAMPLES / name), ControllerConfig())
        out[name] = (result, time.monotonic() - started)
    return out


@pytest.fixture(scope="module")
def replayed(timed: dict[str, tuple[ReplayResult, float]]) -> dict[str, ReplayResult]:
    return {name: result for name, (result, _) in timed.items()}


def test_the_examples_are_the_ones_listed(generate: ModuleType) -> None:
    assert sorted(generate.EXAMPLES) == sorted(NAMES)
    assert sorted(p.name for p in EXAMPLES.glob("*.jsonl")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_committed_file_equals_generator_output(generate: ModuleType, name: str) -> None:
    committed = (EXAMPLES / name).read_text(encoding="utf-8")
    assert committed == generate.render(name), f"examples/{name} is stale: run examples/generate.py"


def test_generate_check_mode(generate: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small = {k: v for k, v in generate.EXAMPLES.items() if k != "rolling-restart.jsonl"}
    monkeypatch.setattr(generate, "EXAMPLES", small)
    assert generate.main(["--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(small)
    assert generate.main(["--check", "--out", str(tmp_path)]) == 0
    (tmp_path / "reassignment.jsonl").write_text("{}\n", encoding="utf-8")
    assert generate.main(["--check", "--out", str(tmp_path)]) == 1


@pytest.mark.parametrize("name", NAMES)
def test_every_example_replays_quickly_and_cleanly(timed: dict[str, tuple[ReplayResult, float]], name: str) -> None:
    result, seconds = timed[name]
    assert seconds < 20
    assert result.quarantined == 0
    assert result.decisions
    # The logs are built with correct epochs: nothing is refused for a stale broker or leader epoch.
    errors = {a["error"] for a in result.audit if a["outcome"] == "REJECTED"}
    assert not errors & {"STALE_BROKER_EPOCH", "FENCED_LEADER_EPOCH", "INVALID_UPDATE_VERSION", "NOT_CONTROLLER",
                         "INVALID_TRANSITION", "INVALID_REQUEST"}


def _final(result: ReplayResult) -> dict[tuple[str, int], dict]:
    last: dict[tuple[str, int], dict] = {}
    for d in result.decisions:
        last[(d["topic"], d["partition"])] = d
    return last


def test_rolling_restart_story(replayed: dict[str, ReplayResult]) -> None:
    result = replayed["rolling-restart.jsonl"]
    final = _final(result)
    assert len(final) == 300
    types = Counter(a["event_type"] for a in result.audit if a["partition"] is None)
    assert types["LeaderImbalanceCheck"] == 1
    changes = Counter((a["broker_change"], a["broker_id"]) for a in result.audit
                      if a["partition"] is None and a["event_type"] == "BrokerChange" and a["outcome"] == "ACCEPTED")
    # Each of the 6 brokers: started at creation, then shut down, stopped and started again.
    assert changes == {(change, b): n for b in range(1, 7)
                       for change, n in (("STARTUP", 2), ("CONTROLLED_SHUTDOWN", 1), ("FAILURE", 1))}
    # Never offline; every ISR is full again at the end; the imbalance check gave back the preferred leaders.
    assert not [a for a in result.audit if a["partition"] is not None and a["leader_after"] == -1]
    assert all(sorted(d["isr"]) == sorted(d["replicas"]) for d in final.values())
    assert all(d["leader"] == d["replicas"][0] for d in final.values())
    assert Counter(a["election"] for a in result.audit if a["election"])["CONTROLLED_SHUTDOWN"] == 550
    assert len(result.audit) < 5000 and result.events < 1000


def test_double_failure_unclean_story(replayed: dict[str, ReplayResult]) -> None:
    result = replayed["double-failure-unclean.jsonl"]
    offline = {(a["topic"], a["partition"]) for a in result.audit
               if a["partition"] is not None and a["to_state"] == "OfflinePartition" and a["leader_after"] == -1}
    assert offline == {("orders", 1), ("orders", 6), ("payments", 0), ("payments", 1)}
    unclean = [(a["topic"], a["partition"], a["event_type"]) for a in result.audit
               if a["election"] == "OFFLINE_UNCLEAN"]
    assert unclean == [("orders", 1, "ElectLeaders"), ("payments", 1, "AlterTopicConfig")]
    rejected = [(a["topic"], a["partition"], a["error"]) for a in result.audit if a["outcome"] == "REJECTED"]
    assert rejected == [("payments", 0, "ELIGIBLE_LEADERS_NOT_AVAILABLE")]
    assert all(d["leader"] != -1 for d in _final(result).values())


def test_reassignment_story(replayed: dict[str, ReplayResult]) -> None:
    result = replayed["reassignment.jsonl"]
    final = _final(result)
    assert len(final) == 12
    assert all(1 not in d["replicas"] and not d["adding_replicas"] and not d["removing_replicas"]
               for d in final.values())
    assert {b for d in final.values() for b in d["replicas"]} == {2, 3, 4, 5}
    assert sum(1 for a in result.audit if a["election"] == "REASSIGN") == 4
    moves = [a["replicas_after"] for a in result.audit
             if a["event_type"] == "ReassignPartitions" and a["partition"] == 9]
    # Towards [5, 2, 3], cancelled (back to the origin replicas, 5 gone), then towards [2, 3, 5].
    assert moves == [[5, 2, 3, 1], [2, 3, 1], [2, 3, 5, 1]]


def test_zombie_controller_story(replayed: dict[str, ReplayResult]) -> None:
    result = replayed["zombie-controller.jsonl"]
    errors = Counter(a["error"] for a in result.audit if a["outcome"] == "REJECTED")
    assert errors == {"STALE_CONTROLLER_EPOCH": 5, "ELECTION_NOT_NEEDED": 6, "DUPLICATE_EVENT": 1}
    stale = [a for a in result.audit if a["error"] == "STALE_CONTROLLER_EPOCH"]
    # The zombie's events change nothing: no decision comes from them.
    stale_ids = {a["event_id"] for a in stale}
    assert not [d for d in result.decisions if d["cause_event_id"] in stale_ids]
    failovers = [(a["controller_epoch"], a["controller_id"]) for a in result.audit
                 if a["partition"] is None and a["action"] == "CONTROLLER_FAILOVER"]
    # A ControllerChange names the second controller; the third one took over implicitly (no controller id).
    assert len(failovers) == 2 and failovers[0][1] is not None and failovers[1][1] is None


def test_the_bundled_demo_scenario_is_what_its_builder_writes() -> None:
    from streaming.infra.scenario import incident_scenario

    bundled = Path(__file__).resolve().parents[2] / "streaming" / "scenarios" / "incident.jsonl"
    assert bundled.read_text(encoding="utf-8").splitlines() == incident_scenario().lines()
