"""Checkpoints and tables on S3: `isrflow run` against the real Kafka broker with every location an s3a:// URI
on a real S3 API server (moto's, a subprocess on 127.0.0.1), reached through Hadoop's S3A connector. Its jars
(hadoop-aws and the AWS SDK bundle, ~645 MB) come from the project's jar machinery on first use; `make
jars-s3a` fetches them ahead. Decisions and audit must equal the local engine, a second process must resume
from the checkpoint and the sequencer state on S3, and the pairing guard must read its markers there."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from streaming.analysis.explain import explain
from streaming.engine.local import run_local, write_outputs
from streaming.infra.localkafka import create_topic, free_port
from streaming.infra.processes import die_with_parent
from streaming.io.delta import comparable, read_delta
from streaming.io.storage import Uri
from streaming.jobs.demo import bundled_scenario, consume_decisions, publish

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

BIN = Path(sys.executable).parent
BUCKET = "isrflow-test"
REGION = "us-east-1"
KEY, SECRET = "isrflow", "isrflow-secret"  # moto takes any credentials; S3A and delta-rs must send some


@dataclass(frozen=True)
class S3Server:
    endpoint: str

    def spark_conf(self) -> list[str]:
        """What a user sets for an S3-compatible endpoint (path-style, plain HTTP) as `run --conf` flags."""
        conf = {"endpoint": self.endpoint, "endpoint.region": REGION, "path.style.access": "true",
                "connection.ssl.enabled": "false", "access.key": KEY, "secret.key": SECRET}
        return [flag for k, v in conf.items() for flag in ("--conf", f"spark.hadoop.fs.s3a.{k}={v}")]

    def env(self) -> dict[str, str]:
        """The same for delta-rs and boto3 (the AWS SDKs' environment variables)."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_REGION": REGION, "AWS_ACCESS_KEY_ID": KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_ALLOW_HTTP": "true"}

    def keys(self) -> list[str]:
        import boto3

        client = boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION, aws_access_key_id=KEY,
                              aws_secret_access_key=SECRET)
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    import boto3

    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with log.open("w") as out:
        process = subprocess.Popen([str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)], stdout=out,
                                   stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the S3 server did not start: {log.read_text()[-2000:]}") from None
                time.sleep(0.2)
        server = S3Server(f"http://127.0.0.1:{port}")
        boto3.client("s3", endpoint_url=server.endpoint, region_name=REGION, aws_access_key_id=KEY,
                     aws_secret_access_key=SECRET).create_bucket(Bucket=BUCKET)
        yield server
    finally:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def s3a_jars() -> str:
    """hadoop-aws and its AWS SDK bundle, fetched once into the cache (Maven Central) and reused after."""
    from streaming.engine.connectors import S3A, jars_in
    from streaming.infra.jars import fetch_set

    fetch_set(S3A)
    return ",".join(str(jar) for jar in jars_in(S3A.dest))


def isrflow_run(command: list[str], log: Path) -> tuple[int, str]:
    """One isrflow process, killed (with its JVM) by its process group if it outlives the timeout."""
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, text=True,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True,
                                   preexec_fn=die_with_parent)
    try:
        code = process.wait(timeout=600)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return code, log.read_text()


def sequenced_events(output: str) -> int:
    """Events the sequencer read, from the run's progress lines."""
    return sum(int(n) for n in re.findall(r"\[sequencer\] batch \d+: (\d+) events in", output))


