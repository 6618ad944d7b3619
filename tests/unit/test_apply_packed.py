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
from statemachine.record import PartitionRecord
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


def run_packed(lines: list[str]) -> dict[Any, tuple[Any, ...]]:
    """Each event's commands through `apply_packed`, checked against the controller's own run; returns the store."""
    controller, store = Controller(), {}
    for offset, line in enumerate(lines):
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
        assert {k: json.loads(v[0]) for k, v in store.items()} == {
            k: json.loads(codec.dumps(r, PartitionRecord)) for k, r in controller.partitions.items()}
    return store


def three_brokers_and_topic_t() -> ScenarioBuilder:
    """Brokers 1, 2 and 3 started, topic t created with two partitions of three replicas."""
    b = ScenarioBuilder()
    for broker in (1, 2, 3):
        b.start_broker(broker)
    b.emit("CreateTopic", topic="t", assignment={"0": [1, 2, 3], "1": [2, 3, 1]})
    return b


def test_the_record_lives_in_the_state_between_batches_and_cluster_commands_never_touch_it() -> None:
    b = three_brokers_and_topic_t()
    b.fail_broker(1)
    store = run_packed(b.lines())
    assert set(store) == {("t", 0), ("t", 1)}
    leaders = {key: json.loads(row[0])["leader"] for key, row in store.items()}
    assert leaders == {("t", 0): 2, ("t", 1): 2}


def test_the_controllers_stale_cache_below_protocol_2_7_and_an_alter_partitions_partitions_go_through() -> None:
    # The additions for the ZooKeeper-era requests: an ISR change a leader wrote itself leaves the ISR the controller
    # held in the record (in the state store between batches) until its IsrChangeNotification; an IsrChange may
    # name the other partitions of its AlterPartition.
    b = ScenarioBuilder()
    b.emit("UpdateFeatures", features={"metadata.version": 0})
    for broker in (1, 2, 3):
        b.start_broker(broker)
    b.emit("CreateTopic", topic="t", assignment={"0": [1, 2, 3], "1": [1, 3, 2]})
    request = [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}]
    for partition in (0, 1):
        b.emit("IsrChange", topic="t", partition=partition, broker_id=1, broker_epoch=b.broker_epochs[1],
               leader_epoch=0, partition_epoch=0, isr=[1, 2], request_partitions=request)
    store = run_packed(b.lines())
    assert {key: (json.loads(row[0])["isr"], json.loads(row[0])["cached_isr"]) for key, row in store.items()} == {
        ("t", 0): ([1, 2], [1, 2, 3]), ("t", 1): ([1, 2], [1, 3, 2])}
    b.emit("IsrChangeNotification", partitions=request)
    store = run_packed(b.lines())
    assert not any("cached_isr" in json.loads(row[0]) for row in store.values())


def test_brokers_started_together_go_through() -> None:
    # The addition for brokers one read of ZooKeeper's /brokers/ids found together (BrokerChange new_brokers): one
    # command per partition brings the replicas of both online; the second registration's event is a cluster row.
    b = three_brokers_and_topic_t()
    b.fail_broker(2)
    b.fail_broker(3)
    together = {"2": 200, "3": 201}
    for broker, epoch in together.items():
        b.emit("BrokerChange", broker_id=int(broker), change="STARTUP", broker_epoch=epoch, new_brokers=together)
    store = run_packed(b.lines())
    assert {key: json.loads(row[0])["replica_states"] for key, row in store.items()} == {
        key: {"1": "OnlineReplica", "2": "OnlineReplica", "3": "OnlineReplica"} for key in (("t", 0), ("t", 1))}
