"""A single-node KRaft Kafka (broker and controller in one JVM) on 127.0.0.1, for tests and local runs.

Plain by default. With `security=BrokerSecurity(...)` its client listener is SASL_SSL: SCRAM-SHA-512 over TLS
with a self-signed certificate for 127.0.0.1/localhost made by `keytool`, SCRAM users created by Kafka's
storage tool when the log is formatted, and ACLs enforced (StandardAuthorizer) with `admin` as super user.

It runs the jars `python -m streaming.infra.jars fetch` cached, so no Kafka install is needed. By hand:

    python -m streaming.infra.localkafka start --port 9092 --data-dir /tmp/kafka   # Ctrl-C to stop
"""

from __future__ import annotations

import argparse
import atexit
import base64
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from kafka import KafkaAdminClient
from kafka.admin import ACL, ACLOperation, ACLPermissionType, ACLResourcePatternType, NewTopic, ResourcePattern
from kafka.admin import ResourceType as Resource
from kafka.errors import KafkaError

from streaming.engine import connectors
from streaming.infra import jars
from streaming.infra.processes import die_with_parent
from streaming.io.eventlog import topic_partition_count
from streaming.io.kafkaclient import KafkaSettings

DATA_ROOT = connectors.CACHE / "kafka-data"
JVM_OPTS = ["-Xms128m", "-Xmx512m", "-XX:+UseG1GC", "-Djava.awt.headless=true"]

# log4j2 properties (no YAML parser needed): everything goes to server.log in the data dir.
LOG4J2_PROPERTIES = """\
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
"""


