"""Building realistic controller event logs: the demo's bundled incident, the examples, the benchmarks.

A `ScenarioBuilder` writes events the way a real cluster would produce them: IsrChange requests carry
the leader's current epochs, which the builder reads from a shadow `Controller` it feeds as it goes. What
the shadow controller did with the last event is kept in `handled` (the unit tests' driver reads it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from typing import Any

from schemas.events import LeaderRecoveryState, Malformed, parse_event
from schemas.records import parse_ts
from statemachine.controller import Controller, ControllerConfig, Handled
from statemachine.record import PartitionRecord


class ScenarioBuilder:
    def __init__(self, start: str = "2026-11-20T12:00:00Z", controller_id: int | None = 1, controller_epoch: int = 1,
                 step_seconds: float = 1.0, config: ControllerConfig | None = None) -> None:
        self.events: list[dict[str, Any]] = []
        self.shadow = Controller(config)
        self.handled: list[Handled] = []
        clock = parse_ts(start)
        assert clock is not None, f"not an ISO-8601 time: {start}"
        self.clock = clock
        self.step = timedelta(seconds=step_seconds)
        self.controller_epoch = controller_epoch
        self.broker_epochs: dict[int, int] = {}
        self._next_broker_epoch = 100
        if controller_id is not None:  # None: the log starts without naming its controller
            self.emit("ControllerChange", controller_id=controller_id)

    # -- raw emission ------------------------------------------------------------------------------
    def event(self, type_: str, *, controller_epoch: int | None = None, event_id: str | None = None,
              **fields: Any) -> dict[str, Any]:
        """The next event's JSON object, with the envelope filled in (not yet in the log)."""
        return {"type": type_, "event_id": event_id or f"ev-{len(self.events):06d}",
                "ts": self.clock.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
                "controller_epoch": self.controller_epoch if controller_epoch is None else controller_epoch,
                **fields}

    def append(self, event: dict[str, Any]) -> list[Handled]:
        """Put one event into the log as given and apply it to the shadow controller."""
        self.events.append(event)
        parsed = parse_event(json.dumps(event))
        self.handled = [] if isinstance(parsed, Malformed) else self.shadow.handle(parsed, len(self.events) - 1)
        return self.handled

    def emit(self, type_: str, *, controller_epoch: int | None = None, advance: bool = True,
             event_id: str | None = None, **fields: Any) -> dict[str, Any]:
        event = self.event(type_, controller_epoch=controller_epoch, event_id=event_id, **fields)
        self.append(event)
        if advance:
            self.clock += self.step
        return event

    def wait(self, seconds: float) -> None:
        self.clock += timedelta(seconds=seconds)

    def raw(self, line: str) -> None:
        """A record that is not a valid event (it is kept in the log to show quarantine)."""
        self.events.append({"__raw__": line})

    # -- brokers -----------------------------------------------------------------------------------
    def start_broker(self, broker: int) -> None:
        self._next_broker_epoch += 1
        self.broker_epochs[broker] = self._next_broker_epoch
        self.emit("BrokerChange", broker_id=broker, change="STARTUP", broker_epoch=self._next_broker_epoch)

    def fail_broker(self, broker: int) -> None:
        self.emit("BrokerChange", broker_id=broker, change="FAILURE", broker_epoch=self.broker_epochs[broker])

    def controlled_shutdown(self, broker: int) -> None:
        self.emit("BrokerChange", broker_id=broker, change="CONTROLLED_SHUTDOWN",
                  broker_epoch=self.broker_epochs[broker])

    # -- partitions --------------------------------------------------------------------------------
    def record(self, topic: str, partition: int) -> PartitionRecord:
        return self.shadow.partitions[(topic, partition)]

    def alter_isr(self, topic: str, partition: int, isr: Iterable[int], recovered: bool = False) -> None:
        """The leader's AlterPartition, with the epochs it currently holds."""
        rec = self.record(topic, partition)
        fields: dict[str, Any] = {}
        if recovered or rec.leader_recovery_state is LeaderRecoveryState.RECOVERING:
            state = LeaderRecoveryState.RECOVERED if recovered else LeaderRecoveryState.RECOVERING
            fields["leader_recovery_state"] = str(state)
        self.emit("IsrChange", topic=topic, partition=partition, broker_id=rec.leader,
                  broker_epoch=self.broker_epochs[rec.leader], leader_epoch=rec.leader_epoch,
                  partition_epoch=rec.partition_epoch, isr=list(isr), **fields)

    def catch_up(self, broker: int, advance: bool = False) -> None:
        """Every partition led by a live broker re-admits `broker` to its ISR (after a restart)."""
        for (topic, partition), rec in sorted(self.shadow.partitions.items()):
            if (broker in rec.replicas and broker not in rec.isr and rec.leader >= 0
                    and rec.leader in self.shadow.cluster.live_brokers):
                if rec.leader_recovery_state is LeaderRecoveryState.RECOVERING:
                    # An unclean leader first finishes recovery alone, then admits followers.
                    self.alter_isr(topic, partition, rec.isr, recovered=True)
                    rec = self.record(topic, partition)
                self.alter_isr(topic, partition, [*rec.isr, broker])
        if advance:
            self.clock += self.step

    # -- output ------------------------------------------------------------------------------------
    def lines(self) -> list[str]:
        return [e["__raw__"] if "__raw__" in e else json.dumps(e, separators=(",", ":")) for e in self.events]

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(self.lines()) + "\n", encoding="utf-8")
        return path


