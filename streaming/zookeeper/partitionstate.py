"""Partition state writes: `create`/`setData` of `/brokers/topics/T/partitions/P/state`, each an observed decision
(zkVersion = the znode's version = partition epoch), and the event that caused it.

- The leader epoch unchanged: the leader's ISR change (streaming.zookeeper.isrchanges).
- The leader epoch bumped: a controller decision, caused by the event being handled (the last input whose scope
  the partition is in: `_fits` says what each of KafkaController's handlers writes), else by a request that leaves no
  znode (`_request`): a controlled shutdown (a registered broker dropped from leadership and ISR), an admin preferred
  election (the leader moves to the first replica, ISR unchanged) or an admin unclean election (a leader from
  outside the ISR, alone in it).
- A partition's first write: its creation's, or the startup or failover that brought a live replica.
"""

from __future__ import annotations

from streaming.zookeeper import admin, answers, brokers, isrchanges, logdirs
from streaming.zookeeper.context import (
    NO_LEADER,
    UNCLEAN_CONFIG,
    Cause,
    Context,
    PartitionState,
    TopicAssignment,
    drops,
    event_zxid,
)
from streaming.zookeeper.txnlog import ZkTxn, ZnodeOp


def state_write(ctx: Context, txn: ZkTxn, op: ZnodeOp, key: tuple[str, int]) -> None:
    version = 0 if op.kind == "create" else op.version
    before = ctx.states.get(key)
    if before is not None and version <= before.version:
        return  # a fuzzy snapshot already holds it
    after = PartitionState.parse(op.data, version)
    ctx.states[key] = after
    if before is None:
        # The first write of a partition: its creation's, unless none of its replicas was live then (New, no
        # leader): then the broker startup, or the failover, that brought one. A reassignment that gave it a
        # live replica elects nothing (it never had a leader): any broker's startup does then, as it tries every
        # New partition of the cluster (seed 143), and so do replicas going offline, a broker's failure or a failed
        # log dir's answer (onReplicasBecomeOffline -> triggerOnlinePartitionStateChange; seed 1008).
        replicas = (ctx.topics.get(key[0]) or TopicAssignment({})).replicas.get(key[1], ())
        created = ctx.created.get(key[0], {})
        reassigned = created.get("assignment", {}).get(str(key[1]), list(replicas)) != list(replicas)
        cause = next((c.event for c in reversed(ctx.causes)
                      if c.event is created or (c.kind == "STARTUP" and (reassigned or c.brokers & set(replicas)))
                      or (c.kind in ("FAILURE", "LOG_DIR") and reassigned) or c.kind == "FAILOVER"), created)
        ctx.observe(txn, key, None, after, cause.get("type", "Unexplained"), cause.get("event_id"))
        return
    if after.leader_epoch == before.leader_epoch or txn.session != ctx.controller_session:
        isrchanges.leader_isr_change(ctx, txn, key, before, after)
        return
    cause = _handled_by(ctx, txn, key, before, after)
    if cause is not None and cause.kind == "DELETE" and not cause.wrote:
        admin.read_with_later_request(ctx, txn, cause)
        _answers_after_read(ctx, cause, key, before, after)
    if cause is None:
        cause = answers.request_answer(ctx, txn, key, [b for b in before.isr if b not in after.isr],
                                       before.leader if after.leader == NO_LEADER else None) or \
            answers.late_answer(ctx, txn, key, {b: _taken_offline(b, before, after) for b in ctx.brokers}) or \
            _request(ctx, txn, key, before, after) or _late_answer(ctx, key, before, after) or \
            logdirs.startup_storage_error(ctx, txn, key, before, after)
    if cause is None:
        ctx.result.unexplained.append(txn.zxid)
        ctx.observe(txn, key, before, after, "Unexplained", None)
        return
    cause.partitions.add(key)
    cause.wrote, cause.last_write, cause.last_zxid = True, (txn.session, txn.cxid), txn.zxid
    isrchanges.read_by_request(ctx, cause, key)
    if cause.kind == "LOG_DIR":
        logdirs.explained(ctx, cause, key)
    elif cause.kind == "FAILOVER":
        dropped = [b for b in ctx.brokers if cause.read_live(b) and drops(b, before, after)]
        logdirs.answered_before_elected(ctx, cause, key, dropped, after.leader)
        logdirs.startup_answer_explained(ctx, cause, key, before, after)
        logdirs.answer_explained(ctx, cause, key, dropped)
    if cause.kind == "PARTITIONS" and _started(ctx, key, before, after):
        ctx.started_by[key] = cause.event["event_id"]
    if cause.kind == "STARTUP":
        ctx.reassigning_in_memory.discard(key)  # its completion, resumed
        isrchanges.completed_by_startup(ctx, cause, key, before)
        logdirs.answer_explained(ctx, cause, key, [b for b in cause.brokers if drops(b, before, after)])
    ctx.observe(txn, key, before, after, cause.event["type"], cause.event["event_id"])


