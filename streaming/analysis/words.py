"""Words the report writes with: partition names, counts, durations, event times."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

Key = tuple[str, int]


def pname(topic: str | None, partition: int | None) -> str:
    return f"{topic}-{partition}"


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def names(keys: Iterable[Key], limit: int = 8, total: int | None = None) -> str:
    """The first `limit` of `keys` by name, and how many more; `total`: how many partitions `keys` stand for when
    they are only the smallest of them."""
    keys = sorted(keys)
    total = len(keys) if total is None else total
    text = ", ".join(pname(*k) for k in keys[:limit])
    return text + (f" and {total - limit} more" if total > limit else "")


class Clock:
    """Formats event times: HH:MM:SS when the whole log is one UTC day, else with the date."""

    def __init__(self, times: Iterable[datetime | None]) -> None:
        days = {t.date() for t in times if t is not None}
        self.one_day = len(days) <= 1

    def __call__(self, t: datetime | None, offset: int | None = None) -> str:
        if t is None:
            return f"offset {offset}" if offset is not None else "?"
        return t.strftime("%H:%M:%S" if self.one_day else "%Y-%m-%d %H:%M:%S")


def duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, s = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {s} s" if s else f"{minutes} min"
    hours, m = divmod(minutes, 60)
    return f"{hours} h {m} min"


def and_list(items: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'; '' for none."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def gap(start: datetime | None, end: datetime | None) -> str:
    if start is None or end is None:
        return "?"
    return duration((end - start).total_seconds())


