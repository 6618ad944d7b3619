"""`isrflow replay`: a bounded run of an event log, with the Spark pipeline or the local engine."""

from __future__ import annotations

import argparse
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from schemas.tables import AUDIT, QUARANTINE
from statemachine.controller import ControllerConfig
from streaming.eventlog import count_records, is_kafka_url, open_kafka_log, read_event_log, read_kafka_log
from streaming.lake import read_delta, write_decisions_jsonl, write_delta
from streaming.local_engine import run_local, write_outputs

AVAILABLE_NOW = {"availableNow": True}


def _clear(out: Path) -> None:
    """A replay rewrites its output folder's tables rather than mixing two runs."""
    for name in ("audit", "quarantine", "_pipeline", "decisions.jsonl", "report.html"):
        target = out / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()


def replay_spark(spark: Any, records: Iterable[tuple[int, bytes]] | Path, out: Path, config: ControllerConfig,
                 batch_size: int = 0, source: str = "file", progress: Any | None = None) -> None:
    """The same two streaming queries as `run`, on a staged copy of the log, each run to completion."""
    from streaming.pipeline import Checkpoints, Lake, staged_events, start_partition_machine, start_sequencer

    if isinstance(records, Path):
        records = read_event_log(records)
    work = out / "_pipeline"
    lake = Lake(audit=out / "audit", quarantine=out / "quarantine", bronze=work / "bronze",
                commands=work / "commands", decisions=work / "decisions", quality=work / "quality")
    checkpoints = Checkpoints(work / "checkpoints")
    events = staged_events(spark, work / "staging", iter(records), batch_size)
    start_sequencer(spark, events, lake, checkpoints, config, source, AVAILABLE_NOW,
                    progress=progress).awaitTermination()
    start_partition_machine(spark, lake, checkpoints, AVAILABLE_NOW,
                            one_sequencer_batch_per_trigger=batch_size > 0).awaitTermination()
    for path, schema in ((lake.audit, AUDIT), (lake.quarantine, QUARANTINE)):
        if not (path / "_delta_log").exists():
            write_delta(path, [], schema)
    write_decisions_jsonl(out / "decisions.jsonl", read_delta(lake.decisions))


def replay(args: argparse.Namespace) -> int:
    from streaming.cli import controller_config, key_values
    from streaming.progress import Progress
    from streaming.report import write_report

    out: Path = args.out
    config = controller_config(args)
    if is_kafka_url(args.source):
        log = open_kafka_log(args.source, args.from_offset, args.to_offset, args.from_time, args.to_time)
        records: Iterable[tuple[int, bytes]] = read_kafka_log(log)
        total, source = log.total, "kafka"
        described = f"{args.source} offsets [{log.start}, {log.stop})"
    else:
        path = Path(args.source)
        records, total, source, described = read_event_log(path), count_records(path), "file", str(path)
    _clear(out)
    started = time.monotonic()
    with Progress(total) as progress:
        if args.engine == "local":
            def advance(_: int) -> None:
                progress.advance(1)

            write_outputs(run_local(records, config, source, advance), out)
        else:
            from streaming.spark_session import build_spark

            spark = build_spark("isrflow-replay", args.master, key_values(args.conf, "--conf"))
            replay_spark(spark, records, out, config, args.batch_size, source, progress)
    report = write_report(out)
    audit = read_delta(out / "audit")
    quarantined = len(read_delta(out / "quarantine"))
    decisions = sum(1 for _ in (out / "decisions.jsonl").open())
    rejected = sum(1 for a in audit if a["outcome"] == "REJECTED")
    print(f"replayed {described} with the {args.engine} engine in {time.monotonic() - started:.1f}s: "
          f"{len(audit)} audit rows, {decisions} decisions, {rejected} rejections, {quarantined} quarantined")
    print(f"  {out / 'decisions.jsonl'}\n  {out / 'audit'} (Delta)\n  {out / 'quarantine'} (Delta)\n  {report}")
    return 0
