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
import signal
import subprocess
import time
from pathlib import Path

from streaming.engine import connectors
from streaming.infra import jars
from streaming.infra.cluster import KafkaProcess, KafkaTestCluster, log4j_file_appender
from streaming.infra.localkafka import LOG4J2_PROPERTIES, SMALL_TEST_CLUSTER, free_port, new_cluster_id

DATA_ROOT = connectors.CACHE / "kraft-clusters"
CONTROLLER_ID = 100
LOG4J_PROPERTIES = "log4j.rootLogger=INFO, file\n" + log4j_file_appender("file", "server.log")


class KraftNode(KafkaProcess):
    """One Kafka process (a controller or a broker) with its own config, log dirs and log file."""

    def __init__(self, node_id: int, root: Path, settings: dict[str, str], port: int = 0,
                 jar_set: connectors.JarSet = connectors.KAFKA_BROKER, log_dirs: int = 1) -> None:
        super().__init__(node_id, root / f"node-{node_id}", jar_set, port, settings, log_dirs)

    def format(self, cluster_id: str, extra: list[str]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.write_server_properties()
        if self.log4j2:
            (self.dir / "log4j2.properties").write_text(LOG4J2_PROPERTIES)
        else:
            (self.dir / "log4j.properties").write_text(LOG4J_PROPERTIES)
        fmt = subprocess.run(self.java_cmd("kafka.tools.StorageTool", "format", "-t", cluster_id,
                                           "-c", str(self.config), *extra),
                             capture_output=True, text=True, check=False)
        if fmt.returncode != 0:
            raise RuntimeError(f"formatting node {self.node_id} failed:\n{fmt.stdout}{fmt.stderr}")

    def command(self) -> list[str]:
        return self.java_cmd("kafka.Kafka", str(self.config))


class KraftCluster(KafkaTestCluster):
    """`controllers` controller processes (ids 100, 101, ...) + `brokers` broker processes (ids 1..N). One controller
    runs as a dynamic quorum on Kafka 4 (`--standalone`); several form a static voter set (`controller.quorum.voters`),
    which every Kafka version takes. `elr` sets eligible.leader.replicas.version at format time (Kafka 4.1 turns
    it on for new clusters; off reproduces the pre-KIP-966 rules; left out on Kafka 3.x, which has no such
    feature); `release_version` formats it at an older metadata.version (e.g. "3.5-IV2"; default: Kafka's
    latest); `racks` spreads the brokers over that many racks (`broker.rack` rack-0, rack-1, ...; 0: none);
    `jar_set` runs
    another Kafka (`connectors.KAFKA_39`: Kafka 3.9), and so does `release` ("3.7" to "4.4":
    connectors.KRAFT_RELEASES, its jars fetched on first use); `log_dirs` gives each broker that many log dirs
    (JBOD, `log.dirs`); `internal_replication` is the replication factor of the internal topics
    (__consumer_offsets, __transaction_state; min ISR 2 from 3 on), as a production cluster has them, so that
    losing one broker loses no coordinator for good (1 by default: quicker to start)."""

    def __init__(self, brokers: int = 3, elr: bool | None = False, root: str | Path | None = None,
                 extra_controller_config: dict[str, str] | None = None, release_version: str | None = None,
                 racks: int = 0, jar_set: connectors.JarSet = connectors.KAFKA_BROKER, controllers: int = 1,
                 release: str | None = None, log_dirs: int = 1, internal_replication: int = 1) -> None:
        if release is not None:
            if release not in connectors.KRAFT_RELEASES:
                raise ValueError(f"unknown Kafka release '{release}' (known: {', '.join(connectors.KRAFT_RELEASES)})")
            jar_set = jars.fetched(connectors.KRAFT_RELEASES[release])
        self._use_root(root, DATA_ROOT)
        self.release_version = release_version
        # Kafka 3.x (the reload4j sets) has no eligible.leader.replicas.version feature.
        self.elr = elr if jar_set.log4j2 else None
        # Kafka 3.9 takes a dynamic quorum (--standalone, kraft.version 1) only at metadata.version 3.9-IV0, and 3.7
        # and 3.8 none; a quorum of several is simplest as a static voter set: those get the static voter set,
        # which every version takes.
        self.dynamic_quorum = jar_set.log4j2 and controllers == 1
        voters = {CONTROLLER_ID + i: f"127.0.0.1:{free_port()}" for i in range(controllers)}
        common = {
            "controller.listener.names": "CONTROLLER",
            **({"controller.quorum.bootstrap.servers": ",".join(voters.values())} if self.dynamic_quorum
               else {"controller.quorum.voters": ",".join(f"{i}@{a}" for i, a in voters.items())}),
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            **SMALL_TEST_CLUSTER,
            **internal_topics(internal_replication),
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
            }, port, jar_set, log_dirs)

    @property
    def controller(self) -> KraftNode:
        """The first controller that is running (the first one if none is)."""
        return next((n for n in self.controllers.values() if n.running), next(iter(self.controllers.values())))

    @property
    def metadata_dir(self) -> Path:
        """The active controller's copy of the metadata log (every node keeps the same records; a voter restarted
        late may still be catching up)."""
        node = self.controllers[self.active_controller()] if len(self.controllers) > 1 else self.controller
        return node.log_dir / "__cluster_metadata-0"

    def broker_metadata_dir(self, broker_id: int) -> Path:
        """A broker's copy of the metadata log: the same records, with its own segments and snapshots."""
        return self.brokers[broker_id].log_dir / "__cluster_metadata-0"

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
            for node in (*self.controllers.values(), *self.brokers.values()):
                node.start()
            self.wait_for_brokers(set(self.brokers), timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _quorum(self) -> list[KraftNode]:
        return list(self.controllers.values())

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

    def restart_controllers(self) -> None:
        """Start every controller that is not running."""
        for node in self.controllers.values():
            if not node.running:
                node.start()


def internal_topics(replication: int) -> dict[str, str]:
    """The internal topics' replication settings: `replication` replicas, and an ISR of 2 at least from 3 on."""
    if replication == 1:
        return {}
    min_isr = str(2 if replication >= 3 else 1)
    return {"offsets.topic.replication.factor": str(replication),
            "transaction.state.log.replication.factor": str(replication),
            "transaction.state.log.min.isr": min_isr,
            "share.coordinator.state.topic.replication.factor": str(replication),
            "share.coordinator.state.topic.min.isr": min_isr}


def _quorum_leader(node: KraftNode) -> tuple[int, int] | None:
    """(epoch, leader) as a node's `quorum-state` file records them (KRaft writes it at every election), or None
    while it knows no leader."""
    try:
        state = json.loads((node.log_dir / "__cluster_metadata-0" / "quorum-state").read_text())
    except (OSError, ValueError):
        return None
    leader, epoch = state.get("leaderId", -1), state.get("leaderEpoch", -1)
    return (epoch, leader) if isinstance(leader, int) and leader >= 0 else None
