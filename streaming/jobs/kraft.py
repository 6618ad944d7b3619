"""`isrflow import-kraft` and the `kraft:PATH` source of `replay`: a KRaft metadata log as contract events,
the controller's own decisions beside them, and the agreement between the two after a replay."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from statemachine.features import METADATA_VERSION, unknown_metadata_version
from streaming.engine.collector import young_collection_only
from streaming.history.trust import ImportFacts
from streaming.infra.jars import fetched
from streaming.io.eventlog import Bounds
from streaming.io.jsonl import jsonl_line
from streaming.kraft.convert import Converter, event_offset
from streaming.kraft.metadatalog import DECODER_44, DecodedLog, Decoder, MetadataRecord, read_metadata_log

PREFIX = "kraft:"
ELR_FEATURE = "eligible.leader.replicas.version"


@dataclass(frozen=True)
class ImportSummary:
    files: list[Path]
    records: int
    events: int
    observed: int
    unknown: dict[str, int]
    unexplained: int
    aborted: int
    control_batches: int
    # Feature levels as the log ends, and every level the log sets with its offset (each an UpdateFeatures event:
    # the kraft rules follow metadata.version and eligible.leader.replicas.version from there on).
    features: dict[str, int]
    feature_changes: list[tuple[int, str, int]]
    replayed: str  # which offsets became events, from which state, and why
    # Records no decoder isrflow has could read (a release newer than Kafka 4.4's).
    undecodable: int = 0

    @property
    def warnings(self) -> list[str]:
        """What the user must know first: metadata.version levels isrflow does not know."""
        levels = dict.fromkeys(level for _, name, level in self.feature_changes if name == METADATA_VERSION)
        unreadable = [f"{self.undecodable} record(s) no decoder isrflow has could read (newer than Kafka 4.4's): "
                      f"skipped"] if self.undecodable else []
        return [*unreadable, *(text for level in levels if (text := unknown_metadata_version(level)) is not None)]

    def facts(self) -> ImportFacts:
        """What the report must say first (streaming.history.trust)."""
        return ImportFacts(dict(self.unknown), self.unexplained, self.warnings)

    def describe(self) -> str:
        warnings = "".join(f"WARNING: {w}\n" for w in self.warnings)
        unknown = ", ".join(f"{k} x{v}" for k, v in sorted(self.unknown.items())) or "none"
        ending = {ELR_FEATURE: 0, **self.features}
        levels = ", ".join(f"{name}={level}" for name, level in sorted(ending.items()))
        changes = ", ".join(f"{name}={level} at {offset}" for offset, name, level in self.feature_changes) or "none"
        return (f"{warnings}{self.replayed}\n  read {self.records} metadata records from {len(self.files)} file(s) "
                f"({', '.join(p.name for p in self.files)}): {self.events} events, {self.observed} observed "
                f"partition changes; skipped {self.control_batches} control batches, {self.aborted} records of "
                f"aborted transactions, record types not modelled: {unknown}; unexplained changes: "
                f"{self.unexplained}; feature levels as the log ends: {levels}; set at: {changes}")


def replayed(log: DecodedLog) -> str:
    """Which offsets of `log` are events, and where their state starts, in words."""
    first, end = log.window
    if first == log.start_offset:
        return f"offsets [{first}, {end}) replayed from {log.origin}"
    state = sum(1 for r in log.records if not r.snapshot and r.offset < first)
    return (f"window [{first}, {end}) replayed, seeded from {log.origin} + {state} records that decide nothing "
            f"(offsets [{log.start_offset}, {first}))")


def decode(source: Path, bounds: Bounds | None = None) -> DecodedLog:
    """`read_metadata_log` with Kafka 4.1's decoder, or again with Kafka 4.4's (fetched on first use) when 4.1's
    could not read some records (newer than its release's)."""
    log = read_metadata_log(source, bounds=bounds)
    if log.undecodable:
        log = read_metadata_log(source, bounds=bounds, decoder=newest_decoder())
    return log


def newest_decoder() -> Decoder:
    """Kafka 4.4's decoder, its jars fetched on first use."""
    fetched(DECODER_44.jar_set)
    return DECODER_44


def import_kraft(source: Path, events_out: Path, observed_out: Path | None = None,
                 bounds: Bounds | None = None, lines: BinaryIO | None = None) -> ImportSummary:
    """Decode `source` (a __cluster_metadata-0 dir, a segment or a snapshot) with Kafka's dump tool and write
    the contract events to `events_out` (and the controller's partition changes to `observed_out`): its whole
    retained history, or the window `bounds` of it, seeded with the state at the window's start. Written batch by
    batch as they are converted, each event's line also to `lines` (the replay that reads them, `ImportPipe`)."""
    events = observed = 0
    with young_collection_only():  # millions of records, events and rows, none in a cycle
        log = decode(source, bounds)
        records, described = len(log.records), replayed(log)
        converter = Converter(log.window[0])
        with ExitStack() as files:
            events_out.parent.mkdir(parents=True, exist_ok=True)
            events_file = files.enter_context(events_out.open("wb"))
            if observed_out is not None:
                observed_out.parent.mkdir(parents=True, exist_ok=True)
            observed_file = files.enter_context(observed_out.open("w")) if observed_out is not None else None
            for batch_events, batch_observed in converted_batches(converter, handed_over(log.records)):
                text = "".join(jsonl_line(e) for e in batch_events).encode()
                events_file.write(text)
                if lines is not None:
                    lines.write(text)
                if observed_file is not None:
                    observed_file.writelines(jsonl_line(o) for o in batch_observed)
                events, observed = events + len(batch_events), observed + len(batch_observed)
        result = converter.result
    return ImportSummary(log.files, records, events, observed, dict(result.unknown + log.unknown),
                         len(result.unexplained), log.aborted, log.control_batches, dict(result.features),
                         list(result.feature_changes), described, log.undecodable)


def handed_over(records: list[MetadataRecord]) -> Iterator[MetadataRecord]:
    """`records` in order, each dropped from the list as it is given: a snapshot's million decoded records are
    not all held while their partitions are seeded and replayed. Empties `records`."""
    records.reverse()
    while records:
        yield records.pop()


def converted_batches(converter: Converter, records: Iterable[MetadataRecord]
                      ) -> Iterator[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """`convert` as it goes: after each batch, the events (in log order) and observed changes it made, taken out of
    `converter.result`, which keeps the rest (unknown types, features, unexplained offsets). An unclean
    registration's changes (and any after them) stay until the broker's STARTUP, which names their cause."""
    last = -1
    for _ in converter.batches(records):
        result = converter.result
        held = {id(row) for broker in converter.brokers.values() for row in broker.unclean_registration}
        cut = next((i for i, row in enumerate(result.observed) if id(row) in held), len(result.observed))
        events, observed = sorted(result.events, key=event_offset), result.observed
        result.events, result.observed = [], []
        if cut < len(observed):  # (no copy of the rows held while nothing goes before them)
            observed, result.observed = (observed[:cut], observed[cut:]) if cut else ([], observed)
        if events:
            # An operation is one batch and the seeds come before the first event, so a batch's events never go
            # before an earlier batch's: the lines are `convert`'s, which sorts them all at once.
            if event_offset(events[0]) < last:
                raise RuntimeError(f"event at offset {event_offset(events[0])} after one at {last}")
            last = event_offset(events[-1])
        yield events, observed
    if converter.result.observed:  # registrations no STARTUP followed
        yield [], converter.result.observed
        converter.result.observed = []


class ImportPipe:
    """`import_kraft` in a child process that also prints each event's line as it writes it: the replay reads them
    while the decoding and conversion go on, so that both cores work. `records()` yields (offset, line) as
    `read_event_log` of the events file would; `summary` is the import's, once every line is read. The child is
    stopped (by its pid) when the pipe closes early."""

    def __init__(self, source: Path, events_out: Path, observed_out: Path, bounds: Bounds | None = None) -> None:
        handle, name = tempfile.mkstemp(prefix="isrflow-import-", suffix=".pickle")
        self._exchange = Path(name)
        with os.fdopen(handle, "wb") as fh:
            pickle.dump((source, events_out, observed_out, bounds), fh)
        self._child = subprocess.Popen([sys.executable, "-m", "streaming.jobs.kraft", str(self._exchange)],
                                       stdout=subprocess.PIPE, bufsize=1 << 20)
        self.summary: ImportSummary | None = None

    def __enter__(self) -> ImportPipe:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._child.poll() is None:
            self._child.kill()
        self._child.wait()
        if self._child.stdout is not None:
            self._child.stdout.close()
        self._exchange.unlink(missing_ok=True)

    def first(self) -> None:
        """Wait for the first event (or the end: an import that fails raises its error here, before the replay
        clears its output folder)."""
        assert self._child.stdout is not None
        if not self._child.stdout.peek(1):
            self._finish()

    def records(self) -> Iterator[tuple[int, bytes]]:
        assert self._child.stdout is not None
        for offset, line in enumerate(self._child.stdout):
            yield offset, line.rstrip(b"\n")
        self._finish()

    def _finish(self) -> None:
        if self.summary is not None:
            return
        self._child.wait()
        with self._exchange.open("rb") as fh:
            done = pickle.load(fh)  # the child's result; still its arguments if it died first
        if isinstance(done, ImportSummary):
            self.summary = done
            return
        if isinstance(done, BaseException):
            raise done
        raise RuntimeError(f"the import of the metadata log failed (exit code {self._child.returncode})")


def _import_child(exchange: Path) -> None:
    """`ImportPipe`'s child: import, each event's line to stdout; the summary (or the error) back in `exchange`."""
    with exchange.open("rb") as fh:
        source, events_out, observed_out, bounds = pickle.load(fh)
    try:
        done: object = import_kraft(source, events_out, observed_out, bounds, sys.stdout.buffer)
        sys.stdout.buffer.flush()
    except Exception as error:  # the parent raises it again
        done = error
    try:
        text = pickle.dumps(done)
    except Exception:  # an error that does not pickle: its words
        text = pickle.dumps(RuntimeError(f"{type(done).__name__}: {done}"))
    exchange.write_bytes(text)


if __name__ == "__main__":
    # This module again under its own name, so that the summary pickles as streaming.jobs.kraft's, not __main__'s.
    from streaming.jobs import kraft

    kraft._import_child(Path(sys.argv[1]))
