"""Brokers and the controller: `/brokers/ids/N` registrations, the sessions that end them, and `/controller`
elections with the failover that follows.

- `create /brokers/ids/N` (ephemeral) -> BrokerChange STARTUP, broker epoch = the create's zxid (its czxid);
  `closeSession` (or `delete`) of it -> BrokerChange FAILURE. While no controller is active (before the first one,
  or once the session that held `/controller` ended: the controller's broker died, and the broker with it)
  nobody handles a registration or a death, so neither is an event: the next controller reads /brokers/ids. Nor
  is a registration that came after a dead controller's last request, which its session's expiry shows
  (`registrations_left_unread`).
  A `closeSession` the broker sent itself (a cxid of its session; the server's expiry has cxid 0) is a clean stop:
  BrokerChange CONTROLLED_SHUTDOWN first, unless its writes showed one, and again while it still leads partitions
  (the broker's retries), up to controlled.shutdown.max.retries requests in all.
- `create /controller` with `setData /controller_epoch` -> ControllerChange with the brokers registered then and
  their epochs (`live_brokers`); the envelope's controller epoch is /controller_epoch's value from there on. Brokers
  registered before the failover's writes that precede its read of /brokers/ids (/feature, notification deletes)
  join `live_brokers`; those registered after them and before its last write were read by one processBrokerChange
  after it: each of their STARTUP events names them all (`new_brokers`).

With the brokers' controller.log files (`ControllerReads`), a failover's `live_brokers` (a registration it read is
no event) and the registrations each BrokerChange read took together (`new_brokers`) are read from them.
"""

from __future__ import annotations

from typing import Any

from streaming.zookeeper import answers, logdirs
from streaming.zookeeper.context import (
    FAILOVER_DELETES,
    Cause,
    Context,
    Failover,
    LoggedRead,
    QueuedAnswers,
    TopicAssignment,
    controllers_write,
    event_ms,
    event_zxid,
)
from streaming.zookeeper.txnlog import ZkTxn, ZnodeOp

# A broker's controlled.shutdown.max.retries (Kafka's default): how many ControlledShutdown requests it sends while
# the controller answers that it still leads partitions. The brokers' configs are not in ZooKeeper.
CONTROLLED_SHUTDOWN_ATTEMPTS = 3
PREFERRED_ELECTION = "/admin/preferred_replica_election"
NO_NODE = -101  # ZooKeeper's error code of a delete that found no znode (KeeperException.Code.NONODE)


# ---- the controller ---------------------------------------------------------------------------------------------

