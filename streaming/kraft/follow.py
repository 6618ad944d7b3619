"""Follow a live `__cluster_metadata-0` directory: each `poll` decodes only the bytes appended since the last one
and returns the events (and observed partition changes) they convert to.

The follower keeps, between polls, the byte position after the last whole batch it read in each segment, the
offset of the next record to read, and the `Converter` with everything it has read. It starts where a bridge
resumes: after the batch of the last offset it published (`after`; a bridge publishes whole batches), from
`plan(dir, after + 1)`: the newest snapshot at or before that offset, then the log's records to the end of that
batch, read as state (the seed events restating it are dropped). With nothing published it starts from the
newest snapshot (its state as seed events at its end offset - 1), or from offset 0 when no snapshot ends past it.
The log is read in parts of at most `MetadataTail.read_limit` bytes, fed to the converter as they come. The decoder
is Kafka 4.1's until a part holds a record it cannot read (a Kafka 4.4 broker's registration): that part, and all
that follows, is read with the newer decoder (Kafka 4.4's), as the import reads such a log again with it.

A poll reads the segment holding the next offset from its position, then the next segments while they continue
it (a roll adds a segment; its first offset is where the last one ended). A batch not yet whole (a segment being
written, or a copy from a node still under way) is read next time, and so is a segment that does not continue
its predecessor yet. Segments and snapshots the node deletes or adds later are not read again: only the offsets
ahead matter. Records of a transaction wait for its end (dropped if it aborts). Records lost before they were
read (segments deleted past a lagging follower) or a log truncated under it end the follower with an error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streaming.kraft.convert import Converter, event_offset
from streaming.kraft.metadatalog import (
    DECODER_44,
    MetadataRecord,
    Plan,
    Transactions,
    parse_lines,
    plan,
    segment_base_offset,
    segment_files,
    snapshot_end_offset,
    snapshot_files,
    undecodable,
)
from streaming.kraft.tail import Closing, DecoderError, MetadataTail


class FollowError(RuntimeError):
    """The log lost records the follower had not read yet, or was truncated under it."""


@dataclass
class Poll:
    events: list[dict[str, Any]] = field(default_factory=list)  # in log order
    observed: list[dict[str, Any]] = field(default_factory=list)  # the partition changes read
    unexplained: list[int] = field(default_factory=list)  # offsets of partition changes no pattern explains
    next_offset: int | None = None  # the offset of the next record to read (None: not started)
    bytes_read: int = 0


def newest_tail() -> MetadataTail:
    """The decoder of the newest Kafka release isrflow has (its jars fetched already)."""
    return MetadataTail(jar_set=DECODER_44.jar_set)


class MetadataFollower(Closing):
    def __init__(self, directory: Path | str, after: int | None = None, tail: MetadataTail | None = None,
                 newer: Callable[[], MetadataTail] | None = newest_tail) -> None:
        self.directory = Path(directory)
        self.after = after  # the last offset already published, or None
        self._own_tail = tail is None
        self.tail = tail or MetadataTail()
        # Opens the decoder to read on with once `tail` meets a record it cannot read (None: none newer).
        self.newer = None if self.tail.jar_set == DECODER_44.jar_set else newer
        self.converter: Converter | None = None
        self.origin: Plan | None = None
        self.next_offset = 0
        self.positions: dict[str, int] = {}  # segment file name -> byte position after its last whole batch
        self.transactions = Transactions()
        self._start_known = True  # resuming: whether the converter's start is the end of the last published batch
        self._snapshot: Path | None = None  # the snapshot to read first

    def poll(self) -> Poll:
        """The events of the records appended since the last poll (the seed events too, on the first one)."""
        if not self.directory.is_dir():
            raise FileNotFoundError(f"no such metadata log directory: {self.directory}")
        result = Poll()
        if self.converter is None:
            if not segment_files(self.directory) and not snapshot_files(self.directory):
                return result  # a copy that has not begun yet
            self._start()
        converter = self.converter
        assert converter is not None
        # One feed of a generator: a large log at start goes through in parts, and the state before the start is
        # seeded once, when the first record past it comes.
        converter.feed(self._records(result))
        # Handed out once: the converter keeps its state, not its output (a bridge runs for months).
        out = converter.result
        result.events, result.observed, result.unexplained = out.events, out.observed, out.unexplained
        out.events, out.observed, out.unexplained = [], [], []
        if self.after is not None:
            # Resuming, the seed events (at start - 1) restate what was published already.
            result.events = [e for e in result.events if event_offset(e) >= (converter.start or 0)]
        # Operations are recognised at their last record, inside one batch: put events in log order.
        result.events.sort(key=event_offset)
        result.next_offset = self.next_offset
        return result

    def _start(self) -> None:
        if self.after is not None:
            self.origin = plan(self.directory, self.after + 1)
        else:
            newest = max((snapshot_end_offset(s) or 0 for s in snapshot_files(self.directory)), default=0)
            self.origin = plan(self.directory, newest) if newest > 0 else plan(self.directory)
        self.next_offset = self.origin.start
        # Resuming, the start moves to the end of the batch of the last published offset once that batch is read
        # (`_records`); every record before it is state either way.
        self.converter = Converter(self.origin.start if self.after is None else self.after + 1)
        self._start_known = self.after is None or self.origin.start == self.after + 1
        self._snapshot = self.origin.snapshot

    def _records(self, result: Poll) -> Iterator[MetadataRecord]:
        if self._snapshot is not None:
            for lines, _ in self._read(self._snapshot, 0):
                yield from (r for kind, r in parse_lines(lines, snapshot=True) if kind == "record")
            self._snapshot = None
        for lines, read in self._segment_chunks():
            result.bytes_read += read
            # `baseOffset: B lastOffset: L ...`: control batches hold offsets too.
            batches = [(int(f[1]), int(f[3])) for f in (line.split(" ", 4) for line in lines
                                                        if line.startswith("baseOffset: "))]
            if not self._start_known:
                self._resume_start(batches)
            records = [r for kind, r in parse_lines(lines) if kind == "record" and r.offset >= self.next_offset]
            if batches:
                self.next_offset = max(self.next_offset, batches[-1][1] + 1)
            yield from self.transactions.committed(records)

    def _resume_start(self, batches: list[tuple[int, int]]) -> None:
        """Start after the batch that holds the last published offset: a round publishes whole batches, so the rest
        of that batch went out with it (and an operation's records never span batches)."""
        assert self.after is not None and self.converter is not None
        for base, last in batches:
            if base > self.after or last >= self.after:
                self.converter.start = last + 1 if base <= self.after else self.after + 1
                self._start_known = True
                return

    def _read(self, path: Path, position: int) -> Iterator[tuple[list[str], int]]:
        """The lines of `path` from `position` on, in parts of whole batches, each with the position after it;
        stops where no whole batch follows."""
        size = path.stat().st_size
        while position < size:
            lines, end = self.tail.read(path, position)
            if self.newer is not None and undecodable(lines):
                self._read_on_with(self.newer())
                continue  # the same part again
            if end == position:
                return
            position = end
            yield lines, end

    def _segment_chunks(self) -> Iterator[tuple[list[str], int]]:
        """The lines appended since the last read, in parts, each with the bytes it covers."""
        segments = segment_files(self.directory)
        live = {s.name for s in segments}
        self.positions = {name: p for name, p in self.positions.items() if name in live}
        # The segment holding the next offset: the last one that starts at or before it.
        current = [i for i, s in enumerate(segments) if segment_base_offset(s) <= self.next_offset]
        if not current:
            if segments:
                raise FollowError(
                    f"{self.directory}: the records from offset {self.next_offset} to "
                    f"{segment_base_offset(segments[0]) - 1} were deleted before they were read (the first segment "
                    f"is now {segments[0].name}); restart from a snapshot, knowing those events are lost")
            return
        for segment in segments[current[-1]:]:
            if segment_base_offset(segment) > self.next_offset:
                return  # does not continue the segment before it yet (that one is still being copied)
            position = self.positions.get(segment.name, 0)
            try:
                size = segment.stat().st_size
            except FileNotFoundError:
                return  # deleted since the listing: the next poll lists again
            if size < position:
                raise FollowError(f"{segment} shrank to {size} bytes below the {position} already read: the log "
                                  "was truncated (or replaced) under the follower")
            try:
                for lines, end in self._read(segment, position):
                    self.positions[segment.name] = end
                    yield lines, end - position
                    position = end
            except (DecoderError, FileNotFoundError):
                if segment.exists():
                    raise
                return
            if position < size:
                return  # a batch not yet whole: the rest of the log waits for it

    def _read_on_with(self, tail: MetadataTail) -> None:
        if self._own_tail:
            self.tail.close()
        self.tail, self._own_tail, self.newer = tail, True, None

    def close(self) -> None:
        if self._own_tail:
            self.tail.close()
