"""Crash points for the fault-injection suite (tests/faults): `crash_point(name)` kills the application (its
Spark JVM, then this process) with SIGKILL, as an operator's `kill -9` or the OOM killer would, when
ISRFLOW_CRASH_AT names that point.

    ISRFLOW_CRASH_AT=kafka-transaction        # the first time the point is reached
    ISRFLOW_CRASH_AT=kafka-transaction:3      # the third time
    ISRFLOW_CRASH_AT=@/path/to/file           # what the file says when the point is reached (no file:
                                              # no crash), so a test can arm a running process

Without the variable every call is one comparison: the points sit on the per-batch path, never per record.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

ENV = "ISRFLOW_CRASH_AT"

# Every point placed in the engine, in the order a micro-batch reaches them.
POINTS = (
    "sequencer-state-write",   # sequencer: the state file is written under its temp name, not yet renamed (the
                               # Delta commits run at the same time)
    "sequencer-committed",     # sequencer: bronze, quarantine, silver and state all written, Spark's batch not
                               # committed
    "between-delta-commits",   # partition sink: audit committed, decisions written at the same time (maybe not)
    "delta-committed",         # partition sink: audit and decisions committed, nothing sent to Kafka
    "kafka-transaction",       # partition sink: decisions produced in the open transaction, not committed
    "kafka-committed",         # partition sink: transaction committed, Spark's batch not committed
)


def _target(spec: str | None) -> tuple[str, int] | None:
    if not spec:
        return None
    name, _, count = spec.partition(":")
    return name, int(count or 1)


_SPEC = os.environ.get(ENV) or None
_hits: dict[tuple[str, int], int] = {}


def _armed() -> tuple[str, int] | None:
    if _SPEC is None or not _SPEC.startswith("@"):
        return _target(_SPEC)
    try:
        return _target(Path(_SPEC[1:]).read_text().strip())
    except OSError:
        return None


def crash_point(name: str) -> None:
    """Die here (SIGKILL, no clean-up) when ISRFLOW_CRASH_AT names this point and its hit count is reached."""
    if _SPEC is None:
        return
    target = _armed()
    if target is None or target[0] != name:
        return
    _hits[target] = _hits.get(target, 0) + 1
    if _hits[target] >= target[1]:
        # The JVM first: left alone it would run on for a moment, beside the restarted application.
        context = sys.modules.get("pyspark") and sys.modules["pyspark"].SparkContext
        jvm = getattr(getattr(context, "_gateway", None), "proc", None)
        if jvm is not None:
            os.kill(jvm.pid, signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
