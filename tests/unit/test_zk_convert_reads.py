"""The ZooKeeper importer on the reads the controllers' controller.log names (streaming.zookeeper.controllerlog): where
a write's event begins. Hand-written transactions (tests.unit.zk_ensemble)."""

from __future__ import annotations

from datetime import UTC, datetime

from streaming.zookeeper.controllerlog import BrokerRead, ControllerReads
from streaming.zookeeper.convert import Converter
from streaming.zookeeper.txnlog import ZnodeOp

from .zk_ensemble import created


def test_a_reassignment_after_a_broker_change_the_controller_read_is_another_request() -> None:
    # Campaign seed 1584 (Kafka 3.9.1 at protocol 2.6): an Admin API reassignment of t1-0 in place (01:13:58), broker
    # 2's registration (01:14:01.149) and the controller's read of it (`Newly added brokers: 2`, .185; the startup
    # wrote nothing), then a reassignment of t0-0 in place (02.528). Two requests, the startup between: read as one,
    # the second's requests went before the startup's. Here t-0 then t-1 reordered, broker 4 starting in between.
    z = created()
    z.topic({0: [2, 1, 3], 1: [2, 3, 1]}, op="setData")  # t-0's new order
    z.state(0, 1, [1, 2, 3], 1)  # its bump
    z.wait(1_000)
    z.txn(0x2004, ZnodeOp("create", "/brokers/ids/4", b"{}", 0, ephemeral=True))
    read_at = datetime.fromtimestamp((z.now + 30) / 1000, UTC).replace(tzinfo=None)
    z.wait(1_000)
    z.topic({0: [2, 1, 3], 1: [3, 2, 1]}, op="setData")  # t-1's new order
    z.state(1, 2, [2, 3, 1], 1)
    reads = ControllerReads(broker_reads={1: [BrokerRead(1, 1, read_at, (4,), (), ())]})
    events = Converter(reads=reads).convert(z.history()).events
    assert [(e["type"], [m["partition"] for m in e.get("partitions", [])]) for e in events[-3:]] == [
        ("ReassignPartitions", [0]), ("BrokerChange", []), ("ReassignPartitions", [1])]
    # Without the controller's log the two writes, back to back, are one request's.
    events = Converter().convert(z.history()).events
    assert [(e["type"], [m["partition"] for m in e.get("partitions", [])]) for e in events[-2:]] == [
        ("ReassignPartitions", [0, 1]), ("BrokerChange", [])]
