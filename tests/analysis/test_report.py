"""The incident report (streaming/analysis: timeline, summary, tables, plots, page) against the audit it is
computed from, on every example replayed with the local engine; and the replay progress reporter
(streaming/analysis/progress.py)."""

from __future__ import annotations

import io
import itertools
import re
from collections import Counter, defaultdict
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape

from schemas.records import audit_sort_key
from schemas.tables import AUDIT, DECISION
from statemachine.controller import ControllerConfig
from streaming.analysis.columns import read_audit
from streaming.analysis.progress import Progress
from streaming.analysis.report import build_report, write_report
from streaming.analysis.timeline import Analysis, analyse, broker_event, reassignments
from streaming.engine.local import ReplayResult, run_local, write_outputs
from streaming.infra.scenario import ScenarioBuilder, round_robin_assignment
from streaming.io.delta import read_decisions_jsonl, read_delta, write_delta
from streaming.io.eventlog import read_event_log

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["rolling-restart", "double-failure-unclean", "reassignment", "zombie-controller"]
SOURCES = {name: ROOT / "examples" / f"{name}.jsonl" for name in EXAMPLES}
SOURCES["incident"] = ROOT / "streaming" / "scenarios" / "incident.jsonl"


@pytest.fixture(scope="module")
def replays(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Analysis, str]]:
    """Each log replayed (local engine), its report written: (out dir, analysis, report HTML)."""
    root = tmp_path_factory.mktemp("reports")
    out = {}
    for name, source in SOURCES.items():
        target = root / name
        write_outputs(run_local(read_event_log(source), ControllerConfig()), target)
        path = write_report(target)
        out[name] = (target, build_report(target), path.read_text(encoding="utf-8"))
    return out


def _audit(out: Path) -> list[dict[str, Any]]:
    return sorted(read_delta(out / "audit"), key=audit_sort_key)


def _section(html: str, section_id: str) -> str:
    """The HTML between <h2 id=section_id> and the next <h2>."""
    start = html.index(f'<h2 id="{section_id}">')
    end = html.find("<h2", start + 1)
    return html[start:end if end > 0 else len(html)]


# -- the report's numbers are the audit's ---------------------------------------------------------------

@pytest.mark.parametrize("name", [*EXAMPLES, "incident"])
def test_offline_partitions_match_the_audit(replays: dict[str, tuple[Path, Analysis, str]], name: str) -> None:
    out, analysis, html = replays[name]
    audit = _audit(out)
    # Independently: walk the partition rows in log order, count partitions with no leader after each event.
    ever = {(r["topic"], r["partition"]) for r in audit if r["partition"] is not None
            and r["outcome"] == "ACCEPTED" and r["leader_after"] == -1 and r["to_state"] != "NonExistentPartition"}
    leaders: dict[tuple[str, int], int] = {}
    per_offset: dict[int, int] = {}
    for r in audit:
        if r["partition"] is not None and r["outcome"] != "REJECTED":
            key = (r["topic"], r["partition"])
            if r["to_state"] == "NonExistentPartition":
                leaders.pop(key, None)
            else:
                leaders[key] = r["leader_after"]
        per_offset[r["source_offset"]] = sum(1 for v in leaders.values() if v == -1)
    assert analysis.ever_offline == ever
    assert analysis.offline_peak[0] == max(per_offset.values(), default=0)
    assert analysis.health.offline.tolist() == [per_offset[o] for o in sorted(per_offset)]
    assert f'<div class="n">{len(ever)}</div><div class="l">went offline</div>' in html


