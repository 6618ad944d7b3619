"""Progress of a replay: a live bar on a terminal, plain lines in a log.

    progress = Progress(total=12_000)       # None when the number of events is not known in advance
    for ...:
        progress.advance(n)                  # n more events done
    progress.close()                         # the final line; also `with Progress(...) as progress:`

On a terminal (stdout is a tty) it is a rich progress bar with events done, events/s and the estimated
time left. Otherwise (CI, a file, a pipe) it prints one plain line whenever another 10% is done or
`every_seconds` have passed since the last line, whichever comes first, and a last line on close:

    replay: 1,200/12,000 events (10%), 2,345 events/s, ETA 0:00:04
    replay: done, 12,000 events in 5.1 s (2,353 events/s)

`advance` may be called from another thread (a streaming query listener): it is locked.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, TextIO


def _hms(seconds: float) -> str:
    seconds = max(0, round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}"


class Progress:
    def __init__(self, total: int | None, *, description: str = "replay", unit: str = "events",
                 stream: TextIO | None = None, interactive: bool | None = None, every_seconds: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total if total is None or total >= 0 else None
        self.description = description
        self.unit = unit
        self.stream = stream if stream is not None else sys.stdout
        self.every_seconds = every_seconds
        self.clock = clock
        self.done = 0
        self.closed = False
        self._lock = threading.Lock()
        self._started = clock()
        self._last_line = self._started
        self._last_decile = 0
        self._last_advance = self._started
        if interactive is None:
            isatty = getattr(self.stream, "isatty", None)
            interactive = bool(isatty and isatty())
        self.interactive = interactive
        self._bar: Any = None
        self._task: Any = None
        if interactive:
            self._start_bar()

    # -- the rich bar (terminal) ---------------------------------------------------------------------
    def _start_bar(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            ProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichProgress
        from rich.text import Text

        unit = self.unit

        class RateColumn(ProgressColumn):
            def render(self, task: Any) -> Text:
                speed = task.finished_speed or task.speed
                return Text("-- " + unit + "/s" if speed is None else f"{speed:,.0f} {unit}/s", style="cyan")

        self._bar = RichProgress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn(unit), RateColumn(), TextColumn("ETA"), TimeRemainingColumn(), TextColumn("elapsed"),
            TimeElapsedColumn(), console=Console(file=self.stream), transient=False)
        self._bar.start()
        self._task = self._bar.add_task(self.description, total=self.total)

    # -- the public interface --------------------------------------------------------------------------
    def advance(self, n: int = 1) -> None:
        with self._lock:
            if self.closed or n <= 0:
                return
            self.done += n
            self._last_advance = self.clock()
            if self._bar is not None:
                self._bar.update(self._task, advance=n)
                return
            now = self._last_advance
            decile = self._decile()
            if decile > self._last_decile or now - self._last_line >= self.every_seconds:
                self._last_decile = max(decile, self._last_decile)
                self._last_line = now
                self._print(self._line(now))

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
            if self._bar is not None:
                if self.total is None:
                    self._bar.update(self._task, total=self.done)
                self._bar.stop()
                return
            elapsed = self.clock() - self._started
            # The rate over the time the events took, not over whatever the caller did after the last one.
            busy = self._last_advance - self._started
            rate = self.done / busy if busy > 0 else 0.0
            self._print(f"{self.description}: done, {self.done:,} {self.unit} in {elapsed:.1f} s "
                        f"({rate:,.0f} {self.unit}/s)")

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- plain lines -------------------------------------------------------------------------------------
    def _decile(self) -> int:
        if not self.total:
            return 0
        return min(10, self.done * 10 // self.total)

    def _line(self, now: float) -> str:
        elapsed = now - self._started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        if self.total:
            left = max(0, self.total - self.done)
            eta = _hms(left / rate) if rate > 0 else "?"
            return (f"{self.description}: {self.done:,}/{self.total:,} {self.unit} "
                    f"({self.done * 100 // self.total}%), {rate:,.0f} {self.unit}/s, ETA {eta}")
        return f"{self.description}: {self.done:,} {self.unit}, {rate:,.0f} {self.unit}/s, elapsed {_hms(elapsed)}"

    def _print(self, line: str) -> None:
        print(line, file=self.stream, flush=True)
