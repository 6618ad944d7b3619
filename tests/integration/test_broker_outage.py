"""The Kafka broker stops for 30 s in the middle of an `isrflow run` (a subprocess on a processing-time
trigger) and comes back on the same port and data dir: the run waits and goes on, and ends equal to the local
engine, with no decision lost or duplicated on the sink topic (read_committed) or in the decisions table.
A broker that dies between a transaction's sends and its commit does not hang the publisher: the commit is
bounded, and the batch is published once after the broker returns."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from streaming.engine.local import run_local
from streaming.engine.sinks import DecisionPublisher
from streaming.infra.localkafka import LocalKafkaBroker, create_topic, free_port
from streaming.io.delta import comparable, read_delta
from streaming.jobs.demo import bundled_scenario, consume_decisions, publish

pytestmark = [pytest.mark.kafka]

OUTAGE_S = 30


def decided(lake: Path) -> set[int]:
    seen: set[int] = set()
    for table in ("audit", "quarantine"):
        try:
            seen |= {r["source_offset"] for r in read_delta(lake / table)}
        except Exception:  # not created yet, or a commit being written
            continue
    return seen


def wait_until(condition: object, timeout: float, what: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if proc.poll() is not None:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not reached within {timeout:.0f}s")
        time.sleep(0.5)


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    """`isrflow run` processes, stopped by pid on teardown even if the test fails."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_broker_outage_mid_run(tmp_path: Path, processes: list[subprocess.Popen[bytes]]) -> None:
    port, data_dir = free_port(), tmp_path / "kafka"
    broker = LocalKafkaBroker(port, data_dir).start()
    try:
        bootstrap = broker.bootstrap_servers
        lines = bundled_scenario()
        create_topic(bootstrap, "outage-events", 1)
        create_topic(bootstrap, "outage-decisions", 1)
        publish(bootstrap, "outage-events", lines)
        lake, log = tmp_path / "lake", tmp_path / "run.log"
        args = [sys.executable, "-m", "streaming", "run", "--bootstrap-servers", bootstrap,
                "--events-topic", "outage-events", "--decisions-topic", "outage-decisions",
                "--audit-table", str(lake / "audit"), "--checkpoint-dir", str(tmp_path / "ckpt"),
                "--trigger", "1 second", "--kafka-option", "maxOffsetsPerTrigger=20", "--state-partitions", "2"]

        with log.open("ab") as out:
            run = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        processes.append(run)
        # Mid-run: the first micro-batch in the audit table (published next), the second to come.
        wait_until(lambda: len(decided(lake)) > 0, 600, "the first micro-batch", run)
        assert run.poll() is None, log.read_text()[-3000:]
        before = len(decided(lake))
        broker.stop()
        time.sleep(OUTAGE_S)
        assert run.poll() is None, log.read_text()[-3000:]
        broker = LocalKafkaBroker(port, data_dir).start()
        wait_until(lambda: len(decided(lake)) == len(lines), 600, "the whole log", run)
        # It waited: the same process goes on, no query failed.
        assert run.poll() is None, log.read_text()[-3000:]
        run.send_signal(signal.SIGTERM)
        assert run.wait(120) == 0, log.read_text()[-3000:]
        text = log.read_text()
        assert "failed" not in text
        assert "unreachable while publishing micro-batch" in text  # the outage hit a publish, which waited

        expected = run_local(enumerate(lines))
        assert before < len(lines)
        assert comparable(read_delta(lake / "decisions")) == comparable(expected.decisions)
        assert comparable(read_delta(lake / "audit")) == comparable(expected.audit)
        assert comparable(consume_decisions(bootstrap, "outage-decisions")) == comparable(expected.decisions)
    finally:
        broker.stop()


def test_broker_dying_before_the_commit_does_not_hang_the_publisher(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The broker stops after the batch's records went out in the open transaction, just before the commit
    (the publisher's `before_commit` stops it, as a crash of the broker at that instant would). The commit
    gets no answer: it gives up after `commit_timeout_s`, the publisher waits for the broker, and once it is
    back the batch is published exactly once (the interrupted transaction is aborted, not committed)."""
    port, data_dir = free_port(), tmp_path / "kafka"
    broker = LocalKafkaBroker(port, data_dir).start()
    try:
        bootstrap = broker.bootstrap_servers
        create_topic(bootstrap, "commit-decisions", 1)
        decisions = run_local(enumerate(bundled_scenario())).decisions
        first, second = decisions[: len(decisions) // 2], decisions[len(decisions) // 2:]
        publisher = DecisionPublisher(bootstrap, "commit-decisions", "isrflow-commit-outage",
                                      outage_timeout_s=240, commit_timeout_s=5)
        assert publisher.publish("query", 0, first) == len(first)

        stopped = threading.Event()

        def broker_dies() -> None:  # called again on the retry, with the broker back: a no-op then
            if not stopped.is_set():
                broker.stop()
                stopped.set()

        result: list[object] = []
        publishing = threading.Thread(target=lambda: result.append(
            publisher.publish("query", 1, second, broker_dies)), daemon=True)
        publishing.start()
        assert stopped.wait(60)
        # While the broker is down, the commit gives up (unbounded, it would wait for the broker's return).
        printed = ""
        deadline = time.monotonic() + 60
        while "unreachable while publishing micro-batch 1 (KafkaTimeoutError)" not in printed:
            assert time.monotonic() < deadline, f"the commit did not give up while the broker was down: {printed}"
            time.sleep(0.5)
            printed += capsys.readouterr().out
        assert publishing.is_alive() and not result
        broker = LocalKafkaBroker(port, data_dir).start()
        publishing.join(180)
        assert not publishing.is_alive(), "the publish did not resume once the broker was back"
        assert result == [len(second)]
        publisher.close()
        assert comparable(consume_decisions(bootstrap, "commit-decisions")) == comparable(decisions)
    finally:
        broker.stop()
