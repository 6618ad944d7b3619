"""Benchmark: `isrflow check` from the shell on both engines (local: no Spark; spark: Spark and GX).

Audits made with `replay --engine local`: the bundled incident (103 audit rows) and, per `--churn N`, a cluster of
1,000 partitions followed by N IsrChange events (about N audit rows). Each check runs as its own process, as a user
runs it: wall seconds, CPU seconds of the process tree (Python, the JVM, Python workers) and the machine's load.

Run: .venv/bin/python benchmarks/check_engines.py [--churn 10000,100000] [--runs 2]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import cpu_seconds, isr_churn, load

from streaming.engine.local import run_local, write_outputs
from streaming.io.eventlog import read_event_log

REPO = Path(__file__).resolve().parents[1]


def timed_check(audit: Path, engine: str) -> tuple[float, float, str]:
    """Wall and CPU seconds of one `isrflow check`, and its summary line."""
    started = time.monotonic()
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    process = subprocess.Popen([str(Path(sys.executable).with_name("isrflow")), "check", str(audit), "--engine",
                                engine], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    cpu = 0.0
    while process.poll() is None:
        cpu = max(cpu, cpu_seconds(process.pid))  # sampled: the JVM's seconds end with it
        time.sleep(0.2)
    out = process.stdout.read() if process.stdout else ""
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # The check's own process exactly (it is reaped); the sampled tree for the JVM it leaves behind.
    cpu = max(cpu, after.ru_utime + after.ru_stime - reaped.ru_utime - reaped.ru_stime)
    if process.returncode not in (0, 1):
        raise RuntimeError(out)
    return wall, cpu, next((line for line in out.splitlines() if " audit rows; " in line), "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--churn", default="", help="comma-separated IsrChange counts (1,000 partitions)")
    parser.add_argument("--runs", type=int, default=2, help="checks per engine and audit")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="isrflow-check-"))
    try:
        audits = {"incident": REPO / "streaming" / "scenarios" / "incident.jsonl"}
        outs = {}
        for name, log in audits.items():
            write_outputs(run_local(read_event_log(log)), work / name)
            outs[name] = work / name / "audit"
        for n in (int(c) for c in args.churn.split(",") if c):
            write_outputs(run_local(isr_churn(1000, n)), work / f"churn-{n}")
            outs[f"churn {n}"] = work / f"churn-{n}" / "audit"
        for name, audit in outs.items():
            for engine in ("local", "spark"):
                for run in range(args.runs):
                    before = load()
                    wall, cpu, summary = timed_check(audit, engine)
                    print(f"{name:>12} {engine:>5} run {run + 1}: {wall:6.1f}s wall, {cpu:6.1f}s CPU, load {before} "
                          f"-> {load()}; {summary}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