# ---- the event being handled ----------------------------------------------------------------------------------

def _handled_by(ctx: Context, txn: ZkTxn, key: tuple[str, int], before: PartitionState, after: PartitionState
                ) -> Cause | None:
    """The newest event whose handler writes such a change. The controller handles one event at a time: once an
    event has written, the events before it are done, and a write that does not fit it is a request's. A new
    controller handles nothing its predecessor had queued: no event before a failover explains a write after it."""
    completing = _completion_under_way(ctx, txn, key, before, after)
    if completing is not None:
        return completing
    created = answers.created_before(ctx, txn)  # a creation writes no cause's `wrote`: found by its write
    for cause in reversed(ctx.causes):
        if _fits(ctx, cause, key, before, after):
            return _own_deletion(ctx, txn, key, cause, before, after) or _answer_after_read(ctx, cause, key, before,
                                                                                              after)
        if cause.within is not None:
            continue  # a step of an older event, whose handling goes on after it (a failover's)
        if cause.wrote or cause.kind == "FAILOVER" or cause is created:
            return _watched_behind(ctx, cause, key, before, after)
    return None


def _answer_after_read(ctx: Context, cause: Cause, key: tuple[str, int], before: PartitionState,
                       after: PartitionState) -> Cause:
    """A failover's write taking a replica in a failed dir offline is a broker's answer to its LeaderAndIsr, handled
    after the whole failover (LeaderAndIsrResponseReceived, queued behind it): where the failover read a
    reassignment asked through the znode, after that step, whose event isrflow handles the answers in (seed 1108:
    t1-1 leaderless again after that reassignment's bump, "Mark replicas t1-1 on broker 1 as offline" logged
    after the failover's last write)."""
    if cause.kind != "FAILOVER" or not cause.event.get("reads_reassignment_znode") or \
            not any(drops(b, before, after) and logdirs.in_failed_dir(ctx, b, key, cause) for b in ctx.brokers):
        return cause
    return next((c for c in reversed(ctx.causes) if c.within is cause and c.event.get("read_at_failover")), cause)


def _completion_under_way(ctx: Context, txn: ZkTxn, key: tuple[str, int], before: PartitionState,
                          after: PartitionState) -> Cause | None:
    """A reassignment's completion, once the controller wrote its first step of the partition, goes on to its end in
    the same event (onPartitionReassignment B: the leader moved or its epoch bumped, B3; the removed replicas out of
    the ISR, B4; the assignment written, B6) before the controller reads anything queued meanwhile: a write of the
    partition, still reassigning with every target in the ISR, right after the controller's write of it for the
    event being handled is that event's, not a request's that came in between (seed 910: a DeleteTopics of t6 asked
    between B3 and B4 of t6-0's completion; the controller read it after B6, controller.log's "Delete topics
    listener fired" 27 ms after "Successfully updated assignment"). Not across a new controller (seed 443)."""
    cause = ctx.handling(txn)
    topic = ctx.topics.get(key[0])
    if cause is None or topic is None or not topic.reassigning(key[1]) or cause.last_write is None or \
            cause.last_write[0] != txn.session or ctx.written_for.get(key) != cause.event["event_id"] or \
            not set(topic.target(key[1])) <= set(before.isr):
        return None
    return cause if _fits(ctx, cause, key, before, after) else None


