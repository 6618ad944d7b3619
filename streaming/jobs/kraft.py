"""`isrflow import-kraft` and the `kraft:PATH` source of `replay`: a KRaft metadata log as contract events,
the controller's own decisions beside them, and the agreement between the two after a replay."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from statemachine.features import METADATA_VERSION, unknown_metadata_version
from streaming.engine.collector import young_collection_only
from streaming.history.trust import ImportFacts
from streaming.infra.jars import fetched
from streaming.io.eventlog import Bounds
from streaming.io.jsonl import write_jsonl
from streaming.kraft.convert import convert
from streaming.kraft.metadatalog import DECODER_44, DecodedLog, Decoder, read_metadata_log

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
                 bounds: Bounds | None = None) -> ImportSummary:
    """Decode `source` (a __cluster_metadata-0 dir, a segment or a snapshot) with Kafka's dump tool and write
    the contract events to `events_out` (and the controller's partition changes to `observed_out`): its whole
    retained history, or the window `bounds` of it, seeded with the state at the window's start."""
    with young_collection_only():  # millions of records, events and rows, none in a cycle
        log = decode(source, bounds)
        result = convert(log.records, log.window[0])
        write_jsonl(events_out, result.events)
        if observed_out is not None:
            write_jsonl(observed_out, result.observed)
    return ImportSummary(log.files, len(log.records), len(result.events), len(result.observed),
                         dict(result.unknown + log.unknown), len(result.unexplained), log.aborted,
                         log.control_batches, dict(result.features), list(result.feature_changes), replayed(log),
                         log.undecodable)
