"""A real KRaft cluster (1 controller + 3 brokers) scripted through the Admin API; its metadata log dumped with
Kafka's own tool, imported, and replayed under the kraft rules: every partition's history must equal the real
controller's. One cluster per ELR setting, per module (the ELR-on one turns the feature off after its scenario and
fails brokers again), and one formatted at metadata.version 3.5-IV2 and upgraded after its scenario; every process
is stopped by pid on teardown."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from kraft_scenario import run_scenario, turn_elr_off_mid_run, upgrade_metadata_version_mid_run
from scraping import run_scraped, scraped_value

from schemas.records import audit_sort_key
from statemachine.controller import ControllerConfig
from statemachine.rules import KRAFT
from streaming.cli import main
from streaming.history.agreement import agreement_rows
from streaming.history.histories import history_rows
from streaming.infra.cluster import copy_live_dir
from streaming.infra.kraftcluster import KraftCluster
from streaming.infra.localkafka import free_port
from streaming.io.delta import read_delta
from streaming.io.eventlog import Bounds
from streaming.io.jsonl import read_jsonl
from streaming.jobs.kraft import import_kraft
from streaming.jobs.replay import ReplayOptions, replay, replay_spark
from streaming.kraft.convert import convert, event_offset
from streaming.kraft.metadatalog import MetadataRecord, plan, read_metadata_log, snapshot_end_offset

# The controller rolls a segment and takes a snapshot every few seconds, so its copy of the log is "segment 0, several
# snapshots and several segments"; broker 2 (never restarted) keeps defaults, so its copy is one segment from offset 0.
FAST_ROLLING = {"metadata.log.segment.ms": "8000", "metadata.log.max.snapshot.interval.ms": "8000"}
HISTORY_BROKER = 2
ELR, MV = "eligible.leader.replicas.version", "metadata.version"
pytestmark = pytest.mark.kraft_cluster


def _scripted_cluster(tmp: Path, elr: bool, then: Callable[[KraftCluster], None] | None = None,
                      release_version: str | None = None) -> Iterator[dict[str, Path]]:
    cluster = KraftCluster(brokers=3, elr=elr, extra_controller_config=FAST_ROLLING, release_version=release_version)
    try:
        cluster.start()
        run_scenario(cluster)
        if then is not None:
            then(cluster)
        out = {"history": tmp / "broker-metadata", "controller": tmp / "controller-metadata"}
        copy_live_dir(cluster.broker_metadata_dir(HISTORY_BROKER), out["history"])
        copy_live_dir(cluster.metadata_dir, out["controller"])
    finally:
        cluster.stop()  # by pid, also when the scenario failed
    assert not cluster.pids
    yield out


@pytest.fixture(scope="module")
def elr_off(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    yield from _scripted_cluster(tmp_path_factory.mktemp("kraft-elr-off"), elr=False)


@pytest.fixture(scope="module")
def elr_on(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    yield from _scripted_cluster(tmp_path_factory.mktemp("kraft-elr-on"), elr=True, then=turn_elr_off_mid_run)


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    yield from _scripted_cluster(tmp_path_factory.mktemp("kraft-upgraded"), elr=False,
                                 then=upgrade_metadata_version_mid_run, release_version="3.5-IV2")


def replay_kraft(source: Path, out: Path) -> str:
    return replay(ReplayOptions(f"kraft:{source}", out, engine="local", config=ControllerConfig(rules=KRAFT)))


def assert_every_history_reproduced(out: Path, summary: str) -> list[dict[str, Any]]:
    observed = read_jsonl(out / "observed.jsonl")
    histories = read_jsonl(out / "histories.jsonl")
    assert {(h["topic"], h["partition"]) for h in histories} == {
        ("rf1", 0), ("rf1", 1), ("rf2", 0), ("rf2", 1), ("rf2", 2), ("rf3", 0), ("rf3", 1), ("rf3", 2), ("gone", 0),
        ("moves", 0), ("moves", 1)}
    assert all(h["match"] for h in histories), [h for h in histories if not h["match"]]
    assert f"partition histories: {len(histories)} of {len(histories)} equal" in summary
    agreement = read_jsonl(out / "agreement.jsonl")
    assert agreement and all(row["match"] for row in agreement), [r for r in agreement if not r["match"]]
    assert "agreement with the controller: 100.0%" in summary
    return observed


def spark_replay_of_the_whole_log(source: Path, spark: Any, tmp_path: Path, config: ControllerConfig) -> None:
    """Every imported event through the Spark pipeline under the kraft rules: the controller's histories."""
    summary = import_kraft(source, tmp_path / "all.jsonl", tmp_path / "observed.jsonl")
    assert summary.events
    replay_spark(spark, tmp_path / "all.jsonl", tmp_path / "spark", config)
    differing = [h for h in history_rows(read_jsonl(tmp_path / "observed.jsonl"),
                                         read_jsonl(tmp_path / "spark" / "decisions.jsonl")) if not h["match"]]
    assert not differing, differing


