"""The transactional producer's bounds, on kafka-python's own error types: a flush waits while records are being
acknowledged and gives up after a stall with none; a cut-off producer is closed whatever state its sender is in.
(The failover itself, on a real cluster: tests/integration/test_failover.py.)"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from kafka.errors import KafkaTimeoutError

from streaming.engine.transactions import close_cut_off, flush_progressing


@dataclass
class Acked:
    is_done: bool = False


@dataclass
class SlowProducer:
    """Acknowledges `per_flush` more records at each flush that times out, as a busy broker does."""

    futures: list[Acked]
    per_flush: int
    flushes: int = 0

    def flush(self, timeout: float) -> None:
        self.flushes += 1
        waiting = [f for f in self.futures if not f.is_done]
        for f in waiting[:self.per_flush]:
            f.is_done = True
        if len(waiting) > self.per_flush:
            raise KafkaTimeoutError("Timeout waiting for future")


def test_a_flush_goes_on_while_records_are_acknowledged() -> None:
    futures = [Acked() for _ in range(10)]
    producer = SlowProducer(futures, per_flush=3)
    flush_progressing(producer, futures, stall_s=0.01)
    assert all(f.is_done for f in futures) and producer.flushes == 4


def test_a_flush_with_no_record_acknowledged_gives_up_as_a_retriable_timeout() -> None:
    futures = [Acked(), Acked()]
    with pytest.raises(KafkaTimeoutError, match=r"no record of the transaction acknowledged in 0s \(0 of 2") as exc:
        flush_progressing(SlowProducer(futures, per_flush=0), futures, stall_s=0.01)
    assert exc.value.retriable


@dataclass
class StuckSender:
    alive: bool
    stopped: bool = False

    def is_alive(self) -> bool:
        return self.alive

    def force_close(self) -> None:
        if not self.alive:  # its network client is closed: kafka-python raises on the wakeup
            raise OSError(9, "Bad file descriptor")
        self.stopped = True

    def join(self, timeout: float) -> None:
        pass


@dataclass
class StuckProducer:
    _sender: StuckSender
    _closed: bool = False
    _metrics: None = None  # kafka-python's metrics, closed if it can be

    def close(self, timeout: float) -> None:
        raise KafkaTimeoutError("Timeout waiting for future")  # its flush, before anything else


@pytest.mark.parametrize("alive", [True, False])
def test_a_stuck_producer_is_closed_and_its_sender_stopped(alive: bool) -> None:
    producer = StuckProducer(StuckSender(alive))
    close_cut_off(producer)
    assert producer._closed and producer._sender.stopped == alive
