"""Read the control requests out of a ZooKeeper-mode broker's `state-change.log` (the `state.change.logger` at TRACE,
in Kafka's log4j layout `[time] LEVEL message (logger)`): what the controller sent, and what a broker received.

The controller (Kafka 3.9's ControllerChannelManager) logs, per batch and per target broker:
- LeaderAndIsr: one TRACE line per partition, `Sending become-leader|become-follower LeaderAndIsr request
  LeaderAndIsrPartitionState(...) to broker B for partition T-P`, then the INFO summary `Sending LeaderAndIsr request
  to broker B with X become-leader and Y become-follower partitions`;
- UpdateMetadata: only the INFO `Sending UpdateMetadata request to brokers HashSet(B, ...) for N partitions` (one
  request per broker named; the partitions are not listed: the receivers list them);
- StopReplica: one TRACE line per partition, `Sending StopReplica request StopReplicaPartitionState(...) to broker B
  for partition T-P`, then the INFO `Sending StopReplica request for N replicas to broker B` (inter.broker.protocol
  2.6 and later) or `Sending StopReplica request (delete = true|false) for N replicas to broker B` (earlier: one
  request per flag);
- each response, at TRACE: `Received response ...ResponseData(...) for request TYPE with correlation id N sent to
  broker host:port (id: B rack: R)`. Only responses name the correlation id on this side: they are kept as records of
  their own, not matched to requests (a request to a broker that died is never answered).

A broker (ReplicaManager, ZkMetadataCache) logs what it received, each line naming the controller, its epoch and the
correlation id: `Received LeaderAndIsr request LeaderAndIsrPartitionState(...) correlation id N from controller C
epoch E`, `Cached leader info UpdateMetadataPartitionState(...) for partition T-P in response to UpdateMetadata
request sent by controller C epoch E with correlation id N` (and `Deleted partition T-P ...`), `Received StopReplica
request StopReplicaPartitionState(...) correlation id N from controller C epoch E for partition T-P`.

Every other line (state machine changes, stack traces, ...) is counted, not read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, TypeVar

LEADER_AND_ISR, UPDATE_METADATA, STOP_REPLICA = "LEADER_AND_ISR", "UPDATE_METADATA", "STOP_REPLICA"
_LINE = re.compile(r"^\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (?P<level>[A-Z]+) "
                   r"\[(?P<who>Controller|Broker) id=(?P<id>\d+)(?: epoch=(?P<epoch>\d+))?\] (?P<msg>.*?)"
                   r"(?: \(state\.change\.logger\))?$")
_STATE = r"(?P<state>\w+PartitionState\(.*?\))"
_TP = r"(?P<topic>.+)-(?P<partition>\d+)"
_FROM = r"from controller (?P<controller>\d+) epoch (?P<cepoch>\d+)"
# The controller's lines.
_SEND_LAI = re.compile(rf"^Sending (?P<become>become-leader|become-follower) LeaderAndIsr request {_STATE} "
                       rf"to broker (?P<broker>\d+) for partition {_TP}$")
_SENT_LAI = re.compile(r"^Sending LeaderAndIsr request to broker (?P<broker>\d+) with (?P<leaders>\d+) "
                       r"become-leader and (?P<followers>\d+) become-follower partitions$")
_SENT_UM = re.compile(r"^Sending UpdateMetadata request to brokers \w*\((?P<brokers>[\d, ]*)\) "
                      r"for (?P<count>\d+) partitions$")
_SEND_SR = re.compile(rf"^Sending StopReplica request {_STATE} to broker (?P<broker>\d+) for partition {_TP}$")
_SENT_SR = re.compile(r"^Sending StopReplica request (?:\(delete = (?P<delete>true|false)\) )?for (?P<count>\d+) "
                      r"replicas to broker (?P<broker>\d+)$")
_RESPONSE = re.compile(r"^Received response (?P<body>\w+ResponseData\(.*\)) for request (?P<type>\w+) with "
                       r"correlation id (?P<correlation>\d+) sent to broker \S+ \(id: (?P<broker>\d+) rack: .*\)$")
# A broker's lines.
_GOT_LAI = re.compile(rf"^Received LeaderAndIsr request {_STATE} correlation id (?P<correlation>\d+) {_FROM}$")
_UM_REQUEST = (r" in response to UpdateMetadata request sent by controller (?P<controller>\d+) epoch (?P<cepoch>\d+) "
               r"with correlation id (?P<correlation>\d+)$")
_GOT_UM = re.compile(rf"^(?:Cached leader info {_STATE} for partition {_TP}"
                     r"|Deleted partition (?P<d_topic>.+)-(?P<d_partition>\d+) from metadata cache)" + _UM_REQUEST)
_GOT_UM_DONE = re.compile(r"^Add (?P<added>\d+) partitions and deleted (?P<deleted>\d+) partitions from metadata "
                          r"cache" + _UM_REQUEST)
# Logged before a request's partition lines: the start of a request, also when the correlation id repeats (the
# controller numbers its requests to a broker from 0 again when that broker comes back).
_HANDLING = re.compile(r"^Handling (?P<type>LeaderAndIsr|StopReplica) request correlationId \d+ from controller \d+ "
                       r"for (?P<count>\d+) partitions$")
_GOT_SR = re.compile(rf"^Received StopReplica request {_STATE} correlation id (?P<correlation>\d+) {_FROM} "
                     rf"for partition {_TP}$")
_FIELD = re.compile(r"(\w+)=(\[[^\]]*\]|'[^']*'|[^,)]*)")
_ERROR_CODE = re.compile(r"errorCode=(-?\d+)")


@dataclass(frozen=True, slots=True)
class PartitionInRequest:
    """One partition's state in a request, as Kafka's PartitionState of that request spells it."""

    topic: str
    partition: int
    leader: int | None = None  # StopReplica names no leader
    leader_epoch: int | None = None  # StopReplica: -2 while the topic is being deleted
    isr: tuple[int, ...] = ()
    # The state znode's version: partitionEpoch (LeaderAndIsr), zkVersion (UpdateMetadata).
    zk_version: int | None = None
    replicas: tuple[int, ...] = ()
    controller_epoch: int | None = None  # the epoch of the controller that wrote this state
    is_new: bool | None = None  # LeaderAndIsr: the replica is new (no log to truncate)
    delete: bool | None = None  # StopReplica's deletePartition; UpdateMetadata: the partition was deleted
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()
    leader_recovery_state: int | None = None
    become: str | None = None  # LeaderAndIsr sent: "leader" or "follower" for the target broker


@dataclass(frozen=True, slots=True)
class ControlRequest:
    """One request from the controller to a broker: `direction` "sent" (the controller's log) or "received" (the
    broker's log)."""

    request: str  # LEADER_AND_ISR | UPDATE_METADATA | STOP_REPLICA
    direction: str
    controller_id: int
    controller_epoch: int
    broker: int  # the broker it went to
    time: datetime  # the first line's log time (the JVM's local time)
    partitions: tuple[PartitionInRequest, ...] = ()
    correlation_id: int | None = None  # named on the receiving side only
    # What the controller's summary line counts: for UpdateMetadata the only trace of its partitions on that side.
    partition_count: int | None = None
    delete: bool | None = None  # a StopReplica request before version 3 carries one flag for all its partitions


@dataclass(frozen=True, slots=True)
class ControlResponse:
    """A broker's answer as the controller logged it."""

    request: str
    controller_id: int
    controller_epoch: int
    broker: int
    correlation_id: int
    error_code: int  # the top-level errorCode
    time: datetime


@dataclass
class StateChangeLog:
    requests: list[ControlRequest] = field(default_factory=list)
    responses: list[ControlResponse] = field(default_factory=list)
    other_lines: int = 0  # state.change.logger lines that are not requests, and continuation lines


@dataclass
class _Received:
    """A broker handles the requests of one type one at a time: the open one per type (its index in the requests),
    extended while the lines name the same controller, epoch and correlation id; and the partition count its
    `Handling ...` line announced for the next one."""

    open: dict[str, int] = field(default_factory=dict)
    count: dict[str, int] = field(default_factory=dict)


def broker_ids(text: str) -> tuple[int, ...]:
    """Broker ids as Kafka logs them: `1,2,3`, `[1, 2, 3]` or empty."""
    return tuple(int(x) for x in text.strip("[]").split(",") if x.strip())


def _partition_state(text: str, topic: str | None = None, partition: int | None = None) -> PartitionInRequest:
    """A `...PartitionState(key=value, ...)` text (Kafka's generated toString) as a record; StopReplica's names neither
    topic nor partition: the line does."""
    f = {k: v.strip("'") for k, v in _FIELD.findall(text)}

    def num(*keys: str) -> int | None:
        return next((int(f[k]) for k in keys if k in f), None)

    index = partition if partition is not None else int(f["partitionIndex"])

    def flag(key: str) -> bool | None:
        return None if key not in f else f[key] == "true"

    return PartitionInRequest(
        topic=f.get("topicName") or topic or "", partition=index,
        leader=num("leader"), leader_epoch=num("leaderEpoch"), isr=broker_ids(f.get("isr", "")),
        zk_version=num("partitionEpoch", "zkVersion"), replicas=broker_ids(f.get("replicas", "")),
        controller_epoch=num("controllerEpoch"), is_new=flag("isNew"), delete=flag("deletePartition"),
        adding_replicas=broker_ids(f.get("addingReplicas", "")),
        removing_replicas=broker_ids(f.get("removingReplicas", "")),
        offline_replicas=broker_ids(f.get("offlineReplicas", "")), leader_recovery_state=num("leaderRecoveryState"))


def log_time(text: str) -> datetime:
    """The time of a line in Kafka's log4j layout (`2026-11-25 12:48:32,601`)."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f")


def epoch_ms(at: datetime) -> int:
    """A log line's time in ms since the epoch, read as UTC (as ZooKeeper's transaction times are)."""
    return int(at.replace(tzinfo=UTC).timestamp() * 1000)


class CountsOtherLines(Protocol):
    other_lines: int


Read = TypeVar("Read", bound=CountsOtherLines)


def layout_lines(lines: Iterable[str], layout: re.Pattern[str], out: CountsOtherLines) -> Iterator[re.Match[str]]:
    """The lines of one logger in Kafka's log4j layout (`layout`: `[time] LEVEL message (logger)`), each matched;
    the others are counted in `out.other_lines`."""
    for raw in lines:
        m = layout.match(raw.rstrip("\n"))
        if m is None:
            out.other_lines += 1
        else:
            yield m


def read_broker_logs(folder: Path, parse: Callable[[Iterable[str], Read], Read], out: Read) -> Read:
    """`parse` each `*.log` of `folder` (one log per broker, as `broker-N.log`) into `out`."""
    for path in sorted(folder.glob("*.log")):
        with open(path, encoding="utf-8", errors="replace") as f:
            parse(f, out)
    return out


def parse_state_change_log(lines: Iterable[str]) -> StateChangeLog:
    """The requests and responses in a state-change.log's lines, in the order of their first line."""
    out = StateChangeLog()
    # The controller's per-partition lines wait for the summary line that sends them: (controller, epoch, type,
    # broker) -> partitions.
    pending: dict[tuple[int, int, str, int], list[PartitionInRequest]] = {}
    received = _Received()
    for raw in lines:
        m = _LINE.match(raw.rstrip("\n"))
        if m is None:
            out.other_lines += 1
            continue
        msg, at, node = m["msg"], log_time(m["time"]), int(m["id"])
        if m["who"] == "Controller":
            epoch = int(m["epoch"] or -1)
            if not _controller_line(out, pending, msg, at, node, epoch):
                out.other_lines += 1
        elif not _broker_line(out, received, msg, at, node):
            out.other_lines += 1
    return out


