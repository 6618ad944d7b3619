"""Crash/restart trials of `isrflow run` as a subprocess on the real broker, checked against the local engine.

The trials share one pipeline (events topic, checkpoint, tables, sink topic) and one event log: trial k
publishes the k-th slice of the log, crashes the running pipeline once (at a crash point or at a seeded
random instant), restarts it, waits until its whole prefix of the log is decided, then checks everything
written so far against the local engine on that prefix. The restarted process keeps running into the
next trial: each trial costs one start. Crash points are armed in the running process through a file
(ISRFLOW_CRASH_AT=@file).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streaming.engine.faults import ENV, POINTS
from streaming.engine.local import ReplayResult, run_local
from streaming.infra.processes import die_with_parent
from streaming.io.delta import comparable, read_delta
from streaming.io.layout import Checkpoints, Lake

RANDOM = "random-instant"
KINDS = (*POINTS, RANDOM)


@dataclass
class Outcome:
    trials: int = 0
    kills: Counter[str] = field(default_factory=Counter)  # kill point -> crashes that happened there
    missed: Counter[str] = field(default_factory=Counter)  # crash point not reached in its trial
    starts: int = 0

    def summary(self) -> str:
        covered = ", ".join(f"{k} x{n}" for k, n in sorted(self.kills.items()))
        missed = ", ".join(f"{k} x{n}" for k, n in sorted(self.missed.items()))
        return (f"{self.trials} trials, {sum(self.kills.values())} SIGKILLs, {self.starts} starts of isrflow run; "
                f"kill points covered: {covered}" + (f"; crash points not reached: {missed}" if missed else ""))


class Campaign:
    def __init__(self, bootstrap: str, events_topic: str, decisions_topic: str, log: list[bytes], work: Path,
                 trials: int, seed: int) -> None:
        self.bootstrap, self.events_topic, self.decisions_topic = bootstrap, events_topic, decisions_topic
        self.log, self.work, self.trials = log, work, trials
        self.rng = random.Random(seed)
        self.lake = Lake.beside(work / "lake" / "audit")
        self.checkpoints = Checkpoints(work / "ckpt")
        self.processes: list[subprocess.Popen[bytes]] = []
        self.arm_file = work / "crash-at"
        self.killed: set[int] = set()
        self.published = 0
        self.outcome = Outcome()
        self.consumed: list[dict[str, Any]] = []
        self._consumer: Any = None
        self._decided_at = (-1, 0)
        self._busy_seconds = 20.0  # how long a slice takes to decide: refined after each trial
        # Each slice is a few micro-batches of each query, so a kill lands between or inside them.
        self.max_offsets = max(10, len(log) // trials // 2)

    # -- processes -----------------------------------------------------------------------------
    def start(self) -> subprocess.Popen[bytes]:
        """`isrflow run` armed through a file: the test names a crash point in it when it wants one."""
        env = {**os.environ, ENV: f"@{self.arm_file}"}
        log = open(self.work / f"run-{len(self.processes):03d}.log", "wb")  # noqa: SIM115 (kept by the child)
        process = subprocess.Popen(
            [sys.executable, "-m", "streaming", "run", "--bootstrap-servers", self.bootstrap,
             "--events-topic", self.events_topic, "--decisions-topic", self.decisions_topic,
             "--audit-table", str(self.lake.audit), "--checkpoint-dir", str(self.checkpoints.root),
             "--trigger", "1 second", "--state-partitions", "2",
             "--kafka-option", f"maxOffsetsPerTrigger={self.max_offsets}"],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, preexec_fn=die_with_parent)
        log.close()
        self.processes.append(process)
        self.outcome.starts += 1
        return process

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        """SIGKILL to the process's group: the Python driver, its Spark JVM and the JVM's Python workers."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        self.killed.add(process.pid)

    def close(self) -> None:
        """Every process this campaign started, by its group id (a crash point leaves no group behind
        either: it kills the JVM, whose Python workers exit with it)."""
        for process in self.processes:
            if process.pid not in self.killed:
                self.kill(process)
        if self._consumer is not None:
            self._consumer.close()

    # -- the trials ------------------------------------------------------------------------------
    def run(self, report: Any = print) -> Outcome:
        from streaming.jobs.demo import publish

        kinds: list[str] = []
        running = self.start()
        for k in range(self.trials):
            if not kinds:  # every kind once per round, in a seeded order
                kinds = self.rng.sample(KINDS, len(KINDS))
            kind = kinds.pop()
            end = len(self.log) * (k + 1) // self.trials
            expected = run_local(enumerate(self.log[:end]))
            began = time.monotonic()
            if kind == RANDOM:
                publish(self.bootstrap, self.events_topic, self.log[self.published:end])
                time.sleep(self.rng.uniform(0, self._busy_seconds))
                self.kill(running)
                self.outcome.kills[kind] += 1
            else:
                self.arm_file.write_text(f"{kind}:{self.rng.randint(1, 2)}")
                publish(self.bootstrap, self.events_topic, self.log[self.published:end])
                crashed = self._wait(expected, running)
                self.arm_file.unlink()
                if crashed:
                    self.outcome.kills[kind] += 1
                else:  # the slice was decided without reaching the point often enough: again later
                    self.outcome.missed[kind] += 1
                    kinds.insert(0, kind)
                    self.kill(running)
            self.published = end
            running = self.start()
            assert not self._wait(expected, running), f"isrflow run died in trial {k}: see {self.work}"
            self._busy_seconds = min(60.0, max(5.0, time.monotonic() - began))
            self.check(expected)
            self.outcome.trials += 1
            report(f"trial {k + 1}/{self.trials}: {kind} at events {end}, ok ({time.monotonic() - began:.0f}s)")
        return self.outcome

    def _wait(self, expected: ReplayResult, process: subprocess.Popen[bytes], timeout: float = 900) -> bool:
        """Until the log's prefix is decided (False) or `process` has exited (True)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return True
            if self._decided() >= len(expected.audit):
                return False
            time.sleep(1)
        raise AssertionError(f"the first {expected.events} events were not decided in {timeout}s: see {self.work}")

    def _decided(self) -> int:
        """Audit rows of the partition batches Spark has committed (so their Kafka transaction is too)."""
        commits = self.checkpoints.partitions / "commits"
        committed = [int(p.name) for p in commits.glob("[0-9]*")] if commits.is_dir() else []
        if not committed or not (self.lake.audit / "_delta_log").is_dir():
            return 0
        last = max(committed)
        if self._decided_at[0] != last:  # the table is read only when a batch was committed since
            self._decided_at = (last, sum(1 for r in read_delta(self.lake.audit) if r["batch_id"] <= last))
        return self._decided_at[1]

    # -- the check -------------------------------------------------------------------------------
    def check(self, expected: ReplayResult) -> None:
        want = comparable(expected.decisions)
        self.consumed.extend(self._consume())
        keys = Counter((d["topic"], d["partition"], d["partition_epoch"]) for d in self.consumed)
        duplicated = sum(n - 1 for n in keys.values())
        wanted_keys = {(d["topic"], d["partition"], d["partition_epoch"]) for d in want}
        lost = len(wanted_keys - set(keys))
        assert (lost, duplicated) == (0, 0), f"sink topic: {lost} decisions lost, {duplicated} duplicated"
        assert comparable(self.consumed) == want, "sink topic differs from the local engine"
        decisions = read_delta(self.lake.decisions)
        table_keys = Counter((d["topic"], d["partition"], d["partition_epoch"]) for d in decisions)
        assert max(table_keys.values()) == 1, "(topic, partition, partition_epoch) repeated in the decisions table"
        assert comparable(decisions) == want, "decisions table differs from the local engine"
        assert comparable(read_delta(self.lake.audit)) == comparable(expected.audit), "audit differs"
        # The zk rules' requests, written by the sequencer: none lost or repeated by a crash.
        requests = read_delta(self.lake.requests) if (self.lake.requests / "_delta_log").is_dir() else []
        assert comparable(requests) == comparable(expected.requests), "requests differ"
        quarantined = read_delta(self.lake.quarantine) if (self.lake.quarantine / "_delta_log").is_dir() else []
        assert sorted(q["source_offset"] for q in quarantined) == sorted(
            q["source_offset"] for q in expected.quarantine)

    def _consume(self) -> list[dict[str, Any]]:
        """Decisions committed since the last call, read as a downstream consumer does (read_committed)."""
        import json

        from kafka import KafkaConsumer

        if self._consumer is None:
            self._consumer = KafkaConsumer(self.decisions_topic, bootstrap_servers=self.bootstrap,
                                           auto_offset_reset="earliest", isolation_level="read_committed",
                                           enable_auto_commit=False, consumer_timeout_ms=2000)
        return [json.loads(record.value) for record in self._consumer]
