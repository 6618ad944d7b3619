"""The report of a real controller's history where isrflow is wrong (streaming/analysis/controller_story.py,
streaming/history/trust.py): a warning first, at the top of the page and of the printed summary, with the agreement
figure; "What happened" told from the controller's own records (observed.jsonl); every disagreement marked.

The logs are real ones kept as regressions, each replayed under the other mode's rules on purpose, so that isrflow is
wrong on them whatever the rules learn next: a Kafka 2.6-protocol ZooKeeper history under the kraft rules, and a Kafka
4.4 KRaft log under the zk rules.
A KRaft log isrflow reproduces gets no warning and no mark."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from statemachine.controller import ControllerConfig
from statemachine.rules import KRAFT, ZK
from streaming.analysis.controller_story import real_history_warnings
from streaming.analysis.words import pname
from streaming.history.trust import AgreementFigures, ImportFacts, trust_warnings
from streaming.io.jsonl import read_jsonl
from streaming.jobs.replay import ReplayOptions, replay

INTEGRATION = Path(__file__).resolve().parents[1] / "integration"
ZK_WRONG = INTEGRATION / "zklog" / "regressions" / "zookeeper-2.6-seed-3-multi"
KRAFT_JBOD = INTEGRATION / "kraftlog" / "regressions" / "kafka-4.4-jbod"
KRAFT_AGREES = INTEGRATION / "kraftlog" / "regressions" / "kafka-4.1-seed-1"


def _items(page: str, section_id: str) -> list[tuple[str, str]]:
    """The (class, text) of each <li> in the element with id `section_id`, in order."""
    start = page.index(f'id="{section_id}"')
    end = page.index("</ul>", start)
    return [(cls or "", html.unescape(re.sub(r"<[^>]+>", "", text)).strip())
            for cls, text in re.findall(r'<li(?: class="([^"]*)")?>(.*?)</li>', page[start:end], re.S)]


def _figures(out: Path) -> AgreementFigures:
    rows, histories = read_jsonl(out / "agreement.jsonl"), read_jsonl(out / "histories.jsonl")
    return AgreementFigures(len(rows), sum(1 for r in rows if not r["match"]), len(histories),
                            sum(1 for h in histories if h["match"]))


@pytest.fixture(scope="module")
def zk_wrong(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("zk-wrong")
    printed = replay(ReplayOptions(f"zk:{ZK_WRONG}", out, engine="local", config=ControllerConfig(rules=KRAFT)))
    return out, printed


def test_the_warning_comes_first_with_the_agreement_figure(zk_wrong: tuple[Path, str]) -> None:
    out, printed = zk_wrong
    figures = _figures(out)
    assert figures.beyond_share  # the log this test is about: isrflow does not reproduce it
    first = printed.splitlines()[0]
    assert first.startswith("WARNING: isrflow's replay differs from the controller") and figures.counted() in first
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.index('id="warnings"') < page.index('id="cards"') < page.index('id="summary"')
    assert _items(page, "warnings")[0][1] == first
    assert real_history_warnings(out)[0] == first.removeprefix("WARNING: ")  # `isrflow report DIR` says it again


def test_what_happened_is_told_from_the_controllers_records(zk_wrong: tuple[Path, str]) -> None:
    out, _ = zk_wrong
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.index('id="summary"') < page.index('id="controller-story"') < page.index('id="replay-story"')
    story = [text for _, text in _items(page, "controller-story")]
    observed = read_jsonl(out / "observed.jsonl")
    first = observed[0]
    assert f"{first['cause']}" in story[0] and f"{pname(first['topic'], first['partition'])} (leader " \
        f"{first['leader']})" in story[0]
    # The end of the log as the controller's records leave it.
    last = {(o["topic"], o["partition"]): o for o in observed}
    offline = [k for k, o in last.items() if o["leader"] == -1]
    assert story[-1].startswith("At the end of the log, by the controller's records, ")
    assert (f"every partition ({len(last)}) has a leader" in story[-1]) == (not offline)


def test_every_disagreement_is_marked(zk_wrong: tuple[Path, str]) -> None:
    out, _ = zk_wrong
    page = (out / "report.html").read_text(encoding="utf-8")
    items = _items(page, "controller-story")
    marked = [text for cls, text in items if cls == "differs"]
    assert all("isrflow differs here" in text or text.startswith("isrflow ") for text in marked)
    assert not any("isrflow differs" in text for cls, text in items if cls != "differs")
    rows = read_jsonl(out / "agreement.jsonl")
    wrong = {r["cause_event_id"] for r in rows if not r["match"]}
    agreed = {r["cause_event_id"] for r in rows if r["match"]} - wrong
    # An event isrflow got wrong is marked where the story names it; one it got right never is.
    for text in (t for t in marked if "(zk-" in t):
        event = re.search(r"\((zk-[^)]+)\)", text).group(1)
        assert event in wrong and event not in agreed
    first_wrong = next(r for r in rows if not r["match"] and r["controller"] is not None)
    assert any(f"{pname(first_wrong['topic'], first_wrong['partition'])} at offset {first_wrong['source_offset']}"
               in text for text in marked)


def test_a_kraft_log_under_the_wrong_rules_is_told_from_its_controller(tmp_path: Path) -> None:
    printed = replay(ReplayOptions(f"kraft:{KRAFT_JBOD}", tmp_path, engine="local", config=ControllerConfig(rules=ZK)))
    figures = _figures(tmp_path)
    assert printed.startswith("WARNING: ") and figures.counted() in printed.splitlines()[0]
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    story = _items(page, "controller-story")
    assert "AssignReplicasToDirs" in " ".join(text for _, text in story)  # the controller's records, not isrflow's
    assert sum(1 for cls, _ in story if cls == "differs") >= 1


def test_a_log_isrflow_reproduces_gets_no_warning_and_no_mark(tmp_path: Path) -> None:
    printed = replay(ReplayOptions(f"kraft:{KRAFT_AGREES}", tmp_path, engine="local",
                                   config=ControllerConfig(rules=KRAFT)))
    assert "agreement with the controller: 100.0%" in printed and "WARNING" not in printed
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="warnings"' not in page
    story = _items(page, "controller-story")
    assert story and not any(cls == "differs" for cls, _ in story)


def test_record_kinds_that_touch_no_partition_are_no_warning() -> None:
    quiet = ImportFacts({"NO_OP_RECORD": 51})
    assert trust_warnings(quiet, AgreementFigures(100, 1, 10, 10)) == []  # 1% is within the share
    loud = ImportFacts({"NO_OP_RECORD": 51, "NEW_PARTITION_KIND_RECORD": 2}, unexplained=3)
    warnings = trust_warnings(loud, AgreementFigures(100, 2))
    assert [w.split(":")[0] for w in warnings] == [
        "isrflow's replay differs from the controller", "the log holds record kinds isrflow does not model",
        "3 of the controller's partition changes match no event isrflow models (unexplained)"]
    assert "NEW_PARTITION_KIND_RECORD x2" in warnings[1] and "NO_OP" not in warnings[1]


def test_a_runs_tables_give_the_same_warning_and_story(zk_wrong: tuple[Path, str], tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`isrflow run` behind a bridge keeps the controller's changes and the agreement in Delta tables (observed,
    agreement) beside its audit: `isrflow report LAKE` tells the same story from them, with the same marks."""
    from datetime import UTC, datetime

    from schemas.tables import AGREEMENT, AUDIT, DECISION, OBSERVED
    from streaming.cli import main
    from streaming.history.agreement import to_table_rows
    from streaming.io.delta import read_delta, write_delta

    out, _ = zk_wrong
    lake = tmp_path / "lake"
    write_delta(lake / "audit", read_delta(out / "audit"), AUDIT)
    decisions = read_jsonl(out / "decisions.jsonl")
    write_delta(lake / "decisions", [{**d, "decided_at": datetime.now(UTC)} for d in decisions], DECISION)
    observed = read_jsonl(out / "observed.jsonl")
    # In any order, as a table returns them; no log dirs under ZooKeeper.
    write_delta(lake / "observed", [{"directories": [], **o, "batch_id": 0} for o in reversed(observed)], OBSERVED)
    write_delta(lake / "agreement", to_table_rows(read_jsonl(out / "agreement.jsonl"), 0), AGREEMENT)
    assert main(["report", str(lake)]) == 0
    printed = capsys.readouterr().out.splitlines()
    figures = _figures(out)
    # A run keeps no histories: the warning counts the decisions alone.
    run_figures = AgreementFigures(figures.decisions, figures.disagreements)
    assert printed[0].startswith("WARNING: isrflow's replay differs from the controller: it reproduces "
                                 f"{run_figures.counted()}. ")
    page = (tmp_path / "lake-report.html").read_text(encoding="utf-8")
    replayed = (out / "report.html").read_text(encoding="utf-8")
    assert _items(page, "controller-story") == _items(replayed, "controller-story")
