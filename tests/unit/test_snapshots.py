"""The controller's snapshots (versioned JSON, whole or change sets), the sequencer's changelog of them, and
the bounded duplicate-event window."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemas.events import Malformed, parse_event
from statemachine.controller import SNAPSHOT_VERSION, Controller, ControllerConfig, SnapshotError
from statemachine.errors import Error
from streaming.engine.sequencer import SequencerState, SequencerStateError
from streaming.infra.scenario import ScenarioBuilder, incident_scenario, round_robin_assignment


def incident() -> list[bytes]:
    """The bundled incident's well-formed events (malformed ones never reach the controller)."""
    return [raw for raw in (line.encode() for line in incident_scenario().lines())
            if not isinstance(parse_event(raw), Malformed)]


def handle_all(controller: Controller, log: list[bytes], start: int = 0) -> list[object]:
    return [h for offset, raw in enumerate(log[start:], start=start) for h in controller.handle(parse_event(raw),
                                                                                                 offset)]


def test_a_whole_snapshot_round_trips_and_resumes_identically() -> None:
    log = incident()
    reference = handle_all(Controller(), log)
    for cut in range(0, len(log) + 1, 3):
        head = Controller()
        first = handle_all(head, log[:cut])
        resumed = Controller()
        resumed.restore(head.snapshot())
        assert resumed.partitions == head.partitions and resumed.cluster == head.cluster
        assert first + handle_all(resumed, log, cut) == reference


def test_change_sets_on_top_of_a_whole_snapshot_rebuild_the_controller() -> None:
    log = incident()
    live, rebuilt = Controller(), Controller()
    rebuilt.restore(live.snapshot())
    last_offset = -1
    for start in range(0, len(log), 4):  # micro-batches of 4 events
        touched = {(h.command.topic, h.command.partition)
                   for offset, raw in enumerate(log[start:start + 4], start=start)
                   for h in live.handle(parse_event(raw), offset) if h.command.partition is not None}
        rebuilt.restore(live.snapshot(touched, last_offset))
        last_offset = min(start + 4, len(log)) - 1
        assert rebuilt.partitions == live.partitions
        assert rebuilt.cluster == live.cluster


def test_a_snapshot_is_json_by_field_name_with_a_version() -> None:
    controller = Controller()
    handle_all(controller, incident())
    body = json.loads(controller.snapshot())
    assert body["format"] == "isrflow.controller" and body["version"] == SNAPSHOT_VERSION
    assert {"topic", "partition", "leader", "isr", "replica_states"} <= body["partitions"][0].keys()