def test_replay_reproduces_every_partition_history_of_the_real_controller(elr_off: dict[str, Path],
                                                                           tmp_path: Path) -> None:
    summary = replay_kraft(elr_off["history"], tmp_path)
    observed = assert_every_history_reproduced(tmp_path, summary)
    assert "eligible.leader.replicas.version=0" in summary
    assert not any(o["eligible_leader_replicas"] or o["last_known_elr"] for o in observed)
    # The scenario's operations all show up as events, and the controller's decisions include each election kind.
    events = read_jsonl(tmp_path / "kraft" / "events.jsonl")
    kinds = {(e["type"], e.get("change") or e.get("election_type")) for e in events}
    assert {("BrokerChange", "FAILURE"), ("BrokerChange", "CONTROLLED_SHUTDOWN"), ("BrokerChange", "STARTUP"),
            ("ElectLeaders", "PREFERRED"), ("ElectLeaders", "UNCLEAN"), ("ReassignPartitions", None),
            ("CreatePartitions", None), ("DeleteTopic", None), ("AlterTopicConfig", None)} <= kinds
    assert any(e["type"] == "ReassignPartitions" and e["partitions"][0]["replicas"] is None for e in events)
    assert any(o["leader_recovery_state"] == "RECOVERING" for o in observed)


def test_the_zk_rules_disagree_where_kafka_4_changed_them(elr_off: dict[str, Path], tmp_path: Path) -> None:
    replay(ReplayOptions(f"kraft:{elr_off['history']}", tmp_path, engine="local"))
    rows = read_jsonl(tmp_path / "agreement.jsonl")
    differing = {f for r in rows for f in r["differing"]}
    assert "leader_epoch" in differing  # ZK bumps it on every leader/ISR write


@pytest.mark.spark
def test_spark_engine_gives_the_real_controllers_decisions_on_the_whole_log(elr_off: dict[str, Path], spark: Any,
                                                                            tmp_path: Path) -> None:
    spark_replay_of_the_whole_log(elr_off["history"], spark, tmp_path, ControllerConfig(rules=KRAFT))


def test_elr_on_reproduces_every_partition_history_of_the_real_controller(elr_on: dict[str, Path],
                                                                          tmp_path: Path) -> None:
    """With eligible.leader.replicas.version=1 (KIP-966) the controller empties ISRs into the ELR, elects the
    last known leader uncleanly, and takes a broker back from kill -9 out of the ELR at its registration: the
    kraft rules, with the feature read from the log, reproduce all of it."""
    summary = replay_kraft(elr_on["history"], tmp_path)
    assert "eligible.leader.replicas.version=1" in summary
    observed = assert_every_history_reproduced(tmp_path, summary)
    assert any(o["eligible_leader_replicas"] for o in observed), "the scenario should move some ISR into the ELR"
    assert any(not o["isr"] and o["last_known_elr"] for o in observed)
    # The last known leader's election: unclean (RECOVERING) although the topic does not allow unclean elections.
    assert any(o["cause"] == "BrokerChange" and o["leader_recovery_state"] == "RECOVERING" and o["decision"]
               for o in observed)
    events = read_jsonl(tmp_path / "kraft" / "events.jsonl")
    assert any(e.get("unclean_shutdown") for e in events)


