"""Benchmark: CPU per group of the stateful operator's function alone, outside Spark.

The same commands as floor.py (a cluster of N partitions, then the failure of the broker that leads them
all): every partition's record is built from the set-up commands, then `apply_partition_commands` runs
once per group over the failure's commands, as the operator calls it (a pandas frame of packed commands
in, packed rows out), with a dict-backed stand-in for Spark's GroupState. Reported: process CPU seconds
per group, the fastest of `--repeat` passes (steadier than wall time on a shared machine). What Spark adds
around it (Arrow, the frames it builds, the state store) is floor.py's business.

Run: .venv/bin/python benchmarks/hot_path.py [--partitions 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import pandas as pd
from harness import cluster_log, load, silver_rows

from statemachine.controller import Controller
from streaming.engine.partitions import apply_partition_commands


class State:
    """The part of pyspark's GroupState the operator uses."""

    def __init__(self, value: tuple[bytes, ...] | None) -> None:
        self.value = value

    @property
    def exists(self) -> bool:
        return self.value is not None

    @property
    def get(self) -> tuple[bytes, ...]:
        assert self.value is not None
        return self.value

    def update(self, value: tuple[bytes, ...]) -> None:
        self.value = value

    def remove(self) -> None:
        self.value = None


def groups(rows: list[dict[str, Any]]) -> dict[tuple[str, int], pd.DataFrame]:
    """Each partition's rows as the frame the operator gets (key columns and the packed command)."""
    by_key: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in rows:
        by_key.setdefault((row["topic"], row["partition"]), []).append(
            {"topic": row["topic"], "partition": row["partition"], "command": row["command"]})
    return {key: pd.DataFrame(group) for key, group in by_key.items()}


def apply_all(frames: dict[tuple[str, int], pd.DataFrame], states: dict[tuple[str, int], Any]) -> int:
    """One pass: every group through the operator's function; returns the rows it emitted."""
    emitted = 0
    for key, frame in frames.items():
        state = State(states.get(key))
        for out in apply_partition_commands(key, iter([frame]), state):
            emitted += len(out)
        states[key] = state.value
    return emitted


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5, help="passes over the failure; the fastest counts")
    args = parser.parse_args()
    setup, failure = cluster_log(args.partitions)
    controller = Controller()
    created = silver_rows(setup, 0, controller)
    tail = groups(silver_rows(failure, len(setup), controller))
    before = load()
    passes, emitted = [], 0
    for _ in range(args.repeat):
        states: dict[tuple[str, int], Any] = {}
        apply_all(groups(created), states)  # every pass starts from the records as they were created
        started = time.process_time()
        emitted = apply_all(tail, states)
        passes.append(time.process_time() - started)
    best = min(passes)
    print(f"partitions {args.partitions}, {len(tail)} groups, {emitted} rows out, load {before} -> {load()}")
    print(f"  CPU {best:.3f}s for the failure batch, {best / len(tail) * 1e6:.1f} us/group "
          f"(passes: {', '.join(f'{p:.2f}' for p in passes)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
