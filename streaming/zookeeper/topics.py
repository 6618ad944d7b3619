"""Topics and their assignments: `/brokers/topics/T` (each partition's replicas, and a reassignment's adding and
removing replicas).

- `create /brokers/topics/T` -> CreateTopic (with `/config/topics/T`, written just before); `setData` of it with
  more partitions -> CreatePartitions; with a partition's replicas, adding or removing changed -> ReassignPartitions
  (start, or cancel: back to the original replicas), unless it completes the reassignment in progress (the
  controller's own write after the partition states) or comes from `/admin/reassign_partitions`.
- `setData` of it unchanged by the controller -> an Admin API reassignment of a partition to the replicas it has
  (the partition the controller.log names for the write, when the brokers' logs are at hand).
- `delete` of it: the topic's deletion completed, its assignment, configs and states gone.
"""

from __future__ import annotations

from typing import Any

from streaming.zookeeper import isrchanges
from streaming.zookeeper.admin import completion_threw, reassignment_read_at_failover
from streaming.zookeeper.answers import reassignment_answers
from streaming.zookeeper.context import (
    NO_LEADER,
    Cause,
    Context,
    TopicAssignment,
    controllers_write,
    event_ms,
    event_zxid,
)
from streaming.zookeeper.statechange import epoch_ms
from streaming.zookeeper.txnlog import ZkTxn


def topic_created(ctx: Context, txn: ZkTxn, topic: str, assignment: TopicAssignment) -> None:
    if topic in ctx.topics:
        return  # in the snapshot already
    ctx.topics[topic] = assignment
    configs = ctx.topic_configs(topic)
    event = ctx.event(txn, "CreateTopic", topic=topic,
                      assignment={str(p): list(r) for p, r in sorted(assignment.replicas.items())},
                      **({"configs": configs} if configs else {}))
    ctx.created[topic] = event
    ctx.cause(Cause(event, "CREATED", topic=topic))


def partitions_created(ctx: Context, txn: ZkTxn, topic: str) -> None:
    """The controller's create of `/brokers/topics/T/partitions`: the first write of a new topic's partition states.
    One read of /brokers/topics (processTopicChange) takes every topic created since the last, in one
    onNewPartitionCreation: createTopicPartitionStatesRaw creates each of its topics' partitions znode first, one
    request after the other (pipelined: consecutive cxids), then their partitions', then their states, and the
    controller sends one batch of requests for them all. A topic whose partitions znode is the controller's next write
    after another's was read with it (a topic of its own would have its partitions' znodes written first): each of
    their CreateTopic events names them all (`topics`, in the order of the events; seed 1216: t6 and t7, created 7 ms
    apart). Not by consecutive cxids alone: the session is its broker's too, whose other threads' reads can come
    between the pipelined creates (seed 1260, Kafka 2.7.2: t3's at cxid 126, t2's at 128, the controller.log's "New
    topics: [HashSet(t3, t2)]"). Not once a follower handed one of them out."""
    event = ctx.created.get(topic)
    if not controllers_write(txn) or event is None or event["type"] != "CreateTopic":
        return
    read = ctx.creation_read
    if read is not None and txn.session == read[0] and ctx.controller_wrote_at == read[1]:
        events = [*read[2], event]
    else:
        events = [event]
    ctx.creation_read = (txn.session, txn.zxid, events)
    if any(ctx.event_at(e) is None for e in events):
        return
    if len(events) > 1:
        names = [e["topic"] for e in sorted(events, key=event_zxid)]
        for e in events:
            e["topics"] = names
    _after_failovers_read(ctx, events)


def _after_failovers_read(ctx: Context, created: list[dict[str, Any]]) -> None:
    """Topics created while a new controller's failover went on: their TopicChange is queued behind the whole
    failover, so a reassignment asked through the znode that the failover read (`read_at_failover`, an event
    after theirs when asked after them) was handled before them (seed 1108: t4 and t3 created during controller 1's
    failover, the reassignment of t1-1 and t2-1 asked 2 ms after t3; their LeaderAndIsr after its). Their events
    move after it."""
    events = ctx.result.events
    first = min(i for e in created if (i := ctx.event_at(e)) is not None)
    later = [e for e in events[first:] if not any(e is c for c in created)]
    if not later or not all(e.get("read_at_failover") for e in later):
        return
    events[first:] = [*later, *sorted(created, key=event_zxid)]