@pytest.mark.parametrize("name", [*EXAMPLES, "incident"])
def test_partitions_led_per_broker_match_the_audit(replays: dict[str, tuple[Path, Analysis, str]], name: str) -> None:
    out, analysis, _ = replays[name]
    # Independently: walk the partition rows in log order, count the partitions each broker leads after each event.
    leaders: dict[tuple[str, int], int] = {}
    per_offset: dict[int, Counter[int]] = {}
    for r in _audit(out):
        if r["partition"] is not None and r["outcome"] != "REJECTED" and r["to_state"] is not None:
            key = (r["topic"], r["partition"])
            if r["to_state"] == "NonExistentPartition":
                leaders.pop(key, None)
            else:
                leaders[key] = r["leader_after"]
        per_offset[r["source_offset"]] = Counter(v for v in leaders.values() if v != -1)
    led = {b: [per_offset[o][b] for o in sorted(per_offset)] for b in analysis.brokers}
    assert {b: analysis.health.led(b).tolist() for b in analysis.brokers} == led
    assert any(max(counts) for counts in led.values())


@pytest.mark.parametrize("name", [*EXAMPLES, "incident"])
def test_unclean_elections_are_listed_with_their_partition(replays: dict[str, tuple[Path, Analysis, str]],
                                                           name: str) -> None:
    out, analysis, html = replays[name]
    expected = [(r["topic"], r["partition"], r["source_offset"]) for r in _audit(out)
                if r["election"] == "OFFLINE_UNCLEAN"]
    assert [(r["topic"], r["partition"], r["source_offset"]) for r in analysis.unclean] == expected
    section = _section(html, "unclean")
    listed = re.findall(r"<td class=\"num\">(\d+)</td><td><code>([\w.-]+)</code></td>", section)
    assert listed == [(str(o), f"{t}-{p}") for t, p, o in expected]
    if not expected:
        assert "No unclean election" in section


@pytest.mark.parametrize("name", [*EXAMPLES, "incident"])
def test_rejections_by_error_equal_the_audit_counts(replays: dict[str, tuple[Path, Analysis, str]],
                                                    name: str) -> None:
    out, analysis, html = replays[name]
    counts = Counter(r["error"] for r in _audit(out) if r["outcome"] == "REJECTED")
    assert analysis.rejected_by_error() == dict(counts)
    section = _section(html, "rejected")
    shown = {e: int(n) for e, n in re.findall(r"<td><code>(\w+)</code></td><td class=\"num\">(\d+)</td>", section)}
    assert shown == dict(counts)
    if counts:
        assert f'<th>total</th><th class="num">{sum(counts.values())}</th>' in section


@pytest.mark.parametrize("name", [*EXAMPLES, "incident"])
def test_under_replicated_uses_the_decisions_replicas(replays: dict[str, tuple[Path, Analysis, str]],
                                                      name: str) -> None:
    out, analysis, _ = replays[name]
    decisions = read_decisions_jsonl(out / "decisions.jsonl")
    last = {}
    for d in decisions:
        last[(d["topic"], d["partition"])] = d
    # At the end of the log, under-replicated = the last decision has a leader and an ISR smaller than its
    # target replica set.
    expected = sorted(k for k, d in last.items() if d["leader"] != -1 and k in analysis.partitions
                      and len(d["isr"]) < len([r for r in d["replicas"] if r not in d["removing_replicas"]]))
    assert analysis.under_replicated_at_end == expected


@pytest.mark.parametrize("name", [*EXAMPLES, "incident"])
def test_under_replicated_from_the_audit_alone(replays: dict[str, tuple[Path, Analysis, str]], name: str,
                                               tmp_path: Path) -> None:
    # Replica sets come from the audit's replicas_after: without decisions.jsonl the counts are the same, but
    # during a reassignment (the decisions name its removing replicas) the whole replica set counts.
    import shutil

    out, analysis, _ = replays[name]
    shutil.copytree(out / "audit", tmp_path / "audit")
    alone = build_report(tmp_path)
    if not reassignments(analysis.decisions):
        assert alone.health.under_replicated.tolist() == analysis.health.under_replicated.tolist()
    assert alone.under_replicated_at_end == analysis.under_replicated_at_end
    assert alone.health.offline.tolist() == analysis.health.offline.tolist()
    assert alone.brokers == analysis.brokers


