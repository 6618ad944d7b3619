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

from streaming.zookeeper import admin, brokers, isrchanges, topics
from streaming.zookeeper.context import (
    BROKER_DEFAULTS,
    INHERITED,
    ISR_CHANGE_NOTIFICATION,
    NO_LEADER,
    UNCLEAN_CONFIG,
    Cause,
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


def _drops(broker: int | None, before: PartitionState, after: PartitionState) -> bool:
    """Whether a write takes `broker` out of the leadership or the ISR."""
    return (before.leader == broker and after.leader != broker) or (broker in before.isr and broker not in after.isr)


def _clean(before: PartitionState, after: PartitionState) -> bool:
    """The write keeps the leader, drops it, or elects one from the ISR it had: not an unclean election."""
    return after.leader in (before.leader, NO_LEADER) or after.leader in before.isr


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
        write adds a partition to its event (`_request`); a reassignment's completion rewrites the replicas of the
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
            self._state_write(txn, op, (topic, int(parts[5])))

    def _state_write(self, txn: ZkTxn, op: ZnodeOp, key: tuple[str, int]) -> None:
        version = 0 if op.kind == "create" else op.version
        before = self.states.get(key)
        if before is not None and version <= before.version:
            return  # a fuzzy snapshot already holds it
        after = PartitionState.parse(op.data, version)
        self.states[key] = after
        if before is None:
            # The first write of a partition: its creation's, unless none of its replicas was live then (New, no
            # leader): then the broker startup, or the failover, that brought one. A reassignment that gave it a
            # live replica elects nothing (it never had a leader): any broker's startup does then, as it tries every
            # New partition of the cluster (seed 143).
            replicas = (self.topics.get(key[0]) or TopicAssignment({})).replicas.get(key[1], ())
            created = self.created.get(key[0], {})
            reassigned = created.get("assignment", {}).get(str(key[1]), list(replicas)) != list(replicas)
            cause = next((c.event for c in reversed(self.causes)
                          if c.event is created or (c.kind == "STARTUP" and (reassigned or c.brokers & set(replicas)))
                          or c.kind == "FAILOVER"), created)
            self.observe(txn, key, None, after, cause.get("type", "Unexplained"), cause.get("event_id"))
            return
        if after.leader_epoch == before.leader_epoch or txn.session != self.controller_session:
            isrchanges.leader_isr_change(self, txn, key, before, after)
            return
        cause = self._handled_by(key, before, after)
        if cause is None:
            cause = self._request(txn, key, before, after)
        if cause is None:
            self.result.unexplained.append(txn.zxid)
            self.observe(txn, key, before, after, "Unexplained", None)
            return
        cause.partitions.add(key)
        cause.wrote, cause.last_write = True, (txn.session, txn.cxid)
        if cause.kind == "PARTITIONS" and self._started(key, before, after):
            self.started_by[key] = cause.event["event_id"]
        self.observe(txn, key, before, after, cause.event["type"], cause.event["event_id"])

    def _handled_by(self, key: tuple[str, int], before: PartitionState, after: PartitionState) -> Cause | None:
        """The newest event whose handler writes such a change. The controller handles one event at a time: once an
        event has written, the events before it are done, and a write that does not fit it is a request's. A new
        controller handles nothing its predecessor had queued: no event before a failover explains a write after it."""
        for cause in reversed(self.causes):
            if self._fits(cause, key, before, after):
                return cause
            if cause.wrote or cause.kind == "FAILOVER":
                return None
        return None

    def _started(self, key: tuple[str, int], before: PartitionState, after: PartitionState) -> bool:
        """The write a reassignment's start makes while its targets are not all in the ISR: a bare leader epoch bump
        (onPartitionReassignment A, updateLeaderEpochAndSendRequest)."""
        topic = self.topics.get(key[0])
        return topic is not None and topic.reassigning(key[1]) and \
            (after.leader, after.isr, after.leader_epoch) == (before.leader, before.isr, before.leader_epoch + 1) and \
            not set(topic.target(key[1])) <= set(before.isr)

    def _may_move_leader(self, key: tuple[str, int], before: PartitionState, after: PartitionState) -> bool:
        """A reassignment moves the leader only when it completes (every target replica in the ISR) or no longer
        has the leader's replica at all; its other phases bump the leader epoch and keep the leader (one being
        removed too, until the completion)."""
        topic = self.topics.get(key[0])
        if after.leader == before.leader or topic is None or not topic.reassigning(key[1]):
            return True
        return set(topic.target(key[1])) <= set(before.isr) or before.leader not in topic.replicas.get(key[1], ())

    def _may_drop_from_isr(self, key: tuple[str, int], before: PartitionState, after: PartitionState) -> bool:
        """A reassignment takes a broker out of the ISR only as its replica goes: one no longer in the replicas (a
        cancel, or a new target without it), or one being removed once every target replica is in the ISR (the
        completion). Any other broker leaving the ISR meanwhile is not the reassignment's (seed 43: a controlled
        shutdown)."""
        topic = self.topics.get(key[0]) or TopicAssignment({})
        replicas, removing = topic.replicas.get(key[1], ()), topic.removing.get(key[1], ())
        complete = set(topic.target(key[1])) <= set(before.isr)
        return all(b not in replicas or (b in removing and complete) for b in before.isr if b not in after.isr)

    def _unclean_allowed(self, topic: str) -> bool:
        value = self.configs.get(topic, {}).get(UNCLEAN_CONFIG, self.cluster_configs.get(UNCLEAN_CONFIG, "false"))
        return str(value).lower() == "true"

    def _fits(self, cause: Cause, key: tuple[str, int], before: PartitionState, after: PartitionState) -> bool:
        """Whether a controller write of `key` can be a consequence of `cause`: what that event's handler in Kafka's
        KafkaController writes."""
        topic = self.topics.get(key[0])
        reassigning = topic is not None and topic.reassigning(key[1])
        newest = cause is self.causes[-1]
        if after.leader >= 0 and after.leader != before.leader and after.leader not in before.isr and \
                cause.kind in ("STARTUP", "FAILURE", "FAILOVER") and not self._unclean_allowed(key[0]):
            return False  # an unclean election these handlers make only where the topic allows it
        if self.protocol_before_3 and newest and reassigning and self.written_for.get(key) == cause.event["event_id"] \
                and set(topic.target(key[1])) <= set(before.isr) and after.leader_epoch > before.leader_epoch:
            # Below protocol 2.7 the controller watches a reassigning partition's state: the write `cause` made
            # (an unclean election of the one target replica) set off the reassignment's completion (seed 128).
            return True
        match cause.kind:
            case "FAILOVER":  # onControllerFailover: anything before the next input, but it takes out of an ISR only
                # dead brokers' replicas and those a reassignment or a deletion removes: a registered broker dropped
                # otherwise is that broker's controlled shutdown, a request that leaves no znode (seeds 21, 30). Nor
                # does it bump the leader epoch of a live leader alone (leader and ISR kept) outside a reassignment:
                # that is an Admin API reassignment in place (seed 104, 3 s after the failover's last write)
                return newest and (reassigning or key[0] in self.deleting or (
                    not any(_drops(b, before, after) for b in self.brokers) and
                    ((after.leader, after.isr) != (before.leader, before.isr) or before.leader not in self.brokers)))
            case "STARTUP":  # offline partitions elect; reassignments onto the brokers resume (never dropping them),
                # dropping from the ISR and moving the leader only as a reassignment does (seed 70: a controlled
                # shutdown's write right after a startup)
                return not any(_drops(b, before, after) for b in cause.brokers) and (
                    before.leader == NO_LEADER or (reassigning and bool(cause.brokers & set(topic.target(key[1])))
                                                   and self._may_drop_from_isr(key, before, after)
                                                   and self._may_move_leader(key, before, after)))
            case "FAILURE":  # its leaderships elect, its replicas leave the ISR; so do leaders already gone. Not
                # once the broker registered again: what drops it then is of its new incarnation. A failure of a
                # replica's broker of a topic being deleted also retries the failed deletions (resumeDeletions).
                return cause.broker not in self.brokers and (
                    _drops(cause.broker, before, after) or
                    (before.leader not in self.brokers and after.leader != before.leader) or
                    (key[0] in self.deleting and topic is not None and cause.broker in topic.replicas.get(key[1], ())))
            case "CONTROLLED_SHUTDOWN":  # while the broker is still registered (its session's end is a failure)
                return cause.broker in self.brokers and _drops(cause.broker, before, after)
            case "CONFIG":  # unclean.leader.election.enable turned on: offline partitions elect uncleanly
                return key[0] == cause.topic and (before.leader == NO_LEADER or after.leader not in before.isr)
            case "DELETE":  # replicas out of the ISR on their way to deletion; and, as every deletion request
                # resumes the deletions queued (TopicDeletionManager.resumeDeletions), the retried replicas of the
                # other topics being deleted (seed 108)
                return key[0] == cause.topic or key[0] in self.deleting
            case "PARTITIONS":  # a reassignment's start or cancel, and its phases (a leader from the ISR, if any); its
                # start bumps the leader epoch once, a second bump is the reassignment asked for again (seed 140)
                return key in cause.partitions and (reassigning or newest) and _clean(before, after) and \
                    self._may_move_leader(key, before, after) and self._may_drop_from_isr(key, before, after) and \
                    not (self._started(key, before, after) and self.started_by.get(key) == cause.event["event_id"])
            case "ISR":  # a leader's ISR change that lets a reassignment complete
                return key in cause.partitions and reassigning and _clean(before, after) and \
                    set(topic.target(key[1])) <= set(before.isr)
            case "PREFERRED" | "UNCLEAN":  # one write per partition it names: a second is another event's (seed 124: a
                # controlled shutdown right after)
                return key in cause.partitions and newest and self.written_for.get(key) != cause.event["event_id"]
            case _:
                return False

    def _request(self, txn: ZkTxn, key: tuple[str, int], before: PartitionState,
                 after: PartitionState) -> Cause | None:
        """A controller decision with no znode input before it: the request that caused it, by its shape."""
        if key[0] in self.deleting:
            return None
        topic = self.topics.get(key[0])
        replicas = topic.replicas.get(key[1], ()) if topic else ()
        dropped = [b for b in before.isr if b not in after.isr]
        if len(dropped) == 1 and dropped[0] in self.brokers and after.leader != dropped[0] and \
                (before.leader == dropped[0] or after.leader == before.leader):
            broker = dropped[0]
            event = self.event(txn, "BrokerChange", f"-{broker}", broker_id=broker, change="CONTROLLED_SHUTDOWN",
                                broker_epoch=self.brokers[broker])
            self.shutdown_attempts[broker] = self.shutdown_attempts.get(broker, 0) + 1
            return self.cause(Cause(event, "CONTROLLED_SHUTDOWN", broker))
        if after.leader != before.leader and after.leader >= 0:
            # Preferred: the first replica, from the ISR, which stays; unclean: a replica outside the ISR, alone in it.
            kind = "PREFERRED" if not dropped and replicas and after.leader == replicas[0] and \
                after.leader in before.isr else \
                "UNCLEAN" if after.leader not in before.isr and after.isr == (after.leader,) else None
            if kind is None:
                return None
            last = self.causes[-1] if self.causes else None
            if last is not None and last.kind == kind and last.last_write is not None and \
                    follows_on(txn, *last.last_write):
                # One admin election's writes, however many (seed 124): pipelined, consecutive cxids of the
                # controller's session (a later election reads the states first, seed 50).
                last.event["partitions"].append({"topic": key[0], "partition": key[1]})
                return last
            event = self.event(txn, "ElectLeaders", election_type=kind,
                                partitions=[{"topic": key[0], "partition": key[1]}])
            return self.cause(Cause(event, kind))
        if self._started(key, before, after):
            # A reassignment to the target in progress, asked for again through the Admin API: the controller starts
            # it over (the bump) and writes no assignment, which is unchanged (seed 140).
            target = (self.topics.get(key[0]) or TopicAssignment({})).target(key[1])
            event = self.event(txn, "ReassignPartitions", f"-{key[0]}-{key[1]}", partitions=[
                {"topic": key[0], "partition": key[1], "replicas": list(target)}])
            return self.cause(Cause(event, "PARTITIONS", partitions={key}))
        return None

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

