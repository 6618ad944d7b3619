"""The report of a local replay written beside its engine: `write_report` in a process of its own (a fresh
interpreter, not a copy of the engine's memory) that reads the audit's record batches as the engine makes them.

The report's pass over the audit (the fold of its rows, the cluster's health) reads no decision, so it goes on the
core the import's child leaves idle while the engine still runs; once the engine ends, the process reads the
decisions and the quarantine, tells the controller's own changes, then waits for the agreement (another process's,
`write_agreement`) before the rest of the controller's story and its section. The batches go through a pipe as Arrow
IPC messages (a copy of the buffers, no Python object per row). `isrflow report DIR` runs the same `write_report`
over the tables the replay wrote.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from schemas.tables import AUDIT
from streaming.analysis.report import write_report

# What the engine's process sends besides the batches (an Arrow IPC message is never one of these).
_REPLAYED = b"replayed"  # every batch sent, the replay's outputs written
_AGREEMENT = b"agreement"  # agreement.jsonl and histories.jsonl written


class ReportBeside:
    """The report's process: `send` each audit batch, then `replayed`, then `agreement_written` (when the replay
    has an agreement: `agreement`), then `result` (the report's path). Its error is raised here with its words; the
    process is stopped by its pid when the context ends before it has."""

    def __init__(self, out_dir: Path, target: Path, agreement: bool) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, theirs = context.Pipe()
        self._process = context.Process(target=_report_beside, args=(theirs, out_dir, target, agreement),
                                        name="isrflow-report", daemon=True)
        self._process.start()
        theirs.close()

    def __enter__(self) -> ReportBeside:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process.is_alive():
            self._process.kill()
        self._process.join()
        self._conn.close()

    def send(self, batch: Any) -> None:
        """An audit record batch (of `AUDIT`'s columns, in the table's order)."""
        self._tell(batch.serialize())

    def replayed(self) -> None:
        self._tell(_REPLAYED)

    def agreement_written(self) -> None:
        self._tell(_AGREEMENT)

    def result(self) -> Path:
        try:
            kind, value = self._conn.recv()
        except EOFError:
            self._process.join()
            raise RuntimeError(f"the report's process ended without a report (exit code {self._process.exitcode})"
                               ) from None
        self._process.join()  # it ends once it has sent its result
        if kind == "error":
            raise value
        return Path(value)

    def _tell(self, message: Any) -> None:
        try:
            self._conn.send_bytes(message)
        except OSError:  # it ended: its error, if it sent one
            self.result()
            raise


def _report_beside(conn: Connection, out_dir: Path, target: Path, agreement: bool) -> None:
    import pyarrow as pa

    schema = AUDIT.to_arrow()

    def batches() -> Iterator[Any]:
        while (message := conn.recv_bytes()) != _REPLAYED:
            yield pa.ipc.read_record_batch(pa.py_buffer(message), schema)

    def agreement_written() -> None:
        if conn.recv_bytes() != _AGREEMENT:
            raise RuntimeError("the replay's process sent something else than the agreement's end")

    try:
        done: tuple[str, Any] = ("done", str(write_report(out_dir, target, agreement_written if agreement else None,
                                                          batches())))
    except Exception as error:  # raised again in the engine's process
        done = ("error", error)
    try:
        conn.send(done)
    except Exception:  # an error that does not pickle: its words
        conn.send(("error", RuntimeError(f"{type(done[1]).__name__}: {done[1]}")))
    conn.close()
