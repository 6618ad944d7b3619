"""The report's inputs read from columns: the audit as a Delta table through pyarrow (only the columns the report
reads, sorted into log order by Arrow, a message kept only where the report shows one), the decisions with only
what the timeline and the reassignments read. Audit rows reach the analysis as `Row`s, read like dicts but held in
slots, with repeated strings (event types, outcomes, states, topics, event ids) one object each: the report's
peak memory is a fraction of reading every column of every row as a dict.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from statemachine.elections import Election
from statemachine.errors import Outcome
from streaming.history.agreement import from_table_rows
from streaming.io.delta import DECISION_ORDER, delta_dataset, dict_batches, scan_delta
from streaming.io.jsonl import jsonl_rows
from streaming.io.rows import Row, make_row, row_class

# Audit columns the report never reads: run bookkeeping and the partition epochs (the decisions carry them).
_UNREAD = ("batch_id", "processed_at", "partition_epoch_before", "partition_epoch_after")
# Columns whose values repeat: kept as one string object per distinct value.
_REPEATED = ("event_id", "event_type", "topic", "from_state", "to_state", "outcome", "error", "election", "action",
             "broker_change", "leader_recovery_state_after", "principal", "event_ts")
# What the timeline and the reassignments read of a decision.
DECISION_FIELDS = (*DECISION_ORDER, "replicas", "adding_replicas", "removing_replicas")
_BATCH = 20_000


def _column_values(array: Any, strings: dict[str, str], brokers: dict[tuple[int, ...], list[int]]) -> list[Any]:
    """An Arrow array's values as `to_pylist` gives them, without a Python scalar per value for the audit's own types
    (Arrow 20 makes one, the most of the report's reading time): integers and booleans through numpy, strings through
    their dictionary (each distinct string made once, then shared through `strings`), lists of brokers cut from
    their flat values (shared through `brokers`), maps as dicts."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind):
        values = array.fill_null(False if pa.types.is_boolean(kind) else 0).to_numpy(zero_copy_only=False).tolist()
    elif pa.types.is_string(kind):
        encoded = pc.dictionary_encode(array)  # a null's index: the None after the words
        words = [*(strings.setdefault(w, w) for w in encoded.dictionary.to_pylist()), None]
        return [words[i] for i in encoded.indices.fill_null(len(words) - 1).to_numpy().tolist()]
    elif pa.types.is_list(kind) and array.values.null_count == 0:
        # Offsets index the unsliced child array `values`, also for a slice of a list array.
        flat, cut = _column_values(array.values, strings, brokers), array.offsets.to_numpy().tolist()
        values = []
        for start, end in itertools.pairwise(cut):
            brokers_of = tuple(flat[start:end])
            values.append(brokers.get(brokers_of) or brokers.setdefault(brokers_of, list(brokers_of)))
    elif pa.types.is_map(kind):
        return [dict(v) if v else v for v in array.to_pylist()]
    else:
        return array.to_pylist()
    if array.null_count:
        for i in np.flatnonzero(array.is_null().to_numpy(zero_copy_only=False)).tolist():
            values[i] = None
    return values


def _rows(batches: Iterable[Any]) -> Iterator[Row]:
    """Record batches' rows as Rows: repeated strings and broker lists shared (the report never changes a row),
    maps as dicts."""
    strings: dict[str, str] = {}
    brokers: dict[tuple[int, ...], list[int]] = {}
    for batch in batches:
        cls = row_class(tuple(batch.schema.names))
        columns = [_column_values(column, strings, brokers) for column in batch.columns]
        for values in zip(*columns, strict=True):
            yield make_row(cls, values)


# What fixes an audit row's place in the log (schemas.records.audit_sort_key).
_ORDER = ("source_offset", "partition_row", "topic", "partition", "step")


def _log_order(table: Any) -> Any:
    """The indices that put `table` (with at least the columns of audit_sort_key) into log order."""
    import pyarrow.compute as pc

    keys = table.select([c for c in _ORDER if c != "partition_row"])
    keys = keys.append_column("partition_row", pc.is_valid(keys["partition"]))
    return pc.sort_indices(keys, options=pc.SortOptions([(c, "ascending") for c in _ORDER], null_placement="at_start"))


def _by_offset(offsets: Any) -> bool:
    """Whether the offsets never go down: the table holds each event's rows together, in the log's order of events
    (as a local replay writes it, whatever the order of an event's own rows)."""
    import pyarrow.compute as pc

    offsets = offsets.combine_chunks()
    return len(offsets) < 2 or pc.all(pc.greater_equal(offsets[1:], offsets[:-1])).as_py() is not False


def _events_in_order(batches: Iterable[Any]) -> Iterator[Any]:
    """Record batches of a table in the log's order of events, each re-cut to hold whole events and sorted into log
    order by Arrow (a local replay writes a broker change's cluster row after its partitions' rows)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pending = None  # the rows of the last event of the batches so far: it may go on in the next batch
    for batch in batches:
        table = pa.Table.from_batches([batch])
        table = table if pending is None else pa.concat_tables([pending, table])
        offsets = table["source_offset"]
        cut = pc.index(offsets, offsets[-1]).as_py()
        if cut:
            whole = table.slice(0, cut)
            yield from whole.take(_log_order(whole)).to_batches(max_chunksize=_BATCH)
        pending = table.slice(cut)
    if pending is not None and pending.num_rows:
        yield from pending.take(_log_order(pending)).to_batches(max_chunksize=_BATCH)


def _slim(batch: Any) -> Any:
    """An audit batch as the report reads it: a message only where the page shows one (cluster rows and
    rejections), and `replica_states` as its brokers, a list column built from the map's keys (a map of Python
    dicts costs the most of any column)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = batch.schema.names
    shown = pc.or_(pc.is_null(batch["partition"]), pc.equal(batch["outcome"], str(Outcome.REJECTED)))
    columns = list(batch.columns)
    # Unsliced copies (a batch's columns can be slices of the file's): pyarrow 20's if_else over a sliced string
    # array reads past its buffer, and a map's offsets index its keys only when it starts at 0.
    message, states = pa.concat_arrays([batch["message"]]), pa.concat_arrays([batch["replica_states"]])
    columns[names.index("message")] = pc.if_else(shown, message, None)
    columns[names.index("replica_states")] = pa.ListArray.from_arrays(states.offsets, states.keys,
                                                                      mask=states.is_null())
    return pa.RecordBatch.from_arrays(columns, names=names)


