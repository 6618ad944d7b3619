"""`isrflow bridge --zookeeper-data-dir` on a live ZooKeeper-mode cluster (ZooKeeper 3.8.4 + three Kafka 3.9.1
brokers, streaming/infra/zkcluster.py), publishing into a topic of the session's local broker: bridges killed with
kill -9 mid-round (one inside its transaction) and restarted, then a bridge running through a broker's kill -9 and
another's controlled shutdown. The events topic holds every event of `import-zk` of the same directory exactly once,
in order, each followed by the controller's writes it caused; `isrflow run --rules zk` behind it agrees with every
one of them. One cluster for the module, stopped by pid on teardown, as is every bridge process."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from test_kraft_bridge import HELD_AT_COMMIT, ROOT, alive, published

from streaming.cli import main
from streaming.history.outputs import read_jsonl
from streaming.infra.localkafka import LocalKafkaBroker, create_topic
from streaming.infra.zkcluster import ZkCluster
from streaming.jobs.bridge import ZOOKEEPER
from streaming.zookeeper.convert import event_zxid
from streaming.zookeeper.follow import SETTLE_MS

pytestmark = pytest.mark.zk_cluster

EVENTS = "zk-bridge-events"
TOPIC = "t"


@dataclass
class Bridged:
    cluster: ZkCluster
    bootstrap: str  # the local broker holding the events topic
    failed: int = -1  # killed with kill -9
    stopped: int = -1  # shut down (controlled)


def bridge_args(c: ZkCluster, bootstrap: str) -> list[str]:
    return ["bridge", "--zookeeper-data-dir", str(c.zookeeper_data_dir), "--bootstrap-servers", bootstrap,
            "--events-topic", EVENTS]


def start_bridge(command: list[str], args: list[str], out: Path) -> subprocess.Popen[bytes]:
    with out.open("w") as sink:
        return subprocess.Popen([*command, *args, "--poll-seconds", "0.05"], stdout=sink, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)


def wait_for(bridge: subprocess.Popen[bytes], out: Path, line: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while line not in out.read_text():
        assert bridge.poll() is None, out.read_text()
        assert time.monotonic() < deadline, out.read_text()
        time.sleep(0.1)


def stopped(bridge: subprocess.Popen[bytes], sig: int) -> int:
    """Signal the bridge by its pid; its exit code."""
    try:
        bridge.send_signal(sig)
        return bridge.wait(timeout=20)
    finally:
        if alive(bridge.pid):
            os.kill(bridge.pid, signal.SIGKILL)
            bridge.wait(timeout=10)


def full_isr(c: ZkCluster) -> bool:
    return all(p["leader"] >= 0 and len(p["isr"]) == 3 for p in c.describe(TOPIC).values())


@pytest.fixture(scope="module")
def bridged(kafka_broker: LocalKafkaBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bridged]:
    tmp = tmp_path_factory.mktemp("zk-bridge")
    # A large snapCount: ZooKeeper keeps snapshot.0 (an empty tree) only, so the first bridge starts where
    # `import-zk` of the directory does, at zxid 0.
    cluster = ZkCluster(brokers=3, root=tmp / "cluster", snap_count=100_000)
    r = Bridged(cluster, kafka_broker.bootstrap_servers)
    try:
        cluster.start()
        create_topic(r.bootstrap, EVENTS, 1)
        cluster.create_topic(TOPIC, {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
        cluster.wait_until(lambda: full_isr(cluster), what="every partition led, full ISRs")
        args = bridge_args(cluster, r.bootstrap)
        rng = random.Random(19)
        for attempt in range(3):
            cluster.create_topic(f"before-{attempt}", {0: [1 + attempt % 3]})  # something to publish at once
            # The second bridge is killed inside its first transaction, its records sent and not committed yet.
            command = [sys.executable, "-c", HELD_AT_COMMIT] if attempt == 1 else [sys.executable, "-m", "streaming"]
            out = tmp / f"bridge-{attempt}.out"
            bridge = start_bridge(command, args, out)
            try:
                # The first bridge publishes the history; the later ones are killed from their start on.
                wait_for(bridge, out, {0: "published", 1: "committing"}.get(attempt, "from zxid"))
                cluster.create_topic(f"during-{attempt}", {0: [1, 2]})
                time.sleep(rng.uniform(0, 0.5))
            finally:
                assert stopped(bridge, signal.SIGKILL) == -signal.SIGKILL
        # A bridge running while a broker fails and another shuts down, then both come back.
        out = tmp / "bridge-live.out"
        bridge = start_bridge([sys.executable, "-m", "streaming"], args, out)
        try:
            wait_for(bridge, out, "from zxid")
            controller = cluster.active_controller()
            r.failed, r.stopped = [b for b in (1, 2, 3) if b != controller][:2]
            cluster.kill(r.failed)
            cluster.wait_fenced(r.failed)
            cluster.terminate(r.stopped)
            cluster.wait_fenced(r.stopped)
            cluster.restart(r.failed)
            cluster.restart(r.stopped)
            cluster.wait_until(lambda: full_isr(cluster), what="full ISRs again")
        finally:
            assert stopped(bridge, signal.SIGINT) == 0  # Ctrl-C: the bridge closes and exits 0
        cluster.create_topic("last", {0: [3]})
        cluster.wait_until(lambda: cluster.describe("last")[0]["leader"] == 3, what="last led")
        time.sleep(SETTLE_MS / 1000 + 0.5)  # the controller's last writes are settled: `--once` publishes them
        assert main([*args, "--once"]) == 0
        yield r
    finally:
        cluster.stop()  # by pid, also when the scenario failed
    assert not cluster.pids


def test_killed_bridges_leave_every_event_of_import_zk_once_in_order(bridged: Bridged, tmp_path: Path) -> None:
    records = published(bridged.bootstrap, EVENTS, observed=True, header=ZOOKEEPER.header)
    events = [(z, r) for z, r in records if r["type"] != "ObservedDecision"]
    last = events[-1][0]
    assert main(["import-zk", str(bridged.cluster.zookeeper_data_dir), "--out", str(tmp_path / "events.jsonl"),
                 "--observed", str(tmp_path / "observed.jsonl")]) == 0
    imported = [e for e in read_jsonl(tmp_path / "events.jsonl") if event_zxid(e) <= last]
    # No gap, no duplicate, in zxid order; a header is at least its event's zxid.
    assert [e for _, e in events] == imported
    assert all(z >= event_zxid(e) for z, e in events)
    assert {e.get("topic") for e in imported} >= {"before-0", "during-2", "last"}
    # Each event is followed by the controller's writes it caused, under its zxid: the import's observed rows.
    ids = {e["event_id"] for e in imported}
    observed = read_jsonl(tmp_path / "observed.jsonl")
    assert [{k: v for k, v in r.items() if k != "type"} for _, r in records if r["type"] == "ObservedDecision"] == [
        o for e in imported for o in observed if o["cause_event_id"] == e["event_id"]]
    # Every write of the bridged history explained, and published.
    assert all(o["cause_event_id"] in ids for o in observed if o["source_offset"] <= last)
    assert [z for z, _ in records] == sorted(z for z, _ in records)
    # The bridge killed inside its transaction had sent records: aborted, they are not among the published.
    assert len(published(bridged.bootstrap, EVENTS, "read_uncommitted", True, ZOOKEEPER.header)) > len(records)


@pytest.mark.spark
def test_run_behind_the_zk_bridge_agrees_with_the_live_controller(
        bridged: Bridged, spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from streaming.history.agreement import from_table_rows
    from streaming.io.delta import read_delta
    from streaming.io.layout import Lake

    audit = tmp_path / "audit"
    create_topic(bridged.bootstrap, f"{EVENTS}-decisions", 1)
    assert main(["run", "--bootstrap-servers", bridged.bootstrap, "--events-topic", EVENTS, "--decisions-topic",
                 f"{EVENTS}-decisions", "--audit-table", str(audit), "--checkpoint-dir", str(tmp_path / "cp"),
                 "--trigger", "available-now", "--rules", "zk", "--state-partitions", "2"]) == 0
    out = capsys.readouterr().out
    rows = from_table_rows(read_delta(Lake.beside(audit).agreement))
    assert rows and all(r["match"] for r in rows), [r for r in rows if not r["match"]]
    events = {e["event_id"]: e for _, e in published(bridged.bootstrap, EVENTS, header=ZOOKEEPER.header)}
    causes = {(events[r["cause_event_id"]]["type"], events[r["cause_event_id"]].get("change"),
               events[r["cause_event_id"]].get("broker_id")) for r in rows}
    assert {("BrokerChange", "FAILURE", bridged.failed), ("BrokerChange", "CONTROLLED_SHUTDOWN", bridged.stopped)} \
        <= causes
    assert f"{len(rows)}/{len(rows)} agreeing" in out
    assert main(["check", str(audit)]) == 0
