"""A broker's KAFKA_STORAGE_ERROR answer to one of the controller's LeaderAndIsr requests in ZooKeeper mode: a
replica in a log dir that failed under it (KIP-112), which the controller takes offline
(processLeaderAndIsrResponseReceived -> onReplicasBecomeOffline). The answer is no znode; isrflow reads it from the
controller's writes that follow (and, with the state-change logs, from its `Mark replicas` lines). Handled after the
request whose LeaderAndIsr it answers, queued behind what came while the broker answered, it is an event of its own
(LeaderAndIsrResponseReceived, `Context.answer_after`) right after that request's: a reassignment's, a controlled
shutdown's, a broker failure's, a startup's resumed reassignments', or a notification's own LeaderAndIsr answered
twice. The notification itself and the answers a failover or a startup carries are `logdirs`'.
"""

from __future__ import annotations

from typing import Any

from streaming.zookeeper.context import Cause, Context, event_ms, event_zxid
from streaming.zookeeper.logdirs import fits
from streaming.zookeeper.statechange import ANSWER_MS, REQUEST_ANSWER_MS
from streaming.zookeeper.txnlog import ZkTxn

# The requests whose KAFKA_STORAGE_ERROR answers to their LeaderAndIsr are read (each its own event after the request).
_ANSWERED_REQUESTS = ("PARTITIONS", "CONTROLLED_SHUTDOWN", "FAILURE")


def request_answer(ctx: Context, txn: ZkTxn, key: tuple[str, int], dropped: list[int], left: int | None = None
                   ) -> Cause | None:
    """A write taking one registered broker with a failed log dir out of the ISR right after the controller's writes
    for a request naming the partition: the broker's answer to that request's LeaderAndIsr, KAFKA_STORAGE_ERROR for a
    replica in its failed dir that the controller did not know of, which goes offline
    (processLeaderAndIsrResponseReceived -> onReplicasBecomeOffline -> removeReplicasFromIsr), not that broker's
    controlled shutdown. Either a reassignment's (A1 sends one to every replica), for a broker whose notification
    came before (seed 906: t1-1's new replica on broker 3, NewReplica when broker 3's dir failed, so not named by the
    notification's answer; the znode reassignment's LeaderAndIsr got the answer); or any request's whose
    LeaderAndIsr the broker was handling when its dir failed, its notification coming right after the write (seed
    1114: broker 3's controlled shutdown made broker 4 t1-0's leader, writing t1-0's leader epoch checkpoint failed
    the dir, the answer was handled 14 ms before the notification's znode). The answer is its own event right after
    the request's (LeaderAndIsrResponseReceived, `Context.answer_after`), the write its (`Context.answer_writes`);
    with the state-change logs, only where a `Mark replicas` line of
    the broker names the partition since the request. The notification is read ahead (`note_notifications`): a
    follower's poll that has not seen it yet reads the write as before. `left`: the leader that left the partition
    leaderless, the last ISR member (removeReplicasFromIsr keeps it in the ISR), the request's answer when its event
    names the replica already (seed 1113)."""
    request = ctx.handling(txn) or _asked_by(ctx, key, dropped)
    if request is None or ctx.event_at(request.event) is None:
        return None
    # An answer queued behind a request names partitions the request did not (`_answered_after_request`).
    ref = {"topic": key[0], "partition": key[1]}
    answers = ctx.answers_after(request.event)
    answered = [b for b in (*dropped[:1], left) if b in answers and ref in answers[b]["offline_replicas"]]
    if len(dropped) <= 1 and answered:
        ctx.answer_writes[txn.zxid, key] = answers[answered[0]]["event_id"]
        return request  # its mark was read with the request (`reassignment_answers`, `_answered_before_asked`)
    if request.kind not in (*_ANSWERED_REQUESTS, "ISR") or (key not in request.partitions and request.kind != "ISR"):
        return None
    asked = _queued_behind(ctx, txn, request, key) if request.kind == "ISR" else request
    broker = dropped[0] if len(dropped) == 1 else left if not dropped and _left_out(ctx, left, key) else None
    if broker is None or asked is None or asked.kind not in _ANSWERED_REQUESTS:
        return None
    known = (asked.kind == "PARTITIONS" and broker in ctx.failed_replicas) or _left_out(ctx, broker, key)
    if broker not in ctx.brokers or not (known or _announced_after(ctx, broker, txn.time)):
        return None
    if ctx.offline_marks is not None and not ctx.offline_marks.request_answer(
            broker, key, event_ms(asked.event), txn.time + REQUEST_ANSWER_MS):
        return None
    ctx.answered_after(request.event, broker, txn, key)
    if _left_out(ctx, broker, key):  # answered once: known offline from now on
        elected, registered, keys = ctx.left_out[broker]
        ctx.left_out[broker] = (elected, registered, keys - {key})
    return request