def _file_batches(fragment: Any, schema: Any, columns: list[str]) -> Iterator[Any]:
    """A table file's `columns` a record batch at a time, its pages read as the batches need them (a dataset's
    fragment decodes a whole row group, a whole replay's audit when it wrote one), a column the file lacks as nulls."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with fragment.filesystem.open_input_file(fragment.path) as source:
        file = pq.ParquetFile(source)
        present = [c for c in columns if c in file.schema_arrow.names]
        for batch in file.iter_batches(batch_size=_BATCH, columns=present, use_threads=False):
            if present != columns:  # a table written before a column was added
                batch = pa.RecordBatch.from_arrays(
                    [batch[c] if c in present else pa.nulls(len(batch), schema.field(c).type) for c in columns],
                    names=columns)
            yield batch


def audit_batches(path: Path) -> Iterator[Any]:
    """The audit table in log order (schemas.records.audit_sort_key: by offset, an event's cluster row first, then
    its partitions by name and step), without the columns the report never reads, as record batches of at most
    _BATCH rows. A table with its events in the log's order (a local replay's) is read a batch at a time, never
    whole, each event's rows sorted by Arrow; another is read whole and sorted by Arrow."""

    dataset = delta_dataset(path)
    if dataset is None:
        return
    columns = [c for c in dataset.schema.names if c not in _UNREAD]
    if _by_offset(dataset.to_table(columns=["source_offset"])["source_offset"]):
        yield from logged_audit_batches(batch for fragment in dataset.get_fragments()  # the table's file order,
                                        for batch in _file_batches(fragment, dataset.schema, columns))  # as scanned
        return
    whole = dataset.to_table(columns=columns)
    for batch in whole.take(_log_order(whole)).to_batches(max_chunksize=_BATCH):
        yield _slim(batch)


