"""Benchmark: from a restart of `isrflow run` to its first progress line.

A local broker, the bundled incident published to an events topic but for its last `--held` events, then `isrflow
run --trigger '5 seconds'` until every published event is decided, stopped with SIGTERM. Then two restarts on the
same checkpoint, each a new process:
- `with data`: the held events are published while `run` is down, so its first micro-batch has work;
- `idle`: nothing new since the last stop.
For each: seconds from the process's start to each line it prints (the first progress line in bold), the process
tree's CPU seconds (Python driver, JVM, Python workers) up to that line, and the machine's load. With `--phases`
each run is started through a wrapper that prints when the phases inside `run` end (session, pairing check, queries
started), without changing `run` itself.

Run: .venv/bin/python benchmarks/run_restart.py [--held 5] [--state-partitions N] [--phases]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness import cpu_seconds, load

from streaming.infra.localkafka import LocalKafkaBroker, create_topic
from streaming.io.delta import read_delta
from streaming.jobs.demo import bundled_scenario, publish

EVENTS, DECISIONS = "restart-events", "restart-decisions"
# A progress line of either query, or the line a restarted run prints once its queries have resumed.
PROGRESS = ("[sequencer] batch", "[partitions] batch", "isrflow run: up")

# Started with --phases: `run` with a timestamped line where each of its phases ends.
PHASES = """
import sys, time
T0 = float(sys.argv[1])
def mark(what):
    print(f"phase {time.time() - T0:7.2f}s {what}", flush=True)
import streaming.jobs.run as run, streaming.engine.session as session, streaming.engine.pairing as pairing
import streaming.engine.pipeline as pipeline
mark("imports")
def timed(module, name):
    original = getattr(module, name)
    def wrapper(*args, **kwargs):
        result = original(*args, **kwargs)
        mark(name)
        return result
    setattr(module, name, wrapper)
for module, name in ((session, "build_spark"), (pairing, "check_pairing"), (session, "state_partitions_conf"),
                     (pipeline, "start_pipeline")):
    timed(module, name)
from streaming.cli import main
sys.exit(main(sys.argv[2:]))
"""


@dataclass
class Lines:
    """A process's output lines with the seconds since its start, read on a thread."""

    started: float
    lines: list[tuple[float, str]] = field(default_factory=list)

    def read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self.lines.append((time.time() - self.started, line.rstrip()))

    def first(self, prefixes: tuple[str, ...]) -> tuple[float, str] | None:
        return next(((t, text) for t, text in self.lines if text.startswith(prefixes)), None)


def start_run(bootstrap: str, work: Path, state_partitions: int | None, phases: bool) -> tuple[subprocess.Popen, Lines]:
    args = ["run", "--bootstrap-servers", bootstrap, "--events-topic", EVENTS, "--decisions-topic", DECISIONS,
            "--audit-table", str(work / "audit"), "--checkpoint-dir", str(work / "checkpoints"),
            "--trigger", "5 seconds"]
    if state_partitions is not None:
        args += ["--state-partitions", str(state_partitions)]
    started = time.time()
    command = ([sys.executable, "-c", PHASES, str(started), *args] if phases
               else [str(Path(sys.executable).with_name("isrflow")), *args])
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines = Lines(started)
    threading.Thread(target=lines.read, args=(process.stdout,), daemon=True).start()
    return process, lines


def stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=180)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def until(predicate: Callable[[], bool], timeout: float, what: str, process: subprocess.Popen, lines: Lines,
          cpu: list[float]) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if process.poll() is not None:
            log = Path(tempfile.mkstemp(prefix="isrflow-restart-", suffix=".log")[1])
            log.write_text("\n".join(t for _, t in lines.lines))
            raise RuntimeError(f"{what}: the process ended (its output: {log})")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f}s\n" + "\n".join(t for _, t in lines.lines[-30:]))
        cpu[0] = max(cpu[0], cpu_seconds(process.pid))  # the tree's CPU so far (its JVM ends with it)
        time.sleep(0.2)


def decided(work: Path, offset: int) -> bool:
    """The offset is in the audit or the quarantine (a malformed record)."""
    for table in ("audit", "quarantine"):
        try:
            if any(r["source_offset"] == offset for r in read_delta(work / table)):
                return True
        except Exception:  # not created yet, or a commit in progress
            continue
    return False


def report(name: str, lines: Lines, cpu: float, load_before: str) -> None:
    first = lines.first(PROGRESS)
    print(f"\n{name}: load {load_before} -> {load()}; CPU {cpu:.1f}s (driver, JVM, workers) up to the first "
          "progress line")
    for t, text in lines.lines:
        if text.startswith(("isrflow run", "[", "phase")):
            mark = "  <== first progress line" if first and (t, text) == first else ""
            print(f"  {t:7.2f}s  {text}{mark}")


def restart(name: str, bootstrap: str, work: Path, args: argparse.Namespace,
            before: Callable[[], None] | None = None, last_offset: int | None = None) -> float | None:
    """Seconds to the first progress line, None when there was none within --wait seconds. With `last_offset`, the
    run is stopped only once that offset is decided: a partition batch cut short would be re-run by the next start."""
    load_before = load()
    process, lines = start_run(bootstrap, work, args.state_partitions, args.phases)
    cpu = [0.0]
    try:
        if before is not None:
            before()
        until(lambda: lines.first(PROGRESS) is not None, args.wait, f"{name}: a progress line", process, lines,
              cpu)
        if last_offset is not None:
            until(lambda: decided(work, last_offset), 900, f"{name}: every event decided", process, lines, [0.0])
        time.sleep(args.linger)
    except TimeoutError:
        pass
    finally:
        stop(process)
    report(name, lines, cpu[0], load_before)
    first = lines.first(PROGRESS)
    return None if first is None else first[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--held", type=int, default=5, help="events published only while run is down")
    parser.add_argument("--state-partitions", type=int, default=None, help="default: run's own (200)")
    parser.add_argument("--phases", action="store_true", help="timestamps of the phases inside run")
    parser.add_argument("--wait", type=float, default=150, help="seconds a restart may take to its first "
                                                                 "progress line before it counts as none")
    parser.add_argument("--linger", type=float, default=8.0, help="seconds to keep a restarted run up after its "
                                                                   "first progress line (its next lines)")
    args = parser.parse_args()
    records = bundled_scenario()
    head, held = records[:-args.held], records[-args.held:]
    work = Path(tempfile.mkdtemp(prefix="isrflow-restart-"))
    with LocalKafkaBroker() as broker:
        bootstrap = broker.bootstrap_servers
        create_topic(bootstrap, EVENTS, 1)
        create_topic(bootstrap, DECISIONS, 1)
        publish(bootstrap, EVENTS, head)
        load_before = load()
        process, lines = start_run(bootstrap, work, args.state_partitions, args.phases)
        cpu = [0.0]
        try:
            until(lambda: decided(work, len(head) - 1), 900, "first start: every event decided", process, lines, cpu)
            time.sleep(args.linger)
        finally:
            stop(process)
        report("first start", lines, cpu[0], load_before)
        figures = {
            "with data": restart("restart with data", bootstrap, work, args,
                                 before=lambda: publish(bootstrap, EVENTS, held), last_offset=len(records) - 1),
            "idle": restart("idle restart", bootstrap, work, args),
        }
    print("\nfrom process start to the first progress line: "
          + ", ".join(f"{name} " + ("none" if seconds is None else f"{seconds:.1f}s")
                      for name, seconds in figures.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