def _watched_behind(ctx: Context, request: Cause, key: tuple[str, int], before: PartitionState,
                    after: PartitionState) -> Cause | None:
    """Below protocol 2.7, the completion of a reassignment whose leader wrote its own ISR with every target in it,
    after a request that leaves no znode (an Admin API reassignment, election or controlled shutdown) has written:
    the controller watches a reassigning partition's state znode (PartitionReassignmentIsrChangeHandler), and the
    watch's event (PartitionReassignmentIsrChange) was queued behind that request, which the controller had taken
    before the watch fired: its first write is the controller's first after the leader's (seed 808: t1-1's
    reassignment asked again 78 ms after t0-1's leader took in its target; t0-1's completion came after its bump).
    The leader's IsrChange, just before the request among the events, is the cause of the completion's writes, and
    goes after the request, as the controller handled them (their LeaderAndIsr requests in that order). The same
    behind another leader's IsrChange whose completion the watches queued first (seed 1012)."""
    at = next((i for i, c in enumerate(ctx.causes) if c is request), 0)
    isr = ctx.causes[at - 1] if at > 0 else None
    if isr is None or not isrchanges.completion_pending(ctx, isr) or key not in isr.partitions:
        return None
    if request.kind == "ISR":
        # Two completions the watches queued: the one whose watch fired first goes first (`isrchanges.queued_at`;
        # seed 1012: t1-1's leader wrote before t1-2's, the controller's bump of t1-2 came before t1-1's).
        behind = request.queued < isr.queued
    else:
        behind = min((z for z in ctx.controller_writes if z > event_zxid(isr.event)), default=None) == \
            event_zxid(request.event)
    if not behind or not _fits(ctx, isr, key, before, after):
        return None
    ours, theirs = ctx.event_at(isr.event), ctx.event_at(request.event)
    if ours is not None and theirs is not None and ours < theirs:  # else out with a follower's earlier poll
        ctx.result.events.insert(theirs, ctx.result.events.pop(ours))
        ctx.forget_cause(isr)
        ctx.causes.insert(ctx.causes.index(request) + 1, isr)
    return isr


def _own_deletion(ctx: Context, txn: ZkTxn, key: tuple[str, int], cause: Cause, before: PartitionState,
                  after: PartitionState) -> Cause | None:
    """A write of a topic being deleted, by a deletion request that came while that topic's own request was
    still queued (a DeleteTopics naming both: the controller wrote nothing between the two znodes): the earlier
    request's. Its TopicDeletion event read only its topic under /admin/delete_topics and takes its replicas out
    of the ISR (seed 301: t4 and t2 deleted at once, t4's writes after t2's znode). Not once the earlier request
    was handled (what a later request writes of its topic is a retry: resumeDeletions, seed 108). A bare leader
    epoch bump of a leaderless partition (a dead replica's failed deletion retried, back to OfflineReplica) is the
    earlier request's only when that took live replicas out of the ISR: their StopReplica answers resume the
    deletions, folded into the request's event (seeds 306, 309: also once the later one has written); else it is the
    later request's resumeDeletions (304).

    Nor is a write that takes a live replica out of the ISR while the earlier request's handling goes on (the
    controller's last write was its, the later request has written nothing) a retry of the later one's: resumeDeletions
    retries only failed replicas, on dead brokers; onPartitionDeletion takes the live ones offline broker by broker,
    all topics of its read in one pass (seed 310: t3's znode came between two of t5's broker batches).

    With the controller's log, a retry (a dead replica's, no live one taken offline) of a topic whose StopReplica
    answers the controller logged after the later read is the later request's, which brings them
    (`stop_replica_answers`; seed 828: t1's dead replicas retried after t3's read). And a live replica taken offline
    of a topic an earlier logged read found, that read's request having written nothing yet, is its pass begun after
    the later request's znode (`_read_first`, seeds 1514 and 1519)."""
    topic = key[0]
    if cause.kind != "DELETE" or (topic in cause.event.get("stop_replica_answers", ()) and
                                  before.leader == after.leader == NO_LEADER and
                                  not _live_replica_offline(ctx, key, before, after)):
        return None
    own = next((c for c in reversed(ctx.causes) if c.deletes(topic)), None)
    if own is None or own is cause:
        return None
    if topic not in cause.queued_with:
        handled = not cause.wrote and ((own.wrote and ctx.handling(txn) is own) or _read_first(ctx, own, cause))
        return own if handled and _live_replica_offline(ctx, key, before, after) else None
    if before.leader == after.leader == NO_LEADER and set(before.isr) == set(after.isr):  # a retry
        return own if own.wrote else _next_read(ctx, own)  # also after the later one wrote (seed 309)
    return None if cause.wrote else own


