"""`isrflow run`, `isrflow replay kafka://` and `isrflow bridge` against a broker that takes only SASL_SSL
(SCRAM-SHA-512 over TLS) and enforces ACLs, with credentials from a properties file and the environment;
nothing the runs wrote holds the password."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_install import SPARK_LOG
from test_kraft_bridge import published

from streaming.engine.local import run_local
from streaming.errors import UsageError
from streaming.infra.localkafka import BrokerSecurity, LocalKafkaBroker, create_topic, grant_isrflow_acls
from streaming.io.delta import comparable, read_delta
from streaming.io.kafkaclient import KafkaSettings
from streaming.jobs.demo import bundled_scenario, consume_decisions, publish
from streaming.kraft.convert import convert, event_offset
from streaming.kraft.metadatalog import read_metadata_log

pytestmark = [pytest.mark.kafka]

USER = "isrflow"
# Distinctive enough that a grep finds nothing else; never printed by the test itself.
PASSWORD = "Pw-" + os.urandom(9).hex()
PASSWORD_ENV = "ISRFLOW_TEST_KAFKA_PASSWORD"


@pytest.fixture(scope="module")
def secured_broker() -> Iterator[LocalKafkaBroker]:
    with LocalKafkaBroker(security=BrokerSecurity(users={USER: PASSWORD})) as broker:
        yield broker


def properties_file(broker: LocalKafkaBroker, path: Path, password: str) -> Path:
    """The client's properties, as an operator writes them for Kafka's own tools."""
    props = {**broker.client_properties(USER), "ssl.truststore.password": broker.security.store_password}  # type: ignore[union-attr]
    props["sasl.jaas.config"] = ("org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
                                 f'    username="{USER}" password="{password}";')
    path.write_text("# isrflow on the secured test broker\n" + "".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def isrflow(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streaming", *args], capture_output=True, text=True,
                          timeout=600, env={**os.environ, **(env or {})}, check=False)


def files_holding(root: Path, secret: str) -> list[str]:
    needle = secret.encode()
    return [str(p) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_plain_client_is_refused(secured_broker: LocalKafkaBroker) -> None:
    """The listener really is secured: a client without credentials, or with a wrong password, gets nothing,
    and is told so in words."""
    from streaming.io.eventlog import topic_partition_count

    wrong = dict(secured_broker.client_properties(USER),
                 **{"sasl.jaas.config": secured_broker.client_properties(USER)["sasl.jaas.config"]
                    .replace(PASSWORD, "wrong")})
    for settings in (KafkaSettings(secured_broker.bootstrap_servers),
                     KafkaSettings(secured_broker.bootstrap_servers, wrong)):
        with pytest.raises(UsageError, match="refused the connection's TLS or SASL login"):
            topic_partition_count(settings, "__consumer_offsets")


def test_run_and_replay_on_sasl_ssl_leak_no_secret(secured_broker: LocalKafkaBroker, tmp_path: Path) -> None:
    admin = secured_broker.admin
    lines = bundled_scenario()
    create_topic(admin, "sec-events", 1)
    create_topic(admin, "sec-decisions", 1)
    grant_isrflow_acls(admin, USER, "sec-events", "sec-decisions")
    publish(admin, "sec-events", lines)

    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    # run: the password comes from the environment (the file names it); replay: written in the file.
    run_props = properties_file(secured_broker, secrets_dir / "run.properties", f"${{env:{PASSWORD_ENV}}}")
    replay_props = properties_file(secured_broker, secrets_dir / "replay.properties", PASSWORD)
    out = tmp_path / "out"
    spark_logs = out / "spark-events"
    spark_logs.mkdir(parents=True)
    run = isrflow("run", "--bootstrap-servers", secured_broker.bootstrap_servers, "--events-topic", "sec-events",
                  "--decisions-topic", "sec-decisions", "--audit-table", str(out / "lake" / "audit"),
                  "--checkpoint-dir", str(out / "ckpt"), "--trigger", "available-now", "--state-partitions", "2",
                  "--kafka-option-file", str(run_props), "--kafka-option", "maxOffsetsPerTrigger=20",
                  "--conf", f"spark.local.dir={out / 'spark-local'}",
                  "--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir={spark_logs}",
                  # Spark's and the Kafka clients' own INFO logs too: they must not hold the secret either.
                  "--verbose", env={PASSWORD_ENV: PASSWORD})
    assert run.returncode == 0, run.stderr[-3000:]
    # --verbose gives Spark its own logging back (test_install checks that without it there is none): its
    # default profile, and the warning isrflow's quiet file hides on every streaming run.
    assert "Using Spark's default log4j profile" in run.stderr
    assert any("WARN MicroBatchExecution: Disabling AQE" in line for line in SPARK_LOG.findall(run.stderr))
    replay = isrflow("replay", f"kafka://{secured_broker.bootstrap_servers}/sec-events", "--out",
                     str(out / "replay"), "--engine", "local", "--kafka-option-file", str(replay_props))
    assert replay.returncode == 0, replay.stderr[-3000:]

    expected = run_local(enumerate(lines))
    assert comparable(read_delta(out / "lake" / "decisions")) == comparable(expected.decisions)
    assert comparable(read_delta(out / "lake" / "audit")) == comparable(expected.audit)
    # The sink topic as a downstream consumer with the same credentials reads it (read_committed).
    consumed = consume_decisions(KafkaSettings.load(secured_broker.bootstrap_servers, replay_props), "sec-decisions")
    assert comparable(consumed) == comparable(expected.decisions)
    assert f"{len(expected.decisions)} decisions" in replay.stdout
    assert list(spark_logs.iterdir()), "Spark wrote no event log"

    for name, text in (("run stdout", run.stdout), ("run stderr", run.stderr), ("replay stdout", replay.stdout),
                       ("replay stderr", replay.stderr)):
        assert PASSWORD not in text, name
        assert secured_broker.security.store_password not in text, name  # type: ignore[union-attr]
    assert files_holding(out, PASSWORD) == []
    assert files_holding(out, secured_broker.security.store_password) == []  # type: ignore[union-attr]
    assert (out / "replay" / "report.html").exists()


def test_errors_name_no_secret(secured_broker: LocalKafkaBroker, tmp_path: Path) -> None:
    """A run that fails (no such topic) says why without repeating the credentials it was given."""
    props = properties_file(secured_broker, tmp_path / "client.properties", PASSWORD)
    result = isrflow("run", "--bootstrap-servers", secured_broker.bootstrap_servers, "--events-topic",
                     "no-such-topic", "--decisions-topic", "d", "--audit-table", str(tmp_path / "audit"),
                     "--kafka-option-file", str(props))
    assert result.returncode == 2
    assert "events topic 'no-such-topic' does not exist" in result.stderr
    assert PASSWORD not in result.stdout + result.stderr


def test_bridge_on_sasl_ssl_leaks_no_secret(secured_broker: LocalKafkaBroker, tmp_path: Path) -> None:
    """The bridge follows the secured node's own metadata log into an events topic on it, with credentials
    from a properties file: the topic holds the log's events, once and in order; its output holds no secret."""
    admin = secured_broker.admin
    create_topic(admin, "sec-bridge-events", 1)
    # The bridge writes the events topic and reads its tail back (the offset to resume from).
    grant_isrflow_acls(admin, USER, "sec-bridge-events", "sec-bridge-events")
    props = properties_file(secured_broker, tmp_path / "bridge.properties", PASSWORD)
    metadata = secured_broker.data_dir / "logs" / "__cluster_metadata-0"
    args = ["bridge", "--metadata-dir", str(metadata), "--bootstrap-servers", secured_broker.bootstrap_servers,
            "--events-topic", "sec-bridge-events", "--once", "--kafka-option-file", str(props)]
    first = isrflow(*args)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "published" in first.stdout
    again = isrflow(*args)  # resumes after the last published offset: nothing new, nothing published
    assert again.returncode == 0, again.stderr[-3000:]

    events = published(KafkaSettings.load(secured_broker.bootstrap_servers, props), "sec-bridge-events")
    assert any(e["type"] == "CreateTopic" and e["topic"] == "sec-bridge-events" for _, e in events)
    last = events[-1][0]
    expected = [e for e in convert(read_metadata_log(metadata).records).events if event_offset(e) <= last]
    assert [e for _, e in events] == expected
    for result in (first, again):
        for text in (result.stdout, result.stderr):
            assert PASSWORD not in text
            assert secured_broker.security.store_password not in text  # type: ignore[union-attr]
