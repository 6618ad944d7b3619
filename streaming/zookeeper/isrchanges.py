"""A leader's ISR changes: the partition state writes that keep the leader epoch, and how the controller learns of
them.

- A partition state write with the leader epoch unchanged -> IsrChange, the leader's AlterPartition (below
  inter.broker.protocol 2.7 the leader's own session writes it and announces it under /isr_change_notification).
  From 2.7 on the controller writes the partitions of one request in a pipeline (consecutive cxids of its session):
  each IsrChange of such a request names them all (`request_partitions`).
- Leaders that write their own ISR changes (below inter.broker.protocol.version 2.7) -> UpdateFeatures
  metadata.version 0 first: the zk rules run at a protocol before 3.0 (no KIP-704 recovery state). The controller's
  deletes of their `/isr_change_notification/isr_change_N` znodes (one pipeline: consecutive cxids) ->
  IsrChangeNotification naming the partitions they announced; a new controller's deletes at its failover, which
  reads every state anyway, are none.
- With the leaders' server.log files, the AlterPartition requests the controller answered without a write ->
  IsrChange events at their answer's time (`answered_before`); those a controller whose session had expired
  answered (its write threw) -> IsrChange events `write_failed` at the expiry (`answered_by_deposed`).
"""

from __future__ import annotations

import json
from typing import Any

from streaming.zookeeper import admin, logdirs
from streaming.zookeeper.context import (
    ISR_CHANGE_NOTIFICATION,
    NO_LEADER,
    Batch,
    Cause,
    Context,
    PartitionState,
    TopicAssignment,
    controllers_write,
    event_zxid,
    follows_on,
)
from streaming.zookeeper.serverlog import AlterPartitionRequest, AskedPartition
from streaming.zookeeper.txnlog import ZkHistory, ZkTxn, ZnodeOp

# Kafka's error code for an exception it has no code for: a partition's answer when the controller's write threw.
UNKNOWN_SERVER_ERROR = -1


def leaders_write_their_isr(history: ZkHistory) -> bool:
    """Whether the cluster runs below inter.broker.protocol.version 2.7: its leaders announce their own ISR changes
    under /isr_change_notification (from 2.7 on they send AlterPartition to the controller)."""
    notification = ISR_CHANGE_NOTIFICATION
    return any(op.kind == "create" and op.path.startswith(notification) for txn in history.txns for op in txn.ops) \
        or (history.snapshot is not None and any(p.startswith(notification) for p in history.snapshot.nodes))


def protocol_before_3(ctx: Context, txn: ZkTxn) -> None:
    """Brokers below inter.broker.protocol.version 2.7 (Kafka 2.x): the rules run at a protocol before 3.0,
    where an unclean election keeps the leader's recovery state."""
    if not ctx.protocol_before_3:
        ctx.protocol_before_3 = True
        ctx.event(txn, "UpdateFeatures", "-protocol", features={"metadata.version": 0})


def leader_isr_change(ctx: Context, txn: ZkTxn, key: tuple[str, int], before: PartitionState,
                      after: PartitionState) -> None:
    """The leader's AlterPartition, written by the controller (or by the leader itself below IBP 2.7)."""
    leader = before.leader
    request = _same_request(ctx, ctx.alter_partition, txn, leader)
    event = ctx.event(txn, "IsrChange", f"-{key[0]}-{key[1]}", topic=key[0], partition=key[1],
                      broker_id=max(leader, 0), broker_epoch=ctx.brokers.get(leader, 0),
                      leader_epoch=before.leader_epoch, partition_epoch=before.version, isr=list(after.isr),
                      leader_recovery_state="RECOVERING" if after.recovering else "RECOVERED")
    if request is not None:
        request.events.append(event)
        _extend(request, txn, [key], "request_partitions")
        _refused_with(ctx, txn, request)
    elif txn.session == ctx.controller_session and not ctx.protocol_before_3:
        ctx.alter_partition = Batch(txn.session, txn.cxid, leader, [event], [{"topic": key[0], "partition": key[1]}])
        _refused_with(ctx, txn, ctx.alter_partition)
    # The controller completes the reassignments a request lets complete once all its partitions are written and
    # its UpdateMetadata sent (processAlterIsr -> maybeCompleteReassignment, 2.7.2 to 3.9): its last partition's
    # event is the cause of every one of those completions (seed 1023).
    partitions = set(request.named) if request is not None else {key}
    cause = Cause(event, "ISR", partitions=partitions, queued_at=queued_at(ctx, txn, key))
    if _mid_startup(ctx, txn, key, before, after):
        ctx.causes.insert(len(ctx.causes) - 1, cause)  # the startup's writes are still to come
    else:
        ctx.cause(cause)
        if controllers_write(txn):
            logdirs.queued_startup_answer(ctx, txn, event)
            admin.read_after_isr_change(ctx)
    ctx.observe(txn, key, before, after, "IsrChange", event["event_id"])