def test_broker_events_name_the_broker_id_column() -> None:
    row = {"event_type": "BrokerChange", "outcome": "ACCEPTED", "partition": None, "source_offset": 7,
           "event_id": "ev-7", "action": "CLUSTER", "broker_id": 3, "broker_change": "STARTUP", "broker_epoch": 106,
           "message": "any words"}
    started = broker_event(row, None)
    assert started is not None and (started.broker, started.change, started.epoch) == (3, "STARTUP", 106)
    failed = broker_event({**row, "broker_id": 4, "broker_change": "FAILURE", "broker_epoch": 7}, None)
    assert failed is not None and (failed.broker, failed.change, failed.epoch) == (4, "FAILURE", 7)
    shutdown = broker_event({**row, "broker_change": "CONTROLLED_SHUTDOWN", "message": None}, None)
    assert shutdown is not None and shutdown.change == "CONTROLLED_SHUTDOWN"
    assert broker_event({**row, "broker_id": None}, None) is None  # no broker column: not a broker change
    assert broker_event({**row, "outcome": "REJECTED"}, None) is None
    # The failover row an implicit failover adds to a BrokerChange event is not the broker change.
    assert broker_event({**row, "action": "CONTROLLER_FAILOVER"}, None) is None


def test_principals_and_recovery_in_the_tables(replays: dict[str, tuple[Path, Analysis, str]]) -> None:
    _, _, html = replays["double-failure-unclean"]
    unclean = _section(html, "unclean")
    assert "<td>ElectLeaders ev-000015 by User:ops</td>" in unclean
    assert "<td>-1 → 4 (RECOVERING until 09:50:15)</td>" in unclean  # leader_recovery_state_after
    assert "AlterTopicConfig (1 by User:ops)" in _section(html, "rejected")
    _, _, html = replays["incident"]
    assert "ElectLeaders (1 by User:ops), BrokerChange (1)" in _section(html, "rejected")


def test_report_is_one_self_contained_file(replays: dict[str, tuple[Path, Analysis, str]]) -> None:
    for name, (out, _, html) in replays.items():
        assert (out / "report.html").is_file()
        assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I), name
        assert "http://" not in html and "https://" not in html, name
        assert "<script" not in html and "<link" not in html, name
        images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
        assert len(images) == 3, name
        assert all(len(i) > 5000 for i in images)
        assert "<style>" in html


def test_double_failure_summary_in_plain_words(replays: dict[str, tuple[Path, Analysis, str]]) -> None:
    _, analysis, html = replays["double-failure-unclean"]
    text = "\n".join(analysis.summary)
    assert ("Broker 3 failed at 09:47:42; 6 partitions lost their leader; 2 had a new leader in the same second; "
            "2 (orders-6, payments-0) stayed offline until broker 3 returned at 09:55:49; 1 (orders-1) stayed offline "
            "until an unclean election at 09:50:12 (ElectLeaders); 1 (payments-1) stayed offline until an unclean "
            "election at 09:51:15 (AlterTopicConfig)") in text
    assert "Broker 2 failed at 09:47:06; 3 partitions lost their leader; 3 had a new leader in the same second" in text
    assert "2 unclean elections on orders-1 at 09:50:12" in text and "data loss possible" in text
    assert "4 partitions offline at once at 09:47:42" in text
    assert "partition leaders dropped broker 4 from 5 ISRs" in text
    assert "1 audit row rejected: 1 ELIGIBLE_LEADERS_NOT_AVAILABLE" in text
    assert "every partition (15) has a leader" in text
    for line in analysis.summary:
        assert str(escape(line)) in html


def test_rolling_restart_summary(replays: dict[str, tuple[Path, Analysis, str]]) -> None:
    _, analysis, _ = replays["rolling-restart"]
    text = "\n".join(analysis.summary)
    assert text.count(" restarted: its controlled shutdown at ") == 6
    assert ("Broker 1 restarted: its controlled shutdown at 02:10:02 moved leadership of 50 partitions to other "
            "replicas and took it out of 100 more ISRs; it stopped at 02:10:06 and was back at 02:10:51 (epoch 107, "
            "down 45 s); its replicas rejoined 150 ISRs by 02:11:26.") in text
    assert "the periodic leader imbalance check moved 50 partitions back to their preferred leader" in text
    assert "At worst: 150 under-replicated at 02:10:02." in text
    assert analysis.offline_peak[0] == 0 and not analysis.ever_offline
    assert analysis.leader_changes == 550 + 50


