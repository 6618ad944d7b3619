"""The Spark pipeline against the local engine (the oracle), on real Spark, Delta and Kafka."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from scraping import run_scraped, scraped_value

from statemachine.controller import ControllerConfig
from streaming.engine.local import run_local, write_outputs
from streaming.infra.localkafka import create_topic
from streaming.infra.scenario import ScenarioBuilder, round_robin_assignment
from streaming.io.delta import comparable, read_decisions_jsonl, read_delta
from streaming.io.eventlog import read_event_log
from streaming.jobs.demo import bundled_scenario, consume_decisions, publish
from streaming.jobs.replay import replay_spark

pytestmark = [pytest.mark.spark]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def outputs(out: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        "audit": comparable(read_delta(out / "audit")),
        "decisions": comparable(read_decisions_jsonl(out / "decisions.jsonl")),
        "quarantine": comparable(read_delta(out / "quarantine")),
        "requests": comparable(read_delta(out / "requests")),  # the zk rules' (ControllerConfig's default)
    }


def local_outputs(log: Path, out: Path) -> dict[str, list[dict[str, Any]]]:
    write_outputs(run_local(read_event_log(log)), out)
    return outputs(out)


def assert_same(actual: dict[str, list[dict[str, Any]]], expected: dict[str, list[dict[str, Any]]]) -> None:
    for table in ("decisions", "audit", "quarantine", "requests"):
        assert len(actual[table]) == len(expected[table]), table
        for a, e in zip(actual[table], expected[table], strict=True):
            assert a == e, f"{table} differs"


def ordering_log() -> ScenarioBuilder:
    """Events whose outcome depends on their order inside one micro-batch."""
    b = ScenarioBuilder()
    for broker in (1, 2, 3):
        b.start_broker(broker)
    # A topic created, then its leader's broker failing, in the same batch.
    b.emit("CreateTopic", topic="t", assignment=round_robin_assignment(2, [1, 2, 3], 3))
    b.fail_broker(1)
    # A broker failing and starting again.
    b.fail_broker(2)
    b.start_broker(2)
    # An ISR change before and after a failure: the second one carries a fenced epoch.
    b.catch_up(1)
    b.alter_isr("t", 1, [2, 3])
    stale = dict(b.events[-1], event_id="late-isr", isr=[2])
    b.fail_broker(3)
    b.events.append(stale)
    # A controller failover followed by events of the old controller.
    b.controller_epoch = 2
    b.emit("ControllerChange", controller_id=2)
    b.emit("ElectLeaders", election_type="PREFERRED", partitions=None, controller_epoch=1)
    return b


def test_bundled_scenario_spark_equals_local(spark: Any, tmp_path: Path) -> None:
    log = tmp_path / "incident.jsonl"
    log.write_bytes(b"\n".join(bundled_scenario()) + b"\n")
    replay_spark(spark, log, tmp_path / "spark", ControllerConfig())
    assert_same(outputs(tmp_path / "spark"), local_outputs(log, tmp_path / "local"))
    quarantined = read_delta(tmp_path / "spark" / "quarantine")
    assert [q["source_offset"] for q in quarantined] == [38]
    assert "not JSON" in quarantined[0]["error"]


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.jsonl")))
def test_examples_spark_equals_local(spark: Any, tmp_path: Path, example: str) -> None:
    log = EXAMPLES / example
    replay_spark(spark, log, tmp_path / "spark", ControllerConfig())
    assert_same(outputs(tmp_path / "spark"), local_outputs(log, tmp_path / "local"))


@pytest.mark.parametrize("batch_size", [2, 7, 0])
def test_micro_batch_boundaries_do_not_change_results(spark: Any, tmp_path: Path, batch_size: int) -> None:
    log = ordering_log().write(tmp_path / "ordering.jsonl")
    replay_spark(spark, log, tmp_path / "spark", ControllerConfig(), batch_size=batch_size)
    assert_same(outputs(tmp_path / "spark"), local_outputs(log, tmp_path / "local"))
    batches = {a["batch_id"] for a in read_delta(tmp_path / "spark" / "audit")}
    events = len(log.read_text().splitlines())
    if batch_size:  # really that many events per micro-batch, state carried across them
        assert len(batches) == -(-events // batch_size) > 1
    if batch_size == 0:
        assert len(batches) == 1


def test_order_inside_one_micro_batch(spark: Any, tmp_path: Path) -> None:
    log = ordering_log().write(tmp_path / "ordering.jsonl")
    replay_spark(spark, log, tmp_path / "spark", ControllerConfig())
    audit = read_delta(tmp_path / "spark" / "audit")
    assert len({a["batch_id"] for a in audit}) == 1
    by_event: dict[str, list[dict[str, Any]]] = {}
    for row in audit:
        by_event.setdefault(row["event_id"], []).append(row)
    events = [json.loads(line) for line in log.read_text().splitlines()]
    ids = {e["type"] + ":" + str(e.get("broker_id", "")) + ":" + e.get("change", ""): e["event_id"] for e in events}
    # The broker failing right after creation moves t-0's leadership (1 -> 2) within the same batch.
    failure_1 = {(r["topic"], r["partition"]): r for r in by_event[ids["BrokerChange:1:FAILURE"]]}
    assert failure_1[("t", 0)]["leader_before"] == 1 and failure_1[("t", 0)]["leader_after"] == 2
    assert failure_1[("t", 0)]["election"] == "OFFLINE"
    # The same ISR change from t-1's leader, broker 3, accepted before broker 3 failed, is fenced after.
    accepted = by_event[events[[e["event_id"] for e in events].index("late-isr") - 2]["event_id"]][0]
    assert (accepted["topic"], accepted["partition"], accepted["outcome"]) == ("t", 1, "ACCEPTED")
    late = by_event["late-isr"][0]
    assert (late["outcome"], late["error"]) == ("REJECTED", "STALE_BROKER_EPOCH")
    # The old controller's election request after the failover is fenced.
    stale = by_event[events[-1]["event_id"]]
    assert [r["error"] for r in stale] == ["STALE_CONTROLLER_EPOCH"]
    # Decisions after the failover carry the new controller epoch.
    decisions = read_decisions_jsonl(tmp_path / "spark" / "decisions.jsonl")
    failover_offset = next(i for i, e in enumerate(events) if e["type"] == "ControllerChange" and i > 0)
    assert all(d["controller_epoch"] == 2 for d in decisions if d["source_offset"] >= failover_offset)


def test_hundreds_of_rows_for_one_partition_in_one_batch_with_malformed_records(spark: Any, tmp_path: Path) -> None:
    """The pyarrow trap (a group with many rows in one batch) and bad records mixed in."""
    b = ScenarioBuilder()
    for broker in (1, 2, 3):
        b.start_broker(broker)
    b.emit("CreateTopic", topic="hot", assignment={"0": [1, 2, 3]})
    for i in range(300):
        b.alter_isr("hot", 0, [1, 2] if i % 2 == 0 else [1, 2, 3])
        if i % 100 == 50:
            b.raw("not json at all")
            b.raw(json.dumps({"type": "IsrChange", "event_id": f"bad-{i}", "ts": "x", "controller_epoch": 1}))
    log = b.write(tmp_path / "hot.jsonl")
    replay_spark(spark, log, tmp_path / "spark", ControllerConfig())
    got = outputs(tmp_path / "spark")
    assert_same(got, local_outputs(log, tmp_path / "local"))
    decisions = [d for d in read_decisions_jsonl(tmp_path / "spark" / "decisions.jsonl") if d["topic"] == "hot"]
    assert len(decisions) == 301 and decisions[-1]["partition_epoch"] == 300
    quarantine = read_delta(tmp_path / "spark" / "quarantine")
    assert len(quarantine) == 6
    assert {q["error"] for q in quarantine} >= {"missing field 'topic'"}
    lines = log.read_text().splitlines()
    assert all(lines[q["source_offset"]].encode() == q["raw"] for q in quarantine)


def _produce(bootstrap: str, topic: str, lines: list[bytes]) -> None:
    create_topic(bootstrap, topic, 1)
    publish(bootstrap, topic, lines)


def test_end_to_end_kafka_to_sink_topic_and_delta(spark: Any, kafka_broker: Any, tmp_path: Path,
                                                   capsys: Any) -> None:
    """Events produced with kafka-python -> `isrflow run` -> decisions consumed from the sink topic and audit
    read from Delta: equal to the local engine. A second run adds nothing (exactly once)."""
    from streaming.cli import main

    bootstrap = kafka_broker.bootstrap_servers
    lines = bundled_scenario()
    _produce(bootstrap, "e2e-events", lines)
    create_topic(bootstrap, "e2e-decisions", 3)
    args = ["run", "--bootstrap-servers", bootstrap, "--events-topic", "e2e-events", "--decisions-topic",
            "e2e-decisions", "--audit-table", str(tmp_path / "lake" / "audit"), "--checkpoint-dir",
            str(tmp_path / "ckpt"), "--trigger", "available-now", "--kafka-option", "maxOffsetsPerTrigger=10",
            "--quality", "--state-partitions", "2"]
    # A run killed inside its first offsets write left Spark's temp file: the run starts all the same.
    (tmp_path / "ckpt" / "partitions" / "offsets").mkdir(parents=True)
    (tmp_path / "ckpt" / "partitions" / "offsets" / ".0.5e1f.tmp").write_text("v1\n")
    assert main(args) == 0
    expected = run_local(enumerate(lines))
    consumed = consume_decisions(bootstrap, "e2e-decisions")
    assert comparable(consumed) == comparable(expected.decisions)
    assert comparable(read_delta(tmp_path / "lake" / "audit")) == comparable(expected.audit)
    assert len(read_delta(tmp_path / "lake" / "quarantine")) == expected.quarantined == 1
    # --quality: the suite ran on the micro-batch's audit rows, and found nothing wrong.
    quality = read_delta(tmp_path / "lake" / "quality")
    assert {q["expectation"] for q in quality} >= {"accepted_transitions_valid", "leader_in_isr"}
    assert [q["expectation"] for q in quality if q["status"] not in ("passed", "warning")] == []

    assert main(args) == 0
    assert len(consume_decisions(bootstrap, "e2e-decisions")) == len(consumed)
    # The checkpoint keeps its 2 state partitions: asking for 4 is refused before anything runs.
    assert main([*args[:-1], "4"]) == 2
    assert "was started with 2 state partitions" in capsys.readouterr().err


def test_stop_mid_stream_and_restart_from_checkpoint(spark: Any, kafka_broker: Any, tmp_path: Path) -> None:
    """The long-running pipeline is stopped with half of the log decided, the rest of the log arrives, and
    the restarted pipeline ends exactly where an uninterrupted run does: no decision lost or repeated."""
    from streaming.engine.partitions import start_partition_machine
    from streaming.engine.pipeline import AVAILABLE_NOW, start_pipeline
    from streaming.engine.sequencer import start_sequencer
    from streaming.engine.sinks import DecisionPublisher
    from streaming.engine.sources import kafka_events
    from streaming.io.layout import Checkpoints, Lake

    bootstrap = kafka_broker.bootstrap_servers
    lines = bundled_scenario()
    first, rest = lines[:20], lines[20:]
    _produce(bootstrap, "restart-events", first)
    create_topic(bootstrap, "restart-decisions", 1)
    lake, checkpoints = Lake.beside(tmp_path / "lake" / "audit"), Checkpoints(tmp_path / "ckpt")

    def events() -> Any:
        return kafka_events(spark, bootstrap, "restart-events", options={"maxOffsetsPerTrigger": "4"})

    def decided() -> set[int]:
        try:
            return {r["source_offset"] for r in read_delta(lake.audit)}
        except Exception:  # no commit yet
            return set()

    publisher = DecisionPublisher(bootstrap, "restart-decisions", "restart-test")
    pipeline = start_pipeline(spark, events(), lake, checkpoints, ControllerConfig(), {"processingTime": "1 second"},
                              publisher)
    deadline = time.monotonic() + 240
    while len(decided()) < len(first) and time.monotonic() < deadline:
        time.sleep(0.2)
    pipeline.stop_gracefully()
    publisher.close()
    assert decided() == set(range(len(first)))

    publish(bootstrap, "restart-events", rest)
    # The restart, bounded: the sequencer catches up, then the partition query does.
    publisher = DecisionPublisher(bootstrap, "restart-decisions", "restart-test")
    start_sequencer(spark, events(), lake, checkpoints, ControllerConfig(), "kafka", AVAILABLE_NOW).awaitTermination()
    start_partition_machine(spark, lake, checkpoints, AVAILABLE_NOW, publisher).awaitTermination()
    publisher.close()
    expected = run_local(enumerate(lines))
    assert comparable(read_delta(lake.audit)) == comparable(expected.audit)
    assert comparable(read_delta(lake.decisions)) == comparable(expected.decisions)
    assert comparable(consume_decisions(bootstrap, "restart-decisions")) == comparable(expected.decisions)
    assert comparable(read_delta(lake.requests)) == comparable(expected.requests)


def test_a_rerun_sequencer_batch_writes_nothing_twice(spark: Any, tmp_path: Path) -> None:
    """A micro-batch re-run after a crash (same batch id) yields the same commands and requests, and no
    duplicates."""
    from streaming.engine.sequencer import Sequencer
    from streaming.io.layout import Lake

    lake = Lake.beside(tmp_path / "audit")
    lines = bundled_scenario()
    batch = spark.createDataFrame([(i, line) for i, line in enumerate(lines)], "source_offset long, value binary")
    first = Sequencer(spark, lake, tmp_path / "state", ControllerConfig(), "file")
    first(batch.limit(20), 0)
    first(batch.filter("source_offset >= 20"), 1)
    commands = spark.read.format("delta").load(str(lake.commands)).count()
    requests = read_delta(lake.requests)
    # A fresh process re-runs batch 1 from the saved state of batch 0.
    Sequencer(spark, lake, tmp_path / "state", ControllerConfig(), "file")(batch.filter("source_offset >= 20"), 1)
    assert spark.read.format("delta").load(str(lake.commands)).count() == commands
    assert read_delta(lake.requests) == requests
    expected = run_local(enumerate(lines))
    assert commands == len(expected.audit)
    offsets = {r["source_offset"] for r in requests}
    assert min(offsets) < 20 <= max(offsets)  # both batches' events sent requests
    assert comparable(requests) == comparable(expected.requests)


def test_run_refuses_an_events_topic_with_more_than_one_partition(kafka_broker: Any, tmp_path: Path,
                                                                  capsys: Any) -> None:
    from streaming.cli import main

    create_topic(kafka_broker.bootstrap_servers, "three-partitions", 3)
    code = main(["run", "--bootstrap-servers", kafka_broker.bootstrap_servers, "--events-topic", "three-partitions",
                 "--decisions-topic", "d", "--audit-table", str(tmp_path / "audit"), "--checkpoint-dir",
                 str(tmp_path / "ckpt")])
    assert code == 2
    assert "has 3 partitions; isrflow needs exactly one" in capsys.readouterr().err


def test_run_appends_to_a_decisions_table_written_before_the_elr_columns(spark: Any, kafka_broker: Any,
                                                                        tmp_path: Path) -> None:
    """A pipeline whose decisions table was written by an older isrflow (no eligible_leader_replicas /
    last_known_elr columns) resumes: `run` appends, and the table gains the new columns (Delta's mergeSchema)."""
    from streaming.cli import main

    lake, elr = tmp_path / "lake", ["eligible_leader_replicas", "last_known_elr"]
    bootstrap = kafka_broker.bootstrap_servers
    lines = bundled_scenario()[:20]
    create_topic(bootstrap, "old-table-decisions", 1)
    args = ["run", "--bootstrap-servers", bootstrap, "--events-topic", "old-table-events", "--decisions-topic",
            "old-table-decisions", "--audit-table", str(lake / "audit"), "--checkpoint-dir", str(tmp_path / "ckpt"),
            "--trigger", "available-now", "--state-partitions", "2"]
    _produce(bootstrap, "old-table-events", lines[:12])
    assert main(args) == 0
    # The table as the older isrflow left it.
    older = spark.read.format("delta").load(str(lake / "decisions")).drop(*elr)
    older.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(str(lake / "decisions"))
    assert not set(elr) & set(spark.read.format("delta").load(str(lake / "decisions")).columns)
    publish(bootstrap, "old-table-events", lines[12:])
    assert main(args) == 0
    decisions = read_delta(lake / "decisions")
    expected = comparable(run_local(enumerate(lines)).decisions)

    def without_elr(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k not in elr} for r in rows]

    assert without_elr(comparable(decisions)) == without_elr(expected)
    # The rows written before have no ELR values (null); those appended after have them.
    after = [d for d in comparable(decisions) if d["source_offset"] >= 12]
    assert after and after == [d for d in expected if d["source_offset"] >= 12]


