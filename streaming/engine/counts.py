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


def sequencer_line(batch_id: int, c: dict[str, Any], seconds: float) -> str:
    """A sequencer micro-batch's progress line, from the counts the Sequencer left (`_BatchRows.counts`)."""
    observed = f"{c['observed']} controller decisions, " if c["observed"] else ""  # behind `isrflow bridge` only
    return (f"[sequencer] batch {batch_id}: {c['events']} events in, {observed}{c['quarantined']} quarantined, "
            f"{c['commands']} commands, {seconds:.1f}s ({format_steps(c['steps'], c['within'])})")


def partitions_line(batch_id: int, c: dict[str, Any], state_rows: int, seconds: float) -> str:
    """A partition micro-batch's progress line, from the counts the PartitionSink left."""
    quality, agreement = c.get("quality"), c.get("agreement")
    return (f"[partitions] batch {batch_id}: {c['commands']} commands, {c['decisions']} decisions "
            f"({c['published']} published), {c['rejections']} rejections, {state_rows} state rows, "
            f"{seconds:.1f}s ({format_steps(c['steps'], c['within'])})"
            + (f", quality: {quality}" if quality else "")
            + (f", {agreement}" if agreement else ""))


def agreement_words(compared: list[dict[str, Any]], decisions: int) -> str | None:
    """What a partition micro-batch behind `isrflow bridge` says of its agreement: `N/M agreeing` over its agreement
    rows (the controller's elections and ISR shrinks, and isrflow's decisions where the controller changed nothing),
    then isrflow's decisions that no row holds. Those had no controller decision to pair with: a leader's ISR
    expansion (AlterPartition) or a reassignment's replica change is the controller's write but no election or ISR
    shrink, so a batch of only those says so rather than nothing (agreement.jsonl's rule: docs/kraft.md)."""
    paired = sum(1 for r in compared if r["isrflow"] is not None)
    words = [f"{sum(1 for r in compared if r['match'])}/{len(compared)} agreeing"] if compared else []
    if decisions > paired:
        words.append(f"{decisions - paired} not compared (no election or ISR shrink)")
    return ", ".join(words) or None