def _read_first(ctx: Context, own: Cause, cause: Cause) -> bool:
    """With the controller's log: whether `own`'s topics came in an earlier read of /admin/delete_topics than
    `cause`'s while `own` has written nothing. The controller handles its TopicDeletion events in order, so a later
    read's znode can come while it has not begun the earlier read's pass: that pass's writes are the earlier read's
    (seed 1514: t1's znode before the first write of t0, t6, t7 and t8's read; seed 1519: t0's before t5's and
    t6's)."""
    at, later = ctx.deletion_read_of(own.topic), ctx.deletion_read_of(cause.topic)
    return not own.wrote and at is not None and later is not None and at < later


def _next_read(ctx: Context, own: Cause) -> Cause | None:
    """With the controller's log: the request of the logged read after `own`'s, while it has written nothing. Every
    read of /admin/delete_topics enqueues its topics with resumeDeletions, which first retries the failed replicas of
    the topics queued before (seed 1203: t4 read alone, its dead replica retried at t5's read, before the next read's
    znodes' requests had written). None without the log, or once that request has written: the newest request's."""
    reads = ctx.logged_deletions
    at = ctx.deletion_read_of(own.topic)
    if at is None:
        return None
    later = ctx.causes[next(i for i, c in enumerate(ctx.causes) if c is own) + 1:]
    after = next((c for c in later if c.kind == "DELETE" and any(c.topic in r for r in reads[at + 1:])), None)
    return after if after is not None and not after.wrote else None


def _answers_after_read(ctx: Context, cause: Cause, key: tuple[str, int], before: PartitionState,
                        after: PartitionState) -> None:
    """Without the controller's log: a dead replica's retry (a leaderless partition's bare bump) of a topic that a
    deletion request or the one just before it read, given to that request before it wrote anything. Its read took no
    live replica offline, so no answer of its own
    resumed the deletions: the StopReplica answers of the request just before it, which took live replicas offline,
    came after its read (TopicDeletionStopReplicaResponseReceived queued behind it), and their resumeDeletions
    retried its topics' failed replicas (seed 1042: t1 read after t4, t1's retries after t4's writes). The earlier
    request's events say `stop_replica_answered` false, this one's carry the answers, unless a follower has handed
    them out already."""
    at = next((i for i, c in enumerate(ctx.causes) if c is cause), 0)
    earlier = ctx.causes[at - 1] if at > 0 else None
    if earlier is None or earlier.kind != "DELETE" or not earlier.wrote or \
            not (cause.deletes(key[0]) or earlier.deletes(key[0])) or \
            ctx.logged_deletions or "stop_replica_answers" in cause.event or \
            not before.leader == after.leader == NO_LEADER or _live_replica_offline(ctx, key, before, after):
        return
    events = [earlier.event, *earlier.joined, cause.event, *cause.joined]
    if any(ctx.event_at(e) is None for e in events):
        return
    for event in (earlier.event, *earlier.joined):
        event["stop_replica_answered"] = False
    for event in (cause.event, *cause.joined):
        event["stop_replica_answers"] = sorted(earlier.read_topics)