def test_a_restarted_broker_rejoins_only_the_isrs_it_had(tmp_path: Path) -> None:
    """Issue 31: "broker 2 came back ... rejoined 15 ISRs", 3 of them of a topic created after it came back, with it
    in the ISR from the start. The story counts only the partitions whose ISR it rejoined."""
    b = ScenarioBuilder()
    for broker in (1, 2, 3):
        b.start_broker(broker)
    b.emit("CreateTopic", topic="orders", assignment=round_robin_assignment(6, [1, 2, 3], 3))
    b.fail_broker(2)
    b.wait(30)
    b.start_broker(2)
    b.emit("CreateTopic", topic="audit-log", assignment=round_robin_assignment(3, [1, 2, 3], 3))
    b.catch_up(2)
    write_outputs(run_local(enumerate(line.encode() for line in b.lines()), ControllerConfig()), tmp_path)
    text = "\n".join(build_report(tmp_path).summary)
    assert "Broker 2 came back at 12:00:36 (epoch 104); its replicas rejoined 6 ISRs by 12:00:43." in text
    assert "Topic audit-log (3 partitions) created at 12:00:37." in text


def test_reassignment_summary_and_moves(replays: dict[str, tuple[Path, Analysis, str]]) -> None:
    out, analysis, _ = replays["reassignment"]
    moves = reassignments(read_decisions_jsonl(out / "decisions.jsonl"))
    assert len(moves) == 13
    assert [m["partition"] for m in moves if m["cancelled"]] == [("inventory", 9)]
    done = [m for m in moves if m["completed"] is not None and not m["cancelled"]]
    assert len(done) == 12 and all(1 in m["from"] and 1 not in m["to"] for m in done)
    text = "\n".join(analysis.summary)
    assert "13 partition reassignments ran: 12 completed between 15:00:37 and 15:11:22" in text
    assert "1 cancelled (inventory-9)" in text
    assert "Brokers 4 and 5 joined the cluster at 15:00:05 and 15:00:06." in text
    assert "dropped broker 1" not in text  # replicas removed by a reassignment are not lagging followers


def _counts(a: Analysis) -> tuple[list[int], list[int], dict[int, list[int]]]:
    """Offline and under-replicated partitions and the partitions each broker leads, after each event."""
    return (a.health.offline.tolist(), a.health.under_replicated.tolist(),
            {b: a.health.led(b).tolist() for b in a.brokers})


@pytest.mark.parametrize("name", [*EXAMPLES, "incident"])
def test_the_decisions_the_report_keeps_give_what_every_decision_gives(
        replays: dict[str, tuple[Path, Analysis, str]], name: str) -> None:
    out, analysis, _ = replays[name]
    every = read_decisions_jsonl(out / "decisions.jsonl")
    assert analysis.inputs.decision_count == len(every)
    assert reassignments(analysis.inputs.decisions) == reassignments(every)
    # The timeline from every decision: the same partitions (removing replicas included) and counts per event.
    whole = analyse(replace(analysis.inputs, decisions=every))
    assert whole.partitions == analysis.partitions and _counts(whole) == _counts(analysis)
    if name == "reassignment":  # the test is not empty: a few decisions kept, not all
        assert 0 < len(analysis.inputs.decisions) < len(every)


