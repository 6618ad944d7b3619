"""A log dir failing under a broker in ZooKeeper mode (KIP-112): `/log_dir_event_notification/log_dir_event_<seq>`.

The broker creates the znode (`{"version":1,"broker":B,"event":1}`); the controller's LogDirEventNotification handler
reads it, sends the broker a LeaderAndIsr of every replica it holds and deletes the znode. The broker answers
KAFKA_STORAGE_ERROR for the replicas in the failed dir, and the controller takes those offline
(processLeaderAndIsrResponseReceived): an election where the broker led, the broker out of the ISR. That answer
is no znode: ZooKeeper's log shows the notification and the writes after it, not which replicas the broker named.

- With the controller's `state-change.log` (the `state.change.logger` at INFO, Kafka's own default): its line
  `Mark replicas T-P,... on broker B as offline` names them; the event carries them.
- From the directory alone they are inferred from the controller's writes that follow: each partition whose
  ISR the broker leaves there (or, its last member, whose leadership it leaves leaderless; not a leader moved off it
  with it kept in the ISR: seed 818's preferred election). A replica of the failed dir that was neither leader nor
  in the ISR changes no znode and stays unknown (the rules then think it online: it could be elected later, where
  the controller would not).

The controller also learns of offline replicas from its other LeaderAndIsr answers (a failover's, a broker
startup's). A startup's mark, for a broker that announced no failed dir before and before any later notification of
it, goes with its STARTUP event (a dir that failed while the broker was down: no notification, `startup_answer`), or
after a leader's AlterIsr handled before it (`queued_startup_answer`); a reassignment's, logged right after its
request, is its own event right after the request (`answers.reassignment_answers`, LeaderAndIsrResponseReceived); a
failover's go with its ControllerChange (docs/zookeeper.md, "JBOD").
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from streaming.zookeeper.context import (
    ANSWER,
    LOG_DIR_EVENT_NOTIFICATION,
    NO_LEADER,
    Cause,
    Context,
    PartitionState,
    drops,
    event_ms,
    event_zxid,
)
from streaming.zookeeper.statechange import REQUEST_ANSWER_MS, OfflineMark
from streaming.zookeeper.txnlog import ZkTxn, ZnodeOp


def log_dir_event(ctx: Context, txn: ZkTxn, op: ZnodeOp) -> None:
    """A broker's notification: a LogDirEventNotification event, its offline replicas from the controller's mark
    when logged, else filled by the writes it explains (`fits`, `explained`). Its delete says whether a controller
    read it (`notification_deleted`)."""
    if op.kind == "delete" and op.path in ctx.log_dir_events:
        notification_deleted(ctx, ctx.log_dir_events.pop(op.path))
        return
    if op.kind != "create" or op.path.count("/") != 2:
        return
    broker = int(json.loads(op.data or b"{}").get("broker", -1))
    if broker < 0:
        return
    # Both lookups run (`|`): each takes the marks of its own window, after the znode and before it.
    for_request = _answered_before_asked(ctx, txn, broker) | _answered_before_notified(ctx, txn, broker)
    unasked = _new_replicas(ctx, broker)
    ctx.left_out[broker] = (ctx.controller_since, ctx.brokers.get(broker, 0), unasked)
    marked = ctx.offline_marks.answer(broker, txn.time, unasked, ctx.notification_readers.get(op.path)) \
        if ctx.offline_marks is not None else None
    if marked is None and for_request:
        marked = frozenset()  # its answer named no replica the controller did not know of
    event = ctx.event(txn, "LogDirEventNotification", broker_id=broker, offline_replicas=[
        {"topic": t, "partition": p} for t, p in sorted(marked or ())])
    _takes_deletion_answers(ctx, event, broker)
    cause = ctx.cause(Cause(event, "LOG_DIR", broker))
    cause.logged = marked
    ctx.failed_replicas.setdefault(broker, set()).update(cause.logged or ())
    ctx.log_dir_events[op.path] = cause
    _after_deletion(ctx, txn, cause)


def _takes_deletion_answers(ctx: Context, event: dict[str, Any], broker: int) -> None:
    """With the controller's log: the first notification of a broker that answered a read's StopReplica (delete)
    with KAFKA_STORAGE_ERROR, handled before that read's other answers (`notified_before_answers`), takes them
    (`deletion_answers`): the failed replica is OnlineReplica again when they come, none retries it (seed 1412)."""
    for read, brokers in sorted(ctx.notified_deletions.items()):
        if broker in brokers and read < len(ctx.logged_deletions):
            brokers.discard(broker)
            event["deletion_answers"] = sorted(ctx.logged_deletions[read])
            return


def _after_deletion(ctx: Context, txn: ZkTxn, notification: Cause) -> None:
    """Without the controller's log (which names the answers: `DeleteTopic.storage_error_answers`): a notification
    within REQUEST_ANSWER_MS of a deletion request the controller wrote for, whose broker holds replicas of its topics
    (not known in a failed dir; with the state-change logs, only those its mark names), every replica of them on a
    registered broker: the dir may have failed as the broker deleted them (seed 1274). Kept until the controller's
    session ends (`deletions_failed_in_dir`)."""
    broker = notification.broker
    if ctx.reads or broker is None or broker not in ctx.brokers:
        return
    for cause in ctx.causes:
        if cause.kind != "DELETE" or not cause.wrote or event_zxid(cause.event) < ctx.controller_since or \
                txn.time - event_ms(cause.event) > REQUEST_ANSWER_MS or not cause.read_topics <= set(ctx.topics):
            continue
        replicas = {(b, (t, p)) for t in cause.read_topics for p, r in ctx.topics[t].replicas.items() for b in r}
        if not all(ctx.replica_online(b, key) for b, key in replicas):
            continue
        keys = frozenset(key for b, key in replicas if b == broker and
                         (notification.logged is None or key in notification.logged))
        if keys:
            ctx.deletions_in_failed_dir.append((cause, notification, keys))


def deletions_failed_in_dir(ctx: Context) -> None:
    """The controller's session ended with the topics of a deletion a notification came right after still there
    (`_after_deletion`): the deletion never completed, every replica live, so the notification's broker answered its
    StopReplica (delete) with KAFKA_STORAGE_ERROR (its dir failed as it deleted them: ReplicaDeletionIneligible,
    retried back to OfflineReplica), and the notification's LeaderAndIsr asked about them again (the answer names
    them). The deletion's event carries the answers (`storage_error_answers`), the notification's names them. Not
    once a follower has handed either out."""
    found, ctx.deletions_in_failed_dir = ctx.deletions_in_failed_dir, []
    for deletion, notification, keys in found:
        if not deletion.read_topics <= set(ctx.topics) or ctx.event_at(deletion.event) is None or \
                ctx.event_at(notification.event) is None:
            continue
        refs = [{"topic": t, "partition": p} for t, p in sorted(keys)]
        deletion.event.setdefault("storage_error_answers", {})[str(notification.broker)] = refs
        named = notification.event["offline_replicas"]
        named.extend(r for r in refs if r not in named)
        named.sort(key=lambda r: (r["topic"], r["partition"]))
        ctx.failed_replicas.setdefault(notification.broker or 0, set()).update(keys)


def _answered_before_asked(ctx: Context, txn: ZkTxn, broker: int) -> bool:
    """With the state-change logs: the broker's marks, logged after its notification but before the controller sent
    it any LeaderAndIsr since (onBrokerLogDirFailure's came after), naming partitions of the Admin API reassignment
    that is the newest event, within REQUEST_ANSWER_MS of its start: the broker's answer to that request's
    LeaderAndIsr (its dir failed writing the checkpoint of a partition the request made it lead; the notification
    came first), handled right after the request and before the notification: its own event right after the
    request's (LeaderAndIsrResponseReceived), not the notification's (seed 1113, Kafka 2.7.2: t1-3 on broker
    1, 7 ms after its notification, 51 ms before the notification's LeaderAndIsr). Whether any was."""
    newest = ctx.newest_event
    request = ctx.cause_of(newest["event_id"]) if newest is not None else None
    if ctx.offline_marks is None or request is None or request.kind != "PARTITIONS" or broker not in ctx.brokers:
        return False
    until = event_ms(request.event) + REQUEST_ANSWER_MS
    answered = [(m["topic"], m["partition"]) for m in request.event["partitions"]
                if ctx.offline_marks.request_answer(broker, (m["topic"], m["partition"]), txn.time, until,
                                                    (txn.time,))]
    _answered(ctx, request, broker, answered)
    return bool(answered)


# The requests whose LeaderAndIsr a broker answered KAFKA_STORAGE_ERROR before its notification came
# (`_answered_before_notified`), as `answers._ANSWERED_REQUESTS`.
_ANSWERED_BEFORE_NOTIFIED = ("PARTITIONS", "CONTROLLED_SHUTDOWN", "FAILURE")


def _answered_before_notified(ctx: Context, txn: ZkTxn, broker: int) -> bool:
    """With the state-change logs: the broker's marks logged before its notification's znode, within
    REQUEST_ANSWER_MS of the start of the request that is the newest event and naming partitions it wrote: its dir
    failed as it handled that request's LeaderAndIsr (a leader epoch checkpoint), and it answered KAFKA_STORAGE_ERROR
    before announcing the dir. The controller handled that answer (the mark is logged as it does) before the
    notification's event came, so it is its own event right after the request's (LeaderAndIsrResponseReceived), not
    the notification's, whose LeaderAndIsr carries the states the answer wrote (seed 1479, Kafka 3.5.2: broker 3's
    controlled shutdown made broker 2 t1-0's leader (20:54:59.546), mark at .589, notification .613, the answer's
    write leaving t1-0 leaderless at .615, the notification's LeaderAndIsr at .664 with leader -1). Whether any
    was."""
    newest = ctx.newest_event
    request = ctx.cause_of(newest["event_id"]) if newest is not None else None
    if ctx.offline_marks is None or request is None or request.kind not in _ANSWERED_BEFORE_NOTIFIED or \
            broker not in ctx.brokers:
        return False
    since = event_ms(request.event)
    until = min(txn.time - 1, since + REQUEST_ANSWER_MS)
    marks = ctx.offline_marks
    answered = [key for key in sorted(_named(request)) if marks.request_answer(broker, key, since, until)]
    _answered(ctx, request, broker, answered)
    return bool(answered)


def _named(request: Cause) -> set[tuple[str, int]]:
    """The partitions whose LeaderAndIsr `request` sent: those it wrote, and a reassignment's every partition, also
    one in place (complete with its one bump, so no longer among those it may write: seed 1543)."""
    moves = request.event.get("partitions", []) if request.kind == "PARTITIONS" else []
    return request.partitions | {(m["topic"], m["partition"]) for m in moves}


def _answered(ctx: Context, request: Cause, broker: int, keys: Iterable[tuple[str, int]]) -> None:
    """The broker's answer to `request`'s LeaderAndIsr names `keys`: its own event right after the request's."""
    for key in keys:
        ctx.answer_after(request.event, broker)["offline_replicas"].append({"topic": key[0], "partition": key[1]})
        ctx.failed_replicas.setdefault(broker, set()).add(key)


def _new_replicas(ctx: Context, broker: int) -> frozenset[tuple[str, int]]:
    """The broker's replicas the controller holds NewReplica: the new replicas of a reassignment still in progress
    that it started since its election and the broker's registration (A2, startNewReplicasForReassignedPartition;
    the completion's B1, a failover and the broker's startup move them online). onBrokerLogDirFailure's
    OnlineReplica step sends no LeaderAndIsr for them, so the notification's answer cannot name them. Only a replica
    the start added to the assignment: NewReplica comes from NonExistentReplica alone, so a reassignment asked for
    again keeps a replica the controller held before (online since its failover) as it was (seed 1030: "from
    OnlineReplica to NewReplica failed", and the notification's answer named it)."""
    since = max(ctx.controller_since, ctx.brokers.get(broker, 0))
    return frozenset(key for key, started in ctx.started_by.items()
                     if int(started.split("-")[1]) > since and key[0] in ctx.topics
                     and broker in ctx.topics[key[0]].adding.get(key[1], ())
                     and ctx.replica_added_at.get(key, {}).get(broker, 0) > since)


def note_notifications(ctx: Context, txns: Iterable[ZkTxn]) -> None:
    """The times of every broker's notifications in the history, read ahead: a mark after one is its answer, and a
    request's answer just before one came from a dir that failed as the broker handled that request. And which
    controller deleted each (`notification_readers`): the one whose LeaderAndIsr asked about it."""
    for txn in txns:
        for op in txn.ops:
            if op.path == "/controller" and op.kind == "create":
                ctx.controller_sessions[txn.session] = int(json.loads(op.data or b"{}").get("brokerid", -1))
            if not op.path.startswith(LOG_DIR_EVENT_NOTIFICATION) or op.path.count("/") != 2:
                continue
            if op.kind == "create":
                broker = int(json.loads(op.data or b"{}").get("broker", -1))
                ctx.notified_at.setdefault(broker, []).append(txn.time)
            elif op.kind == "delete" and txn.session in ctx.controller_sessions:
                ctx.notification_readers[op.path] = ctx.controller_sessions[txn.session]


def startup_answer(ctx: Context, txn: ZkTxn, broker: int, event: dict[str, Any]) -> None:
    """With the controllers' state-change logs: the replicas the broker answered KAFKA_STORAGE_ERROR for to its
    startup's LeaderAndIsr, which no notification names (a dir that failed while the broker was down: seed 805),
    carried by its STARTUP event (`offline_replicas`). Not for a broker that announced a failed dir before: the
    rules know that dir and the answers it brings (seed 815)."""
    notified = ctx.notified_at.get(broker, [])
    if ctx.offline_marks is None or any(t <= txn.time for t in notified):
        return
    marked = ctx.offline_marks.startup_answer(broker, txn.time, notified)
    if marked:
        event["offline_replicas"] = [{"topic": t, "partition": p} for t, p in sorted(marked)]
        ctx.failed_replicas.setdefault(broker, set()).update(marked)


def startup_storage_error(ctx: Context, txn: ZkTxn, key: tuple[str, int], before: PartitionState,
                          after: PartitionState) -> Cause | None:
    """From the directory alone: a write no event explains that takes a started broker out of a partition its
    startup's own write just elected it for, the controller's newest write being that startup's: the broker's
    KAFKA_STORAGE_ERROR answer to the startup's LeaderAndIsr (a dir that failed while it was down, so no notification:
    `startup_answer` reads it from the marks), which takes the replica offline right after its election. Seed 1301:
    broker 4's startup elected it for t2-0 (leader epoch 5), its answer left t2-0 leaderless (6). Where the controller
    wrote leaders' AlterIsrs after the startup and before the answer (their IsrChanges, the newest `handled`), the
    answer is its own event right after them, as with the marks (`queued_startup_answer`; seed 1477, Kafka 3.0.2:
    broker 3's startup elected it for t1-1, two AlterIsrs came, then its answer left t1-1 leaderless). Not for a
    broker that announced a failed dir before (the rules know that dir), nor once a follower has handed the startup
    out."""
    handled = ctx.handling(txn) or _newest_isr_change(ctx, txn)
    startup = _queued_behind_isr_changes(ctx, handled)
    broker = before.leader
    if ctx.offline_marks is not None or startup is None or startup.kind != "STARTUP" or \
            ctx.event_at(startup.event) is None or ctx.written_for.get(key) != startup.event["event_id"] or \
            broker not in startup.brokers or broker not in ctx.brokers or not drops(broker, before, after) or \
            any(t <= txn.time for t in ctx.notified_at.get(broker, ())):
        return None
    if handled is not startup:
        ctx.answered_after(handled.event, broker, txn, key)
        return handled
    startup.event.setdefault("offline_replicas", []).append({"topic": key[0], "partition": key[1]})
    ctx.failed_replicas.setdefault(broker, set()).add(key)
    return startup


def _newest_isr_change(ctx: Context, txn: ZkTxn) -> Cause | None:
    """The leader's AlterIsr whose IsrChange is the controller's newest write before `txn` (its own write, which
    gives the ISR cause no `last_zxid`)."""
    writes = [z for z in ctx.controller_writes if z < txn.zxid]
    return next((c for c in reversed(ctx.causes) if c.kind == "ISR" and writes and event_zxid(c.event) == writes[-1]),
                None)


def _queued_behind_isr_changes(ctx: Context, handled: Cause | None) -> Cause | None:
    """`handled` itself; for a leader's AlterIsr the controller wrote (an ISR cause), the broker startup before it
    with only such AlterIsrs in between, while the startup names no answer of its own yet: the startup whose answer
    was queued behind them."""
    if handled is None or handled.kind != "ISR":
        return handled
    for cause in reversed(ctx.causes[:ctx.causes.index(handled)]):
        if cause.kind == "STARTUP":
            return None if cause.event.get("offline_replicas") else cause
        if cause.kind != "ISR":
            return None
    return None


def notification_deleted(ctx: Context, cause: Cause) -> None:
    """The controller that read a notification deletes it (processLogDirEventNotification). One deleted by a new
    controller's failover (onControllerFailover deletes them all, unread) was read by none: the dir failed while
    the old controller was gone (killed, its session not yet expired), or one it read and stopped before deleting
    (`_read_before_failover`). Unread, its event is no event; the failover's
    LeaderAndIsr requests bring the broker's answer, which its ControllerChange carries (`offline_replicas`, from
    the mark, else from the failover's writes that drop the broker: `answer_explained`)."""
    failover = ctx.newest_failover()
    if failover is None or event_zxid(failover.event) < event_zxid(cause.event):
        _read_at_delete(ctx, cause)  # read by the controller that was active when it came
        return
    if cause.event in ctx.result.events and not _read_before_failover(ctx, cause):
        ctx.result.events.remove(cause.event)
    ctx.forget_cause(cause)
    answers = failover.event.setdefault("offline_replicas", {})
    answers.setdefault(str(cause.broker), []).extend(
        r for r in cause.event["offline_replicas"] if r not in answers.get(str(cause.broker), []))
    cause.event["offline_replicas"] = []
    ctx.unread_log_dirs[cause.broker] = failover.event["event_id"]
    if cause.broker not in ctx.brokers:
        ctx.answer_at_startup[cause.broker] = failover.event


def _read_before_failover(ctx: Context, cause: Cause) -> bool:
    """With the controllers' controller.log: a notification a failover deleted that the controller active when it came
    logged reading (`Handling log directory failure for brokers B`) after it came: that controller sent the broker its
    LeaderAndIsr and UpdateMetadata (onBrokerLogDirFailure) and stopped before deleting it (processLogDirEvent-
    Notification deletes only after), so it never handled the answer either: the notification's event stays, naming
    no replica, and the failover, asking again, carries the answer. Seed 1435 (Kafka 2.8.2, three log dirs):
    controller 3 read broker 1's notification at 18:04:32.019 and hung (its session expired), controller 2's failover
    deleted it at 18:04:38."""
    since = event_ms(cause.event)
    return any(at >= since and cause.broker in brokers
               for at, brokers in ctx.reads.log_dir_reads.get(cause.event["controller_epoch"], ()))


def _read_at_delete(ctx: Context, cause: Cause) -> None:
    """The controller reads a notification when it comes to its event and deletes it right after sending its
    LeaderAndIsr (processLogDirEventNotification writes nothing else): the events whose first write the controller
    made between the notification and its delete were queued before it and handled first, so the notification's
    event goes after the last of them (seed 1113, Kafka 2.7.2: broker 3's AlterIsr of t1-4, queued behind broker 1's
    answer to a reassignment, and the completion it let go on, before broker 1's notification 14 ms older). Not
    once a follower has handed the notification out."""
    events = ctx.result.events
    at = ctx.event_at(cause.event)
    if at is None or cause.wrote:
        return
    before = [i for i in range(at + 1, len(events)) if event_zxid(events[i]) in ctx.controller_writes]
    if not before:
        return
    events.insert(before[-1], events.pop(at))
    last = ctx.cause_of(events[before[-1] - 1]["event_id"])
    if last is not None:
        ctx.forget_cause(cause)
        ctx.causes.insert(ctx.causes.index(last) + 1, cause)


def fits(ctx: Context, cause: Cause, key: tuple[str, int], dropped: bool) -> bool:
    """Whether a controller write is the answer's: it takes the still registered broker's replica offline
    (`dropped`: out of the ISR, or leaderless as its last member), for a replica the controller marked offline when
    its mark is known."""
    return cause.broker in ctx.brokers and dropped and (cause.logged is None or key in cause.logged)


def explained(ctx: Context, cause: Cause, key: tuple[str, int]) -> None:
    """From the directory alone, a write the answer explains names one of its offline replicas."""
    named = cause.event["offline_replicas"]
    if cause.logged is None and {"topic": key[0], "partition": key[1]} not in named:
        named.append({"topic": key[0], "partition": key[1]})
        ctx.failed_replicas.setdefault(cause.broker or 0, set()).add(key)


def in_failed_dir(ctx: Context, broker: int, key: tuple[str, int], asking: Cause) -> bool:
    """Whether the broker's replica of `key` is known to be in a failed dir, or may be (its answer to the LeaderAndIsr
    of `asking`, a failover that deleted the broker's notification unread or the broker's startup after such a
    failover while it was down, names which): asked again (its startup, a failover), it answers KAFKA_STORAGE_ERROR
    and the controller drops it from the leadership and the ISR."""
    if key in ctx.failed_replicas.get(broker, ()):
        return True
    if asking.kind == "FAILOVER":
        return ctx.unread_log_dirs.get(broker) == asking.event["event_id"]
    return asking.kind == "STARTUP" and broker in ctx.answer_at_startup


def answer_explained(ctx: Context, cause: Cause, key: tuple[str, int], dropped: list[int]) -> None:
    """A failover's or a startup's write that drops brokers whose notification a failover deleted unread: from the
    directory alone, their answers, which that failover's ControllerChange restores (`_unread_answer`), name the
    partition."""
    for broker in dropped:
        failover = _unread_answer(ctx, cause, broker)
        if failover is not None and key not in ctx.failed_replicas.get(broker, ()):
            failover.setdefault("offline_replicas", {}).setdefault(str(broker), []).append(
                {"topic": key[0], "partition": key[1]})
            ctx.failed_replicas.setdefault(broker, set()).add(key)


def answered_before_elected(ctx: Context, cause: Cause, key: tuple[str, int], dropped: list[int], leader: int
                            ) -> None:
    """From the directory alone (no `Mark replicas` lines, so no `answer_order`): each of a failover's answers is
    handled before the next is in (processLeaderAndIsrResponseReceived records a broker's offline replicas only when
    its own event runs), so a write that drops brokers known in failed dirs and elects `leader`, whose replica of the
    partition is known in a failed dir too, shows their answers handled before the leader's. Seed 1269 (Kafka
    3.5.2): t0-1 elected onto broker 4 at broker 2's answer, leaderless at broker 4's: the ControllerChange's
    `answer_order` is [2, 4]. Not once a follower has handed the failover out."""
    if ctx.offline_marks is not None or cause.kind != "FAILOVER" or ctx.event_at(cause.event) is None or \
            key not in ctx.failed_replicas.get(leader, ()):
        return
    first = sorted(b for b in dropped if key in ctx.failed_replicas.get(b, ()))
    order = list(cause.event.get("answer_order", []))
    if not first or leader in order or leader in first:
        return
    cause.event["answer_order"] = order + [b for b in first if b not in order] + [leader]


def failed_before_startup(ctx: Context, cause: Cause, key: tuple[str, int], before: PartitionState,
                          after: PartitionState) -> bool:
    """From the directory alone (no `Mark replicas` lines): a failover's write leaving a partition leaderless with its
    ISR kept, that of its registered leader alone, is that broker's
    KAFKA_STORAGE_ERROR answer to the LeaderAndIsr (OfflineReplica of the last ISR member; a controlled shutdown's
    election of such a partition fails and writes nothing). A broker that wrote no notification since it registered
    (nor within REQUEST_ANSWER_MS after the write: seed 1114's answer before its notification) had that dir failed
    while it was down: its startup's answer named the replica, as its STARTUP's `offline_replicas` do with the
    state-change logs, and every failover asks it again. Seed 1240 (Kafka 2.7.2): broker 4 elected uncleanly to t0-0
    by controller 2's failover, then t0-0 leaderless at broker 4's answer; seed 1340 (2.7.2): the failover after
    broker 1's startup, whose own answer `startup_storage_error` reads (t0-2 elected onto broker 1, then leaderless)."""
    broker = before.leader
    if ctx.offline_marks is not None or cause.kind != "FAILOVER" or broker not in ctx.brokers or \
            not cause.read_live(broker) or \
            after.leader != NO_LEADER or before.isr != (broker,) or after.isr != (broker,) or \
            ctx.event_at(ctx.startup_events.get(broker, {})) is None:
        return False
    since = event_ms(ctx.startup_events[broker])
    return not any(since <= t <= ctx.time + REQUEST_ANSWER_MS for t in ctx.notified_at.get(broker, ()))


def startup_answer_explained(ctx: Context, cause: Cause, key: tuple[str, int], before: PartitionState,
                             after: PartitionState) -> None:
    """A write `failed_before_startup` explains names one of the replicas the broker's STARTUP answered for."""
    if key in ctx.failed_replicas.get(before.leader, ()) or not failed_before_startup(ctx, cause, key, before, after):
        return
    ctx.startup_events[before.leader].setdefault("offline_replicas", []).append(
        {"topic": key[0], "partition": key[1]})
    ctx.failed_replicas.setdefault(before.leader, set()).add(key)


def _unread_answer(ctx: Context, cause: Cause, broker: int) -> dict[str, Any] | None:
    """The ControllerChange that carries the broker's answer to `cause`'s LeaderAndIsr: the failover's own, when it
    deleted the broker's notification unread; for a STARTUP, that of the failover that deleted it while the broker
    was down (seed 437: broker 2's dir failed, its controller's session expired, and broker 2 was down at the next
    failover; its answer came at its re-registration), not once a follower has handed that event out."""
    if cause.kind == "FAILOVER":
        return cause.event if ctx.unread_log_dirs.get(broker) == cause.event["event_id"] else None
    failover = ctx.answer_at_startup.get(broker) if cause.kind == "STARTUP" else None
    return failover if failover is not None and ctx.event_at(failover) is not None else None


def queued_startup_answer(ctx: Context, txn: ZkTxn, event: dict[str, Any]) -> None:
    """With the state-change logs: a broker that announced a failed dir before and registered again answers the
    startup's LeaderAndIsr with KAFKA_STORAGE_ERROR again (the rules take its known failed replicas offline again).
    That answer is an event of its own (LeaderAndIsrResponseReceived), queued behind what came while the broker
    answered: where the controller wrote a leader's AlterIsr (`event`, its IsrChange), or answered one without a
    write, after the startup and before the answer's `Mark replicas` line, the answer's event goes right after that
    request's (the newest such one), and the startup takes nothing offline (`storage_error_answer_queued`). Seed
    1255 (Kafka 2.8.2): broker 4's answer naming t2-0 came as the controller handled leader 2's AlterIsr of t0-0
    (written 30.505, marked 30.510); seed 1267 (Kafka 3.0.2): broker 1's after leader 4's AlterIsr of t4-0 (written
    47.058) and leader 2's of t1-0 (answered without a write at 47.060; marked 47.079). The same for a dir that
    failed while the broker was down, whose replicas the startup's `offline_replicas` name (`startup_answer`): seed
    1477 (Kafka 3.0.2): broker 3's answer after leaders 2's and 4's AlterIsrs of t0-0 and t0-4 (written 29.840 and
    .849, marked .854). Not across a new controller, nor once a follower handed the startup out."""
    marks = ctx.offline_marks
    startup = next((c for c in reversed(ctx.causes) if c.kind in ("STARTUP", "FAILOVER")), None)
    if marks is None or startup is None or startup.kind != "STARTUP" or startup.broker is None or \
            ctx.event_at(startup.event) is None or startup.event.get("new_brokers"):
        return
    _queued_resumed_answers(ctx, txn, event, startup)
    broker, since = startup.broker, event_ms(startup.event)
    carried = startup.event.get("offline_replicas")
    if carried:
        # A dir that failed while it was down: `startup_answer` took its mark and gave the startup its replicas.
        mark = _startup_mark(ctx, marks.logged, broker, since, carried)
    elif any(t < since for t in ctx.notified_at.get(broker, ())):
        mark = _startup_mark(ctx, marks.marks, broker, since)
    else:
        return  # no answer of the broker is known
    if mark is None or mark.at_ms <= txn.time:
        return
    events = ctx.result.events
    for earlier in events[ctx.event_at(startup.event) + 1:]:
        if earlier["type"] == ANSWER and earlier["broker_id"] == broker:
            events.remove(earlier)  # after an AlterIsr before this one: not the newest
    startup.event["storage_error_answer_queued"] = True
    ctx.answer_after(event, broker)["offline_replicas"] = [
        {"topic": t, "partition": p} for t, p in sorted(mark.replicas)]


def _queued_resumed_answers(ctx: Context, txn: ZkTxn, event: dict[str, Any], startup: Cause) -> None:
    """With the state-change logs: another broker's KAFKA_STORAGE_ERROR answer to the LeaderAndIsr of a reassignment
    the startup resumed (`answers.resumed_reassignment_answers`, right after the startup) whose mark was logged after
    the controller wrote a leader's AlterIsr (`event`, its IsrChange, at `txn`) was queued behind that request: its
    own event right after the IsrChange (seed 1550, Kafka 2.7.2: broker 4's startup resumed t0-0's reassignment at
    00:29:40.177, leader 1's AlterIsr of t4-0 and t4-1 was written at .185 and its UpdateMetadata sent at .191, and
    broker 1's answer was marked at .197)."""
    marks, since, events = ctx.offline_marks, event_ms(startup.event), ctx.result.events
    assert marks is not None
    # Between the startup and `event`: after the startup, or after an IsrChange handled before this one.
    between = events[ctx.event_at(startup.event) + 1:ctx.event_at(event)]
    for answer in [e for e in between if e["type"] == ANSWER and e["broker_id"] != startup.broker]:
        mark = _startup_mark(ctx, marks.logged, answer["broker_id"], since, answer["offline_replicas"])
        if mark is not None and mark.at_ms > txn.time:
            events.remove(answer)
            ctx.answer_after(event, answer["broker_id"])["offline_replicas"] = answer["offline_replicas"]


def _startup_mark(ctx: Context, marks: Iterable[OfflineMark], broker: int, since: int,
                  named: list[dict[str, Any]] | None = None) -> OfflineMark | None:
    """The broker's mark answering the LeaderAndIsr of a startup at `since` (ms): within REQUEST_ANSWER_MS, a later
    mark answers a later request (seed 815: t4's deletion retried 11 s after the startup; seed 1240: a later
    controller's failover). With `named`, one of the active controller's naming exactly those replicas."""
    replicas = None if named is None else {(r["topic"], r["partition"]) for r in named}
    return next((m for m in marks if m.broker == broker and since <= m.at_ms <= since + REQUEST_ANSWER_MS and
                 (replicas is None or (set(m.replicas) == replicas and m.controller == ctx.controller_id))), None)

