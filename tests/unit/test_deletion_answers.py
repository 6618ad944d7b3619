"""A broker startup's resumed deletion whose StopReplica answers came while the controller handled a later AlterIsr
(BrokerChange.deletion_answers_queued, IsrChange.deletion_answers): each answer is an event of its own after that
change (TopicDeletionStopReplicaResponseReceived), so the retry of the failed replicas its resumeDeletions makes is
sent after the change's requests, not within the startup (campaign seed 1417, Kafka 3.0.2); and the importer's rule
giving the answers to that change (streaming.zookeeper.context)."""

from __future__ import annotations

import json
from typing import Any

from schemas.events import parse_event
from statemachine.controller import Controller, ControllerConfig
from statemachine.requests import Request, RequestType
from streaming.zookeeper.context import Context, QueuedAnswers
from streaming.zookeeper.txnlog import ZkTxn

SR = RequestType.STOP_REPLICA


def _event(n: int, kind: str, **fields: Any) -> bytes:
    return json.dumps({"event_id": f"e{n}", "type": kind, "controller_epoch": 1, "ts": "2026-11-27T17:41:13Z",
                       **fields}).encode()


# d-0 on broker 2 and d-1 on broker 4 (created while 4 was down: it never had a leader; a failover then took its
# replica for offline), both down when d's deletion starts (their replicas ReplicaDeletionIneligible); broker 2 comes
# back: its startup deletes d-0's replica (StopReplica) and d-1's stays failed, retried once broker 2's answer is in
# (OfflineReplica: one UpdateMetadata naming no partition, as seed 1417's t2-1). Leader 1 shrinks t-0's ISR meanwhile.
BEFORE = [_event(0, "ControllerChange", controller_id=1, live_brokers={"1": 10, "2": 11, "3": 12, "4": 13}),
          _event(1, "CreateTopic", topic="t", assignment={"0": [1, 3]}),
          _event(2, "BrokerChange", broker_id=4, change="FAILURE", broker_epoch=13),
          _event(3, "CreateTopic", topic="d", assignment={"0": [2], "1": [4]}),
          _event(4, "ControllerChange", controller_epoch=2, controller_id=3,
                 live_brokers={"1": 10, "2": 11, "3": 12}),
          _event(5, "BrokerChange", controller_epoch=2, broker_id=2, change="FAILURE", broker_epoch=11),
          _event(6, "DeleteTopic", controller_epoch=2, topic="d")]


def _replayed(startup: dict[str, Any], change: dict[str, Any]) -> tuple[list[Request], list[Request]]:
    events = [*BEFORE, _event(7, "BrokerChange", controller_epoch=2, broker_id=2, change="STARTUP", broker_epoch=20,
                              **startup),
              _event(8, "IsrChange", controller_epoch=2, topic="t", partition=0, broker_id=1, broker_epoch=10,
                     leader_epoch=0, partition_epoch=0, isr=[1], **change)]
    controller = Controller(ControllerConfig())
    *_, started, changed = [controller.handle_event(parse_event(raw), n).requests for n, raw in enumerate(events)]
    return started, changed


def _sent(requests: list[Request]) -> list[tuple[str, int, list[tuple[str, int]]]]:
    return [(str(r.request), r.broker, sorted((p.topic, p.partition) for p in r.partitions)) for r in requests]


def test_a_startups_deletion_answer_queued_behind_an_isr_change_retries_after_it() -> None:
    started, changed = _replayed({}, {})
    last = max(r.batch for r in started)
    retry = [r for r in started if r.batch == last]
    assert retry and not any(r.request is SR for r in retry)  # the retry's UpdateMetadata, after the StopReplica
    queued_started, queued_changed = _replayed({"deletion_answers_queued": True}, {"deletion_answers": [2]})
    assert _sent(queued_started) == _sent([r for r in started if r.batch != last])
    assert _sent(queued_changed) == _sent(changed) + _sent(retry)
    assert min(r.batch for r in queued_changed[len(changed):]) > max((r.batch for r in changed), default=-1)


def _txn(zxid: int, ms: int, session: int = 1) -> ZkTxn:
    return ZkTxn(zxid, ms, session, zxid, ())


def test_the_last_alter_isr_before_a_startups_logged_answer_carries_it() -> None:
    # The importer (streaming.zookeeper.context.place_answers): seed 1417's broker 2 answered (controller.log) after
    # five AlterIsrs the controller (session 7) wrote after its startup; the last of them carries the answer, the
    # startup leaves it, and the retry's writes after the answer are that change's.
    ctx = Context()
    ctx.controller_session = 7
    startup = ctx.event(_txn(238, 1_000), "BrokerChange", "-2", broker_id=2, change="STARTUP", broker_epoch=238)
    ctx.queued_answers = QueuedAnswers(startup, [2], 1_400)
    first = ctx.event(_txn(241, 1_200, 7), "IsrChange", "-t0-2", topic="t0", partition=2)
    last = ctx.event(_txn(245, 1_300, 7), "IsrChange", "-t1-1", topic="t1", partition=1)
    after = ctx.event(_txn(247, 2_000), "AlterTopicConfig", topic="t1")
    assert startup["deletion_answers_queued"] and last["deletion_answers"] == [2]
    assert "deletion_answers" not in first and "deletion_answers" not in after
    assert ctx.carried_answer(_txn(248, 2_100, 7), "zk-238-2") == "zk-245-t1-1"
    assert ctx.carried_answer(_txn(246, 1_350, 7), "zk-238-2") is None  # before the answer: the startup's
    # A leader's own ISR write (below protocol 2.7, not the controller's session) last before the answer: the
    # controller handled no event for it, the startup keeps its answers, as without the controller's log.
    again = ctx.event(_txn(250, 3_000), "BrokerChange", "-4", broker_id=4, change="STARTUP", broker_epoch=250)
    ctx.queued_answers = QueuedAnswers(again, [4], 3_400)
    own = ctx.event(_txn(251, 3_100, 9), "IsrChange", "-t0-0", topic="t0", partition=0)
    ctx.event(_txn(252, 3_500), "DeleteTopic", "-t5", topic="t5")
    assert "deletion_answers_queued" not in again and "deletion_answers" not in own and ctx.queued_answers is None