def _controller_line(out: StateChangeLog, pending: dict[tuple[int, int, str, int], list[PartitionInRequest]],
                     msg: str, at: datetime, controller: int, epoch: int) -> bool:
    if s := _SEND_LAI.match(msg):
        state = replace(_partition_state(s["state"], s["topic"], int(s["partition"])),
                        become=s["become"].removeprefix("become-"))
        pending.setdefault((controller, epoch, LEADER_AND_ISR, int(s["broker"])), []).append(state)
        return True
    if s := _SEND_SR.match(msg):
        state = _partition_state(s["state"], s["topic"], int(s["partition"]))
        pending.setdefault((controller, epoch, STOP_REPLICA, int(s["broker"])), []).append(state)
        return True
    if s := _SENT_LAI.match(msg):
        broker = int(s["broker"])
        parts = pending.pop((controller, epoch, LEADER_AND_ISR, broker), [])
        out.requests.append(ControlRequest(LEADER_AND_ISR, "sent", controller, epoch, broker, at, tuple(parts),
                                           partition_count=int(s["leaders"]) + int(s["followers"])))
        return True
    if s := _SENT_UM.match(msg):
        for broker in broker_ids(s["brokers"]):
            out.requests.append(ControlRequest(UPDATE_METADATA, "sent", controller, epoch, broker, at,
                                               partition_count=int(s["count"])))
        return True
    if s := _SENT_SR.match(msg):
        broker, key = int(s["broker"]), (controller, epoch, STOP_REPLICA, int(s["broker"]))
        delete = None if s["delete"] is None else s["delete"] == "true"
        waiting = pending.pop(key, [])
        # Before version 3 the partitions of one batch go in two requests, one per deletePartition flag.
        parts = [p for p in waiting if delete is None or p.delete == delete]
        if rest := [p for p in waiting if p not in parts]:
            pending[key] = rest
        out.requests.append(ControlRequest(STOP_REPLICA, "sent", controller, epoch, broker, at, tuple(parts),
                                           partition_count=int(s["count"]), delete=delete))
        return True
    if s := _RESPONSE.match(msg):
        code = _ERROR_CODE.search(s["body"])
        out.responses.append(ControlResponse(s["type"], controller, epoch, int(s["broker"]), int(s["correlation"]),
                                             int(code.group(1)) if code else 0, at))
        return True
    return False


