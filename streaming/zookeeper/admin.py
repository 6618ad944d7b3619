"""What the admin tools write (Kafka's AdminZkClient): requests under `/admin/`, and configs under `/config/`.

- `create /admin/delete_topics/T` -> DeleteTopic; `/admin/reassign_partitions` -> ReassignPartitions;
  `/admin/preferred_replica_election` -> ElectLeaders PREFERRED.
- `/config/topics/T` -> AlterTopicConfig (a topic being created: its CreateTopic carries them);
  `/config/brokers/<default>` -> AlterTopicConfig of each topic without its own value of a default the rules read.
"""

from __future__ import annotations

import json
from typing import Any

from statemachine.visit_order import reassignment_order
from streaming.zookeeper.context import BROKER_DEFAULTS, INHERITED, Cause, Context, controllers_write, event_zxid
from streaming.zookeeper.txnlog import ZkTxn, ZnodeOp


def config_change(ctx: Context, txn: ZkTxn, op: ZnodeOp) -> None:
    """A write of `/config/topics/T` or of `/config/brokers/<default>`."""
    if op.kind not in ("create", "setData", "delete"):
        return
    values = {} if op.kind == "delete" else dict(json.loads(op.data or b"{}").get("config", {}))
    if op.path == BROKER_DEFAULTS:
        changed = {k: values.get(k) for k in INHERITED if values.get(k) != ctx.cluster_configs.get(k)}
        ctx.cluster_configs = values
        for topic in sorted(ctx.topics):
            own = {k: v for k, v in changed.items() if k not in ctx.configs.get(topic, {})}
            if own:
                _config_event(ctx, txn, topic, own, f"-{topic}")
        return
    topic = op.path.split("/")[3]
    old = ctx.configs.get(topic, {})
    ctx.configs[topic] = values
    if topic not in ctx.topics:
        return  # a topic being created: its CreateTopic carries them
    changed = {k: v for k, v in values.items() if old.get(k) != v}
    for k in old.keys() - values.keys():
        changed[k] = ctx.cluster_configs.get(k) if k in INHERITED else None
    if changed:
        _config_event(ctx, txn, topic, changed)


def _config_event(ctx: Context, txn: ZkTxn, topic: str, configs: dict[str, str | None], suffix: str = "") -> None:
    event = ctx.event(txn, "AlterTopicConfig", suffix, topic=topic, configs=configs)
    ctx.cause(Cause(event, "CONFIG", topic=topic))


def admin_request(ctx: Context, txn: ZkTxn, op: ZnodeOp) -> None:
    """A write under `/admin/`."""
    path = op.path
    if path.startswith("/admin/delete_topics/"):
        topic = path.rsplit("/", 1)[1]
        if op.kind == "create" and topic in ctx.topics and topic not in ctx.deleting and ctx.controller_session is None:
            ctx.deleting.add(topic)
            ctx.unread_deletions.add(topic)  # no controller to read it: the next one's failover does (seed 1333)
        elif op.kind == "create" and topic in ctx.topics and topic not in ctx.deleting:
            _deletion_asked(ctx, txn, topic)
        elif op.kind == "delete":
            ctx.deleting.discard(topic)
            ctx.unread_deletions.discard(topic)
    elif path == "/admin/reassign_partitions":
        if op.kind != "create" and controllers_write(txn):
            _znode_rewritten(ctx, txn)
        if op.kind == "delete":
            ctx.znode_reassignments.clear()
            return
        wanted = {(p["topic"], p["partition"]): tuple(p["replicas"])
                  for p in json.loads(op.data or b"{}").get("partitions", [])}
        new = {k: r for k, r in wanted.items() if ctx.znode_reassignments.get(k) != r}
        ctx.znode_reassignments = wanted
        if op.kind == "create" and new and ctx.controller_session is None:
            ctx.unread_reassignments = new  # no controller to handle it: the next one's failover reads it
        elif op.kind == "create" and new:
            _znode_reassignment(ctx, txn, new)
    elif path == "/admin/preferred_replica_election" and op.kind == "create":
        refs = sorted({(p["topic"], p["partition"]) for p in json.loads(op.data or b"{}").get("partitions", [])})
        event = ctx.event(txn, "ElectLeaders", election_type="PREFERRED",
                          partitions=[{"topic": t, "partition": p} for t, p in refs])
        ctx.cause(Cause(event, "PREFERRED", partitions=set(refs)))


