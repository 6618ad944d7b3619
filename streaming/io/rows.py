"""Read-only rows held in slots: read like dicts, a third of a dict's memory. For readers that hold many rows of
the same fields (the report's audit rows, the agreement's compared rows)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from typing import Any


class Row(Mapping[str, Any]):
    """One row, read like a dict (`row["topic"]`, `row.get("error")`) but held in slots: a third of a dict's
    memory. A row class per set of fields (`row_class`); nothing changes a row once made (`make_row`)."""

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self.__slots__)

    def __len__(self) -> int:
        return len(self.__slots__)


@cache
def row_class(names: tuple[str, ...]) -> type[Row]:
    """The Row class with these fields (one class per set of names)."""
    return type("Row", (Row,), {"__slots__": names})


@cache
def _descriptors(cls: type[Row]) -> tuple[Any, ...]:
    return tuple(getattr(cls, n) for n in cls.__slots__)


def make_row(cls: type[Row], values: Iterable[Any]) -> Row:
    """A row of `cls` with its fields' values in order, filled through the slots without an __init__."""
    row = cls.__new__(cls)
    for slot, value in zip(_descriptors(cls), values, strict=True):
        slot.__set__(row, value)
    return row
