"""What every real multi-process test cluster shares, KRaft (kraftcluster.py) or ZooKeeper mode (zkcluster.py):
one JVM per server, started and stopped by its pid; the brokers' lifecycle (kill -9, SIGTERM, restart); and the
admin operations, through Kafka's Admin API with kafka-python."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from kafka.errors import KafkaConnectionError, KafkaError, NoBrokersAvailable, NodeNotReadyError
from kafka.protocol.admin import (
    AlterConfigsRequest,
    AlterPartitionReassignmentsRequest,
    ElectionType,
    ElectLeadersRequest,
)

from streaming.engine import connectors
from streaming.infra import jars
from streaming.infra.processes import die_with_parent

JVM_OPTS = ["-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
# Exit statuses of a server this object stopped itself (0, SIGTERM, SIGKILL): anything else is a crash.
_STOPPED = (None, 0, 143, 137, -9, -15)


class ServerProcess:
    """One JVM server (a Kafka node or a ZooKeeper server) in its own directory, with its own log files."""

    # The process's stdout/stderr first, then its log4j file: what `log_tail` shows when it fails.
    LOGS: tuple[str, ...] = ("kafka.out", "server.log")

    def __init__(self, node_id: int, directory: Path, jar_set: connectors.JarSet, port: int = 0) -> None:
        self.node_id = node_id
        self.jar_set = jar_set
        self.port = port  # the client port (brokers, ZooKeeper), 0 for none
        self.dir = directory
        self.proc: subprocess.Popen[bytes] | None = None
        self.paused = False

    @property
    def log4j2(self) -> bool:
        return self.jar_set.log4j2

    def java_cmd(self, main_class: str, *args: str) -> list[str]:
        # Kafka 4 logs through log4j 2, Kafka 3.9 (and its ZooKeeper) through reload4j (log4j 1's API).
        logging = (f"-Dlog4j2.configurationFile={self.dir / 'log4j2.properties'}" if self.log4j2
                   else f"-Dlog4j.configuration=file:{self.dir / 'log4j.properties'}")
        return [connectors.java_executable(), *JVM_OPTS, logging, f"-Dkafka.logs.dir={self.dir}", "-cp",
                jars.kafka_broker_classpath(self.jar_set), main_class, *args]

    def command(self) -> list[str]:
        raise NotImplementedError

    def start(self) -> None:
        if self.running:
            raise RuntimeError(f"node {self.node_id} is already running (pid {self.pid})")
        with open(self.dir / self.LOGS[0], "ab") as out:
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                         preexec_fn=die_with_parent)
        self.paused = False

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int, timeout: float = 30) -> None:
        """Send `sig` to this node's pid and wait for it to exit (SIGKILL after `timeout`)."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, sig)
        if self.paused:  # a stopped process acts on SIGTERM only once continued
            self.resume()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()

    def pause(self) -> None:
        """SIGSTOP: the process holds its sockets and sessions but answers nothing, as a long GC pause."""
        if self.running:
            os.kill(self.pid, signal.SIGSTOP)  # type: ignore[arg-type]
            self.paused = True

    def resume(self) -> None:
        if self.running and self.paused:
            os.kill(self.pid, signal.SIGCONT)  # type: ignore[arg-type]
        self.paused = False

    def log_tail(self, lines: int = 30) -> str:
        out = []
        for name in self.LOGS:
            path = self.dir / name
            if path.exists():
                out += path.read_text(errors="replace").splitlines()[-lines:]
        return "\n".join(out)


def listed_brokers(admin: KafkaAdminClient) -> set[int]:
    """The broker ids a broker's metadata lists (registered and unfenced)."""
    return {int(n["node_id"]) for n in admin.describe_cluster()["brokers"]}


def copy_live_dir(source: Path, copy: Path, attempts: int = 3) -> None:
    """Copy a running server's directory (a KRaft metadata log, ZooKeeper's dataDir) to `copy`. The server renames
    and deletes files meanwhile: a KRaft snapshot is written as `.part` (no part of the log until renamed), old
    segments go; a copy that met one is taken again."""
    for attempt in range(attempts):
        shutil.rmtree(copy, ignore_errors=True)
        try:
            shutil.copytree(source, copy, ignore=shutil.ignore_patterns("*.part"))
            return
        except shutil.Error:
            if attempt + 1 == attempts:
                raise
            time.sleep(1)


def write_properties(path: Path, settings: dict[str, str]) -> None:
    path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))