@pytest.mark.parametrize("damage, message", [
    (lambda b: b[: len(b) // 2], "corrupt or truncated"),
    (lambda b: b"\x80\x04pickle", "corrupt or truncated"),
    (lambda b: json.dumps({**json.loads(b), "version": SNAPSHOT_VERSION + 1}).encode(), "reads version"),
    (lambda b: json.dumps({**json.loads(b), "format": "other"}).encode(), "not an isrflow.controller snapshot"),
    (lambda b: json.dumps({k: v for k, v in json.loads(b).items() if k != "cluster"}).encode(), "lacks"),
    (lambda b: json.dumps({**json.loads(b), "partitions": [{"topic": "t"}]}).encode(), "does not decode"),
])
def test_a_damaged_or_foreign_snapshot_is_refused(damage, message) -> None:  # type: ignore[no-untyped-def]
    controller = Controller()
    handle_all(controller, incident())
    with pytest.raises(SnapshotError, match=message):
        Controller().restore(damage(controller.snapshot()))


def batches(log: list[bytes], size: int) -> list[list[tuple[int, bytes]]]:
    return [list(enumerate(log))[i:i + size] for i in range(0, len(log), size)]


def run_batches(state: SequencerState, log: list[bytes], size: int, upto: int | None = None) -> Controller:
    """What the Spark sequencer does per micro-batch: restore, handle, save."""
    controller, last = Controller(), -1
    for batch_id, batch in enumerate(batches(log, size)[:upto]):
        touched = {(h.command.topic, h.command.partition) for offset, raw in batch
                   for h in controller.handle(parse_event(raw), offset) if h.command.partition is not None}
        state.save(controller, batch_id, touched, last)
        last = batch[-1][0]
    return controller


def test_the_sequencer_state_resumes_any_batch_from_its_changelog(tmp_path: Path) -> None:
    log = incident()
    for batch_id in range(len(batches(log, 3))):
        state = SequencerState(tmp_path / f"s{batch_id}")
        expected = run_batches(state, log, 3, upto=batch_id)
        resumed = Controller()
        state.load(resumed, batch_id)
        assert resumed.partitions == expected.partitions and resumed.cluster == expected.cluster


def isr_log() -> list[bytes]:
    """10 partitions, then 80 events that each change one partition."""
    b = ScenarioBuilder()
    for broker in (1, 2, 3):
        b.start_broker(broker)
    b.emit("CreateTopic", topic="t", assignment=round_robin_assignment(10, [1, 2, 3], 3))
    for _ in range(40):
        b.alter_isr("t", 0, [b.record("t", 0).leader])
        b.catch_up(2)
    return [line.encode() for line in b.lines()]


def test_whole_snapshots_are_written_as_changes_add_up_and_old_files_go(tmp_path: Path) -> None:
    log = isr_log()
    state = SequencerState(tmp_path)
    run_batches(state, log, 1)
    names = sorted(p.name for p in tmp_path.iterdir())
    wholes = [n for n in names if ".whole." in n]
    # Batch 0, then one whole per ~10 changed records; only the last two wholes and what follows them stay.
    assert len(wholes) == 2
    assert len(names) < len(log) / 2
    resumed = Controller()
    state.load(resumed, len(log))
    expected = Controller()
    handle_all(expected, log)
    assert resumed.partitions == expected.partitions


def test_a_whole_snapshot_also_bounds_the_change_sets_to_read(tmp_path: Path) -> None:
    state = SequencerState(tmp_path, max_changes=5)
    run_batches(state, isr_log(), 1)
    assert len(list(tmp_path.glob("*.changes.json"))) <= 2 * 6


def test_missing_state_is_an_error_naming_the_fix(tmp_path: Path) -> None:
    state = SequencerState(tmp_path)
    with pytest.raises(SequencerStateError, match=r"state after batch 4 is missing.*new checkpoint"):
        state.load(Controller(), 5)
    run_batches(state, isr_log(), 1)
    newest = max(int(p.name.split(".")[0]) for p in tmp_path.glob("*.changes.json"))
    (tmp_path / f"{newest - 1}.changes.json").unlink()
    with pytest.raises(SequencerStateError, match="change sets missing"):
        state.load(Controller(), newest + 1)


def test_corrupt_or_pickled_state_is_an_error_naming_the_fix(tmp_path: Path) -> None:
    state = SequencerState(tmp_path)
    run_batches(state, incident(), 2, upto=4)
    path = next(tmp_path.glob("3.*.json"))
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(SequencerStateError, match=r"3\..*corrupt or truncated.*restore the missing or damaged"):
        state.load(Controller(), 4)
    (tmp_path / "2.pickle").write_bytes(b"old")
    with pytest.raises(SequencerStateError, match="pickle"):
        state.load(Controller(), 3)


def test_a_duplicate_event_id_is_rejected_within_the_window_only() -> None:
    b = ScenarioBuilder()
    b.start_broker(1)
    b.start_broker(2)
    log = [line.encode() for line in b.lines()]
    first = json.loads(log[1])
    controller = Controller(ControllerConfig(duplicate_window=3))
    handle_all(controller, log)
    again = json.dumps(first).encode()  # the same event_id, at offsets 2 (within 3 of 1) and 5 (beyond)
    [within] = controller.handle(parse_event(again), 2)
    assert within.applied.audit.error == Error.DUPLICATE_EVENT
    [beyond] = controller.handle(parse_event(json.dumps({**first, "broker_epoch": 999}).encode()), 5)
    assert beyond.applied.audit.error != Error.DUPLICATE_EVENT


def test_the_duplicate_window_keeps_memory_bounded() -> None:
    b = ScenarioBuilder()
    b.start_broker(1)
    b.emit("CreateTopic", topic="t", assignment={"0": [1]})
    for _ in range(500):
        b.emit("LeaderImbalanceCheck")
    controller = Controller(ControllerConfig(duplicate_window=50))
    handle_all(controller, [line.encode() for line in b.lines()])
    assert len(controller.cluster.seen_event_ids) <= 2 * 50 + 1