def test_a_feature_turned_off_mid_log_applies_from_its_offset(elr_on: dict[str, Path], tmp_path: Path) -> None:
    """eligible.leader.replicas.version goes 1 -> 0 late in the log (while rf3 holds an ELR), brokers fail before
    and after: the replay follows each level from its offset (an UpdateFeatures event) and reproduces every
    decision and partition history; applying one level to the whole log does not."""
    summary = replay_kraft(elr_on["history"], tmp_path / "levels")
    events = read_jsonl(tmp_path / "levels" / "kraft" / "events.jsonl")
    [off] = [e for e in events if e["type"] == "UpdateFeatures" and e["features"] == {ELR: 0}]
    assert f"{ELR}=1 at " in summary and f"{ELR}=0 at {event_offset(off)}" in summary and f"{ELR}=0, " in summary
    observed = assert_every_history_reproduced(tmp_path / "levels", summary)
    after = [o for o in observed if o["source_offset"] > event_offset(off)]
    assert any(o["cause"] == "BrokerChange" and o["decision"] for o in after), "failures after the switch"
    # rf3 held an ELR when the feature went off; its next change empties it, and no change after makes one.
    before = [o for o in observed if o["source_offset"] < event_offset(off)]
    assert any(o["topic"] == "rf3" and o["eligible_leader_replicas"] == [3] for o in before)
    assert not any(o["eligible_leader_replicas"] for o in after)
    # The same log with one level for the whole of it (no UpdateFeatures events): decisions differ.
    whole = tmp_path / "one-level.jsonl"
    whole.write_text("".join(json.dumps(e) + "\n" for e in events if e["type"] != "UpdateFeatures"))
    for elr in (False, True):
        replay(ReplayOptions(str(whole), tmp_path / f"one-level-{elr}", engine="local",
                             config=ControllerConfig(rules=KRAFT, eligible_leader_replicas=elr)))
        rows = agreement_rows(observed, read_jsonl(tmp_path / f"one-level-{elr}" / "decisions.jsonl"))
        assert not all(r["match"] for r in rows), elr


