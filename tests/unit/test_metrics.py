"""The Prometheus metrics of `run --metrics-port`, computed from the local engine's audit rows and decisions (the
rows the partition query hands the metrics), read back as Prometheus text. No Spark."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from schemas.events import Malformed, parse_event
from statemachine.controller import Controller, ControllerConfig
from streaming.engine.local import run_local
from streaming.engine.metrics import ShadowMetrics
from streaming.engine.sequencer import SequencerState
from streaming.infra.scenario import ScenarioBuilder

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "double-failure-unclean.jsonl"


def scrape(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Every sample of Prometheus text by sample name, then by its labels."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def exposed(metrics: ShadowMetrics) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    from prometheus_client import generate_latest

    return scrape(generate_latest(metrics.registry).decode())


def by_label(samples: dict[tuple[tuple[str, str], ...], float]) -> dict[str, float]:
    return {labels[0][1]: value for labels, value in samples.items()}


def feed(metrics: ShadowMetrics, lines: list[bytes], batches: int,
         topic_configs: dict[str, dict[str, str]] | None = None) -> Any:
    """The local engine's outputs, handed over in `batches` micro-batches of consecutive offsets."""
    result = run_local(enumerate(lines))
    step = -(-len(lines) // batches)
    for first in range(0, len(lines), step):
        offsets = range(first, first + step)
        metrics.observe_decided([a for a in result.audit if a["source_offset"] in offsets],
                                [d for d in result.decisions if d["source_offset"] in offsets])
    metrics.observe_sequenced(result.quarantined, topic_configs or {})
    return result


def test_double_failure_before_broker_3_returns() -> None:
    """examples/double-failure-unclean.jsonl up to broker 3's return (examples/README.md tells the story): two
    partitions offline, two unclean elections, one partition that cannot elect even uncleanly."""
    lines = EXAMPLE.read_bytes().splitlines()[:20]
    metrics = ShadowMetrics()
    result = feed(metrics, [*lines, b'{"type": "BrokerChange", "event_id'], 3, {"orders": {"min.insync.replicas": "2"}})
    m = exposed(metrics)

    assert by_label(m["isrflow_decisions_total"]) == {"NONE": 18, "INITIAL": 15, "OFFLINE": 5, "OFFLINE_UNCLEAN": 2}
    assert sum(by_label(m["isrflow_decisions_total"]).values()) == len(result.decisions)
    assert m["isrflow_unclean_leader_elections_total"][()] == 2
    assert by_label(m["isrflow_rejections_total"]) == {"ELIGIBLE_LEADERS_NOT_AVAILABLE": 1}
    assert m["isrflow_quarantined_records_total"][()] == 1

    assert m["isrflow_partitions"][()] == 15
    assert m["isrflow_offline_partitions"][()] == 2  # orders-6, payments-0: ISR [3], both replicas dead
    assert m["isrflow_leaderless_partitions"][()] == 2
    # Broker 2 never returns and broker 3 is down: 8 of orders' 10 partitions and 3 of payments' 5.
    assert m["isrflow_under_replicated_partitions"][()] == 11
    # min.insync.replicas=2 on orders: its partitions with an ISR of one (payments keeps the default, 1).
    assert m["isrflow_under_min_isr_partitions"][()] == 6
    # Led elsewhere than their first replica: orders-1, 2, 7 and payments-1; leaderless: orders-6, payments-0.
    assert m["isrflow_preferred_replica_imbalance_partitions"][()] == 6
    assert by_label(m["isrflow_leaders"]) == {"1": 3, "2": 0, "3": 0, "4": 5, "5": 5}

    assert m["isrflow_last_event_offset"][()] == 19
    assert m["isrflow_last_event_lag_seconds"][()] > 0  # the event's ts is in 2026-05, long gone


def test_a_deleted_topic_leaves_the_view() -> None:
    """The view keeps one entry per existing partition: a deleted topic's partitions leave it."""
    b = ScenarioBuilder()
    for broker in (1, 2):
        b.start_broker(broker)
    b.emit("CreateTopic", topic="gone", assignment={"0": [1, 2], "1": [2, 1]})
    b.emit("CreateTopic", topic="kept", assignment={"0": [1, 2]})
    b.emit("DeleteTopic", topic="gone")
    metrics = ShadowMetrics()
    feed(metrics, [json.dumps(e).encode() for e in b.events], 1)
    assert set(metrics.view.partitions) == {("kept", 0)}
    assert exposed(metrics)["isrflow_partitions"][()] == 1


def test_a_restarted_run_starts_from_the_saved_sequencer_state(tmp_path: Path) -> None:
    """A restarted run's view starts from the sequencer's saved state (a whole snapshot and a change set here):
    the same gauges as the audit rows of the whole log gave the run before it."""
    lines = EXAMPLE.read_bytes().splitlines()[:20]
    before_restart = ShadowMetrics()
    feed(before_restart, lines, 2)
    controller = Controller(ControllerConfig())
    for batch_id, first in enumerate((0, 10)):
        touched: set[tuple[str, int]] = set()
        for offset in range(first, first + 10):
            event = parse_event(lines[offset])
            assert not isinstance(event, Malformed)
            touched |= {(h.command.topic, h.command.partition) for h in controller.handle(event, offset)
                        if h.command.partition is not None}
        SequencerState(tmp_path).save(controller, batch_id, touched, first - 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.whole.json", "1.changes.json"]

    saved = SequencerState(tmp_path).latest(ControllerConfig())
    assert saved is not None
    restarted = ShadowMetrics()
    restarted.seed(saved.partitions.values(), saved.cluster.topic_configs)
    assert restarted.view.gauges() == before_restart.view.gauges()
    assert restarted.view.gauges().offline == 2
    assert SequencerState(tmp_path / "none").latest(ControllerConfig()) is None


def test_served_over_http_on_a_free_port() -> None:
    metrics = ShadowMetrics()
    port = metrics.serve(0)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            text = response.read().decode()
        assert scrape(text)["isrflow_partitions"][()] == 0
        assert "Kafka: kafka.controller:type=KafkaController,name=OfflinePartitionsCount" in text
    finally:
        metrics.close()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10)


def test_micro_batch_durations_and_state_rows() -> None:
    metrics = ShadowMetrics()
    for seconds in (0.4, 3.0):
        metrics.observe_batch("isrflow-partitions", seconds, state_rows=15)
    metrics.observe_batch("isrflow-sequencer", 1.5)
    m = exposed(metrics)
    assert by_label(m["isrflow_micro_batch_duration_seconds_count"]) == {"isrflow-partitions": 2,
                                                                          "isrflow-sequencer": 1}
    assert m["isrflow_micro_batch_duration_seconds_sum"][(("query", "isrflow-partitions"),)] == pytest.approx(3.4)
    assert m["isrflow_state_rows"][()] == 15
    # Cumulative buckets: 0.4 s is within 0.5 s, 3 s is not.
    assert m["isrflow_micro_batch_duration_seconds_bucket"][(("le", "0.5"), ("query", "isrflow-partitions"))] == 1


def test_agreement_rows_count_comparisons_and_disagreements_by_cause() -> None:
    """Behind the bridge, each partition batch's agreement rows: every row is a comparison, a row that does not
    match a disagreement, both by the cause event's type."""
    metrics = ShadowMetrics()
    metrics.observe_agreement([{"cause": "BrokerChange", "match": True}, {"cause": "BrokerChange", "match": False},
                               {"cause": "IsrChange", "match": True}])
    metrics.observe_agreement([{"cause": "IsrChange", "match": True}])
    m = exposed(metrics)
    assert by_label(m["isrflow_controller_decisions_compared_total"]) == {"BrokerChange": 2, "IsrChange": 2}
    assert by_label(m["isrflow_disagreements_total"]) == {"BrokerChange": 1}


def test_the_docs_and_the_dashboard_name_the_served_metrics() -> None:
    """docs/operations.md describes every metric `run` serves; the Grafana dashboard reads only served ones."""
    metrics = ShadowMetrics()
    feed(metrics, EXAMPLE.read_bytes().splitlines(), 1)
    metrics.observe_batch("isrflow-partitions", 1.0, state_rows=15)
    metrics.observe_agreement([{"cause": "BrokerChange", "match": False}])
    served = set(exposed(metrics))
    described = set(re.findall(r"isrflow_[a-z_]+", (ROOT / "docs" / "operations.md").read_text()))
    histogram = "isrflow_micro_batch_duration_seconds"
    assert {n for n in served if not n.startswith(histogram)} | {histogram} <= described
    assert not [n for n in served if n.endswith("_created")]  # the docs say: only the names listed
    dashboard = json.loads((ROOT / "docs" / "grafana-isrflow.json").read_text())
    read = {name for panel in dashboard["panels"] for target in panel.get("targets", [])
            for name in re.findall(r"isrflow_[a-z_]+", target["expr"])}
    assert read and read <= served


def test_run_refuses_a_metrics_port_that_is_no_port(capsys: Any) -> None:
    from streaming.cli import main

    code = main(["run", "--bootstrap-servers", "127.0.0.1:1", "--events-topic", "e", "--decisions-topic", "d",
                 "--audit-table", "audit", "--metrics-port", "70000"])
    assert code == 2
    assert "--metrics-port must be a TCP port" in capsys.readouterr().err
