"""Writing isrflow's outputs without Spark: decisions as JSONL, audit and quarantine as Delta tables
(delta-rs). The Spark engine writes the same shapes through Spark; `read_outputs` reads either."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from schemas.tables import DECISION, TableSchema
from streaming.io.jsonl import read_jsonl
from streaming.io.storage import Location, Uri

# delta-rs logs a warning per write for the quarantine's binary column (no statistics): not for users.
os.environ.setdefault("RUST_LOG", "error")

# Columns that depend on wall-clock time or micro-batch boundaries, not on the log.
RUN_DEPENDENT_COLUMNS = frozenset({"decided_at", "processed_at", "batch_id", "quarantined_at"})

# decisions.jsonl order: log order, then partition, then the partition's own decision order.
DECISION_ORDER = ("source_offset", "topic", "partition", "partition_epoch")


def decision_sort_key(d: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(d[c] for c in DECISION_ORDER)


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


# One encoder for every decision: json.dumps with these options would build a new one per call.
_DECISION_ENCODER = json.JSONEncoder(default=_json_default, separators=(",", ":"))
_DECISION_COLUMNS = tuple(DECISION.names)


def decision_json(decision: Mapping[str, Any]) -> str:
    """The decision's JSON value, columns in docs/contract.md's order (Kafka record value and JSONL line)."""
    return _DECISION_ENCODER.encode({c: decision.get(c) for c in _DECISION_COLUMNS})


_DECIDED_AT = _DECISION_COLUMNS.index("decided_at")


def decision_line(values: tuple[Any, ...], decided_at: str) -> str:
    """`decision_json` of a Decision's field values (in its field order, which is the columns' without decided_at)
    and the run's `decided_at` text, with a line end: no row dict in between."""
    return _DECISION_ENCODER.encode(dict(zip(_DECISION_COLUMNS, (*values[:_DECIDED_AT], decided_at,
                                                                  *values[_DECIDED_AT:]), strict=True))) + "\n"


def write_decisions_jsonl(path: Path, decisions: Iterable[Mapping[str, Any]]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as fh:
        for d in sorted(decisions, key=decision_sort_key):
            fh.write(decision_json(d) + "\n")
            count += 1
    return count


def arrow_table(rows: list[Mapping[str, Any]], schema: TableSchema) -> Any:
    """Rows (dicts keyed by column name; a missing column is null) as a pyarrow Table of `schema`."""
    import pyarrow as pa

    arrow_schema = schema.to_arrow()
    columns = {f.name: pa.array(_column(rows, f.name, pa.types.is_map(f.type)), type=f.type) for f in arrow_schema}
    return pa.Table.from_pydict(columns, schema=arrow_schema)


def _column(rows: list[Mapping[str, Any]], name: str, is_map: bool) -> list[Any]:
    values = [r.get(name) for r in rows]
    if is_map:  # pyarrow builds a map column from (key, value) pairs
        return [list(v.items()) if isinstance(v, Mapping) else v for v in values]
    return values


def write_delta(path: Path, rows: list[Mapping[str, Any]], schema: TableSchema, mode: str = "overwrite") -> None:
    """Write rows as a Delta table with delta-rs (no Spark)."""
    write_arrow_delta(path, arrow_table(rows, schema), mode)


def write_arrow_delta(path: Path, table: Any, mode: str = "overwrite") -> None:
    """Write a pyarrow Table as a Delta table with delta-rs (no Spark)."""
    from deltalake import write_deltalake

    path.parent.mkdir(parents=True, exist_ok=True)
    write_deltalake(str(path), table, mode=mode, schema_mode="overwrite" if mode == "overwrite" else None)


def now_utc() -> datetime:
    return datetime.now(UTC)


def scan_delta(path: Location, expression: Any = None, columns: list[str] | None = None) -> Any:
    """A Delta table's current files read with pyarrow (None for a table with no files).

    delta-rs's own reader intermittently aborts the interpreter at exit ("terminate called without an
    active exception", delta-io/delta-rs#2184); reading the files it lists does not. isrflow's tables are
    append-only, unpartitioned and without deletion vectors, so the listed files are the table.
    A table at a URI (s3a://, abfss://, gs://) is read through delta-rs's own object-store reader, which
    takes its credentials and endpoint from the cloud's usual environment variables (AWS_*, AZURE_*,
    GOOGLE_*)."""
    dataset = delta_dataset(path)
    return None if dataset is None else dataset.to_table(filter=expression, columns=columns)


def delta_dataset(path: Location) -> Any:
    """A Delta table's current files as a pyarrow dataset, its fragments in the table's file order (None for a
    table with no files): what `scan_delta` reads, for a reader that goes through it a batch at a time."""
    import pyarrow.dataset as ds
    from deltalake import DeltaTable

    table = DeltaTable(str(path))
    files = table.file_uris()
    if not files:
        return None
    return table.to_pyarrow_dataset() if isinstance(path, Uri) else ds.dataset(files, format="parquet")


def read_delta(path: Location, expression: Any = None) -> list[dict[str, Any]]:
    """A Delta table's rows as plain dicts (maps as dicts, arrays as lists), without Spark."""
    table = scan_delta(path, expression)
    return [] if table is None else [row for rows in dict_batches(table) for row in rows]


def dict_batches(table: Any, max_rows: int | None = None) -> Iterator[list[dict[str, Any]]]:
    """A pyarrow Table's rows as plain dicts (maps as dicts, arrays as lists), a record batch (of at most
    `max_rows`) at a time."""
    import pyarrow as pa

    # pyarrow gives a map as (key, value) pairs; only the map columns are looked at, not every value of every row.
    maps = [f.name for f in table.schema if pa.types.is_map(f.type)]
    for batch in table.to_batches(max_chunksize=max_rows):
        rows = batch.to_pylist()
        for row in rows:
            for key in maps:
                if row[key]:
                    row[key] = dict(row[key])
        yield rows


def read_decisions_jsonl(path: Path) -> list[dict[str, Any]]:
    """A replay's decisions.jsonl, every row."""
    return read_jsonl(path)


def comparable(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows without their run-dependent columns, in a canonical order: what two runs of the same log
    must agree on."""
    cleaned = [{k: v for k, v in r.items() if k not in RUN_DEPENDENT_COLUMNS} for r in rows]
    return sorted(cleaned, key=lambda r: json.dumps(r, sort_keys=True, default=_json_default))