def _broker_line(out: StateChangeLog, received: _Received, msg: str, at: datetime, broker: int) -> bool:
    if s := _HANDLING.match(msg):
        kind = LEADER_AND_ISR if s["type"] == "LeaderAndIsr" else STOP_REPLICA
        received.open.pop(kind, None)
        received.count[kind] = int(s["count"])
        return True
    state: PartitionInRequest | None = None
    if s := _GOT_LAI.match(msg):
        kind, state = LEADER_AND_ISR, _partition_state(s["state"])
    elif s := _GOT_SR.match(msg):
        kind, state = STOP_REPLICA, _partition_state(s["state"], s["topic"], int(s["partition"]))
    elif s := _GOT_UM.match(msg):
        kind = UPDATE_METADATA
        state = (_partition_state(s["state"]) if s["state"]
                 else PartitionInRequest(s["d_topic"], int(s["d_partition"]), delete=True))
    elif s := _GOT_UM_DONE.match(msg):  # after its partitions: ends the request, which may hold none
        kind = UPDATE_METADATA
        received.count[kind] = int(s["added"]) + int(s["deleted"])
    else:
        return False
    controller, epoch, correlation = int(s["controller"]), int(s["cepoch"]), int(s["correlation"])
    index = received.open.get(kind)
    current = out.requests[index] if index is not None else None
    if current is None or (current.controller_id, current.controller_epoch, current.correlation_id,
                           current.broker) != (controller, epoch, correlation, broker):
        index = received.open[kind] = len(out.requests)
        current = ControlRequest(kind, "received", controller, epoch, broker, at, correlation_id=correlation,
                                 partition_count=received.count.pop(kind, None))
        out.requests.append(current)
    if state is not None:
        out.requests[index] = replace(current, partitions=(*current.partitions, state))
    else:
        out.requests[index] = replace(current, partition_count=received.count.pop(kind, None))
        del received.open[kind]
    return True


