"""Benchmark: the live shadow's latency, from the controller's metadata record to isrflow's decision on the sink
topic, on a real KRaft cluster with `isrflow bridge` and `isrflow run` behind it (the playground's set-up:
streaming/jobs/playground.py), at the default poll and trigger.

Each round: a broker killed (kill -9) and started again, a preferred election, a topic created. For every decision
on the sink topic (read_committed) caused by an event of those rounds: its Kafka record timestamp (the producer's
send, inside `run`'s transaction) minus the create time of the metadata record the event was read at (the
controller's append). p50, p90, p99 and max over all of them, and per kind of event.

Run: .venv/bin/python benchmarks/live_latency.py [--rounds 6] [--work /tmp/isrflow-latency]
Not a test: numbers go to docs/performance.md with the command that produced them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from harness import load

from streaming.infra.kraftcluster import KraftCluster
from streaming.jobs.demo import consume_decisions
from streaming.jobs.playground import DECISIONS_TOPIC, shadow_broker, start_shadow, stop_shadow
from streaming.kraft.convert import convert, event_offset
from streaming.kraft.metadatalog import read_metadata_log


def sink_records(bootstrap: str) -> list[tuple[int, dict[str, Any]]]:
    """(record timestamp ms, decision) of every committed decision on the sink topic."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(DECISIONS_TOPIC, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             isolation_level="read_committed", enable_auto_commit=False, consumer_timeout_ms=3000)
    try:
        return [(r.timestamp, json.loads(r.value)) for r in consumer]
    finally:
        consumer.close()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def operate(cluster: KraftCluster, rounds: int, pause_s: float) -> None:
    for i in range(rounds):
        broker = i % 3 + 1
        cluster.kill(broker)
        cluster.wait_fenced(broker)
        time.sleep(pause_s)
        cluster.restart(broker)
        time.sleep(pause_s)
        cluster.elect("PREFERRED", {"orders": [0, 1, 2]})
        time.sleep(pause_s)
        cluster.create_topic(f"latency-{i}", {0: [1, 2, 3], 1: [2, 3, 1]})
        time.sleep(pause_s)
        print(f"round {i + 1}/{rounds} done", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--pause", type=float, default=8.0, help="seconds between operations")
    parser.add_argument("--work", type=Path, default=Path("/tmp/isrflow-latency"))
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    with KraftCluster(brokers=3, root=args.work / "cluster", internal_replication=3) as cluster:
        shadow_broker(cluster)
        cluster.create_topic("orders", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
        shadow = start_shadow(cluster, args.work, lambda line: None)
        try:
            deadline = time.monotonic() + 300
            while not consume_decisions(cluster.bootstrap_servers, DECISIONS_TOPIC, idle_ms=1000):
                if time.monotonic() > deadline or shadow.run.poll() is not None:
                    print("run published nothing within 300 s", file=sys.stderr)
                    return 1
                time.sleep(1)
            began = int(time.time() * 1000)
            print(f"shadow up; operating ({args.rounds} rounds, load {load()})", flush=True)
            operate(cluster, args.rounds, args.pause)
            time.sleep(30)  # the last operation's decisions
            records = read_metadata_log(cluster.metadata_dir).records
            created = {r.offset: r.create_time for r in records}
            kinds = {e["event_id"]: (e["type"], e.get("change")) for e in convert(records).events}
            latencies: dict[str, list[float]] = {}
            for timestamp, decision in sink_records(cluster.bootstrap_servers):
                event = decision["cause_event_id"]
                if event not in kinds:
                    continue
                appended = created[event_offset({"event_id": event})]
                if appended < began:
                    continue
                kind = "/".join(k for k in kinds[event] if k)
                latencies.setdefault(kind, []).append((timestamp - appended) / 1000)
        finally:
            stop_shadow(shadow)
    every = [v for vs in latencies.values() for v in vs]
    if not every:
        print("no decision of the rounds reached the sink topic", file=sys.stderr)
        return 1
    print(f"\n{len(every)} decisions, metadata record -> sink topic (s), load {load()}:")
    print(f"  all: p50 {percentile(every, .5):.1f}  p90 {percentile(every, .9):.1f}  p99 {percentile(every, .99):.1f}"
          f"  max {max(every):.1f}  mean {statistics.mean(every):.1f}")
    for kind, values in sorted(latencies.items()):
        print(f"  {kind}: {len(values)} decisions, p50 {percentile(values, .5):.1f}  max {max(values):.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