def test_a_metadata_version_upgraded_mid_log_applies_from_its_offset(upgraded: dict[str, Path],
                                                                     tmp_path: Path) -> None:
    """A cluster formatted at metadata.version 3.5-IV2 (ISR shrinks bump the leader epoch, KAFKA-15021) and upgraded
    to 3.6-IV2 after its scenario, brokers failing before and after: the replay follows each version from its offset
    and reproduces every decision and partition history; either version for the whole log does not."""
    summary = replay_kraft(upgraded["history"], tmp_path / "levels")
    events = read_jsonl(tmp_path / "levels" / "kraft" / "events.jsonl")
    [formatted, upgrade] = [e for e in events if e["type"] == "UpdateFeatures" and MV in e["features"]]
    assert (formatted["features"][MV], upgrade["features"][MV]) == (11, 14)
    assert f"{MV}=11 at {event_offset(formatted)}" in summary and f"{MV}=14 at {event_offset(upgrade)}" in summary
    observed = assert_every_history_reproduced(tmp_path / "levels", summary)

    def isr_shrinks(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(before, after) of each change that shrinks the ISR and keeps the leader."""
        last: dict[tuple[str, int], dict[str, Any]] = {}
        out = []
        for o in rows:
            key = (o["topic"], o["partition"])
            b = last.get(key)
            if b and b["leader"] == o["leader"] >= 0 and not set(b["isr"]) <= set(o["isr"]):
                out.append((b, o))
            last[key] = o
        return out

    shrinks = isr_shrinks(observed)
    before = [a["leader_epoch"] - b["leader_epoch"] for b, a in shrinks if a["source_offset"] < event_offset(upgrade)]
    after = [a["leader_epoch"] - b["leader_epoch"] for b, a in shrinks if a["source_offset"] > event_offset(upgrade)]
    assert before and set(before) == {1} and after and set(after) == {0}, (before, after)
    whole = tmp_path / "one-version.jsonl"
    whole.write_text("".join(json.dumps(e) + "\n" for e in events if e["type"] != "UpdateFeatures"))
    for version in (11, 14):
        replay(ReplayOptions(str(whole), tmp_path / f"one-version-{version}", engine="local",
                             config=ControllerConfig(rules=KRAFT, metadata_version=version)))
        rows = agreement_rows(observed, read_jsonl(tmp_path / f"one-version-{version}" / "decisions.jsonl"))
        assert not all(r["match"] for r in rows), version


@pytest.mark.spark
def test_spark_engine_reproduces_the_elr_histories_on_the_whole_log(elr_on: dict[str, Path], spark: Any,
                                                                    tmp_path: Path) -> None:
    spark_replay_of_the_whole_log(elr_on["history"], spark, tmp_path,
                                  ControllerConfig(rules=KRAFT, eligible_leader_replicas=True))


def decisions_by_offset(out: Path) -> list[tuple[int, str, int]]:
    return [(o["source_offset"], o["topic"], o["partition"]) for o in read_jsonl(out / "observed.jsonl")
            if o["decision"]]


def test_a_directory_holding_segment_0_is_replayed_from_0_whatever_its_snapshots(elr_off: dict[str, Path],
                                                                                 tmp_path: Path) -> None:
    """The controller's copy holds segment 0, several snapshots and several segments: it is the whole history,
    replayed from offset 0, every decision of it in agreement.jsonl and in agreement."""
    source = elr_off["controller"]
    assert len(list(source.glob("*.checkpoint"))) > 1, "the controller should have taken several snapshots"
    assert len(list(source.glob("*.log"))) > 1, "the controller should have rolled several segments"
    history = plan(source)
    assert (history.snapshot, history.start, history.segments) == (None, 0, sorted(source.glob("*.log")))
    summary = replay_kraft(source, tmp_path / "controller")
    assert "offsets [0, " in summary
    assert "replayed from offset 0: the first segment 00000000000000000000.log starts there" in summary
    assert_every_history_reproduced(tmp_path / "controller", summary)
    events = read_jsonl(tmp_path / "controller" / "kraft" / "events.jsonl")
    assert not any(e["type"] == "PartitionSnapshot" for e in events)
    # Every decision the controller wrote, from the first one on, has its row in agreement.jsonl.
    decisions = decisions_by_offset(tmp_path / "controller")
    rows = read_jsonl(tmp_path / "controller" / "agreement.jsonl")
    assert decisions and decisions == [(r["source_offset"], r["topic"], r["partition"]) for r in rows
                                       if r["controller"] is not None]
    # The broker's copy (the same replicated log, never snapshotted) holds the same decisions.
    replay_kraft(elr_off["history"], tmp_path / "broker")
    assert decisions_by_offset(tmp_path / "broker") == decisions
    log = read_metadata_log(source)
    assert log.snapshot is None and not any(r.snapshot for r in log.records)
    assert log.control_batches > 0
    summary_counts = import_kraft(source, tmp_path / "events.jsonl")
    assert summary_counts.unknown.get("NO_OP_RECORD", 0) > 0  # counted and skipped
    # All segments of the broker's copy, read one file at a time, give the same records as the directory.
    whole = read_metadata_log(elr_off["history"])
    [segment] = sorted(elr_off["history"].glob("*.log"))
    assert [r.offset for r in read_metadata_log(segment).records] == [r.offset for r in whole.records]


def _final_states(out: Path) -> dict[tuple[str, int], tuple[Any, ...]]:
    """Each existing partition's last state in a replay's audit: leader, ISR, epochs, recovery state, replicas."""
    rows = sorted((r for r in read_delta(out / "audit") if r["partition"] is not None), key=audit_sort_key)
    last = {(r["topic"], r["partition"]): r for r in rows}
    return {k: (r["leader_after"], sorted(r["isr_after"] or []), r["leader_epoch_after"], r["partition_epoch_after"],
                r["leader_recovery_state_after"], r["replicas_after"])
            for k, r in last.items() if r["to_state"] != "NonExistentPartition"}


def retained(source: Path, dest: Path) -> tuple[Path, Path]:
    """A copy of `source` as retention leaves it: the segments wholly before a middle snapshot deleted (Kafka
    deletes a segment once a snapshot covers it). Returns the copy and its first segment."""
    shutil.copytree(source, dest)
    snapshots = sorted(dest.glob("*.checkpoint"))
    assert len(snapshots) >= 3, "the controller should have taken several snapshots"
    cut = snapshot_end_offset(snapshots[len(snapshots) // 2]) or 0
    segments = sorted(dest.glob("*.log"))
    for segment, following in pairwise(segments):
        if int(following.name[:20]) <= cut:
            for file in dest.glob(segment.name[:20] + ".*"):
                file.unlink()
    return dest, sorted(dest.glob("*.log"))[0]


@pytest.mark.parametrize("cluster", ["elr_off", "elr_on"])
def test_a_directory_whose_early_segments_were_deleted_starts_at_the_oldest_snapshot_that_reaches_them(
        cluster: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Without segment 0 the state starts at the oldest snapshot whose end offset reaches the first retained
    segment (older ones miss the records between them and it): the snapshot seeds every partition as it stood
    (with ELR on, its ELR and last known leader too), the controller's decisions after it are reproduced, and
    every partition ends where the replay of the whole history (the broker's copy, from offset 0) ends."""
    logs: dict[str, Path] = request.getfixturevalue(cluster)
    source, first = retained(logs["controller"], tmp_path / "retained")
    base = int(first.name[:20])
    assert base > 0
    expected = min(s for s in source.glob("*.checkpoint") if (snapshot_end_offset(s) or 0) >= base)
    start = snapshot_end_offset(expected)
    assert plan(source).snapshot == expected
    summary = replay_kraft(source, tmp_path / "from-snapshot")
    assert (f"offsets [{start}, " in summary and f"replayed from snapshot {expected.name}: the oldest one that reaches "
            f"the first retained segment {first.name}" in summary)
    events = read_jsonl(tmp_path / "from-snapshot" / "kraft" / "events.jsonl")
    seeds = [e for e in events if "-snapshot-" in e["event_id"]]
    assert any(e["type"] == "PartitionSnapshot" for e in seeds) and events[:len(seeds)] == seeds
    assert {event_offset(e) for e in seeds} == {(start or 0) - 1}
    assert all(event_offset(e) >= (start or 0) for e in events[len(seeds):])
    rows = read_jsonl(tmp_path / "from-snapshot" / "agreement.jsonl")
    assert rows and all(r["match"] for r in rows), [r for r in rows if not r["match"]]
    assert "agreement with the controller: 100.0%" in summary
    replay_kraft(logs["history"], tmp_path / "whole")
    assert _final_states(tmp_path / "from-snapshot") == _final_states(tmp_path / "whole")


def middle_decisions(source: Path) -> tuple[list[MetadataRecord], int, int]:
    """The log's records and a window [a, b) of batches around the middle third of the controller's decisions."""
    log = read_metadata_log(source)
    batch = {r.offset: r.batch for r in log.records}
    decisions = [o["source_offset"] for o in convert(log.records).observed if o["decision"]]
    return log.records, batch[decisions[len(decisions) // 3]], batch[decisions[2 * len(decisions) // 3]]


@pytest.mark.parametrize("cluster", ["elr_off", "elr_on"])
def test_a_window_of_offsets_is_seeded_at_its_start_and_agrees_with_the_controller_inside_it(
        cluster: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    source = request.getfixturevalue(cluster)["controller"]
    records, a, b = middle_decisions(source)
    seed = plan(source, a)
    summary = replay(ReplayOptions(f"kraft:{source}", tmp_path, engine="local", config=ControllerConfig(rules=KRAFT),
                                   bounds=Bounds(from_offset=a, to_offset=b)))
    between = sum(1 for r in records if seed.start <= r.offset < a)
    origin = f"snapshot {seed.snapshot.name}, the newest at or before offset {a}" if seed.snapshot else "offset 0"
    assert f"window [{a}, {b}) replayed, seeded from {origin} + {between} records that decide nothing" in summary
    # observed.jsonl holds the window's partition changes: exactly the controller's between a and b.
    whole = [o for o in convert(records).observed if a <= o["source_offset"] < b]
    assert whole and read_jsonl(tmp_path / "observed.jsonl") == whole
    rows = read_jsonl(tmp_path / "agreement.jsonl")
    assert rows and all(r["match"] for r in rows), [r for r in rows if not r["match"]]
    assert "agreement with the controller: 100.0%" in summary


def test_a_window_of_times_holds_the_changes_written_inside_it(elr_off: dict[str, Path], tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    source = elr_off["controller"]
    records, a, b = middle_decisions(source)
    batch_time: dict[int, int] = {}
    for r in records:
        batch_time.setdefault(r.batch, r.create_time)
    written = {r.offset: batch_time[r.batch] for r in records}  # a window selects a batch by its CreateTime

    def iso(ms: int) -> str:
        return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    since, until = written[a], written[b]
    assert main(["replay", f"kraft:{source}", "--out", str(tmp_path), "--engine", "local", "--rules", "kraft",
                 "--from", iso(since), "--to", iso(until)]) == 0
    summary = capsys.readouterr().out
    whole = [o for o in convert(records).observed if since <= written[o["source_offset"]] < until]
    assert whole and read_jsonl(tmp_path / "observed.jsonl") == whole
    rows = read_jsonl(tmp_path / "agreement.jsonl")
    assert rows and all(r["match"] for r in rows), [r for r in rows if not r["match"]]
    assert "agreement with the controller: 100.0%" in summary and "records that decide nothing" in summary


def test_import_kraft_command_writes_events_and_observed(elr_off: dict[str, Path], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    events, observed = tmp_path / "events.jsonl", tmp_path / "observed.jsonl"
    assert main(["import-kraft", str(elr_off["history"]), "--out", str(events), "--observed", str(observed)]) == 0
    assert "metadata records" in capsys.readouterr().out
    first = next(e for e in map(json.loads, events.read_text().splitlines())
                 if e["type"] not in ("UpdateFeatures", "ControllerRegistration", "BrokerRegistration"))
    assert first["type"] == "BrokerChange" and first["event_id"].startswith("kraft-")
    assert read_jsonl(observed)
    assert main(["import-kraft", str(tmp_path / "missing"), "--out", str(events)]) == 2
    # A window: the state before it is seeded, its records are the events.
    assert main(["import-kraft", str(elr_off["history"]), "--out", str(events), "--from-offset", "40"]) == 0
    out = capsys.readouterr().out
    [seeded] = {event_offset(e) for e in read_jsonl(events) if "-snapshot-" in e["event_id"]}
    assert f"window [{seeded + 1}, " in out and "records that decide nothing" in out


@pytest.mark.spark
def test_run_behind_the_bridge_writes_agreement_with_the_live_controller(
        elr_off: dict[str, Path], kafka_broker: Any, spark: Any, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The scenario's metadata log (a kill -9, a controlled shutdown, elections, ...) bridged into a topic of the
    session's broker, then `run` over it: under the kraft rules every observed decision agrees, under the zk rules
    some do not (ZK bumps the leader epoch on an ISR shrink)."""
    from streaming.history.agreement import from_table_rows
    from streaming.infra.localkafka import create_topic
    from streaming.io.layout import Lake
    from streaming.quality.agreement import RULE, agreement_result

    bootstrap, topic = kafka_broker.bootstrap_servers, "kraft-live-agreement"
    create_topic(bootstrap, topic, 1)
    assert main(["bridge", "--metadata-dir", str(elr_off["history"]), "--bootstrap-servers", bootstrap,
                 "--events-topic", topic, "--once"]) == 0
    # A malformed controller's decision after them (no leader epoch): quarantined, like any bad record.
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        producer.send(topic, json.dumps({"type": "ObservedDecision", "topic": "rf1", "partition": 0}).encode()).get(30)
    finally:
        producer.close()
    kinds = {e["event_id"]: (e["type"], e.get("change")) for e in
             convert(read_metadata_log(elr_off["history"]).records).events}
    rows: dict[str, list[dict[str, Any]]] = {}
    scraped: list[Any] = []
    kraft_out = ""
    for rules in ("kraft", "zk"):
        create_topic(bootstrap, f"{topic}-{rules}", 1)
        audit = tmp_path / rules / "audit"
        args = ["run", "--bootstrap-servers", bootstrap, "--events-topic", topic, "--decisions-topic",
                f"{topic}-{rules}", "--audit-table", str(audit), "--checkpoint-dir", str(tmp_path / rules / "cp"),
                "--rules", rules, "--state-partitions", "2"]
        if rules == "kraft":
            assert main([*args, "--trigger", "available-now"]) == 0
            last = max(a["source_offset"] for a in read_delta(audit))
            # The sequencer's progress lines (all of them: a bounded run waits for its listener) count the events
            # apart from the controller's decisions that follow them, as the tables hold them.
            kraft_out = capsys.readouterr().out
            lines = re.findall(r"\[sequencer\] batch \d+: (\d+) events in, (?:(\d+) controller decisions, )?",
                               kraft_out)
            lake = Lake.beside(audit)
            assert lines and (sum(int(e) for e, _ in lines), sum(int(o or 0) for _, o in lines)) == (
                len(read_delta(lake.bronze)) + 1, len(read_delta(lake.observed)))  # + 1: the malformed one
        else:  # the wrong rules, watched as an operator would: scraped until the last event is decided
            port = free_port()
            code, samples = run_scraped([*args, "--trigger", "1 second", "--metrics-port", str(port)],
                                        f"http://127.0.0.1:{port}/metrics",
                                        lambda m, last=last: scraped_value(m, "isrflow_last_event_offset") == last)
            assert code == 0 and samples is not None, "the endpoint never showed the last event decided"
            scraped = samples
        lake = Lake.beside(audit)
        rows[rules] = from_table_rows(read_delta(lake.agreement))
        # The observed table holds the controller's changes the bridge published, none of them in bronze.
        assert len(read_delta(lake.observed)) >= len(rows[rules])
        assert not {r["type"] for r in read_delta(lake.bronze)} & {"ObservedDecision"}
        [bad] = read_delta(lake.quarantine)
        assert bad["error"] == "missing field 'leader'"
    out = kraft_out + capsys.readouterr().out
    kraft, zk = rows["kraft"], rows["zk"]
    assert kraft and all(r["match"] for r in kraft), [r for r in kraft if not r["match"]]
    causes = {kinds[r["cause_event_id"]] for r in kraft}
    assert {("BrokerChange", "FAILURE"), ("BrokerChange", "CONTROLLED_SHUTDOWN")} <= causes
    assert f"{len(kraft)}/{len(kraft)} agreeing" in out  # the progress line (one partition batch)
    kraft_check = agreement_result(tmp_path / "kraft" / "audit")
    assert kraft_check is not None and kraft_check.name == RULE and not kraft_check.fails_check
    # The same log under the zk rules: the controller's decisions are the same, isrflow's differ.
    assert {(r["cause_event_id"], r["topic"], r["partition"]) for r in zk if r["controller"]} == {
        (r["cause_event_id"], r["topic"], r["partition"]) for r in kraft}
    assert not all(r["match"] for r in zk) and "leader_epoch" in {f for r in zk for f in r["differing"]}
    assert main(["check", str(tmp_path / "zk" / "audit")]) == 1
    assert RULE in capsys.readouterr().out
    # The metrics of the zk run count what its agreement table holds: every row compared, each differing one a
    # disagreement, by the cause event's type.
    counted = {name: {s.labels["cause"]: s.value for s in scraped if s.name == name}
               for name in ("isrflow_controller_decisions_compared_total", "isrflow_disagreements_total")}
    assert counted["isrflow_controller_decisions_compared_total"] == Counter(r["cause"] for r in zk)
    assert counted["isrflow_disagreements_total"] == Counter(r["cause"] for r in zk if not r["match"])
    # One report reads both: the run's tables (the folder of its audit) give the same section a replay's files do.
    from streaming.analysis.report import write_report

    page = write_report(tmp_path / "zk").read_text()
    bad = sum(1 for r in zk if not r["match"])
    assert "isrflow vs the controller" in page and f"{bad} disagree" in page
