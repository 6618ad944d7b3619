"""What the last micro-batches did, for the progress line."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any


@dataclass
class BatchCounts:
    """What the last micro-batches did, for the progress line (filled by the foreachBatch writers)."""

    sequencer: dict[int, dict[str, Any]] = field(default_factory=dict)
    partitions: dict[int, dict[str, Any]] = field(default_factory=dict)


class Stopwatch:
    """Seconds spent in each named step of a micro-batch (the `steps` of its counts)."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self.within: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, step: str) -> None:
        now = time.perf_counter()
        self.laps[step] = self.laps.get(step, 0.0) + now - self._last
        self._last = now

    def timed(self, name: str, step: Callable[[], Any]) -> Any:
        """Run one step (perhaps in a thread, beside others), its own seconds in `within`."""
        started = time.perf_counter()
        try:
            return step()
        finally:
            self.within[name] = time.perf_counter() - started

    def together(self, steps: dict[str, Callable[[], Any]]) -> dict[str, Any]:
        """Run independent steps at once (Delta commits to different tables, a local file: each mostly
        waits on I/O), as one lap named after all of them. Returns each step's result; the first failure is
        raised once all have finished."""
        with ThreadPoolExecutor(max_workers=len(steps) or 1) as pool:
            futures = {name: pool.submit(self.timed, name, step) for name, step in steps.items()}
            wait(futures.values())
        self.lap(" | ".join(steps))
        return {name: future.result() for name, future in futures.items()}


def format_steps(steps: dict[str, float], within: dict[str, float] | None = None) -> str:
    text = ", ".join(f"{name} {seconds:.2f}s" for name, seconds in steps.items())
    if within:
        text += " [at once: " + ", ".join(f"{name} {seconds:.2f}s" for name, seconds in within.items()) + "]"
    return text