def controller_elected(ctx: Context, txn: ZkTxn, elected: int) -> None:
    """`create /controller` by broker `elected` (the transaction also wrote /controller_epoch)."""
    ctx.controller_id, ctx.controller_session, ctx.controller_since = elected, txn.session, txn.zxid
    ctx.failover_prologue = txn.cxid
    ctx.answer_at_startup.clear()  # this one asks every registered broker again
    ctx.reassigning_in_memory.clear()  # its predecessor's memory: ZooKeeper holds nothing of them
    # The brokers registered at the election, which the new controller reads: the failover's live set, and
    # those it reads with them (failover_written).
    # And the reassignments in progress it reads in /brokers/topics (seed 311: one its predecessor, killed between
    # the completion's ISR shrink and its assignment write, had nearly completed).
    reassignments = [{"topic": t, "partition": p, **a.fields(p)}
                     for t, a in sorted(ctx.topics.items()) for p in sorted(a.replicas) if a.reassigning(p)]
    # Those /admin/reassign_partitions still names it resumes first (processZkPartitionReassignment; seed 1043).
    in_znode = [{"topic": r["topic"], "partition": r["partition"]} for r in reassignments
                if (r["topic"], r["partition"]) in ctx.znode_reassignments]
    # Those it names that /brokers/topics shows neither reassigning nor moved (an admin write of the assignment, read
    # before the old controller's, put the original replicas back): it starts them over (seed 1547).
    restarted = [{"topic": t, "partition": p, "replicas": list(ctx.topics[t].replicas[p]), "adding_replicas": [],
                  "removing_replicas": []} for (t, p), target in sorted(ctx.znode_reassignments.items())
                 if (t, p) not in ctx.unread_reassignments and t in ctx.topics and p in ctx.topics[t].replicas
                 and not ctx.topics[t].reassigning(p) and tuple(ctx.topics[t].replicas[p]) != tuple(target)]
    event = ctx.event(txn, "ControllerChange", controller_id=max(elected, 0),
                      live_brokers={str(b): e for b, e in sorted(ctx.brokers.items())},
                      **({"reassignments": reassignments} if reassignments else {}),
                      **({"znode_reassignments": in_znode} if in_znode else {}),
                      **({"restarted_reassignments": restarted} if restarted else {}),
                      **({"topics_to_delete": sorted(ctx.unread_deletions)} if ctx.unread_deletions else {}))
    ctx.unread_deletions.clear()
    ctx.cause(Cause(event, "FAILOVER"))
    # Which broker's KAFKA_STORAGE_ERROR answer to its LeaderAndIsr the failover handles first is timing: the order
    # of its `Mark replicas` lines (seed 1115: broker 2's, then broker 1's; seed 1240: broker 4's, then broker 2's).
    order = ctx.offline_marks.answer_order(elected, txn.time) if ctx.offline_marks is not None else []
    if len(order) > 1:
        event["answer_order"] = order
    epoch = ctx.controller_epoch
    ctx.logged_reads = [LoggedRead(r) for r in ctx.reads.broker_reads.get(epoch, [])]
    ctx.logged_assignments = list(ctx.reads.assignments.get(epoch, []))
    ctx.logged_deletions = list(ctx.reads.deletion_reads.get(epoch, []))
    ctx.notified_deletions = {read: set(brokers) for read, brokers in
                              ctx.reads.notified_before_answers.get(epoch, {}).items()}
    logged = ctx.reads.failovers.get(epoch)
    if logged is None:
        ctx.failover = Failover(event, txn.time)
    else:  # its controller.log names what its read of /brokers/ids found: nothing to infer
        event["live_brokers"] = {str(b): e for b, e in sorted(logged.items())}


def failover_written(ctx: Context, txn: ZkTxn, last: bool = False) -> None:
    """A write of the active controller's session while its failover may be on. onControllerFailover writes
    /feature (maybeSetupFeatureVersioning) and deletes the ISR change and log dir notifications it finds, then
    reads /brokers/ids (initializeControllerContext): the brokers registered before such a write (one session's
    requests are served in order) are part of the failover. Its last write is the delete of
    /admin/preferred_replica_election (removePartitionsFromPreferredReplicaElection), which fails when there is
    none, as at a cluster's first start: the registrations before it that the failover did not read fired the
    watch its read set, and the BrokerChange that queued is handled after the failover, with one read of
    /brokers/ids that takes them all (processBrokerChange): one startup of all of them (`new_brokers`). Which of
    those the failover read, the log does not show (they are the startup's); whether one registered after its
    last write was read with them, neither (it is a startup of its own, as before)."""
    failover = ctx.failover
    if failover is None:
        # Its controller.log named what it read (no failover to infer): only its end to know. A reassignment asked
        # through the znode after it is no step of it (seeds 1117, 1203: one 7 s and one 67 s later were taken for
        # the failover's read, and the answers to its requests waited for them).
        _failover_ended(ctx, txn)
        return
    if not last and not failover.read and any(_before_the_read(op) for op in txn.ops):
        live = failover.event["live_brokers"]
        for cause in failover.startups:
            if str(cause.broker) not in live and _registered(ctx, cause):
                live[str(cause.broker)] = cause.event["broker_epoch"]  # its STARTUP finds it started
                ctx.forget_cause(cause)
        failover.event["live_brokers"] = dict(sorted(live.items(), key=lambda item: int(item[0])))
        failover.startups.clear()
        return
    failover.read = failover.read or controllers_write(txn)  # its event thread's checked write
    if last or any(op.path == PREFERRED_ELECTION and op.kind == "delete" for op in txn.ops):
        read = [c for c in failover.startups if _registered(ctx, c)]
        if len(read) > 1:
            started = {str(c.broker): c.event["broker_epoch"] for c in read}
            for cause in read:
                cause.event["new_brokers"] = started
                if cause is not read[0]:
                    ctx.forget_cause(cause)
            read[0].started = tuple(c.broker for c in read)
        _failover_ended(ctx, txn)
        ctx.failover = None