def read_state_change_log(path: Path) -> StateChangeLog:
    with open(path, encoding="utf-8", errors="replace") as f:
        return parse_state_change_log(f)


# The controller's answer to a broker's LeaderAndIsr response naming replicas in a failed log dir (KAFKA_STORAGE_ERROR;
# processLeaderAndIsrResponseReceived, at INFO): the replicas it takes offline (streaming.zookeeper.logdirs).
_MARK = re.compile(r"^Mark replicas (?P<replicas>.*) on broker (?P<broker>\d+) as offline")
# updateLeaderEpochAndSendRequest's line after a reassignment's LeaderAndIsr batch (A1/B2; 2.6.3 to 3.5.2).
_SENT_REASSIGNMENT = re.compile(r"^Sent LeaderAndIsr request .* for partition being reassigned ")
# A mark answers the notification it follows within this long (a LeaderAndIsr round trip, on a loaded machine).
ANSWER_MS = 30_000
# A mark answers the reassignment request it follows within this long (its LeaderAndIsr, sent as it starts).
REQUEST_ANSWER_MS = 1_000


@dataclass(frozen=True)
class OfflineMark:
    """One `Mark replicas ... on broker B as offline` line of a controller's state-change.log."""

    at_ms: int  # the line's time, read as UTC like ZooKeeper's
    controller: int
    broker: int
    replicas: tuple[tuple[str, int], ...]


