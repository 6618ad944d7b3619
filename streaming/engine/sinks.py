"""Decisions to the sink topic, exactly once per micro-batch.

Each batch's decisions go out in one Kafka transaction, every record tagged in its headers with the
streaming query's id (kept in its checkpoint, new for a new checkpoint) and the batch id. Before its
first batch the publisher reads the topic's committed tail to learn the last batch that query
committed, so a batch that Spark re-runs after a crash is not published twice. Consumers read with
`isolation.level=read_committed`; (topic, partition, partition_epoch) also identifies a decision.

A broker outage: a publish that fails with a retriable Kafka error (no broker, a timeout, a lost coordinator)
drops the producer, waits and tries again with a new one for up to `outage_timeout_s`. The new producer's
`init_transactions` completes or aborts the interrupted transaction before the topic's tail is read again,
so a commit whose answer was lost is found there and not published twice. After the timeout the batch fails
with `KafkaUnavailableError`: the query stops, and a restarted run resumes from its checkpoint.

The transaction's flush, commit and abort each wait at most `commit_timeout_s` for the broker, then count as
an outage (`KafkaTimeoutError`): kafka-python's commit_transaction and abort_transaction wait for the broker's
answer without end, so a broker dying mid-commit would otherwise hang the query for good.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from streaming.engine.faults import crash_point
from streaming.io.delta import decision_json, decision_sort_key
from streaming.io.kafkaclient import KafkaSettings

BATCH_HEADER = "isrflow.batch_id"
QUERY_HEADER = "isrflow.query_id"
_TAIL = 200  # records read back per partition: the last transaction's records are among them
OUTAGE_TIMEOUT_S = 300.0
# Java's producer bounds commitTransaction by max.block.ms, 60 s by default: a healthy broker answers in
# milliseconds, and a batch's records are already sent (flushed) when the commit starts.
COMMIT_TIMEOUT_S = 60.0
# Longer than the outage a publish waits out, so the coordinator does not abort a transaction open across it
# (the broker caps it at transaction.max.timeout.ms, 15 min by default). A run killed mid-transaction is
# fenced, and its transaction aborted, as soon as it restarts.
TRANSACTION_TIMEOUT_MS = 600_000


def decision_key(decision: Mapping[str, Any]) -> bytes:
    return f"{decision['topic']}-{decision['partition']}".encode()


class KafkaUnavailableError(RuntimeError):
    """The sink topic stayed unreachable longer than the publisher waits."""


class DecisionPublisher:
    def __init__(self, kafka: KafkaSettings | str, topic: str, transactional_id: str,
                 outage_timeout_s: float = OUTAGE_TIMEOUT_S, commit_timeout_s: float = COMMIT_TIMEOUT_S) -> None:
        self.kafka = KafkaSettings.of(kafka)
        self.topic = topic
        self.transactional_id = transactional_id
        self.outage_timeout_s = outage_timeout_s
        self.commit_timeout_s = commit_timeout_s
        self.producer: Any = None
        self._last_batch: dict[str, int] = {}
        self._connect()

    def _connect(self) -> None:
        from kafka import KafkaProducer

        self.producer = KafkaProducer(**self.kafka.python_kwargs(), transactional_id=self.transactional_id,
                                      enable_idempotence=True, acks="all",
                                      transaction_timeout_ms=TRANSACTION_TIMEOUT_MS)
        # Fences any older producer with the same id (a previous run of this query, or this one before an
        # outage) and completes or aborts its open transaction.
        self.producer.init_transactions()

    def _drop_producer(self) -> None:
        producer, self.producer = self.producer, None
        if producer is not None:
            with contextlib.suppress(Exception):  # a producer cut off from its broker: nothing left to save
                producer.close(timeout=1)
        self._last_batch.clear()  # re-read from the topic: a commit whose answer was lost is there

    def publish(self, query_id: str, batch_id: int, decisions: Sequence[Mapping[str, Any]],
                before_commit: Callable[[], None] | None = None) -> int:
        """Publish the batch once, in one transaction, waiting out a broker outage of up to `outage_timeout_s`.
        `before_commit` (the batch's other writes) must return before the transaction commits, and aborts it by
        raising; it may be called again after an outage, so it must be idempotent."""
        from kafka.errors import KafkaError

        deadline = time.monotonic() + self.outage_timeout_s
        pause = 1.0
        while True:
            try:
                if self.producer is None:
                    self._connect()
                return self._publish_once(query_id, batch_id, decisions, before_commit)
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                self._drop_producer()
                if time.monotonic() + pause > deadline:
                    raise KafkaUnavailableError(
                        f"Kafka at {self.kafka.bootstrap_servers} did not take micro-batch {batch_id} for "
                        f"{self.outage_timeout_s:.0f}s ({type(exc).__name__}: {exc}); nothing of it was "
                        "published. Restart `isrflow run` once Kafka is back: it resumes from its checkpoint."
                    ) from exc
                if pause == 1.0:
                    print(f"isrflow: Kafka at {self.kafka.bootstrap_servers} unreachable while publishing micro-batch "
                          f"{batch_id} ({type(exc).__name__}); waiting for it up to {self.outage_timeout_s:.0f}s",
                          flush=True)
                time.sleep(pause)
                pause = min(pause * 2, 10.0)

    def _publish_once(self, query_id: str, batch_id: int, decisions: Sequence[Mapping[str, Any]],
                      before_commit: Callable[[], None] | None) -> int:
        if query_id not in self._last_batch:
            self._last_batch[query_id] = last_committed_batch(self.kafka, self.topic, query_id)
        if batch_id <= self._last_batch[query_id] or not decisions:
            return 0
        header = [(QUERY_HEADER, query_id.encode()), (BATCH_HEADER, str(batch_id).encode())]
        self.producer.begin_transaction()
        try:
            for d in sorted(decisions, key=decision_sort_key):
                self.producer.send(self.topic, key=decision_key(d), value=decision_json(d).encode(), headers=header)
            self.producer.flush(timeout=self.commit_timeout_s)
            crash_point("kafka-transaction")
            if before_commit is not None:
                before_commit()
            end_transaction(self.producer, commit=True, timeout_s=self.commit_timeout_s)
            crash_point("kafka-committed")
        except Exception as exc:
            # Cut off from the broker, an abort would wait for it too: the next producer's init_transactions
            # aborts the transaction instead.
            if not getattr(exc, "retriable", False):
                end_transaction(self.producer, commit=False, timeout_s=self.commit_timeout_s)
            raise
        self._last_batch[query_id] = batch_id
        return len(decisions)

    def close(self) -> None:
        if self.producer is not None:
            self.producer.close()


def end_transaction(producer: Any, *, commit: bool, timeout_s: float) -> None:
    """`producer.commit_transaction()` (or `abort_transaction()`) waiting at most `timeout_s` for the broker's
    answer, else `KafkaTimeoutError` (retriable). kafka-python 2.2 has no bound of its own (Java's producer
    uses max.block.ms); its internals are pinned with the package (pyproject)."""
    from kafka.errors import IllegalStateError, KafkaTimeoutError

    manager = producer._transaction_manager
    if manager is None:
        raise IllegalStateError("the producer has no transactional_id")
    result = manager.begin_commit() if commit else manager.begin_abort()
    producer._sender.wakeup()
    if not result.wait(timeout_ms=timeout_s * 1000):
        raise KafkaTimeoutError(
            f"the transaction's {'commit' if commit else 'abort'} got no answer from Kafka in {timeout_s:.0f}s")


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
