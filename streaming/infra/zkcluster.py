"""A real ZooKeeper-mode Kafka cluster on 127.0.0.1: one standalone ZooKeeper server and N Kafka brokers in
ZooKeeper mode, of a release in `RELEASES` (Kafka 3.9.1, the last line that has ZooKeeper mode, by default; Kafka
2.8.2, the last 2.x; 2.7.2, 3.0.2, 3.5.2), each from its own jar set with the ZooKeeper server that release depends
on, with short timeouts so failures show in seconds. One broker is the controller, elected through ZooKeeper; every
decision it makes is a znode write, kept in order in ZooKeeper's transaction log (`zookeeper_data_dir`, read by
`streaming.zookeeper.files.read_zk_history`), and every request it sends is a line of its `state-change.log`.

    with ZkCluster(brokers=3) as cluster:
        cluster.create_topic("t", {0: [1, 2, 3]})
        cluster.kill(cluster.controller_id())   # kill -9: its ZooKeeper session expires, another broker takes over
        cluster.restart(2)
        cluster.zookeeper_data_dir               # ZooKeeper's dataDir, holding version-2/
        cluster.state_change_log(1)

    ZkCluster(brokers=3, kafka_version="2.8.2")   # Kafka 2.8.2 brokers on ZooKeeper 3.5.9

Every process is started by this object and stopped by its pid (`stop()`, also at exit and on leaving a `with`).
"""

from __future__ import annotations

import atexit
import json
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from streaming.engine import connectors
from streaming.infra import jars
from streaming.infra.cluster import (
    KafkaProcess,
    KafkaTestCluster,
    ServerProcess,
    listed_brokers,
    log4j_file_appender,
    write_properties,
)
from streaming.infra.localkafka import SMALL_TEST_CLUSTER, free_port


@dataclass(frozen=True)
class ZkRelease:
    """A Kafka release whose brokers run in ZooKeeper mode: its jar set (Kafka, the ZooKeeper server it is built
    against, reload4j for its log4j 1.x config) and the logger of the ISR changes its leaders send the controller
    (AlterIsr before Kafka 3.2, AlterPartition from 3.2 on)."""

    kafka_version: str
    zookeeper_version: str
    jar_set: connectors.JarSet
    alter_partition_logger: str


RELEASES = {r.kafka_version: r for r in (
    ZkRelease("3.9.1", "3.8.4", connectors.KAFKA_39, "kafka.server.DefaultAlterPartitionManager"),
    ZkRelease("3.5.2", "3.6.4", connectors.KAFKA_35, "kafka.server.DefaultAlterPartitionManager"),
    ZkRelease("3.0.2", "3.6.3", connectors.KAFKA_30, "kafka.server.DefaultAlterIsrManager"),
    ZkRelease("2.8.2", "3.5.9", connectors.KAFKA_28, "kafka.server.DefaultAlterIsrManager"),
    ZkRelease("2.7.2", "3.5.9", connectors.KAFKA_27, "kafka.server.AlterIsrManagerImpl"),
)}
DEFAULT_RELEASE = "3.9.1"

DATA_ROOT = connectors.CACHE / "zk-clusters"
SESSION_TIMEOUT_MS = 6000
ZOOKEEPER_ID = 0
REASSIGN_PARTITIONS = "/admin/reassign_partitions"

# ZooKeeper's settings for a fast, small run (docs/zookeeper.md). tickTime 500 ms allows
# session timeouts of 1 to 10 s; the default preAllocSize writes 64 MB per log file; snapCount is small so that
# a test's run rolls a log and takes snapshots, as a long-lived server does; autopurge off keeps every file.
ZOO_CFG = {
    "tickTime": "500",
    "preAllocSize": "512",  # KB
    "admin.enableServer": "false",
    "autopurge.purgeInterval": "0",
    "maxClientCnxns": "0",
    "4lw.commands.whitelist": "srvr",  # `srvr` tells when the server is up
}



