"""`isrflow demo --kraft`: a real 3-broker KRaft cluster (one controller process, three broker processes, from the
project's jars, or another release's with --kafka-version), a broker killed and another shut down, the metadata log
bridged into an events topic on that cluster, `isrflow run` (kraft rules, one bounded run) over that topic into a
decisions topic and Delta, and its decisions shown next to the real controller's."""

from __future__ import annotations

import shutil
from pathlib import Path

from statemachine.rules import KRAFT
from streaming.history.outputs import show_agreement
from streaming.infra.kraftcluster import KraftCluster
from streaming.infra.localkafka import create_topic
from streaming.io.eventlog import Bounds
from streaming.jobs.bridge import Bridge, BridgeOptions
from streaming.jobs.kraft import import_kraft
from streaming.jobs.run import decide_once

EVENTS_TOPIC = "isrflow-kraft-events"
DECISIONS_TOPIC = "isrflow-kraft-decisions"


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


def kraft_demo(work_dir: Path = Path("out/demo-kraft"), master: str | None = None,
               spark_conf: dict[str, str] | None = None, release: str | None = None) -> int:
    """`release`: the Kafka release the cluster runs (connectors.KRAFT_RELEASES; None: Kafka 4.1)."""
    work = work_dir.resolve()
    shutil.rmtree(work, ignore_errors=True)
    print(f"isrflow demo --kraft: starting a Kafka {release or '4.1'} KRaft cluster (1 controller + 3 brokers) ...",
          flush=True)
    with KraftCluster(brokers=3, release=release) as cluster:
        _script(cluster)
        bootstrap = cluster.bootstrap_servers
        create_topic(bootstrap, EVENTS_TOPIC, 1)
        create_topic(bootstrap, DECISIONS_TOPIC, 1)
        metadata = cluster.broker_metadata_dir(3)
        bridge = Bridge(BridgeOptions(metadata, bootstrap, EVENTS_TOPIC))
        try:
            sent = bridge.round()
            bridged_to = bridge.last  # the log goes on (leaders taking restarted brokers back): compare what went out
        finally:
            bridge.close()
        print(f"bridged {sent} events from broker 3's metadata log into {EVENTS_TOPIC}", flush=True)
        audit = work / "audit"
        code = decide_once(bootstrap, EVENTS_TOPIC, DECISIONS_TOPIC, work, KRAFT, master, spark_conf)
        if code != 0:
            return code
        # The controller's own decisions, from the same log the bridge read, up to where it read.
        import_kraft(metadata, work / "events.jsonl", work / "observed.jsonl", Bounds(to_offset=bridged_to + 1))
    return show_agreement(work, audit, DECISIONS_TOPIC, "kraft rules")
