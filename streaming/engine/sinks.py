"""Decisions to the sink topic, exactly once per micro-batch.

Each batch's decisions go out in one Kafka transaction, every record tagged in its headers with the
streaming query's id (kept in its checkpoint, new for a new checkpoint) and the batch id. Before its
first batch the publisher reads the topic's committed tail to learn the last batch that query
committed, so a batch that Spark re-runs after a crash is not published twice. Consumers read with
`isolation.level=read_committed`; (topic, partition, partition_epoch) also identifies a decision.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from streaming.io.delta import decision_json, decision_sort_key

BATCH_HEADER = "isrflow.batch_id"
QUERY_HEADER = "isrflow.query_id"
_TAIL = 200  # records read back per partition: the last transaction's records are among them


def decision_key(decision: Mapping[str, Any]) -> bytes:
    return f"{decision['topic']}-{decision['partition']}".encode()


class DecisionPublisher:
    def __init__(self, bootstrap_servers: str, topic: str, transactional_id: str) -> None:
        from kafka import KafkaProducer

        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.producer = KafkaProducer(bootstrap_servers=bootstrap_servers, transactional_id=transactional_id,
                                      enable_idempotence=True, acks="all")
        # Fences any older producer with the same id (a previous run of this query).
        self.producer.init_transactions()
        self._last_batch: dict[str, int] = {}

    def publish(self, query_id: str, batch_id: int, decisions: Sequence[Mapping[str, Any]],
                before_commit: Callable[[], None] | None = None) -> int:
        """One transaction with the batch's decisions; `before_commit` (the batch's other writes) must
        return before it commits, and aborts it by raising."""
        if query_id not in self._last_batch:
            self._last_batch[query_id] = last_committed_batch(self.bootstrap_servers, self.topic, query_id)
        if batch_id <= self._last_batch[query_id] or not decisions:
            return 0
        header = [(QUERY_HEADER, query_id.encode()), (BATCH_HEADER, str(batch_id).encode())]
        self.producer.begin_transaction()
        try:
            for d in sorted(decisions, key=decision_sort_key):
                self.producer.send(self.topic, key=decision_key(d), value=decision_json(d).encode(), headers=header)
            if before_commit is not None:
                before_commit()
            self.producer.commit_transaction()
        except Exception:
            self.producer.abort_transaction()
            raise
        self._last_batch[query_id] = batch_id
        return len(decisions)

    def close(self) -> None:
        self.producer.close()


def last_committed_batch(bootstrap_servers: str, topic: str, query_id: str, value_header: str = BATCH_HEADER) -> int:
    """The highest `value_header` (the batch id) of `query_id`'s committed records at the topic's tail (-1 if none)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, isolation_level="read_committed",
                             enable_auto_commit=False, consumer_timeout_ms=2000)
    try:
        partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or [])]
        if not partitions:
            return -1
        consumer.assign(partitions)
        ends = consumer.end_offsets(partitions)
        for tp in partitions:
            consumer.seek(tp, max(0, ends[tp] - _TAIL))
        last = -1
        for record in consumer:
            headers = dict(record.headers or [])
            if headers.get(QUERY_HEADER) == query_id.encode() and value_header in headers:
                last = max(last, int(headers[value_header]))
        return last
    finally:
        consumer.close()
