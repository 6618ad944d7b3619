"""JSON lines files: one JSON object a line, keys sorted."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

# One encoder for every row: json.dumps with these arguments builds a new one per call.
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode


def jsonl_line(row: Mapping[str, Any]) -> str:
    """One row as a line of a JSON lines file."""
    return _ENCODE(row) + "\n"


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fh.writelines(map(jsonl_line, rows))


def jsonl_rows(path: Path) -> Iterator[dict[str, Any]]:
    """A JSON lines file, row by row (a reader that need not hold them all)."""
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def jsonl_rows_naming(path: Path, words: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The rows of a JSON lines file whose line holds one of `words` as text: a reader after a few kinds of rows
    (a row holds its kind's name) parses only the lines that can be one of them."""
    words = tuple(words)
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if any(w in line for w in words):
                yield json.loads(line)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return list(jsonl_rows(path))
