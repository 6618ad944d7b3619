"""Decode a KRaft metadata log with Kafka's own decoder (`kafka.tools.DumpLogSegments
--cluster-metadata-decoder`), never a hand-written parser of the binary format.

A source is a `__cluster_metadata-0` directory, one segment (`*.log`) or one snapshot (`*.checkpoint`). A
directory is its whole retained history: from offset 0 when its first segment starts there, else from the oldest
snapshot that reaches its first segment, then the records of the segments from that snapshot's end offset on. A
window of that history (offsets, or record CreateTimes) starts from the newest snapshot at or before it; the
records between are state for the converter, not events. Control batches (LeaderChange, SnapshotHeader/Footer,
...) are skipped; records between BEGIN_TRANSACTION_RECORD and ABORT_TRANSACTION_RECORD are dropped; transaction
markers themselves carry no state.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streaming.engine.connectors import KAFKA_44, KAFKA_BROKER, JarSet, java_executable, require
from streaming.errors import UsageError
from streaming.io.eventlog import Bounds, millis

# `| offset: 178 CreateTime: 1795361531372 keySize: -1 valueSize: 19 ... payload: {json}`
_RECORD = re.compile(r"^\| offset: (\d+) CreateTime: (-?\d+) .*? payload: (\{.*\})$")
# The batch header DumpLogSegments prints before each batch's records.
_BATCH = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) .*?partitionLeaderEpoch: (-?\d+) .*?"
                    r"isTransactional: (\w+) isControl: (\w+)")
_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_SEGMENT = re.compile(r"^(\d{20})\.log$")

TRANSACTION_MARKERS = ("BEGIN_TRANSACTION_RECORD", "END_TRANSACTION_RECORD", "ABORT_TRANSACTION_RECORD")
# A record DumpLogSegments could not read: a version newer than its Kafka's (a 4.4 broker's registration read by
# Kafka 4.1's decoder).
_UNDECODABLE = re.compile(r"^\| offset: (\d+) .*? payload: Error at \d+, skipping")


@dataclass(frozen=True)
class Decoder:
    """A Kafka release's DumpLogSegments: it reads every metadata record version up to its release's."""

    jar_set: JarSet
    main_class: str


# Kafka 4.1's (the project's broker jars); Kafka 4.4's, in kafka-tools (its jars fetched on first use: streaming.jobs
# .kraft reads a log again with it when 4.1's could not read some of its records).
DECODER_41 = Decoder(KAFKA_BROKER, "kafka.tools.DumpLogSegments")
DECODER_44 = Decoder(KAFKA_44, "org.apache.kafka.tools.DumpLogSegments")


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
    start_offset: int = 0  # where the state starts: the snapshot's end offset, or 0 (the first log record kept)
    # Offsets [first, end) whose records are events; the log records before `first` are state only.
    window: tuple[int, int] = (0, 0)
    origin: str = ""  # where the state starts, and why
    control_batches: int = 0
    aborted: int = 0  # records dropped inside aborted transactions
    undecodable: int = 0  # records the decoder could not read (newer than its release)
    unknown: Counter[str] = field(default_factory=Counter)  # record types the converter does not model


def snapshot_end_offset(path: Path) -> int | None:
    m = _SNAPSHOT.match(path.name)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class Plan:
    """The files a source reads, in order: the snapshot the state starts from (or None), the segments that may
    hold offsets >= `start` (the snapshot's end offset, or 0), and why it starts there."""

    snapshot: Path | None
    segments: list[Path]
    start: int
    reason: str


def _base(segment: Path) -> int:
    return int(segment.name[:20])


def segment_base_offset(segment: Path) -> int:
    """The offset of a segment's first record (its file name)."""
    return _base(segment)


def snapshot_files(directory: Path) -> list[Path]:
    """The directory's snapshots (`*.checkpoint`), oldest first."""
    return sorted((p for p in directory.iterdir() if _SNAPSHOT.match(p.name)), key=lambda p: p.name)


def segment_files(directory: Path) -> list[Path]:
    """The directory's segments (`*.log`, not the `.deleted` ones Kafka is removing), oldest first."""
    return sorted((p for p in directory.iterdir() if _SEGMENT.match(p.name)), key=lambda p: p.name)


def plan(source: Path, at: int | None = None) -> Plan:
    """Where the state of `source` starts: for a directory, its whole retained history (offset 0 when the first
    segment starts there, else the oldest snapshot that reaches the first segment); with `at`, the newest
    snapshot at or before offset `at` whose end the segments continue, else offset 0 if the segments start there."""
    source = Path(source)
    if not source.exists():
        raise FileNotFoundError(f"no such metadata log: {source}")
    if source.is_file():
        end = snapshot_end_offset(source)
        if end is not None:
            return Plan(source, [], end, f"snapshot {source.name}")
        if source.suffix != ".log":
            raise ValueError(f"{source} is neither a segment (*.log) nor a snapshot (*.checkpoint)")
        return Plan(None, [source], 0, f"segment {source.name} alone")
    snapshots, segments = snapshot_files(source), segment_files(source)
    if not snapshots and not segments:
        raise FileNotFoundError(f"{source} holds no metadata segments (*.log) or snapshots (*.checkpoint)")
    first = _base(segments[0]) if segments else None
    # A snapshot the retained segments continue: every record after its end offset is still there.
    reaching = [s for s in snapshots if first is None or (snapshot_end_offset(s) or 0) >= first]
    if at is not None:
        before = [s for s in reaching if (snapshot_end_offset(s) or 0) <= at]
        if before:
            return _plan(before[-1], segments, f"snapshot {before[-1].name}, the newest at or before offset {at}")
        if first == 0:
            return Plan(None, segments, 0, "offset 0")
        oldest = f"offset {snapshot_end_offset(reaching[0])} (snapshot {reaching[0].name})" if reaching else \
            "no offset: no snapshot reaches the first segment"
        raise UsageError(f"{source}: offset {at} is before the oldest state the directory can rebuild, {oldest}")
    if first == 0:
        return Plan(None, segments, 0, f"offset 0: the first segment {segments[0].name} starts there")
    if not segments:
        return _plan(snapshots[-1], [], f"snapshot {snapshots[-1].name}: the directory holds no segment")
    if not reaching:
        raise UsageError(f"{source}: the first segment {segments[0].name} starts at offset {first} and no snapshot "
                         f"reaches it (end offset >= {first}): the state before it is lost")
    return _plan(reaching[0], segments,
                 f"snapshot {reaching[0].name}: the oldest one that reaches the first retained segment "
                 f"{segments[0].name}")


def _plan(snapshot: Path, segments: list[Path], reason: str) -> Plan:
    start = snapshot_end_offset(snapshot) or 0
    # A segment is needed if the next one starts after `start` (it may hold offsets >= start).
    needed = [p for i, p in enumerate(segments) if i + 1 == len(segments) or _base(segments[i + 1]) > start]
    return Plan(snapshot, needed, start, reason)


def dump_lines(files: Sequence[Path], java: str | None = None, decoder: Decoder = DECODER_41) -> Iterator[str]:
    """Kafka's own DumpLogSegments output for `files` (segments and snapshots), decoded as metadata, line by line
    as the JVM prints them: the caller parses while the JVM decodes (two cores at work on a long log), and the
    whole dump is never held (a million records print 330 MB)."""
    classpath = ":".join(str(p) for p in require(decoder.jar_set))
    cmd = [java or java_executable(), "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", classpath,
           "-Dlog4j2.level=ERROR", decoder.main_class, "--cluster-metadata-decoder",
           "--files", ",".join(str(Path(f).resolve()) for f in files)]
    with tempfile.TemporaryFile("w+") as stderr, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr,
                                                                   text=True, bufsize=1 << 20) as jvm:
        assert jvm.stdout is not None
        yield from jvm.stdout
        if jvm.wait() != 0:
            stderr.seek(0)
            raise RuntimeError(f"DumpLogSegments failed ({jvm.returncode}):\n{stderr.read()[-2000:]}")


