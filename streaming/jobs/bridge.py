"""`isrflow bridge`: follow a live KRaft node's metadata log and publish its new events to the events topic,
so that `isrflow run` shadows a live cluster.

Each round decodes the log with Kafka's dump tool, converts it, and publishes the events read at metadata
offsets above the last published one, in one Kafka transaction; every record carries its metadata offset in
a header. On start the bridge reads the topic's committed tail for the highest offset it published, so a
restart resumes with no gap and no duplicate (events of one offset go out together, in one transaction).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streaming.engine.sinks import COMMIT_TIMEOUT_S, QUERY_HEADER, end_transaction, last_committed_batch
from streaming.io.kafkaclient import KafkaSettings, secrets_scrubbed
from streaming.kraft.convert import convert, event_offset
from streaming.kraft.metadatalog import read_metadata_log

BRIDGE_ID = "isrflow-kraft-bridge"
OFFSET_HEADER = "isrflow.kraft_offset"


@dataclass(frozen=True)
class BridgeOptions:
    metadata_dir: Path
    bootstrap_servers: str
    events_topic: str
    poll_seconds: float = 2.0
    rounds: int | None = None  # None: until interrupted
    # Kafka client properties (security): a properties file, then single options over it.
    kafka_option_file: Path | None = None
    kafka_options: dict[str, str] = field(default_factory=dict)

    @property
    def kafka(self) -> KafkaSettings:
        return KafkaSettings.load(self.bootstrap_servers, self.kafka_option_file, self.kafka_options)


class KraftBridge:
    def __init__(self, options: BridgeOptions) -> None:
        from kafka import KafkaProducer

        self.options = options
        kafka = options.kafka
        self.producer = KafkaProducer(**kafka.python_kwargs(), enable_idempotence=True,
                                      acks="all", transactional_id=f"{BRIDGE_ID}-{options.events_topic}")
        self.producer.init_transactions()  # fences an older bridge on the same topic
        self.last = last_committed_batch(kafka, options.events_topic, BRIDGE_ID, OFFSET_HEADER)

    def round(self) -> int:
        """Publish the events above the last published offset; returns how many went out."""
        log = read_metadata_log(self.options.metadata_dir)
        events = [e for e in convert(log.records, log.start_offset if log.snapshot else None).events
                  if event_offset(e) > self.last]
        if not events:
            return 0
        self.producer.begin_transaction()
        try:
            for e in events:
                self.producer.send(self.options.events_topic, value=_json(e), headers=[
                    (QUERY_HEADER, BRIDGE_ID.encode()), (OFFSET_HEADER, str(event_offset(e)).encode())])
            self.producer.flush(timeout=COMMIT_TIMEOUT_S)
            # Bounded: a broker gone mid-commit ends the bridge with an error instead of hanging it; a restart
            # resumes after the last committed offset.
            end_transaction(self.producer, commit=True, timeout_s=COMMIT_TIMEOUT_S)
        except Exception as exc:
            if not getattr(exc, "retriable", False):  # else the broker is gone: the next bridge's fencing aborts
                end_transaction(self.producer, commit=False, timeout_s=COMMIT_TIMEOUT_S)
            raise
        self.last = event_offset(events[-1])
        return len(events)

    def close(self) -> None:
        self.producer.close(timeout=COMMIT_TIMEOUT_S)


def _json(event: dict[str, Any]) -> bytes:
    return json.dumps(event, sort_keys=True, separators=(",", ":")).encode()


def bridge(options: BridgeOptions) -> int:
    """Run rounds every `poll_seconds` (forever, or `rounds` times); Ctrl-C stops it cleanly."""
    with secrets_scrubbed(options.kafka):
        return _bridge(options)


def _bridge(options: BridgeOptions) -> int:
    b = KraftBridge(options)
    print(f"isrflow bridge: {options.metadata_dir} -> {options.events_topic} from metadata offset {b.last + 1}",
          flush=True)
    done = 0
    try:
        while options.rounds is None or done < options.rounds:
            published = b.round()
            if published:
                print(f"published {published} event(s), up to metadata offset {b.last}", flush=True)
            done += 1
            if options.rounds is None or done < options.rounds:
                time.sleep(options.poll_seconds)
    except KeyboardInterrupt:
        pass
    finally:
        b.close()
    return 0