def _deletion_asked(ctx: Context, txn: ZkTxn, topic: str) -> None:
    """`/admin/delete_topics/T` created. One DeleteTopics names several topics: the broker creates their znodes one
    after the other, and the controller's TopicDeletion event reads every one there by then (processTopicDeletion),
    queuing them in one onTopicDeletion. With the brokers' controller.log, a request is read with the one before it
    that the same logged read found new (seed 304: t0 read alone, then t2 and t3; seed 308: t4 alone, then t6, t7
    and t1, t6's znode written before the controller's first write for t4); without, with the ones the controller
    had not started on (no write since them; seed 301: t4 and t2 read as one)."""
    ctx.deleting.add(topic)
    event = ctx.event(txn, "DeleteTopic", f"-{topic}", topic=topic, **_late_answers(ctx, topic))
    queued = [c for c in ctx.causes if c.kind == "DELETE" and c.topic is not None and
              event_zxid(c.event) > ctx.controller_wrote_at]
    if ctx.logged_deletions:  # the request, not handled yet, that the same logged read found new
        read = next((r for r in ctx.logged_deletions if topic in r), frozenset())
        batch = next((c for c in ctx.causes if c.kind == "DELETE" and c.topic in read and not c.wrote), None)
    else:
        batch = queued[0] if queued else None
    if batch is None:
        ctx.cause(Cause(event, "DELETE", topic=topic, queued_with=tuple(str(c.topic) for c in queued)))
        return
    batch.joined.append(event)
    _group(batch)


def _late_answers(ctx: Context, topic: str) -> dict[str, Any]:
    """With the brokers' controller.log: the StopReplica answers to a read's deletion that the controller logged after
    a later read (TopicDeletionStopReplicaResponseReceived, queued behind that read's TopicDeletion event). The
    earlier read's events leave them out (`stop_replica_answered` false: its replicas stay ReplicaDeletionStarted), the
    later read's bring them after its own onTopicDeletion (`stop_replica_answers`): their resumeDeletions retries the
    failed replicas of both reads' topics (seed 1042: t4 read alone, then t0 and t1 on dead broker 3, whose retries
    came with broker 1's answer for t4). And the KAFKA_STORAGE_ERROR answers to the read's own StopReplica (delete)
    (`storage_error_answers`: seed 1274, broker 2's dir failed as it deleted t2-0); when that broker's log dir
    notification was handled before the read's other answers, those go with the notification (seed 1412)."""
    read = ctx.deletion_read_of(topic)
    late = ctx.reads.late_answers.get(ctx.controller_epoch, {})
    if read is None:
        return {}
    fields: dict[str, Any] = {}
    if any(topic in topics for later, topics in late.items() if later > read):
        fields["stop_replica_answered"] = False
    if read in late:
        fields["stop_replica_answers"] = sorted(late[read])
    failed = ctx.reads.storage_error_answers.get(ctx.controller_epoch, {}).get(read)
    if failed:  # a log dir that failed as the broker deleted the replica (seed 1274)
        fields["storage_error_answers"] = {str(b): [{"topic": t, "partition": p} for t, p in sorted(keys)]
                                           for b, keys in sorted(failed.items())}
        if ctx.reads.notified_before_answers.get(ctx.controller_epoch, {}).get(read):
            # its notification came before the other answers, which go with it (`deletion_answers`, seed 1412)
            fields["stop_replica_answered"] = False
    return fields


def read_with_later_request(ctx: Context, txn: ZkTxn, later: Cause) -> None:
    """At a deletion request's first write, without the controller's log: the requests read as the earlier
    request's that the earlier one's writes show it did not read, read by this one's. onPartitionDeletion takes every
    live replica of its read's topics offline in one pass, broker by broker, before the controller handles anything
    else: a topic queued with the earlier request that has a live replica in an ISR and none of whose partitions it
    wrote came after its read (seed 310: one DeleteTopics of t5, t1 and t3; t1's znode came before the controller's
    first write for t5, but its read took t5 alone, and t1's writes came in t3's pass). So is one whose only write
    so far is the earlier request's last, in the same broker batch as this one (pipelined: consecutive cxids): one
    broker's replicas of one pass (seed 443: t4 read alone, t2 with t3, t2-1's write just before t3-1's)."""
    if ctx.logged_deletions:
        return
    for earlier in ctx.causes:
        if earlier is later:
            continue
        batch_row = _in_later_batch(ctx, txn, earlier, later)
        if not (unread := [*_unread(ctx, earlier), *(batch_row[0] if batch_row else [])]):
            continue
        first, *rest = sorted([*unread, later.event, *later.joined], key=event_zxid)
        later.event, later.joined, later.topic = first, rest, first["topic"]
        _group(later)
        if batch_row:
            batch_row[1]["cause_event_id"] = first["event_id"]


