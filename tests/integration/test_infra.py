"""The infrastructure the pipeline stands on, for real: the local KRaft broker, kafka-python (plain and
transactional), Spark's Kafka source and Delta Lake."""

from __future__ import annotations

import json
import uuid

import pytest
from kafka import KafkaConsumer, KafkaProducer

from streaming.infra.localkafka import LocalKafkaBroker, create_topic, topic_partition_count

RECORDS = [{"seq": i, "event": "BrokerChange", "broker": i + 1} for i in range(3)]


def _unique(prefix: str) -> str:
    # One broker serves the whole session, so every test gets its own topics.
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _consume(bootstrap: str, topic: str, expected: int, **config: object) -> list[dict]:
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
        value_deserializer=json.loads,
        **config,
    )
    try:
        values = []
        for message in consumer:
            values.append(message.value)
            if len(values) == expected:
                break
        return values
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def json_topic(kafka_broker: LocalKafkaBroker) -> str:
    """A 1-partition topic holding RECORDS as JSON."""
    topic = _unique("events")
    create_topic(kafka_broker.bootstrap_servers, topic)
    producer = KafkaProducer(
        bootstrap_servers=kafka_broker.bootstrap_servers,
        value_serializer=lambda v: json.dumps(v).encode(),
    )
    for record in RECORDS:
        producer.send(topic, record)
    producer.flush()
    producer.close()
    return topic


@pytest.mark.kafka
def test_topics_and_json_roundtrip(kafka_broker: LocalKafkaBroker, json_topic: str) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    wide = _unique("wide")
    create_topic(bootstrap, wide, partitions=3)

    assert topic_partition_count(bootstrap, json_topic) == 1
    assert topic_partition_count(bootstrap, wide) == 3
    assert topic_partition_count(bootstrap, _unique("missing")) == 0
    assert _consume(bootstrap, json_topic, expected=3) == RECORDS


@pytest.mark.spark
def test_delta_roundtrip(spark, tmp_path) -> None:
    path = str(tmp_path / "delta")
    spark.createDataFrame([("t", 0, 1), ("t", 1, 2)], "topic string, partition int, leader int").write.format(
        "delta"
    ).save(path)

    rows = spark.read.format("delta").load(path).orderBy("partition").collect()
    assert [(r.topic, r.partition, r.leader) for r in rows] == [("t", 0, 1), ("t", 1, 2)]
    assert spark.sql(f"DESCRIBE HISTORY delta.`{path}`").count() == 1


@pytest.mark.spark
def test_a_table_whose_first_commit_was_cut_short_is_created_again(spark, tmp_path) -> None:
    # What a process killed inside the commands table's first commit leaves (make test's fault trials): a data file
    # and a _delta_log folder holding no version. Delta cannot read that (DELTA_SCHEMA_NOT_SET), so the partition
    # query, which streams from the table, could never start again.
    from schemas.tables import COMMAND
    from streaming.engine.partitions import ensure_delta_table
    from streaming.io.storage import Storage

    table = tmp_path / "commands"
    (table / "_delta_log" / "_staged_commits").mkdir(parents=True)
    (table / "part-00000-cut-short.snappy.parquet").write_bytes(b"PAR1")
    assert not Storage().is_delta_table(table)
    ensure_delta_table(spark, table, COMMAND)
    assert Storage().is_delta_table(table)
    assert spark.read.format("delta").load(str(table)).count() == 0
    assert spark.read.format("delta").load(str(table)).columns == [f.name for f in COMMAND.to_spark().fields]


@pytest.mark.kafka
@pytest.mark.spark
def test_spark_batch_reads_kafka(spark, kafka_broker: LocalKafkaBroker, json_topic: str) -> None:
    df = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kafka_broker.bootstrap_servers)
        .option("subscribe", json_topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    rows = df.selectExpr("CAST(value AS STRING) AS value", "offset").orderBy("offset").collect()
    assert [json.loads(r.value) for r in rows] == RECORDS
    assert [r.offset for r in rows] == [0, 1, 2]


@pytest.mark.kafka
def test_transactional_producer_read_committed(kafka_broker: LocalKafkaBroker) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = _unique("decisions")
    create_topic(bootstrap, topic)
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        transactional_id=_unique("isrflow-test"),
        value_serializer=lambda v: json.dumps(v).encode(),
    )
    producer.init_transactions()
    producer.begin_transaction()
    producer.send(topic, {"decision": "aborted"})
    producer.abort_transaction()
    producer.begin_transaction()
    producer.send(topic, {"decision": 1})
    producer.send(topic, {"decision": 2})
    producer.commit_transaction()
    producer.close()

    # The aborted record sits in the log, but a read_committed consumer must skip it.
    assert _consume(bootstrap, topic, expected=2, isolation_level="read_committed") == [
        {"decision": 1},
        {"decision": 2},
    ]


def test_a_child_started_with_die_with_parent_dies_with_a_killed_parent() -> None:
    """The brokers, Spark nodes and `isrflow run` processes the suite starts are killed with the process that
    started them, even when it dies by SIGKILL (no fixture teardown, no atexit)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    parent = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, time\n"
         "from streaming.infra.processes import die_with_parent\n"
         "child = subprocess.Popen(['sleep', '600'], preexec_fn=die_with_parent)\n"
         "print(child.pid, flush=True)\n"
         "time.sleep(600)\n"], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())  # type: ignore[union-attr]
        os.kill(child, 0)  # running
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(child, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
        os.kill(child, signal.SIGKILL)
        raise AssertionError(f"child {child} outlived its killed parent")
    finally:
        parent.kill()
