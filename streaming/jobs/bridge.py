"""`isrflow bridge`: follow a live KRaft node's metadata log and publish its new events to the events topic,
so that `isrflow run` shadows a live cluster.

The bridge keeps one follower (streaming/kraft/follow.py) for its whole run: a decoder JVM built on Kafka's own
classes and the converter's state. Each round decodes only the bytes the node appended to its segments since
the last round (whole batches; a torn one waits for the next round), so a round costs what is new, not the size
of the log. Segment rolls are followed; new snapshots and deleted old segments do not matter to a follower that
keeps up. The round's events go out in one Kafka transaction, every record with its metadata offset in a header.
The same transaction carries the controller's own partition changes of the round (`ObservedDecision` records,
the import's observed rows), each after the event that caused it, with that event's offset in its header: the
partition query compares isrflow's decisions with them (the agreement table). A change whose cause comes later
(a broker's unclean registration, explained by its STARTUP) waits for it.

On start the bridge reads the topic's committed tail for the highest offset it published, N, and follows from
the state there (the newest snapshot at or before N + 1, then the log's records up to the end of N's batch, read
as state): no gap, no duplicate, also after a `kill -9` mid-round (its open transaction is aborted when the next
bridge fences it). With nothing published it starts from the node's newest snapshot (its state as seed events),
or offset 0 when no snapshot ends past it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streaming.engine.sinks import COMMIT_TIMEOUT_S, QUERY_HEADER, end_transaction, last_committed_batch
from streaming.io.kafkaclient import KafkaSettings, secrets_scrubbed
from streaming.kraft.convert import event_offset
from streaming.kraft.follow import MetadataFollower

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
        self.follower = MetadataFollower(options.metadata_dir, after=self.last if self.last >= 0 else None)
        self.waiting: list[dict[str, Any]] = []  # observed changes whose cause event is not read yet

    def round(self) -> int:
        """Publish the events read since the last round, each followed by the controller's changes it caused;
        returns how many events went out."""
        poll = self.follower.poll()
        events = [e for e in poll.events if event_offset(e) > self.last]
        records, self.waiting = with_observed(events, [*self.waiting, *poll.observed], self.last)
        if not records:
            return 0
        self.producer.begin_transaction()
        try:
            for offset, record in records:
                self.producer.send(self.options.events_topic, value=_json(record), headers=[
                    (QUERY_HEADER, BRIDGE_ID.encode()), (OFFSET_HEADER, str(offset).encode())])
            self.producer.flush(timeout=COMMIT_TIMEOUT_S)
            # Bounded: a broker gone mid-commit ends the bridge with an error instead of hanging it; a restart
            # resumes after the last committed offset.
            end_transaction(self.producer, commit=True, timeout_s=COMMIT_TIMEOUT_S)
        except Exception as exc:
            if not getattr(exc, "retriable", False):  # else the broker is gone: the next bridge's fencing aborts
                end_transaction(self.producer, commit=False, timeout_s=COMMIT_TIMEOUT_S)
            raise
        self.last = max(self.last, records[-1][0])
        return len(events)

    def close(self) -> None:
        try:
            self.follower.close()
        finally:
            self.producer.close(timeout=COMMIT_TIMEOUT_S)


# The converter's cause of a broker's unclean-registration changes until its STARTUP event claims them.
UNCLAIMED = "BrokerRegistration"


def with_observed(events: list[dict[str, Any]], observed: Iterable[dict[str, Any]], last: int,
                  ) -> tuple[list[tuple[int, dict[str, Any]]], list[dict[str, Any]]]:
    """The records of a round, each with its header offset, and the observed changes left waiting.

    Each event (in log order) is followed by the changes it caused, as ObservedDecision records under the
    event's offset, so the header offsets never go down and a resumed bridge still starts after the batch of
    the highest one. Any other change past `last` goes out under its own offset; one the converter may still
    give a cause (an unclean registration's, until its STARTUP) waits."""
    ids = {e["event_id"]: event_offset(e) for e in events}
    caused: dict[str, list[dict[str, Any]]] = {}
    alone: list[dict[str, Any]] = []
    waiting: list[dict[str, Any]] = []
    for o in observed:
        cause = o.get("cause_event_id")
        if cause in ids:
            caused.setdefault(cause, []).append(o)
        elif cause is None and o.get("cause") == UNCLAIMED:
            waiting.append(o)
        elif o["source_offset"] > last:
            alone.append(o)
    # In offset order; at one offset an event (with its changes) before a change of no event of this round.
    ordered = sorted([*((ids[e["event_id"]], 0, i) for i, e in enumerate(events)),
                      *((o["source_offset"], 1, i) for i, o in enumerate(alone))])
    records: list[tuple[int, dict[str, Any]]] = []
    for offset, kind, i in ordered:
        if kind == 1:
            records.append((offset, observed_record(alone[i])))
            continue
        records.append((offset, events[i]))
        records.extend((offset, observed_record(o)) for o in caused.get(events[i]["event_id"], []))
    return records, waiting


def observed_record(row: dict[str, Any]) -> dict[str, Any]:
    """An observed row as the contract's ObservedDecision record."""
    return {**row, "type": "ObservedDecision"}


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
