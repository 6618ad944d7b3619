"""From a ZooKeeper ensemble's transactions to isrflow's contract events, and the ZooKeeper-era controller's own
decisions.

Pure: a `ZkHistory` in, `ZkConverted` out (events in zxid order, every partition state write as the controller's
observed decision, what could not be explained). In ZooKeeper mode every controller input and every decision is a
znode write (docs/zookeeper.md, "Rules the real controller taught isrflow"). `Converter` hands each write to the
module of its znodes, which holds the rules for them; they share the importer's state
(streaming.zookeeper.context):

- `/brokers/ids/N`, `closeSession`, `/controller`: registrations, failures, controlled shutdowns, failovers
  (streaming.zookeeper.brokers);
- `/brokers/topics/T`: creations, partitions added, reassignments, deletions (streaming.zookeeper.topics);
- `/brokers/topics/T/partitions/P/state`: the controller's decisions and the events that caused them
  (streaming.zookeeper.partitionstate), a leader's ISR changes, `/isr_change_notification` and the AlterPartition
  requests answered without a write (streaming.zookeeper.isrchanges);
- `/admin/*` and `/config/*`: the admin tools' requests and configs (streaming.zookeeper.admin);
- `/log_dir_event_notification/*`: a log dir failed under a broker (streaming.zookeeper.logdirs).

A history that starts at a snapshot: the ensemble's state as events at the snapshot's zxid that decide nothing:
ControllerChange (with the registered brokers), one PartitionSnapshot per partition.

With the brokers' controller.log files (`ControllerReads`, streaming.zookeeper.controllerlog), what the writes only
bound is read from them: a failover's `live_brokers` (a registration it read is no event), the registrations each
BrokerChange read took together (`new_brokers`), and the partition an unchanged rewrite of `/brokers/topics/T` was
for. A controller epoch whose log is missing falls back to the writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from streaming.zookeeper import admin, brokers, isrchanges, logdirs, partitionstate, topics
from streaming.zookeeper.context import (
    BROKER_DEFAULTS,
    ISR_CHANGE_NOTIFICATION,
    LOG_DIR_EVENT_NOTIFICATION,
    Context,
    PartitionState,
    TopicAssignment,
    ZkConverted,
    controllers_write,
    event_zxid,
    follows_on,
)
from streaming.zookeeper.controllerlog import ControllerReads
from streaming.zookeeper.serverlog import AlterPartitionRequest, ControlledShutdowns
from streaming.zookeeper.statechange import OfflineMarks
from streaming.zookeeper.txnlog import ZkHistory, ZkSnapshot, ZkTxn, ZnodeOp

# A ZooKeeper-era controller's failover makes its last write within seconds (the kept campaigns: 4 s at most); one
# whose last write never shows (Kafka before 2.2 does not check its epoch in its writes) is let go after this.
FAILOVER_MS = 60_000


class Converter:
    """Feed a history (`convert`); read `result`."""

    def __init__(self, reads: ControllerReads | None = None,
                 alter_partitions: Iterable[AlterPartitionRequest] = (),
                 offline_marks: OfflineMarks | None = None, shutdowns: ControlledShutdowns | None = None) -> None:
        self.context = Context(reads, alter_partitions, offline_marks, shutdowns)

    @property
    def result(self) -> ZkConverted:
        return self.context.result

    def convert(self, history: ZkHistory) -> ZkConverted:
        ctx = self.context
        if isrchanges.leaders_write_their_isr(history):
            # Known from the whole history: in force from its start, before any unclean election.
            first = history.snapshot.zxid if history.snapshot else 0
            isrchanges.protocol_before_3(ctx, ZkTxn(first, history.txns[0].time if history.txns else 0, 0, 0, ()))
        if history.snapshot is not None:
            self._seed(history.snapshot)
        if history.txns:  # a request answered before the retained history is of a state it does not hold
            ctx.unwritten_requests = [r for r in ctx.unwritten_requests if r.answered_ms >= history.txns[0].time]
            ctx.partly_refused = [r for r in ctx.partly_refused if r.answered_ms >= history.txns[0].time]
        self.feed(history.txns)
        isrchanges.answered_before(ctx, None)  # those answered after the last write
        return ctx.result

    def feed(self, txns: list[ZkTxn]) -> ZkConverted:
        """Convert more transactions, in zxid order (a follower's poll); returns what they produced."""
        ctx = self.context
        events, observed, unexplained = (len(ctx.result.events), len(ctx.result.observed),
                                         len(ctx.result.unexplained))
        logdirs.note_notifications(ctx, txns)  # read ahead: the whole history, or a follower's poll
        isrchanges.note_registrations(ctx, txns)
        for txn in txns:
            request = ctx.alter_partition
            if request is None or not follows_on(txn, request.session, request.cxid):
                isrchanges.answered_before(ctx, txn.time)  # never inside another request's pipelined writes
            ctx.zxid, ctx.time = txn.zxid, txn.time
            if ctx.failover is not None and txn.time - ctx.failover.since > FAILOVER_MS:
                ctx.failover = None  # no last write seen (a controller too old to check its epoch): nothing proven
            if txn.failed:
                ctx.result.failed_txns += 1
                if txn.session == ctx.controller_session and controllers_write(txn):
                    # a write of its event thread, which checks its epoch
                    brokers.failover_written(ctx, txn, last=True)
            else:
                self._txn(txn)
            if txn.session == ctx.controller_session:
                ctx.controller_heard_at = txn.zxid
        return ZkConverted(ctx.result.events[events:], ctx.result.observed[observed:],
                           ctx.result.unexplained[unexplained:])

    def reassigning(self, key: tuple[str, int]) -> bool:
        return self.context.reassigning(key)

    def unsettled_from(self, quiet_since: int) -> int | None:
        """`_unsettled_from`, and a log dir notification no controller has deleted yet (a new controller's failover
        deleting it unread takes its event back: `logdirs.notification_deleted`)."""
        held = [z for z in (self._unsettled_from(quiet_since),
                            *(event_zxid(c.event) for c in self.context.log_dir_events.values())) if z is not None]
        return min(held) if held else None

    def _unsettled_from(self, quiet_since: int) -> int | None:
        """The zxid from which the output may still change (None: none of it): the newest event's, while the
        controller may still be handling it. Its partition writes follow it in later transactions, so it is open
        while the last transaction is newer than `quiet_since` (ms, the server's clock); an admin election's next
        write adds a partition to its event (`partitionstate`); a reassignment's completion rewrites the replicas of
        the partition writes before it (`topics`); the next partition of an AlterPartition request is named in the
        request's IsrChange events before it (`isrchanges`); below protocol 2.7 a leader's own ISR write goes before
        the reassignment request being handled when that request's next partition read it (`isrchanges`); a
        failover's writes make the registrations since its election part of it, or one startup
        (`brokers.failover_written`)."""
        ctx = self.context
        failover = ctx.failover.unsettled_from() if ctx.failover is not None else None
        if not ctx.causes:
            return failover
        newest = ctx.causes[-1]
        zxid = event_zxid(newest.event)
        request = ctx.alter_partition
        if request is not None and newest.event is request.events[-1]:
            zxid = event_zxid(request.events[0])  # the request's next partition names itself in all its events
        if len(ctx.causes) > 1 and isrchanges.completion_pending(ctx, ctx.causes[-2]):
            # its completion may still come, behind the newest, the event moved after it (partitionstate)
            zxid = min(zxid, event_zxid(ctx.causes[-2].event))
        reading = isrchanges.request_still_reading(ctx)
        if reading is not None and ctx.time > quiet_since:
            zxid = min(zxid, event_zxid(reading.event))  # a leader's ISR write since may still go before it
        if ctx.time > quiet_since or (newest.kind in ("PREFERRED", "UNCLEAN") and zxid == ctx.zxid) or \
                any(ctx.reassigning(key) for key in newest.partitions):
            return zxid if failover is None else min(zxid, failover)
        return failover

    def _txn(self, txn: ZkTxn) -> None:
        """Each write of a transaction to the reader of its znode."""
        ctx = self.context
        elected: int | None = None
        for op in txn.ops:
            path = op.path
            if path.startswith(ISR_CHANGE_NOTIFICATION):
                isrchanges.isr_change_notification(ctx, txn, op)
            if op.kind == "createSession":
                ctx.session_timeouts[txn.session] = op.version
            elif op.kind == "closeSession":
                if "/controller" in op.deleted:
                    brokers.failover_left_undone(ctx, txn)
                    isrchanges.answered_by_deposed(ctx, txn)
                    brokers.registrations_left_unread(ctx, txn)
                    admin.reassignment_left_unread(ctx)
                    logdirs.deletions_failed_in_dir(ctx)
                    admin.deletions_left_unanswered(ctx)
                    isrchanges.completion_cut(ctx)
                    isrchanges.completion_cut_after_assignment(ctx)
                brokers.session_closed(ctx, txn, op)
            elif path.startswith("/brokers/ids/") and path.count("/") == 3:
                brokers.registration(ctx, txn, op)
            elif path == "/controller" and op.kind == "create":
                elected = json.loads(op.data or b"{}").get("brokerid", -1)
            elif path == "/controller" and op.kind == "delete":
                brokers.controller_moved(ctx, txn)
                ctx.controller_session = ctx.failover = None
            elif path == "/controller_epoch" and op.kind in ("create", "setData"):
                ctx.controller_epoch = int((op.data or b"0").decode() or 0)
            elif path.startswith("/brokers/topics/"):
                self._topic_znode(txn, op)
            elif path.startswith("/config/topics/") or path == BROKER_DEFAULTS:
                admin.config_change(ctx, txn, op)
            elif path.startswith("/admin/"):
                admin.admin_request(ctx, txn, op)
            elif path.startswith(LOG_DIR_EVENT_NOTIFICATION):
                logdirs.log_dir_event(ctx, txn, op)
        if txn.session == ctx.controller_session and elected is None:
            brokers.failover_written(ctx, txn)
        if controllers_write(txn):
            ctx.controller_wrote(txn)
        if elected is not None:
            brokers.controller_elected(ctx, txn, elected)

    def _topic_znode(self, txn: ZkTxn, op: ZnodeOp) -> None:
        ctx = self.context
        parts = op.path.split("/")  # ['', 'brokers', 'topics', T, ('partitions', P, 'state')]
        topic = parts[3]
        if len(parts) == 4:
            if op.kind == "create":
                topics.topic_created(ctx, txn, topic, TopicAssignment.parse(op.data))
            elif op.kind == "setData":
                topics.topic_changed(ctx, txn, topic, TopicAssignment.parse(op.data))
            elif op.kind == "delete":
                topics.topic_deleted(ctx, topic)
        elif len(parts) == 5 and parts[4] == "partitions" and op.kind == "create":
            topics.partitions_created(ctx, txn, topic)
        elif len(parts) == 7 and parts[6] == "state" and op.kind in ("create", "setData"):
            partitionstate.state_write(ctx, txn, op, (topic, int(parts[5])))

    def _seed(self, snapshot: ZkSnapshot) -> None:
        """The ensemble's state at the snapshot, as events that decide nothing (at the snapshot's zxid)."""
        ctx = self.context
        ctx.result.snapshot_state = True
        nodes = snapshot.nodes
        at = ZkTxn(snapshot.zxid, 0, 0, 0, ())
        ctx.session_timeouts.update(snapshot.sessions)
        if "/controller_epoch" in nodes:
            ctx.controller_epoch = int(nodes["/controller_epoch"].data.decode() or 0)
        for path, node in sorted(nodes.items()):
            if path.startswith("/brokers/ids/") and path.count("/") == 3:
                broker = int(path.rsplit("/", 1)[1])
                ctx.brokers[broker] = node.czxid
                ctx.sessions[node.ephemeral_owner] = broker
            elif path.startswith("/brokers/topics/") and path.count("/") == 3:
                ctx.topics[path.split("/")[3]] = TopicAssignment.parse(node.data)
            elif path.startswith("/brokers/topics/") and path.endswith("/state"):
                parts = path.split("/")
                ctx.states[(parts[3], int(parts[5]))] = PartitionState.parse(node.data, node.version)
            elif path.startswith("/config/topics/"):
                ctx.configs[path.split("/")[3]] = dict(json.loads(node.data or b"{}").get("config", {}))
            elif path == BROKER_DEFAULTS:
                ctx.cluster_configs = dict(json.loads(node.data or b"{}").get("config", {}))
            elif path.startswith("/admin/delete_topics/"):
                ctx.deleting.add(path.rsplit("/", 1)[1])
            elif path.startswith(ISR_CHANGE_NOTIFICATION):
                ctx.notifications[path] = (node.czxid, isrchanges.notified(node.data))
        if "/controller" in nodes:
            ctx.controller_id = json.loads(nodes["/controller"].data or b"{}").get("brokerid", -1)
            ctx.controller_session = nodes["/controller"].ephemeral_owner
            ctx.controller_sessions[ctx.controller_session] = ctx.controller_id  # a notification's reader, maybe
            ctx.controller_since = nodes["/controller"].czxid
            ctx.event(at, "ControllerChange", "-snapshot", controller_id=max(ctx.controller_id, 0),
                      live_brokers={str(b): e for b, e in sorted(ctx.brokers.items())})
        for (topic, partition), state in sorted(ctx.states.items()):
            assignment = ctx.topics.get(topic) or TopicAssignment({})
            configs = ctx.topic_configs(topic)
            ctx.event(at, "PartitionSnapshot", f"-snapshot-{topic}-{partition}", topic=topic, partition=partition,
                      replicas=list(assignment.replicas.get(partition, ())), isr=list(state.isr),
                      leader=state.leader, leader_epoch=state.leader_epoch, partition_epoch=state.version,
                      leader_recovery_state="RECOVERING" if state.recovering else "RECOVERED",
                      adding_replicas=list(assignment.adding.get(partition, ())),
                      removing_replicas=list(assignment.removing.get(partition, ())),
                      **({"configs": configs} if configs else {}))


def convert(history: ZkHistory, reads: ControllerReads | None = None,
            alter_partitions: Iterable[AlterPartitionRequest] = (),
            offline_marks: OfflineMarks | None = None, shutdowns: ControlledShutdowns | None = None) -> ZkConverted:
    """`history` as contract events and the controller's observed decisions (with what the controllers logged they
    read, `reads`, when their controller.log files are at hand, the AlterPartition requests their leaders logged,
    `alter_partitions`, and the replicas they marked offline at a broker's answer, `offline_marks`, from their
    state-change.log; when the brokers retried their controlled shutdowns, `shutdowns`, from their server.log)."""
    return Converter(reads, alter_partitions, offline_marks, shutdowns).convert(history)
