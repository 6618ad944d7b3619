"""KafkaSettings: Kafka's client properties in, Spark source options and kafka-python arguments out, secrets
never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from streaming.errors import UsageError
from streaming.io.kafkaclient import REDACTED, KafkaSettings, ScrubbedError, parse_properties, secrets_scrubbed

JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="s3cret!";'


def test_properties_file_syntax() -> None:
    text = ("# comment\n! also a comment\n\nsecurity.protocol=SASL_SSL\nsasl.mechanism : SCRAM-SHA-512\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
            '    username="alice" password="s3cret!";\n')
    assert parse_properties(text) == {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                                      "sasl.jaas.config": JAAS}


def test_file_then_options_then_environment(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text("security.protocol=SSL\nsasl.jaas.config=${env:JAAS}\n")
    s = KafkaSettings.load("h:1", path, {"kafka.security.protocol": "SASL_SSL", "maxOffsetsPerTrigger": "5"},
                           env={"JAAS": JAAS})
    assert s.properties["security.protocol"] == "SASL_SSL"
    assert s.properties["sasl.jaas.config"] == JAAS
    with pytest.raises(UsageError, match=r"\$\{env:JAAS\}, but JAAS is not set"):
        KafkaSettings.load("h:1", path, env={})


def test_spark_options_and_python_kwargs(tmp_path: Path) -> None:
    pem = tmp_path / "ca.pem"
    pem.write_text("not read here")
    s = KafkaSettings("h:1", {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                              "sasl.jaas.config": JAAS, "ssl.truststore.location": str(pem),
                              "ssl.truststore.type": "PEM", "ssl.endpoint.identification.algorithm": "",
                              "request.timeout.ms": "5000", "maxOffsetsPerTrigger": "10",
                              "kafkaConsumer.pollTimeoutMs": "1000"})
    assert s.spark_options() == {
        "kafka.bootstrap.servers": "h:1", "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512", "kafka.sasl.jaas.config": JAAS,
        "kafka.ssl.truststore.location": str(pem), "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.endpoint.identification.algorithm": "", "kafka.request.timeout.ms": "5000",
        "maxOffsetsPerTrigger": "10", "kafkaConsumer.pollTimeoutMs": "1000"}
    assert s.python_kwargs() == {
        "bootstrap_servers": "h:1", "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "alice", "sasl_plain_password": "s3cret!", "ssl_cafile": str(pem),
        "ssl_check_hostname": False, "request_timeout_ms": 5000}


def test_unsupported_by_kafka_python_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="mutual TLS"):
        KafkaSettings("h:1", {"ssl.keystore.location": "k.p12"}).python_kwargs()
    with pytest.raises(UsageError, match="PEM or PKCS12"):
        KafkaSettings("h:1", {"security.protocol": "SSL", "ssl.truststore.location": "t.jks"}).python_kwargs()
    with pytest.raises(UsageError, match="PLAIN and SCRAM"):
        KafkaSettings("h:1", {"sasl.jaas.config": "OAuthBearerLoginModule required;"}).python_kwargs()


def test_secrets_are_redacted_and_scrubbed() -> None:
    s = KafkaSettings("h:1", {"sasl.jaas.config": JAAS, "ssl.truststore.password": "tpw-1",
                              "security.protocol": "SASL_SSL"})
    assert s.redacted() == {"sasl.jaas.config": REDACTED, "ssl.truststore.password": REDACTED,
                            "security.protocol": "SASL_SSL"}
    assert "s3cret!" not in repr(s) and "tpw-1" not in str(s)
    assert s.scrub("login as alice with s3cret! and tpw-1") == f"login as alice with {REDACTED} and {REDACTED}"
    with pytest.raises(ScrubbedError) as caught, secrets_scrubbed(s):
        raise RuntimeError(f"options were {dict(s.properties)}")
    assert "s3cret!" not in str(caught.value) and "tpw-1" not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    with pytest.raises(UsageError) as usage, secrets_scrubbed(s):
        raise UsageError("bad value s3cret!")
    assert str(usage.value) == f"bad value {REDACTED}"
    with pytest.raises(KeyError), secrets_scrubbed(s):  # nothing secret in it: raised as it was
        raise KeyError("x")
