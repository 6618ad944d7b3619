"""Reading a controller event log: JSONL files (offset = line position) or a Kafka topic (offset = offset)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from schemas.records import parse_ts
from streaming.errors import UsageError
from streaming.io.kafkaclient import KafkaSettings


def event_log_files(path: Path) -> list[Path]:
    """A file, or every *.jsonl file of a folder in name order (rotated logs sort by name)."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix == ".jsonl")
        if not files:
            raise FileNotFoundError(f"no .jsonl files in {path}")
        return files
    if not path.exists():
        raise FileNotFoundError(f"no such event log: {path}")
    return [path]


def count_records(path: Path) -> int:
    return sum(1 for _ in read_event_log(path))


def read_event_log(path: Path) -> Iterator[tuple[int, bytes]]:
    """Yield (source_offset, raw record). The offset is the 0-based line number across the files, so
    `source_offset + 1` is the line a user finds in an editor (for a single file). Blank lines are
    skipped but keep their number."""
    offset = 0
    for file in event_log_files(path):
        with file.open("rb") as fh:
            for line in fh:
                raw = line.rstrip(b"\r\n")
                if raw.strip():
                    yield offset, raw
                offset += 1


@dataclass(frozen=True)
class KafkaLog:
    """`kafka://HOST:PORT/TOPIC`, bounded at the moment it is opened: offsets [start, stop)."""

    kafka: KafkaSettings
    topic: str
    start: int
    stop: int

    @property
    def total(self) -> int:
        return max(0, self.stop - self.start)


def topic_partition_count(kafka: KafkaSettings | str, topic: str) -> int:
    """The topic's partition count; 0 if it does not exist."""
    from kafka import KafkaAdminClient
    from kafka.errors import IncompatibleBrokerVersion, NoBrokersAvailable

    kafka = KafkaSettings.of(kafka)
    try:
        admin = KafkaAdminClient(**kafka.python_kwargs())
    except (NoBrokersAvailable, IncompatibleBrokerVersion) as exc:
        # kafka-python reports a refused login or TLS handshake as one of these two, too.
        protocol = kafka.properties.get("security.protocol", "PLAINTEXT")
        raise UsageError(f"cannot reach Kafka at {kafka.bootstrap_servers} with security.protocol={protocol}: "
                         f"no broker there, or it refused the connection's TLS or SASL login "
                         f"({type(exc).__name__})") from None
    try:
        if topic not in admin.list_topics():
            return 0
        (description,) = admin.describe_topics([topic])
        return len(description["partitions"])
    finally:
        admin.close()


def require_single_partition(kafka: KafkaSettings | str, topic: str) -> None:
    """Only a single partition gives the controller's events a total order, as `__cluster_metadata` has."""
    kafka = KafkaSettings.of(kafka)
    partitions = topic_partition_count(kafka, topic)
    if partitions == 0:
        raise UsageError(f"events topic '{topic}' does not exist on {kafka.bootstrap_servers}")
    if partitions != 1:
        raise UsageError(f"events topic '{topic}' has {partitions} partitions; isrflow needs exactly one, "
                         "because only a single partition gives the controller's events a total order")


def is_kafka_url(source: str) -> bool:
    return source.startswith("kafka://")


@dataclass(frozen=True)
class Bounds:
    """Bounds of a kafka:// or kraft: source: offsets [from_offset, to_offset) or record times [from_time, to_time)
    (ISO-8601)."""

    from_offset: int | None = None
    to_offset: int | None = None
    from_time: str | None = None
    to_time: str | None = None


def millis(iso: str) -> int:
    instant = parse_ts(iso)
    if instant is None:
        raise ValueError(f"not an ISO-8601 time: {iso!r}")
    return int(instant.timestamp() * 1000)


def open_kafka_log(url: str, from_offset: int | None = None, to_offset: int | None = None,
                   from_time: str | None = None, to_time: str | None = None,
                   kafka: KafkaSettings | None = None) -> KafkaLog:
    """Resolve the bounds: offsets as given (`to` exclusive), or the first offsets at or after the times
    (ISO-8601), and never past the end the topic has now, so the replay is bounded. `kafka` carries the
    client properties (security); the URL's HOST:PORT is the bootstrap server."""
    from kafka import KafkaConsumer, TopicPartition

    rest = url[len("kafka://"):]
    bootstrap, _, topic = rest.partition("/")
    if not bootstrap or not topic:
        raise UsageError(f"expected kafka://HOST:PORT/TOPIC, got {url}")
    settings = (kafka or KafkaSettings(bootstrap)).with_bootstrap(bootstrap)
    consumer = KafkaConsumer(**settings.python_kwargs(), enable_auto_commit=False)
    try:
        require_single_partition(settings, topic)
        tp = TopicPartition(topic, 0)
        begin, end = consumer.beginning_offsets([tp])[tp], consumer.end_offsets([tp])[tp]

        def at(iso: str | None) -> int | None:
            if iso is None:
                return None
            found = consumer.offsets_for_times({tp: millis(iso)})[tp]
            return end if found is None else found.offset

        start = max(begin, from_offset if from_offset is not None else (at(from_time) or begin))
        stop = min(end, to_offset if to_offset is not None else (at(to_time) or end))
        return KafkaLog(settings, topic, start, max(start, stop))
    finally:
        consumer.close()


def read_kafka_log(log: KafkaLog) -> Iterator[tuple[int, bytes]]:
    from kafka import KafkaConsumer, TopicPartition

    if log.total == 0:
        return
    consumer = KafkaConsumer(**log.kafka.python_kwargs(), enable_auto_commit=False,
                             isolation_level="read_committed")
    tp = TopicPartition(log.topic, 0)
    try:
        consumer.assign([tp])
        consumer.seek(tp, log.start)
        while consumer.position(tp) < log.stop:
            for record in consumer.poll(timeout_ms=1000).get(tp, []):
                if record.offset >= log.stop:
                    return
                yield record.offset, record.value
    finally:
        consumer.close()
