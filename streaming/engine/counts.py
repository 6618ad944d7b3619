"""What the last micro-batches did, for the progress line."""

from __future__ import annotations

import time
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
        self._last = time.perf_counter()

    def lap(self, step: str) -> None:
        now = time.perf_counter()
        self.laps[step] = self.laps.get(step, 0.0) + now - self._last
        self._last = now


def format_steps(steps: dict[str, float]) -> str:
    return ", ".join(f"{name} {seconds:.2f}s" for name, seconds in steps.items())
