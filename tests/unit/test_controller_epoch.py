"""Controller epochs: ControllerChange, explicit and implicit failover, fenced (zombie) events; duplicates and
authorization.

JSON events in (through `parse_event`), decisions and audit rows out (through `Controller.handle`), for the
triggers of docs/semantics.md."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from statemachine.controller import ControllerConfig
from statemachine.record import Action
from statemachine.states import PartitionState, ReplicaState

from .cluster import UNCLEAN, Cluster, Result, assert_rejected, assert_unchanged, cluster_with, snapshot

P = PartitionState
R = ReplicaState


# =====================================================================================================
# ControllerChange and failover
# =====================================================================================================

def test_first_controller_is_adopted_without_failover() -> None:
    cluster = Cluster(controller_epoch=5)
    out = cluster.controller_change(controller_id=3, epoch=5)
    assert out.only_row.outcome == "ACCEPTED"
    assert (cluster.controller.cluster.controller_epoch, cluster.controller.cluster.controller_id) == (5, 3)


def test_decisions_carry_the_new_controller_epoch() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    out = cluster.controller_change(controller_id=2)
    assert all(r.controller_epoch == 2 for r in out.audits)
    failed = cluster.failure(1)
    assert [d.controller_epoch for d in failed.decisions] == [2]
    assert {r.controller_epoch for r in failed.audits} == {2}


def test_failover_elects_a_partition_whose_leader_was_shutting_down() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.isr_change("t", 0, [1])
    cluster.shutdown(1)  # 1 keeps leading: no other ISR member
    cluster.failure(2)  # t-0 goes offline: its leader is not live
    assert cluster.rec("t", 0).state is P.OFFLINE
    out = cluster.controller_change(controller_id=2)
    # The new controller does not know of the shutdown: broker 1 is live again and is elected.
    assert cluster.controller.cluster.shutting_down == set()
    d = out.decision("t", 0)
    assert (d.leader, d.isr, d.election, d.controller_epoch, d.cause) == (
        1, (1,), "OFFLINE", 2, "ControllerChange")
    assert out.row("t", 0).to_state == "OnlinePartition"
    failover = out.cluster_row
    assert (failover.action, failover.controller_id, failover.controller_epoch) == ("CONTROLLER_FAILOVER", 2, 2)


@pytest.mark.parametrize("event", ["failure", "isr", "delete", "imbalance"])
def test_stale_controller_epoch_is_rejected_and_not_applied(event: str) -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.controller_change(controller_id=2)
    before = snapshot(cluster)
    send: dict[str, Callable[[], Result]] = {
        "failure": lambda: cluster.failure(1, controller_epoch=1),
        "isr": lambda: cluster.isr_change("t", 0, [1], controller_epoch=1),
        "delete": lambda: cluster.delete("t", controller_epoch=1),
        "imbalance": lambda: cluster.imbalance_check(controller_epoch=1),
    }
    out = send[event]()
    assert_rejected(out.only_row, "STALE_CONTROLLER_EPOCH")
    assert_unchanged(cluster, before)
    assert cluster.controller.cluster.live_brokers == {1, 2}
    assert "t" in cluster.controller.cluster.topics


def test_stale_isr_change_is_audited_on_its_partition() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.controller_change()
    row = cluster.isr_change("t", 0, [1], controller_epoch=0).only_row
    assert (row.topic, row.partition, row.error) == ("t", 0, "STALE_CONTROLLER_EPOCH")


def test_controller_change_at_the_current_epoch_is_a_no_op() -> None:
    cluster = cluster_with(1)
    out = cluster.controller_change(epoch=1)
    assert out.only_row.outcome == "NO_OP"


def test_higher_epoch_on_any_event_is_an_implicit_failover() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.shutdown(2)
    cluster.controller_epoch = 7
    out = cluster.failure(1)
    actions = [h.command.action for h in out.handled]
    # Failover first (re-examining every partition), then the event itself at the new epoch.
    assert actions[:2] == [Action.CONTROLLER_FAILOVER, Action.CONTROLLER_FAILOVER]
    failover = out.audits[1]
    assert (failover.partition, failover.action, failover.controller_epoch) == (None, "CONTROLLER_FAILOVER", 7)
    assert failover.controller_id is None  # implicit: no ControllerChange named the new controller
    assert Action.BROKER_FAILURE in actions[2:]
    assert {r.controller_epoch for r in out.audits} == {7}
    assert all(d.controller_epoch == 7 for d in out.decisions)
    assert cluster.controller.cluster.controller_epoch == 7
    # The new controller forgot the shutting-down set: 2 counts as live again (it will retry its shutdown).
    assert cluster.controller.cluster.shutting_down == set()
    assert cluster.controller.cluster.live_brokers == {2}


# =====================================================================================================
# Duplicates and authorization
# =====================================================================================================

def test_duplicate_event_id_is_never_applied_twice() -> None:
    cluster = cluster_with(1, 2, 3)
    cluster.create("t", [1, 2, 3])
    first = cluster.failure(1, event_id="dup")
    assert first.decisions
    before = snapshot(cluster)
    # Redelivery, and a different event reusing the id: both duplicates.
    for raw in (cluster.lines()[-1], cluster.json("BrokerChange", event_id="dup", broker_id=2, change="FAILURE",
                                              broker_epoch=cluster.broker_epochs[2])):
        out = cluster.feed(raw)
        assert_rejected(out.only_row, "DUPLICATE_EVENT")
        assert out.decisions == []
    assert_unchanged(cluster, before)
    assert cluster.controller.cluster.live_brokers == {2, 3}


def test_duplicate_isr_change_is_audited_on_its_partition() -> None:
    cluster = cluster_with(1, 2)
    cluster.create("t", [1, 2])
    cluster.isr_change("t", 0, [1], event_id="isr-1")
    out = cluster.isr_change("t", 0, [1, 2], event_id="isr-1")
    row = out.only_row
    assert (row.topic, row.partition, row.error) == ("t", 0, "DUPLICATE_EVENT")
    assert cluster.rec("t", 0).isr == (1,)


def test_a_rejected_event_still_uses_up_its_id() -> None:
    cluster = cluster_with(1)
    assert_rejected(cluster.delete("nope", event_id="x").only_row, "UNKNOWN_TOPIC_OR_PARTITION")
    cluster.create("nope", [1])
    assert_rejected(cluster.delete("nope", event_id="x").only_row, "DUPLICATE_EVENT")
    assert cluster.record("nope", 0) is not None


def admin_events(cluster: Cluster) -> dict[str, Callable[..., Result]]:
    return {
        "CreateTopic": lambda **kw: cluster.create("new", [1, 2], **kw),
        "CreatePartitions": lambda **kw: cluster.send("CreatePartitions", topic="t", assignment={"1": [2, 1]}, **kw),
        "DeleteTopic": lambda **kw: cluster.delete("t", **kw),
        "ReassignPartitions": lambda **kw: cluster.reassign(("t", 0, [2, 3]), **kw),
        "ElectLeaders": lambda **kw: cluster.elect("PREFERRED", ("t", 0), **kw),
        "AlterTopicConfig": lambda **kw: cluster.alter("t", {UNCLEAN: "true"}, **kw),
    }


ADMIN = ["CreateTopic", "CreatePartitions", "DeleteTopic", "ReassignPartitions", "ElectLeaders", "AlterTopicConfig"]


def authorized_cluster() -> Cluster:
    cluster = cluster_with(1, 2, 3, config=ControllerConfig(super_users=frozenset({"User:ops"})))
    cluster.create("t", [1, 2], principal="User:ops")
    cluster.failure(1)
    cluster.startup(1)
    cluster.isr_change("t", 0, [2, 1])
    return cluster


@pytest.mark.parametrize("event", ADMIN)
@pytest.mark.parametrize("principal", [None, "User:eve"])
def test_admin_event_from_a_non_super_user_is_refused(event: str, principal: str | None) -> None:
    cluster = authorized_cluster()
    before = snapshot(cluster)
    topics = dict(cluster.controller.cluster.topics)
    out = admin_events(cluster)[event](principal=principal)
    row = out.only_row
    assert_rejected(row, "CLUSTER_AUTHORIZATION_FAILED")
    assert row.partition is None
    assert_unchanged(cluster, before)
    assert cluster.controller.cluster.topics == topics


@pytest.mark.parametrize("event", ADMIN)
def test_admin_event_from_a_super_user_is_applied(event: str) -> None:
    cluster = authorized_cluster()
    out = admin_events(cluster)[event](principal="User:ops")
    assert "CLUSTER_AUTHORIZATION_FAILED" not in out.errors
    assert any(r.outcome == "ACCEPTED" for r in out.audits)


def test_broker_and_controller_events_need_no_principal() -> None:
    cluster = authorized_cluster()
    for out in (cluster.isr_change("t", 0, [2]), cluster.shutdown(3), cluster.imbalance_check(),
                cluster.controller_change()):
        assert "CLUSTER_AUTHORIZATION_FAILED" not in out.errors


def test_without_super_users_any_principal_may_administer() -> None:
    cluster = cluster_with(1, 2)
    assert cluster.create("t", [1, 2], principal="User:anyone").row("t", 0).outcome == "ACCEPTED"
    assert [r.outcome for r in cluster.delete("t").rows("t", 0)] == ["ACCEPTED", "ACCEPTED"]


def test_a_broker_that_died_with_the_old_controller_is_gone_when_the_new_one_reads_the_cluster() -> None:
    # ZooKeeper: broker 1, the controller, dies; its session's end deletes /controller and /brokers/ids/1 in one
    # transaction and nobody handles the failure until broker 2 takes over and reads /brokers/ids (2 and 3).
    # onControllerFailover takes 1's replica offline first (leader -1, out of the ISR), then elects.
    c = cluster_with(1, 2, 3)
    c.create("t", [1, 2, 3])
    epochs = c.controller.cluster.broker_epochs
    result = c.controller_change(2, epoch=2, live_brokers={str(b): epochs[b] for b in (2, 3)})
    assert [(d.leader, list(d.isr), d.leader_epoch, d.partition_epoch) for d in result.decisions_for("t", 0)] == [
        (-1, [2, 3], 1, 1), (2, [2, 3], 2, 2)]
    assert c.controller.cluster.live_brokers == {2, 3}