@dataclass
class OfflineMarks:
    """Every mark of the controllers' state-change logs, oldest first; a notification takes the first one after it."""

    marks: list[OfflineMark] = field(default_factory=list)
    other_lines: int = 0  # state.change.logger lines that are not marks
    # broker -> the times the controllers sent it a LeaderAndIsr (`Sending LeaderAndIsr request to broker B ...`),
    # not a reassignment's own (`_SENT_REASSIGNMENT`: no notification's onBrokerLogDirFailure sends those)
    asked_at: dict[int, list[int]] = field(default_factory=dict)
    logged: list[OfflineMark] = field(default_factory=list)  # every mark, also those taken, oldest first

    def answer(self, broker: int, since_ms: int, unasked: frozenset[tuple[str, int]] = frozenset(),
               reader: int | None = None) -> frozenset[tuple[str, int]] | None:
        """The replicas of `broker` marked offline in answer to a notification at `since_ms`: the first mark logged
        within ANSWER_MS after it, and those of the second before it (an answer to another LeaderAndIsr that reached
        the broker after its dir failed, before its notification: its controller's own broker, say); not a mark of
        `unasked` replicas only, which the notification's LeaderAndIsr did not name (a later request's answer: seed
        906); after it, only a mark of the controller that read it (`reader`, when known: the one that deleted it),
        whose LeaderAndIsr asked (an answer naming nothing new is not logged, and a later controller's mark answers
        another request: seed 1291). Taken: a later notification won't get them. None: no mark."""
        mine = [m for m in self.marks if m.broker == broker and not set(m.replicas) <= unasked]
        before = [m for m in mine if since_ms - 1000 <= m.at_ms < since_ms]
        after = next((m for m in mine if since_ms <= m.at_ms <= since_ms + ANSWER_MS and
                      reader in (None, m.controller)), None)
        taken = [*before, *([after] if after is not None else [])]
        if not taken:
            return None
        self.marks = [m for m in self.marks if all(m is not t for t in taken)]
        return frozenset(r for m in taken for r in m.replicas)

    def request_answer(self, broker: int, key: tuple[str, int], since_ms: int, until_ms: int,
                       notified_ms: Iterable[int] = ()) -> bool:
        """Whether a mark of `broker` naming `key` was logged between a request's start (`since_ms`) and the write
        taking the replica offline (`until_ms`): the broker's answer to that request's LeaderAndIsr, not to that of
        one of its notifications at `notified_ms` (`unasked_since`). Taken."""
        mark = next((m for m in self.marks if m.broker == broker and key in m.replicas and
                     since_ms <= m.at_ms <= until_ms and
                     all(self.unasked_since(broker, t, m.at_ms) for t in notified_ms if t <= m.at_ms)), None)
        if mark is not None:
            self.marks = [m for m in self.marks if m is not mark]
        return mark is not None

    def answer_order(self, controller: int, since_ms: int) -> list[int]:
        """The brokers in the order `controller`, elected at `since_ms`, first marked replicas of theirs offline
        within ANSWER_MS: the order their answers to its failover's LeaderAndIsr came in (also marks another lookup
        took: a notification's answer may be the failover's too). Nothing is taken."""
        order: list[int] = []
        for m in self.logged:
            if m.controller == controller and since_ms <= m.at_ms <= since_ms + ANSWER_MS and m.broker not in order:
                order.append(m.broker)
        return order

    def unasked_since(self, broker: int, since_ms: int, mark_ms: int) -> bool:
        """Whether the controllers sent `broker` no LeaderAndIsr from `since_ms` (its notification) to a mark at
        `mark_ms`: the mark answers an earlier request, not the notification, whose LeaderAndIsr came after
        (onBrokerLogDirFailure). False when the logs name no LeaderAndIsr sent (cut to the marks)."""
        asked = self.asked_at.get(broker)
        return bool(self.asked_at) and not any(since_ms <= t <= mark_ms for t in asked or ())

    def startup_answer(self, broker: int, since_ms: int, notified_ms: Iterable[int] = ()) -> frozenset[tuple[str, int]]:
        """The replicas of `broker` marked offline in answer to the LeaderAndIsr of its startup at `since_ms` (a dir
        that failed while it was down, or failed before and still does: it writes no notification for it): the
        first mark within ANSWER_MS after it, not one a notification of the broker at a time in `notified_ms` takes
        (`answer`). Taken."""
        reserved = [t for t in notified_ms if t >= since_ms]
        mark = next((m for m in self.marks if m.broker == broker and since_ms <= m.at_ms <= since_ms + ANSWER_MS
                     and not any(t - 1000 <= m.at_ms for t in reserved)), None)
        if mark is None:
            return frozenset()
        self.marks = [m for m in self.marks if m is not mark]
        return frozenset(mark.replicas)


