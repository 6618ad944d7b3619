"""What the benchmarks share: the clusters they build, the machine's load, progress capture, RSS."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from schemas.events import parse_event
from statemachine.controller import Controller, ControllerConfig
from streaming.engine.partitions import pack_command
from streaming.infra.scenario import ScenarioBuilder

TOPIC_SIZE = 1000


def cluster_log(partitions: int, tail: str = "failure") -> tuple[list[bytes], list[bytes]]:
    """Set-up events (3 brokers, topics of 1,000 partitions, every one on [1, 2, 3], so broker 1 leads them
    all) and the tail: broker 1's failure, its controlled shutdown, or one IsrChange."""
    b = ScenarioBuilder()
    for broker in (1, 2, 3):
        b.start_broker(broker)
    for t in range(0, partitions, TOPIC_SIZE):
        size = min(TOPIC_SIZE, partitions - t)
        b.emit("CreateTopic", topic=f"topic-{t // TOPIC_SIZE:03d}",
               assignment={str(p): [1, 2, 3] for p in range(size)})
    setup = len(b.events)
    if tail == "failure":
        b.fail_broker(1)
    elif tail == "controlled-shutdown":
        b.controlled_shutdown(1)
    elif tail == "isr-change":
        b.alter_isr("topic-000", 0, [1, 2])
    else:
        raise ValueError(tail)
    lines = [line.encode() for line in b.lines()]
    return lines[:setup], lines[setup:]


def silver_rows(log: list[bytes], start: int = 0, controller: Controller | None = None) -> list[dict[str, Any]]:
    """The sequencer's silver rows for `log` (offsets from `start`), as the pipeline writes them."""
    controller = controller or Controller(ControllerConfig())
    rows = []
    for offset, raw in enumerate(log, start=start):
        for h in controller.handle(parse_event(raw), offset):
            c = h.command
            rows.append({"topic": c.topic, "partition": c.partition, "source_offset": c.source_offset,
                         "step": c.step, "action": str(c.action), "command": pack_command(c)})
    return rows


def load() -> str:
    """The 1-minute load average, written next to every figure (2 cores: above 2 means others ran)."""
    return Path("/proc/loadavg").read_text().split()[0]


def rss_mib(pid: int, field: str = "VmRSS") -> float:
    """A process's resident set now (VmHWM: its peak so far), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def descendants(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of every process below `pid`."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        try:
            cmd = (Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
        out.append((child, cmd))
        todo.extend(children.get(child, []))
    return out


class Progress:
    """Every progress event of both queries, kept (the pipeline's own listener prints and forgets them)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def listener(self) -> Any:
        from pyspark.sql.streaming import StreamingQueryListener

        events = self.events

        class Keep(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:
                pass

            def onQueryProgress(self, event: Any) -> None:
                events.append(json.loads(event.progress.json))

            def onQueryIdle(self, event: Any) -> None:
                pass

            def onQueryTerminated(self, event: Any) -> None:
                pass

        return Keep()

    def batches(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["name"] == name and e["numInputRows"] > 0]


class KeptCounts(dict):  # type: ignore[type-arg]
    """A BatchCounts dict that remembers what the progress line popped (the per-step seconds)."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: dict[int, Any] = {}

    def pop(self, key: Any, default: Any = None) -> Any:
        value = super().pop(key, default)
        if value is not None:
            self.kept[key] = value
        return value


def iso_seconds(timestamp: str) -> float:
    """A progress event's ISO timestamp as epoch seconds."""
    from datetime import datetime

    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.1)


def pids() -> tuple[int, int]:
    """This (driver) process and its Spark JVM (not a Kafka broker's)."""
    me = os.getpid()
    jvm = next((p for p, cmd in descendants(me) if "SparkSubmit" in cmd), 0)
    return me, jvm


def isr_churn(partitions: int, events: int) -> Any:
    """(offset, raw) of a long log without building it in memory: the set-up of `cluster_log`, then
    `events` IsrChange requests, round robin over the partitions, each leader (broker 1) shrinking its
    ISR to [1, 2] and growing it back, with the epochs it holds (every one is accepted)."""
    setup, _ = cluster_log(partitions, "isr-change")
    yield from enumerate(setup)
    ts = json.loads(setup[-1])["ts"]
    for k in range(events):
        topic, partition = divmod(k % partitions, TOPIC_SIZE)
        round_ = k // partitions
        event = {"type": "IsrChange", "event_id": f"isr-{k:09d}", "ts": ts, "controller_epoch": 1,
                 "topic": f"topic-{topic:03d}", "partition": partition, "broker_id": 1, "broker_epoch": 101,
                 "leader_epoch": 0, "partition_epoch": round_, "isr": [1, 2] if round_ % 2 == 0 else [1, 2, 3]}
        yield len(setup) + k, json.dumps(event, separators=(",", ":")).encode()


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system, with reaped children) of `pid` and every process below it: less
    sensitive than wall time to other work on a shared machine."""
    total = 0.0
    for p in [pid, *(child for child, _ in descendants(pid))]:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    return total / os.sysconf("SC_CLK_TCK")


def plot_against_size(series: dict[str, dict[int, float]], path: Path, ylabel: str, title: str) -> None:
    """A PNG of seconds against the cluster's partitions (log x), one line per series."""
    import itertools

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for (label, points), marker in zip(series.items(), itertools.cycle("os^vD"), strict=False):
        sizes = sorted(points)
        ax.plot(sizes, [points[s] for s in sizes], marker=marker, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("partitions in the cluster")
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    print(f"plot: {path}")