def _late_answer(ctx: Context, key: tuple[str, int], before: PartitionState, after: PartitionState) -> Cause | None:
    """A failed replica's deletion retried (a leaderless partition's bare leader epoch bump, or its ISR shrunk) after
    later events had written: the StopReplica answers to a deletion the controller (re)started come back as events of
    their own (TopicDeletionStopReplicaResponseReceived), queued behind the events that came meanwhile, and each ends
    in resumeDeletions (seed 422: broker 3's answer to its startup's deletion 2.7 s later, after a reassignment's
    completion; seed 460: broker 2's, after an ISR change). The write is the newest event that (re)started the
    topic's deletion: a startup of a broker hosting one of its replicas, a deletion request that read it, or a
    failover (a new controller hears no answers to its predecessor's requests)."""
    topic = ctx.topics.get(key[0])
    if key[0] not in ctx.deleting or topic is None or not (before.leader == after.leader == NO_LEADER and
                                                           set(after.isr) <= set(before.isr)):
        return None
    hosts = {b for replicas in topic.replicas.values() for b in replicas}
    for cause in reversed(ctx.causes):
        if (cause.kind == "STARTUP" and cause.brokers & hosts) or cause.deletes(key[0]) or cause.kind == "FAILOVER":
            return cause
    return None


def _live_replica_offline(ctx: Context, key: tuple[str, int], before: PartitionState, after: PartitionState) -> bool:
    """Whether a write takes a live replica offline (OfflineReplica, removeReplicasFromIsr): out of the ISR, or the
    last ISR member, which stays, with the leader epoch bumped. A replica in a failed log dir of a live broker is
    dead as one on a dead broker (isReplicaOnline): its deletion fails and is retried (seed 1250, Kafka 2.7.2: t1-0's
    replica in broker 3's failed dir, retried at broker 4's StopReplica answer queued behind t2's read)."""
    dropped = [b for b in before.isr if b not in after.isr]
    if dropped:
        return any(ctx.replica_online(b, key) for b in dropped)
    return after.leader == NO_LEADER and len(after.isr) == 1 and ctx.replica_online(after.isr[0], key)


