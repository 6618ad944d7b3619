"""The report's plots (matplotlib, Agg, no display), each returned as a base64 PNG."""

from __future__ import annotations

import base64
import io
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from datetime import UTC, timedelta
from typing import Any

from schemas.events import (
    BrokerChangeKind,
)
from statemachine.elections import Election
from streaming.analysis.timeline import ELECTION_ORDER, Analysis, BrokerEvent
from streaming.analysis.words import duration

E = Election
ELECTION_COLORS = {E.INITIAL: "#9e9e9e", E.OFFLINE: "#e07b39", E.OFFLINE_UNCLEAN: "#b71c1c",
                   E.CONTROLLED_SHUTDOWN: "#f2b134", E.REASSIGN: "#7b5ea7", E.PREFERRED: "#3a7dc9"}
BROKER_EVENT_STYLE = {BrokerChangeKind.FAILURE: ("#c62828", "--", "failed"),
                      BrokerChangeKind.CONTROLLED_SHUTDOWN: ("#ef6c00", ":", "shutdown"),
                      BrokerChangeKind.STARTUP: ("#2e7d32", "-.", "started")}

# -- plots --------------------------------------------------------------------------------------------------

def _png(fig: Any) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, metadata={"Software": None})
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _figure(rows: int = 1, height: float = 3.0) -> tuple[Any, Any]:
    """A figure with `rows` stacked axes sharing x; fixed margins (a layout engine would draw it twice) with
    room on the right for legends."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12.0, height * rows))
    axes = fig.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]
    inch = 1 / (height * rows)
    fig.subplots_adjust(left=0.065, right=0.845, top=1 - 0.38 * inch, bottom=0.55 * inch, hspace=0.45 * rows / 2)
    return fig, axes


def _x(a: Analysis) -> tuple[list[Any], bool]:
    """The x values of the events: times when the log has them, else offsets."""
    if a.times and all(t is not None for t in a.times.values()):
        return list(a.times.values()), True
    return list(a.times), False


def _style_axis(ax: Any, use_time: bool, span_s: float, bottom: bool, top: int | None = None) -> None:
    import matplotlib.dates as mdates
    from matplotlib.ticker import MaxNLocator

    if use_time:
        fmt = "%H:%M:%S" if span_s < 6 * 3600 else "%m-%d %H:%M"
        ax.xaxis.set_major_locator(mdates.AutoDateLocator(minticks=4, maxticks=10))
        ax.xaxis.set_major_formatter(mdates.DateFormatter(fmt, tz=UTC))
    if bottom:
        ax.set_xlabel("event time (UTC)" if use_time else "log offset")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
    ax.set_ylim(0, max(1.0, (top or 0) * 1.08))
    ax.grid(True, alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)


def _legend(ax: Any, handles: Sequence[Any] | None = None) -> None:
    kwargs: dict[str, Any] = {} if handles is None else {"handles": handles}
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8.5, frameon=False, borderaxespad=0.0, **kwargs)


def _span(xs: Sequence[Any], use_time: bool) -> float:
    if len(xs) < 2:
        return 0.0
    return (xs[-1] - xs[0]).total_seconds() if use_time else float(xs[-1] - xs[0])


def _marked_broker_events(a: Analysis) -> list[BrokerEvent]:
    """Broker events worth a marker: not the cluster coming up (startups before any partition exists)."""
    return [e for e in a.broker_events if not a.cluster_coming_up(e)]


def _broker_markers(ax: Any, a: Analysis, use_time: bool, label: bool, span_s: float) -> None:
    events = _marked_broker_events(a)
    if len(events) > 60:
        return
    last_label: Any = None
    for e in events:
        x = e.time if use_time else e.offset
        if x is None:
            continue
        color, style, word = BROKER_EVENT_STYLE[e.change]
        ax.axvline(x, color=color, linestyle=style, linewidth=1, alpha=0.8)
        # One label per cluster of close markers (a shutdown and the stop seconds later).
        close = last_label is not None and ((x - last_label).total_seconds() if use_time else x - last_label) \
            < 0.012 * max(span_s, 1.0)
        if label and not close:
            ax.annotate(f"b{e.broker} {word}", xy=(x, 1), xycoords=("data", "axes fraction"), rotation=90,
                        fontsize=7, color=color, va="top", ha="right", xytext=(-1, 0), textcoords="offset points")
            last_label = x


def _broker_event_handles(a: Analysis) -> list[Any]:
    from matplotlib.lines import Line2D

    changes = {e.change for e in _marked_broker_events(a)}
    return [Line2D([], [], color=c, linestyle=s, label=f"broker {w}") for ch, (c, s, w) in
            BROKER_EVENT_STYLE.items() if ch in changes]


def _runs(xs: Sequence[Any], ys: Any) -> tuple[list[Any], list[int]]:
    """The points of a step line (`where="post"`) where its value (numpy, one per event) changes, and its last:
    the same line from fewer points (a million-partition snapshot is a million points, mostly runs of equal values,
    which matplotlib would hold and draw one by one)."""
    import numpy as np

    if not len(ys):
        return [], []
    keep = np.flatnonzero(np.diff(ys, prepend=ys[0] - 1, append=ys[-1] - 1)[:-1] != 0)
    keep = np.union1d(keep, [len(ys) - 1]).tolist()
    return [xs[i] for i in keep], ys[keep].tolist()


def _step(ax: Any, xs: Sequence[Any], ys: Any, color: str, label: str) -> Any:
    xs, ys = _runs(xs, ys)
    (line,) = ax.step(xs, ys, where="post", color=color, linewidth=1.8, label=label)
    ax.fill_between(xs, ys, step="post", color=color, alpha=0.15)
    return line


def _bucket(span_s: float, use_time: bool) -> float:
    """A round bucket width giving at most ~60 bars over the span (seconds, or offsets)."""
    widths = ((1, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400) if use_time else
              (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 50000, 100000))
    for width in widths:
        if span_s / width <= 60:
            return width
    return span_s / 60


def _bucketed(a: Analysis, rows: Mapping[tuple[int, Any], int], use_time: bool
              ) -> tuple[list[Any], dict[Any, list[int]], float]:
    """Rows counted per (offset, category), in buckets of time (or offsets) per category."""
    xs, _ = _x(a)
    span_s = max(_span(xs, use_time), 1.0)
    width = _bucket(span_s, use_time)
    origin = xs[0] if xs else 0
    counts: dict[Any, Counter[int]] = defaultdict(Counter)
    for (offset, category), n in rows.items():
        x = a.time_of(offset) if use_time else offset
        if x is None:
            continue
        pos = (x - origin).total_seconds() if use_time else x - origin
        counts[category][int(pos // width)] += n
    n = int(span_s // width) + 1
    starts = [origin + (timedelta(seconds=i * width) if use_time else i * width) for i in range(n)]
    return starts, {c: [cnt[i] for i in range(n)] for c, cnt in counts.items()}, width


def _bars(ax: Any, starts: list[Any], series: Mapping[Any, list[int]], width: float, use_time: bool,
          colors: Mapping[Any, str], order: Sequence[Any], label_fmt: str) -> int:
    """Stacked bars; returns the tallest stack."""
    bottom = [0] * len(starts)
    bar_width = width / 86400 * 0.85 if use_time else width * 0.85
    for key in order:
        if key not in series:
            continue
        values = series[key]
        shown = [i for i, v in enumerate(values) if v]  # an empty bucket is no patch to draw
        ax.bar([starts[i] for i in shown], [values[i] for i in shown], width=bar_width,
               bottom=[bottom[i] for i in shown], align="edge", color=colors.get(key),
               label=label_fmt.format(key, sum(values)), linewidth=0)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    return max(bottom, default=0)


def _bucket_words(width: float, use_time: bool) -> str:
    return duration(width) if use_time else f"{width:g} offsets"


def plot_health(a: Analysis) -> str:
    xs, use_time = _x(a)
    span_s = _span(xs, use_time)
    fig, (ax1, ax2) = _figure(2, 2.5)
    offline, urp = a.health.offline, a.health.under_replicated
    _step(ax1, xs, offline, "#c62828", "offline")
    ax1.set_ylabel("offline")
    ax1.set_title("Offline partitions (no leader), after each event", loc="left", fontsize=11)
    _step(ax2, xs, urp, "#ef6c00", "under-replicated")
    ax2.set_ylabel("under-replicated")
    ax2.set_title("Under-replicated partitions (ISR smaller than the replica set)", loc="left", fontsize=11)
    for ax, values in ((ax1, offline), (ax2, urp)):
        _broker_markers(ax, a, use_time, label=ax is ax1, span_s=span_s)
        _style_axis(ax, use_time, span_s, bottom=ax is ax2, top=int(values.max(initial=0)))
    handles = _broker_event_handles(a)
    if handles:
        _legend(ax1, handles)
    return _png(fig)


def plot_leaders(a: Analysis) -> str:
    import matplotlib as mpl

    xs, use_time = _x(a)
    span_s = _span(xs, use_time)
    fig, (ax1, ax2) = _figure(2, 2.7)
    brokers = sorted(a.brokers)
    cmap = mpl.colormaps["tab10"]
    colors = {b: mpl.colors.to_hex(cmap(i % 10)) for i, b in enumerate(brokers)}
    starts, series, width = _bucketed(a, a.facts.change_counts, use_time)
    tallest = _bars(ax1, starts, series, width, use_time, colors, brokers, "broker {} ({})")
    ax1.set_ylabel("leader changes")
    ax1.set_title(f"Leader changes, by the broker that became leader (per {_bucket_words(width, use_time)})",
                  loc="left", fontsize=11)
    if series:
        _legend(ax1)
    else:
        ax1.text(0.5, 0.5, "no leader change", transform=ax1.transAxes, ha="center", color="#777")
    most = 0
    for b in brokers:
        values = a.health.led(b)
        most = max(most, int(values.max(initial=0)))
        ax2.step(*_runs(xs, values), where="post", color=colors[b], linewidth=1.6, label=f"broker {b}")
    ax2.set_ylabel("partitions led")
    ax2.set_title("Partitions led per broker, after each event", loc="left", fontsize=11)
    if brokers:
        _legend(ax2)
    _style_axis(ax1, use_time, span_s, bottom=False, top=tallest)
    _style_axis(ax2, use_time, span_s, bottom=True, top=most)
    return _png(fig)


def plot_elections(a: Analysis) -> str:
    xs, use_time = _x(a)
    span_s = _span(xs, use_time)
    fig, (ax,) = _figure(1, 3.0)
    starts, series, width = _bucketed(a, a.facts.election_counts, use_time)
    order = [e for e in ELECTION_ORDER if e in series] + sorted(set(series) - set(ELECTION_ORDER))
    tallest = _bars(ax, starts, series, width, use_time, ELECTION_COLORS, order, "{} ({})")
    ax.set_ylabel("elections")
    ax.set_title(f"Elections by strategy (per {_bucket_words(width, use_time)})", loc="left", fontsize=11)
    if series:
        _legend(ax)
    else:
        ax.text(0.5, 0.5, "no election", transform=ax.transAxes, ha="center", color="#777")
    _style_axis(ax, use_time, span_s, bottom=True, top=tallest)
    return _png(fig)


