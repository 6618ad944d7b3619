"""`isrflow bridge` on a live KRaft node: the session's local broker (a combined broker + controller) is both the
cluster whose metadata log is followed and the host of the events topic."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from kafka import KafkaConsumer, TopicPartition

from streaming.cli import main
from streaming.infra.localkafka import LocalKafkaBroker, create_topic
from streaming.io.eventlog import Bounds
from streaming.io.kafkaclient import KafkaSettings
from streaming.jobs.bridge import KRAFT
from streaming.kraft.convert import convert, event_offset
from streaming.kraft.metadatalog import read_metadata_log, snapshot_end_offset, snapshot_files

EVENTS = "kraft-bridge-events"
ROOT = Path(__file__).resolve().parents[2]
# `isrflow bridge` whose first commit never comes: it says so, then waits to be killed.
HELD_AT_COMMIT = """
import sys, time
import streaming.engine.transactions as transactions
def held(*args, **kwargs):
    print("committing", flush=True)
    time.sleep(600)
transactions.end_transaction = held
from streaming.cli import main
sys.exit(main(sys.argv[1:]))
"""


def published(kafka: KafkaSettings | str, topic: str = EVENTS, isolation: str = "read_committed",
              observed: bool = False, header: str = KRAFT.header) -> list[tuple[int, dict]]:
    """The bridged events on `topic` (read_committed), each with its position header (a metadata offset by
    default; with the controller's ObservedDecision records too when `observed`)."""
    consumer = KafkaConsumer(**KafkaSettings.of(kafka).python_kwargs(), isolation_level=isolation,
                             enable_auto_commit=False, consumer_timeout_ms=3000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        records = [(int(dict(r.headers)[header]), json.loads(r.value)) for r in consumer]
        return [(o, r) for o, r in records if observed or r["type"] != "ObservedDecision"]
    finally:
        consumer.close()


def test_bridge_publishes_new_events_once_and_resumes_after_the_last_offset(kafka_broker: LocalKafkaBroker) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    metadata = kafka_broker.data_dir / "logs" / "__cluster_metadata-0"
    create_topic(bootstrap, EVENTS, 1)
    args = ["bridge", "--metadata-dir", str(metadata), "--bootstrap-servers", bootstrap, "--events-topic", EVENTS,
            "--once"]
    assert main(args) == 0
    first = published(bootstrap)
    assert any(e["type"] == "CreateTopic" and e["topic"] == EVENTS for _, e in first)
    assert main(args) == 0  # nothing new: nothing published again
    assert published(bootstrap) == first
    create_topic(bootstrap, "kraft-bridge-later", 1)
    assert main(args) == 0  # a new bridge process resumes from the topic's last header
    everything = published(bootstrap)
    assert everything[:len(first)] == first
    later = [e for _, e in everything[len(first):]]
    assert any(e["type"] == "CreateTopic" and e["topic"] == "kraft-bridge-later" for e in later)
    # No gap, no duplicate: exactly the import's events up to the last published offset, in order.
    last = everything[-1][0]
    imported = convert(read_metadata_log(metadata).records)
    expected = [e for e in imported.events if event_offset(e) <= last]
    assert [e for _, e in everything] == expected
    # The controller's changes went out too, each after its event under the event's offset: the import's rows.
    records = published(bootstrap, observed=True)
    assert [o for o, _ in records] == sorted(o for o, _ in records)
    observed = [{k: v for k, v in r.items() if k != "type"} for _, r in records if r["type"] == "ObservedDecision"]
    ids = {e["event_id"] for e in expected}
    assert observed == [o for e in expected for o in imported.observed if o["cause_event_id"] == e["event_id"]]
    assert observed and all(o["cause_event_id"] in ids for o in observed)


def children(pid: int) -> list[int]:
    """The processes `pid` started (the bridge's decoder JVM)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):  # a thread that just ended
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (killed, not yet reaped by its parent) is gone for our purposes.
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"


def test_a_bridge_killed_mid_round_resumes_with_no_gap_and_no_duplicate(kafka_broker: LocalKafkaBroker,
                                                                        tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    metadata = kafka_broker.data_dir / "logs" / "__cluster_metadata-0"
    topic = "kraft-bridge-killed"
    create_topic(bootstrap, topic, 1)
    # Nothing published yet: the first bridge starts from the newest snapshot past offset 0, if the node has one.
    start = max((snapshot_end_offset(s) or 0 for s in snapshot_files(metadata)), default=0)
    args = ["bridge", "--metadata-dir", str(metadata), "--bootstrap-servers", bootstrap, "--events-topic", topic]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rng = random.Random(18)
    for attempt in range(3):
        out = tmp_path / f"bridge-{attempt}.out"
        for i in range(2):  # something to publish at once
            create_topic(bootstrap, f"kraft-bridge-killed-{attempt}-before-{i}", 1)
        # The second bridge is killed inside its first transaction, its records sent and not committed yet.
        command = [sys.executable, "-c", HELD_AT_COMMIT] if attempt == 1 else [sys.executable, "-m", "streaming"]
        with out.open("w") as sink:
            bridge = subprocess.Popen([*command, *args, "--poll-seconds", "0.05"],
                                      stdout=sink, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        decoders: list[int] = []
        try:
            deadline = time.monotonic() + 60
            # The first bridge publishes the history; the later ones are killed from their start on.
            ready = {0: "published", 1: "committing"}.get(attempt, "from metadata offset")
            while ready not in out.read_text():
                assert bridge.poll() is None, out.read_text()
                assert time.monotonic() < deadline, out.read_text()
                time.sleep(0.1)
            decoders = children(bridge.pid)
            # New metadata while it runs, then kill -9 at a random moment of its rounds.
            for i in range(3):
                create_topic(bootstrap, f"kraft-bridge-killed-{attempt}-{i}", 1)
            time.sleep(rng.uniform(0, 0.3))
            assert bridge.poll() is None, out.read_text()
            bridge.send_signal(signal.SIGKILL)
            bridge.wait(timeout=10)
            # Its decoder JVM ends by itself: its stdin closed with the bridge.
            gone = time.monotonic() + 20
            while any(alive(p) for p in decoders) and time.monotonic() < gone:
                time.sleep(0.1)
            assert decoders and not any(alive(p) for p in decoders)
        finally:
            for pid in [bridge.pid, *decoders]:
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
            bridge.wait(timeout=10)
    create_topic(bootstrap, "kraft-bridge-killed-last", 1)
    assert main([*args, "--once"]) == 0
    everything = published(bootstrap, topic)
    last = everything[-1][0]
    log = read_metadata_log(metadata, bounds=Bounds(from_offset=start) if start else None)
    expected = [e for e in convert(log.records, log.window[0]).events if event_offset(e) <= last]
    assert [e for _, e in everything] == expected
    assert any(e["type"] == "CreateTopic" and e["topic"] == "kraft-bridge-killed-last" for e in expected)
    # The bridge killed inside its transaction had sent records: aborted, they are not among the published.
    assert len(published(bootstrap, topic, "read_uncommitted")) > len(everything)