def test_run_with_checkpoints_and_tables_on_s3(s3: S3Server, s3a_jars: str, kafka_broker: Any, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    lines = bundled_scenario()
    first, rest = lines[:20], lines[20:]
    create_topic(bootstrap, "s3-events", 1)
    create_topic(bootstrap, "s3-decisions", 1)
    publish(bootstrap, "s3-events", first)
    audit, checkpoints = f"s3a://{BUCKET}/lake/audit", f"s3a://{BUCKET}/checkpoints"

    def run(audit_table: str, name: str) -> tuple[int, str]:
        return isrflow_run([
            str(BIN / "isrflow"), "run", "--bootstrap-servers", bootstrap, "--events-topic", "s3-events",
            "--decisions-topic", "s3-decisions", "--audit-table", audit_table, "--checkpoint-dir", checkpoints,
            "--trigger", "available-now", "--state-partitions", "2",
            "--conf", f"spark.jars={s3a_jars}", *s3.spark_conf()], tmp_path / f"{name}.log")

    code, output = run(audit, "first")
    assert code == 0, output[-4000:]
    assert sequenced_events(output) == len(first)

    # A new process resumes: the Kafka offsets, the state store and the sequencer's state come from S3, and
    # only the events published since are read.
    publish(bootstrap, "s3-events", rest)
    code, output = run(audit, "second")
    assert code == 0, output[-4000:]
    assert sequenced_events(output) == len(rest)

    expected = run_local(enumerate(lines))
    assert comparable(consume_decisions(bootstrap, "s3-decisions")) == comparable(expected.decisions)
    for key, value in s3.env().items():
        monkeypatch.setenv(key, value)
    assert comparable(read_delta(Uri(audit))) == comparable(expected.audit)
    assert comparable(read_delta(Uri(f"s3a://{BUCKET}/lake/decisions"))) == comparable(expected.decisions)
    assert len(read_delta(Uri(f"s3a://{BUCKET}/lake/quarantine"))) == expected.quarantined == 1

    # isrflow's own files beside Spark's: the pairing markers and the sequencer's changelog, each written
    # once under its final name (S3A's output streams publish on close: no temp objects, no renames).
    keys = s3.keys()
    assert {"checkpoints/pipeline.json", "lake/audit/_isrflow_pipeline.json"} <= set(keys)
    state = [k.rsplit("/", 1)[1] for k in keys if k.startswith("checkpoints/sequencer-state/")]
    last_batch = max(int(n) for n in re.findall(r"\[sequencer\] batch (\d+):", output))
    assert state and all(re.fullmatch(r"\d+\.(whole|changes)\.json", name) for name in state), state
    assert max(int(name.split(".")[0]) for name in state) == last_batch
    assert not [k for k in keys if k.endswith(".tmp")]

    # The checkpoint belongs to the first audit table: another one is refused, naming the pair.
    other = f"s3a://{BUCKET}/other/audit"
    code, output = run(other, "other")
    assert code == 2, output[-4000:]
    assert f"checkpoint {checkpoints} has progress but audit table {other} has no data" in output
    assert f"Pass the audit table this checkpoint was used with ({audit})" in output

    # The readers after a run: `explain` on the S3 tables (delta-rs) tells what it tells on the local
    # engine's, `inspect` reads the state store on S3 (Spark): each partition's record is its last decision,
    # and `check` runs the quality suite on the audit table and the decisions beside it on S3.
    write_outputs(expected, tmp_path / "local")
    (tmp_path / "local" / "requests.jsonl").unlink(missing_ok=True)  # the local engine's alone (zk rules' requests)
    for topic, partition in sorted({(d["topic"], d["partition"]) for d in expected.decisions})[:3]:
        assert explain(Uri(audit), topic, partition) == explain(tmp_path / "local" / "audit", topic, partition)
    code, output = isrflow_run([str(BIN / "isrflow"), "inspect", checkpoints, "--json", "--conf",
                                f"spark.jars={s3a_jars}", *s3.spark_conf()], tmp_path / "inspect.log")
    assert code == 0, output[-4000:]
    records = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    last = {(d["topic"], d["partition"]): d for d in expected.decisions}  # log order: the last one wins
    assert sorted((r["topic"], r["partition"]) for r in records) == sorted(last)
    for r in records:
        d = last[(r["topic"], r["partition"])]
        assert (r["leader"], r["leader_epoch"], r["isr"]) == (d["leader"], d["leader_epoch"], d["isr"])
    code, output = isrflow_run([str(BIN / "isrflow"), "check", audit, "--conf", f"spark.jars={s3a_jars}",
                                *s3.spark_conf()], tmp_path / "check.log")
    assert code == 0, output[-4000:]
    assert f"{len(expected.audit)} audit rows; decisions: s3a://{BUCKET}/lake/decisions;" in output


def test_hadoop_storage_renames_into_place_where_streams_are_not_abortable(spark: Any, tmp_path: Path) -> None:
    """The other write path (HDFS, ABFS, GCS): Hadoop's local file system through the session's JVM, whose
    output streams publish as they go, so a temp file is renamed over the target."""
    from streaming.io.storage import Storage, StorageError

    storage, directory = Storage(spark), Uri(f"file://{tmp_path}/state")
    target = directory / "0.whole.json"
    during: list[list[str]] = []
    storage.write(target, b'{"v":1}', before_publish=lambda: during.append(storage.names(directory)))
    assert [n for n in during[0] if not n.endswith(".crc")] == ["0.whole.json.tmp"]
    storage.write(target, b'{"v":2}')  # replaces
    assert storage.read_text(target) == '{"v":2}' and (tmp_path / "state" / "0.whole.json").read_text() == '{"v":2}'
    assert [n for n in storage.names(directory) if not n.endswith(".crc")] == ["0.whole.json"]
    assert storage.exists(target) and not storage.exists(directory / "1.whole.json")
    storage.delete(target)
    storage.delete(target)
    with pytest.raises(FileNotFoundError):
        storage.read_bytes(target)
    assert storage.names(directory / "missing") == []
    with pytest.raises(StorageError, match=r"UnsupportedFileSystemException.*the connector of nosuchscheme://"):
        storage.exists(Uri("nosuchscheme://bucket/x"))
