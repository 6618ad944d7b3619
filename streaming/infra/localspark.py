"""A standalone Spark cluster on 127.0.0.1 (one master, N workers), started with pyspark's own launcher
(`bin/spark-class`), for the cluster tests and the scale benchmark. Each JVM is its own process group, so
stopping one by its pid also ends the executor JVMs its worker launched."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from streaming.engine import connectors
from streaming.infra.localkafka import free_port
from streaming.infra.processes import die_with_parent

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def spark_class() -> Path:
    return connectors.pyspark_jars_dir().parent / "bin" / "spark-class"


class LocalSparkCluster:
    """`start()` returns once every worker has registered; `stop()` kills every process left, by pid."""

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "1g", root: Path | None = None) -> None:
        self.worker_count, self.cores, self.memory = workers, cores, memory
        self._owns_root = root is None  # its logs and work dirs go with it on stop()
        self.root = Path(root or tempfile.mkdtemp(prefix="isrflow-spark-cluster-")).resolve()
        self.port = free_port()
        self.master: subprocess.Popen[bytes] | None = None
        self.workers: list[subprocess.Popen[bytes] | None] = []

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _launch(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(self.root),
               # No REST submission server: it would take the fixed port 6066 beside other clusters.
               "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}
        with (self.root / f"{name}.log").open("ab") as log:
            return subprocess.Popen([str(spark_class()), *args], stdout=log, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True, preexec_fn=die_with_parent)

    def _wait_for(self, name: str, text: str, process: subprocess.Popen[bytes], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        log = self.root / f"{name}.log"
        while time.monotonic() < deadline:
            if text in log.read_text(errors="replace"):
                return
            if process.poll() is not None:
                break
            time.sleep(0.5)
        raise RuntimeError(f"Spark {name} did not log '{text}' (see {log}):\n{log.read_text(errors='replace')[-3000:]}")

    def start(self, timeout: float = 180) -> LocalSparkCluster:
        self.root.mkdir(parents=True, exist_ok=True)
        self.master = self._launch("master", [MASTER_CLASS, "--host", "127.0.0.1", "--port", str(self.port),
                                              "--webui-port", str(free_port())])
        self._wait_for("master", "I have been elected leader", self.master, timeout)
        for i in range(self.worker_count):
            self.start_worker(i, timeout)
        return self

    def start_worker(self, index: int, timeout: float = 180) -> None:
        name = f"worker-{index}"
        work = self.root / name
        work.mkdir(parents=True, exist_ok=True)
        process = self._launch(name, [WORKER_CLASS, "--host", "127.0.0.1", "--cores", str(self.cores), "--memory",
                                      self.memory, "--work-dir", str(work), "--webui-port", str(free_port()),
                                      self.url])
        while len(self.workers) <= index:
            self.workers.append(None)
        self.workers[index] = process
        self._wait_for(name, "Successfully registered with master", process, timeout)

    @staticmethod
    def _kill(process: subprocess.Popen[bytes] | None) -> None:
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # the worker and the executors it launched
        process.wait(timeout=30)

    def kill_worker(self, index: int) -> None:
        """A worker machine lost: its JVM and its executors die at once."""
        self._kill(self.workers[index])
        self.workers[index] = None

    def stop(self) -> None:
        for process in [*self.workers, self.master]:
            self._kill(process)
        self.workers, self.master = [], None
        if self._owns_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalSparkCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