def log4j_file_appender(name: str, file_name: str) -> str:
    """log4j 1 lines of a file appender `name` writing ${kafka.logs.dir}/`file_name` in Kafka's layout."""
    prefix = f"log4j.appender.{name}"
    return (f"{prefix}=org.apache.log4j.FileAppender\n{prefix}.File=${{kafka.logs.dir}}/{file_name}\n"
            f"{prefix}.layout=org.apache.log4j.PatternLayout\n{prefix}.layout.ConversionPattern=[%d] %p %m (%c)%n\n")


# With several log dirs, a failed one shows within a second: the recovery-point checkpoint written into each dir
# fails there (KafkaTestCluster.fail_log_dir).
_JBOD_SETTINGS = {"log.flush.offset.checkpoint.interval.ms": "1000"}


class KafkaProcess(ServerProcess):
    """One Kafka process (a broker, or a KRaft controller) with its `settings` (server.properties) and
    `log_dirs` log dirs (JBOD, `log.dirs`)."""

    def __init__(self, node_id: int, directory: Path, jar_set: connectors.JarSet, port: int,
                 settings: dict[str, str], log_dirs: int = 1) -> None:
        super().__init__(node_id, directory, jar_set, port)
        self.settings = settings
        self.log_dir_count = log_dirs

    @property
    def config(self) -> Path:
        return self.dir / "server.properties"

    @property
    def log_dir(self) -> Path:
        """The first log dir (in KRaft it holds the metadata log: metadata.log.dir defaults to it)."""
        return self.dir / "logs"

    @property
    def log_dirs(self) -> list[Path]:
        """Every log dir (`log.dirs`): logs, logs-1, logs-2, ... (JBOD)."""
        return [self.log_dir, *(self.dir / f"logs-{i}" for i in range(1, self.log_dir_count))]

    def write_server_properties(self) -> None:
        jbod = _JBOD_SETTINGS if self.log_dir_count > 1 else {}
        write_properties(self.config, {**jbod, **self.settings, "log.dirs": ",".join(str(d) for d in self.log_dirs)})