def read_after_isr_change(ctx: Context) -> None:
    """A leader's AlterPartition the controller wrote after a deletion request's first write: it handled that
    request's TopicDeletion event whole before (onPartitionDeletion's one pass), so the requests queued with it of
    whose topics it wrote nothing were not in its read; the controller's next read of /admin/delete_topics took them,
    after this change (seed 411: t4's znode, then t6's and t3's; t4-0 written, then t3-2's AlterPartition, then t6
    and t3 deleted). Their events move after it, as one read's. Without the controller's log only, and not once a
    follower has handed them out."""
    if ctx.logged_deletions:
        return
    events = ctx.result.events
    for earlier in ctx.causes:
        if earlier.kind != "DELETE" or any(ctx.event_at(e) is None for e in earlier.joined) or \
                not (unread := _unread(ctx, earlier)):
            continue
        for event in unread:
            events.remove(event)
        events.extend(unread)
        first, *rest = sorted(unread, key=event_zxid)
        _group(ctx.cause(Cause(first, "DELETE", topic=first["topic"], joined=rest)))


def _in_later_batch(ctx: Context, txn: ZkTxn, earlier: Cause, later: Cause
                    ) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
    """The request joined to `earlier` of whose topic `earlier`'s last write, pipelined with `txn` (the first write
    of `later`), is the only one: that write was `later`'s, and the request its read's. The request leaves `earlier`,
    the write goes to `later`; returns the request and the write's row (still to hand out)."""
    if earlier.kind != "DELETE" or not earlier.pipelined(txn):
        return None
    rows = [r for r in ctx.result.observed if r["cause_event_id"] == earlier.event["event_id"]]
    if not rows or rows[-1]["source_offset"] != earlier.last_zxid:
        return None
    last = rows[-1]
    moved = [e for e in earlier.joined if e["topic"] == last["topic"]]
    if not moved or sum(r["topic"] == last["topic"] for r in rows) > 1:
        return None
    earlier.joined = [e for e in earlier.joined if e not in moved]
    earlier.partitions.discard((last["topic"], last["partition"]))
    later.partitions.add((last["topic"], last["partition"]))
    _group(earlier)
    return moved, last


def _unread(ctx: Context, earlier: Cause) -> list[dict[str, Any]]:
    """The requests joined to a deletion request that has written, whose topics its read did not take: none of their
    partitions written, one with a live replica in its ISR (onPartitionDeletion takes every live replica of its
    read's topics offline in one pass, broker by broker, before the controller handles anything else). They leave
    `earlier`."""
    if earlier.kind != "DELETE" or not earlier.wrote or not earlier.joined:
        return []
    written = {t for t, _ in earlier.partitions}
    unread = [e for e in earlier.joined if e["topic"] not in written and any(
        set(state.isr) & set(ctx.brokers) for (t, _), state in ctx.states.items() if t == e["topic"])]
    if unread:
        earlier.joined = [e for e in earlier.joined if e not in unread]
        _group(earlier)
    return unread


def _group(deletion: Cause) -> None:
    """The DeleteTopic events of one read of /admin/delete_topics each name all its topics (none when it took one)."""
    topics = sorted(deletion.read_topics)
    for event in (deletion.event, *deletion.joined):
        if len(topics) > 1:
            event["topics"] = topics
        else:
            event.pop("topics", None)


def deletions_left_unanswered(ctx: Context) -> None:
    """The controller's session ended (its broker stopped) while a deletion it started, every replica of it on a live
    broker, still had its topic's znodes: the StopReplica answers, which would have completed it
    (TopicDeletionStopReplicaResponseReceived -> completeDeleteTopic), never came back to it. The next controller
    finds the topic still being deleted (deletion-cut-short: the deletion asked of controller 3 just before its
    broker's controlled shutdown). Each DeleteTopic event of that read says so. Not when a replica of its topics is
    in a failed log dir: that deletion never completes, answered or not (seed 460: t2-0 on broker 3)."""
    for cause in ctx.causes:
        if cause.kind != "DELETE" or not cause.wrote or event_zxid(cause.event) < ctx.controller_since or \
                not cause.read_topics <= set(ctx.topics):
            continue
        replicas = {(b, (t, p)) for t in cause.read_topics for p, r in ctx.topics[t].replicas.items() for b in r}
        if all(b in ctx.brokers and key not in ctx.failed_replicas.get(b, ()) for b, key in replicas):
            for event in (cause.event, *cause.joined):
                event["stop_replica_answered"] = False