def queued_at(ctx: Context, txn: ZkTxn, key: tuple[str, int]) -> int:
    """Below protocol 2.7, where the controller's PartitionReassignmentIsrChange for a leader's own ISR write of a
    reassigning partition is queued (0: at the write). Reading the state sets the watch (ZooKeeperClient watches a
    getData of a path with a handler); a write fires it once. A reassignment's start reads the state and bumps its
    leader epoch (onPartitionReassignment A1, updateLeaderEpoch): that bump fires the watch and queues the event, and
    nothing sets it again until that event reads the state (isReassignmentComplete). A leader writing while the
    controller still handles the start (the partition's newest write was its, for the event it is handling) queues
    nothing: its completion is handled at the bump's place in the queue, in the order of the bumps, not of the
    leaders' writes (seed 1012: one znode reassignment bumped t1-2, t1-1, t1-0; the leaders of t1-1, t1-2, t1-0 took
    their targets in, in that order; the controller completed t1-2, t1-1, t1-0; KafkaController and
    ZooKeeperClient at 3.8.0, 3.9.1 taken as 3.8.0). Nor does a leader's second write before the controller took the
    event its first write queued (no event queued after that one has written): the watch fired once, and the
    event, handled at the first write's place, reads the second (the `make test` smoke run under load, seed 3 at
    2.6: t4-0's leader wrote at zk-196 and zk-199, t1-2's at zk-198 between; the controller completed t4-0 first).
    Nor does a leader writing once the start is handled, while the controller handles an event queued before the
    bump (another partition's completion, queued at its own bump): the bump's event still waits behind it (seed 1542,
    3.9.1 at 2.6: one znode reassignment bumped t0-1, t1-2, t1-0; t1-0's leader wrote at zk-168 and t1-2's at zk-171,
    both during t0-1's completion; the controller completed t1-2, then t1-0)."""
    if not ctx.protocol_before_3 or controllers_write(txn) or not ctx.reassigning(key):
        return 0
    earlier = next((c for c in reversed(ctx.causes) if c.kind == "ISR" and key in c.partitions), None)
    if earlier is not None and not any(c.wrote for c in ctx.causes[ctx.causes.index(earlier):]):
        return earlier.queued
    handling, fired = ctx.handling(txn), ctx.written_at.get(key, 0)
    if handling is None:
        return 0
    if ctx.written_for.get(key) == handling.event["event_id"]:
        return fired
    # The newest write a controller's (not the leader's own, whose place is its event's): its watch event is queued
    # at it, behind the one being handled if that was queued first.
    leaders_own = earlier is not None and event_zxid(earlier.event) == fired
    return fired if handling.queued < fired and not leaders_own else 0


def completed_by_startup(ctx: Context, startup: Cause, key: tuple[str, int], before: PartitionState) -> None:
    """A broker's startup writing a reassigning partition whose leader (below protocol 2.7) wrote its own ISR, with
    every target in it, after the startup's registration: the startup, queued before that write's notification,
    read the ISR from ZooKeeper and completed the reassignment (onBrokerStartup -> onPartitionReassignment ->
    isReassignmentComplete), not the leader's change (seed 702: the ISR written 26 ms after broker 2 registered)."""
    topic = ctx.topics.get(key[0])
    if not ctx.protocol_before_3 or topic is None or not topic.reassigning(key[1]) or \
            not set(topic.target(key[1])) <= set(before.isr):
        return  # checked first: the search below reads back through every event out, for each write of the startup
    written_for = ctx.written_for.get(key)
    isr_change = next((e for e in reversed(ctx.result.events) if e["event_id"] == written_for), None)
    if isr_change is None or isr_change["type"] != "IsrChange" or event_zxid(isr_change) < event_zxid(startup.event):
        return
    isr_change["reassignment_completed_by_queued_event"] = True


