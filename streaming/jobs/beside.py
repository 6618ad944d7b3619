"""A replay's report and agreement written beside its engine, each in a process of its own (a fresh interpreter, not
a copy of the engine's memory), each reading its inputs as the engine and the import write them.

The report's process (`ReportBeside`) reads the audit's record batches as the engine makes them: its pass over the
audit (the fold of its rows, the cluster's health) reads no decision, so it goes on the core the import's child
leaves idle while the engine still runs; once the engine ends, it reads the decisions and the quarantine, tells the
controller's own changes, draws the plots, then waits for the agreement before the rest of the controller's story
and its section. The batches go through a pipe as Arrow IPC messages (a copy of the buffers, no Python object per
row). The agreement's process (`AgreementBeside`, `write_agreement`) reads observed.jsonl and decisions.jsonl as
they grow, and compares once both are whole. `isrflow report DIR` runs the same `write_report` over the folder.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Self

from schemas.tables import AUDIT
from streaming.analysis.report import write_report
from streaming.history.outputs import Agreement, write_agreement

# What the engine's process sends besides the batches (an Arrow IPC message is never one of these).
_REPLAYED = b"replayed"  # every batch sent, the replay's outputs written
_AGREEMENT = b"agreement"  # agreement.jsonl and histories.jsonl written


class _Beside:
    """A function's process (spawned), told things through a pipe, its result or error sent back; stopped by its
    pid when the context ends before it has."""

    def __init__(self, target: Callable[..., None], name: str, *args: Any) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, theirs = context.Pipe()
        self._process = context.Process(target=target, args=(theirs, *args), name=name, daemon=True)
        self._process.start()
        theirs.close()
        self._result: tuple[str, Any] | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process.is_alive():
            self._process.kill()
        self._process.join()
        self._conn.close()

    def result(self) -> Any:
        """What it sent back (received once), or its error raised."""
        if self._result is None:
            try:
                self._result = self._conn.recv()
            except EOFError:
                self._process.join()
                raise RuntimeError(f"the {self._process.name} process ended without its result (exit code "
                                   f"{self._process.exitcode})") from None
            self._process.join()  # it ends once it has sent its result
        kind, value = self._result
        if kind == "error":
            raise value
        return value

    def _tell(self, message: Any) -> None:
        try:
            self._conn.send_bytes(message)
        except OSError:  # it ended: its error, if it sent one
            self.result()
            raise


class ReportBeside(_Beside):
    """The report's process: `send` each audit batch, then `replayed`, then `agreement_written` (when the replay
    has an agreement: `agreement`), then `result` (the report's path). Its error is raised here with its words."""

    def __init__(self, out_dir: Path, target: Path, agreement: bool) -> None:
        super().__init__(_report_beside, "isrflow-report", out_dir, target, agreement)

    def send(self, batch: Any) -> None:
        """An audit record batch (of `AUDIT`'s columns, in the table's order)."""
        self._tell(batch.serialize())

    def replayed(self) -> None:
        self._tell(_REPLAYED)

    def agreement_written(self) -> None:
        self._tell(_AGREEMENT)

    def result(self) -> Path:
        return Path(super().result())


class AgreementBeside(_Beside):
    """The agreement's process (`write_agreement`), reading the controller's changes and isrflow's decisions as the
    import and the engine write them: `replayed` once both files are whole, then `result` (the `Agreement`)."""

    def __init__(self, out_dir: Path, observed: Path, decisions: Path) -> None:
        super().__init__(_agreement_beside, "isrflow-agreement", out_dir, observed, decisions)

    def replayed(self) -> None:
        self._tell(_REPLAYED)

    def result(self) -> Agreement:
        done: Agreement = super().result()
        return done


def _send_result(conn: Connection, work: Callable[[], Any]) -> None:
    """`work()`'s result, or its error (its words when it does not pickle), to the engine's process."""
    try:
        done: tuple[str, Any] = ("done", work())
    except Exception as error:  # raised again in the engine's process
        done = ("error", error)
    try:
        conn.send(done)
    except Exception:
        conn.send(("error", RuntimeError(f"{type(done[1]).__name__}: {done[1]}")))
    conn.close()


def _agreement_beside(conn: Connection, out_dir: Path, observed: Path, decisions: Path) -> None:
    # A message waiting is the engine's `replayed`: both files are whole.
    _send_result(conn, lambda: write_agreement(out_dir, observed, decisions, conn.poll))


def _report_beside(conn: Connection, out_dir: Path, target: Path, agreement: bool) -> None:
    import pyarrow as pa

    schema = AUDIT.to_arrow()

    def batches() -> Iterator[Any]:
        while (message := conn.recv_bytes()) != _REPLAYED:
            yield pa.ipc.read_record_batch(pa.py_buffer(message), schema)

    def agreement_written() -> None:
        if conn.recv_bytes() != _AGREEMENT:
            raise RuntimeError("the replay's process sent something else than the agreement's end")

    _send_result(conn, lambda: str(write_report(out_dir, target, agreement_written if agreement else None, batches())))