def reassignment_left_unread(ctx: Context) -> None:
    """The controller's session ended (its broker died) with the newest event a reassignment asked through the
    znode that it wrote nothing for: it never read it (a reassignment's start writes its assignment first); the
    next controller's failover does (seed 302: the znode written 0.3 s before the dead controller's session
    expired)."""
    newest = ctx.causes[-1] if ctx.causes else None
    if newest is None or newest.wrote or newest.last_zxid or not newest.event.get("through_znode") or \
            ctx.newest_event is not newest.event:
        return
    ctx.retract(newest)
    ctx.unread_reassignments = {(m["topic"], m["partition"]): tuple(m["replicas"])
                                for m in newest.event["partitions"]}


def _znode_rewritten(ctx: Context, txn: ZkTxn) -> None:
    """The controller's rewrite or delete of /admin/reassign_partitions (B7: a completed partition out of it) is a
    write for the reassignment asked through it, which it read then, also when it wrote nothing else for it: a
    partition reassigned to the replicas it has, offline (no leader to move, the assignment rewritten unchanged;
    seed 1555, Kafka 2.8.2: t0-0 and t1-1, both leaderless, reassigned in place; the controller's session ended
    40 s later, and the reassignment had been read all the same, its UpdateMetadata sent)."""
    cause = next((c for c in reversed(ctx.causes) if c.kind == "PARTITIONS" and c.event.get("through_znode")), None)
    if cause is not None and not cause.last_zxid:
        cause.last_zxid = txn.zxid


def reassignment_read_at_failover(ctx: Context, txn: ZkTxn, topic: str) -> None:
    """The controller's write of `/brokers/topics/T` starting a reassignment asked through the znode while no
    controller read it: the new controller's failover read it after its state machines started
    (initializePartitionReassignments, processZkPartitionReassignment), its event from that first write on (the
    failover's own writes before it are the ControllerChange's)."""
    failover = ctx.newest_failover()
    if any(t == topic for t, _ in ctx.unread_reassignments) and ctx.znode_reassignments:
        cause = _znode_reassignment(ctx, txn, ctx.unread_reassignments, "-reassign_partitions")
        ctx.unread_reassignments = {}
    else:
        # Asked while the failover was under way (the znode's watch is set at its start): the failover read it
        # itself when its first write comes before the failover's last (seed 1108: t1-1 and t2-1 written before the
        # failover resumed t0-0's reassignment, and before the answer to its LeaderAndIsr came).
        cause = next((c for c in reversed(ctx.causes) if c.kind == "PARTITIONS" and c.event.get("through_znode")
                      and any(t == topic for t, _ in c.partitions)), None)
        if cause is None or failover is None or failover.finished or cause.wrote or cause.within is not None or \
                not ctx.controller_since <= event_zxid(failover.event) < event_zxid(cause.event):
            return
    # The failover goes on after it: the reassignments in progress it resumes (maybeResumeReassignments, also of
    # a topic being deleted: seed 302), the deletions, the preferred elections, and only then the answers to its
    # requests (LeaderAndIsrResponseReceived, queued behind it).
    cause.within = failover
    if failover is not None:
        cause.event["read_at_failover"] = True
        failover.event["reads_reassignment_znode"] = True


def completion_threw(ctx: Context, moves: dict[tuple[str, int], tuple[int, ...]]) -> None:
    """The partitions of a reassignment that adds and removes nothing (to the replicas they have, maybe reordered)
    and that never had a leader (no state znode): the controller completes such a reassignment at once, and the
    completion throws reading the leader it has not got (onPartitionReassignment B3,
    moveReassignedPartitionLeaderIfRequired). The partition stays in its partitionsBeingReassigned, the znode
    drops it: a startup of one of its replicas' brokers elects it and completes the reassignment then, a leader
    epoch bump of the startup's (seed 1497: t5-1 reassigned to [3] while broker 3 was down)."""
    for (topic, partition), target in moves.items():
        assignment = ctx.topics.get(topic)
        if assignment is not None and topic not in ctx.deleting and (topic, partition) not in ctx.states and \
                not assignment.reassigning(partition) and set(target) == set(assignment.replicas.get(partition, ())):
            ctx.reassigning_in_memory.add((topic, partition))


def _znode_reassignment(ctx: Context, txn: ZkTxn, moves: dict[tuple[str, int], tuple[int, ...]],
                        suffix: str = "") -> Cause:
    completion_threw(ctx, moves)
    # In the order the controller starts them (its mutable.HashMap of the znode's partitions; seed 303).
    event = ctx.event(txn, "ReassignPartitions", suffix, through_znode=True, partitions=[
        {"topic": t, "partition": p, "replicas": list(moves[(t, p)])} for t, p in reassignment_order(moves)])
    return ctx.cause(Cause(event, "PARTITIONS", partitions=set(moves)))
