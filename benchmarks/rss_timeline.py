"""Benchmark: a command's resident set once a second, each of its processes apart, by the phase its progress names.

The phase is what the command's last progress line names (`replay: 87,181 events, ...` is the replay; after
`replay: done, ...` comes what follows it: the report, beside the agreement's process). Printed: each process's peak
(VmHWM) and, per phase, the largest RSS sampled of the command's own process and of its largest child.

Run: nice -n 5 .venv/bin/python benchmarks/rss_timeline.py [--samples rss.csv] -- \
         .venv/bin/isrflow replay kraft:DIR --out OUT --engine local --rules kraft
"""

from __future__ import annotations

import argparse
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import IO

from harness import descendants, load, rss_mib

# A progress line: `replay: 87,181 events, ...`, `replay: done, 892,392 events in 144.9 s`.
PROGRESS = re.compile(r"^(\w[\w ]*): (done, )?[\d,]+ (\w+)\b.*\b\3/s\b")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=Path, help="CSV file written as samples are taken")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    started, started_load = time.monotonic(), load()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    phase = ["start"]

    def follow(stream: IO[bytes]) -> None:
        """The command's output as it comes, a line at a time (a progress line may end in a carriage return)."""
        for line in stream:
            for part in line.decode(errors="replace").split("\r"):
                if part.strip():
                    print(part.rstrip())
                named = PROGRESS.match(part.strip())
                if named:
                    phase[0] = f"after {named[1]}" if named[2] else named[1]

    assert child.stdout is not None
    reader = threading.Thread(target=follow, args=(child.stdout,), daemon=True)
    reader.start()
    out = args.samples.open("w", buffering=1) if args.samples else None
    if out:
        out.write("seconds,phase,pid,command,rss_mib\n")
    peaks: dict[int, tuple[str, float]] = {}  # pid: (command, VmHWM)
    by_phase: dict[str, list[float]] = {}  # phase: [the command's own process, its largest child]
    while child.poll() is None:
        try:
            processes = [(child.pid, " ".join(command)), *descendants(child.pid)]
            sizes = [(pid, cmd, rss_mib(pid), rss_mib(pid, "VmHWM")) for pid, cmd in processes]
        except OSError:  # a process ended between the listing and the reading: the next sample
            sizes = []
        top = by_phase.setdefault(phase[0], [0.0, 0.0])
        for pid, cmd, rss, peak in sizes:
            peaks[pid] = (cmd, max(peak, peaks.get(pid, ("", 0.0))[1]))
            slot = 0 if pid == child.pid else 1
            top[slot] = max(top[slot], rss)
            if out:
                out.write(f"{time.monotonic() - started:.1f},{phase[0]},{pid},{cmd[:60]!r},{rss:.0f}\n")
        time.sleep(1.0)
    reader.join()
    if out:
        out.close()
    print(f"exit {child.returncode}, {time.monotonic() - started:.1f}s wall, load {started_load} -> {load()}")
    print("peak RSS (VmHWM) per process:")
    for pid, (cmd, peak) in sorted(peaks.items(), key=lambda p: -p[1][1]):
        print(f"  {peak:7.0f} MiB  {pid}  {cmd[:100]}")
    print("largest RSS sampled per phase: the command's process, its largest child")
    for name, (own, largest_child) in by_phase.items():
        print(f"  {name:20s} {own:7.0f} MiB  {largest_child:7.0f} MiB")
    return child.returncode


if __name__ == "__main__":
    raise SystemExit(main())