class KafkaTestCluster:
    """Brokers (`self.brokers`, ids 1..N) beside the quorum's processes (KRaft controllers or a ZooKeeper server),
    each started by this object and stopped by its pid (`stop()`, also at exit and on leaving a `with`)."""

    brokers: dict[int, KafkaProcess]
    root: Path
    _owns_dir: bool

    def _use_root(self, root: str | Path | None, data_root: Path) -> None:
        """The cluster's directory: `root`, or a new one under `data_root` that `stop()` deletes."""
        self._owns_dir = root is None
        if root is None:
            data_root.mkdir(parents=True, exist_ok=True)
            root = tempfile.mkdtemp(dir=data_root, prefix="cluster-")
        self.root = Path(root).resolve()

    def _quorum(self) -> list[ServerProcess]:
        """The processes the brokers need to register and to shut down cleanly: stopped last."""
        raise NotImplementedError

    def start(self, timeout: float = 90) -> Self:
        raise NotImplementedError

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{b.port}" for b in self.brokers.values())

    @property
    def pids(self) -> list[int]:
        return [n.pid for n in (*self._quorum(), *self.brokers.values()) if n.running and n.pid is not None]

    # ---- broker lifecycle -------------------------------------------------------------------------

    def kill(self, broker_id: int) -> None:
        """kill -9: no controlled shutdown; the controller fences it when its session times out."""
        self.brokers[broker_id].signal(signal.SIGKILL)

    def terminate(self, broker_id: int, timeout: float = 60) -> None:
        """SIGTERM: Kafka's controlled shutdown; returns once the process has exited."""
        self.brokers[broker_id].signal(signal.SIGTERM, timeout)

    def restart(self, broker_id: int, timeout: float = 60) -> None:
        """Start a stopped broker again and wait until the cluster lists it (unfenced)."""
        self.brokers[broker_id].start()
        self.wait_for_brokers({broker_id}, timeout)

    def fail_log_dir(self, broker_id: int, index: int) -> Path:
        """A disk failing under a running broker: its log dir `index` (1 or more: dir 0 holds what the broker
        cannot run without, the metadata log in KRaft) is removed and a file put in its place, so the broker's next
        write there fails (its recovery-point checkpoint, within `log.flush.offset.checkpoint.interval.ms`); it then
        reports the dir offline and goes on with the others. In KRaft it reports it in its heartbeats and cannot
        restart with it. In ZooKeeper mode it writes `/log_dir_event_notification/log_dir_event_<seq>`, the
        controller sends it a LeaderAndIsr of every replica it holds, and takes offline those it answers
        KAFKA_STORAGE_ERROR for (the failed dir's); restarted, it starts with that dir offline. Returns the failed
        dir."""
        dirs = self.brokers[broker_id].log_dirs
        if not 0 < index < len(dirs):
            raise ValueError(f"broker {broker_id} has log dirs 0..{len(dirs) - 1}; dir 0 cannot fail here")
        shutil.rmtree(dirs[index])
        dirs[index].write_text("a failed disk\n")
        return dirs[index]

    def wait_fenced(self, broker_id: int, timeout: float = 30) -> None:
        """Wait until the cluster no longer lists `broker_id` (fenced or shut down)."""
        self._wait(lambda live: broker_id not in live, timeout, f"broker {broker_id} still listed")

    def wait_for_brokers(self, ids: set[int], timeout: float = 60) -> None:
        self._wait(lambda live: ids <= live, timeout, f"brokers {sorted(ids)} not all registered")

    def _wait(self, ok: Callable[[set[int]], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while True:
            for node in (*self._quorum(), *self.brokers.values()):
                if node.proc is not None and node.proc.poll() not in _STOPPED:
                    raise RuntimeError(f"node {node.node_id} exited {node.proc.returncode}:\n{node.log_tail()}")
            if ok(self.live_brokers()):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} after {timeout}s:\n{self._quorum()[0].log_tail()}")
            time.sleep(0.3)

    def _ask_a_broker(self, fn: Callable[[KafkaAdminClient], Any], other_than: int | None = None) -> Any:
        """`fn` on an admin client of the first running broker that answers (None if none does); a paused one
        would hold the call until its timeout, so it is not asked, nor broker `other_than`."""
        for b in self.brokers.values():
            if not b.running or b.paused or b.node_id == other_than:
                continue
            try:
                admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{b.port}", request_timeout_ms=3000)
            except (KafkaError, OSError):
                continue
            try:
                return fn(admin)
            except KafkaError:
                continue
            finally:
                admin.close()
        return None

    def live_brokers(self) -> set[int]:
        """Broker ids the cluster lists as available (registered and unfenced), asked of a running broker; none
        when no broker answers."""
        live = self._ask_a_broker(listed_brokers)
        return live if live is not None else set()

    # ---- admin operations (Kafka's Admin API through kafka-python) --------------------------------

    def _reachable_servers(self) -> str:
        return ",".join(f"127.0.0.1:{b.port}" for b in self.brokers.values() if b.running and not b.paused)

    def admin(self) -> KafkaAdminClient:
        return KafkaAdminClient(bootstrap_servers=self._reachable_servers(), request_timeout_ms=15000)

    def producer(self, acks: int | str = 1) -> KafkaProducer:
        """A producer on the running brokers (acks=1: the leader's acknowledgement alone, so a follower that
        does not fetch falls behind). Send once before pausing a broker: the client learns the leaders while
        every broker answers."""
        return KafkaProducer(bootstrap_servers=self._reachable_servers(), acks=acks, request_timeout_ms=10000,
                             max_block_ms=10000)

    def _call(self, fn: Callable[[KafkaAdminClient], Any], attempts: int = 5) -> Any:
        # The client's "controller" (any broker under KRaft, which forwards admin requests; the elected one in
        # ZooKeeper mode) may be the broker just killed: connect again.
        for attempt in range(attempts):
            try:
                admin = self.admin()
            except (NodeNotReadyError, KafkaConnectionError, NoBrokersAvailable):
                if attempt + 1 == attempts:
                    raise
                time.sleep(1)
                continue
            try:
                return fn(admin)
            finally:
                admin.close()
        raise AssertionError("unreachable")

    def create_topic(self, name: str, assignment: dict[int, list[int]],
                     configs: dict[str, str] | None = None) -> None:
        self.create_topics({name: assignment}, configs)

    def create_topics(self, assignments: dict[str, dict[int, list[int]]],
                      configs: dict[str, str] | None = None) -> None:
        """One CreateTopics request naming every topic of `assignments` (each with the same `configs`)."""
        self._call(lambda a: a.create_topics([NewTopic(name, -1, -1, replica_assignments=assignment,
                                                       topic_configs=configs or {})
                                              for name, assignment in assignments.items()]))

    def create_partitions(self, name: str, total: int, new_assignments: list[list[int]]) -> None:
        self.create_partitions_of({name: (total, new_assignments)})

    def create_partitions_of(self, topics: dict[str, tuple[int, list[list[int]]]]) -> None:
        """One CreatePartitions request: topic -> (its new partition count, the new partitions' replicas)."""
        self._call(lambda a: a.create_partitions({name: NewPartitions(total, new)
                                                  for name, (total, new) in topics.items()}))

    def delete_topic(self, name: str) -> None:
        self.delete_topics([name])

    def delete_topics(self, names: list[str]) -> None:
        """One DeleteTopics request naming every topic of `names`."""
        self._call(lambda a: a.delete_topics(list(names)))

    def list_topics(self) -> list[str]:
        return list(self._call(lambda a: a.list_topics()))

    def alter_topic_config(self, name: str, configs: dict[str, str]) -> None:
        # AlterConfigs (not incremental) replaces the topic's whole dynamic config, as ConfigCommand's old path.
        self._call(lambda a: a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, name, configs)]))

    def alter_broker_config(self, broker_id: int | None, configs: dict[str, str]) -> None:
        """AlterConfigs of broker `broker_id`'s dynamic config, or with None of the cluster default every broker
        takes (`kafka-configs --entity-default`), replacing the whole set. A broker's own goes to that broker, as
        Kafka's Admin sends it (kafka-python sends any to the least loaded one)."""
        resource = ConfigResource(ConfigResourceType.BROKER, "" if broker_id is None else str(broker_id), configs)

        def send(a: KafkaAdminClient) -> Any:
            request = AlterConfigsRequest[0](resources=[a._convert_alter_config_resource_request(resource)],
                                             validate_only=False)
            return self._to_node(a, request, a._client.least_loaded_node() if broker_id is None else broker_id)

        errors = [(code, message) for code, message, _, _ in self._call(send).resources if code]
        if errors:
            raise RuntimeError(f"broker config refused: {errors}")

    def elect(self, election: str, partitions: dict[str, list[int]]) -> dict[tuple[str, int], int]:
        """Admin ElectLeaders (`election` PREFERRED or UNCLEAN): the error code per partition (0 = elected;
        Kafka answers ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE, ... per partition)."""
        request = ElectLeadersRequest[1](election_type=ElectionType[election], timeout=15000,
                                         topic_partitions=[(t, ps) for t, ps in partitions.items()])
        response = self._call(lambda a: self._to_node(a, request))
        return {(t, p): code for t, results in response.replication_election_results for p, code, _ in results}

    def reassign(self, moves: dict[tuple[str, int], list[int] | None]) -> None:
        """AlterPartitionReassignments; a None target cancels the partition's ongoing reassignment."""
        by_topic: dict[str, list[tuple[int, list[int] | None, dict[str, Any]]]] = {}
        for (topic, partition), replicas in moves.items():
            by_topic.setdefault(topic, []).append((partition, replicas, {}))
        request = AlterPartitionReassignmentsRequest[0](
            timeout_ms=15000, topics=[(t, ps, {}) for t, ps in by_topic.items()], tags={})
        response = self._call(lambda a: self._to_node(a, request))
        errors = [(t, p, code, msg) for t, ps, _ in response.responses for p, code, msg, _ in ps if code]
        if response.error_code or errors:
            raise RuntimeError(f"reassignment refused: {response.error_code} {errors}")

    @staticmethod
    def _to_node(admin: KafkaAdminClient, request: Any, node: int | None = None) -> Any:
        # kafka-python has the request type but no Admin method for it (or none that picks the broker): send it to
        # broker `node`, by default the active controller (the broker that forwards it), with the client's own
        # plumbing.
        future = admin._send_request_to_node(admin._controller_id if node is None else node, request)
        admin._wait_for_futures([future])
        return future.value

    def describe(self, topic: str) -> dict[int, dict[str, Any]]:
        """partition -> {leader, isr, replicas} as the brokers' metadata shows it now."""
        desc = self._call(lambda a: a.describe_topics([topic]))
        return {p["partition"]: {"leader": p["leader"], "isr": sorted(p["isr"]), "replicas": p["replicas"]}
                for p in desc[0]["partitions"]}

    def wait_until(self, ok: Callable[[], Any], timeout: float = 30, what: str = "condition") -> None:
        deadline = time.monotonic() + timeout
        while not ok():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} not reached after {timeout}s")
            time.sleep(0.3)

    # ---- teardown ---------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop every process this cluster started, by pid: brokers by SIGTERM, then the quorum process (a
        broker cannot shut down cleanly without it); SIGKILL whatever does not exit in time."""
        atexit.unregister(self.stop)
        for b in self.brokers.values():
            if b.running:
                os.kill(b.pid, signal.SIGTERM)  # type: ignore[arg-type]
                b.resume()
        for b in self.brokers.values():
            b.signal(signal.SIGTERM, timeout=20)
        for node in self._quorum():
            node.signal(signal.SIGTERM, timeout=20)
        if self._owns_dir:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
