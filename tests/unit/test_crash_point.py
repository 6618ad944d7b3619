"""The fault-injection hook: SIGKILL at the named point and hit, nothing otherwise."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from streaming.engine.faults import ENV

SCRIPT = """
import sys
from streaming.engine.faults import crash_point
for name in sys.argv[1:]:
    crash_point(name)
    print(name, flush=True)
"""


def run(env_value: str | None, *points: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin"} | ({ENV: env_value} if env_value is not None else {})
    return subprocess.run([sys.executable, "-c", SCRIPT, *points], env=env, capture_output=True, text=True,
                          timeout=60, cwd=Path(__file__).resolve().parents[2])


def test_without_the_variable_nothing_happens() -> None:
    done = run(None, "kafka-transaction", "kafka-transaction")
    assert (done.returncode, done.stdout.split()) == (0, ["kafka-transaction", "kafka-transaction"])


def test_the_named_point_kills_at_its_hit_count() -> None:
    done = run("kafka-transaction:2", "between-delta-commits", "kafka-transaction", "kafka-transaction", "never")
    assert done.returncode == -signal.SIGKILL
    assert done.stdout.split() == ["between-delta-commits", "kafka-transaction"]


def test_a_file_arms_a_running_process(tmp_path: Path) -> None:
    arm = tmp_path / "crash-at"
    assert run(f"@{arm}", "sequencer-state-write").returncode == 0  # no file: not armed
    arm.write_text("sequencer-state-write\n")
    assert run(f"@{arm}", "sequencer-committed", "sequencer-state-write").returncode == -signal.SIGKILL
