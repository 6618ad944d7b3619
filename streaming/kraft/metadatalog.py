"""Decode a KRaft metadata log with Kafka's own decoder (`kafka.tools.DumpLogSegments
--cluster-metadata-decoder`), never a hand-written parser of the binary format.

A source is a `__cluster_metadata-0` directory, one segment (`*.log`) or one snapshot (`*.checkpoint`). A
directory reads as Kafka itself recovers: the newest snapshot is the starting state, then the records of the
segments from the snapshot's end offset on. Control batches (LeaderChange, SnapshotHeader/Footer, ...) are
skipped; records between BEGIN_TRANSACTION_RECORD and ABORT_TRANSACTION_RECORD are dropped; transaction
markers themselves carry no state.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streaming.engine.connectors import KAFKA_BROKER, java_executable, require

# `| offset: 178 CreateTime: 1795361531372 keySize: -1 valueSize: 19 ... payload: {json}`
_RECORD = re.compile(r"^\| offset: (\d+) CreateTime: (-?\d+) .*? payload: (\{.*\})$")
# The batch header DumpLogSegments prints before each batch's records.
_BATCH = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) .*?partitionLeaderEpoch: (-?\d+) .*?"
                    r"isTransactional: (\w+) isControl: (\w+)")
_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_SEGMENT = re.compile(r"^(\d{20})\.log$")

TRANSACTION_MARKERS = ("BEGIN_TRANSACTION_RECORD", "END_TRANSACTION_RECORD", "ABORT_TRANSACTION_RECORD")


@dataclass(frozen=True, slots=True)
class MetadataRecord:
    """One metadata record: its log offset (broker epochs are offsets), batch, Raft epoch and payload.
    Records from a snapshot carry `snapshot=True`; their offsets are positions inside the snapshot."""

    offset: int
    batch: int  # the base offset of its batch: one batch holds one controller operation or more
    create_time: int
    epoch: int  # the Raft leader epoch of the batch (the controller's epoch)
    type: str
    version: int
    data: dict[str, Any]
    snapshot: bool = False


@dataclass
class DecodedLog:
    records: list[MetadataRecord]
    files: list[Path]
    snapshot: Path | None = None
    start_offset: int = 0  # the first log offset the segments were read from (the snapshot's end offset)
    control_batches: int = 0
    aborted: int = 0  # records dropped inside aborted transactions
    unknown: Counter[str] = field(default_factory=Counter)  # record types the converter does not model


def snapshot_end_offset(path: Path) -> int | None:
    m = _SNAPSHOT.match(path.name)
    return int(m.group(1)) if m else None


def plan(source: Path) -> tuple[Path | None, list[Path], int]:
    """The files a source reads, in order: (snapshot or None, segments, first offset to keep)."""
    source = Path(source)
    if not source.exists():
        raise FileNotFoundError(f"no such metadata log: {source}")
    if source.is_file():
        end = snapshot_end_offset(source)
        if end is not None:
            return source, [], end
        if source.suffix != ".log":
            raise ValueError(f"{source} is neither a segment (*.log) nor a snapshot (*.checkpoint)")
        return None, [source], 0
    snapshots = sorted((p for p in source.iterdir() if _SNAPSHOT.match(p.name)), key=lambda p: p.name)
    segments = sorted((p for p in source.iterdir() if _SEGMENT.match(p.name)), key=lambda p: p.name)
    if not snapshots and not segments:
        raise FileNotFoundError(f"{source} holds no metadata segments (*.log) or snapshots (*.checkpoint)")
    snapshot = snapshots[-1] if snapshots else None
    start = snapshot_end_offset(snapshot) if snapshot else 0
    assert start is not None
    # A segment is needed if the next one starts after `start` (it may hold offsets >= start).
    bases = [int(_SEGMENT.match(p.name).group(1)) for p in segments]  # type: ignore[union-attr]
    needed = [p for i, p in enumerate(segments) if i + 1 == len(segments) or bases[i + 1] > start]
    return snapshot, needed, start


def dump(files: Sequence[Path], java: str | None = None) -> str:
    """Kafka's own DumpLogSegments output for `files` (segments and snapshots), decoded as metadata."""
    classpath = ":".join(str(p) for p in require(KAFKA_BROKER))
    cmd = [java or java_executable(), "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", classpath,
           "-Dlog4j2.level=ERROR", "kafka.tools.DumpLogSegments", "--cluster-metadata-decoder",
           "--files", ",".join(str(Path(f).resolve()) for f in files)]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"DumpLogSegments failed ({result.returncode}):\n{result.stderr[-2000:]}")
    return result.stdout


def parse_dump(text: str, snapshot: bool = False) -> Iterator[tuple[str, Any]]:
    """The dump's lines as ("record", MetadataRecord) and ("control", base offset) items, in log order."""
    batch, epoch, control = 0, -1, False
    for line in text.splitlines():
        m = _BATCH.match(line)
        if m:
            batch, epoch, control = int(m.group(1)), int(m.group(3)), m.group(5) == "true"
            if control:
                yield "control", batch
            continue
        if control or not line.startswith("| offset:"):
            continue
        m = _RECORD.match(line)
        if m is None:
            # A data batch line without a payload: a snapshot header/footer or a record the decoder could not
            # read; both carry no metadata state.
            continue
        payload = json.loads(m.group(3))
        yield "record", MetadataRecord(int(m.group(1)), batch, int(m.group(2)), epoch, payload["type"],
                                       int(payload.get("version", 0)), payload.get("data") or {}, snapshot)


def _drop_aborted(records: list[MetadataRecord], log: DecodedLog) -> list[MetadataRecord]:
    out: list[MetadataRecord] = []
    pending: list[MetadataRecord] | None = None
    for r in records:
        if r.type == "BEGIN_TRANSACTION_RECORD":
            pending = []
        elif r.type == "END_TRANSACTION_RECORD":
            out.extend(pending or [])
            pending = None
        elif r.type == "ABORT_TRANSACTION_RECORD":
            log.aborted += len(pending or [])
            pending = None
        elif pending is not None:
            pending.append(r)
        else:
            out.append(r)
    # A transaction still open at the end of the log is not committed yet: its records are not state.
    if pending:
        log.aborted += len(pending)
    return out


def read_metadata_log(source: Path | str, java: str | None = None) -> DecodedLog:
    """Decode `source` (a __cluster_metadata-0 directory, a segment or a snapshot) into metadata records."""
    snapshot, segments, start = plan(Path(source))
    log = DecodedLog([], [*([snapshot] if snapshot else []), *segments], snapshot, start)
    records: list[MetadataRecord] = []
    if snapshot is not None:
        for kind, item in parse_dump(dump([snapshot], java), snapshot=True):
            if kind == "record":
                records.append(item)
            else:
                log.control_batches += 1
    if segments:
        for kind, item in parse_dump(dump(segments, java)):
            if kind == "control":
                log.control_batches += 1
            elif item.offset >= start:
                records.append(item)
    log.records = _drop_aborted(records, log)
    return log
