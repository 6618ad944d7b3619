"""`isrflow inspect CHECKPOINT_DIR`: the partition records held in the partition query's state store.

The partition state machine (`applyInPandasWithState`, keyed by topic and partition) keeps one
PARTITION_STATE row (the record packed as JSON) per partition in the state store of its checkpoint,
`<checkpoint root>/partitions`.
Spark's state data source reads it, from a stopped or a running query, as of the last committed
micro-batch. CHECKPOINT_DIR is the checkpoint root given to `run` (or `replay`'s
`OUT/_pipeline/checkpoints`), or the `partitions` query folder itself; a path or a URI (s3a://...).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from schemas.events import LeaderRecoveryState
from statemachine.states import PartitionState
from streaming.errors import UsageError
from streaming.io.storage import Location, Storage, Uri, location

QUERY = "partitions"


def state_dir(checkpoint: Location, storage: Storage | None = None) -> Location:
    """The partition query's checkpoint folder under `checkpoint` (the root, or the query folder itself).
    `storage` reaches a URI (default: local paths only)."""
    storage = storage or Storage()
    checkpoint = checkpoint if isinstance(checkpoint, Uri) else Path(checkpoint)
    for candidate in (checkpoint / QUERY, checkpoint):
        if storage.exists(candidate / "state"):
            return candidate
    if not storage.exists(checkpoint):
        raise FileNotFoundError(f"no such checkpoint: {checkpoint}")
    if storage.exists(checkpoint / QUERY / "offsets") or storage.exists(checkpoint / "offsets"):
        raise FileNotFoundError(f"no state store yet under {checkpoint}: the partition query has not committed a "
                                "micro-batch")
    raise FileNotFoundError(f"{checkpoint} is not a checkpoint of isrflow's partition query "
                            f"(expected {checkpoint / QUERY / 'state'} or {checkpoint / 'state'})")


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {int(k): v for k, v in sorted(value.items())}
    return value


def read_state(spark: Any, checkpoint: Location, topic: str | None = None, partition: int | None = None
               ) -> list[dict[str, Any]]:
    """The state records (PartitionRecord's fields) in (topic, partition) order, optionally filtered."""
    return _records(spark, state_dir(checkpoint, Storage(spark)), topic, partition)


def _records(spark: Any, path: Location, topic: str | None, partition: int | None) -> list[dict[str, Any]]:
    """`read_state` on the partition query's checkpoint folder itself."""
    from pyspark.sql import functions as F

    # In a fresh session the state reader fails with "Cannot find endpoint: StateStoreCoordinator" until the
    # streaming query manager exists: touching it once registers the coordinator.
    _ = spark.streams.active
    df = spark.read.format("statestore").load(str(path)).select("key.*", "value.groupState.record")
    if topic is not None:
        df = df.filter(F.col("topic") == topic)
    if partition is not None:
        df = df.filter(F.col("partition") == partition)
    # The record is packed as JSON by field name (schemas.codec): the same names as PartitionRecord's fields.
    rows = [{k: _plain(v) for k, v in json.loads(r["record"]).items()} for r in df.collect()]
    return sorted(rows, key=lambda r: (r["topic"], r["partition"]))


def _state_batch(spark: Any, path: Location) -> int | None:
    """The micro-batch the state store's latest version belongs to (from Spark's state metadata), for the
    partition query's checkpoint folder `path`."""
    try:
        _ = spark.streams.active
        rows = spark.read.format("state-metadata").load(str(path)).collect()
    except Exception:  # older checkpoints have no metadata; the batch is only a nicety
        return None
    batches = [r["maxBatchId"] for r in rows if r["maxBatchId"] is not None]
    return max(batches) if batches else None


def _short(state: str) -> str:
    return state.removesuffix("Replica").removesuffix("Partition")


def _ints(values: Sequence[int] | None) -> str:
    return "[" + ",".join(str(v) for v in values or ()) + "]"


def render_table(rows: Sequence[Mapping[str, Any]], title: str) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left", header_style="bold")
    for name, justify in (("topic", "left"), ("part", "right"), ("state", "left"), ("leader", "right"),
                          ("l.epoch", "right"), ("ISR", "left"), ("p.epoch", "right"), ("replicas", "left"),
                          ("adding", "left"), ("removing", "left"), ("recovery", "left"), ("replica states", "left")):
        table.add_column(name, justify=justify, overflow="fold")
    for r in rows:
        flags = []
        if r.get("reassignment_in_progress"):
            flags.append("reassigning")
        if r.get("queued_for_deletion"):
            flags.append("deleting")
        state = _short(r["state"]) + (f" ({', '.join(flags)})" if flags else "")
        leader = str(r["leader"]) if r["leader"] >= 0 else "[red]-1[/red]"
        replica_states = " ".join(f"{b}:{_short(s)}" for b, s in sorted((r.get("replica_states") or {}).items()))
        recovery = r["leader_recovery_state"]
        offline = r["state"] == PartitionState.OFFLINE
        table.add_row(r["topic"], str(r["partition"]), f"[red]{state}" if offline else state,
                      leader, str(r["leader_epoch"]), _ints(r["isr"]), str(r["partition_epoch"]), _ints(r["replicas"]),
                      _ints(r["adding_replicas"]), _ints(r["removing_replicas"]),
                      recovery if recovery == LeaderRecoveryState.RECOVERED else f"[yellow]{recovery}", replica_states)
    return table


def inspect(checkpoint_dir: str | Location, topic: str | None = None, partition: int | None = None,
            as_json: bool = False, master: str | None = None, spark_conf: dict[str, str] | None = None) -> str:
    """The current partition records of a checkpoint's state store, as a table or JSON lines."""
    from pyspark.sql import SparkSession

    from streaming.engine.session import build_spark

    checkpoint = location(checkpoint_dir, absolute=False)
    # A local checkpoint gets a clear error before Spark starts; a URI is reached through the session.
    path = None if isinstance(checkpoint, Uri) else state_dir(checkpoint)
    existing = SparkSession.getActiveSession()
    spark = build_spark("isrflow-inspect", master, spark_conf)
    try:
        path = path or state_dir(checkpoint, Storage(spark))
        rows = _records(spark, path, topic, partition)
        batch = _state_batch(spark, path)
    finally:
        if existing is None:
            spark.stop()
    if not rows:
        what = " and ".join(f for f in (f"topic {topic}" if topic is not None else "",
                                        f"partition {partition}" if partition is not None else "") if f)
        raise UsageError(f"no state record in {path}" + (f" for {what}" if what else ""))
    if as_json:
        return "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows)
    from rich.console import Console

    title = f"{len(rows)} partition state record{'s' if len(rows) != 1 else ''} in {path}" + (
        f" (as of micro-batch {batch})" if batch is not None else "")
    # A terminal gets its own width; a file or a pipe gets whole lines rather than a table cut at 80 columns.
    console = Console() if sys.stdout.isatty() else Console(width=250)
    with console.capture() as capture:
        console.print(render_table(rows, title))
    return capture.get()