def taken_by_request(ctx: Context, txn: ZkTxn, key: tuple[str, int], old: TopicAssignment) -> None:
    """Below protocol 2.7: the controller's assignment write of a reassigning partition for an Admin API request (a
    cancel, or a new target) right after its leader wrote its own ISR with every target in it, whose completion the
    controller has not written: the request was queued before the watch's PartitionReassignmentIsrChange, so the
    controller handled it first. Its onPartitionReassignment reads that ISR from ZooKeeper (U1, the unneeded replicas
    out of the ISR, isReassignmentComplete) and completes what it can; the watch's event finds the old reassignment
    gone. The IsrChange applies its ISR and leaves the completion to the request (seed 1208: t0-0 from [4] to [2],
    its leader took 2 in, the cancel's assignment write next in the same ms: 2 out of the ISR, leader 4 kept; the
    controller.log has the cancel's "Updating assignment" and no "Target replicas ... have all caught up")."""
    newest = ctx.causes[-1] if ctx.causes else None
    if not ctx.protocol_before_3 or not controllers_write(txn) or newest is None or newest.kind != "ISR" or \
            newest.wrote or (newest.event["topic"], newest.event["partition"]) != key or not old.reassigning(key[1]):
        return
    state = ctx.states.get(key)
    if state is not None and set(old.target(key[1])) <= set(state.isr):
        newest.event["reassignment_completed_by_queued_event"] = True


def read_by_request(ctx: Context, request: Cause, key: tuple[str, int]) -> None:
    """Below protocol 2.7: the controller's first write of `key` for the reassignment request it is handling (`request`,
    its newest), after a leader's own ISR write of `key` that came while it worked through the request's earlier
    partitions. The controller reads each partition's state from ZooKeeper when it comes to it (onPartitionReassignment:
    isReassignmentComplete, then updateLeaderEpoch, which bumps what it read), so its write carries that ISR: the
    IsrChange goes before the request, the controller's view when it wrote (seed 1002: t0-0's leader took 3 back in
    between t0-0's assignment and its bump, t1-1's leader took 3 in before t1-1's turn; isrflow had bumped both from
    the ISR before)."""
    isr = ctx.cause_of(ctx.written_for.get(key))
    if not ctx.protocol_before_3 or request.kind != "PARTITIONS" or isr is None or isr.kind != "ISR" or isr.wrote \
            or not ctx.newest(request) or event_zxid(isr.event) < event_zxid(request.event) or \
            any((o["topic"], o["partition"]) == key and o["cause_event_id"] == request.event["event_id"]
                for o in ctx.result.observed):
        return  # (a write of `key` for the request before the leader's: the leader's came after what it read)
    ours, theirs = ctx.event_at(isr.event), ctx.event_at(request.event)
    if ours is None or theirs is None:
        return  # the request went out with a follower's earlier poll
    ctx.result.events.insert(theirs, ctx.result.events.pop(ours))
    ctx.forget_cause(isr)
    ctx.causes.insert(ctx.causes.index(request), isr)


def request_still_reading(ctx: Context) -> Cause | None:
    """Below protocol 2.7: the reassignment request the controller's newest write was for, when only leaders' own ISR
    writes came since: its next partition may still read one of them (`read_by_request`), which then goes before it."""
    at = next((i for i in range(len(ctx.causes) - 1, -1, -1)
               if ctx.controller_wrote_at and ctx.causes[i].last_zxid == ctx.controller_wrote_at), None)
    if not ctx.protocol_before_3 or at is None or ctx.causes[at].kind != "PARTITIONS" or \
            not all(c.kind == "ISR" and not c.wrote for c in ctx.causes[at + 1:]):
        return None
    return ctx.causes[at]


