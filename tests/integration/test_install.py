"""The built wheel, installed into a fresh venv outside the repository, runs `isrflow replay --engine spark` and
`isrflow run` (available-now): the connectors come from their Maven coordinates through spark.jars.packages,
since an installed package has no `.cache/`. Its output is quiet: isrflow's lines and no Spark WARN line.

The fresh venv takes the third-party dependencies from the project's venv (a .pth line, not a site dir, so
the project's editable install is not seen); isrflow itself comes only from the wheel, which the test checks.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from streaming.engine.local import run_local
from streaming.infra.localkafka import create_topic
from streaming.io.delta import comparable, read_decisions_jsonl, read_delta
from streaming.io.eventlog import read_event_log
from streaming.jobs.demo import bundled_scenario, consume_decisions, publish

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

REPO = Path(__file__).resolve().parents[2]
# Log4j's WARN and INFO lines (date, time, level), not the JVM's own "WARNING: Using incubator modules" banner.
SPARK_LOG = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (?:WARN|INFO) .*$", re.MULTILINE)
# spark-submit's entry point (docs/deploy.md): `isrflow` itself, as a file spark-submit can start.
ENTRY = "import sys; from streaming.cli import main; sys.exit(main())\n"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this checkout, with the package data every command needs."""
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(REPO)],
                   check=True, capture_output=True, cwd=dist)
    (built,) = dist.glob("isrflow-*.whl")
    names = set(zipfile.ZipFile(built).namelist())
    for required in ("streaming/engine/log4j2.properties", "streaming/scenarios/incident.jsonl",
                     "streaming/infra/localspark.py", "statemachine/controller.py", "schemas/events.py"):
        assert required in names, required
    return built


def dependencies_only_venv(venv: Path) -> Path:
    """A fresh venv that sees the project venv's third-party packages (a .pth line, not a site dir, so the
    project's editable install is not seen) and no isrflow; returns its site-packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "project-deps.pth").write_text(f"{next(Path(sys.prefix).glob('lib/python3*/site-packages'))}\n")
    return site


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The `bin/` of a fresh venv holding the wheel built from this checkout."""
    root = tmp_path_factory.mktemp("install")
    venv = root / "venv"
    site = dependencies_only_venv(venv)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-deps", str(wheel)], check=True, capture_output=True)
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import streaming; print(streaming.__file__)"],
                           check=True, capture_output=True, text=True, cwd=root).stdout
    assert where.startswith(str(site)), where
    yield venv / "bin"