def broker_log4j(release: ZkRelease) -> str:
    """Kafka's own config/log4j.properties layout: the state-change logger (every partition and replica state
    change, and every request the controller sends, at TRACE) and the controller's logger in files of their own."""
    return (
        "log4j.rootLogger=INFO, kafkaAppender\n"
        + log4j_file_appender("kafkaAppender", "server.log")
        + log4j_file_appender("stateChangeAppender", "state-change.log")
        + log4j_file_appender("controllerAppender", "controller.log")
        + "log4j.logger.org.apache.zookeeper=WARN\n"
        "log4j.logger.kafka.controller=DEBUG, controllerAppender\n"
        "log4j.additivity.kafka.controller=false\n"
        # Each AlterPartition a leader sends, with its partitions (server.log): the one input the controller can
        # answer without a write, so neither ZooKeeper's log nor controller.log names it.
        f"log4j.logger.{release.alter_partition_logger}=DEBUG\n"
        "log4j.logger.state.change.logger=TRACE, stateChangeAppender\n"
        "log4j.additivity.state.change.logger=false\n"
    )

ZOOKEEPER_LOG4J = "log4j.rootLogger=INFO, file\n" + log4j_file_appender("file", "zookeeper.log")


class ZooKeeperServer(ServerProcess):
    """ZooKeeper standalone (QuorumPeerMain with a zoo.cfg that names no other server)."""

    LOGS = ("zookeeper.out", "zookeeper.log")

    def __init__(self, root: Path, port: int, snap_count: int, jar_set: connectors.JarSet) -> None:
        super().__init__(ZOOKEEPER_ID, root / "zookeeper", jar_set, port)
        self.settings = {**ZOO_CFG, "snapCount": str(snap_count), "dataDir": str(self.data_dir),
                         "clientPort": str(port), "clientPortAddress": "127.0.0.1"}

    @property
    def data_dir(self) -> Path:
        return self.dir / "data"

    def write_config(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        write_properties(self.dir / "zoo.cfg", self.settings)
        (self.dir / "log4j.properties").write_text(ZOOKEEPER_LOG4J)

    def command(self) -> list[str]:
        return self.java_cmd("org.apache.zookeeper.server.quorum.QuorumPeerMain", str(self.dir / "zoo.cfg"))

    def serving(self) -> bool:
        """Whether the server answers `srvr` (it has loaded its database and takes sessions)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"srvr")
                return b"Mode:" in s.recv(4096)
        except OSError:
            return False


class ZkBroker(KafkaProcess):
    """One Kafka broker in ZooKeeper mode."""

    def __init__(self, broker_id: int, root: Path, settings: dict[str, str], port: int, release: ZkRelease,
                 log_dirs: int = 1) -> None:
        super().__init__(broker_id, root / f"broker-{broker_id}", release.jar_set, port, settings, log_dirs)
        self.release = release

    def write_config(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.write_server_properties()
        (self.dir / "log4j.properties").write_text(broker_log4j(self.release))

    def command(self) -> list[str]:
        return self.java_cmd("kafka.Kafka", str(self.config))


class ZkCluster(KafkaTestCluster):
    """One ZooKeeper server + `brokers` Kafka brokers in ZooKeeper mode (ids 1..N).

    `kafka_version` is the brokers' release, a key of `RELEASES` (default 3.9.1), its jar set fetched on first use;
    the ZooKeeper server is the one that release depends on. `inter_broker_protocol` sets
    `inter.broker.protocol.version` on every broker (e.g. "2.6": the Kafka 2.x path where a leader writes its own
    ISR changes to ZooKeeper and announces them under /isr_change_notification; default: the release's own);
    `auto_leader_rebalance` turns the controller's periodic preferred election on (off by
    default: it would write elections at times a test cannot control); `racks` spreads the brokers over that many
    racks (`broker.rack` rack-0, rack-1, ...; 0: none); `snap_count` is ZooKeeper's snapCount;
    `extra_broker_config` is added to every broker's server.properties; `log_dirs` gives each broker that many log
    dirs (JBOD, `log.dirs`), one of which `fail_log_dir` fails under it."""

    def __init__(self, brokers: int = 3, inter_broker_protocol: str | None = None, root: str | Path | None = None,
                 auto_leader_rebalance: bool = False, racks: int = 0, snap_count: int = 100,
                 extra_broker_config: dict[str, str] | None = None, kafka_version: str = DEFAULT_RELEASE,
                 log_dirs: int = 1) -> None:
        if kafka_version not in RELEASES:
            raise ValueError(f"no ZooKeeper-mode release {kafka_version} (known: {', '.join(RELEASES)})")
        self.release = RELEASES[kafka_version]
        self._use_root(root, DATA_ROOT)
        self.zookeeper = ZooKeeperServer(self.root, free_port(), snap_count, self.release.jar_set)
        self._killed_controllers: set[int] = set()
        self.brokers: dict[int, ZkBroker] = {}
        for broker_id in range(1, brokers + 1):
            port = free_port()
            self.brokers[broker_id] = ZkBroker(broker_id, self.root, {
                **SMALL_TEST_CLUSTER,
                "broker.id": str(broker_id),
                "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
                # No chroot: the znodes are where ZNODES.md and Kafka's docs put them (/brokers/ids/N, ...).
                "zookeeper.connect": f"127.0.0.1:{self.zookeeper.port}",
                # A kill -9 shows as a closed session (and a broker change) after 6 s.
                "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                # A follower that stops fetching leaves the ISR within seconds.
                "replica.lag.time.max.ms": "3000",
                "auto.leader.rebalance.enable": str(auto_leader_rebalance).lower(),
                # A controlled shutdown the controller cannot answer (it is shutting down too, at stop()) is
                # retried after 0.5 s, not 5 s.
                "controlled.shutdown.retry.backoff.ms": "500",
                **({"inter.broker.protocol.version": inter_broker_protocol} if inter_broker_protocol else {}),
                **({"broker.rack": f"rack-{(broker_id - 1) % racks}"} if racks else {}),
                **(extra_broker_config or {}),
            }, port, self.release, log_dirs)

    @property
    def zookeeper_data_dir(self) -> Path:
        """ZooKeeper's dataDir: `version-2/` in it holds the transaction logs and snapshots."""
        return self.zookeeper.data_dir

    def state_change_log(self, broker_id: int) -> Path:
        """Broker `broker_id`'s state-change.log: as controller, every state change and request sent (TRACE);
        as broker, every request received."""
        return self.brokers[broker_id].dir / "state-change.log"

    def controller_log(self, broker_id: int) -> Path:
        """Broker `broker_id`'s controller.log: as controller, what it read (the kafka.controller logger)."""
        return self.brokers[broker_id].dir / "controller.log"

    def server_log(self, broker_id: int) -> Path:
        """Broker `broker_id`'s server.log (every other logger; the AlterPartition requests it sent, at DEBUG)."""
        return self.brokers[broker_id].dir / "server.log"

    def copy_logs(self, log_of: Callable[[int], Path], dest: Path) -> Path:
        """Each broker's log (`state_change_log`, `controller_log`, `server_log`) copied into `dest` as
        broker-N.log: the folder `replay zk:` reads beside ZooKeeper's directory."""
        dest.mkdir(parents=True, exist_ok=True)
        for broker in self.brokers:
            if log_of(broker).exists():
                shutil.copyfile(log_of(broker), dest / f"broker-{broker}.log")
        return dest

    def _quorum(self) -> list[ZooKeeperServer]:
        return [self.zookeeper]

    def start(self, timeout: float = 90) -> ZkCluster:
        if not connectors.is_fetched(self.release.jar_set):  # a release's jars on first use
            jars.fetch_set(self.release.jar_set)
        self.zookeeper.write_config()
        for b in self.brokers.values():
            b.write_config()
        atexit.register(self.stop)
        try:
            self.zookeeper.start()
            # A broker that cannot reach ZooKeeper within its session timeout exits: start them once it serves.
            deadline = time.monotonic() + timeout
            while not self.zookeeper.serving():
                if not self.zookeeper.running or time.monotonic() > deadline:
                    raise RuntimeError(f"ZooKeeper did not start:\n{self.zookeeper.log_tail()}")
                time.sleep(0.2)
            for b in self.brokers.values():
                b.start()
            self.wait_for_brokers(set(self.brokers), max(deadline - time.monotonic(), 1))
        except BaseException:
            self.stop()
            raise
        return self

    # ---- ZooKeeper-mode lifecycle and state -------------------------------------------------------

    def controller_id(self) -> int:
        """The active controller (the broker whose id /controller holds), as the brokers' metadata shows it;
        -1 while there is none."""
        answer = self._ask_a_broker(lambda a: a.describe_cluster()["controller_id"])
        return -1 if answer is None else int(answer)

    def wait_for_controller(self, other_than: int | None = None, timeout: float = 30) -> int:
        """Wait until a live broker (not `other_than`) is the controller; its id."""
        found: list[int] = []

        def elected() -> bool:
            found[:] = [self.controller_id()]
            return found[0] >= 0 and found[0] != other_than and found[0] in self.live_brokers()

        self.wait_until(elected, timeout, f"a controller other than {other_than}")
        return found[0]

    def active_controller(self, timeout: float = 30) -> int:
        """The broker that is the controller (waits until there is one)."""
        return self.wait_for_controller(timeout=timeout)

    def kill_controller(self, broker_id: int, timeout: float = 30) -> int:
        """kill -9 of the controller's broker; waits until another broker is elected. Returns the new one."""
        self.kill(broker_id)
        self._killed_controllers.add(broker_id)
        return self.wait_for_controller(other_than=broker_id, timeout=timeout)

    def restart_controllers(self) -> None:
        """Start again the brokers `kill_controller` killed (those not running)."""
        for broker_id in sorted(self._killed_controllers):
            if not self.brokers[broker_id].running:
                self.restart(broker_id)
        self._killed_controllers.clear()

    def pause(self, broker_id: int) -> None:
        """SIGSTOP: the broker neither fetches nor heartbeats ZooKeeper; it keeps its session until that times
        out. A pause shorter than the session timeout only lags its replicas out of ISRs."""
        self.brokers[broker_id].pause()

    def resume(self, broker_id: int) -> None:
        self.brokers[broker_id].resume()

    def expire_session(self, broker_id: int, timeout: float = 30) -> None:
        """Pause the broker past its session timeout (ZooKeeper closes the session, deleting /brokers/ids/N and
        /controller if it held it), then resume it: it opens a new session and registers again."""
        self.pause(broker_id)
        try:
            # Asked of the others only, and only an answer counts: an admin client may pick the paused broker,
            # time out, and answer nothing.
            self.wait_until(lambda: broker_id not in (self._listed_by_others(broker_id) or {broker_id}), timeout,
                            f"broker {broker_id}'s session closed")
        finally:
            self.resume(broker_id)
        # Until it learns that its session expired, the resumed broker still lists itself: ask the others.
        self.wait_until(lambda: broker_id in (self._listed_by_others(broker_id) or set()), timeout,
                        f"broker {broker_id} registered again")

    def reassign_through_znode(self, moves: dict[tuple[str, int], list[int]]) -> None:
        """The legacy reassignment (kafka-reassign-partitions --zookeeper before Kafka 3.0): one
        `/admin/reassign_partitions` znode naming every partition of `moves`, created with ZooKeeper's own
        command-line client. Refused while the znode exists (a reassignment through it still in progress)."""
        data = json.dumps({"version": 1, "partitions": [
            {"topic": t, "partition": p, "replicas": r} for (t, p), r in sorted(moves.items())]})
        shell = self.zookeeper.java_cmd("org.apache.zookeeper.ZooKeeperMain", "-server",
                                        f"127.0.0.1:{self.zookeeper.port}", "create", REASSIGN_PARTITIONS, data)
        out = subprocess.run(shell, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        if f"Created {REASSIGN_PARTITIONS}" not in out.stdout + out.stderr:
            raise RuntimeError(f"reassignment znode refused: {(out.stdout + out.stderr).strip()[-200:]}")

    def _listed_by_others(self, broker_id: int) -> set[int] | None:
        return self._ask_a_broker(listed_brokers, other_than=broker_id)