def _left_out(ctx: Context, broker: int | None, key: tuple[str, int]) -> bool:
    """Whether the broker's replica of `key` was NewReplica at its newest notification, under the same controller and
    registration: onBrokerLogDirFailure's NewReplica -> OnlineReplica step sent it no LeaderAndIsr, so the controller
    learns of it from the next request whose LeaderAndIsr names it, whatever that request is (seed 1498, Kafka 3.9.1
    at protocol 2.6: t1-1's new replica on broker 3, reassigned onto it before its dir failed; broker 2's controlled
    shutdown 16 s later made broker 3 the leader, its answer left t1-1 leaderless). `left`: the last ISR member, which
    removeReplicasFromIsr keeps in the ISR."""
    if broker is None or broker not in ctx.left_out:
        return False
    elected, registered, keys = ctx.left_out[broker]
    return key in keys and elected == ctx.controller_since and registered == ctx.brokers.get(broker, 0)


def _queued_behind(ctx: Context, txn: ZkTxn, handled: Cause, key: tuple[str, int]) -> Cause | None:
    """The Admin API reassignment just before the leader's AlterIsr `handled` that wrote `key`, within
    REQUEST_ANSWER_MS of the write: the request whose LeaderAndIsr (A1) the broker answered with KAFKA_STORAGE_ERROR,
    the answer queued behind the AlterIsr the controller took first (its LeaderAndIsrResponseReceived after the
    IsrChangeNotification), so handled right after it (seed 1436, Kafka 3.9.1: t1-0's reassignment made broker 1
    write its leader epoch checkpoint in a dir that failed; the answer came 114 ms after leader 4's AlterIsr of t0-2
    and 28 ms before broker 1's notification: no controlled shutdown of broker 1)."""
    for cause in reversed(ctx.causes[:ctx.causes.index(handled)]):
        if cause.kind != "PARTITIONS":
            return None
        if key in cause.partitions:
            return cause if txn.time <= event_ms(cause.event) + REQUEST_ANSWER_MS else None
    return None


def _asked_by(ctx: Context, key: tuple[str, int], dropped: list[int]) -> Cause | None:
    """The newest reassignment whose answer (`_answered_before_asked`) names the dropped broker's replica of `key`,
    when the controller's newest write is no event's own (seed 1371: the reassignment's last write removed a
    partition that does not exist from /admin/reassign_partitions before the answer's write)."""
    ref = {"topic": key[0], "partition": key[1]}
    request = next((c for c in reversed(ctx.causes) if c.kind == "PARTITIONS"), None)
    if request is None or len(dropped) != 1 or ctx.event_at(request.event) is None:
        return None
    answer = ctx.answers_after(request.event).get(dropped[0])
    return request if answer is not None and ref in answer["offline_replicas"] else None


def _announced_after(ctx: Context, broker: int, time_ms: int) -> bool:
    """Whether the broker announces a failed log dir within REQUEST_ANSWER_MS after `time_ms`: its dir failed while it
    handled a request just before, and its answer to that request came first."""
    return any(time_ms <= t <= time_ms + REQUEST_ANSWER_MS for t in ctx.notified_at.get(broker, ()))