def controller_moved(ctx: Context, txn: ZkTxn) -> None:
    """The active controller deleted /controller itself (KafkaController.triggerControllerMove: its failover threw,
    and it resigned before its event thread took anything queued behind it). A failover not past its last write
    failed: the registrations made while it went on queued a BrokerChange the controller, no longer active, dropped
    (processBrokerChange returns when it is not); the next controller's failover reads those brokers in /brokers/ids
    (seed 1299: every failover of controller epochs 3 to 101 threw resuming t2-0's reassignment, whose partition had
    no state znode; broker 1 registered during the 50th, broker 2 during the 101st, and the 51st and 102nd elected
    them)."""
    if txn.session != ctx.controller_session:
        return
    failover = ctx.newest_failover()
    if failover is None or failover.finished or event_zxid(failover.event) != ctx.controller_since:
        return
    for cause in [c for c in ctx.causes if c.kind == "STARTUP" and event_zxid(c.event) > ctx.controller_since]:
        if _registered(ctx, cause) and ctx.event_at(cause.event) is not None:
            ctx.retract(cause)
            for row in ctx.result.observed:  # the failover's writes since the registration are its own
                if row["cause_event_id"] == cause.event["event_id"]:
                    row.update(cause="ControllerChange", cause_event_id=failover.event["event_id"])


def failover_left_undone(ctx: Context, txn: ZkTxn) -> None:
    """The controller's session ended with nothing of it since its election: its failover never got to its last
    request (the delete of /admin/preferred_replica_election, logged even when it fails), nor to any write. Its
    ControllerChange is no event: it changed nothing, and the next controller's failover reads what it would have
    (seed 1471, Kafka 2.8.2: controller 4's session expired 6.5 s after its election, its failover threw registering
    its watches, before it read the cluster; controller 3's failover then wrote t1-0's replica offline, the steps
    isrflow had given to controller 4). Its controller.log naming its read of /brokers/ids (the failover read the
    cluster, then could not write) keeps it."""
    if txn.session != ctx.controller_session or ctx.controller_heard_at != ctx.controller_since or \
            ctx.controller_epoch in ctx.reads.failovers:
        return
    failover = ctx.newest_failover()
    if failover is None or failover is not ctx.causes[-1] or event_zxid(failover.event) != ctx.controller_since or \
            ctx.event_at(failover.event) is None:
        return
    ctx.retract(failover)
    ctx.unread_deletions.update(failover.event.get("topics_to_delete", ()))  # the next failover reads them


def _failover_ended(ctx: Context, txn: ZkTxn) -> None:
    """The active controller's failover is over at its delete of the election znode, or at that delete failing
    (ZooKeeper's NONODE: none there); another failed write (a znode it found there already, seed 309) is not its
    end."""
    if not any(op.path == PREFERRED_ELECTION or op.error == NO_NODE for op in txn.ops):
        return
    cause = ctx.newest_failover()
    if cause is not None and event_zxid(cause.event) == ctx.controller_since:
        cause.finished = True


def _before_the_read(op: ZnodeOp) -> bool:
    """A write a new controller makes before it reads /brokers/ids: of /feature, or a delete of the notifications it
    finds (onControllerFailover)."""
    if op.path.startswith(FAILOVER_DELETES):
        return op.kind == "delete"
    return op.path == "/feature" and op.kind in ("create", "setData")


def _registered(ctx: Context, startup: Cause) -> bool:
    """Whether the broker of a STARTUP is still registered with the epoch it registered with."""
    return ctx.brokers.get(startup.broker) == startup.event["broker_epoch"]


# ---- brokers ----------------------------------------------------------------------------------------------------