# Test and demo clusters: topics and Kafka's internal topics get one replica and one partition by default,
# which keeps first use fast.
SMALL_TEST_CLUSTER = {
    "num.partitions": "1",
    "default.replication.factor": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def new_cluster_id() -> str:
    # Kafka's Uuid text form: 16 random bytes, URL-safe base64 without padding, never starting with '-'.
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


SCRAM = "SCRAM-SHA-512"
ADMIN = "admin"


def _secret() -> str:
    return secrets.token_urlsafe(18)


@dataclass(frozen=True)
class BrokerSecurity:
    """A SASL_SSL listener: SCRAM users (name -> password) besides `admin`, the super user the broker itself
    and test set-up use. Passwords are random unless given."""

    users: Mapping[str, str] = field(default_factory=dict)
    admin_password: str = field(default_factory=_secret)
    store_password: str = field(default_factory=_secret)


def _keytool(*args: str) -> None:
    keytool = shutil.which("keytool") or str(Path(connectors.java_executable()).parent / "keytool")
    result = subprocess.run([keytool, *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"keytool {args[0]} failed: {result.stdout}{result.stderr}")


def _jaas(user: str, password: str) -> str:
    return f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" password="{password}";'


class LocalKafkaBroker:
    """One Kafka process; `start()` returns once it serves metadata, `stop()` shuts it down."""

    def __init__(self, port: int = 0, data_dir: str | Path | None = None,
                 security: BrokerSecurity | None = None) -> None:
        self.security = security
        self.port = port or free_port()
        self._owns_dir = data_dir is None
        if data_dir is None:
            DATA_ROOT.mkdir(parents=True, exist_ok=True)
            data_dir = tempfile.mkdtemp(dir=DATA_ROOT, prefix="broker-")
        self.data_dir = Path(data_dir).resolve()
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.data_dir / "server.log"

    @property
    def truststore(self) -> Path:
        """PKCS12 truststore holding the broker's certificate (secured broker)."""
        return self.data_dir / "tls" / "truststore.p12"

    @property
    def ca_pem(self) -> Path:
        """The broker's certificate, PEM (secured broker)."""
        return self.data_dir / "tls" / "broker.pem"

    def client_properties(self, user: str) -> dict[str, str]:
        """Kafka client properties for `user` on the secured listener, as a properties file would hold them."""
        if self.security is None:
            return {}
        password = self.security.admin_password if user == ADMIN else self.security.users[user]
        return {"security.protocol": "SASL_SSL", "sasl.mechanism": SCRAM, "sasl.jaas.config": _jaas(user, password),
                "ssl.truststore.location": str(self.truststore), "ssl.truststore.type": "PKCS12",
                "ssl.truststore.password": self.security.store_password}

    @property
    def admin(self) -> KafkaSettings:
        """Settings of the super user (all a plain broker needs is its address)."""
        return KafkaSettings(self.bootstrap_servers, self.client_properties(ADMIN))

    def _make_tls(self) -> None:
        """A self-signed certificate for 127.0.0.1 and localhost (SAN), in a PKCS12 keystore, exported as PEM
        and imported into a PKCS12 truststore."""
        assert self.security is not None
        tls = self.truststore.parent
        if self.truststore.exists():
            return
        tls.mkdir(parents=True, exist_ok=True)
        keystore, store_pass = tls / "broker.p12", self.security.store_password
        _keytool("-genkeypair", "-keystore", str(keystore), "-storetype", "PKCS12", "-storepass", store_pass,
                 "-alias", "broker", "-keyalg", "RSA", "-keysize", "2048", "-validity", "30",
                 "-dname", "CN=localhost", "-ext", "SAN=ip:127.0.0.1,dns:localhost")
        _keytool("-exportcert", "-rfc", "-keystore", str(keystore), "-storetype", "PKCS12", "-storepass",
                 store_pass, "-alias", "broker", "-file", str(self.ca_pem))
        _keytool("-importcert", "-noprompt", "-keystore", str(self.truststore), "-storetype", "PKCS12",
                 "-storepass", store_pass, "-alias", "broker", "-file", str(self.ca_pem))

    def _listener_settings(self, controller_port: int) -> dict[str, str]:
        controller = f"CONTROLLER://127.0.0.1:{controller_port}"
        if self.security is None:
            return {
                "listeners": f"PLAINTEXT://127.0.0.1:{self.port},{controller}",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                "inter.broker.listener.name": "PLAINTEXT",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            }
        self._make_tls()
        store_pass = self.security.store_password
        return {
            "listeners": f"SASL_SSL://127.0.0.1:{self.port},{controller}",
            "advertised.listeners": f"SASL_SSL://127.0.0.1:{self.port}",
            # The controller listener stays PLAINTEXT, bound to loopback only.
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL",
            "inter.broker.listener.name": "SASL_SSL",
            "sasl.enabled.mechanisms": SCRAM,
            "sasl.mechanism.inter.broker.protocol": SCRAM,
            f"listener.name.sasl_ssl.{SCRAM.lower()}.sasl.jaas.config": _jaas(ADMIN, self.security.admin_password),
            "ssl.keystore.location": str(self.truststore.parent / "broker.p12"),
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.password": store_pass,
            "ssl.key.password": store_pass,
            "ssl.truststore.location": str(self.truststore),
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.password": store_pass,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "false",
            # The broker reaches its own controller over the loopback PLAINTEXT listener as ANONYMOUS.
            "super.users": f"User:{ADMIN};User:ANONYMOUS",
        }

    def _scram_args(self) -> list[str]:
        if self.security is None:
            return []
        users = {ADMIN: self.security.admin_password, **self.security.users}
        return [arg for name, password in users.items()
                for arg in ("--add-scram", f"{SCRAM}=[name={name},password={password}]")]

    def _write_config(self) -> Path:
        controller_port = free_port()
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
            **self._listener_settings(controller_port),
            "controller.listener.names": "CONTROLLER",
            "log.dirs": str(self.data_dir / "logs"),
            **SMALL_TEST_CLUSTER,
        }
        path = self.data_dir / "server.properties"
        path.touch(mode=0o600)  # holds the admin's password when secured
        path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        (self.data_dir / "log4j2.properties").write_text(LOG4J2_PROPERTIES)
        return path

    def _java_cmd(self, main_class: str, *args: str) -> list[str]:
        return [
            connectors.java_executable(), *JVM_OPTS,
            f"-Dlog4j2.configurationFile={self.data_dir / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.data_dir}",
            "-cp", jars.kafka_broker_classpath(), main_class, *args,
        ]  # fmt: skip

    def start(self, timeout: float = 60) -> LocalKafkaBroker:
        if self._proc is not None:
            raise RuntimeError("broker already started")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        config = self._write_config()
        if not (self.data_dir / "logs" / "meta.properties").exists():  # a kept --data-dir is formatted once
            fmt = subprocess.run(
                self._java_cmd("kafka.tools.StorageTool", "format", "-t", new_cluster_id(), "-c", str(config),
                               *self._scram_args()),
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if fmt.returncode != 0:
                raise RuntimeError(f"formatting Kafka storage failed:\n{fmt.stdout}{fmt.stderr}")
        with open(self.data_dir / "kafka.out", "ab") as out:  # the JVM's own stdout/stderr, not ours
            self._proc = subprocess.Popen(
                self._java_cmd("kafka.Kafka", str(config)), stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                preexec_fn=die_with_parent,
            )
        atexit.register(self.stop)  # no orphan JVM holding the port if the caller forgets stop()
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise RuntimeError(f"Kafka exited with {self._proc.returncode}:\n{self._log_tail()}")
            if self._serves_metadata():
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"Kafka not ready after {timeout}s on {self.bootstrap_servers}:\n{self._log_tail()}")
            time.sleep(0.2)

    def _serves_metadata(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                pass
            admin = KafkaAdminClient(**self.admin.python_kwargs(), request_timeout_ms=5000)
        except (OSError, KafkaError):
            return False
        try:
            # Listing brokers, not just connecting: topics can be created only once the broker is unfenced.
            return bool(admin.describe_cluster()["brokers"])
        except KafkaError:
            return False
        finally:
            admin.close()

    def _log_tail(self, lines: int = 40) -> str:
        text = ""
        for name in ("kafka.out", "server.log"):
            path = self.data_dir / name
            if path.exists():
                text += "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) + "\n"
        return text

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM (Kafka's clean shutdown), SIGKILL after `timeout`; removes a data dir it created."""
        atexit.unregister(self.stop)
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._owns_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def wait(self) -> int:
        """Block until the broker process exits; returns its exit code."""
        assert self._proc is not None, "broker not started"
        return self._proc.wait()

    def __enter__(self) -> LocalKafkaBroker:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def create_topic(kafka: KafkaSettings | str, name: str, partitions: int = 1, timeout: float = 30,
                 configs: dict[str, str] | None = None) -> None:
    """Create a topic (replication factor 1, topic `configs`) and return once its metadata shows every
    partition."""
    settings = KafkaSettings.of(kafka)
    admin = KafkaAdminClient(**settings.python_kwargs())
    try:
        # Raises TopicAlreadyExistsError (and other broker errors) itself.
        admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1,
                                      topic_configs=configs or {})])
        deadline = time.monotonic() + timeout
        while topic_partition_count(settings, name) != partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {name!r} not visible with {partitions} partitions after {timeout}s")
            time.sleep(0.1)
    finally:
        admin.close()