def completion_pending(ctx: Context, cause: Cause) -> bool:
    """Below protocol 2.7: a leader's own ISR write with every target of its reassigning partition in it, whose
    completion the controller has not written yet. The watch on the partition's state queued that completion, maybe
    behind a request the controller had taken first (`partitionstate._watched_behind`)."""
    if not ctx.protocol_before_3 or cause.kind != "ISR" or cause.wrote:
        return False
    key = (cause.event["topic"], cause.event["partition"])
    topic, state = ctx.topics.get(key[0]), ctx.states.get(key)
    return topic is not None and state is not None and topic.reassigning(key[1]) and \
        set(topic.target(key[1])) <= set(state.isr)


def completion_cut(ctx: Context) -> None:
    """The controller's session ended (its broker killed) right after the newest event's write that moved a
    reassigning partition's leader onto a target replica, an AlterPartition that let the reassignment complete:
    it died inside the completion (onPartitionReassignment), after B3 and before B4 took the removed replicas out of
    the ISR; /brokers/topics/T still shows the reassignment, which the next controller's failover completes again
    (seed 443: t0-0 from [3] to [2], leader 2 with ISR [3, 2] written, then broker 3, the controller, killed). Or
    right after the AlterPartition's own write, every target in the ISR (below protocol 2.7: the leader's own write
    after the controller's last): it died before the completion wrote anything (`controller_died_before_completion`).
    """
    newest = ctx.causes[-1] if ctx.causes else None
    if newest is None or newest.kind != "ISR" or newest.event is not ctx.newest_event:
        return
    key = (newest.event["topic"], newest.event["partition"])
    topic, state = ctx.topics.get(key[0]), ctx.states.get(key)
    if topic is None or state is None or not topic.reassigning(key[1]) or \
            ctx.written_for.get(key) != newest.event["event_id"]:
        return
    own_write = ctx.protocol_before_3 and event_zxid(newest.event) > ctx.controller_wrote_at
    if not newest.wrote and (event_zxid(newest.event) == ctx.controller_wrote_at or own_write):
        # Nothing written for it past the change itself: the controller died before the completion read the state
        # (seed 1211, Kafka 2.8.2: t0-2's ISR [1, 4, 3, 2] written, then broker 1, the controller, paused; its
        # maybeCompleteReassignment failed on the expired session). Below protocol 2.7 the leader wrote it after
        # the controller's last write: the watch's PartitionReassignmentIsrChange never wrote either (seed 1494,
        # Kafka 3.9.1 at 2.6: leader 2 took 1 into t1-3's ISR 99 ms after controller 1's last write, its ZooKeeper
        # link already cut; the next controller's failover found the reassignment in /brokers/topics/t1).
        if set(topic.target(key[1])) <= set(state.isr):
            newest.event["controller_died_before_completion"] = True
    elif newest.last_zxid == ctx.controller_wrote_at and state.leader in topic.target(key[1]) and \
            set(topic.removing.get(key[1], ())) & set(state.isr):
        newest.event["controller_died_after_leader_move"] = True


def completion_cut_after_assignment(ctx: Context) -> None:
    """The controller's session ended with the completed assignment of a reassignment as its last write (B6,
    updateReplicaAssignmentForPartition), and the completion went no further: the UpdateMetadata after it (B8) was
    never sent (`controller_died_after_assignment`). ZooKeeper alone cannot tell it from a completion that went on
    when nothing is written after B6 (that UpdateMetadata writes nothing); two things can:
    - its controller.log says that completion threw ("Error processing event PartitionReassignmentIsrChange(T-P)",
      below protocol 2.7): the write landed but its answer was SessionExpired (seed 1288: t0-0's completion, broker 1
      cut from ZooKeeper as it wrote, the answer 8.5 s later);
    - `/admin/reassign_partitions` still names the partition with that assignment: B7 (removePartitionFromReassigning-
      Partitions -> maybeRemoveFromZkReassignment) rewrites or deletes the znode whenever it exists, so the controller
      died between B6 and B7 (seed 1408: t1-0's completion to [3], broker 4, the controller, killed right after
      "Successfully updated assignment of partition t1-0"; the same steps at 2.6.3 to 3.9.1)."""
    cause = next((c for c in reversed(ctx.causes) if c.last_zxid == ctx.controller_wrote_at), None)
    if cause is None or cause.kind != "ISR":
        return
    key = (cause.event["topic"], cause.event["partition"])
    topic = ctx.topics.get(key[0])
    if topic is None or ctx.reassigning(key) or ctx.written_for.get(key) != cause.event["event_id"]:
        return
    threw = key in ctx.reads.failed_completions.get(cause.event["controller_epoch"], ())
    left_in_znode = ctx.znode_reassignments.get(key) == topic.replicas.get(key[1])
    if threw or left_in_znode:
        cause.event["controller_died_after_assignment"] = True


