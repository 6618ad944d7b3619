"""A table's rows as Arrow columns built from the records themselves, never from row dicts.

`RecordColumns` takes the controller's frozen records (an AuditRow, a RequestRow) one by one, keeps only the tuple
of their field values, and every BATCH_ROWS rows turns those tuples into one Arrow array per column of the
table's schema: the same values `to_row` then `arrow_table` give, as pyarrow reads the values themselves (an enum
member, every one a StrEnum, as its string value; a tuple as a list; a dict as a map's (key, value) pairs), without
a dict per row or a converted copy of each value. Memory stays the Arrow columns plus one batch of tuples.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from schemas.records import row_fields
from schemas.tables import TableSchema

BATCH_ROWS = 50_000


class RecordColumns:
    """Records of `cls` as the columns of `schema`; the schema's columns that are no field of `cls` take
    `constants` (the batch_id, the time the run wrote them), or null. `batches`, when given, is handed each batch
    as a record batch once it is made (the report reads the audit as the replay goes)."""

    def __init__(self, schema: TableSchema, cls: type, constants: dict[str, Any] | None = None,
                 batches: Callable[[Any], None] | None = None) -> None:
        self.arrow = schema.to_arrow()
        self._batches = batches
        fields_ = row_fields(cls)
        self._values = fields_.values
        index = {name: i for i, name in enumerate(fields_.names)}
        self._columns = [(index.get(f.name), (constants or {}).get(f.name)) for f in self.arrow]
        self._rows: list[tuple[Any, ...]] = []
        self._chunks: list[list[Any]] = [[] for _ in self.arrow]  # per column, its arrays of BATCH_ROWS rows
        self.count = 0

    def add(self, record: Any) -> None:
        self._rows.append(self._values(record))
        if len(self._rows) >= BATCH_ROWS:
            self.flush()

    def extend(self, records: Iterable[Any]) -> None:
        for record in records:
            self.add(record)

    def flush(self) -> None:
        """The rows added since the last batch, as one more array per column."""
        import pyarrow as pa

        if not self._rows:
            return
        n = len(self._rows)
        by_field = list(zip(*self._rows, strict=True))
        for (i, constant), f, chunks in zip(self._columns, self.arrow, self._chunks, strict=True):
            chunks.append(pa.array(by_field[i] if i is not None else [constant] * n, type=f.type))
        self.count += n
        self._rows = []
        if self._batches is not None:
            self._batches(pa.RecordBatch.from_arrays([chunks[-1] for chunks in self._chunks], schema=self.arrow))

    def table(self) -> Any:
        """Every row added, as one Arrow table of one chunk (delta-rs writes a table's chunks in no fixed order),
        joined a column at a time, each column's arrays let go once joined: the table is not held twice."""
        import pyarrow as pa

        self.flush()
        columns = []
        for i, f in enumerate(self.arrow):
            chunks, self._chunks[i] = self._chunks[i], []
            columns.append(pa.concat_arrays(chunks) if chunks else pa.array([], type=f.type))
            del chunks
        return pa.Table.from_arrays(columns, schema=self.arrow)