def _fits(ctx: Context, cause: Cause, key: tuple[str, int], before: PartitionState, after: PartitionState) -> bool:
    """Whether a controller write of `key` can be a consequence of `cause`: what that event's handler in Kafka's
    KafkaController writes."""
    topic = ctx.topics.get(key[0])
    reassigning = topic is not None and topic.reassigning(key[1])
    newest = ctx.newest(cause)
    if after.leader >= 0 and after.leader != before.leader and after.leader not in before.isr and \
            cause.kind in ("STARTUP", "FAILURE", "FAILOVER") and not _unclean_allowed(ctx, key[0]):
        return False  # an unclean election these handlers make only where the topic allows it
    if ctx.protocol_before_3 and newest and reassigning and ctx.written_for.get(key) == cause.event["event_id"] \
            and set(topic.target(key[1])) <= set(before.isr) and after.leader_epoch > before.leader_epoch:
        # Below protocol 2.7 the controller watches a reassigning partition's state: the write `cause` made
        # (an unclean election of the one target replica) set off the reassignment's completion (seed 128).
        return True
    match cause.kind:
        case "FAILOVER":  # onControllerFailover: anything before the next input, but it takes out of an ISR only
            # dead brokers' replicas and those a reassignment or a deletion removes: a registered broker dropped
            # otherwise is that broker's controlled shutdown, a request that leaves no znode (seeds 21, 30). Nor
            # does it bump the leader epoch of a live leader alone (leader and ISR kept) outside a reassignment:
            # that is an Admin API reassignment in place (seed 104, 3 s after the failover's last write). The
            # reassignments it resumes are written before its last write: a registered broker dropped from a
            # reassigning partition after it is that broker's controlled shutdown too (seed 439); its requests'
            # answers (a replica in a failed log dir) come after it. A broker registered after its read of
            # /brokers/ids is dead to it: its replicas go offline (seed 1431)
            return newest and ((reassigning and not cause.finished) or key[0] in ctx.deleting or (
                not any(cause.read_live(b) and drops(b, before, after) and not logdirs.in_failed_dir(ctx, b, key, cause)
                        and not logdirs.failed_before_startup(ctx, cause, key, before, after)
                        for b in ctx.brokers) and
                ((after.leader, after.isr) != (before.leader, before.isr) or before.leader not in ctx.brokers)))
        case "STARTUP":  # offline partitions elect; reassignments onto the brokers resume (never dropping them),
            # dropping from the ISR and moving the leader only as a reassignment does (seed 70: a controlled
            # shutdown's write right after a startup)
            # A started broker's replica in a failed log dir answers KAFKA_STORAGE_ERROR: dropped again (JBOD).
            # A leaderless partition kept leaderless is a resumed reassignment's bump (A1) or a deletion's retry,
            # never a failed election, which writes nothing (seed 1030: an Admin API reassignment asked again, after
            # an unrelated startup and an AlterPartition). One whose completion threw for want of a leader, kept in the
            # controller's memory only (admin.completion_threw), completes once the startup elected it (seed 1497)
            reassigning = reassigning or key in ctx.reassigning_in_memory
            if ctx.behind_failover(cause) is not None and after.leader not in cause.brokers:
                # queued behind the failover that writes now (seed 1431); an election of its broker, dead to that
                # failover, is the startup's: the failover is over (its last write not seen)
                return False
            if any(drops(b, before, after) and logdirs.in_failed_dir(ctx, b, key, cause)
                   for b in cause.brokers):
                return True
            return not any(drops(b, before, after) for b in cause.brokers) and (
                (before.leader == NO_LEADER and (after.leader != NO_LEADER or key[0] in ctx.deleting)) or
                (reassigning and bool(cause.brokers & set(topic.target(key[1])))
                 and _may_drop_from_isr(ctx, key, before, after) and _may_move_leader(ctx, key, before, after)))
        case "FAILURE":  # its leaderships elect, its replicas leave the ISR; so do leaders already gone. Not
            # once the broker registered again: what drops it then is of its new incarnation. A failure of a
            # replica's broker of a topic being deleted also retries the failed deletions (resumeDeletions).
            # A leaderless partition whose last ISR member it was: the ISR written unchanged, the epoch bumped.
            return cause.broker not in ctx.brokers and (
                drops(cause.broker, before, after) or
                (before.leader == after.leader == NO_LEADER and before.isr == after.isr == (cause.broker,)) or
                (before.leader not in ctx.brokers and after.leader != before.leader) or
                (key[0] in ctx.deleting and topic is not None and cause.broker in topic.replicas.get(key[1], ())))
        case "CONTROLLED_SHUTDOWN":  # while the broker is still registered (its session's end is a failure); one
            # write per partition (doControlledShutdown: an election of those it leads, OfflineReplica of the others):
            # a second drop of the broker from one partition is its next request, a retry (seed 1023: a leader took it
            # back into the ISR between the two)
            return cause.broker in ctx.brokers and drops(cause.broker, before, after) and key not in cause.partitions
        case "CONFIG":  # unclean.leader.election.enable turned on: offline partitions elect uncleanly. Another
            # config (a reassignment's throttles) writes nothing, nor does an election that elects nobody (seed 422:
            # the Admin API reassignment's bump came after the throttles' znode)
            return key[0] == cause.topic and after.leader >= 0 and \
                str(cause.event["configs"].get(UNCLEAN_CONFIG)).lower() == "true" and \
                (before.leader == NO_LEADER or after.leader not in before.isr)
        case "DELETE":  # replicas out of the ISR on their way to deletion; and, as every deletion request
            # resumes the deletions queued (TopicDeletionManager.resumeDeletions), the retried replicas of the
            # other topics being deleted (seed 108)
            return key[0] == cause.topic or key[0] in ctx.deleting
        case "PARTITIONS":  # a reassignment's start or cancel, and its phases (a leader from the ISR, if any); its
            # start bumps the leader epoch once, a second bump is the reassignment asked for again (seed 140). A
            # partition whose assignment write was the controller's newest is still being handled (B3's bump of one
            # reassigned in place follows it), whatever a leader wrote of its own meanwhile (seed 902)
            return key in cause.partitions and (reassigning or newest or cause.last_zxid == ctx.controller_wrote_at) \
                and _clean(before, after) and \
                _may_move_leader(ctx, key, before, after) and _may_drop_from_isr(ctx, key, before, after) and \
                not (_started(ctx, key, before, after) and ctx.started_by.get(key) == cause.event["event_id"])
        case "ISR":  # a leader's ISR change that lets a reassignment complete
            return key in cause.partitions and reassigning and _clean(before, after) and \
                set(topic.target(key[1])) <= set(before.isr)
        case "LOG_DIR":  # the broker's answer: its replicas in the failed dir leave the ISR (the last member keeps
            # it, leaderless). A leader moved off the broker with it kept in the ISR is another event's (seed 818: a
            # preferred election, an Admin API request that leaves no znode, 0.9 s after the answer's writes)
            return logdirs.fits(ctx, cause, key, _taken_offline(cause.broker, before, after))
        case "PREFERRED" | "UNCLEAN":  # one write per partition it names: a second is another event's (seed 124: a
            # controlled shutdown right after)
            return key in cause.partitions and newest and ctx.written_for.get(key) != cause.event["event_id"]
        case _:
            return False