def _same_request(ctx: Context, last: Batch | None, txn: ZkTxn, leader: int) -> Batch | None:
    """`last` if this transaction is its request's next one: the controller pipelines a request's writes (an
    AlterPartition's setData multis, KafkaZkClient.updateLeaderAndIsr; a notification read's deletes), so they
    have consecutive cxids of its session, and reads the states back after an AlterPartition's (a getData
    each), so the next request's never follow on. Also the same leader, and no event made in between."""
    if last is None or txn.session != ctx.controller_session or not follows_on(txn, last.session, last.cxid) \
            or last.leader != leader or ctx.newest_event is not last.events[-1]:
        return None
    return last


def _extend(request: Batch, txn: ZkTxn, partitions: list[tuple[str, int]], field_name: str) -> None:
    """`txn` as the request's next: every event of the request names its partitions in `field_name`, in their
    order, each once: one list, which they share, extended in place (a request of n partitions is n writes: not a
    new list of them all, to every event, at each)."""
    request.cxid = txn.cxid
    new = [k for k in partitions if k not in request.named]
    request.named.update(new)
    request.partitions += [{"topic": t, "partition": p} for t, p in new]
    for event in reversed(request.events):  # those made since its previous write
        if event.get(field_name) is request.partitions:
            break
        event[field_name] = request.partitions


def _refused_with(ctx: Context, txn: ZkTxn, request: Batch) -> None:
    """The partitions the controller refused in the AlterPartition request whose writes `request` now holds all of (its
    leader's server.log: the same leader, these partitions answered without error, sent before this write and answered
    after it: a later request of the same leader may name the same partitions again, seed 1289, broker 2's t4-1, t0-1
    and t2-0 written at 12:38:05, asked again with t2-1 at 12:38:28). processAlterPartition checks every partition
    before it writes the valid ones, and its one UpdateMetadata after the writes names them all, refused or not (2.8.2
    to 3.9.1; seed 1221: broker 1's AlterIsr of t3-0 and t1-0, t1-0 at leader epoch 12 fenced by the reassignment's bump
    to 13, t3-0 written, an UpdateMetadata of both). Each refused partition is an IsrChange at the epochs its leader
    asked at (the rules refuse it as the controller did), put before the request's last write, which sends the
    UpdateMetadata."""
    answer = next((r for r in ctx.partly_refused if r.broker_id == request.leader and r.written == request.named
                   and r.sent_ms <= txn.time <= r.answered_ms), None)
    if answer is None:
        return
    ctx.partly_refused.remove(answer)
    refused = [p for p in answer.partitions if p.error != 0]
    request.partitions[-1:-1] = [{"topic": p.topic, "partition": p.partition} for p in refused]
    request.named.update((p.topic, p.partition) for p in refused)
    last = ctx.result.events.pop()
    request.events[-1:-1] = [_asked(ctx, txn, f"-{p.topic}-{p.partition}", answer, p, request.partitions)
                             for p in refused]
    last["request_partitions"] = request.partitions
    ctx.result.events.append(last)