def topic_deleted(ctx: Context, topic: str) -> None:
    ctx.topics.pop(topic, None)
    ctx.reassigning_in_memory = {k for k in ctx.reassigning_in_memory if k[0] != topic}
    ctx.configs.pop(topic, None)
    for key in [k for k in ctx.states if k[0] == topic]:
        del ctx.states[key]


def topic_changed(ctx: Context, txn: ZkTxn, topic: str, new: TopicAssignment) -> None:
    old = ctx.topics.get(topic)
    if old is None:
        return
    if new != old and controllers_write(txn):
        _logged_assignment(ctx, topic)  # a write of the controller's the log names too
        reassignment_read_at_failover(ctx, txn, topic)
    ctx.topics[topic] = new
    added = sorted(set(new.replicas) - set(old.replicas))
    if added:
        event = ctx.event(txn, "CreatePartitions", topic=topic,
                          assignment={str(p): list(new.replicas[p]) for p in added})
        ctx.created[topic] = event
        ctx.cause(Cause(event, "CREATED", topic=topic))
    moves = []
    for p in sorted(set(old.replicas) & set(new.replicas)):
        if (old.replicas[p], old.adding.get(p), old.removing.get(p)) == (
                new.replicas[p], new.adding.get(p), new.removing.get(p)):
            continue
        added_at = ctx.replica_added_at.setdefault((topic, p), {})
        for b in set(added_at) - set(new.replicas[p]):
            del added_at[b]
        added_at.update({b: txn.zxid for b in new.replicas[p] if b not in old.replicas[p]})
        if old.reassigning(p) and not new.reassigning(p) and new.replicas[p] == old.target(p):
            _completed(ctx, txn, (topic, p), new.replicas[p])
            continue  # the controller completing the reassignment (after its partition writes)
        replicas = None if old.reassigning(p) and not new.reassigning(p) and new.replicas[p] == old.origin(p) \
            else list(new.target(p))
        if (topic, p) in ctx.znode_reassignments:
            _written_for_znode(ctx, txn, (topic, p))
            continue  # /admin/reassign_partitions asked for it: its event
        isrchanges.taken_by_request(ctx, txn, (topic, p), old)
        moves.append({"topic": topic, "partition": p, "replicas": replicas})
    if moves:
        completion_threw(ctx, {(topic, m["partition"]): tuple(m["replicas"]) for m in moves if m["replicas"]})
        _reassignment(ctx, txn, moves, f"-{topic}", done=False, joins=controllers_write(txn))
    elif new == old and txn.session == ctx.controller_session:
        _reassigned_in_place(ctx, txn, topic, _logged_assignment(ctx, topic))


def _written_for_znode(ctx: Context, txn: ZkTxn, key: tuple[str, int]) -> None:
    """The controller's write of a partition's assignment for the reassignment asked through the znode that names it
    (onPartitionReassignment's updateCurrentReassignment, U1, before A1 or B3): that event's newest write, as a
    partition state write is. Its next write of the partition follows it whatever a leader wrote of its own in
    between (below protocol 2.7): a reassignment in place (the replicas reordered, every target in the ISR) is not
    reassigning once written, and its bump (B3) is the event's only as the controller's next write after it (seed
    1118: t1-1 from [3, 1, 2] to [1, 3, 2] right after t2-3's start, whose leader wrote its ISR between t1-1's
    assignment and its bump)."""
    if not controllers_write(txn):
        return
    cause = next((c for c in reversed(ctx.causes)
                  if c.kind == "PARTITIONS" and c.event.get("through_znode") and key in c.partitions), None)
    if cause is not None:
        cause.last_zxid = txn.zxid


def _logged_assignment(ctx: Context, topic: str) -> int | None:
    """The partition the controller's next logged assignment write names, when it is of `topic` (its
    controller.log; None without one)."""
    if not ctx.logged_assignments or ctx.logged_assignments[0][0] != topic:
        return None
    return ctx.logged_assignments.pop(0)[1]


