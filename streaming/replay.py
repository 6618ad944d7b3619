"""`isrflow replay`: a bounded run of an event log, with the Spark pipeline or the local engine."""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path
from typing import Any

from schemas.tables import AUDIT, QUARANTINE
from statemachine.controller import ControllerConfig
from streaming.eventlog import read_event_log
from streaming.lake import read_delta, write_decisions_jsonl, write_delta
from streaming.local_engine import run_local, write_outputs

AVAILABLE_NOW = {"availableNow": True}


def _clear(out: Path) -> None:
    """A replay rewrites its output folder's tables rather than mixing two runs."""
    for name in ("audit", "quarantine", "_pipeline", "decisions.jsonl"):
        target = out / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()


def replay_spark(spark: Any, source: Path, out: Path, config: ControllerConfig, batch_size: int = 0) -> None:
    """The same two streaming queries as `run`, on a staged copy of the log, each run to completion."""
    from streaming.pipeline import Checkpoints, Lake, staged_events, start_partition_machine, start_sequencer

    work = out / "_pipeline"
    lake = Lake(audit=out / "audit", quarantine=out / "quarantine", bronze=work / "bronze",
                commands=work / "commands", decisions=work / "decisions")
    checkpoints = Checkpoints(work / "checkpoints")
    events = staged_events(spark, work / "staging", read_event_log(source), batch_size)
    start_sequencer(spark, events, lake, checkpoints, config, "file", AVAILABLE_NOW).awaitTermination()
    start_partition_machine(spark, lake, checkpoints, AVAILABLE_NOW,
                            one_sequencer_batch_per_trigger=batch_size > 0).awaitTermination()
    for path, schema in ((lake.audit, AUDIT), (lake.quarantine, QUARANTINE)):
        if not (path / "_delta_log").exists():
            write_delta(path, [], schema)
    write_decisions_jsonl(out / "decisions.jsonl", read_delta(lake.decisions))


def replay(args: argparse.Namespace) -> int:
    from streaming.cli import _key_values, controller_config

    source = Path(args.source)
    out: Path = args.out
    config = controller_config(args)
    _clear(out)
    started = time.monotonic()
    if args.engine == "local":
        result = run_local(read_event_log(source), config)
        write_outputs(result, out)
    else:
        from streaming.spark_session import build_spark

        spark = build_spark("isrflow-replay", args.master, _key_values(args.conf, "--conf"))
        replay_spark(spark, source, out, config, args.batch_size)
    audit = read_delta(out / "audit")
    quarantined = len(read_delta(out / "quarantine"))
    decisions = sum(1 for _ in (out / "decisions.jsonl").open())
    rejected = sum(1 for a in audit if a["outcome"] == "REJECTED")
    print(f"replayed {source} with the {args.engine} engine in {time.monotonic() - started:.1f}s: "
          f"{len(audit)} audit rows, {decisions} decisions, {rejected} rejections, {quarantined} quarantined")
    print(f"  {out / 'decisions.jsonl'}\n  {out / 'audit'} (Delta)\n  {out / 'quarantine'} (Delta)")
    return 0
