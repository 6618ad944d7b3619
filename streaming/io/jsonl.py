"""JSON lines files: one JSON object a line, keys sorted."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
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
        fh.writelines(_ENCODE(row) + "\n" for row in rows)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open() as fh:
        return [json.loads(line) for line in fh if line.strip()]
