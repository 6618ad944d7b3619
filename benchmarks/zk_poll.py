"""Benchmark: what one `isrflow bridge --zookeeper-data-dir` poll costs on a real ZooKeeper directory.

A copy of DIR (a ZooKeeper server's version-2, or the dataDir holding it) has its newest log cut `--append`
transactions before its end; a follower (streaming/zookeeper/follow.py, as the bridge keeps it) starts on it (its
first poll: the newest snapshot and the log after it, or the resume of a bridge that published up to the cut:
the whole retained history read as state); then the cut transactions are written back, as the server appends
them (not timed), and one poll is timed; then a poll with nothing new. Each `--repeat` times: median wall and
CPU seconds (this process: the follower is pure Python).

Run: PYTHONPATH=$PWD nice -n 10 .venv/bin/python benchmarks/zk_poll.py DIR [--append 12] [--repeat 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import struct
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from streaming.zookeeper.files import LOG_HEADER_BYTES, log_files, read_log_from
from streaming.zookeeper.follow import ZkFollower


def record_starts(log: Path) -> list[int]:
    """The byte position of each whole record of a log file (checksum, length, bytes, end byte)."""
    data, starts, position = log.read_bytes(), [], LOG_HEADER_BYTES
    _, end, _ = read_log_from(log, LOG_HEADER_BYTES)
    while position < end:
        starts.append(position)
        position += 8 + 4 + struct.unpack(">i", data[position + 8:position + 12])[0] + 1
    return starts


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", type=Path)
    parser.add_argument("--append", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    source = args.directory / "version-2" if (args.directory / "version-2").is_dir() else args.directory
    newest = log_files(source)[-1]
    cut = record_starts(newest)[-args.append]
    rows: dict[str, list[tuple[float, float]]] = {}
    events = 0
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "version-2"
            shutil.copytree(source, copy)
            whole = (copy / newest.name).read_bytes()
            (copy / newest.name).write_bytes(whole[:cut])
            published = read_log_from(copy / newest.name, LOG_HEADER_BYTES)[0][-1].zxid
            for what, after in (("first poll, from the newest snapshot", None),
                                 ("first poll, resumed after the cut", published)):
                follower, wall, cpu = timed(partial(ZkFollower, copy, after=after))
                _, wall2, cpu2 = timed(follower.poll)
                rows.setdefault(what, []).append((wall + wall2, cpu + cpu2))
            (copy / newest.name).write_bytes(whole)  # the server appends: the resumed follower reads it
            polled, wall, cpu = timed(follower.poll)
            events = len(polled.events)
            rows.setdefault(f"a poll of {args.append} new transactions", []).append((wall, cpu))
            _, wall, cpu = timed(follower.poll)
            rows.setdefault("a poll with nothing new", []).append((wall, cpu))
    logs = log_files(source)
    print(f"{source}: {len(logs)} log file(s), {sum(p.stat().st_size for p in logs)} bytes of logs; "
          f"{args.append} transactions appended ({events} events); median of {args.repeat}")
    for what, values in rows.items():
        print(f"  {what}: wall {statistics.median(w for w, _ in values):.4f} s, "
              f"CPU {statistics.median(c for _, c in values):.4f} s")


if __name__ == "__main__":
    main()