def registration(ctx: Context, txn: ZkTxn, op: ZnodeOp) -> None:
    """A write of `/brokers/ids/N`."""
    broker = int(op.path.rsplit("/", 1)[1])
    if op.kind == "create":
        if ctx.brokers.get(broker) == txn.zxid:
            return  # already in the snapshot the history starts from
        ctx.brokers[broker] = txn.zxid
        ctx.sessions[txn.session] = broker
        ctx.shutdown_attempts.pop(broker, None)
        if ctx.controller_session is None:
            return  # no controller to handle it: the next one reads it
        if ctx.reads.failovers.get(ctx.controller_epoch, {}).get(broker) == txn.zxid:
            return  # the controller's failover read it (its controller.log)
        logged = _logged_read(ctx, broker)
        event = ctx.event(txn, "BrokerChange", f"-{broker}", broker_id=broker, change="STARTUP",
                          broker_epoch=txn.zxid)
        ctx.startup_events[broker] = event
        logdirs.startup_answer(ctx, txn, broker, event)
        answers.resumed_reassignment_answers(ctx, broker, event)
        if logged is not None and len(answered := list(dict.fromkeys(logged.read.answers))) > 1:
            event["stop_replica_answer_order"] = answered  # the deletion it resumed, answered in this order
        if logged is not None and logged.startup is not None:  # one startup with an earlier registration
            logged.startup.event["new_brokers"][str(broker)] = txn.zxid
            event["new_brokers"] = logged.startup.event["new_brokers"]
            logged.startup.started = (*logged.startup.started, broker)
            return
        cause = ctx.cause(Cause(event, "STARTUP", broker))
        if logged is not None and logged.read.answered_at:  # they may come after later events (place_answers)
            ctx.queued_answers = QueuedAnswers(event, list(dict.fromkeys(logged.read.answers)),
                                               logged.read.answered_at[0])
        if ctx.failover is not None:
            ctx.failover.startups.append(cause)
        if logged is not None and broker in logged.read.new and len(logged.read.new) > 1:
            cause.started = (broker,)
            event["new_brokers"] = {str(broker): txn.zxid}
            logged.startup = cause
    elif op.kind == "delete":
        _broker_gone(ctx, txn, broker)


def _logged_read(ctx: Context, broker: int) -> LoggedRead | None:
    """The active controller's logged BrokerChange read that took this registration of `broker`: the first read
    not yet past that found it new or bounced and has not taken it yet."""
    for i, logged in enumerate(ctx.logged_reads):
        if broker not in logged.taken and (broker in logged.read.new or broker in logged.read.bounced):
            logged.taken.add(broker)
            ctx.logged_reads = ctx.logged_reads[i:]
            return logged
    return None


def session_closed(ctx: Context, txn: ZkTxn, op: ZnodeOp) -> None:
    """A `closeSession`: the brokers whose registration it held are gone, and the controller with its session."""
    gone = [int(p.rsplit("/", 1)[1]) for p in op.deleted if p.startswith("/brokers/ids/")]
    if txn.cxid != 0:  # the client closed it (an expiry is the server's closeSession, cxid 0)
        for broker in gone:
            _shut_down(ctx, txn, broker)
    if "/controller" in op.deleted:
        ctx.controller_session = ctx.failover = None
    for broker in gone:
        _broker_gone(ctx, txn, broker)
    ctx.sessions.pop(txn.session, None)
    ctx.session_timeouts.pop(txn.session, None)


def registrations_left_unread(ctx: Context, txn: ZkTxn) -> None:
    """The controller's session expired (the server's `closeSession`, cxid 0): ZooKeeper heard nothing from its broker
    for the session's timeout before it, and any request (a read of /brokers/ids) would have kept it. So the
    controller read no registration made later than the expiry's time less that timeout: its broker was dead or
    paused. Such a STARTUP is no event; the next controller's failover reads the broker in /brokers/ids
    (initializeControllerContext) and elects it where it can (seed 1119: broker 1 registered 2.4 s before the killed
    controller 2's session expired; controller 4's failover elected it leader of four partitions)."""
    timeout = ctx.session_timeouts.get(txn.session)
    if txn.cxid != 0 or timeout is None:
        return
    for cause in [c for c in ctx.causes if c.kind == "STARTUP" and event_ms(c.event) > txn.time - timeout]:
        if _registered(ctx, cause) and ctx.event_at(cause.event) is not None:
            ctx.retract(cause)