def dump(files: Sequence[Path], java: str | None = None) -> str:
    """Kafka's own DumpLogSegments output for `files` (segments and snapshots), decoded as metadata."""
    return "".join(dump_lines(files, java))


def parse_dump(text: str, snapshot: bool = False) -> Iterator[tuple[str, Any]]:
    """The dump's lines as ("record", MetadataRecord), ("control", base offset) and ("undecodable", offset) items,
    in log order."""
    return parse_lines(text.splitlines(), snapshot)


def undecodable(lines: Iterable[str]) -> bool:
    """Whether the decoder could not read a record of `lines` (one newer than its release's)."""
    return any(_UNDECODABLE.match(line) for line in lines)


def parse_lines(lines: Iterable[str], snapshot: bool = False) -> Iterator[tuple[str, Any]]:
    """`parse_dump` of lines in DumpLogSegments' format (also what the bridge's MetadataTail prints), with or
    without their line ends."""
    batch, epoch, control = 0, -1, False
    for line in lines:
        m = _BATCH.match(line)
        if m:
            batch, epoch, control = int(m.group(1)), int(m.group(3)), m.group(5) == "true"
            if control:
                yield "control", batch
            continue
        if control or not line.startswith("| offset:"):
            continue
        m = _RECORD.match(line)
        if m is None and (u := _UNDECODABLE.match(line)):
            yield "undecodable", int(u.group(1))
            continue
        if m is None:
            # A data batch line without a payload: a snapshot header/footer or a record the decoder could not
            # read; both carry no metadata state.
            continue
        payload = json.loads(m.group(3))
        yield "record", MetadataRecord(int(m.group(1)), batch, int(m.group(2)), epoch, payload["type"],
                                       int(payload.get("version", 0)), payload.get("data") or {}, snapshot)