def grant_isrflow_acls(admin: KafkaSettings, user: str, events_topic: str, decisions_topic: str) -> None:
    """The ACLs `isrflow run` needs, no more: read and describe the events topic (the Spark source and the
    single-partition check), write/read/describe the decisions topic (the transactional publisher reads its
    tail to skip a re-run batch), its transactional ids (prefix `isrflow-`) and the Spark source's consumer
    groups (prefix `spark-kafka-source`)."""
    principal = f"User:{user}"
    wanted = [
        (Resource.TOPIC, events_topic, ACLResourcePatternType.LITERAL, (ACLOperation.READ, ACLOperation.DESCRIBE)),
        (Resource.TOPIC, decisions_topic, ACLResourcePatternType.LITERAL,
         (ACLOperation.WRITE, ACLOperation.READ, ACLOperation.DESCRIBE)),
        (Resource.TRANSACTIONAL_ID, "isrflow-", ACLResourcePatternType.PREFIXED,
         (ACLOperation.WRITE, ACLOperation.DESCRIBE)),
        (Resource.GROUP, "spark-kafka-source", ACLResourcePatternType.PREFIXED, (ACLOperation.READ,)),
    ]
    acls = [ACL(principal, "*", op, ACLPermissionType.ALLOW, ResourcePattern(kind, name, pattern))
            for kind, name, pattern, ops in wanted for op in ops]
    client = KafkaAdminClient(**admin.python_kwargs())
    try:
        result = client.create_acls(acls)
        if result["failed"]:
            raise RuntimeError(f"creating ACLs failed: {result['failed']}")
    finally:
        client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m streaming.infra.localkafka", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="run a broker in the foreground until Ctrl-C or SIGTERM")
    start.add_argument("--port", type=int, default=9092, help="client port on 127.0.0.1 (0 = any free port)")
    start.add_argument("--data-dir", help="kept between runs; default: a temp dir removed on exit")
    args = parser.parse_args(argv)

    # SIGTERM unwinds like Ctrl-C, so the finally below stops the broker cleanly. SIGINT is set too: a
    # process started in the background by a script inherits it ignored, and Ctrl-C would then do nothing.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.default_int_handler)
    broker = LocalKafkaBroker(port=args.port, data_dir=args.data_dir)
    try:
        broker.start()
        print(
            f"Kafka on {broker.bootstrap_servers} (data {broker.data_dir}, log {broker.log_file}); Ctrl-C to stop",
            flush=True,
        )
        return broker.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        broker.stop()


if __name__ == "__main__":
    sys.exit(main())
