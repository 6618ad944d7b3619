"""One Kafka transaction at a time, through the cluster's own failovers: the decisions sink of `run` and the
events topic of `bridge` both publish through a `TransactionalProducer`.

What a failover does to kafka-python's transactional producer (2.2.15, and 3.0.12 is the same): when the
transaction coordinator dies between the producer's coordinator lookup and its next request, the sender drops that
request (an AddPartitionsToTxn, or an InitProducerId) instead of looking the coordinator up again. The records of
the open transaction then never go out, the sender thread spins on them (data ready, nothing it may send), and a
flush waits until its timeout, while every other broker is fine. A new producer finds the new coordinator and the
new leaders at once. So:

- a flush waits only while records are being acknowledged: `stall_s` without one and the producer counts as cut
  off (a retriable `KafkaTimeoutError`), however large the batch;
- the commit, the abort and `init_transactions` are bounded too (kafka-python's commit and abort wait without
  end; its init waits `max_block_ms`);
- a cut-off producer is dropped and a new one started, with a growing pause, for up to `outage_timeout_s`. The new
  producer's `init_transactions` fences the old one and completes or aborts its open transaction, so the caller
  reads what is committed before it tries again (a commit whose answer was lost is there).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from streaming.io.kafkaclient import KafkaSettings

T = TypeVar("T")

OUTAGE_TIMEOUT_S = 300.0
# Java's producer bounds commitTransaction by max.block.ms, 60 s by default: a healthy broker answers in
# milliseconds, and a batch's records are already sent (flushed) when the commit starts.
COMMIT_TIMEOUT_S = 60.0
# A flush with no record acknowledged for this long is stuck (a broker answers a produce request in milliseconds;
# a leader that died is replaced within broker.session.timeout.ms, 9 s by default, and only a new producer sees it).
STALL_S = 10.0
# How long init_transactions may wait for the coordinator (kafka-python's max_block_ms, 60 s by default): a new
# producer that looked up a coordinator just before it died never hears from it, and the next one finds the new one.
INIT_TIMEOUT_S = 15.0
# Longer than the outage a publish waits out, so the coordinator does not abort a transaction open across it
# (the broker caps it at transaction.max.timeout.ms, 15 min by default). A run killed mid-transaction is
# fenced, and its transaction aborted, as soon as it restarts.
TRANSACTION_TIMEOUT_MS = 600_000


class KafkaUnavailableError(RuntimeError):
    """Kafka stayed unreachable longer than the publisher waits."""


@dataclass(frozen=True)
class Record:
    """One record of a transaction."""

    topic: str
    value: bytes
    headers: list[tuple[str, bytes]]
    key: bytes | None = None


class TransactionalProducer:
    """A transactional producer that a failover costs seconds: `publish(attempt, what)` runs `attempt` (which calls
    `transact`) until it returns, starting a new producer after each retriable Kafka error; `on_new_producer` runs
    before the first attempt on each new producer (re-read what is committed)."""

    def __init__(self, kafka: KafkaSettings | str, transactional_id: str, *,
                 outage_timeout_s: float = OUTAGE_TIMEOUT_S, commit_timeout_s: float = COMMIT_TIMEOUT_S,
                 stall_s: float = STALL_S) -> None:
        self.kafka = KafkaSettings.of(kafka)
        self.transactional_id = transactional_id
        self.outage_timeout_s = outage_timeout_s
        self.commit_timeout_s = commit_timeout_s
        self.stall_s = stall_s
        self.producer: Any = None
        self.connect()

    def connect(self) -> None:
        from kafka import KafkaProducer

        producer = KafkaProducer(**self.kafka.python_kwargs(), transactional_id=self.transactional_id,
                                 enable_idempotence=True, acks="all", transaction_timeout_ms=TRANSACTION_TIMEOUT_MS,
                                 max_block_ms=int(min(INIT_TIMEOUT_S, self.commit_timeout_s) * 1000))
        try:
            # Fences any older producer with the same id (a previous process, or this one before an outage) and
            # completes or aborts its open transaction.
            producer.init_transactions()
        except BaseException:
            close_cut_off(producer)
            raise
        self.producer = producer

    def drop(self) -> None:
        producer, self.producer = self.producer, None
        if producer is not None:
            close_cut_off(producer)

    def close(self) -> None:
        if self.producer is not None:
            self.producer.close(timeout=self.commit_timeout_s)
            self.producer = None

    def transact(self, records: Iterable[Record], before_commit: Callable[[], None] | None = None) -> None:
        """The records in one transaction, committed after `before_commit` returns (it aborts it by raising)."""
        producer = self.producer
        producer.begin_transaction()
        try:
            futures = [producer.send(r.topic, key=r.key, value=r.value, headers=r.headers) for r in records]
            flush_progressing(producer, futures, self.stall_s)
            if before_commit is not None:
                before_commit()
            end_transaction(producer, commit=True, timeout_s=self.commit_timeout_s)
        except Exception as exc:
            # Cut off from the broker, an abort would wait for it too: the next producer's init_transactions
            # aborts the transaction instead.
            if not getattr(exc, "retriable", False):
                end_transaction(producer, commit=False, timeout_s=self.commit_timeout_s)
            raise

    def publish(self, attempt: Callable[[], T], what: str, on_new_producer: Callable[[], None] = lambda: None) -> T:
        """`attempt()` until it returns, waiting out a Kafka outage or failover of up to `outage_timeout_s`."""
        from kafka.errors import KafkaError

        deadline = time.monotonic() + self.outage_timeout_s
        pause = 1.0
        while True:
            try:
                if self.producer is None:
                    self.connect()
                    on_new_producer()
                return attempt()
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                self.drop()
                if time.monotonic() + pause > deadline:
                    raise KafkaUnavailableError(
                        f"Kafka at {self.kafka.bootstrap_servers} did not take {what} for "
                        f"{self.outage_timeout_s:.0f}s ({type(exc).__name__}: {exc}); nothing of it was "
                        "published. Restart once Kafka is back: it resumes where it stopped."
                    ) from exc
                if pause == 1.0:
                    print(f"isrflow: Kafka at {self.kafka.bootstrap_servers} unreachable while publishing {what} "
                          f"({type(exc).__name__}); trying a new producer for up to {self.outage_timeout_s:.0f}s",
                          flush=True)
                time.sleep(pause)
                pause = min(pause * 2, 10.0)


def close_cut_off(producer: Any) -> None:
    """Close a producer cut off from its broker (nothing of it is left to save). kafka-python's close flushes first
    and gives up there on a stuck producer, which leaves its sender thread spinning for good: stop that thread (it
    may have ended on its own meanwhile, its network client closed)."""
    with contextlib.suppress(Exception):
        producer.close(timeout=1)
        return
    sender = producer._sender
    if sender.is_alive():
        with contextlib.suppress(Exception):
            sender.force_close()
        sender.join(5)
    with contextlib.suppress(Exception):
        producer._metrics.close()
    producer._closed = True  # else its __del__ tries the flush again


def flush_progressing(producer: Any, futures: list[Any], stall_s: float) -> None:
    """`producer.flush()` for as long as records are being acknowledged; `KafkaTimeoutError` (retriable) once
    `stall_s` passes with none."""
    from kafka.errors import KafkaTimeoutError

    acknowledged = 0
    while True:
        try:
            producer.flush(timeout=stall_s)
            return
        except KafkaTimeoutError as exc:
            done = sum(1 for f in futures if f.is_done)
            if done == acknowledged:
                raise KafkaTimeoutError(
                    f"no record of the transaction acknowledged in {stall_s:.0f}s ({done} of {len(futures)} were)"
                ) from exc
            acknowledged = done


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
