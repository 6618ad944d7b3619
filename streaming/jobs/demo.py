"""`isrflow demo`: the main job on embedded defaults, end to end, in about a minute.

Starts a local Kafka broker, creates the events and decisions topics, starts both streaming queries,
publishes the bundled incident scenario with kafka-python, waits for every event to be decided, then
prints what happened and shuts everything down.
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from schemas.events import BrokerChange, ControllerChange, LeaderImbalanceCheck
from statemachine.elections import Election
from statemachine.errors import Outcome
from streaming.io.delta import read_delta
from streaming.io.kafkaclient import KafkaSettings

EVENTS_TOPIC = "isrflow-events"
DECISIONS_TOPIC = "isrflow-decisions"


def bundled_scenario() -> list[bytes]:
    text = resources.files("streaming").joinpath("scenarios/incident.jsonl").read_text(encoding="utf-8")
    return [line.encode() for line in text.splitlines() if line.strip()]


def publish(kafka: KafkaSettings | str, topic: str, records: Sequence[bytes]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(**KafkaSettings.of(kafka).python_kwargs(), acks="all", enable_idempotence=True)
    try:
        for value in records:
            producer.send(topic, value=value)
        producer.flush()
    finally:
        producer.close()


def consume_decisions(kafka: KafkaSettings | str, topic: str, idle_ms: int = 3000) -> list[dict[str, Any]]:
    """Every committed decision on the sink topic, as a downstream consumer sees them."""
    import json

    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, **KafkaSettings.of(kafka).python_kwargs(), auto_offset_reset="earliest",
                             isolation_level="read_committed", enable_auto_commit=False,
                             consumer_timeout_ms=idle_ms)
    try:
        return [json.loads(record.value) for record in consumer]
    finally:
        consumer.close()


def wait_for_offset(audit: Path, quarantine: Path, last_offset: int, timeout: float) -> None:
    """Until every offset up to `last_offset` is in the audit or the quarantine."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen: set[int] = set()
        for path in (audit, quarantine):
            try:
                seen.update(r["source_offset"] for r in read_delta(path))
            except Exception:  # not created yet, or its first commit is still being written
                continue
        if last_offset in seen:
            return
        time.sleep(1.0)
    raise TimeoutError(f"the pipeline did not reach offset {last_offset} within {timeout:.0f}s")


def summarize(audit: list[dict[str, Any]], decisions: list[dict[str, Any]], quarantined: int) -> str:
    """What happened, in a few lines and a table."""
    from rich.console import Console
    from rich.table import Table

    lines = ["What the controller decided:"]
    for row in sorted((a for a in audit if a["partition"] is None), key=lambda a: a["source_offset"]):
        if row["event_type"] in (BrokerChange.type, ControllerChange.type, LeaderImbalanceCheck.type) or row["error"]:
            tag = f" [{row['error']}]" if row["error"] else ""
            lines.append(f"  {row['event_ts'] or '':<24} {row['message']}{tag}")
    elections = Counter(d["election"] for d in decisions if d["election"])
    rejected = Counter(a["error"] for a in audit if a["outcome"] == Outcome.REJECTED)
    unclean = sorted({f"{d['topic']}-{d['partition']}" for d in decisions
                      if d["election"] == Election.OFFLINE_UNCLEAN})
    lines.append(f"{len(decisions)} decisions on the sink topic; elections: "
                 + ", ".join(f"{k} {v}" for k, v in sorted(elections.items())))
    lines.append("rejected: " + (", ".join(f"{k} {v}" for k, v in sorted(rejected.items())) or "none")
                 + f"; quarantined records: {quarantined}")
    if unclean:
        lines.append(f"unclean elections (data loss possible): {', '.join(unclean)}")

    last: dict[tuple[str, int], dict[str, Any]] = {}
    last_election: dict[tuple[str, int], str] = {}
    changes: Counter[tuple[str, int]] = Counter()
    for d in decisions:
        key = (d["topic"], d["partition"])
        if key in last and last[key]["leader"] != d["leader"]:
            changes[key] += 1
        last[key] = d
        if d["election"]:
            last_election[key] = d["election"]
    table = Table(title="Partitions now (last decision on the sink topic)")
    for column in ("partition", "leader", "isr", "replicas", "leader epoch", "partition epoch", "leader changes",
                   "last election"):
        table.add_column(column)
    for (topic, partition), d in sorted(last.items()):
        table.add_row(f"{topic}-{partition}", str(d["leader"]), str(d["isr"]), str(d["replicas"]),
                      str(d["leader_epoch"]), str(d["partition_epoch"]), str(changes[(topic, partition)]),
                      last_election.get((topic, partition), "-"))
    console = Console(width=120, record=True)
    with console.capture() as capture:
        console.print(table)
    return "\n".join(lines) + "\n" + capture.get()


def demo(port: int = 9092, work_dir: Path = Path("out/demo"), master: str | None = None,
         spark_conf: dict[str, str] | None = None, rules: str = "zk") -> int:
    from statemachine.controller import ControllerConfig
    from statemachine.rules import rules_named
    from streaming.engine.counts import BatchCounts
    from streaming.engine.pipeline import progress_listener, start_pipeline
    from streaming.engine.session import build_spark
    from streaming.engine.sinks import DecisionPublisher
    from streaming.engine.sources import kafka_events
    from streaming.infra.localkafka import LocalKafkaBroker, create_topic
    from streaming.io.layout import Checkpoints, Lake

    work = work_dir.resolve()
    shutil.rmtree(work, ignore_errors=True)
    records = bundled_scenario()
    print(f"isrflow demo: starting a local Kafka broker on 127.0.0.1:{port} ...")
    with LocalKafkaBroker(port=port) as broker:
        bootstrap = broker.bootstrap_servers
        create_topic(bootstrap, EVENTS_TOPIC, 1)
        create_topic(bootstrap, DECISIONS_TOPIC, 1)
        spark = build_spark("isrflow-demo", master, spark_conf)
        lake = Lake.beside(work / "audit")
        counts = BatchCounts()
        spark.streams.addListener(progress_listener(counts))
        publisher = DecisionPublisher(bootstrap, DECISIONS_TOPIC, "isrflow-demo")
        pipeline = start_pipeline(spark, kafka_events(spark, bootstrap, EVENTS_TOPIC), lake,
                                  Checkpoints(work / "checkpoints"), ControllerConfig(rules=rules_named(rules)),
                                  {"processingTime": "2 seconds"}, publisher, counts)
        try:
            print(f"publishing the bundled incident ({len(records)} events) to {EVENTS_TOPIC} ...")
            publish(bootstrap, EVENTS_TOPIC, records)
            wait_for_offset(lake.audit, lake.quarantine, len(records) - 1, timeout=300)
        finally:
            pipeline.stop_gracefully()
            publisher.close()
        decisions = consume_decisions(bootstrap, DECISIONS_TOPIC)
        audit = read_delta(lake.audit)
        quarantined = len(read_delta(lake.quarantine)) if (lake.quarantine / "_delta_log").exists() else 0
        print(summarize(audit, decisions, quarantined))
        requests = ", requests" if (lake.requests / "_delta_log").exists() else ""  # the zk rules' requests
        print(f"tables: {work} (audit, decisions, commands, bronze, quarantine{requests}: Delta); "
              f"replay the same log offline: isrflow replay {resources.files('streaming')}/scenarios/incident.jsonl "
              "--out out/incident --engine local")
        spark.stop()
    return 0