def logged_audit_batches(batches: Iterable[Any]) -> Iterator[Any]:
    """Record batches of audit rows with the events in the log's order (a local replay's table, or its batches as the
    replay makes them) as `audit_batches` gives them: each event's rows in log order, without the columns the report
    never reads."""
    return map(_slim, _events_in_order(batch.drop_columns([c for c in _UNREAD if c in batch.schema.names])
                                       for batch in batches))


class AuditRows:
    """The audit table in log order (`audit_batches`) as Rows, read a batch at a time each time it is iterated; or,
    given `batches` (a local replay's record batches as it makes them, `logged_audit_batches`), those, once."""

    def __init__(self, path: Path, batches: Iterable[Any] | None = None) -> None:
        self.path = path
        self.batches = batches

    def __iter__(self) -> Iterator[Row]:
        return self.rows()

    def rows(self, watch: Callable[[Iterator[Any]], Iterator[Any]] | None = None) -> Iterator[Row]:
        """The rows; `watch`, when given, sees each record batch before its rows are made (and yields it)."""
        batches = audit_batches(self.path) if self.batches is None else logged_audit_batches(self.batches)
        return _rows(batches if watch is None else watch(batches))


def read_audit(path: Path) -> list[Row]:
    """The audit table in log order (`audit_batches`) as Rows, all at once."""
    return list(AuditRows(path))


def event_offsets(path: Path, event_ids: Iterable[str]) -> dict[str, int]:
    """The offset of each of these events in the audit table at `path` (the last, for an event logged again), read
    from two columns filtered by Arrow."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    ids = sorted(set(event_ids))
    dataset = delta_dataset(path) if ids else None
    if dataset is None:
        return {}
    found = dataset.to_table(columns=["event_id", "source_offset"], filter=ds.field("event_id").isin(ids))
    last = found.group_by("event_id").aggregate([("source_offset", "max")])
    return dict(zip(last["event_id"].to_pylist(), pc.cast(last["source_offset_max"], "int64").to_pylist(), strict=True))


def decision_columns(path: Path) -> Any:
    """A replay's decisions.jsonl (written in DECISION_ORDER) as an Arrow table of DECISION_FIELDS, read by Arrow's
    JSON reader: the other fields skipped, no Python object per decision."""
    import pyarrow as pa

    brokers = pa.list_(pa.int32())
    schema = pa.schema([("source_offset", pa.int64()), ("topic", pa.string()), ("partition", pa.int32()),
                        ("partition_epoch", pa.int32()), *((f, brokers) for f in DECISION_FIELDS[4:])])
    return jsonl_columns(path, schema)


def jsonl_columns(path: Path, schema: Any) -> Any:
    """A JSON lines file as an Arrow table of `schema`'s fields only (Arrow's JSON reader: the other fields skipped,
    no Python object per line)."""
    import pyarrow.json as pj

    if not path.stat().st_size:
        return schema.empty_table()
    return pj.read_json(path, read_options=pj.ReadOptions(use_threads=False),
                        parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"))


def partition_keys(topic: Any, partition: Any, numbers: dict[str, int]) -> Any:
    """A number per row naming its partition (numpy int64: the topic's number in `numbers`, given in order of
    first sight, << 32 | the partition), from Arrow columns without a Python object per row."""
    import numpy as np
    import pyarrow.compute as pc

    topics = pc.dictionary_encode(topic)
    known = np.array([numbers.setdefault(t, len(numbers)) for t in topics.dictionary.to_pylist()], dtype=np.int64)
    return (known[topics.indices.to_numpy()] << 32) | partition.to_numpy().astype(np.int64)


def table_partition_keys(table: Any) -> Any:
    """`partition_keys` of every row of an Arrow table, a record batch at a time (no combined copy of the table)."""
    import numpy as np

    numbers: dict[str, int] = {}
    return np.concatenate([np.zeros(0, dtype=np.int64), *(partition_keys(b["topic"], b["partition"], numbers)
                                                          for b in table.to_batches())])


def list_sizes(lists: Any) -> Any:
    """The length of each list of an Arrow list column (numpy; 0 for null)."""
    import pyarrow.compute as pc

    return pc.fill_null(pc.list_value_length(lists), 0).to_numpy()


def run_starts(keys: Any) -> Any:
    """Where each run of equal keys starts (numpy bool per row)."""
    import numpy as np

    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    return first


def last_of_each(key: Any) -> Any:
    """The positions of each key's last row (numpy)."""
    import numpy as np

    return len(key) - 1 - np.unique(key[::-1], return_index=True)[1]