def _shut_down(ctx: Context, txn: ZkTxn, broker: int) -> None:
    """A broker that closed its session itself stopped cleanly: before that it asked the controller (itself, if
    it is the controller) for a controlled shutdown, and asked again while the answer named partitions it still
    led (KafkaServer.controlledShutdown, up to controlled.shutdown.max.retries times). The attempts that wrote
    nothing left no znode: a broker that led nothing and was in no ISR, or whose leaderships had nobody to move
    to (seeds 29, 48 and 46). They are events here, at the close, before the broker's failure; a retry its
    server.log dates goes before the events made since that time (seed 1236: leader 3's unwritten AlterPartition
    answered between its second and third requests, its UpdateMetadata between theirs)."""
    if broker not in ctx.brokers or ctx.controller_session is None:
        return
    attempts = ctx.shutdown_attempts.get(broker, 0)
    retries = ctx.shutdowns.retries(broker, txn.time)
    while attempts == 0 or (attempts < CONTROLLED_SHUTDOWN_ATTEMPTS and _still_leads(ctx, broker)):
        attempts += 1
        _unwritten_attempt(ctx, txn, broker, attempts, retries[attempts - 2] if 1 < attempts <= len(retries) + 1
                           else None)
    ctx.shutdown_attempts[broker] = attempts


def shutdown_written(ctx: Context, txn: ZkTxn, broker: int) -> dict[str, Any]:
    """A controlled shutdown's first write of a request (an election of a partition `broker` led, or it out of an
    ISR): the event of that request. Its broker's server.log dates its requests: the ones it sent before this one
    that wrote nothing (the controller had nobody to move its leaderships to) are events too, each at its time, before
    the events made after it (seed 1413, Kafka 2.7.2: controller 3's own first request found itself the only ISR
    member of t2-1, the leader it then asked to move; the follower the reassignment added joined the ISR, and its
    second request, 0.5 s later, elected it). Without server.log, the request is the next one."""
    attempts = ctx.shutdown_attempts.get(broker, 0)
    sent = ctx.shutdowns.attempts_by(broker, txn.time)[:CONTROLLED_SHUTDOWN_ATTEMPTS]
    for at in sent[attempts:-1]:
        attempts += 1
        _unwritten_attempt(ctx, txn, broker, attempts, at)
    ctx.shutdown_attempts[broker] = attempts + 1
    return ctx.event(txn, "BrokerChange", f"-{broker}", broker_id=broker, change="CONTROLLED_SHUTDOWN",
                     broker_epoch=ctx.brokers[broker])


def _unwritten_attempt(ctx: Context, txn: ZkTxn, broker: int, attempt: int, at: int | None) -> None:
    """The event of request `attempt` of `broker`'s controlled shutdown, which wrote nothing: at `txn`, or at `at`
    (ms), its time in the broker's server.log, before the events made after it."""
    when = txn if at is None else ZkTxn(txn.zxid, at, txn.session, txn.cxid, ())
    event = ctx.event(when, "BrokerChange", f"-{broker}-shutdown-{attempt}", broker_id=broker,
                      change="CONTROLLED_SHUTDOWN", broker_epoch=ctx.brokers[broker])
    if at is not None:
        _back_to(ctx, event, at)


def _back_to(ctx: Context, event: dict[str, Any], time: int) -> None:
    """Move `event`, the newest (a shutdown's retry), before the events still in the output made after `time` (ms),
    never before its broker's earlier requests."""
    events = ctx.result.events
    at = len(events) - 1
    while at > 0 and event_ms(events[at - 1]) > time and not (
            events[at - 1].get("change") == "CONTROLLED_SHUTDOWN"
            and events[at - 1]["broker_id"] == event["broker_id"]):
        at -= 1
    events.insert(at, events.pop())


def _still_leads(ctx: Context, broker: int) -> bool:
    """Whether the controller's answer to a controlled shutdown names partitions `broker` still leads
    (ControllerContext.partitionLeadsOnBroker: more than one replica, the topic not being deleted)."""
    return any(state.leader == broker and key[0] not in ctx.deleting and
               len((ctx.topics.get(key[0]) or TopicAssignment({})).replicas.get(key[1], ())) > 1
               for key, state in ctx.states.items())


def _broker_gone(ctx: Context, txn: ZkTxn, broker: int) -> None:
    epoch = ctx.brokers.pop(broker, None)
    if epoch is None or ctx.controller_session is None:
        return  # no controller to handle it (it died with this broker, say): the next one reads /brokers/ids
    event = ctx.event(txn, "BrokerChange", f"-{broker}", broker_id=broker, change="FAILURE",
                      broker_epoch=epoch)
    ctx.cause(Cause(event, "FAILURE", broker))