def round_robin_assignment(partitions: int, brokers: list[int], replication_factor: int,
                           offset: int = 0) -> dict[str, list[int]]:
    n = len(brokers)
    return {str(p): [brokers[(p + offset + i) % n] for i in range(replication_factor)] for p in range(partitions)}


def incident_scenario() -> ScenarioBuilder:
    """The demo's bundled incident on a 4-broker cluster: a rolling restart, a broker failure that leaves
    partitions offline and ends in an unclean election, a reassignment, and a zombie controller."""
    b = ScenarioBuilder()
    for broker in (1, 2, 3, 4):
        b.start_broker(broker)
    b.emit("CreateTopic", topic="orders", assignment=round_robin_assignment(8, [1, 2, 3, 4], 3))
    b.emit("CreateTopic", topic="payments", assignment=round_robin_assignment(4, [1, 2, 3, 4], 2, offset=2))
    b.wait(60)

    # Rolling restart of broker 1: controlled shutdown moves its leaderships, it restarts, catches up,
    # and the periodic imbalance check hands the leaderships back.
    b.controlled_shutdown(1)
    b.fail_broker(1)
    b.wait(30)
    b.start_broker(1)
    b.catch_up(1)
    b.emit("LeaderImbalanceCheck")
    b.wait(120)

    # Broker 3's followers fall behind on payments-0 and orders-2, then broker 3 dies: both go offline.
    for topic, partition in (("payments", 0), ("orders", 2)):
        if b.record(topic, partition).leader == 3:
            b.alter_isr(topic, partition, [3])
    b.fail_broker(3)
    b.wait(45)
    # The operator accepts data loss on payments-0 to restore service at once.
    b.emit("ElectLeaders", election_type="UNCLEAN", partitions=[{"topic": "payments", "partition": 0}],
           principal="User:ops")
    b.wait(180)
    b.start_broker(3)
    b.catch_up(3)

    # Move orders-0 onto broker 4; it completes once broker 4 joins the ISR.
    b.emit("ReassignPartitions", partitions=[{"topic": "orders", "partition": 0, "replicas": [2, 4, 3]}],
           principal="User:ops")
    rec = b.record("orders", 0)
    b.alter_isr("orders", 0, [*rec.isr, 4] if 4 not in rec.isr else rec.isr)

    # Controller 1 loses its session; controller 2 takes over at epoch 2. Controller 1, a zombie, still
    # writes at epoch 1: fenced.
    b.controller_epoch = 2
    b.emit("ControllerChange", controller_id=2)
    b.emit("ElectLeaders", election_type="PREFERRED", partitions=None, controller_epoch=1, principal="User:ops")
    b.emit("BrokerChange", broker_id=2, change="FAILURE", broker_epoch=b.broker_epochs[2], controller_epoch=1)
    # Noise a real log has: a redelivered event and a truncated record.
    b.events.append(dict(b.events[-3], ts=b.events[-3]["ts"]))
    b.raw('{"type": "IsrChange", "topic": "orders", "partition": 3, "broker_id"')
    return b