def late_answer(ctx: Context, txn: ZkTxn, key: tuple[str, int], dropped: dict[int, bool]) -> Cause | None:
    """A write taking a registered broker's replica offline (`dropped`: broker -> whether the write does) after
    another event's writes, for a partition the broker's notification's answer named (its `Mark replicas` line; from
    the directory alone: while that answer has written nothing yet, or its writes go on, within ANSWER_MS of the
    notification). The answer is an event of its own (LeaderAndIsrResponseReceived), queued behind the events that
    came while the broker answered: the write is the notification's, not a controlled shutdown of that broker (seed
    1035, Kafka 2.8.2: broker 4's answer came after an Admin API reassignment's writes, 45 ms after the
    notification). Not across a new controller, nor past the broker's re-registration."""
    started: set[int] = set()
    for cause in reversed(ctx.causes):
        if cause.kind == "FAILOVER":
            return None
        if cause.kind == "STARTUP":
            started |= cause.brokers
        elif cause.kind == "LOG_DIR" and cause.broker is not None and cause.broker not in started and \
                dropped.get(cause.broker, False):
            if fits(ctx, cause, key, True) and (cause.logged is not None or _answer_pending(ctx, txn, cause)):
                return _answered_after_request(ctx, txn, cause, key)
            second = _second_answer(ctx, txn, cause, key)
            if second is not None:
                return second
    return None


def _second_answer(ctx: Context, txn: ZkTxn, cause: Cause, key: tuple[str, int]) -> Cause | None:
    """With the state-change logs: a later mark of the notification's broker naming `key`, which its first mark did
    not, logged since the notification and before the write: the broker answered two LeaderAndIsr requests with
    KAFKA_STORAGE_ERROR, and the controller marks only the replicas it did not know of yet. The first mark (the
    notification's, in isrflow) answered an earlier request that reached the broker once its dir had failed; this
    one answers the notification's own LeaderAndIsr, naming the replicas left: its own event right after the
    notification's (LeaderAndIsrResponseReceived), not a controlled shutdown of that broker (seed 1372, Kafka 3.9.1 at
    protocol 2.6: broker 4's answer to a failover's request of broker 3's answer marked t0-1, its answer to its
    notification's marked t1-1, its leader, 23 ms later)."""
    broker = cause.broker
    if broker is None or cause.logged is None or key in cause.logged or ctx.offline_marks is None or \
            ctx.event_at(cause.event) is None or broker not in ctx.brokers or \
            not ctx.offline_marks.request_answer(broker, key, event_ms(cause.event), txn.time + REQUEST_ANSWER_MS):
        return None
    ctx.answered_after(cause.event, broker, txn, key)
    return cause


# The events a notification's answer was seen queued behind (its writes after theirs): an Admin API reassignment
# (seed 1035), a leader's AlterIsr (seed 1301), a topic creation (seed 1535, `created_before`), an Admin API preferred
# election (seed 1575; an unclean one is the same controller event, ReplicaLeaderElection).
_QUEUED_BEFORE_ANSWERS = ("PARTITIONS", "ISR", "CREATED", "PREFERRED", "UNCLEAN")


def _answered_after_request(ctx: Context, txn: ZkTxn, cause: Cause, key: tuple[str, int]) -> Cause:
    """The notification's answer written right after a request the controller handled between the notification and
    the answer (queued while the broker answered; `_QUEUED_BEFORE_ANSWERS`) is handled after that request: its own
    event right after the request's (LeaderAndIsrResponseReceived), not the notification's, which names nothing new
    then (seed 1035: broker 4's answer, t0-1, after the reassignment of t2-0; seed 1301: broker 3's, t3-0, t6-0 and
    t1-1, after leader 1's AlterIsr of t1-0, which completed a reassignment; isrflow had sent its requests before the
    request's). With the state-change logs the answer takes the replicas its mark names, and its later writes are
    its (`request_answer`); from the directory alone, each write of it after the request's names one (seed 1575: an
    Admin API preferred election made broker 3 t1-1's leader again before the answer took it offline; taken offline
    at the notification, nothing was left to elect). Not once a follower handed either out."""
    request = ctx.handling(txn) or created_before(ctx, txn)
    if request is None or request.kind not in _QUEUED_BEFORE_ANSWERS or \
            event_zxid(request.event) < event_zxid(cause.event) or ctx.event_at(request.event) is None or \
            ctx.event_at(cause.event) is None:
        return cause
    if cause.logged is None:
        # From the directory alone: the writes the answer makes after the request's are its own, whose replicas
        # they take offline (the notification's, explained before, stay with it).
        ctx.answered_after(request.event, cause.broker or 0, txn, key)
        return request
    answer = ctx.answer_after(request.event, cause.broker or 0)
    answer["offline_replicas"].extend(r for r in cause.event["offline_replicas"] if r not in answer["offline_replicas"])
    ctx.answer_writes[txn.zxid, key] = answer["event_id"]
    cause.event["offline_replicas"] = []
    cause.logged = frozenset()
    return request


