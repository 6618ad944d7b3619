"""A real multi-node KRaft cluster on 127.0.0.1: one controller process (or a quorum of them) and N broker
processes, from the project's Kafka jars, with fast session timeouts so failures show in seconds. For tests and the
demo.

    with KraftCluster(brokers=3, elr=False) as cluster:
        cluster.create_topic("t", {0: [1, 2, 3]})
        cluster.kill(2)            # kill -9: fenced when its session times out
        cluster.restart(2)
        cluster.metadata_dir       # the controller's __cluster_metadata-0

    with KraftCluster(brokers=3, controllers=3) as cluster:
        cluster.kill_controller(cluster.active_controller())   # kill -9: another voter takes over, a new epoch

Every process is started by this object and stopped by its pid (`stop()`, also at exit).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from kafka.errors import KafkaConnectionError, KafkaError, NoBrokersAvailable, NodeNotReadyError
from kafka.protocol.admin import AlterPartitionReassignmentsRequest, ElectionType, ElectLeadersRequest

from streaming.engine import connectors
from streaming.infra import jars
from streaming.infra.localkafka import LOG4J2_PROPERTIES, SMALL_TEST_CLUSTER, free_port, new_cluster_id
from streaming.infra.processes import die_with_parent

DATA_ROOT = connectors.CACHE / "kraft-clusters"
JVM_OPTS = ["-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
CONTROLLER_ID = 100
LOG4J_PROPERTIES = """\
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=${kafka.logs.dir}/server.log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
"""


class KraftNode:
    """One Kafka process (a controller or a broker) with its own config, log dir and log file."""

    def __init__(self, node_id: int, root: Path, settings: dict[str, str], port: int = 0,
                 jar_set: connectors.JarSet = connectors.KAFKA_BROKER) -> None:
        self.node_id = node_id
        self.jar_set = jar_set
        self.port = port  # the client port (brokers only)
        self.dir = root / f"node-{node_id}"
        self.settings = settings
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def config(self) -> Path:
        return self.dir / "server.properties"

    @property
    def log_dir(self) -> Path:
        return self.dir / "logs"

    def java_cmd(self, main_class: str, *args: str) -> list[str]:
        # Kafka 4 logs through log4j 2, Kafka 3.9 through reload4j (log4j 1's API).
        logging = (f"-Dlog4j2.configurationFile={self.dir / 'log4j2.properties'}" if self.log4j2
                   else f"-Dlog4j.configuration=file:{self.dir / 'log4j.properties'}")
        return [connectors.java_executable(), *JVM_OPTS, logging, f"-Dkafka.logs.dir={self.dir}", "-cp",
                jars.kafka_broker_classpath(self.jar_set), main_class, *args]

    @property
    def log4j2(self) -> bool:
        return self.jar_set is connectors.KAFKA_BROKER

    def format(self, cluster_id: str, extra: list[str]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        settings = {**self.settings, "log.dirs": str(self.log_dir)}
        self.config.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        if self.log4j2:
            (self.dir / "log4j2.properties").write_text(LOG4J2_PROPERTIES)
        else:
            (self.dir / "log4j.properties").write_text(LOG4J_PROPERTIES)
        fmt = subprocess.run(self.java_cmd("kafka.tools.StorageTool", "format", "-t", cluster_id,
                                           "-c", str(self.config), *extra),
                             capture_output=True, text=True, check=False)
        if fmt.returncode != 0:
            raise RuntimeError(f"formatting node {self.node_id} failed:\n{fmt.stdout}{fmt.stderr}")

    def start(self) -> None:
        if self.running:
            raise RuntimeError(f"node {self.node_id} is already running (pid {self.pid})")
        with open(self.dir / "kafka.out", "ab") as out:
            self.proc = subprocess.Popen(self.java_cmd("kafka.Kafka", str(self.config)),
                                         stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                         preexec_fn=die_with_parent)

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
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()

    def log_tail(self, lines: int = 30) -> str:
        out = []
        for name in ("kafka.out", "server.log"):
            path = self.dir / name
            if path.exists():
                out += path.read_text(errors="replace").splitlines()[-lines:]
        return "\n".join(out)


class KraftCluster:
    """`controllers` controller processes (ids 100, 101, ...) + `brokers` broker processes (ids 1..N). One controller
    runs as a dynamic quorum on Kafka 4 (`--standalone`); several form a static voter set (`controller.quorum.voters`),
    which every Kafka version takes. `elr` sets eligible.leader.replicas.version
    at format time (Kafka 4.1 turns it on for new clusters; off reproduces the pre-KIP-966 rules);
    `release_version` formats it at an older metadata.version (e.g. "3.5-IV2"; default: Kafka's latest); `racks`
    spreads the brokers over that many racks (`broker.rack` rack-0, rack-1, ...; 0: none); `jar_set` runs
    another Kafka (`connectors.KAFKA_39`: Kafka 3.9)."""

    def __init__(self, brokers: int = 3, elr: bool | None = False, root: str | Path | None = None,
                 extra_controller_config: dict[str, str] | None = None, release_version: str | None = None,
                 racks: int = 0, jar_set: connectors.JarSet = connectors.KAFKA_BROKER, controllers: int = 1) -> None:
        self._owns_dir = root is None
        if root is None:
            DATA_ROOT.mkdir(parents=True, exist_ok=True)
            root = tempfile.mkdtemp(dir=DATA_ROOT, prefix="cluster-")
        self.root = Path(root).resolve()
        self.elr = elr
        self.release_version = release_version
        # Kafka 3.9 takes a dynamic quorum (--standalone, kraft.version 1) only at metadata.version 3.9-IV0, and a
        # quorum of several is simplest as a static voter set: those get the static voter set, which every version
        # takes.
        self.dynamic_quorum = jar_set is connectors.KAFKA_BROKER and controllers == 1
        voters = {CONTROLLER_ID + i: f"127.0.0.1:{free_port()}" for i in range(controllers)}
        common = {
            "controller.listener.names": "CONTROLLER",
            **({"controller.quorum.bootstrap.servers": ",".join(voters.values())} if self.dynamic_quorum
               else {"controller.quorum.voters": ",".join(f"{i}@{a}" for i, a in voters.items())}),
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            **SMALL_TEST_CLUSTER,
            # The automatic rebalance would write elections at times a test cannot control.
            "auto.leader.rebalance.enable": "false",
        }
        self.controllers = {node_id: KraftNode(node_id, self.root, {
            **common,
            "process.roles": "controller",
            "node.id": str(node_id),
            "listeners": f"CONTROLLER://{address}",
            "broker.session.timeout.ms": "4000",
            **(extra_controller_config or {}),
        }, jar_set=jar_set) for node_id, address in voters.items()}
        self.brokers: dict[int, KraftNode] = {}
        for broker_id in range(1, brokers + 1):
            port = free_port()
            self.brokers[broker_id] = KraftNode(broker_id, self.root, {
                **common,
                "process.roles": "broker",
                "node.id": str(broker_id),
                "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
                "inter.broker.listener.name": "PLAINTEXT",
                "broker.heartbeat.interval.ms": "1000",
                # A follower leaves the ISR within seconds when its broker dies, as the test expects.
                "replica.lag.time.max.ms": "4000",
                **({"broker.rack": f"rack-{(broker_id - 1) % racks}"} if racks else {}),
            }, port, jar_set)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{b.port}" for b in self.brokers.values())

    @property
    def controller(self) -> KraftNode:
        """The first controller that is running (the first one if none is)."""
        return next((n for n in self.controllers.values() if n.running), next(iter(self.controllers.values())))

    @property
    def nodes(self) -> list[KraftNode]:
        return [*self.controllers.values(), *self.brokers.values()]

    @property
    def metadata_dir(self) -> Path:
        """The active controller's copy of the metadata log (every node keeps the same records; a voter restarted
        late may still be catching up)."""
        node = self.controllers[self.active_controller()] if len(self.controllers) > 1 else self.controller
        return node.log_dir / "__cluster_metadata-0"

    def broker_metadata_dir(self, broker_id: int) -> Path:
        """A broker's copy of the metadata log: the same records, with its own segments and snapshots."""
        return self.brokers[broker_id].log_dir / "__cluster_metadata-0"

    @property
    def pids(self) -> list[int]:
        return [n.pid for n in self.nodes if n.running and n.pid is not None]

    def start(self, timeout: float = 90) -> KraftCluster:
        cluster_id = new_cluster_id()
        # Kafka 3.9 has no eligible.leader.replicas.version feature (elr=None leaves it out).
        feature = [*(["-f", f"eligible.leader.replicas.version={1 if self.elr else 0}"] if self.elr is not None
                     else []), *(["--release-version", self.release_version] if self.release_version else [])]
        for c in self.controllers.values():
            c.format(cluster_id, [*(["--standalone"] if self.dynamic_quorum else []), *feature])
        for b in self.brokers.values():
            b.format(cluster_id, feature)
        atexit.register(self.stop)
        try:
            for node in self.nodes:
                node.start()
            self.wait_for_brokers(set(self.brokers), timeout)
        except BaseException:
            self.stop()
            raise
        return self

    # ---- controller quorum ------------------------------------------------------------------------

    def active_controller(self, timeout: float = 30) -> int:
        """The quorum's leader, as a running controller's quorum-state file names it once the quorum has one."""
        deadline = time.monotonic() + timeout
        while True:
            # The newest epoch any running voter has seen: a restarted voter's file may still name an old leader.
            known = [state for node in self.controllers.values() if node.running and (state := _quorum_leader(node))]
            leader = max(known, default=(-1, -1))[1]
            if leader in self.controllers and self.controllers[leader].running:
                return leader
            if time.monotonic() > deadline:
                raise TimeoutError(f"no running controller leads the quorum after {timeout}s")
            time.sleep(0.3)

    def kill_controller(self, node_id: int, timeout: float = 30) -> int:
        """kill -9 of a controller; when it led, waits until another voter leads. Returns the leader after."""
        self.controllers[node_id].signal(signal.SIGKILL)
        return self.active_controller(timeout)

    def restart_controller(self, node_id: int) -> None:
        self.controllers[node_id].start()

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

    def wait_fenced(self, broker_id: int, timeout: float = 30) -> None:
        """Wait until the cluster no longer lists `broker_id` (fenced or shut down)."""
        self._wait(lambda live: broker_id not in live, timeout, f"broker {broker_id} still listed")

    def wait_for_brokers(self, ids: set[int], timeout: float = 60) -> None:
        self._wait(lambda live: ids <= live, timeout, f"brokers {sorted(ids)} not all registered")

    def _wait(self, ok: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while True:
            for node in self.nodes:
                if node.proc is not None and node.proc.poll() not in (None, 0, 143, 137, -9, -15):
                    raise RuntimeError(f"node {node.node_id} exited {node.proc.returncode}:\n{node.log_tail()}")
            if ok(self.live_brokers()):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} after {timeout}s:\n{self.controller.log_tail()}")
            time.sleep(0.3)

    def live_brokers(self) -> set[int]:
        """Broker ids the cluster lists as available (registered and unfenced), asked of a running broker."""
        for b in self.brokers.values():
            if not b.running:
                continue
            try:
                admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{b.port}", request_timeout_ms=3000)
            except (KafkaError, OSError):
                continue
            try:
                return {int(n["node_id"]) for n in admin.describe_cluster()["brokers"]}
            except KafkaError:
                continue
            finally:
                admin.close()
        return set()

    # ---- admin operations (Kafka's Admin API through kafka-python) --------------------------------

    def admin(self) -> KafkaAdminClient:
        live = [b for b in self.brokers.values() if b.running]
        servers = ",".join(f"127.0.0.1:{b.port}" for b in live)
        return KafkaAdminClient(bootstrap_servers=servers, request_timeout_ms=15000)

    def _call(self, fn: Any, attempts: int = 5) -> Any:
        # The client picks any broker as its "controller" (KRaft brokers forward admin requests); right after a
        # kill that broker may be the dead one: connect again.
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
        self._call(lambda a: a.create_topics([NewTopic(name, -1, -1, replica_assignments=assignment,
                                                       topic_configs=configs or {})]))

    def create_partitions(self, name: str, total: int, new_assignments: list[list[int]]) -> None:
        self._call(lambda a: a.create_partitions({name: NewPartitions(total, new_assignments)}))

    def delete_topic(self, name: str) -> None:
        self._call(lambda a: a.delete_topics([name]))

    def alter_topic_config(self, name: str, configs: dict[str, str]) -> None:
        # AlterConfigs (not incremental) replaces the topic's whole dynamic config, as ConfigCommand's old path.
        self._call(lambda a: a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, name, configs)]))

    def elect(self, election: str, partitions: dict[str, list[int]]) -> dict[tuple[str, int], int]:
        """Admin ElectLeaders (`election` PREFERRED or UNCLEAN): the error code per partition (0 = elected;
        Kafka answers ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE, ... per partition)."""
        request = ElectLeadersRequest[1](election_type=ElectionType[election], timeout=15000,
                                         topic_partitions=[(t, ps) for t, ps in partitions.items()])
        response = self._call(lambda a: self._to_controller(a, request))
        return {(t, p): code for t, results in response.replication_election_results for p, code, _ in results}

    def reassign(self, moves: dict[tuple[str, int], list[int] | None]) -> None:
        """AlterPartitionReassignments; a None target cancels the partition's ongoing reassignment."""
        by_topic: dict[str, list[tuple[int, list[int] | None, dict[str, Any]]]] = {}
        for (topic, partition), replicas in moves.items():
            by_topic.setdefault(topic, []).append((partition, replicas, {}))
        request = AlterPartitionReassignmentsRequest[0](
            timeout_ms=15000, topics=[(t, ps, {}) for t, ps in by_topic.items()], tags={})
        response = self._call(lambda a: self._to_controller(a, request))
        errors = [(t, p, code, msg) for t, ps, _ in response.responses for p, code, msg, _ in ps if code]
        if response.error_code or errors:
            raise RuntimeError(f"reassignment refused: {response.error_code} {errors}")

    @staticmethod
    def _to_controller(admin: KafkaAdminClient, request: Any) -> Any:
        # kafka-python has the request type but no Admin method for it: send it to the active controller
        # (the broker that forwards it) with the client's own plumbing.
        future = admin._send_request_to_node(admin._controller_id, request)
        admin._wait_for_futures([future])
        return future.value

    def describe(self, topic: str) -> dict[int, dict[str, Any]]:
        """partition -> {leader, isr, replicas} as the brokers' metadata shows it now."""
        desc = self._call(lambda a: a.describe_topics([topic]))
        return {p["partition"]: {"leader": p["leader"], "isr": sorted(p["isr"]), "replicas": p["replicas"]}
                for p in desc[0]["partitions"]}

    def wait_until(self, ok: Any, timeout: float = 30, what: str = "condition") -> None:
        deadline = time.monotonic() + timeout
        while not ok():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} not reached after {timeout}s")
            time.sleep(0.3)

    # ---- teardown ---------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop every process this cluster started, by pid: brokers by SIGTERM then the controller (a
        broker cannot shut down cleanly without it); SIGKILL whatever does not exit in time."""
        atexit.unregister(self.stop)
        for b in self.brokers.values():
            if b.running:
                os.kill(b.pid, signal.SIGTERM)  # type: ignore[arg-type]
        for b in self.brokers.values():
            b.signal(signal.SIGTERM, timeout=20)
        for c in self.controllers.values():
            c.signal(signal.SIGTERM, timeout=20)
        if self._owns_dir:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> KraftCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def _quorum_leader(node: KraftNode) -> tuple[int, int] | None:
    """(epoch, leader) as a node's `quorum-state` file records them (KRaft writes it at every election), or None
    while it knows no leader."""
    try:
        state = json.loads((node.log_dir / "__cluster_metadata-0" / "quorum-state").read_text())
    except (OSError, ValueError):
        return None
    leader, epoch = state.get("leaderId", -1), state.get("leaderEpoch", -1)
    return (epoch, leader) if isinstance(leader, int) and leader >= 0 else None