def _taken_offline(broker: int | None, before: PartitionState, after: PartitionState) -> bool:
    """Whether a write is what the controller writes of a replica it marks offline (onReplicasBecomeOffline): an
    election without it (leaderForOffline keeps the ISR's online replicas), or it out of the ISR; where it was the
    last ISR member and led, leaderless with the ISR kept (removeReplicasFromIsr)."""
    return (broker in before.isr and broker not in after.isr) or (before.leader == broker and after.leader == NO_LEADER)


def _clean(before: PartitionState, after: PartitionState) -> bool:
    """The write keeps the leader, drops it, or elects one from the ISR it had: not an unclean election."""
    return after.leader in (before.leader, NO_LEADER) or after.leader in before.isr


def _unclean_allowed(ctx: Context, topic: str) -> bool:
    value = ctx.configs.get(topic, {}).get(UNCLEAN_CONFIG, ctx.cluster_configs.get(UNCLEAN_CONFIG, "false"))
    return str(value).lower() == "true"


def _started(ctx: Context, key: tuple[str, int], before: PartitionState, after: PartitionState) -> bool:
    """The write a reassignment's start makes while its targets are not all in the ISR: a bare leader epoch bump
    (onPartitionReassignment A, updateLeaderEpochAndSendRequest)."""
    topic = ctx.topics.get(key[0])
    return topic is not None and topic.reassigning(key[1]) and \
        (after.leader, after.isr, after.leader_epoch) == (before.leader, before.isr, before.leader_epoch + 1) and \
        not set(topic.target(key[1])) <= set(before.isr)


