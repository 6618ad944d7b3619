"""`isrflow run --master spark://...` on a real standalone cluster (a master and two 1-core workers, each
executor in its own JVM with its own Python workers), against the real Kafka broker; one worker is killed in
the middle of the run. Decisions and audit must equal the local engine, with nothing lost or duplicated."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from streaming.engine.local import run_local
from streaming.infra.localkafka import create_topic
from streaming.infra.localspark import LocalSparkCluster
from streaming.infra.processes import die_with_parent
from streaming.io.delta import comparable, read_delta
from streaming.jobs.demo import bundled_scenario, consume_decisions, publish

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

ISRFLOW = Path(sys.executable).with_name("isrflow")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSparkCluster]:
    # 768m per worker: one 512m executor each, beside the driver and the broker on this small machine.
    with LocalSparkCluster(workers=2, cores=1, memory="768m", root=tmp_path_factory.mktemp("cluster")) as c:
        yield c


def run_command(bootstrap: str, events: str, decisions: str, work: Path, master: str) -> list[str]:
    return [str(ISRFLOW), "run", "--bootstrap-servers", bootstrap, "--events-topic", events, "--decisions-topic",
            decisions, "--audit-table", str(work / "lake" / "audit"), "--checkpoint-dir", str(work / "ckpt"),
            "--trigger", "available-now", "--kafka-option", "maxOffsetsPerTrigger=10", "--state-partitions", "2",
            "--master", master, "--conf", "spark.executor.memory=512m", "--conf", "spark.task.maxFailures=8",
            "--conf", "spark.databricks.delta.snapshotPartitions=2"]


def start(command: list[str], log: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True,
                            preexec_fn=die_with_parent)


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def finish(process: subprocess.Popen[str], timeout: float) -> int:
    try:
        return process.wait(timeout=timeout)
    finally:
        stop(process)


def test_run_on_a_standalone_cluster_survives_a_lost_worker(cluster: LocalSparkCluster, kafka_broker: Any,
                                                            tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    lines = bundled_scenario()
    create_topic(bootstrap, "cluster-events", 1)
    create_topic(bootstrap, "cluster-decisions", 2)
    publish(bootstrap, "cluster-events", lines)
    command = run_command(bootstrap, "cluster-events", "cluster-decisions", tmp_path, cluster.url)

    log = tmp_path / "run-1.log"
    process = start(command, log)
    try:
        # Kill a worker once the sequencer is two micro-batches in: the Kafka reads and Delta writes of the
        # next batch lose their executor.
        deadline = time.monotonic() + 600
        while "[sequencer] batch 1:" not in log.read_text() and process.poll() is None:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        cluster.kill_worker(0)
        code = process.wait(timeout=900)
    finally:
        stop(process)
    output = log.read_text()
    if code != 0:
        # Stopped with a clear error: a restart on the remaining worker resumes from the checkpoint.
        assert "isrflow" in output, output
        log = tmp_path / "run-2.log"
        assert finish(start(command, log), 900) == 0, log.read_text()
        output += log.read_text()
    assert "[partitions] batch" in output, output

    expected = run_local(enumerate(lines))
    lake = tmp_path / "lake"
    assert comparable(read_delta(lake / "audit")) == comparable(expected.audit)
    assert comparable(read_delta(lake / "decisions")) == comparable(expected.decisions)
    # What a downstream consumer reads (read_committed): every decision once, none lost.
    assert comparable(consume_decisions(bootstrap, "cluster-decisions")) == comparable(expected.decisions)
