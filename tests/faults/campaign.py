"""The fault-injection campaign's event log: a long, deterministic story of rolling restarts, broker
failures, reassignments and elections on a 6-broker cluster, built with `ScenarioBuilder` like the
examples, so every IsrChange carries the epochs its leader really holds."""

from __future__ import annotations

import random

from streaming.infra.scenario import ScenarioBuilder, round_robin_assignment

BROKERS = [1, 2, 3, 4, 5, 6]


def campaign_log(min_events: int = 5000, seed: int = 12) -> list[bytes]:
    rng = random.Random(seed)
    b = ScenarioBuilder(start="2026-10-01T00:00:00Z", step_seconds=0.5)
    for broker in BROKERS:
        b.start_broker(broker)
    b.emit("CreateTopic", topic="orders", assignment=round_robin_assignment(24, BROKERS, 3))
    b.emit("CreateTopic", topic="payments", assignment=round_robin_assignment(12, BROKERS, 3, offset=2))
    b.emit("CreateTopic", topic="audit-log", assignment=round_robin_assignment(12, BROKERS, 2, offset=4))
    stories = (_rolling_restart, _failure, _reassignment, _elections, _isr_shrink)
    while len(b.events) < min_events:
        rng.choice(stories)(b, rng)
    b.raw('{"type": "IsrChange", "topic": "orders", "partition": 3')  # one record to quarantine
    return [line.encode() for line in b.lines()]


def _rolling_restart(b: ScenarioBuilder, rng: random.Random) -> None:
    for broker in rng.sample(BROKERS, 3):
        b.controlled_shutdown(broker)
        b.fail_broker(broker)
        b.wait(30)
        b.start_broker(broker)
        b.catch_up(broker)
    b.emit("LeaderImbalanceCheck")


def _failure(b: ScenarioBuilder, rng: random.Random) -> None:
    broker = rng.choice(BROKERS)
    b.fail_broker(broker)
    b.wait(60)
    b.start_broker(broker)
    b.catch_up(broker)


def _reassignment(b: ScenarioBuilder, rng: random.Random) -> None:
    topic = rng.choice(["orders", "payments"])
    moved = sorted(rng.sample(range(12), 3))
    targets = {p: rng.sample(BROKERS, 3) for p in moved}
    b.emit("ReassignPartitions", principal="User:ops",
           partitions=[{"topic": topic, "partition": p, "replicas": targets[p]} for p in moved])
    for p in moved:  # the new replicas join the ISR: the move completes
        rec = b.record(topic, p)
        if rec.leader >= 0 and rec.adding_replicas:
            b.alter_isr(topic, p, [*rec.isr, *(r for r in rec.adding_replicas if r not in rec.isr)])


def _elections(b: ScenarioBuilder, rng: random.Random) -> None:
    b.emit("ElectLeaders", election_type="PREFERRED", partitions=None, principal="User:ops")
    if rng.random() < 0.2:
        b.controller_epoch += 1
        b.emit("ControllerChange", controller_id=rng.choice(BROKERS))
        b.emit("LeaderImbalanceCheck", controller_epoch=b.controller_epoch - 1)  # a zombie: fenced


def _isr_shrink(b: ScenarioBuilder, rng: random.Random) -> None:
    broker = rng.choice(BROKERS)
    for (topic, partition), rec in sorted(b.shadow.partitions.items()):
        if broker in rec.isr and rec.leader not in (broker, -1) and len(rec.isr) > 1:
            b.alter_isr(topic, partition, [r for r in rec.isr if r != broker])
    b.catch_up(broker)
