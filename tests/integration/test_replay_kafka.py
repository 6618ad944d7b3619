"""`isrflow replay kafka://HOST:PORT/TOPIC` with offset and time bounds, on the real broker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streaming.cli import main
from streaming.engine.local import run_local
from streaming.infra.localkafka import create_topic
from streaming.io.delta import comparable, read_decisions_jsonl, read_delta
from streaming.jobs.demo import bundled_scenario

pytestmark = [pytest.mark.kafka]

BASE_MS = 1_790_000_000_000  # 2026-09-21T14:13:20Z


@pytest.fixture(scope="module")
def events_topic(kafka_broker: Any) -> str:
    """The bundled scenario on a one-partition topic, record i stamped BASE_MS + i seconds."""
    from kafka import KafkaProducer

    # Records stamped in the past: without this, time retention (7 days) deletes them once the broker's
    # retention check runs (every 5 minutes), and a long test session sees an empty topic.
    create_topic(kafka_broker.bootstrap_servers, "replay-events", 1, configs={"retention.ms": "-1"})
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers, acks="all")
    for i, value in enumerate(bundled_scenario()):
        producer.send("replay-events", value=value, timestamp_ms=BASE_MS + i * 1000)
    producer.flush()
    producer.close()
    return f"kafka://{kafka_broker.bootstrap_servers}/replay-events"


def offsets_in(out: Path) -> set[int]:
    return {r["source_offset"] for r in read_delta(out / "audit")} | {
        r["source_offset"] for r in read_delta(out / "quarantine")}


def test_offset_bounds(events_topic: str, tmp_path: Path) -> None:
    assert main(["replay", events_topic, "--out", str(tmp_path), "--engine", "local",
                 "--from-offset", "5", "--to-offset", "20"]) == 0
    assert offsets_in(tmp_path) == set(range(5, 20))
    assert (tmp_path / "report.html").exists()


def test_time_bounds(events_topic: str, tmp_path: Path) -> None:
    assert main(["replay", events_topic, "--out", str(tmp_path), "--engine", "local",
                 "--from", "2026-09-21T14:13:30Z", "--to", "2026-09-21T14:13:40Z"]) == 0
    assert offsets_in(tmp_path) == set(range(10, 20))


def test_whole_topic_with_both_engines(events_topic: str, spark: Any, tmp_path: Path) -> None:
    expected = run_local(enumerate(bundled_scenario()))
    for engine in ("local", "spark"):
        out = tmp_path / engine
        assert main(["replay", events_topic, "--out", str(out), "--engine", engine]) == 0
        assert comparable(read_decisions_jsonl(out / "decisions.jsonl")) == comparable(expected.decisions)
        assert comparable(read_delta(out / "audit")) == comparable(expected.audit)
        quarantine = read_delta(out / "quarantine")
        assert [(q["source"], q["source_offset"]) for q in quarantine] == [("kafka", 38)]


def test_a_topic_with_several_partitions_is_refused(kafka_broker: Any, tmp_path: Path, capsys: Any) -> None:
    create_topic(kafka_broker.bootstrap_servers, "replay-three", 3)
    code = main(["replay", f"kafka://{kafka_broker.bootstrap_servers}/replay-three", "--out", str(tmp_path),
                 "--engine", "local"])
    assert code == 2
    assert "has 3 partitions; isrflow needs exactly one" in capsys.readouterr().err
