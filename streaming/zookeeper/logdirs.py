"""A log dir failing under a broker in ZooKeeper mode (KIP-112): `/log_dir_event_notification/log_dir_event_<seq>`.

The broker creates the znode (`{"version":1,"broker":B,"event":1}`); the controller's LogDirEventNotification handler
reads it, sends the broker a LeaderAndIsr of every replica it holds and deletes the znode. The broker answers
KAFKA_STORAGE_ERROR for the replicas in the failed dir, and the controller takes those offline
(processLeaderAndIsrResponseReceived): an election where the broker led, the broker out of the ISR. That answer
is no znode: ZooKeeper's log shows the notification and the writes after it, not which replicas the broker named.

- With the controller's `state-change.log` (the `state.change.logger` at INFO, Kafka's own default): its line
  `Mark replicas T-P,... on broker B as offline` names them; the event carries them.
- From the directory alone they are inferred from the controller's writes that follow: each partition whose
  leadership or ISR the broker leaves there. A replica of the failed dir that was neither leader nor in the ISR
  changes no znode and stays unknown (the rules then think it online: it could be elected later, where the
  controller would not).

The controller also learns of offline replicas from its other LeaderAndIsr answers (a failover's, a broker
startup's): those lines are not read yet (docs/zookeeper.md, "JBOD").
"""

from __future__ import annotations

import json

from streaming.zookeeper.context import Cause, Context
from streaming.zookeeper.txnlog import ZkTxn, ZnodeOp

LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification/"


def log_dir_event(ctx: Context, txn: ZkTxn, op: ZnodeOp) -> None:
    """A broker's notification: a LogDirEventNotification event, its offline replicas from the controller's mark
    when logged, else filled by the writes it explains (`fits`, `explained`)."""
    if op.kind != "create" or op.path.count("/") != 2:
        return
    broker = int(json.loads(op.data or b"{}").get("broker", -1))
    if broker < 0:
        return
    mark = ctx.offline_marks.answer(broker, txn.time) if ctx.offline_marks is not None else None
    event = ctx.event(txn, "LogDirEventNotification", broker_id=broker, offline_replicas=[
        {"topic": t, "partition": p} for t, p in (mark.replicas if mark is not None else ())])
    cause = ctx.cause(Cause(event, "LOG_DIR", broker))
    cause.logged = frozenset(mark.replicas) if mark is not None else None
    ctx.failed_replicas.setdefault(broker, set()).update(cause.logged or ())


def fits(ctx: Context, cause: Cause, key: tuple[str, int], dropped: bool) -> bool:
    """Whether a controller write is the answer's: it takes the still registered broker out of the partition's
    leadership or ISR (`dropped`), for a replica the controller marked offline when its mark is known."""
    return cause.broker in ctx.brokers and dropped and (cause.logged is None or key in cause.logged)


def explained(ctx: Context, cause: Cause, key: tuple[str, int]) -> None:
    """From the directory alone, a write the answer explains names one of its offline replicas."""
    named = cause.event["offline_replicas"]
    if cause.logged is None and {"topic": key[0], "partition": key[1]} not in named:
        named.append({"topic": key[0], "partition": key[1]})
        ctx.failed_replicas.setdefault(cause.broker or 0, set()).add(key)


def in_failed_dir(ctx: Context, broker: int, key: tuple[str, int]) -> bool:
    """Whether the broker's replica of `key` is known to be in a failed dir: asked again (its startup, a failover),
    it answers KAFKA_STORAGE_ERROR and the controller drops it from the leadership and the ISR."""
    return key in ctx.failed_replicas.get(broker, ())