def command(*args: str, cwd: Path, **env: str) -> str:
    """Run it as a user outside the checkout would: the connectors from their coordinates (the Ivy cache is the
    checkout's, to stay offline), no Python settings inherited from this test process."""
    env = {**os.environ, "ISRFLOW_IVY_DIR": str(REPO / ".cache" / "ivy"), "PYTHONUNBUFFERED": "1", **env}
    for inherited in ("ISRFLOW_SPARK_JARS", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_HOME"):
        env.pop(inherited, None)
    done = subprocess.run(args, capture_output=True, text=True, cwd=cwd, env=env, timeout=900, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


def isrflow(bin_dir: Path, *args: str, cwd: Path) -> str:
    return command(str(bin_dir / "isrflow"), *args, cwd=cwd)


def test_the_wheel_replays_with_spark_outside_the_checkout(installed: Path, tmp_path: Path) -> None:
    jars = isrflow(installed, "jars", cwd=tmp_path)
    assert "this machine uses Maven coordinates (spark.jars.packages" in jars
    log = REPO / "examples" / "zombie-controller.jsonl"
    output = isrflow(installed, "replay", str(log), "--out", str(tmp_path / "out"), "--engine", "spark",
                     cwd=tmp_path)
    assert "with the spark engine" in output
    assert SPARK_LOG.findall(output) == [], output
    expected = run_local(read_event_log(log))
    assert comparable(read_decisions_jsonl(tmp_path / "out" / "decisions.jsonl")) == comparable(expected.decisions)
    assert comparable(read_delta(tmp_path / "out" / "audit")) == comparable(expected.audit)


def test_the_wheel_runs_the_streaming_query(installed: Path, kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    lines = bundled_scenario()
    create_topic(bootstrap, "wheel-events", 1)
    create_topic(bootstrap, "wheel-decisions", 1)
    publish(bootstrap, "wheel-events", lines)
    output = isrflow(installed, "run", "--bootstrap-servers", bootstrap, "--events-topic", "wheel-events",
                     "--decisions-topic", "wheel-decisions", "--audit-table", str(tmp_path / "lake" / "audit"),
                     "--checkpoint-dir", str(tmp_path / "ckpt"), "--trigger", "available-now",
                     "--state-partitions", "2", cwd=tmp_path)
    assert "2 state partitions" in output
    assert SPARK_LOG.findall(output) == [], output
    expected = run_local(enumerate(lines))
    assert comparable(read_delta(tmp_path / "lake" / "audit")) == comparable(expected.audit)
    assert comparable(consume_decisions(bootstrap, "wheel-decisions")) == comparable(expected.decisions)


def test_spark_submit_runs_the_wheel_from_py_files(wheel: Path, kafka_broker: Any, tmp_path: Path) -> None:
    """docs/deploy.md's spark-submit command: pyspark's own spark-submit, the connectors' flags from
    `isrflow jars --spark-submit`, the wheel through --py-files for the driver and the executors, whose Python
    has isrflow's dependencies but not isrflow, and a one-line entry point. PySpark puts only .zip, .egg and
    .jar py-files on the executors' path, so the wheel (a zip) goes under a .zip name."""
    import pyspark

    python = tmp_path / "deps" / "bin" / "python"
    dependencies_only_venv(python.parents[1])
    assert subprocess.run([str(python), "-c", "import streaming"], capture_output=True, cwd=tmp_path,
                          check=False).returncode, "isrflow must come from --py-files only"
    (tmp_path / "isrflow_submit.py").write_text(ENTRY)
    package = shutil.copyfile(wheel, tmp_path / "isrflow.zip")
    (tmp_path / "isrflow-log4j2.properties").write_bytes(
        zipfile.ZipFile(wheel).read("streaming/engine/log4j2.properties"))
    jar_flags = command(str(python), "-m", "streaming", "jars", "--spark-submit", cwd=tmp_path, PYTHONPATH=str(package))

    bootstrap = kafka_broker.bootstrap_servers
    lines = bundled_scenario()
    create_topic(bootstrap, "submit-events", 1)
    create_topic(bootstrap, "submit-decisions", 1)
    publish(bootstrap, "submit-events", lines)
    spark_submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    output = command(
        str(spark_submit), "--master", "local[2]", *shlex.split(jar_flags), "--py-files", str(package),
        "--conf", f"spark.pyspark.python={python}",
        "--driver-java-options", f"-Dlog4j.configurationFile=file:{tmp_path / 'isrflow-log4j2.properties'}",
        "--conf", "spark.ui.enabled=false", "--conf", "spark.databricks.delta.snapshotPartitions=2",
        "isrflow_submit.py", "run", "--bootstrap-servers", bootstrap, "--events-topic", "submit-events",
        "--decisions-topic", "submit-decisions", "--audit-table", str(tmp_path / "lake" / "audit"),
        "--checkpoint-dir", str(tmp_path / "ckpt"), "--trigger", "available-now", "--state-partitions", "2",
        cwd=tmp_path)
    assert "2 state partitions" in output
    assert SPARK_LOG.findall(output) == [], output
    expected = run_local(enumerate(lines))
    assert comparable(read_delta(tmp_path / "lake" / "audit")) == comparable(expected.audit)
    assert comparable(read_delta(tmp_path / "lake" / "decisions")) == comparable(expected.decisions)
    assert comparable(consume_decisions(bootstrap, "submit-decisions")) == comparable(expected.decisions)
