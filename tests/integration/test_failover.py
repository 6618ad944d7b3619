"""The live shadow through a failover of its own Kafka partitions. A real 3-broker KRaft cluster whose internal
topics have 3 replicas; one broker leads `__transaction_state`, the events topic and the decisions topic. `isrflow
bridge` follows the controller's metadata log into the events topic and `isrflow run` (a processing-time trigger)
decides it into the decisions topic. Then that broker is killed (kill -9): the bridge publishes the controller's
next records within 30 s of the broker's fencing, `run` publishes the failover's decisions, and nothing is lost or
duplicated on either topic."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from streaming.history.agreement import from_table_rows
from streaming.infra.kraftcluster import KraftCluster
from streaming.io.delta import comparable, read_delta
from streaming.io.layout import Lake
from streaming.jobs.bridge import KRAFT
from streaming.jobs.demo import consume_decisions
from streaming.kraft.convert import convert, event_offset
from streaming.kraft.metadatalog import read_metadata_log

pytestmark = [pytest.mark.kraft_cluster, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]
EVENTS, DECISIONS = "shadow-events", "shadow-decisions"
# The failover's deadline: from the controller fencing the dead broker to the bridge publishing what came next.
PUBLISHED_WITHIN_S = 30


def bridged(bootstrap: str) -> list[tuple[int, dict[str, Any]]]:
    """The events topic as a read_committed consumer sees it: (metadata offset header, record), every record."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                             enable_auto_commit=False, consumer_timeout_ms=3000)
    try:
        tp = TopicPartition(EVENTS, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        return [(int(dict(r.headers)[KRAFT.header]), json.loads(r.value)) for r in consumer]
    finally:
        consumer.close()


def wait_for(ok: Callable[[], Any], timeout: float, what: str, procs: dict[str, subprocess.Popen[bytes]],
             logs: dict[str, Path]) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := ok()):
        for name, proc in procs.items():
            assert proc.poll() is None, f"{name} exited ({proc.returncode}):\n{logs[name].read_text()[-4000:]}"
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f}s\n" + "\n".join(
            f"--- {name}\n{log.read_text()[-3000:]}" for name, log in logs.items())
        time.sleep(0.5)
    return result


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[KraftCluster]:
    with KraftCluster(brokers=3, root=tmp_path / "cluster", internal_replication=3) as started:
        yield started


@pytest.fixture
def processes() -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """The bridge and `run`, stopped by pid on teardown even if the test fails."""
    started: dict[str, subprocess.Popen[bytes]] = {}
    yield started
    for proc in started.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_bridge_and_run_keep_publishing_through_the_failover_of_their_partitions_leader(
        cluster: KraftCluster, processes: dict[str, subprocess.Popen[bytes]], tmp_path: Path) -> None:
    bootstrap = cluster.bootstrap_servers
    # __transaction_state exists once a transactional producer has asked for its coordinator.
    warmup = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="warmup", enable_idempotence=True)
    warmup.init_transactions()
    warmup.close()
    leader = cluster.describe("__transaction_state")[0]["leader"]
    others = [b for b in cluster.brokers if b != leader]
    for topic in (EVENTS, DECISIONS):
        cluster.create_topic(topic, {0: [leader, *others]})
    lake = Lake.beside(tmp_path / "lake" / "audit")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    logs = {name: tmp_path / f"{name}.out" for name in ("bridge", "run")}
    commands = {
        "bridge": ["bridge", "--metadata-dir", str(cluster.metadata_dir), "--bootstrap-servers", bootstrap,
                   "--events-topic", EVENTS, "--poll-seconds", "1"],
        "run": ["run", "--bootstrap-servers", bootstrap, "--events-topic", EVENTS, "--decisions-topic", DECISIONS,
                "--audit-table", str(lake.audit), "--checkpoint-dir", str(tmp_path / "checkpoints"),
                "--rules", "kraft", "--trigger", "1 second", "--state-partitions", "2"],
    }
    for name, args in commands.items():
        with logs[name].open("w") as out:
            processes[name] = subprocess.Popen([sys.executable, "-m", "streaming", *args], stdout=out,
                                               stderr=subprocess.STDOUT, env=env, cwd=ROOT)

    def published_decisions(servers: str, ok: Callable[[dict[str, Any]], bool]) -> Callable[[], bool]:
        return lambda: any(ok(d) for d in consume_decisions(servers, DECISIONS, idle_ms=1000))

    wait_for(published_decisions(bootstrap, lambda d: d["topic"] == DECISIONS), 240,
             "run published the decisions topic's own creation", processes, logs)

    # The broker that leads the coordinator and both topics dies; the controller fences it, moves its leaderships,
    # and then a new topic is created: the records the bridge must publish through the failover.
    cluster.kill(leader)
    cluster.wait_fenced(leader)
    fenced = time.monotonic()
    cluster.create_topic("after-failover", {0: others})
    survivors = ",".join(f"127.0.0.1:{cluster.brokers[b].port}" for b in others)

    def created() -> bool:
        return any(r["type"] == "CreateTopic" and r.get("topic") == "after-failover" for _, r in bridged(survivors))

    wait_for(created, PUBLISHED_WITHIN_S, "the bridge published the next records after the failover", processes,
             logs)
    print(f"published {time.monotonic() - fenced:.1f}s after the fencing")
    wait_for(published_decisions(survivors, lambda d: d["topic"] == "after-failover"), 180,
             "run published the decisions of the failover and of what came after", processes, logs)
    assert "isrflow: Kafka at" in logs["bridge"].read_text()  # it took a new producer, and went on

    processes["run"].send_signal(signal.SIGTERM)
    assert processes["run"].wait(timeout=120) == 0, logs["run"].read_text()[-4000:]
    processes["bridge"].send_signal(signal.SIGINT)
    assert processes["bridge"].wait(timeout=60) == 0, logs["bridge"].read_text()[-4000:]

    # No gap and no duplicate on the events topic: exactly the import's events up to the last published offset.
    everything = bridged(survivors)
    last = everything[-1][0]
    events = [r for _, r in everything if r["type"] != "ObservedDecision"]
    assert events == [e for e in convert(read_metadata_log(cluster.metadata_dir).records).events
                      if event_offset(e) <= last]
    # The decisions topic holds each decision of the table once, the failover's among them.
    on_topic = consume_decisions(survivors, DECISIONS)
    keys = Counter((d["topic"], d["partition"], d["partition_epoch"]) for d in on_topic)
    assert max(keys.values()) == 1
    assert comparable(on_topic) == comparable(read_delta(lake.decisions))
    assert {d["topic"] for d in on_topic} >= {EVENTS, DECISIONS, "after-failover"}
    moved = [d for d in on_topic if d["topic"] == EVENTS and d["leader"] != leader]
    assert moved, "no decision moved the events topic's leadership off the dead broker"
    # And every one of them is what the controller decided.
    agreement = from_table_rows(read_delta(lake.agreement))
    assert agreement and all(r["match"] for r in agreement), [r for r in agreement if not r["match"]]