def _asked(ctx: Context, txn: ZkTxn, suffix: str, request: AlterPartitionRequest, p: AskedPartition,
           request_partitions: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """The IsrChange of one partition of an AlterPartition request the controller answered without a write (refused,
    or its write threw: `fields`), at the epochs its leader asked at; `request_partitions`, when it names more than
    this one, the request's partitions."""
    return ctx.event(txn, "IsrChange", suffix, topic=p.topic, partition=p.partition, broker_id=request.broker_id,
                     broker_epoch=request.broker_epoch, leader_epoch=p.leader_epoch,
                     partition_epoch=p.partition_epoch, isr=list(p.isr),
                     leader_recovery_state="RECOVERING" if p.recovering else "RECOVERED",
                     **({"request_partitions": request_partitions} if len(request_partitions) > 1 else {}), **fields)


def _mid_startup(ctx: Context, txn: ZkTxn, key: tuple[str, int], before: PartitionState,
                 after: PartitionState) -> bool:
    """A leader's own ISR write (below inter.broker.protocol 2.7) taking back a broker whose startup the controller
    is still handling: its LeaderAndIsr made the broker follow and catch up, and the rest of that handling (a
    reassignment resumed onto it) reads the partition state from ZooKeeper, so it sees this write. The ISR change
    is put before the startup (the event just made, last): the controller's view when it writes, also when the
    startup already wrote other partitions, and when the leader is the controller's broker (its session). Not once
    the controller read an ISR change notification after the startup (its deletes): it took that event from its
    queue, so the startup's handling was over, and the leader's write comes after that read, unannounced until its
    own notification (seed 1588, Kafka 3.9.1 at 2.6: broker 2's stale notification of t1-0 read at 0xda, leader 4's
    write taking 2 back into t1-0 at 0xdb; the log dir notification's LeaderAndIsr carried the ISR read at 0xda).
    Returns whether it was."""
    newest = ctx.causes[-1] if ctx.causes else None
    if controllers_write(txn) or newest is None or newest.kind != "STARTUP" or key in newest.partitions or \
            not any(b not in before.isr and b in after.isr for b in newest.brokers):
        return False
    at = ctx.event_at(newest.event)
    if at is None:
        return False  # the startup went out with a follower's earlier poll
    if any(e["type"] == "IsrChangeNotification" for e in ctx.result.events[at + 1:]):
        return False
    ctx.result.events.insert(at, ctx.result.events.pop())
    return True


def isr_change_notification(ctx: Context, txn: ZkTxn, op: ZnodeOp) -> None:
    """Below protocol 2.7 a leader announces the ISR changes it wrote in a sequential znode; the controller reads
    every one there (processIsrChangeNotification), sends one UpdateMetadata for their partitions, then deletes
    them: those deletes (pipelined, consecutive cxids) are the read, an IsrChangeNotification at the first. A new
    controller deletes the ones it finds unread (onControllerFailover, its own read of every state covers
    them): those created before its election, and those created since that it deletes in its failover's prologue
    (seed 714: one created 7 ms after the election, deleted unread 12 ms later)."""
    if op.kind == "create":
        protocol_before_3(ctx, txn)  # a follower learns it here
        ctx.notifications[op.path] = (txn.zxid, notified(op.data))
        return
    created = ctx.notifications.pop(op.path, None) if op.kind == "delete" else None
    if created is None or txn.session != ctx.controller_session or created[0] < ctx.controller_since or \
            ctx.in_failover_prologue(txn):
        return
    read = _same_request(ctx, ctx.notifications_read, txn, NO_LEADER)
    if read is None:
        event = ctx.event(txn, "IsrChangeNotification", "-isr-change-notification", partitions=[])
        read = ctx.notifications_read = Batch(txn.session, txn.cxid, NO_LEADER, [event], [])
        _before_later_startups(ctx, txn, created[0])
    _extend(read, txn, created[1], "partitions")


def _before_later_startups(ctx: Context, txn: ZkTxn, created: int) -> None:
    """The notification read just made (the output's last event) was queued when the notification was created (the
    watch on /isr_change_notification fired): before the startups of brokers registered after that, which the
    controller has written nothing for yet (seed 1288: the notification at 0xc1, broker 1's registration at 0xc2,
    the read's UpdateMetadata to brokers 2 and 3 only, then the startup's)."""
    events = ctx.result.events
    at = len(events) - 1
    while at > 0 and events[at - 1]["type"] == "BrokerChange" and events[at - 1]["change"] == "STARTUP" and \
            created < (registered := event_zxid(events[at - 1])) and \
            not any(registered < z < txn.zxid for z in ctx.controller_writes):
        at -= 1
    events.insert(at, events.pop())


def notified(data: bytes | None) -> list[tuple[str, int]]:
    """The partitions an ISR change notification names."""
    return [(p["topic"], p["partition"]) for p in json.loads(data or b"{}").get("partitions", [])]


def answered_before(ctx: Context, time: int | None) -> None:
    """The unwritten AlterPartition requests answered before `time` (ms; None: all left), as the IsrChange events
    they were: the controller sent their UpdateMetadata after the writes before the answer (its clock and the
    leader's taken as one)."""
    while ctx.unwritten_requests and (time is None or ctx.unwritten_requests[-1].answered_ms < time):
        request = ctx.unwritten_requests.pop()
        _request_events(ctx, request, ZkTxn(ctx.zxid, request.answered_ms, 0, 0, ()))


def note_registrations(ctx: Context, txns: list[ZkTxn]) -> None:
    """The times of every broker's registrations in the history, read ahead (`answered_by_deposed`)."""
    for txn in txns:
        for op in txn.ops:
            if op.kind == "create" and op.path.startswith("/brokers/ids/") and op.path.count("/") == 3:
                ctx.registered_at.setdefault(int(op.path.rsplit("/", 1)[1]), []).append(txn.time)


def answered_by_deposed(ctx: Context, txn: ZkTxn) -> None:
    """The controller's session expired (the server's `closeSession`, cxid 0, deleting /controller): the requests
    answered with UNKNOWN_SERVER_ERROR for every partition within the session's timeout after it were that
    controller's, which had not heard of the expiry yet. Its write of the ISR threw (SessionExpiredException,
    processAlterIsr at 2.7.2 and 2.8.2), it still sent the request's UpdateMetadata, naming its partitions, to the
    brokers it knew, under its epoch, then resigned: their IsrChange events (`write_failed`) go before the next
    controller's (seeds 1060, 1115, 1234: the leader's answer 2 to 3.5 s after the expiry; seed 1234's leader was
    that controller's own broker, which asked after the next one's election)."""
    timeout = ctx.session_timeouts.get(txn.session)
    if txn.cxid != 0 or timeout is None:
        return
    within = range(txn.time, txn.time + timeout + 1)
    failed = [(r.answered_ms, r, "") for r in ctx.unwritten_requests if r.answered_ms in within
              and all(p.error == UNKNOWN_SERVER_ERROR for p in r.partitions)]
    for _, request, _ in failed:
        ctx.unwritten_requests.remove(request)
    # A request it answered NOT_CONTROLLER (a partition's epochs ahead of its cache: processAlterPartition at 3.5.2,
    # checked before any write), which the leader then sent to the next controller: it still sent the request's
    # UpdateMetadata to the brokers it knew (seed 1289: controller 3, paused, its session expired, took leader 2's
    # AlterPartition of t2-1 at leader epoch 5 when it came back, with epoch 2 cached; broker 2 disconnected from it
    # and asked controller 1). The rules refuse it as it did, at the epochs the leader asked at. Not once its broker
    # registered again: that broker had resigned (or restarted), and answered NOT_CONTROLLER for the whole request,
    # sending nothing (seed 1289: broker 4 disconnected from broker 1, restarted 61 ms before).
    controller = ctx.controller_id
    redirected = [(ms, r, f"-not-controller-{ms}") for r in ctx.redirected_requests for node, ms in r.redirected
                  if node == controller and ms in within and
                  not any(txn.time < t <= ms for t in ctx.registered_at.get(controller, []))]
    for _, request, suffix in sorted(failed + redirected, key=lambda f: f[0]):  # oldest answer first
        _request_events(ctx, request, txn, suffix, write_failed=True)


def _request_events(ctx: Context, request: AlterPartitionRequest, at: ZkTxn, suffix: str = "",
                    **fields: Any) -> None:
    """A request's IsrChange events, one per partition, at `at` (its zxid and time)."""
    refs = [{"topic": p.topic, "partition": p.partition} for p in request.partitions]
    # one request in flight per leader: its id and the answer's time name it (`suffix`: an earlier answer of it)
    sent = f"-alter-partition-{request.broker_id}-{request.answered_ms}{suffix}"
    events = [_asked(ctx, at, f"{sent}-{p.topic}-{p.partition}", request, p, refs, **fields)
              for p in request.partitions]
    if events and not fields:
        logdirs.queued_startup_answer(ctx, at, events[-1])  # a startup's answer queued behind it (seed 1267)
