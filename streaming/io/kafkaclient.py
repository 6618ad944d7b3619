"""One description of how to reach the Kafka cluster, shared by every client isrflow opens.

Settings are Kafka's own client property names (`security.protocol`, `sasl.mechanism`, `sasl.jaas.config`,
`ssl.truststore.location`, ...), read from a properties file in the syntax Kafka's tools take
(`--command-config`), from `--kafka-option k=v`, and from the environment through `${env:NAME}` placeholders
(the syntax of Kafka's EnvVarConfigProvider), so a password need not be written in a file or on a command line.
From them come the Spark Kafka source's `kafka.*` options and kafka-python's keyword arguments.

Secrets (`sasl.jaas.config`, `*.password`, `ssl.key*`) are never printed: `redacted()` is what may be shown,
and `scrub()` removes their values from any text, such as an exception message, before it reaches a user.
"""

from __future__ import annotations

import os
import re
import tempfile
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streaming.errors import UsageError

REDACTED = "[redacted]"
_ENV = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")
# username="..." / password="..." inside a JAAS line (Kafka's Plain and Scram login modules).
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')

# Kafka property -> kafka-python keyword, for the ones that take the value as it is.
_PLAIN_KWARGS = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.kerberos.service.name": "sasl_kerberos_service_name",
    "client.id": "client_id",
}
_INT_KWARGS = {
    "request.timeout.ms": "request_timeout_ms",
    "retry.backoff.ms": "retry_backoff_ms",
    "reconnect.backoff.ms": "reconnect_backoff_ms",
    "reconnect.backoff.max.ms": "reconnect_backoff_max_ms",
    "metadata.max.age.ms": "metadata_max_age_ms",
    "connections.max.idle.ms": "connections_max_idle_ms",
}


def is_secret(key: str) -> bool:
    key = key.lower().removeprefix("kafka.")
    return key == "sasl.jaas.config" or key.endswith(".password") or key.startswith("ssl.key")


def redact(options: Mapping[str, str]) -> dict[str, str]:
    """The options as they may be printed: secret values replaced."""
    return {k: REDACTED if is_secret(k) else v for k, v in options.items()}


def parse_properties(text: str, source: str = "properties") -> dict[str, str]:
    """Java properties-file syntax as Kafka's tools read it: `key=value` or `key: value`, `#`/`!` comments,
    a trailing backslash continues the line (a JAAS line is often split this way)."""
    out: dict[str, str] = {}
    logical: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical.append(line[:-1])
            continue
        logical.append(line)
        entry, logical = "".join(logical), []
        match = re.match(r"([^=:\s]+)\s*[=:]?\s*(.*)$", entry)
        if not match or not match.group(1):
            raise UsageError(f"{source}:{number}: expected key=value")
        out[match.group(1)] = match.group(2)
    return out


def _expand_env(key: str, value: str, env: Mapping[str, str]) -> str:
    def lookup(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            raise UsageError(f"Kafka option {key} refers to ${{env:{name}}}, but {name} is not set")
        return env[name]

    return _ENV.sub(lookup, value)


@dataclass(frozen=True)
class KafkaSettings:
    """The bootstrap servers and the client properties (Kafka's names, `kafka.` prefix removed)."""

    bootstrap_servers: str
    properties: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, settings: KafkaSettings | str) -> KafkaSettings:
        """Settings as given, or a plain (unsecured) cluster from a bootstrap string."""
        return settings if isinstance(settings, KafkaSettings) else cls(settings)

    @classmethod
    def load(cls, bootstrap_servers: str, option_file: Path | None = None,
             options: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None) -> KafkaSettings:
        """The properties file first, then `options` over it; `${env:NAME}` placeholders expanded. Keys may
        carry the Spark source's `kafka.` prefix. Kafka's property names are lower case; a key with an upper-case
        letter is a Spark source option (`maxOffsetsPerTrigger`, `kafkaConsumer.pollTimeoutMs`, ...)."""
        merged: dict[str, str] = {}
        if option_file is not None:
            try:
                text = Path(option_file).read_text()
            except OSError as exc:
                raise UsageError(f"cannot read --kafka-option-file {option_file}: {exc.strerror}") from None
            merged.update(parse_properties(text, str(option_file)))
        merged.update(options or {})
        env = os.environ if env is None else env
        props = {k.removeprefix("kafka."): _expand_env(k, v, env) for k, v in merged.items()}
        # A properties file may name the cluster; --bootstrap-servers wins.
        file_bootstrap = props.pop("bootstrap.servers", "")
        return cls(bootstrap_servers or file_bootstrap, props)

    def with_bootstrap(self, bootstrap_servers: str) -> KafkaSettings:
        return KafkaSettings(bootstrap_servers, self.properties)

    @property
    def kafka_properties(self) -> dict[str, str]:
        """Client properties (dotted names; Spark-only source options such as maxOffsetsPerTrigger excluded)."""
        return {k: v for k, v in self.properties.items() if k == k.lower()}

    @property
    def source_options(self) -> dict[str, str]:
        """The Spark Kafka source options that are not client properties (maxOffsetsPerTrigger, ...)."""
        return {k: v for k, v in self.properties.items() if k != k.lower()}

    def spark_options(self) -> dict[str, str]:
        """Options for Spark's Kafka source: every client property under `kafka.`, then the source's own."""
        return {"kafka.bootstrap.servers": self.bootstrap_servers,
                **{f"kafka.{k}": v for k, v in self.kafka_properties.items()}, **self.source_options}

    def python_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for kafka-python's KafkaProducer, KafkaConsumer and KafkaAdminClient."""
        props = self.kafka_properties
        kwargs: dict[str, Any] = {"bootstrap_servers": self.bootstrap_servers}
        for key, value in props.items():
            if key in _PLAIN_KWARGS:
                kwargs[_PLAIN_KWARGS[key]] = value
            elif key in _INT_KWARGS:
                kwargs[_INT_KWARGS[key]] = int(value)
            elif key.startswith("ssl.keystore.") or key.startswith("ssl.key."):
                raise UsageError(f"{key}: client certificates (mutual TLS) are not supported by isrflow's "
                                 "kafka-python clients; use SASL over TLS")
        if "sasl.jaas.config" in props:
            kwargs.update(_jaas_credentials(props["sasl.jaas.config"]))
        if props.get("security.protocol", "PLAINTEXT").upper() in ("SSL", "SASL_SSL"):
            kwargs.update(_tls_kwargs(props))
        return kwargs

    def secrets(self) -> list[str]:
        """Every secret value, and the passwords inside a JAAS line, longest first (for `scrub`)."""
        values = [v for k, v in self.properties.items() if is_secret(k) and v]
        for key, value in self.properties.items():
            if key == "sasl.jaas.config":
                values += [v for name, v in _JAAS_OPTION.findall(value) if name.lower() == "password" and v]
        return sorted(set(values), key=len, reverse=True)

    def scrub(self, text: str) -> str:
        for secret in self.secrets():
            text = text.replace(secret, REDACTED)
        return text

    def redacted(self) -> dict[str, str]:
        return redact(self.properties)

    def __repr__(self) -> str:  # a settings object in a log line or traceback shows no secret
        return f"KafkaSettings({self.bootstrap_servers!r}, {self.redacted()!r})"

    __str__ = __repr__