class Transactions:
    """Drops the records of aborted transactions, as they arrive: records after BEGIN_TRANSACTION_RECORD are held
    until END_TRANSACTION_RECORD releases them or ABORT_TRANSACTION_RECORD drops them; markers carry no state."""

    def __init__(self) -> None:
        self.pending: list[MetadataRecord] | None = None  # the records of an open transaction
        self.aborted = 0  # records dropped inside aborted transactions

    def committed(self, records: Iterable[MetadataRecord]) -> list[MetadataRecord]:
        out: list[MetadataRecord] = []
        for r in records:
            if r.type == "BEGIN_TRANSACTION_RECORD":
                self.pending = []
            elif r.type == "END_TRANSACTION_RECORD":
                out.extend(self.pending or [])
                self.pending = None
            elif r.type == "ABORT_TRANSACTION_RECORD":
                self.aborted += len(self.pending or [])
                self.pending = None
            elif self.pending is not None:
                self.pending.append(r)
            else:
                out.append(r)
        return out


def _drop_aborted(records: list[MetadataRecord], log: DecodedLog) -> list[MetadataRecord]:
    transactions = Transactions()
    out = transactions.committed(records)
    # A transaction still open at the end of the log is not committed yet: its records are not state.
    log.aborted += transactions.aborted + len(transactions.pending or [])
    return out


def resolve_window(records: Sequence[MetadataRecord], start: int, bounds: Bounds) -> tuple[int, int]:
    """`bounds` as offsets [first, end) over the decoded records. A window holds whole batches (a batch is one
    controller operation or more): those that begin inside it. Times select by the batch's CreateTime (its first
    record's)."""
    times: dict[int, int] = {}
    for r in records:
        times.setdefault(r.batch, r.create_time)
    batches = sorted(times.items())
    end = records[-1].offset + 1 if records else start

    def first_batch(offset: int | None, iso: str | None, default: int) -> int:
        if offset is not None:
            return next((b for b, _ in batches if b >= offset), max(offset, end))
        if iso is not None:
            ms = millis(iso)
            return next((b for b, t in batches if t >= ms), end)
        return default

    first = max(start, first_batch(bounds.from_offset, bounds.from_time, start))
    return first, max(first, min(end, first_batch(bounds.to_offset, bounds.to_time, end)))


def _snapshot_records(snapshot: Path, log: DecodedLog, java: str | None, decoder: Decoder) -> list[MetadataRecord]:
    records = []
    for kind, item in parse_lines(dump_lines([snapshot], java, decoder), snapshot=True):
        if kind == "record":
            records.append(item)
        elif kind == "undecodable":
            log.undecodable += 1
        else:
            log.control_batches += 1
    return records


def read_metadata_log(source: Path | str, java: str | None = None, bounds: Bounds | None = None,
                      decoder: Decoder = DECODER_41) -> DecodedLog:
    """Decode `source` (a __cluster_metadata-0 directory, a segment or a snapshot) into metadata records: its
    whole retained history, or with `bounds` a window of it, preceded by the records its state starts from (the
    newest snapshot at or before the window, then the log's records up to the window)."""
    source = Path(source)
    history = plan(source)
    log = DecodedLog([], [])
    records: list[MetadataRecord] = []
    if history.segments:
        for kind, item in parse_lines(dump_lines(history.segments, java, decoder)):
            if kind == "control":
                log.control_batches += 1
            elif kind == "undecodable":
                log.undecodable += 1
            elif item.offset >= history.start:
                records.append(item)
    records = _drop_aborted(records, log)
    first, end = resolve_window(records, history.start, bounds or Bounds())
    seed = history if first == history.start else plan(source, first)
    log.files = [*([seed.snapshot] if seed.snapshot else []), *history.segments]
    log.snapshot, log.start_offset, log.window, log.origin = seed.snapshot, seed.start, (first, end), seed.reason
    state = _snapshot_records(seed.snapshot, log, java, decoder) if seed.snapshot is not None else []
    log.records = [*state, *(r for r in records if seed.start <= r.offset and r.batch < end)]
    return log