def parse_offline_marks(lines: Iterable[str], into: OfflineMarks | None = None) -> OfflineMarks:
    """Add the marks in one state-change.log's lines to `into` (a new OfflineMarks by default), oldest first."""
    out = into if into is not None else OfflineMarks()
    batch: list[tuple[int, int]] = []  # the (broker, time) LeaderAndIsr sends of the batch being logged
    for m in layout_lines(lines, _LINE, out):
        s = _MARK.match(m["msg"]) if m["who"] == "Controller" else None
        sent = _SENT_LAI.match(m["msg"]) if s is None and m["who"] == "Controller" else None
        out.other_lines += s is None
        if s is None and sent is None:
            batch = _reassignment_batch(out, m, batch)
            continue
        at = epoch_ms(log_time(m["time"]))
        if sent is not None:
            out.asked_at.setdefault(int(sent["broker"]), []).append(at)
            batch.append((int(sent["broker"]), at))
            continue
        replicas = tuple((tp.rsplit("-", 1)[0], int(tp.rsplit("-", 1)[1])) for tp in s["replicas"].split(","))
        out.marks.append(OfflineMark(at, int(m["id"]), int(s["broker"]), replicas))
    out.marks.sort(key=lambda mark: mark.at_ms)
    out.logged = list(out.marks)
    return out


def _reassignment_batch(out: OfflineMarks, m: re.Match[str], batch: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The LeaderAndIsr sends still in the batch after line `m`: a reassignment's line after its batch takes them out
    of `asked_at` (seed 1371, Kafka 2.8.2: the reassignment of t2-0 asked broker 4 after its notification, which the
    controller handled only after the answer to t0-0's reassignment). The batch's other lines and the answers
    logged among them (another thread) keep it; any other controller line ends it."""
    if m["who"] != "Controller":
        return batch
    msg = m["msg"]
    if _SENT_REASSIGNMENT.match(msg):
        for broker, at in batch:
            out.asked_at[broker].remove(at)
        return []
    if msg.startswith(("Sending become-", "Sending UpdateMetadata request", "Received response")):
        return batch
    return []


def read_offline_marks(folder: Path) -> OfflineMarks:
    """The marks in every `*.log` of `folder` (one state-change.log per broker, as `broker-N.log`)."""
    return read_broker_logs(folder, parse_offline_marks, OfflineMarks())