def test_run_serves_metrics_that_match_the_audit(spark: Any, kafka_broker: Any, tmp_path: Path,
                                                 capsys: Any) -> None:
    """`isrflow run --metrics-port`, scraped over HTTP while it runs: once the endpoint shows the last event
    decided, its counters equal the audit, decisions and quarantine tables and its gauges the partitions' final
    states. The scenario: examples/double-failure-unclean.jsonl until broker 3 returns (a broker failure, two
    unclean elections, two partitions left offline), min.insync.replicas=2 on orders, a truncated record and an
    event of a fenced controller. SIGTERM, as an operator stops it, ends the run and frees the port; restarted on
    its checkpoint, the run shows the same cluster from its first scrape, before deciding anything."""
    from schemas.records import audit_sort_key
    from streaming.infra.localkafka import free_port

    bootstrap = kafka_broker.bootstrap_servers
    envelope = {"ts": "2026-05-14T09:52:00.000Z", "controller_epoch": 1}
    lines = [*(EXAMPLES / "double-failure-unclean.jsonl").read_bytes().splitlines()[:20],
             json.dumps({"type": "AlterTopicConfig", "event_id": "min-isr", **envelope, "topic": "orders",
                         "configs": {"min.insync.replicas": "2"}}).encode(),
             b'{"type": "IsrChange", "event_id": "cut-sh',
             json.dumps({"type": "ElectLeaders", "event_id": "zombie", **envelope, "controller_epoch": 0,
                         "election_type": "PREFERRED", "partitions": None}).encode()]
    _produce(bootstrap, "metrics-events", lines)
    create_topic(bootstrap, "metrics-decisions", 1)
    lake, port = tmp_path / "lake", free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    args = ["run", "--bootstrap-servers", bootstrap, "--events-topic", "metrics-events", "--decisions-topic",
            "metrics-decisions", "--audit-table", str(lake / "audit"), "--checkpoint-dir", str(tmp_path / "ckpt"),
            "--trigger", "1 second", "--kafka-option", "maxOffsetsPerTrigger=10", "--state-partitions", "2",
            "--metrics-port", str(port)]

    def everything_decided(samples: list[Any]) -> bool:
        return (scraped_value(samples, "isrflow_last_event_offset") == len(lines) - 1
                and scraped_value(samples, "isrflow_quarantined_records_total") == 1
                and bool(scraped_value(samples, "isrflow_state_rows"))  # the gauge exists at 0 before the first report
                and scraped_value(samples, "isrflow_micro_batch_duration_seconds_count", query="isrflow-partitions")
                is not None)

    code, m = run_scraped(args, url, everything_decided)
    assert code == 0
    assert f"Prometheus metrics on http://0.0.0.0:{port}/metrics" in capsys.readouterr().out
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=10)
    assert m is not None, "the endpoint never showed every event decided"

    def value(name: str) -> float | None:
        return scraped_value(m, name)

    def by_label(name: str) -> dict[str, float]:
        return {next(iter(s.labels.values())): s.value for s in m if s.name == name}

    audit, decisions = read_delta(lake / "audit"), read_delta(lake / "decisions")
    assert by_label("isrflow_decisions_total") == Counter(d["election"] or "NONE" for d in decisions)
    assert value("isrflow_unclean_leader_elections_total") == 2 == sum(
        a["election"] == "OFFLINE_UNCLEAN" for a in audit)
    assert by_label("isrflow_rejections_total") == Counter(a["error"] for a in audit if a["outcome"] == "REJECTED")
    assert set(by_label("isrflow_rejections_total")) == {"ELIGIBLE_LEADERS_NOT_AVAILABLE", "STALE_CONTROLLER_EPOCH"}
    assert value("isrflow_quarantined_records_total") == len(read_delta(lake / "quarantine")) == 1

    final = {}
    for a in sorted((a for a in audit if a["partition"] is not None), key=audit_sort_key):
        final[(a["topic"], a["partition"])] = a
    assert value("isrflow_partitions") == len(final) == value("isrflow_state_rows") == 15
    assert value("isrflow_offline_partitions") == 2 == sum(
        a["to_state"] == "OfflinePartition" for a in final.values())
    assert value("isrflow_leaderless_partitions") == 2 == sum(a["leader_after"] == -1 for a in final.values())
    assert value("isrflow_under_replicated_partitions") == sum(
        len(a["isr_after"]) < len(a["replicas_after"]) for a in final.values())
    assert value("isrflow_under_min_isr_partitions") == sum(
        len(a["isr_after"]) < 2 for (topic, _), a in final.items() if topic == "orders")
    assert value("isrflow_preferred_replica_imbalance_partitions") == sum(
        a["leader_after"] != a["replicas_after"][0] for a in final.values())
    leaders = Counter(str(a["leader_after"]) for a in final.values() if a["leader_after"] != -1)
    assert by_label("isrflow_leaders") == {"1": 3, "2": 0, "3": 0, "4": 5, "5": 5} == {**dict.fromkeys("2345", 0),
                                                                                        **leaders}
    assert value("isrflow_last_event_lag_seconds") > 0

    view = ("isrflow_partitions", "isrflow_offline_partitions", "isrflow_leaderless_partitions",
            "isrflow_under_replicated_partitions", "isrflow_under_min_isr_partitions",
            "isrflow_preferred_replica_imbalance_partitions")
    code, restarted = run_scraped(args, url, lambda samples: True)
    assert code == 0 and restarted is not None
    assert [scraped_value(restarted, name) for name in view] == [value(name) for name in view]
    assert [s for s in restarted if s.name == "isrflow_leaders"] == [s for s in m if s.name == "isrflow_leaders"]
    assert scraped_value(restarted, "isrflow_last_event_offset") is None  # nothing decided by this run