def _may_move_leader(ctx: Context, key: tuple[str, int], before: PartitionState, after: PartitionState) -> bool:
    """A reassignment moves the leader only when it completes (every target replica in the ISR) or no longer
    has the leader's replica at all; its other phases bump the leader epoch and keep the leader (one being
    removed too, until the completion). Once its completion is written (the assignment without adding or
    removing replicas, B6, after B3's election), or when it was in place, it moves only a leader outside the
    replicas or offline (moveReassignedPartitionLeaderIfRequired): another move is another event's (seed 1390,
    Kafka 2.7.2: an Admin API preferred election 50 ms after a reassignment that completed at once)."""
    topic = ctx.topics.get(key[0])
    if after.leader == before.leader or topic is None:
        return True
    if not topic.reassigning(key[1]):
        return before.leader not in topic.replicas.get(key[1], ()) or not ctx.replica_online(before.leader, key)
    return set(topic.target(key[1])) <= set(before.isr) or before.leader not in topic.replicas.get(key[1], ())


def _may_drop_from_isr(ctx: Context, key: tuple[str, int], before: PartitionState, after: PartitionState) -> bool:
    """A reassignment takes a broker out of the ISR only as its replica goes: one no longer in the replicas (a
    cancel, or a new target without it), or one being removed once every target replica is in the ISR (the
    completion). Any other broker leaving the ISR meanwhile is not the reassignment's (seed 43: a controlled
    shutdown)."""
    topic = ctx.topics.get(key[0]) or TopicAssignment({})
    replicas, removing = topic.replicas.get(key[1], ()), topic.removing.get(key[1], ())
    complete = set(topic.target(key[1])) <= set(before.isr)
    return all(b not in replicas or (b in removing and complete) for b in before.isr if b not in after.isr)


# ---- a request that leaves no znode ---------------------------------------------------------------------------

def _request(ctx: Context, txn: ZkTxn, key: tuple[str, int], before: PartitionState,
             after: PartitionState) -> Cause | None:
    """A controller decision with no znode input before it: the request that caused it, by its shape."""
    if key[0] in ctx.deleting:
        return None
    topic = ctx.topics.get(key[0])
    replicas = topic.replicas.get(key[1], ()) if topic else ()
    dropped = [b for b in before.isr if b not in after.isr]
    if len(dropped) == 1 and dropped[0] in ctx.brokers and after.leader != dropped[0] and \
            (before.leader == dropped[0] or after.leader == before.leader):
        broker = dropped[0]
        return ctx.cause(Cause(brokers.shutdown_written(ctx, txn, broker), "CONTROLLED_SHUTDOWN", broker))
    if after.leader != before.leader and after.leader >= 0:
        # Preferred: the first replica, from the ISR, which stays; unclean: a replica outside the ISR, alone in it.
        kind = "PREFERRED" if not dropped and replicas and after.leader == replicas[0] and \
            after.leader in before.isr else \
            "UNCLEAN" if after.leader not in before.isr and after.isr == (after.leader,) else None
        if kind is None:
            return None
        last = ctx.causes[-1] if ctx.causes else None
        if last is not None and last.kind == kind and last.pipelined(txn):
            # One admin election's writes, however many (seed 124): pipelined, consecutive cxids of the
            # controller's session (a later election reads the states first, seed 50).
            last.event["partitions"].append({"topic": key[0], "partition": key[1]})
            return last
        event = ctx.event(txn, "ElectLeaders", election_type=kind,
                          partitions=[{"topic": key[0], "partition": key[1]}])
        return ctx.cause(Cause(event, kind))
    if _started(ctx, key, before, after):
        # A reassignment to the target in progress, asked for again through the Admin API: the controller starts
        # it over (the bump) and writes no assignment, which is unchanged (seed 140).
        target = (ctx.topics.get(key[0]) or TopicAssignment({})).target(key[1])
        event = ctx.event(txn, "ReassignPartitions", f"-{key[0]}-{key[1]}", partitions=[
            {"topic": key[0], "partition": key[1], "replicas": list(target)}])
        return ctx.cause(Cause(event, "PARTITIONS", partitions={key}))
    return None
