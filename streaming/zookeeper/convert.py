"""From a ZooKeeper ensemble's transactions to isrflow's contract events, and the ZooKeeper-era controller's own
decisions.

Pure: a `ZkHistory` in, `ZkConverted` out (events in zxid order, every partition state write as the controller's
observed decision, what could not be explained). In ZooKeeper mode every controller input and every decision is a
znode write (docs/zookeeper.md, "Record patterns"):

- `create /brokers/ids/N` (ephemeral) -> BrokerChange STARTUP, broker epoch = the create's zxid (its czxid);
  `closeSession` (or `delete`) of it -> BrokerChange FAILURE. While no controller is active (before the first one,
  or once the session that held `/controller` ended: the controller's broker died, and the broker with it)
  nobody handles a registration or a death, so neither is an event: the next controller reads /brokers/ids.
  A `closeSession` the broker sent itself (a cxid of its session; the server's expiry has cxid 0) is a clean stop:
  BrokerChange CONTROLLED_SHUTDOWN first, unless its writes showed one, and again while it still leads partitions
  (the broker's retries), up to controlled.shutdown.max.retries requests in all.
- `create /controller` with `setData /controller_epoch` -> ControllerChange with the brokers registered then and
  their epochs (`live_brokers`); the envelope's controller epoch is /controller_epoch's value from there on. Brokers
  registered before the failover's writes that precede its read of /brokers/ids (/feature, notification deletes)
  join `live_brokers`; those registered after them and before its last write were read by one processBrokerChange
  after it: each of their STARTUP events names them all (`new_brokers`).
- `create /brokers/topics/T` -> CreateTopic (with `/config/topics/T`, written just before); `setData` of it with
  more partitions -> CreatePartitions; with a partition's replicas, adding or removing changed -> ReassignPartitions
  (start, or cancel: back to the original replicas), unless it completes the reassignment in progress (the
  controller's own write after the partition states) or comes from `/admin/reassign_partitions`.
- `create /admin/delete_topics/T` -> DeleteTopic; `/admin/reassign_partitions` -> ReassignPartitions;
  `/admin/preferred_replica_election` -> ElectLeaders PREFERRED; `/config/topics/T` -> AlterTopicConfig.
- `create`/`setData` of `/brokers/topics/T/partitions/P/state` -> an observed decision (zkVersion = the znode's
  version = partition epoch). The leader epoch unchanged: the leader's AlterPartition (IsrChange; below
  inter.broker.protocol 2.7 the leader's own session writes it and announces it under /isr_change_notification).
  From 2.7 on the controller writes the partitions of one request in a pipeline (consecutive cxids of its session):
  each IsrChange of such a request names them all (`request_partitions`).
  The leader epoch bumped: a controller decision, caused by the event being handled (the last input whose scope
  the partition is in), else by a request that leaves no znode: a controlled shutdown (a registered broker dropped
  from leadership and ISR), an admin preferred election (the leader moves to the first replica, ISR unchanged) or
  an admin unclean election (a leader from outside the ISR, alone in it).
- Leaders that write their own ISR changes (below inter.broker.protocol.version 2.7) -> UpdateFeatures
  metadata.version 0 first: the zk rules run at a protocol before 3.0 (no KIP-704 recovery state). The controller's
  deletes of their `/isr_change_notification/isr_change_N` znodes (one pipeline: consecutive cxids) ->
  IsrChangeNotification naming the partitions they announced; a new controller's deletes at its failover, which
  reads every state anyway, are none.
- A history that starts at a snapshot: the ensemble's state as events at the snapshot's zxid that decide nothing:
  ControllerChange (with the registered brokers), one PartitionSnapshot per partition.

With the brokers' controller.log files (`ControllerReads`, streaming.zookeeper.controllerlog), what the writes only
bound is read from them: a failover's `live_brokers` (a registration it read is no event), the registrations each
BrokerChange read took together (`new_brokers`), and the partition an unchanged rewrite of `/brokers/topics/T` was
for. A controller epoch whose log is missing falls back to the writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from streaming.zookeeper import admin, brokers, isrchanges, partitionstate, topics
from streaming.zookeeper.context import (
    BROKER_DEFAULTS,
    INHERITED,
    ISR_CHANGE_NOTIFICATION,
    Context,
    PartitionState,
    TopicAssignment,
    ZkConverted,
    controllers_write,
    event_zxid,
    follows_on,
)
from streaming.zookeeper.controllerlog import ControllerReads
from streaming.zookeeper.serverlog import AlterPartitionRequest
from streaming.zookeeper.txnlog import ZkHistory, ZkSnapshot, ZkTxn, ZnodeOp

# A ZooKeeper-era controller's failover makes its last write within seconds (the kept campaigns: 4 s at most); one
# whose last write never shows (Kafka before 2.2 does not check its epoch in its writes) is let go after this.
FAILOVER_MS = 60_000


class Converter(Context):
    """Feed a history (`convert`); read `result`."""

    # ---- input ----------------------------------------------------------------------------------------

    def convert(self, history: ZkHistory) -> ZkConverted:
        if isrchanges.leaders_write_their_isr(history):
            # Known from the whole history: in force from its start, before any unclean election.
            first = history.snapshot.zxid if history.snapshot else 0
            isrchanges.protocol_before_3(self, ZkTxn(first, history.txns[0].time if history.txns else 0, 0, 0, ()))
        if history.snapshot is not None:
            self._seed(history.snapshot)
        if history.txns:  # a request answered before the retained history is of a state it does not hold
            self.unwritten_requests = [r for r in self.unwritten_requests if r.answered_ms >= history.txns[0].time]
        self.feed(history.txns)
        isrchanges.answered_before(self, None)  # those answered after the last write
        return self.result

    def feed(self, txns: list[ZkTxn]) -> ZkConverted:
        """Convert more transactions, in zxid order (a follower's poll); returns what they produced."""
        events, observed, unexplained = (len(self.result.events), len(self.result.observed),
                                         len(self.result.unexplained))
        for txn in txns:
            request = self.alter_partition
            if request is None or not follows_on(txn, request.session, request.cxid):
                isrchanges.answered_before(self, txn.time)  # never inside another request's pipelined writes
            self.zxid, self.time = txn.zxid, txn.time
            if self.failover is not None and txn.time - self.failover.since > FAILOVER_MS:
                self.failover = None  # no last write seen (a controller too old to check its epoch): nothing proven
            if txn.failed:
                self.result.failed_txns += 1
                if txn.session == self.controller_session and controllers_write(txn):
                    # a write of its event thread, which checks its epoch
                    brokers.failover_written(self, txn, last=True)
                continue
            self._txn(txn)
        return ZkConverted(self.result.events[events:], self.result.observed[observed:],
                           self.result.unexplained[unexplained:])

    def unsettled_from(self, quiet_since: int) -> int | None:
        """The zxid from which the output may still change (None: none of it): the newest event's, while the
        controller may still be handling it. Its partition writes follow it in later transactions, so it is open
        while the last transaction is newer than `quiet_since` (ms, the server's clock); an admin election's next
        write adds a partition to its event (`partitionstate`); a reassignment's completion rewrites the replicas of the
        partition writes before it (`topics`); the next partition of an AlterPartition request is named in the
        request's IsrChange events before it (`isrchanges`); a failover's writes make the registrations since its
        election part of it, or one startup (`brokers.failover_written`)."""
        failover = self.failover.unsettled_from() if self.failover is not None else None
        if not self.causes:
            return failover
        newest = self.causes[-1]
        zxid = event_zxid(newest.event)
        request = self.alter_partition
        if request is not None and newest.event is request.events[-1]:
            zxid = event_zxid(request.events[0])  # the request's next partition names itself in all its events
        if self.time > quiet_since or (newest.kind in ("PREFERRED", "UNCLEAN") and zxid == self.zxid) or \
                any(self.reassigning(key) for key in newest.partitions):
            return zxid if failover is None else min(zxid, failover)
        return failover

    def _txn(self, txn: ZkTxn) -> None:
        elected: int | None = None
        for op in txn.ops:
            path = op.path
            if path.startswith(ISR_CHANGE_NOTIFICATION):
                isrchanges.isr_change_notification(self, txn, op)
            if op.kind == "closeSession":
                brokers.session_closed(self, txn, op)
            elif path.startswith("/brokers/ids/") and path.count("/") == 3:
                brokers.registration(self, txn, op)
            elif path == "/controller" and op.kind == "create":
                elected = json.loads(op.data or b"{}").get("brokerid", -1)
            elif path == "/controller" and op.kind == "delete":
                self.controller_session = self.failover = None
            elif path == "/controller_epoch" and op.kind in ("create", "setData"):
                self.controller_epoch = int((op.data or b"0").decode() or 0)
            elif path.startswith("/brokers/topics/"):
                self._topic_znode(txn, op)
            elif path.startswith("/config/topics/") or path == BROKER_DEFAULTS:
                admin.config_change(self, txn, op)
            elif path.startswith("/admin/"):
                admin.admin_request(self, txn, op)
        if txn.session == self.controller_session and elected is None:
            brokers.failover_written(self, txn)
        if elected is not None:
            brokers.controller_elected(self, txn, elected)

    # ---- topics and partitions --------------------------------------------------------------------------

    def _topic_znode(self, txn: ZkTxn, op: ZnodeOp) -> None:
        parts = op.path.split("/")  # ['', 'brokers', 'topics', T, ('partitions', P, 'state')]
        topic = parts[3]
        if len(parts) == 4:
            if op.kind == "create":
                topics.topic_created(self, txn, topic, TopicAssignment.parse(op.data))
            elif op.kind == "setData":
                topics.topic_changed(self, txn, topic, TopicAssignment.parse(op.data))
            elif op.kind == "delete":
                topics.topic_deleted(self, topic)
        elif len(parts) == 7 and parts[6] == "state" and op.kind in ("create", "setData"):
            partitionstate.state_write(self, txn, op, (topic, int(parts[5])))

    # ---- a snapshot -------------------------------------------------------------------------------------

    def _seed(self, snapshot: ZkSnapshot) -> None:
        """The ensemble's state at the snapshot, as events that decide nothing (at the snapshot's zxid)."""
        self.result.snapshot_state = True
        nodes = snapshot.nodes
        at = ZkTxn(snapshot.zxid, 0, 0, 0, ())
        if "/controller_epoch" in nodes:
            self.controller_epoch = int(nodes["/controller_epoch"].data.decode() or 0)
        for path, node in sorted(nodes.items()):
            if path.startswith("/brokers/ids/") and path.count("/") == 3:
                broker = int(path.rsplit("/", 1)[1])
                self.brokers[broker] = node.czxid
                self.sessions[node.ephemeral_owner] = broker
            elif path.startswith("/brokers/topics/") and path.count("/") == 3:
                self.topics[path.split("/")[3]] = TopicAssignment.parse(node.data)
            elif path.startswith("/brokers/topics/") and path.endswith("/state"):
                parts = path.split("/")
                self.states[(parts[3], int(parts[5]))] = PartitionState.parse(node.data, node.version)
            elif path.startswith("/config/topics/"):
                self.configs[path.split("/")[3]] = dict(json.loads(node.data or b"{}").get("config", {}))
            elif path == BROKER_DEFAULTS:
                self.cluster_configs = dict(json.loads(node.data or b"{}").get("config", {}))
            elif path.startswith("/admin/delete_topics/"):
                self.deleting.add(path.rsplit("/", 1)[1])
            elif path.startswith(ISR_CHANGE_NOTIFICATION):
                self.notifications[path] = (node.czxid, isrchanges.notified(node.data))
        if "/controller" in nodes:
            self.controller_id = json.loads(nodes["/controller"].data or b"{}").get("brokerid", -1)
            self.controller_session = nodes["/controller"].ephemeral_owner
            self.controller_since = nodes["/controller"].czxid
            self.event(at, "ControllerChange", "-snapshot", controller_id=max(self.controller_id, 0),
                        live_brokers={str(b): e for b, e in sorted(self.brokers.items())})
        for (topic, partition), state in sorted(self.states.items()):
            assignment = self.topics.get(topic) or TopicAssignment({})
            configs = {**{k: v for k, v in self.cluster_configs.items() if k in INHERITED},
                       **self.configs.get(topic, {})}
            self.event(at, "PartitionSnapshot", f"-snapshot-{topic}-{partition}", topic=topic, partition=partition,
                        replicas=list(assignment.replicas.get(partition, ())), isr=list(state.isr),
                        leader=state.leader, leader_epoch=state.leader_epoch, partition_epoch=state.version,
                        leader_recovery_state="RECOVERING" if state.recovering else "RECOVERED",
                        adding_replicas=list(assignment.adding.get(partition, ())),
                        removing_replicas=list(assignment.removing.get(partition, ())),
                        **({"configs": configs} if configs else {}))


def convert(history: ZkHistory, reads: ControllerReads | None = None,
            alter_partitions: Iterable[AlterPartitionRequest] = ()) -> ZkConverted:
    """`history` as contract events and the controller's observed decisions (with what the controllers logged they
    read, `reads`, when their controller.log files are at hand, and the AlterPartition requests their leaders logged,
    `alter_partitions`)."""
    return Converter(reads, alter_partitions).convert(history)

