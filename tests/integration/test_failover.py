"""The live shadow through a failover of its own Kafka partitions, in the playground an SRE tries it in
(`isrflow demo --kraft --keep-running`): a real 3-broker KRaft cluster whose internal topics have 3 replicas, one
broker leading `__transaction_state`, the events topic and the decisions topic; `isrflow bridge` follows the
controller's metadata log into the events topic and `isrflow run` (the default trigger) decides it into the
decisions topic. That broker is killed (kill -9, the playground's `kill` command): the bridge publishes the
controller's next records within 30 s of the broker's fencing, `run` publishes the failover's decisions, nothing is
lost or duplicated on either topic, and Ctrl-C stops every process the playground started."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from streaming.history.agreement import from_table_rows
from streaming.infra.cluster import listed_brokers
from streaming.io.delta import comparable, read_delta
from streaming.io.layout import Lake
from streaming.jobs.bridge import KRAFT
from streaming.jobs.demo import consume_decisions
from streaming.jobs.playground import DECISIONS_TOPIC, EVENTS_TOPIC
from streaming.kraft.convert import convert, event_offset
from streaming.kraft.metadatalog import read_metadata_log

pytestmark = [pytest.mark.kraft_cluster, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]
# The failover's deadline: from the controller fencing the dead broker to the bridge publishing what came next.
PUBLISHED_WITHIN_S = 30


class Playground:
    """`isrflow demo --kraft --keep-running` as a user runs it: its lines read as they come, commands typed in."""

    def __init__(self, work: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streaming", "demo", "--kraft", "--keep-running", "--work-dir", str(work)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"})
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.append(raw.decode(errors="replace").rstrip())

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def type(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{command}\n".encode())
        self.proc.stdin.flush()

    def wait_for(self, ok: Callable[[], Any], timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        while not (result := ok()):
            assert self.proc.poll() is None, f"the playground exited ({self.proc.returncode}):\n{self.text[-6000:]}"
            assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f}s\n{self.text[-6000:]}"
            time.sleep(0.5)
        return result


@pytest.fixture
def playground(tmp_path: Path) -> Iterator[Playground]:
    started = Playground(tmp_path / "pg")
    yield started
    if started.proc.poll() is None:  # the test failed: stop it as a user would, then for good
        started.proc.send_signal(signal.SIGINT)
        try:
            started.proc.wait(180)
        except subprocess.TimeoutExpired:
            started.proc.kill()
            started.proc.wait()


def bridged(bootstrap: str) -> list[tuple[int, dict[str, Any]]]:
    """The events topic as a read_committed consumer sees it: (metadata offset header, record), every record."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                             enable_auto_commit=False, consumer_timeout_ms=3000)
    try:
        tp = TopicPartition(EVENTS_TOPIC, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        return [(int(dict(r.headers)[KRAFT.header]), json.loads(r.value)) for r in consumer]
    finally:
        consumer.close()


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    except OSError:
        return False


def test_the_playground_shadow_keeps_publishing_through_the_failover_of_its_own_partitions(
        playground: Playground, tmp_path: Path) -> None:
    pg = playground
    guide = pg.wait_for(lambda: re.search(r"cluster\s+(\S+)\s+\(.*\n\s+(.*pid.*)\n", pg.text), 180,
                        "the playground's guide")
    ports = guide[1].split(",")
    pids = {name: int(pid) for name, pid in re.findall(r"(\w+ \d+): pid (\d+)", guide[2])}
    [leader] = {int(b) for b in re.findall(r"kill (\d+)\s+broker \d+ leads the shadow's own", pg.text)}
    shadow_pids = [int(p) for p in re.findall(r"isrflow (?:bridge|run) \(pid (\d+)", pg.text)]
    lake = Lake.beside(Path(re.search(r"Delta tables in (\S+)", pg.text)[1]) / "audit")
    survivors = ",".join(port for i, port in enumerate(ports, start=1) if i != leader)

    def published(servers: str, ok: Callable[[dict[str, Any]], bool]) -> Callable[[], bool]:
        return lambda: any(ok(d) for d in consume_decisions(servers, DECISIONS_TOPIC, idle_ms=1000))

    pg.wait_for(published(guide[1], lambda d: d["topic"] == DECISIONS_TOPIC), 240,
                "run published the decisions topic's own creation")
    pg.type(f"kill {leader}")
    admin = KafkaAdminClient(bootstrap_servers=survivors, request_timeout_ms=15000)

    def leader_fenced() -> bool:
        try:
            return leader not in listed_brokers(admin)
        except KafkaError:  # the client asked the killed broker, which its metadata still named: ask again
            return False

    try:
        pg.wait_for(leader_fenced, 60, f"broker {leader} fenced")
    finally:
        admin.close()
    fenced = time.monotonic()
    pg.type("topic after-failover")

    def created() -> bool:
        return any(r["type"] == "CreateTopic" and r.get("topic") == "after-failover" for _, r in bridged(survivors))

    pg.wait_for(created, PUBLISHED_WITHIN_S, "the bridge published the next records after the failover")
    print(f"published {time.monotonic() - fenced:.1f}s after the fencing")
    pg.wait_for(published(survivors, lambda d: d["topic"] == "after-failover"), 180,
                "run published the decisions of the failover and of what came after")
    print(f"run published them {time.monotonic() - fenced:.1f}s after the fencing")

    # No gap and no duplicate on the events topic: exactly the import's events up to the last published offset.
    everything = bridged(survivors)
    last = everything[-1][0]
    metadata = tmp_path / "pg-playground" / "cluster" / "node-100" / "logs" / "__cluster_metadata-0"
    events = [r for _, r in everything if r["type"] != "ObservedDecision"]
    assert events == [e for e in convert(read_metadata_log(metadata).records).events if event_offset(e) <= last]
    # The decisions topic holds each decision once, the failover's among them, and each is the controller's.
    on_topic = consume_decisions(survivors, DECISIONS_TOPIC)
    keys = Counter((d["topic"], d["partition"], d["partition_epoch"]) for d in on_topic)
    assert max(keys.values()) == 1
    assert [d for d in on_topic if d["topic"] == EVENTS_TOPIC and d["leader"] != leader], \
        "no decision moved the events topic's leadership off the dead broker"

    # Ctrl-C: run stops after its micro-batch, then the bridge and the cluster; no process is left.
    pg.proc.send_signal(signal.SIGINT)
    assert pg.proc.wait(180) == 0, pg.text[-6000:]
    assert "isrflow playground: stopped" in pg.text
    assert not [p for p in [*pids.values(), *shadow_pids] if alive(p)]
    assert comparable(on_topic) == comparable(read_delta(lake.decisions))
    agreement = from_table_rows(read_delta(lake.agreement))
    assert agreement and all(r["match"] for r in agreement), [r for r in agreement if not r["match"]]
