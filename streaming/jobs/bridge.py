"""`isrflow bridge`: follow a live cluster's controller log (a KRaft node's metadata log, or a ZooKeeper server's
transaction log) and publish its new events to the events topic, so that `isrflow run` shadows a live cluster.

One bridge, two followers (`Source`): streaming/kraft/follow.py and streaming/zookeeper/follow.py. Each keeps its
converter's state for the bridge's whole run and reads, per poll, only what was appended since the last one, so a
round costs what is new, not the size of the log. The round's events go out in one Kafka transaction, every record
with its position in the source's header (a metadata offset, a zxid). The same transaction carries the controller's
own partition changes of the round (`ObservedDecision` records, the import's observed rows), each after the event
that caused it, with that event's position in its header: the partition query compares isrflow's decisions with
them (the agreement table). A change whose cause comes later (KRaft: a broker's unclean registration, explained by
its STARTUP) waits for it; a ZooKeeper follower holds back itself what the converter may still amend.

On start the bridge reads the topic's committed tail for the highest position it published, N, and the follower
resumes after it (with the state there): no gap, no duplicate, also after a `kill -9` mid-round (its open
transaction is aborted when the next bridge fences it). With nothing published it starts from the newest snapshot
(its state as seed events), or from the log's start when no snapshot is past it.

A failover of the events topic's leader or of the transaction coordinator costs the round a new producer, not the
bridge (streaming/engine/transactions.py): the round's records are sent again unless the topic's tail shows them
committed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any, Protocol

from streaming.engine.sinks import QUERY_HEADER, last_committed_batch
from streaming.engine.transactions import Record, TransactionalProducer
from streaming.io.kafkaclient import KafkaSettings, secrets_scrubbed
from streaming.jobs.kraft import newest_decoder
from streaming.kraft.convert import event_offset
from streaming.kraft.follow import MetadataFollower
from streaming.kraft.tail import MetadataTail
from streaming.zookeeper.context import event_zxid
from streaming.zookeeper.follow import ZkFollower


class Followed(Protocol):
    """One poll's output: events in log order, and the controller's partition changes read."""

    events: list[dict[str, Any]]
    observed: list[dict[str, Any]]


class Follower(Protocol):
    def poll(self) -> Followed: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Source:
    """A controller log the bridge follows: how a follower resumes after a published position (None: nothing
    published yet), an event's position in the log, the position a change it caused goes out under, the header
    that carries them, and which observed changes wait for a cause the follower has not read yet."""

    position_name: str
    bridge_id: str  # the producer's transactional id prefix and the records' QUERY_HEADER value
    header: str
    follower: Callable[[Path, int | None], Follower]
    position: Callable[[dict[str, Any]], int]
    change_position: Callable[[int, dict[str, Any]], int]  # (its event's position, the change)
    waiting: Callable[[dict[str, Any]], bool]


# The converter's cause of a broker's unclean-registration changes until its STARTUP event claims them.
UNCLAIMED = "BrokerRegistration"

# KRaft: an event and its changes are one batch, and a resumed follower starts after the whole batch.
KRAFT = Source("metadata offset", "isrflow-kraft-bridge", "isrflow.kraft_offset",
               lambda directory, after: MetadataFollower(
                   directory, after=after, newer=lambda: MetadataTail(jar_set=newest_decoder().jar_set)),
               event_offset,
               lambda position, o: position,
               lambda o: o.get("cause_event_id") is None and o.get("cause") == UNCLAIMED)
# ZooKeeper: the controller writes an event's partition states in transactions after it, so a change goes out under
# its own zxid (a follower resumed after the header has read it). Every write's cause comes before it; what the
# converter may still amend, ZkFollower holds back.
ZOOKEEPER = Source("zxid", "isrflow-zk-bridge", "isrflow.zk_zxid",
                   lambda directory, after: ZkFollower(directory, after=after), event_zxid,
                   lambda position, o: max(position, o["source_offset"]), lambda o: False)


@dataclass(frozen=True)
class BridgeOptions:
    directory: Path  # KRaft: the node's __cluster_metadata-0; ZooKeeper: the server's dataDir or its version-2
    bootstrap_servers: str
    events_topic: str
    poll_seconds: float = 2.0
    rounds: int | None = None  # None: until interrupted
    # Kafka client properties (security): a properties file, then single options over it.
    kafka_option_file: Path | None = None
    kafka_options: dict[str, str] = field(default_factory=dict)
    source: Source = KRAFT

    @property
    def kafka(self) -> KafkaSettings:
        return KafkaSettings.load(self.bootstrap_servers, self.kafka_option_file, self.kafka_options)


class Bridge:
    def __init__(self, options: BridgeOptions) -> None:
        self.options = options
        self.source = source = options.source
        self.kafka = options.kafka
        # Fences an older bridge on the same topic; survives a failover of the topic's leader or the coordinator.
        self.producer = TransactionalProducer(self.kafka, f"{source.bridge_id}-{options.events_topic}")
        self.last = self._committed()
        self.follower = source.follower(options.directory, self.last if self.last >= 0 else None)
        self.waiting: list[dict[str, Any]] = []  # observed changes whose cause event is not read yet

    def _committed(self) -> int:
        return last_committed_batch(self.kafka, self.options.events_topic, self.source.bridge_id, self.source.header)

    def round(self) -> int:
        """Publish the events read since the last round, each followed by the controller's changes it caused;
        returns how many events went out. A Kafka failover on the way costs a new producer, not the round."""
        poll = self.follower.poll()
        events = [e for e in poll.events if self.source.position(e) > self.last]
        records, self.waiting = with_observed(events, [*self.waiting, *poll.observed], self.last, self.source)
        if not records:
            return 0
        bridge_id, header, topic = self.source.bridge_id.encode(), self.source.header, self.options.events_topic
        published = self.last
        top = records[-1][0]

        def publish_once() -> None:
            if published < top:  # else a commit whose answer was lost: the round is on the topic
                self.producer.transact(Record(topic, _json(record), [(QUERY_HEADER, bridge_id),
                                                                     (header, str(position).encode())])
                                       for position, record in records)

        def reread() -> None:
            nonlocal published
            published = self._committed()

        what = f"{self.source.position_name}s {records[0][0]}-{top}"
        self.producer.publish(publish_once, what, on_new_producer=reread)
        self.last = max(self.last, top)
        return len(events)

    def close(self) -> None:
        try:
            self.follower.close()
        finally:
            self.producer.close()


def with_observed(events: list[dict[str, Any]], observed: Iterable[dict[str, Any]], last: int,
                  source: Source = KRAFT) -> tuple[list[tuple[int, dict[str, Any]]], list[dict[str, Any]]]:
    """The records of a round, each with its header position, and the observed changes left waiting.

    Each event (in log order) is followed by the changes it caused, as ObservedDecision records under the
    event's position (`source.change_position`). Any other change past `last` goes out under its own position;
    one the converter may still give a cause (`source.waiting`) waits. The header positions never go down, so a
    resumed bridge starts after the highest one."""
    ids = {e["event_id"]: source.position(e) for e in events}
    caused: dict[str, list[dict[str, Any]]] = {}
    alone: list[dict[str, Any]] = []
    waiting: list[dict[str, Any]] = []
    for o in observed:
        cause = o.get("cause_event_id")
        if cause in ids:
            caused.setdefault(cause, []).append(o)
        elif source.waiting(o):
            waiting.append(o)
        elif o["source_offset"] > last:
            alone.append(o)
    # In position order, the events in the converter's order (it can put an event before one of a lower position:
    # a leader's own ISR write inside a broker's startup, docs/zookeeper.md); at one position an event (with its
    # changes) before a change of no event of this round.
    running = list(accumulate((ids[e["event_id"]] for e in events), max))
    ordered = sorted([*((running[i], 0, i) for i in range(len(events))),
                      *((o["source_offset"], 1, i) for i, o in enumerate(alone))])
    records: list[tuple[int, dict[str, Any]]] = []
    top = last
    for offset, kind, i in ordered:
        if kind == 1:
            top = max(top, offset)
            records.append((top, observed_record(alone[i])))
            continue
        top = max(top, offset)
        records.append((top, events[i]))
        for o in caused.get(events[i]["event_id"], []):
            top = max(top, source.change_position(offset, o))
            records.append((top, observed_record(o)))
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
    b = Bridge(options)
    what = options.source.position_name
    print(f"isrflow bridge: {options.directory} -> {options.events_topic} from {what} {b.last + 1}", flush=True)
    done = 0
    try:
        while options.rounds is None or done < options.rounds:
            published = b.round()
            if published:
                print(f"published {published} event(s), up to {what} {b.last}", flush=True)
            done += 1
            if options.rounds is None or done < options.rounds:
                time.sleep(options.poll_seconds)
    except KeyboardInterrupt:
        pass
    finally:
        b.close()
    return 0
