"""`isrflow demo --kraft`: a real 3-broker KRaft cluster (one controller process, three broker processes, from the
project's jars), a broker killed and another shut down, the metadata log bridged into an events topic on that
cluster, and isrflow's decisions (kraft rules) shown next to the real controller's."""

from __future__ import annotations

import shutil
from pathlib import Path

from statemachine.controller import ControllerConfig
from statemachine.rules import KRAFT
from streaming.infra.kraftcluster import KraftCluster
from streaming.infra.localkafka import create_topic
from streaming.jobs.bridge import BridgeOptions, KraftBridge
from streaming.jobs.kraft import read_jsonl
from streaming.jobs.replay import ReplayOptions, replay

EVENTS_TOPIC = "isrflow-kraft-events"


def _script(c: KraftCluster) -> None:
    c.create_topic("orders", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
    c.create_topic("payments", {0: [1, 2], 1: [2, 3]})
    c.create_topic("audit-log", {0: [2]})
    c.wait_until(lambda: all(p["leader"] >= 0 for p in c.describe("orders").values()), what="orders leaders")
    print("kill -9 broker 1 ...", flush=True)
    c.kill(1)
    c.wait_fenced(1)
    print("SIGTERM broker 2 (controlled shutdown) ...", flush=True)
    c.terminate(2)
    c.wait_fenced(2)
    print("restarting brokers 1 and 2 ...", flush=True)
    c.restart(1)
    c.restart(2)


def _cell(values: dict | None) -> str:
    if values is None:
        return "-"
    return f"leader {values['leader']} isr {sorted(values['isr'])} epochs {values['leader_epoch']}/" \
           f"{values['partition_epoch']}"


def kraft_demo(work_dir: Path = Path("out/demo-kraft")) -> int:
    work = work_dir.resolve()
    shutil.rmtree(work, ignore_errors=True)
    print("isrflow demo --kraft: starting a KRaft cluster (1 controller + 3 brokers) ...", flush=True)
    with KraftCluster(brokers=3) as cluster:
        _script(cluster)
        create_topic(cluster.bootstrap_servers, EVENTS_TOPIC, 1)
        metadata = cluster.broker_metadata_dir(3)
        bridge = KraftBridge(BridgeOptions(metadata, cluster.bootstrap_servers, EVENTS_TOPIC))
        try:
            sent = bridge.round()
        finally:
            bridge.close()
        print(f"bridged {sent} events from broker 3's metadata log into {EVENTS_TOPIC}", flush=True)
        print(replay(ReplayOptions(f"kraft:{metadata}", work, engine="local", config=ControllerConfig(rules=KRAFT))))
    rows = read_jsonl(work / "agreement.jsonl")
    print(f"\n{'partition':<12} {'cause':<14} {'real controller':<36} {'isrflow (kraft rules)':<36} match")
    for r in rows:
        print(f"{r['topic'] + '-' + str(r['partition']):<12} {r['cause']:<14} {_cell(r['controller']):<36} "
              f"{_cell(r['isrflow']):<36} {'yes' if r['match'] else 'NO: ' + ', '.join(r['differing'])}")
    agreed = sum(1 for r in rows if r["match"])
    print(f"\nagreement: {agreed}/{len(rows)} decisions of the real controller reproduced; "
          f"report: {work / 'report.html'}")
    return 0 if agreed == len(rows) else 1