class ScrubbedError(RuntimeError):
    """An error whose text (traceback included) named a secret, re-raised with the secret replaced."""


@contextmanager
def secrets_scrubbed(settings: KafkaSettings) -> Iterator[None]:
    """Errors raised inside leave without the secrets of `settings` in their message or traceback text."""
    try:
        yield
    except Exception as exc:
        text = "".join(traceback.format_exception(exc))
        if settings.scrub(text) == text:
            raise
        if isinstance(exc, UsageError):
            raise UsageError(settings.scrub(str(exc))) from None
        raise ScrubbedError(settings.scrub(text)) from None


def _jaas_credentials(jaas: str) -> dict[str, str]:
    """username/password of a PlainLoginModule or ScramLoginModule line, as kafka-python takes them."""
    if "PlainLoginModule" not in jaas and "ScramLoginModule" not in jaas:
        raise UsageError("sasl.jaas.config: isrflow's kafka-python clients support the PLAIN and SCRAM login "
                         "modules (OAUTHBEARER and GSSAPI only through the Spark source)")
    found = {name.lower(): value for name, value in _JAAS_OPTION.findall(jaas)}
    if "username" not in found or "password" not in found:
        raise UsageError('sasl.jaas.config needs username="..." and password="..."')
    return {"sasl_plain_username": found["username"], "sasl_plain_password": found["password"]}


def _tls_kwargs(props: Mapping[str, str]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        # Kafka's default `https` checks the broker's name against its certificate; an empty value turns it off.
        "ssl_check_hostname": props.get("ssl.endpoint.identification.algorithm", "https").lower() == "https",
    }
    location = props.get("ssl.truststore.location")
    if location:
        kind = props.get("ssl.truststore.type", "JKS" if location.endswith(".jks") else "PKCS12").upper()
        kwargs["ssl_cafile"] = _pem_truststore(Path(location), kind, props.get("ssl.truststore.password"))
    return kwargs


_PEM_CACHE: dict[tuple[str, float], str] = {}


def _pem_truststore(location: Path, kind: str, password: str | None) -> str:
    """kafka-python (Python's ssl module) reads PEM only; a PKCS12 truststore is converted once, its
    certificates written to a private temp file. JKS has no Python reader: convert it with keytool."""
    if kind == "PEM":
        return str(location)
    if kind != "PKCS12":
        raise UsageError(f"ssl.truststore.type={kind}: the kafka-python clients need PEM or PKCS12 "
                         f"(convert with `keytool -importkeystore -srckeystore {location.name} "
                         "-destkeystore truststore.p12 -deststoretype PKCS12`)")
    try:
        stamp = location.stat().st_mtime
    except OSError as exc:
        raise UsageError(f"ssl.truststore.location {location}: {exc.strerror}") from None
    cached = _PEM_CACHE.get((str(location), stamp))
    if cached and Path(cached).exists():
        return cached
    from cryptography.hazmat.primitives.serialization import Encoding, pkcs12

    try:
        bundle = pkcs12.load_pkcs12(location.read_bytes(), password.encode() if password else None)
    except ValueError:
        raise UsageError(f"ssl.truststore.location {location}: not a PKCS12 truststore, or wrong "
                         "ssl.truststore.password") from None
    certs = [c.certificate for c in bundle.additional_certs]
    if bundle.cert is not None:
        certs.append(bundle.cert.certificate)
    if not certs:
        raise UsageError(f"ssl.truststore.location {location}: no certificates in it")
    fd, pem = tempfile.mkstemp(prefix="isrflow-truststore-", suffix=".pem")
    with os.fdopen(fd, "wb") as fh:
        fh.write(b"".join(c.public_bytes(Encoding.PEM) for c in certs))
    _PEM_CACHE[(str(location), stamp)] = pem
    return pem
