"""Benchmark: what one `isrflow bridge` poll costs on a metadata log of 10K, 100K and 1M records.

Each log is written by Kafka's own classes (tests/integration/kraftlog/WriteMetadataLog.java: MetadataRecordSerde,
MemoryRecords, FileRecords) into one segment, as a controller writes it: topics of 10 partitions on [1, 2, 3],
then ISR churn (PartitionChangeRecords shrinking an ISR to [1, 2] and growing it back, 4 per batch). A follower
(streaming/kraft/follow.py, as the bridge keeps it) reads the log whole once; then, `--repeat` times, a few
records are appended to the segment (by a separate writer JVM, not timed) and one poll is timed: wall seconds,
and CPU seconds of this Python process and of the decoder JVM. Beside it, `--whole-max` and below, the previous
bridge's round: DumpLogSegments over the whole log in a new JVM, then the conversion of it all.

Run: nice -n 10 .venv/bin/python benchmarks/bridge_poll.py [--records 10000,100000,1000000] [--repeat 5]
     [--append 12] [--whole-max 100000]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import resource
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness import load

from streaming.engine.connectors import ROOT, java_executable
from streaming.infra.jars import kafka_broker_classpath
from streaming.kraft.convert import convert
from streaming.kraft.follow import MetadataFollower
from streaming.kraft.metadatalog import read_metadata_log

WRITER = ROOT / "tests" / "integration" / "kraftlog" / "WriteMetadataLog.java"
PARTITIONS_PER_TOPIC = 10
TOPICS = 100
CHUNK = 50_000  # records per writer run: the writer holds its input in memory


def topic_id(n: int) -> str:
    return base64.urlsafe_b64encode(uuid.UUID(int=n + 1).bytes).decode().rstrip("=")


def records(count: int, first: int = 0) -> Iterator[dict[str, Any]]:
    """`count` records from record number `first` on: the topics, then ISR churn; each with its batch number."""
    created = TOPICS * (1 + PARTITIONS_PER_TOPIC)
    for n in range(first, first + count):
        if n < created:
            t, k = divmod(n, 1 + PARTITIONS_PER_TOPIC)
            if k == 0:
                yield {"batch": t, "type": "TOPIC_RECORD", "version": 0,
                       "data": {"name": f"topic-{t:03d}", "topicId": topic_id(t)}}
            else:
                yield {"batch": t, "type": "PARTITION_RECORD", "version": 0, "data": {
                    "partitionId": k - 1, "topicId": topic_id(t), "replicas": [1, 2, 3], "isr": [1, 2, 3],
                    "removingReplicas": [], "addingReplicas": [], "leader": 1, "leaderEpoch": 0,
                    "partitionEpoch": 0}}
            continue
        i = n - created
        # Round robin over the partitions; each partition's ISR shrinks, then grows back on its next turn.
        p, turn = i % (TOPICS * PARTITIONS_PER_TOPIC), i // (TOPICS * PARTITIONS_PER_TOPIC)
        yield {"batch": TOPICS + i // 4, "type": "PARTITION_CHANGE_RECORD", "version": 0, "data": {
            "partitionId": p % PARTITIONS_PER_TOPIC, "topicId": topic_id(p // PARTITIONS_PER_TOPIC),
            "isr": [1, 2] if turn % 2 == 0 else [1, 2, 3]}}


def append(writer: Path, segment: Path, first: int, count: int) -> None:
    """Records [first, first + count) appended to `segment` by Kafka's classes (FileRecords appends)."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as spec:
        for r in records(count, first):
            spec.write(json.dumps(r) + "\n")
    try:
        subprocess.run([java_executable(), "-Xmx1g", "-cp", f"{writer}{os.pathsep}{kafka_broker_classpath()}",
                        "WriteMetadataLog", spec.name, str(segment), str(first)], check=True)
    finally:
        os.unlink(spec.name)


def jvm_cpu(pid: int) -> float:
    """CPU seconds of every thread of `pid`, to the nanosecond (/proc/stat's ticks are 10 ms: a poll is less)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except OSError:
            continue  # a thread that just ended
    return total / 1e9


def timed_poll(follower: MetadataFollower) -> tuple[float, float, float, int]:
    """One poll: wall seconds, Python CPU seconds, decoder JVM CPU seconds, events."""
    jvm0, cpu0, wall0 = jvm_cpu(follower.tail.pid), time.process_time(), time.perf_counter()
    polled = follower.poll()
    return (time.perf_counter() - wall0, time.process_time() - cpu0, jvm_cpu(follower.tail.pid) - jvm0,
            len(polled.events))


def whole_round(directory: Path) -> tuple[float, float]:
    """The previous bridge's round: wall seconds, CPU seconds (Python + the DumpLogSegments JVM)."""
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    log = read_metadata_log(directory)
    convert(log.records, log.start_offset if log.snapshot else None)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (time.perf_counter() - wall0, time.process_time() - cpu0 + children.ru_utime - children0.ru_utime
            + children.ru_stime - children0.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", default="10000,100000,1000000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--append", type=int, default=12, help="records appended before each timed poll")
    parser.add_argument("--whole-max", type=int, default=100_000,
                        help="time the previous whole-log round on logs up to this size")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bridge-poll-") as tmp:
        writer = Path(tmp) / "writer"
        javac = str(Path(java_executable()).with_name("javac"))
        subprocess.run([javac, "-d", str(writer), "-cp", kafka_broker_classpath(), str(WRITER)], check=True)
        print(f"{'records':>9} {'MB':>6} {'first poll s':>12} {'poll wall s':>11} {'poll CPU s (py+jvm)':>20} "
              f"{'events':>6} {'whole round wall s':>18} {'whole CPU s':>11}  load", flush=True)
        for size in (int(s) for s in args.records.split(",")):
            log = Path(tmp) / f"log-{size}"
            log.mkdir()
            segment = log / f"{0:020d}.log"
            for first in range(0, size, CHUNK):
                append(writer, segment, first, min(CHUNK, size - first))
            whole = whole_round(log) if size <= args.whole_max else None
            with MetadataFollower(log) as follower:
                start_wall, _, _, _ = timed_poll(follower)
                polls = []
                end = size
                for _ in range(args.repeat):
                    append(writer, segment, end, args.append)
                    end += args.append
                    polls.append(timed_poll(follower))
            wall = statistics.median(p[0] for p in polls)
            py, jvm = statistics.median(p[1] for p in polls), statistics.median(p[2] for p in polls)
            events = statistics.median(p[3] for p in polls)
            print(f"{size:>9} {segment.stat().st_size / 1e6:>6.1f} {start_wall:>12.2f} {wall:>11.4f} "
                  f"{py + jvm:>8.4f} ({py:.4f}+{jvm:.4f}) {events:>6.0f} "
                  f"{(f'{whole[0]:.2f}' if whole else '-'):>18} {(f'{whole[1]:.2f}' if whole else '-'):>11}  "
                  f"{load()}", flush=True)


if __name__ == "__main__":
    main()