class Latest:
    """Of record batches read in order, each partition's last row; compacted as the batches come, so that it holds
    about a row per partition, not every row."""

    def __init__(self) -> None:
        self.tables: list[Any] = []
        self.rows = self.compacted = 0

    def add(self, batch: Any, key: Any) -> None:
        """A batch's rows, `key` naming each row's partition (numpy, as `partition_keys`)."""
        import pyarrow as pa

        last = pa.array(last_of_each(key))
        self.tables.append(pa.Table.from_batches([batch.take(last)]).append_column("_key", pa.array(key).take(last)))
        self.rows += len(last)
        if self.rows > 2 * self.compacted + 50_000:
            self._compact()

    def _compact(self) -> None:
        import pyarrow as pa

        if not self.tables:
            return
        table = pa.concat_tables(self.tables).combine_chunks()
        self.tables = [table.take(pa.array(last_of_each(table["_key"].to_numpy())))]
        self.rows = self.compacted = self.tables[0].num_rows

    def table(self) -> Any:
        """The last rows, without their keys (None when no batch had a row)."""
        self._compact()
        return self.tables[0].drop_columns(["_key"]) if self.tables else None


def outcome_decisions(path: Path) -> list[dict[str, Any]]:
    """Of a replay's decisions.jsonl, what the final outcomes read (streaming.history.outcomes.compared_outcomes,
    which keeps each partition's last leader and ISR and counts its unclean elections): each partition's last
    decision and every unclean election, in order, with their topic, partition, leader, ISR and election. Read by
    Arrow's JSON reader (only these fields), the rows chosen by numpy: dicts for a few decisions, not every one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("leader", pa.int32()),
                        ("isr", pa.list_(pa.int32())), ("election", pa.string())])
    table = jsonl_columns(path, schema)
    keep = pc.fill_null(pc.equal(table["election"], str(Election.OFFLINE_UNCLEAN)), False).to_numpy(
        zero_copy_only=False).copy()
    keep[last_of_each(table_partition_keys(table))] = True
    return table.filter(pa.array(keep)).to_pylist()


def decision_table(path: Path) -> Any:
    """`isrflow run`'s decisions Delta table, DECISION_FIELDS only, in DECISION_ORDER."""
    table = scan_delta(path, columns=list(DECISION_FIELDS))
    return None if table is None else table.sort_by([(c, "ascending") for c in DECISION_ORDER])


def table_rows(path: Path, columns: list[str] | None = None,
               order: str | list[tuple[str, str]] | None = None) -> Iterator[dict[str, Any]]:
    """A Delta table's columns, row by row (in `order` when given), a batch at a time, repeated strings shared."""
    table = scan_delta(path, columns=columns)
    if table is None:
        return
    if order is not None:
        table = table.sort_by(order)
    shared = [c for c in _REPEATED if c in table.column_names]
    strings: dict[str, str] = {}
    for rows in dict_batches(table, _BATCH):
        for row in rows:
            for key in shared:
                value = row[key]
                if value is not None:
                    row[key] = strings.setdefault(value, value)
        yield from rows


def observed_rows(out_dir: Path) -> Iterator[dict[str, Any]] | None:
    """The controller's partition changes in log order: a replay's observed.jsonl or `isrflow run`'s observed
    table; None when there are none."""
    if (out_dir / "observed.jsonl").exists():
        return jsonl_rows(out_dir / "observed.jsonl")
    if (out_dir / "observed" / "_delta_log").is_dir():
        return table_rows(out_dir / "observed", order="source_offset")
    return None


def agreement_rows_in(out_dir: Path) -> Iterator[dict[str, Any]] | None:
    """A replay's agreement.jsonl, or the `agreement` Delta table `isrflow run` writes behind a bridge, in
    agreement.jsonl's shape (streaming.history.agreement.from_table_rows), row by row; None when there is neither."""
    if (out_dir / "agreement.jsonl").exists():
        return jsonl_rows(out_dir / "agreement.jsonl")
    if (out_dir / "agreement" / "_delta_log").is_dir():
        return (from_table_rows([r])[0] for r in table_rows(out_dir / "agreement"))
    return None
