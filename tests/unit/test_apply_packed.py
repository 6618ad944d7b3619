"""`apply_packed`, the partition operator's per-group work behind every state API: fed one event's commands at a
time, grouped by key, with the record kept only in the state it is given, it emits what the controller's
own in-memory run of the same events does."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from schemas import codec
from schemas.events import parse_event
from schemas.records import to_row
from statemachine.controller import Controller
from streaming.engine.partitions import apply_packed, pack_command
from streaming.infra.scenario import ScenarioBuilder


class DictState:
    """A GroupState's calls over one slot of a dict: the state store of one key."""

    def __init__(self, store: dict[Any, tuple[Any, ...]], key: Any) -> None:
        self.store, self.key = store, key

    @property
    def exists(self) -> bool:
        return self.key in self.store

    @property
    def get(self) -> tuple[Any, ...]:
        return self.store[self.key]

    def update(self, row: tuple[Any, ...]) -> None:
        self.store[self.key] = row

    def remove(self) -> None:
        del self.store[self.key]


class Untouchable:
    """The state of a key with no partition: any use of it fails the test."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"cluster-level commands used the state ({name})")


def packed(kind: str, row: Any) -> dict[str, Any]:
    return {"kind": kind, **json.loads(codec.compact(to_row(row)))}


def test_the_record_lives_in_the_state_between_batches_and_cluster_commands_never_touch_it() -> None:
    b = ScenarioBuilder()
    for broker in (1, 2, 3):
        b.start_broker(broker)
    b.emit("CreateTopic", topic="t", assignment={"0": [1, 2, 3], "1": [2, 3, 1]})
    b.fail_broker(1)
    controller, store = Controller(), {}
    for offset, line in enumerate(b.lines()):
        handled = controller.handle(parse_event(line.encode()), offset)
        groups: dict[tuple[Any, Any], list[bytes]] = defaultdict(list)
        for h in reversed(handled):  # out of log order: apply_packed sorts by (source_offset, step)
            groups[(h.command.topic, h.command.partition)].append(pack_command(h.command))
        out = []
        for key, commands in groups.items():
            state = Untouchable() if key[1] is None else DictState(store, key)
            out += apply_packed(key, commands, state)
        expected = [packed("audit", h.applied.audit) for h in handled]
        expected += [packed("decision", d) for h in handled for d in h.applied.decisions]
        assert sorted(map(json.loads, out), key=json.dumps) == sorted(expected, key=json.dumps)
    assert set(store) == {("t", 0), ("t", 1)}
    leaders = {key: json.loads(row[0])["leader"] for key, row in store.items()}
    assert leaders == {("t", 0): 2, ("t", 1): 2}