def _reassignment(ctx: Context, txn: ZkTxn, moves: list[dict[str, Any]], suffix: str, done: bool,
                  bump: int | None = None, joins: bool = True) -> dict[str, Any]:
    """The ReassignPartitions event of `moves` written by `txn`: the Admin API request the controller is handling
    when they are its next partitions (`_next_partitions_of`, unless not `joins`), else a new one (read at `bump`,
    the write the reassignment bumped, when given). `done`: a reassignment in place, complete with its one write: it
    explains no later write, nor is it one of the partitions the request may still write."""
    keys = {(m["topic"], m["partition"]) for m in moves}
    request = _next_partitions_of(ctx, txn, keys, bump) if joins else None
    if request is not None:
        request.event["partitions"] += moves
        if not done:
            request.partitions |= keys
        request.last_zxid = txn.zxid
        return request.event
    at = txn if bump is None else ZkTxn(bump, txn.time, txn.session, txn.cxid, ())
    event = ctx.event(at, "ReassignPartitions", suffix, partitions=moves)
    reassignment_answers(ctx, event, {(m["topic"], m["partition"]): ctx.topics[m["topic"]].replicas.get(
        m["partition"], ()) for m in moves if m["topic"] in ctx.topics})
    ctx.cause(Cause(event, "PARTITIONS", partitions=set() if done else keys, wrote=done, last_zxid=txn.zxid))
    return event


def _next_partitions_of(ctx: Context, txn: ZkTxn, keys: set[tuple[str, int]], bump: int | None = None
                        ) -> Cause | None:
    """The Admin API reassignment the controller is handling, when this write of it (a start's assignment, or
    the unchanged rewrite after `bump`, a reassignment in place) is of its next partitions. One
    AlterPartitionReassignments names several partitions, and the controller starts them one after the other in
    one event (maybeTriggerPartitionReassignment, onPartitionReassignment each in turn), each one's writes right
    after the last one's. Below protocol 2.7 a leader may write its ISR meanwhile: the watch on that reassigning
    partition's state queues its event (PartitionReassignmentIsrChange) behind the request, and the completion it
    allows comes after the request's last partition (seed 3 at 2.6: t3-0's leader took the new replica in while
    the controller started t4-0, t0-1 and t2-0 of the same request; read as four requests, the completion found
    the newest of them written and no event to explain it). Two requests back to back write as one does, and
    decide the same: each partition is its own onPartitionReassignment. A znode reassignment is one event
    already; a partition the request names again is another request (seeds 48, 140)."""
    request = ctx.handling(txn, bump)
    if request is None or request.kind != "PARTITIONS" or request.event.get("through_znode") or \
            any((m["topic"], m["partition"]) in keys for m in request.event["partitions"]) or \
            _broker_change_read_since(ctx, request, txn):
        return None
    return request


def _broker_change_read_since(ctx: Context, request: Cause, txn: ZkTxn) -> bool:
    """With the controllers' controller.log: a BrokerChange read logged since the request came and before `txn`:
    the controller had finished the request and handled a broker change (which may write nothing) before this
    write, another request's (seed 1584, Kafka 3.9.1 at protocol 2.6: t0-0 reassigned in place 1.3 s after broker
    2's startup, 4.3 s after the request before it; read as one request, its requests went before the startup's)."""
    since = event_ms(request.event)
    reads = ctx.reads.broker_reads.get(ctx.controller_epoch, ())
    return any(since <= epoch_ms(read.time) <= txn.time for read in reads)


def _completed(ctx: Context, txn: ZkTxn, key: tuple[str, int], target: tuple[int, ...]) -> None:
    """A reassignment's completion: the controller set the replicas to the target in memory (B2) before its
    completing writes (a leader move, the removed replicas out of the ISR) and writes /brokers/topics/T only
    after them (B6). Those writes, the last leader-epoch bumps of the event, carried the target."""
    cause = ctx.cause_of(ctx.written_for.get(key))
    if cause is not None:
        cause.last_zxid = txn.zxid
    # The partition's rows newest first, read back only as far as those writes go, not through every row out.
    rows = (r for r in reversed(ctx.result.observed) if (r["topic"], r["partition"]) == key)
    newest = later = next(rows, None)
    for earlier in rows:
        if later["cause_event_id"] != newest["cause_event_id"] or later["leader_epoch"] <= earlier["leader_epoch"]:
            break
        later.update(replicas=list(target), adding_replicas=[], removing_replicas=[])
        later = earlier


