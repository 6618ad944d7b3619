"""Read the AlterPartition requests a leader sent, and the controller's answers, out of its `server.log` (the
`kafka.server.DefaultAlterPartitionManager` logger at DEBUG, Kafka's log4j layout `[time] LEVEL message (logger)`).

From inter.broker.protocol 2.7 on a leader asks the controller to change its ISR (AlterPartition) and the controller
writes the change, so ZooKeeper's log holds each request it accepted. One it answers with an error for every
partition (a leader epoch already fenced, a stale partition epoch, an ineligible replica) writes nothing, yet the
controller still sends an UpdateMetadata for its partitions (KafkaController.processAlterPartition): only the
leader's log names it. Each request is two lines of one broker's file, in order (a broker has one in flight):
- `Sending AlterPartition to controller AlterPartitionRequestData(brokerId=B, brokerEpoch=E, topics=[TopicData(
  topicName='T', topicId=..., partitions=[PartitionData(partitionIndex=P, leaderEpoch=L, newIsr=[...],
  newIsrWithEpochs=[BrokerState(brokerId=R, ...), ...], leaderRecoveryState=S, partitionEpoch=V), ...]), ...])`;
- `Received AlterPartition response ClientResponse(..., disconnected=false, ..., responseBody=
  AlterPartitionResponseData(throttleTimeMs=0, errorCode=0, topics=[TopicData(topicName='', topicId=...,
  partitions=[PartitionData(partitionIndex=P, errorCode=C, ...), ...]), ...]))`.

Before Kafka 3.2 the request is AlterIsr, logged by `kafka.server.DefaultAlterIsrManager` in the same two lines with
its own names: `Sending AlterIsr to controller AlterIsrRequestData(brokerId=B, brokerEpoch=E, topics=[TopicData(
name='T', partitions=[PartitionData(partitionIndex=P, leaderEpoch=L, newIsr=[...], currentIsrVersion=V), ...]),
...])` and `Received AlterIsr response ClientResponse(..., responseBody=AlterIsrResponseData(throttleTimeMs=0,
errorCode=0, topics=[TopicData(name='T', partitions=[PartitionData(partitionIndex=P, errorCode=C, ...), ...])]))`
(the partition epoch is the zkVersion, `currentIsrVersion`; no topic ids, no recovery state). Kafka 2.7 logs the
request the same way (logger `kafka.server.AlterIsrManagerImpl`) but not the response: only, when its top-level error
is none, one line per partition it names, `Controller successfully handled AlterIsr request for T-P:
PartitionData(partitionIndex=P, errorCode=C, ...)`, whatever C (AlterIsrManager.handleAlterIsrResponse at 2.7.2).
Those lines, after the broker's request in flight (one at a time), are its answer.

A request with no answer, or answered with a top-level error (not the controller, a stale broker epoch) or a
disconnect, made no UpdateMetadata and is not kept. One answered NOT_CONTROLLER for a partition, by a controller
whose cache is behind the leader's epochs (deposed, not knowing it yet), is sent again to the next controller: the
leader logs no answer for it, only its channel's `[BrokerToControllerChannelManager id=B name=alter-partition] Client
requested disconnect from node N` (INFO, NetworkClient), kept as `redirected` of the request's final answer.

The same file says when a broker asked for a controlled shutdown again (`ControlledShutdowns`): `[KafkaServer id=B]
Starting controlled shutdown` (INFO) before its first request, then before each retry `Retrying controlled shutdown
(N retries remaining)` (INFO, from Kafka 3.5) or `Retrying controlled shutdown after the previous attempt
failed...` (WARN, before 3.5, also logged after the last attempt). Every other line is counted, not read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from streaming.zookeeper.statechange import broker_ids, epoch_ms, layout_lines, log_time, read_broker_logs

_LINE = re.compile(r"^\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (?P<level>DEBUG|INFO|WARN) (?P<msg>.*?)"
                   r"(?: \(kafka\.server\.(?:DefaultAlter(?:Partition|Isr)Manager|AlterIsrManagerImpl|"
                   r"KafkaServer)\))?$")
_SHUTDOWN = re.compile(r"^\[KafkaServer id=(?P<broker>\d+)\] (?P<step>Starting|Retrying) controlled shutdown\b")
_SENT = re.compile(r"^Sending Alter(?:Partition|Isr) to controller Alter(?:Partition|Isr)RequestData\("
                   r"brokerId=(?P<broker>\d+), brokerEpoch=(?P<epoch>-?\d+), topics=")
_ANSWERED = re.compile(r"^Received Alter(?:Partition|Isr) response ClientResponse\(.*?"
                       r"disconnected=(?P<disconnected>\w+),")
_TOP_ERROR = re.compile(r"responseBody=Alter(?:Partition|Isr)ResponseData\(throttleTimeMs=\d+, "
                        r"errorCode=(?P<error>-?\d+),")
# AlterPartition names a topic and its id; AlterIsr its name alone.
_TOPIC = re.compile(r"TopicData\((?:topicName='(?P<name>[^']*)', topicId=(?P<id>[\w-]+)|name='(?P<isr_name>[^']*)'), "
                    r"partitions=")
_ASKED = re.compile(r"PartitionData\(partitionIndex=(?P<partition>\d+), leaderEpoch=(?P<leader_epoch>-?\d+), "
                    r"newIsr=\[(?P<isr>[\d, ]*)\], (?:newIsrWithEpochs=\[(?P<with_epochs>[^\]]*)\], "
                    r"leaderRecoveryState=(?P<recovery>-?\d+), partitionEpoch|currentIsrVersion)="
                    r"(?P<partition_epoch>-?\d+)\)")
_ANSWER = re.compile(r"PartitionData\(partitionIndex=(?P<partition>\d+), errorCode=(?P<error>-?\d+),")
_ISR_MEMBER = re.compile(r"BrokerState\(brokerId=(?P<broker>\d+)")
# A request's answer naming NOT_CONTROLLER: the leader drops its connection to that controller and sends the request
# again to the one it learns of next (BrokerToControllerRequestThread.handleResponse, 3.x), logging only this.
_NOT_CONTROLLER = re.compile(r"^\[BrokerToControllerChannelManager [^\]]*name=alter[^\]]*\] "
                             r"Client requested disconnect from node (?P<node>\d+)")
# Kafka 2.7's answer, a line per partition (the topic from the partition's name: a topic name may hold '-').
_HANDLED = re.compile(r"^Controller successfully handled AlterIsr request for (?P<topic>.+)-\d+: "
                      r"PartitionData\(partitionIndex=(?P<partition>\d+), errorCode=(?P<error>-?\d+),")


@dataclass(frozen=True)
class AskedPartition:
    """One partition of an AlterPartition request: the ISR its leader asked for, at the epochs it held, and the
    controller's answer (`error`: Kafka's error code, 0 for none)."""

    topic: str
    partition: int
    leader_epoch: int
    isr: tuple[int, ...]
    recovering: bool
    partition_epoch: int
    error: int


@dataclass(frozen=True)
class AlterPartitionRequest:
    """One AlterPartition request the controller answered: sent by `broker_id` at `broker_epoch`, answered at
    `answered` (the leader's clock)."""

    broker_id: int
    broker_epoch: int
    sent: datetime
    answered: datetime
    partitions: tuple[AskedPartition, ...]
    # Controllers that answered it NOT_CONTROLLER first, each (broker id, ms of the leader's disconnect); the answer
    # above is the last controller's.
    redirected: tuple[tuple[int, int], ...] = ()

    @property
    def answered_ms(self) -> int:
        """When the leader logged the answer, in ms since the epoch (the log's times read as UTC, like ZooKeeper's
        transaction times)."""
        return epoch_ms(self.answered)

    @property
    def sent_ms(self) -> int:
        """When the leader logged sending it, in ms since the epoch (read as `answered_ms`)."""
        return epoch_ms(self.sent)

    @property
    def unwritten(self) -> bool:
        """Every partition answered with an error: the controller wrote nothing for it (and still sent its
        UpdateMetadata)."""
        return bool(self.partitions) and all(p.error != 0 for p in self.partitions)

    @property
    def partly_refused(self) -> bool:
        """Some partitions written, some answered with an error: the controller's UpdateMetadata after the writes
        names them all (KafkaController.processAlterPartition, seeds 1221 and 1026)."""
        return any(p.error == 0 for p in self.partitions) and any(p.error != 0 for p in self.partitions)

    @property
    def written(self) -> set[tuple[str, int]]:
        """The partitions the controller accepted (and wrote)."""
        return {(p.topic, p.partition) for p in self.partitions if p.error == 0}


def _segments(text: str) -> list[tuple[re.Match[str], str]]:
    """Each TopicData of a request or response with the text up to the next one."""
    topics = list(_TOPIC.finditer(text))
    ends = [t.start() for t in topics[1:]] + [len(text)]
    return [(t, text[t.end():end]) for t, end in zip(topics, ends, strict=True)]


def _name(topic: re.Match[str]) -> str:
    return topic["name"] if topic["name"] is not None else topic["isr_name"]


def _asked(text: str) -> tuple[dict[str, str], list[AskedPartition]]:
    """A request's topic names by id, and its partitions (no answer yet)."""
    names: dict[str, str] = {}
    asked: list[AskedPartition] = []
    for topic, body in _segments(text):
        name = _name(topic)
        if topic["id"] is not None:
            names[topic["id"]] = name
        for p in _ASKED.finditer(body):
            with_epochs = tuple(int(b) for b in _ISR_MEMBER.findall(p["with_epochs"] or ""))
            asked.append(AskedPartition(name, int(p["partition"]), int(p["leader_epoch"]),
                                        with_epochs or broker_ids(p["isr"].replace(" ", "")), p["recovery"] == "1",
                                        int(p["partition_epoch"]), 0))
    return names, asked


def _answers(text: str, names: dict[str, str]) -> dict[tuple[str, int], int]:
    """A response's error code per (topic, partition); its topics are named by id from version 2 on."""
    return {(names.get(topic["id"] or "") or _name(topic), int(p["partition"])): int(p["error"])
            for topic, body in _segments(text) for p in _ANSWER.finditer(body)}


@dataclass
class ControlledShutdowns:
    """Each broker's controlled shutdowns as its server.log tells them: per broker, each shutdown as the times (ms,
    read as UTC) it started and it retried."""

    by_broker: dict[int, list[list[int]]] = field(default_factory=dict)

    def retries(self, broker: int, before_ms: int) -> list[int]:
        """When `broker` asked again in its newest shutdown started before `before_ms` (none known: [])."""
        started = [s for s in self.by_broker.get(broker, []) if s[0] < before_ms]
        return started[-1][1:] if started else []

    def attempts_by(self, broker: int, at_ms: int) -> list[int]:
        """When `broker` sent the requests of its newest shutdown started before `at_ms` that it sent by then (its
        start and its retries; none known: [])."""
        started = [s for s in self.by_broker.get(broker, []) if s[0] < at_ms]
        return [t for t in started[-1] if t <= at_ms] if started else []


@dataclass
class AlterPartitionLog:
    """The answered AlterPartition requests of a cluster's leaders, from their server.log files, in the order each
    broker sent them, and the brokers' controlled shutdowns."""

    requests: list[AlterPartitionRequest]
    unanswered: int = 0  # sent, then no answer, a disconnect or a top-level error: no UpdateMetadata
    other_lines: int = 0
    shutdowns: ControlledShutdowns = field(default_factory=ControlledShutdowns)


@dataclass(frozen=True)
class _Sent:
    """A request sent, its answer not read yet."""

    at: datetime
    broker_id: int
    broker_epoch: int
    names: dict[str, str]  # topic names by id
    asked: list[AskedPartition]
    redirected: list[tuple[int, int]] = field(default_factory=list)

    def answered(self, at: datetime, errors: dict[tuple[str, int], int]) -> AlterPartitionRequest:
        return AlterPartitionRequest(self.broker_id, self.broker_epoch, self.at, at, tuple(
            AskedPartition(p.topic, p.partition, p.leader_epoch, p.isr, p.recovering, p.partition_epoch,
                           errors.get((p.topic, p.partition), 0)) for p in self.asked), tuple(self.redirected))


def parse_server_log(lines: Iterable[str], into: AlterPartitionLog | None = None) -> AlterPartitionLog:
    """Add the answered AlterPartition requests in one broker's server.log lines to `into`."""
    out = into if into is not None else AlterPartitionLog([])
    pending: _Sent | None = None
    # Kafka 2.7's answer being read, a line per partition: the request, when, the errors so far.
    handled: tuple[_Sent, datetime, dict[tuple[str, int], int]] | None = None
    for m in layout_lines(lines, _LINE, out):
        msg = m["msg"]
        if c := _SHUTDOWN.match(msg):
            times = out.shutdowns.by_broker.setdefault(int(c["broker"]), [])
            at = epoch_ms(log_time(m["time"]))
            if c["step"] == "Starting" or not times:
                times.append([at])
            else:
                times[-1].append(at)
        elif pending is not None and (d := _NOT_CONTROLLER.match(msg)):
            pending.redirected.append((int(d["node"]), epoch_ms(log_time(m["time"]))))
        elif m["level"] != "DEBUG":
            out.other_lines += 1
        elif s := _SENT.match(msg):
            if handled is not None:
                out.requests.append(handled[0].answered(handled[1], handled[2]))
                handled = None
            out.unanswered += pending is not None
            pending = _Sent(log_time(m["time"]), int(s["broker"]), int(s["epoch"]), *_asked(msg[s.end():]))
        elif pending is not None and (s := _ANSWERED.match(msg)):
            sent, pending = pending, None
            top = _TOP_ERROR.search(msg)
            if s["disconnected"] != "false" or top is None or top["error"] != "0":
                out.unanswered += 1
                continue
            out.requests.append(sent.answered(log_time(m["time"]), _answers(msg[top.end():], sent.names)))
        elif (pending is not None or handled is not None) and (h := _HANDLED.match(msg)):
            if pending is not None:  # the first partition's line: the answer (from Kafka 2.8 on, after "Received")
                handled, pending = (pending, log_time(m["time"]), {}), None
            handled[2][h["topic"], int(h["partition"])] = int(h["error"])
        else:
            out.other_lines += 1
    if handled is not None:
        out.requests.append(handled[0].answered(handled[1], handled[2]))
    out.unanswered += pending is not None
    return out


def read_server_logs(folder: Path) -> AlterPartitionLog:
    """The answered AlterPartition requests in every `*.log` of `folder` (one server.log per broker, as
    `broker-N.log`)."""
    return read_broker_logs(folder, parse_server_log, AlterPartitionLog([]))
