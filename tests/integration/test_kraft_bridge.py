"""`isrflow bridge` on a live KRaft node: the session's local broker (a combined broker + controller) is both the
cluster whose metadata log is followed and the host of the events topic."""

from __future__ import annotations

import json

from kafka import KafkaConsumer, TopicPartition

from streaming.cli import main
from streaming.infra.localkafka import LocalKafkaBroker, create_topic
from streaming.io.kafkaclient import KafkaSettings
from streaming.jobs.bridge import OFFSET_HEADER
from streaming.kraft.convert import convert, event_offset
from streaming.kraft.metadatalog import read_metadata_log

EVENTS = "kraft-bridge-events"


def published(kafka: KafkaSettings | str, topic: str = EVENTS) -> list[tuple[int, dict]]:
    """The bridged events on `topic` (read_committed), each with its metadata offset."""
    consumer = KafkaConsumer(**KafkaSettings.of(kafka).python_kwargs(), isolation_level="read_committed",
                             enable_auto_commit=False, consumer_timeout_ms=3000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        return [(int(dict(r.headers)[OFFSET_HEADER]), json.loads(r.value)) for r in consumer]
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
    expected = [e for e in convert(read_metadata_log(metadata).records).events if event_offset(e) <= last]
    assert [e for _, e in everything] == expected
    assert [o for o, _ in everything] == sorted(o for o, _ in everything)