def _reassigned_in_place(ctx: Context, txn: ZkTxn, topic: str, logged: int | None) -> None:
    """/brokers/topics/T rewritten unchanged by the controller: an Admin API reassignment of a partition to the
    replicas it has. Nothing to add or remove, so the controller completes it at once: it bumps the leader epoch
    (B3, leader and ISR unchanged), then rewrites the assignment (B6). The bump, the controller's last write and
    explained by nothing before it, is that reassignment's. When the leader is not live there is no bump (its
    election fails, seeds 11 and 111): the partition is the one the controller's log names for this write
    (`logged`), or else the topic's only leaderless partition; unless the reassignment (or cancel) being handled
    is of that partition: this is its completion's rewrite (seed 102, a cancel leaving the partition leaderless).
    Nor is it when the controller's write just before it was the bump of a partition of this topic that the
    reassignment being handled names (one through the znode of several partitions, one of them in place): that
    is its B6 (seed 303 from the ZooKeeper directory alone, which took it for another partition's, leaderless)."""
    # The controller's newest state write: below protocol 2.7 a leader's own ISR write may come between the bump and
    # the rewrite (make test's smoke run of 2026-11-27: t3-0's leader, between t0-1's bump and t0's rewrite).
    last = next((r for r in reversed(ctx.result.observed) if r["source_offset"] in ctx.controller_writes), None)
    if last is not None and last["topic"] == topic and last["cause"] == "Unexplained":
        if ctx.result.unexplained and last["source_offset"] == ctx.result.unexplained[-1]:
            _bumped_in_place(ctx, txn, topic, last)
        return  # (a follower hands its output out between polls: one already out stays as it went)
    handling = ctx.handling(txn)
    if last is not None and last["topic"] == topic and handling is not None and handling.kind == "PARTITIONS" and \
            last["cause_event_id"] == handling.event["event_id"] and last["source_offset"] == ctx.controller_wrote_at \
            and (topic, last["partition"]) in handling.partitions and not ctx.reassigning((topic, last["partition"])):
        handling.last_zxid = txn.zxid
        return
    assignment = ctx.topics[topic]
    leaderless = [p for p in sorted(assignment.replicas)
                  if (state := ctx.states.get((topic, p))) is not None and state.leader == NO_LEADER]
    partition = logged if logged is not None else (leaderless[0] if len(leaderless) == 1 else None)
    # A leader's own ISR write meanwhile (below protocol 2.7) queues its event behind the one being handled (seed
    # 1548: t0-3's leader took its target in between t1-2's start and t0-0's rewrite, one znode reassignment's).
    newest = next((c for c in reversed(ctx.causes) if c.kind != "ISR" or c.wrote), None)
    if newest is not None and newest.kind == "PARTITIONS" and (topic, partition) in newest.partitions and \
            ctx.newest(newest):
        return
    if partition in leaderless:
        move = {"topic": topic, "partition": partition, "replicas": list(assignment.replicas[partition])}
        _reassignment(ctx, txn, [move], f"-{topic}-{partition}", done=True)


def _bumped_in_place(ctx: Context, txn: ZkTxn, topic: str, last: dict[str, Any]) -> None:
    key = (topic, last["partition"])
    at = next(i for i in range(len(ctx.result.observed) - 1, -1, -1) if ctx.result.observed[i] is last)
    previous = next((r for r in reversed(ctx.result.observed[:at]) if (r["topic"], r["partition"]) == key), None)
    if previous is None or (previous["leader"], previous["isr"], previous["leader_epoch"] + 1) != (
            last["leader"], last["isr"], last["leader_epoch"]):
        return
    # Completed with its one write: it explains no later write (a second such reassignment is one of its own).
    event = _reassignment(ctx, txn, [{"topic": topic, "partition": key[1], "replicas": last["replicas"]}],
                          f"-{topic}-{key[1]}", done=True, bump=last["source_offset"])
    ctx.result.unexplained.pop()
    last.update(cause="ReassignPartitions", cause_event_id=event["event_id"])
    ctx.written_for[key] = event["event_id"]
