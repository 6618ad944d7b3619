"""Decisions to the sink topic, exactly once per micro-batch.

Each batch's decisions go out in one Kafka transaction, every record tagged in its headers with the
streaming query's id (kept in its checkpoint, new for a new checkpoint) and the batch id. Before its
first batch the publisher reads the topic's committed tail to learn the last batch that query
committed, so a batch that Spark re-runs after a crash is not published twice. Consumers read with
`isolation.level=read_committed`; (topic, partition, partition_epoch) also identifies a decision.

A broker outage or a failover of the sink topic's leader or of the transaction coordinator: the publisher waits it
out with a new producer (streaming/engine/transactions.py), and re-reads the topic's tail after each new producer's
`init_transactions`, so a commit whose answer was lost is found there and not published twice. After
`outage_timeout_s` the batch fails with `KafkaUnavailableError`: the query stops, and a restarted run resumes from
its checkpoint.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from streaming.engine.faults import crash_point
from streaming.engine.transactions import (
    COMMIT_TIMEOUT_S,
    OUTAGE_TIMEOUT_S,
    Record,
    TransactionalProducer,
)
from streaming.io.delta import decision_json, decision_sort_key
from streaming.io.kafkaclient import KafkaSettings

BATCH_HEADER = "isrflow.batch_id"
QUERY_HEADER = "isrflow.query_id"
_TAIL = 200  # records read back per partition: the last transaction's records are among them


def decision_key(decision: Mapping[str, Any]) -> bytes:
    return f"{decision['topic']}-{decision['partition']}".encode()


class DecisionPublisher:
    def __init__(self, kafka: KafkaSettings | str, topic: str, transactional_id: str,
                 outage_timeout_s: float = OUTAGE_TIMEOUT_S, commit_timeout_s: float = COMMIT_TIMEOUT_S) -> None:
        self.kafka = KafkaSettings.of(kafka)
        self.topic = topic
        self.transactional_id = transactional_id
        self.producer = TransactionalProducer(self.kafka, transactional_id, outage_timeout_s=outage_timeout_s,
                                              commit_timeout_s=commit_timeout_s)
        self._last_batch: dict[str, int] = {}

    def publish(self, query_id: str, batch_id: int, decisions: Sequence[Mapping[str, Any]],
                before_commit: Callable[[], None] | None = None) -> int:
        """Publish the batch once, in one transaction, waiting out a broker outage or a failover of up to
        `outage_timeout_s`. `before_commit` (the batch's other writes) must return before the transaction
        commits, and aborts it by raising; it may be called again after an outage, so it must be idempotent."""
        return self.producer.publish(lambda: self._publish_once(query_id, batch_id, decisions, before_commit),
                                     f"micro-batch {batch_id}", on_new_producer=self._last_batch.clear)

    def _publish_once(self, query_id: str, batch_id: int, decisions: Sequence[Mapping[str, Any]],
                      before_commit: Callable[[], None] | None) -> int:
        # Re-read after every new producer: a commit whose answer was lost is there.
        if query_id not in self._last_batch:
            self._last_batch[query_id] = last_committed_batch(self.kafka, self.topic, query_id)
        if batch_id <= self._last_batch[query_id] or not decisions:
            return 0
        header = [(QUERY_HEADER, query_id.encode()), (BATCH_HEADER, str(batch_id).encode())]

        def sent() -> None:
            crash_point("kafka-transaction")
            if before_commit is not None:
                before_commit()

        self.producer.transact((Record(self.topic, decision_json(d).encode(), header, decision_key(d))
                                for d in sorted(decisions, key=decision_sort_key)), sent)
        crash_point("kafka-committed")
        self._last_batch[query_id] = batch_id
        return len(decisions)

    def close(self) -> None:
        self.producer.close()


def last_committed_batch(kafka: KafkaSettings | str, topic: str, query_id: str, value_header: str = BATCH_HEADER,
                         timeout_s: float = 60) -> int:
    """The highest `value_header` (the batch id) of `query_id`'s committed records at the topic's tail (-1 if
    none). Reads up to the end offsets rather than until the topic goes quiet: a broker slow to answer (one
    just back from an outage) must not hide the last commit, or its batch would be published twice."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import KafkaTimeoutError

    consumer = KafkaConsumer(**KafkaSettings.of(kafka).python_kwargs(), isolation_level="read_committed",
                             enable_auto_commit=False)
    try:
        partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or [])]
        if not partitions:
            return -1
        consumer.assign(partitions)
        # With read_committed the end is the last stable offset: nothing past it is committed yet.
        begins, ends = consumer.beginning_offsets(partitions), consumer.end_offsets(partitions)
        for tp in partitions:
            consumer.seek(tp, max(begins[tp], ends[tp] - _TAIL))
        last = -1
        deadline = time.monotonic() + timeout_s
        while any(consumer.position(tp) < ends[tp] for tp in partitions):
            if time.monotonic() > deadline:
                raise KafkaTimeoutError(f"reading the tail of {topic} took over {timeout_s:.0f}s")
            for records in consumer.poll(timeout_ms=1000).values():
                for record in records:
                    headers = dict(record.headers or [])
                    if headers.get(QUERY_HEADER) == query_id.encode() and value_header in headers:
                        last = max(last, int(headers[value_header]))
        return last
    finally:
        consumer.close()
