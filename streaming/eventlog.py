"""Reading a controller event log from JSONL files: one record per line, offset = line position."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path


def event_log_files(path: Path) -> list[Path]:
    """A file, or every *.jsonl file of a folder in name order (rotated logs sort by name)."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix == ".jsonl")
        if not files:
            raise FileNotFoundError(f"no .jsonl files in {path}")
        return files
    if not path.exists():
        raise FileNotFoundError(f"no such event log: {path}")
    return [path]


def read_event_log(path: Path) -> Iterator[tuple[int, bytes]]:
    """Yield (source_offset, raw record). The offset is the 0-based line number across the files, so
    `source_offset + 1` is the line a user finds in an editor (for a single file). Blank lines are
    skipped but keep their number."""
    offset = 0
    for file in event_log_files(path):
        with file.open("rb") as fh:
            for line in fh:
                raw = line.rstrip(b"\r\n")
                if raw.strip():
                    yield offset, raw
                offset += 1
