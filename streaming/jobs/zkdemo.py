"""`isrflow demo --zookeeper`: a real ZooKeeper-mode cluster (ZooKeeper 3.8.4 and three Kafka 3.9.1 brokers, from the
project's jars) through a broker failure, a controlled shutdown and a reassignment; ZooKeeper's transaction log read
as events (`import-zk`), published to an events topic on that cluster, decided by `isrflow run` (zk rules, one
bounded run) into a decisions topic and Delta, and its decisions shown next to the real controller's writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from statemachine.rules import ZK
from streaming.history.outputs import show_agreement
from streaming.infra.localkafka import create_topic
from streaming.infra.zkcluster import ZkCluster
from streaming.io.jsonl import read_jsonl
from streaming.jobs.demo import publish
from streaming.jobs.run import decide_once
from streaming.jobs.zookeeper import import_zk

EVENTS_TOPIC = "isrflow-zk-events"
DECISIONS_TOPIC = "isrflow-zk-decisions"


def _script(c: ZkCluster) -> None:
    c.create_topic("orders", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
    c.create_topic("payments", {0: [1, 2], 1: [2, 3]})
    c.wait_until(lambda: all(p["leader"] >= 0 for p in c.describe("orders").values()), what="orders leaders")
    controller = c.active_controller()
    failing, stopping = [b for b in (1, 2, 3) if b != controller][:2]
    print(f"kill -9 broker {failing} ...", flush=True)
    c.kill(failing)
    c.wait_fenced(failing)
    print(f"SIGTERM broker {stopping} (controlled shutdown) ...", flush=True)
    c.terminate(stopping)
    c.wait_fenced(stopping)
    print(f"restarting brokers {failing} and {stopping} ...", flush=True)
    c.restart(failing)
    c.restart(stopping)
    print("reassigning payments-1 to [1, 3] ...", flush=True)
    c.reassign({("payments", 1): [1, 3]})
    c.wait_until(lambda: c.describe("payments")[1]["replicas"] == [1, 3], what="payments-1 moved")


def zookeeper_demo(work_dir: Path = Path("out/demo-zookeeper"), master: str | None = None,
                   spark_conf: dict[str, str] | None = None) -> int:
    work = work_dir.resolve()
    shutil.rmtree(work, ignore_errors=True)
    print("isrflow demo --zookeeper: starting ZooKeeper and 3 Kafka 3.9 brokers in ZooKeeper mode ...", flush=True)
    with ZkCluster(brokers=3) as cluster:
        _script(cluster)
        # The history as it stands now: the demo's own topics, created next, are not part of the incident.
        # With what each controller logged reading (its controller.log): which brokers its reads found; and the
        # AlterPartition requests each leader logged sending (its server.log).
        summary = import_zk(cluster.zookeeper_data_dir, work / "events.jsonl", work / "observed.jsonl",
                            controller_logs=cluster.copy_logs(cluster.controller_log, work / "controller"),
                            server_logs=cluster.copy_logs(cluster.server_log, work / "server"))
        print(summary.describe(), flush=True)
        bootstrap = cluster.bootstrap_servers
        create_topic(bootstrap, EVENTS_TOPIC, 1)
        create_topic(bootstrap, DECISIONS_TOPIC, 1)
        events = read_jsonl(work / "events.jsonl")
        publish(bootstrap, EVENTS_TOPIC, [json.dumps(e, sort_keys=True, separators=(",", ":")).encode()
                                          for e in events])
        print(f"published {len(events)} events read from ZooKeeper's transaction log into {EVENTS_TOPIC}",
              flush=True)
        audit = work / "audit"
        code = decide_once(bootstrap, EVENTS_TOPIC, DECISIONS_TOPIC, work, ZK, master, spark_conf)
        if code != 0:
            return code
    return show_agreement(work, audit, DECISIONS_TOPIC, "zk rules")

