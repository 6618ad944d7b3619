"""The ZooKeeper importer on what a controller never read, or read late: a leader's own ISR write its dead controller
never completed, and a new replica a log dir notification's LeaderAndIsr left out. Hand-written transactions
(tests.unit.zk_ensemble), as test_zk_convert_dirs."""

from __future__ import annotations

from streaming.zookeeper.txnlog import ZnodeOp

from .zk_ensemble import assert_every_history_equal, leaders_write_their_isr, replayed


def test_a_leaders_own_isr_write_after_the_controllers_last_write_is_no_completion_when_its_session_then_ends() -> None:
    # Campaign seed 1494 (Kafka 3.9.1 at protocol 2.6): t1-3 reassigned from [2] to [1]; leader 2 took 1 into the ISR
    # 99 ms after controller 1's last write, its ZooKeeper link already cut (its session expired 6.2 s later). The
    # reassignment stayed in /brokers/topics/t1: controller 2's failover took dead broker 1 out of the ISR and resumed
    # it. Here the same, broker 1 the controller.
    z = leaders_write_their_isr()
    z.topic({0: [2]})
    z.state(0, 2, [2], 0)
    z.topic({0: [1, 2]}, op="setData", adding_replicas={0: [1]}, removing_replicas={0: [2]})
    z.state(0, 2, [2], 1)  # the reassignment's start (A1)
    z.state(0, 2, [2, 1], 1, session=z.sessions[2], by_leader=True)  # the leader's own write: every target in
    z.txn(z.sessions[2], ZnodeOp("create", "/isr_change_notification/isr_change_0000000001",
                                 b'{"version":1,"partitions":[{"topic":"t","partition":0}]}', 0))
    z.close(z.sessions[1], "/controller", "/brokers/ids/1")  # expired: nothing written since the leader's write
    z.elect(2, 2)
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 2),
          ZnodeOp("delete", "/isr_change_notification/isr_change_0000000001"))
    z.state(0, 2, [2], 2)  # the failover: replica 1 offline (dead broker), out of the ISR
    z.state(0, 2, [2], 3)  # the reassignment resumed (A1 again)
    events, observed, decisions = replayed(z.history())
    [isr_change] = [e for e in events if e["type"] == "IsrChange"]
    assert isr_change.get("controller_died_before_completion") is True
    assert decisions[-1]["replicas"] == [1, 2] and decisions[-1]["isr"] == [2]  # still reassigning
    assert_every_history_equal(observed, decisions)