def test_an_audit_out_of_log_order_is_read_in_log_order(replays: dict[str, tuple[Path, Analysis, str]],
                                                        tmp_path: Path) -> None:
    out, _, _ = replays["incident"]
    rows = read_delta(out / "audit")
    half = len(rows) // 2  # two files, each backwards: read whole and sorted, not batch by batch
    write_delta(tmp_path / "audit", list(reversed(rows[half:])), AUDIT)
    write_delta(tmp_path / "audit", list(reversed(rows[:half])), AUDIT, mode="append")
    in_order = [dict(r) for r in read_audit(out / "audit")]
    assert [dict(r) for r in read_audit(tmp_path / "audit")] == in_order
    assert [(r["source_offset"], r["topic"] or "") for r in in_order] == sorted(
        (r["source_offset"], r["topic"] or "") for r in in_order)


def test_an_audit_with_each_events_rows_in_any_order_is_read_a_batch_at_a_time_in_log_order(
        replays: dict[str, tuple[Path, Analysis, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A KRaft local replay writes a broker change's cluster row after its partitions' rows: the events are in the
    log's order, an event's own rows are not. Read in batches smaller than an event, each event is put in log order,
    and the table is never read whole."""
    import streaming.analysis.columns as columns

    out, _, _ = replays["rolling-restart"]
    rows = read_delta(out / "audit")
    by_event = [list(reversed(list(group))) for _, group in itertools.groupby(rows, key=lambda r: r["source_offset"])]
    write_delta(tmp_path / "audit", [r for group in by_event for r in group], AUDIT)
    in_order = [dict(r) for r in read_audit(out / "audit")]
    monkeypatch.setattr(columns, "_BATCH", 7)
    files = columns._file_batches
    read: list[int] = []

    def spied(*args: Any) -> Any:
        for batch in files(*args):
            read.append(batch.num_rows)
            yield batch

    monkeypatch.setattr(columns, "_file_batches", spied)
    assert [dict(r) for r in read_audit(tmp_path / "audit")] == in_order
    assert max(len(group) for group in by_event) > 7 and sum(read) == len(rows) and max(read) == 7


def _typed(values: list[Any]) -> list[Any]:
    """Values with their types, nested lists' items too: equal values of another type differ."""
    return [[_typed(v)] if isinstance(v, list) else (type(v), v) for v in values]


def test_the_audits_columns_reach_python_as_arrow_gives_them_value_by_value() -> None:
    """`_column_values` goes through numpy and dictionaries, not a scalar per value: the same values, types and
    nulls as `to_pylist`, on a slice too (a list array's offsets then index its whole child array)."""
    import pyarrow as pa

    from streaming.analysis.columns import _column_values

    arrays = [pa.array([1, None, 3], pa.int32()), pa.array([True, None, False]), pa.array(["a", None, "a"]),
              pa.array([[1, 2], None, [], [2, 1], [1, 2]], pa.list_(pa.int32())),
              pa.array([["x"], None, ["x", "y"]], pa.list_(pa.string())),
              pa.array([[(1, "ONLINE")], None, []], pa.map_(pa.int32(), pa.string())),
              pa.array([1.5, None])]
    for array in [*arrays, *(a.slice(1) for a in arrays)]:
        expected = [dict(v) if v and pa.types.is_map(array.type) else v for v in array.to_pylist()]
        values = _column_values(array, {}, {})
        assert _typed(values) == _typed(expected)
    lists = _column_values(arrays[3], {}, {})
    assert lists[0] is lists[4]  # equal broker lists: one object


@pytest.mark.parametrize("name", [*EXAMPLES, "incident"])
def test_the_audit_as_rows_is_its_columns_row_by_row(replays: dict[str, tuple[Path, Analysis, str]], name: str
                                                      ) -> None:
    import pyarrow as pa

    from streaming.analysis.columns import audit_batches

    out, _, _ = replays[name]
    expected = []
    for batch in audit_batches(out / "audit"):
        maps = {f.name for f in batch.schema if pa.types.is_map(f.type)}
        expected.extend({k: dict(v) if k in maps and v else v for k, v in row.items()} for row in batch.to_pylist())
    rows = [dict(r) for r in read_audit(out / "audit")]
    assert rows == expected
    assert [_typed(list(r.values())) for r in rows] == [_typed(list(r.values())) for r in expected]


def test_zombie_summary(replays: dict[str, tuple[Path, Analysis, str]]) -> None:
    _, analysis, _ = replays["zombie-controller"]
    text = "\n".join(analysis.summary)
    assert "controller 2 took over at epoch 2" in text
    assert "a new controller (no ControllerChange in the log) took over at epoch 3" in text
    assert "12 audit rows rejected: 6 ELECTION_NOT_NEEDED, 5 STALE_CONTROLLER_EPOCH, 1 DUPLICATE_EVENT." in text
    assert ("Between 22:36:07 and 22:36:10 a fenced controller still at epoch 1 (epoch 2 was active) logged 4 events "
            "(BrokerChange, IsrChange, ElectLeaders, ReassignPartitions): all rejected with STALE_CONTROLLER_EPOCH, "
            "nothing applied.") in text
    assert "a fenced controller still at epoch 2 (epoch 3 was active) logged 1 event (LeaderImbalanceCheck)" in text


def test_quarantined_records_are_tabled(replays: dict[str, tuple[Path, Analysis, str]]) -> None:
    out, analysis, html = replays["incident"]
    quarantine = read_delta(out / "quarantine")
    assert len(quarantine) == 1
    section = _section(html, "quarantine")
    assert f'<td class="num">{quarantine[0]["source_offset"]}</td>' in section
    assert "&#34;broker_id&#34;" in section or "&quot;broker_id&quot;" in section  # the raw record, escaped
    assert any("quarantine (offset 38)" in line for line in analysis.summary)


def test_most_leader_changes_table(replays: dict[str, tuple[Path, Analysis, str]]) -> None:
    out, _, html = replays["double-failure-unclean"]
    changes: Counter[str] = Counter()
    for r in _audit(out):
        if (r["partition"] is not None and r["outcome"] == "ACCEPTED" and r["leader_after"] not in (-1, None)
                and r["leader_after"] != r["leader_before"] and r["from_state"] != "NonExistentPartition"):
            changes[f"{r['topic']}-{r['partition']}"] += 1
    section = _section(html, "leader-changes")
    rows = re.findall(r"<td><code>([\w.-]+)</code></td><td class=\"num\">(\d+)</td>", section)
    assert rows[0] == (changes.most_common(1)[0][0], str(changes.most_common(1)[0][1]))
    assert {p: int(n) for p, n in rows} == {p: n for p, n in changes.items() if p in dict(rows)}


def test_empty_log_gives_a_report(tmp_path: Path) -> None:
    write_outputs(ReplayResult(), tmp_path)
    html = write_report(tmp_path).read_text(encoding="utf-8")
    assert "audit table is empty" in html
    assert html.count("data:image/png;base64,") == 3


def test_report_without_decisions_or_quarantine(replays: dict[str, tuple[Path, Analysis, str]],
                                                tmp_path: Path) -> None:
    source = SOURCES["double-failure-unclean"]
    write_outputs(run_local(read_event_log(source), ControllerConfig()), tmp_path)
    (tmp_path / "decisions.jsonl").unlink()
    import shutil

    shutil.rmtree(tmp_path / "quarantine")
    analysis = build_report(tmp_path)
    # Replica sets are the audit's replicas_after: the same as with the decisions (this log reassigns nothing).
    assert analysis.under_replicated_at_end == replays["double-failure-unclean"][1].under_replicated_at_end != []
    assert len(analysis.ever_offline) == 4
    assert write_report(tmp_path).exists()


def test_isrflow_report_writes_a_replays_report_in_its_folder_and_a_runs_beside_its_lake(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`isrflow report DIR_OR_LAKE`: a replay's folder holds its own report.html; a run's LAKE (the folder of its
    audit table, a `decisions` Delta table beside it) gets nothing new among its tables, the report goes beside it;
    `--out` puts it anywhere."""
    from streaming.cli import main

    result = run_local(read_event_log(SOURCES["double-failure-unclean"]), ControllerConfig())
    replay = tmp_path / "replay"
    write_outputs(result, replay)
    assert main(["report", str(replay)]) == 0
    assert capsys.readouterr().out.strip() == str(replay / "report.html")
    lake = tmp_path / "lake"
    write_delta(lake / "audit", read_delta(replay / "audit"), AUDIT)
    write_delta(lake / "decisions", [{**d, "decided_at": datetime.now(UTC)} for d in result.decisions], DECISION)
    assert main(["report", str(lake)]) == 0
    beside = tmp_path / "lake-report.html"
    assert capsys.readouterr().out.strip() == str(beside)
    assert sorted(p.name for p in lake.iterdir()) == ["audit", "decisions"]
    # The same story from the run's tables as from the replay's folder.
    assert "Broker 3 failed at 09:47:42; 6 partitions lost their leader" in beside.read_text(encoding="utf-8")
    assert main(["report", str(lake), "--out", str(tmp_path / "incidents" / "31.html")]) == 0
    assert (tmp_path / "incidents" / "31.html").is_file()


def test_isrflow_report_names_its_argument_as_the_docs_do(capsys: pytest.CaptureFixture[str]) -> None:
    from streaming.cli import main

    with pytest.raises(SystemExit):
        main(["report", "--help"])
    usage = capsys.readouterr().out
    assert "usage: isrflow report [-h] [--out FILE] DIR_OR_LAKE" in usage
    docs = (ROOT / "docs" / "incident-analysis.md").read_text() + (ROOT / "docs" / "kraft.md").read_text()
    assert "isrflow report DIR_OR_LAKE" in docs or "isrflow report LAKE" in docs
    assert "python -m streaming.analysis.report" not in docs


def test_missing_audit_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no audit table"):
        write_report(tmp_path)


def test_event_time_is_monotonic_along_the_log(replays: dict[str, tuple[Path, Analysis, str]]) -> None:
    # The incident log redelivers an event with an older ts: it is drawn at the later time.
    out, analysis, _ = replays["incident"]
    times = list(analysis.times.values())
    assert times == sorted(times)
    by_offset: dict[int, set[str]] = defaultdict(set)
    for r in read_audit(out / "audit"):
        by_offset[r["source_offset"]].add(r["event_ts"])
    assert min(by_offset[37]) < max(by_offset[36])  # the redelivery's own ts is older


# -- progress ---------------------------------------------------------------------------------------------

def _fake_clock(step: float) -> Any:
    ticks = itertools.count(0.0, step)
    return lambda: next(ticks)


def test_progress_plain_lines_every_ten_percent() -> None:
    buf = io.StringIO()
    progress = Progress(200, stream=buf, clock=_fake_clock(0.01), every_seconds=1000)
    assert not progress.interactive  # a StringIO is not a terminal
    for _ in range(200):
        progress.advance()
    progress.close()
    progress.close()  # idempotent
    lines = buf.getvalue().splitlines()
    assert len(lines) == 11
    assert lines[0].startswith("replay: 20/200 events (10%), ") and "events/s, ETA " in lines[0]
    assert lines[-2].startswith("replay: 200/200 events (100%)")
    assert lines[-1].startswith("replay: done, 200 events in ")


def test_progress_plain_lines_every_n_seconds_without_total() -> None:
    buf = io.StringIO()
    with Progress(None, stream=buf, clock=_fake_clock(1.0), every_seconds=5, unit="records") as progress:
        for _ in range(20):
            progress.advance(10)
    lines = buf.getvalue().splitlines()
    assert lines[0] == "replay: 50 records, 10 records/s, elapsed 0:00:05"
    assert len(lines) == 5 and lines[-1].startswith("replay: done, 200 records in ")


def test_progress_bar_on_a_terminal() -> None:
    buf = io.StringIO()
    progress = Progress(50, stream=buf, interactive=True)
    for _ in range(5):
        progress.advance(10)
    progress.close()
    out = buf.getvalue()
    assert "50/50" in out and "events" in out and "events/s" in out and "ETA" in out
