"""The unit tests' one driver. `Cluster` (a `ScenarioBuilder`) builds contract-shaped JSON events, feeds them
through `parse_event` and `Controller.handle` like the replay engine does, and gives typed access to the
decisions and audit rows each event produced; `command` builds a command for direct `apply_command` tests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from schemas.events import ControllerEvent, Malformed, parse_event
from schemas.records import AuditRow, Decision
from statemachine.controller import Controller, ControllerConfig, Handled
from statemachine.record import Action, Command, PartitionRecord
from streaming.infra.scenario import ScenarioBuilder

TS = "2024-05-01T12:00:00Z"
UNCLEAN = "unclean.leader.election.enable"


# Direct `apply_command` tests: one partition "t-0", a command with the given cluster facts.
BROKER = 5
OTHER = 6
EPOCH = 50


def command(action: Action, *, live: set[int] = frozenset(), shutting_down: set[int] = frozenset(),
            **fields: Any) -> Command:
    return Command(action=action, event_id="evt-1", event_type="Test", source_offset=7, controller_epoch=EPOCH,
                   topic="t", partition=0, live_brokers=frozenset(live), shutting_down_brokers=frozenset(shutting_down),
                   **fields)


def event_json(event_type: str, *, event_id: str, controller_epoch: int, principal: str | None = None,
               **fields: Any) -> str:
    body: dict[str, Any] = {"type": event_type, "event_id": event_id, "ts": TS, "controller_epoch": controller_epoch}
    if principal is not None:
        body["principal"] = principal
    body.update(fields)
    return json.dumps(body)


@dataclass
class Result:
    """What one event produced."""

    event: ControllerEvent
    handled: list[Handled]

    @property
    def audits(self) -> list[AuditRow]:
        return [h.applied.audit for h in self.handled]

    @property
    def decisions(self) -> list[Decision]:
        return [d for h in self.handled for d in h.applied.decisions]

    @property
    def errors(self) -> set[str]:
        return {a.error for a in self.audits if a.error is not None}

    def decisions_for(self, topic: str, partition: int) -> list[Decision]:
        return [d for d in self.decisions if (d.topic, d.partition) == (topic, partition)]

    def decision(self, topic: str, partition: int) -> Decision:
        found = self.decisions_for(topic, partition)
        assert len(found) == 1, f"expected one decision for {topic}-{partition}, got {found}"
        return found[0]

    def rows(self, topic: str, partition: int) -> list[AuditRow]:
        return [a for a in self.audits if (a.topic, a.partition) == (topic, partition)]

    def row(self, topic: str, partition: int) -> AuditRow:
        found = self.rows(topic, partition)
        assert len(found) == 1, f"expected one audit row for {topic}-{partition}, got {found}"
        return found[0]

    @property
    def cluster_rows(self) -> list[AuditRow]:
        return [a for a in self.audits if a.partition is None]

    @property
    def cluster_row(self) -> AuditRow:
        rows = self.cluster_rows
        assert len(rows) == 1, f"expected one cluster-level audit row, got {rows}"
        return rows[0]

    @property
    def only_row(self) -> AuditRow:
        assert len(self.audits) == 1, f"expected exactly one audit row, got {self.audits}"
        return self.audits[0]


class Cluster(ScenarioBuilder):
    """The scenario builder as a test driver: a log that starts without a ControllerChange, at one instant,
    each event's result returned. Broker epochs are tracked so that the convenience methods send plausible
    ones unless a test passes its own."""

    def __init__(self, config: ControllerConfig | None = None, controller_epoch: int = 1) -> None:
        super().__init__(start=TS, controller_id=None, controller_epoch=controller_epoch, step_seconds=0,
                         config=config)

    @property
    def controller(self) -> Controller:
        return self.shadow

    @property
    def offset(self) -> int:
        """The offset the next event gets."""
        return len(self.events)

    # -- raw feeding -----------------------------------------------------------------------------
    def json(self, event_type: str, *, principal: str | None = None, **kwargs: Any) -> str:
        """The next event as a log line, not yet fed."""
        fields = kwargs if principal is None else {"principal": principal, **kwargs}
        return json.dumps(self.event(event_type, **fields))

    def feed(self, raw: str) -> Result:
        event = parse_event(raw)
        assert not isinstance(event, Malformed), event.reason
        return Result(event, self.append(json.loads(raw)))

    def send(self, event_type: str, **kwargs: Any) -> Result:
        return self.feed(self.json(event_type, **kwargs))

    # -- brokers ------------------------------------------------------------------------------------
    def startup(self, broker: int, epoch: int | None = None, **kw: Any) -> Result:
        if epoch is None:
            epoch = self.broker_epochs.get(broker, 0) + 10
        self.broker_epochs[broker] = max(epoch, self.broker_epochs.get(broker, epoch))
        return self.send("BrokerChange", broker_id=broker, change="STARTUP", broker_epoch=epoch, **kw)

    def start(self, *brokers: int) -> None:
        for broker in brokers:
            out = self.startup(broker)
            assert out.cluster_row.outcome == "ACCEPTED", out.cluster_row

    def failure(self, broker: int, epoch: int | None = None, **kw: Any) -> Result:
        epoch = self.broker_epochs.get(broker, 0) if epoch is None else epoch
        return self.send("BrokerChange", broker_id=broker, change="FAILURE", broker_epoch=epoch, **kw)

    def shutdown(self, broker: int, epoch: int | None = None, **kw: Any) -> Result:
        epoch = self.broker_epochs.get(broker, 0) if epoch is None else epoch
        return self.send("BrokerChange", broker_id=broker, change="CONTROLLED_SHUTDOWN", broker_epoch=epoch, **kw)

    # -- topics -------------------------------------------------------------------------------------
    def create(self, topic: str, *assignment: list[int], configs: dict[str, str] | None = None,
               **kw: Any) -> Result:
        fields: dict[str, Any] = {"assignment": {str(p): list(r) for p, r in enumerate(assignment)}}
        if configs is not None:
            fields["configs"] = configs
        return self.send("CreateTopic", topic=topic, **fields, **kw)

    def delete(self, topic: str, **kw: Any) -> Result:
        return self.send("DeleteTopic", topic=topic, **kw)

    def alter(self, topic: str, configs: dict[str, str | None], **kw: Any) -> Result:
        return self.send("AlterTopicConfig", topic=topic, configs=configs, **kw)

    # -- partition requests -------------------------------------------------------------------------
    def isr_change(self, topic: str, partition: int, isr: list[int], *, broker: int | None = None,
                   broker_epoch: int | None = None, leader_epoch: int | None = None,
                   partition_epoch: int | None = None, recovery: str | None = None, **kw: Any) -> Result:
        """An AlterPartition from the current leader with the current epochs, unless told otherwise."""
        rec = self.controller.partitions.get((topic, partition))
        broker = (rec.leader if rec else 0) if broker is None else broker
        fields: dict[str, Any] = {
            "topic": topic, "partition": partition, "broker_id": broker,
            "broker_epoch": self.broker_epochs.get(broker, 0) if broker_epoch is None else broker_epoch,
            "leader_epoch": (rec.leader_epoch if rec else 0) if leader_epoch is None else leader_epoch,
            "partition_epoch": (rec.partition_epoch if rec else 0) if partition_epoch is None else partition_epoch,
            "isr": list(isr),
        }
        if recovery is not None:
            fields["leader_recovery_state"] = recovery
        return self.send("IsrChange", **fields, **kw)

    def reassign(self, *moves: tuple[str, int, list[int] | None], **kw: Any) -> Result:
        return self.send("ReassignPartitions",
                         partitions=[{"topic": t, "partition": p, "replicas": r} for t, p, r in moves], **kw)

    def elect(self, election_type: str, *partitions: tuple[str, int], all_partitions: bool = False,
              **kw: Any) -> Result:
        refs = None if all_partitions else [{"topic": t, "partition": p} for t, p in partitions]
        return self.send("ElectLeaders", election_type=election_type, partitions=refs, **kw)

    def controller_change(self, controller_id: int = 0, epoch: int | None = None, **kw: Any) -> Result:
        self.controller_epoch = self.controller_epoch + 1 if epoch is None else epoch
        return self.send("ControllerChange", controller_id=controller_id, **kw)

    def imbalance_check(self, **kw: Any) -> Result:
        return self.send("LeaderImbalanceCheck", **kw)

    # -- state ----------------------------------------------------------------------------------------
    def record(self, topic: str, partition: int) -> PartitionRecord | None:
        return self.controller.partitions.get((topic, partition))

    def rec(self, topic: str, partition: int) -> PartitionRecord:
        found = self.record(topic, partition)
        assert found is not None, f"{topic}-{partition} does not exist"
        return found

    def replica_states(self, topic: str, partition: int) -> dict[int, str]:
        return {b: str(s) for b, s in self.rec(topic, partition).replica_states.items()}


# -- helpers of the event-level tests --------------------------------------------------------------------

def cluster_with(*brokers: int, config: ControllerConfig | None = None) -> Cluster:
    cluster = Cluster(config)
    cluster.start(*brokers)
    return cluster


def assert_rejected(row: AuditRow, error: str) -> None:
    assert row.outcome == "REJECTED", row
    assert row.error == error, row


def assert_unchanged(cluster: Cluster, before: dict[tuple[str, int], PartitionRecord]) -> None:
    assert cluster.controller.partitions == before


def snapshot(cluster: Cluster) -> dict[tuple[str, int], PartitionRecord]:
    return dict(cluster.controller.partitions)
