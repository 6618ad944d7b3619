"""JSON lines files: one JSON object a line, keys sorted."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

# One encoder for every row: json.dumps with these arguments builds a new one per call.
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
_CHUNK = 1 << 22  # characters a growing file is read by


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


def growing_jsonl_rows(paths: Sequence[Path], written: Callable[[], bool], pause: float = 0.2
                       ) -> Iterator[tuple[int, dict[str, Any]]]:
    """The rows of JSON lines files still being written, as they are written: (the file's index in `paths`, the row),
    each file's rows in order, the files read in turn a few megabytes at a time, each line once it is whole (a file
    not there yet has none). It ends once `written()` has said every file is whole and their rest is read."""
    files: list[Any] = [None] * len(paths)
    partial = [""] * len(paths)
    try:
        while True:
            whole = written()  # asked before the pass: what was written before it is read by the end of the pass
            read = False
            for n, path in enumerate(paths):
                if files[n] is None:
                    if not path.exists():
                        continue
                    files[n] = path.open(encoding="utf-8")
                chunk = files[n].read(_CHUNK)
                read = read or bool(chunk)
                text = partial[n] + chunk
                cut = len(text) if whole and not chunk else text.rfind("\n") + 1  # a whole file's last line
                partial[n] = text[cut:]
                for line in text[:cut].splitlines():
                    if line.strip():
                        yield n, json.loads(line)
            if not read:
                if whole:
                    return
                time.sleep(pause)
    finally:
        for fh in files:
            if fh is not None:
                fh.close()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return list(jsonl_rows(path))