def created_before(ctx: Context, txn: ZkTxn) -> Cause | None:
    """The topic creation whose new partition's state is the controller's newest write before `txn`
    (onNewPartitionCreation), while nothing else has written since: the event the controller was handling. A creation
    writes only new partitions, which make no cause `wrote` (`Context.handling` does not see it)."""
    newest = max((z for z in ctx.controller_writes if z < txn.zxid), default=None)
    # The observed rows come in zxid order: the newest ones only, down to that write.
    row = next((r for r in reversed(ctx.result.observed) if r["source_offset"] <= newest), None) \
        if newest is not None else None
    cause = ctx.cause_of(row["cause_event_id"]) if row is not None and row["source_offset"] == newest else None
    return cause if cause is not None and cause.kind == "CREATED" and not cause.wrote else None


def _answer_pending(ctx: Context, txn: ZkTxn, cause: Cause) -> bool:
    """From the directory alone: the notification's answer may still be coming (it has not written yet, or the
    controller's newest write is its own), the notification not ANSWER_MS older than the write."""
    notified = event_ms(cause.event)
    return txn.time <= notified + ANSWER_MS and (not cause.wrote or cause.last_zxid == ctx.controller_wrote_at)


def reassignment_answers(ctx: Context, event: dict[str, Any], replicas: dict[tuple[str, int], tuple[int, ...]]
                         ) -> None:
    """With the state-change logs: a registered broker with a failed log dir that answered a reassignment's
    LeaderAndIsr (A1 sends one to every replica of `replicas`, the new ones too) with KAFKA_STORAGE_ERROR, its mark
    logged within REQUEST_ANSWER_MS of the request and no notification of the broker in between (that one's answer).
    The replica goes offline whether or not a write follows: out of the ISR already, the controller sends the
    LeaderAndIsr, UpdateMetadata and StopReplica of OfflineReplica all the same (seed 1034: t2-0 reassigned onto
    broker 3 after a failover whose new controller knew nothing of broker 3's failed dir)."""
    marks = ctx.offline_marks
    if marks is None:
        return
    since = event_ms(event)
    until = since + REQUEST_ANSWER_MS
    for key, brokers in sorted(replicas.items()):
        for broker in brokers:
            if broker not in ctx.brokers or broker not in ctx.failed_replicas or \
                    any(since <= t <= until for t in ctx.notified_at.get(broker, ())):
                continue
            if marks.request_answer(broker, key, since, until):
                ctx.answer_after(event, broker)["offline_replicas"].append({"topic": key[0], "partition": key[1]})
                ctx.failed_replicas[broker].add(key)


def resumed_reassignment_answers(ctx: Context, broker: int, event: dict[str, Any]) -> None:
    """With the state-change logs: a broker's startup resumes every reassignment whose target replicas include it
    (onBrokerStartup -> maybeResumeReassignments -> onPartitionReassignment), whose A1 sends a LeaderAndIsr to every
    replica. Another broker with a failed log dir may answer it with KAFKA_STORAGE_ERROR: an event of its own right
    after the startup, as a reassignment's own (`reassignment_answers`). Seed 1426 (Kafka 3.9.1): broker 3's startup
    resumed t1-0's reassignment; broker 4, whose dir had failed, had deleted its log of t1-0 (t1 being deleted) and
    answered KAFKA_STORAGE_ERROR. The starting broker's own answer is its startup's (`startup_answer`)."""
    resumed = {(t, p): tuple(b for b in topic.replicas.get(p, ()) if b != broker)
               for t, topic in sorted(ctx.topics.items()) for p in sorted(topic.replicas)
               if topic.reassigning(p) and broker in topic.target(p)}
    if resumed:
        reassignment_answers(ctx, event, resumed)
