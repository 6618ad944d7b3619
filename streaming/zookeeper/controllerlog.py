"""Read what a ZooKeeper-mode controller read, out of a broker's `controller.log` (the `kafka.controller` logger;
Kafka's own config/log4j.properties keeps it at TRACE, in the layout `[time] LEVEL message (logger)`).

ZooKeeper's log holds every write, not every read: which registrations a new controller's read of /brokers/ids found,
or which ones one BrokerChange read took together, it does not show (docs/zookeeper.md "What ZooKeeper cannot
show"). The controller logs both (Kafka 3.9's KafkaController), each line under `[Controller id=N]`:
- `N successfully elected as the controller. Epoch incremented to E and epoch zk version is now V` (INFO): the
  controller epoch of the lines after it, in that broker's file;
- `Initialized broker epochs cache: HashMap(B -> epoch, ...)` (INFO): the failover's read of /brokers/ids, with each
  registration's epoch (initializeControllerContext);
- `Newly added brokers: B,..., deleted brokers: B,..., bounced brokers: B,..., all live brokers: B,...` (INFO): one
  read of processBrokerChange;
- `Successfully updated assignment of partition T-P to ReplicaAssignment(replicas=..., addingReplicas=...,
  removingReplicas=...)` (INFO): each write of /brokers/topics/T by updateReplicaAssignmentForPartition, naming the
  one partition it is for (the znode holds them all);
- `Starting topic deletion for topics T,...` (INFO): one read of /admin/delete_topics by processTopicDeletion, every
  topic whose deletion was asked (those queued before it too);
- `Delete topic callback invoked on StopReplica response received from broker B: ... partition errors = Map(T-P ->
  ERROR, ...)` (DEBUG): a broker's answer to a deletion's StopReplica (TopicDeletionStopReplicaResponseReceived, an
  event of its own, queued when the answer came);
- `Error processing event PartitionReassignmentIsrChange(T-P)` (ERROR): below protocol 2.7, the reassignment
  completion a leader's ISR write let start threw (its session had expired);
- `Handling log directory failure for brokers B,...` (INFO): onBrokerLogDirFailure, a read of the log dir
  notifications of those brokers (a failover's own call names none).

Every other line is counted, not read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from streaming.zookeeper.statechange import broker_ids, epoch_ms, layout_lines, log_time, read_broker_logs

_LINE = re.compile(r"^\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] [A-Z]+ \[Controller id=(?P<id>\d+)\] "
                   r"(?P<msg>.*?)(?: \(kafka\.controller\.\w+\))?$")
_ELECTED = re.compile(r"^\d+ successfully elected as the controller\. Epoch incremented to (?P<epoch>\d+) ")
_FAILOVER_READ = re.compile(r"^Initialized broker epochs cache: \w*\((?P<epochs>[\d ,>-]*)\)$")
_ASSIGNMENT = re.compile(r"^Successfully updated assignment of partition (?P<topic>.+)-(?P<partition>\d+) to "
                         r"ReplicaAssignment\(")
_DELETION_READ = re.compile(r"^Starting topic deletion for topics (?P<topics>.*)$")
_DELETION_ANSWER = re.compile(r"^Delete topic callback invoked on StopReplica response received from broker "
                              r"(?P<broker>\d+): "
                              r"request error = \w+, partition errors = \w*\((?P<partitions>.*)\)$")
_LOG_DIR_FAILURE = re.compile(r"^Handling log directory failure for brokers (?P<brokers>[\d,]+)$")
_COMPLETION_FAILED = re.compile(r"^Error processing event PartitionReassignmentIsrChange\("
                                r"(?P<topic>.+)-(?P<partition>\d+)\)$")
_BROKER_READ = re.compile(r"^Newly added brokers: (?P<new>[\d,]*), deleted brokers: (?P<dead>[\d,]*), "
                          r"bounced brokers: (?P<bounced>[\d,]*), all live brokers: (?P<live>[\d,]*)$")


@dataclass(frozen=True)
class BrokerRead:
    """One processBrokerChange read of /brokers/ids by the controller of `controller_epoch`."""

    controller_id: int
    controller_epoch: int
    time: datetime
    new: tuple[int, ...]
    dead: tuple[int, ...]
    bounced: tuple[int, ...]
    # the brokers whose answers to a deletion's StopReplica the controller logged after this read, before its next
    # read of /admin/delete_topics: the deletion a startup resumed (in the order they came)
    answers: list[int] = field(default_factory=list)
    answered_at: list[int] = field(default_factory=list)  # when each of `answers` was logged (ms, as UTC)


@dataclass
class ControllerReads:
    """What the controllers of a cluster read, from their controller.log files: per controller epoch, the failover's
    live brokers (broker -> epoch) and its BrokerChange reads in order."""

    failovers: dict[int, dict[int, int]] = field(default_factory=dict)
    broker_reads: dict[int, list[BrokerRead]] = field(default_factory=dict)
    # per controller epoch, the partition (topic, partition) each assignment write was for, in order
    assignments: dict[int, list[tuple[str, int]]] = field(default_factory=dict)
    # per controller epoch, the topics each read of /admin/delete_topics found that no read before it had
    deletion_reads: dict[int, list[frozenset[str]]] = field(default_factory=dict)
    # per controller epoch, per read of /admin/delete_topics (its index in deletion_reads), the topics an earlier read
    # started whose StopReplica answers the controller logged after this read (and before the next): it handled
    # them after this read's onTopicDeletion (seed 1042)
    late_answers: dict[int, dict[int, frozenset[str]]] = field(default_factory=dict)
    # per controller epoch, per read of /admin/delete_topics, the replicas (broker -> partitions) whose StopReplica
    # (delete) of that read's own deletion the brokers answered with KAFKA_STORAGE_ERROR (seed 1274)
    storage_error_answers: dict[int, dict[int, dict[int, frozenset[tuple[str, int]]]]] = field(default_factory=dict)
    # per controller epoch, per read of /admin/delete_topics, the brokers of its storage_error_answers whose log dir
    # notification the controller handled before another answer to that read's StopReplica (delete) (seed 1412)
    notified_before_answers: dict[int, dict[int, set[int]]] = field(default_factory=dict)
    # per controller epoch, the partitions whose reassignment completion threw (PartitionReassignmentIsrChange)
    failed_completions: dict[int, set[tuple[str, int]]] = field(default_factory=dict)
    # per controller epoch, each read of log dir notifications: (its time in ms, the brokers they named)
    log_dir_reads: dict[int, list[tuple[int, tuple[int, ...]]]] = field(default_factory=dict)
    other_lines: int = 0

    def __bool__(self) -> bool:
        return bool(self.failovers or self.broker_reads or self.assignments or self.deletion_reads or
                    self.failed_completions)


def parse_controller_log(lines: Iterable[str], into: ControllerReads | None = None) -> ControllerReads:
    """Add the reads in one broker's controller.log lines to `into` (a new ControllerReads by default)."""
    out = into if into is not None else ControllerReads()
    epoch: int | None = None  # the controller epoch this broker holds, from its last election in the file
    broker_read_at = -1  # the number of deletion reads of the epoch before its newest BrokerChange read
    notified: tuple[int, frozenset[int]] | None = None  # a deletion read, its failed brokers' notification since
    for m in layout_lines(lines, _LINE, out):
        msg = m["msg"]
        if s := _ELECTED.match(msg):
            epoch, broker_read_at, notified = int(s["epoch"]), -1, None
        elif epoch is not None and (s := _FAILOVER_READ.match(msg)):
            pairs = (p.split("->") for p in s["epochs"].split(",") if "->" in p)
            out.failovers[epoch] = {int(b): int(e) for b, e in pairs}
        elif epoch is not None and (s := _BROKER_READ.match(msg)):
            out.broker_reads.setdefault(epoch, []).append(BrokerRead(
                int(m["id"]), epoch, log_time(m["time"]), broker_ids(s["new"]), broker_ids(s["dead"]),
                broker_ids(s["bounced"])))
            broker_read_at = len(out.deletion_reads.get(epoch, []))
        elif epoch is not None and (s := _ASSIGNMENT.match(msg)):
            out.assignments.setdefault(epoch, []).append((s["topic"], int(s["partition"])))
        elif epoch is not None and (s := _COMPLETION_FAILED.match(msg)):
            out.failed_completions.setdefault(epoch, set()).add((s["topic"], int(s["partition"])))
        elif epoch is not None and (s := _DELETION_READ.match(msg)):
            reads = out.deletion_reads.setdefault(epoch, [])
            reads.append(frozenset(s["topics"].split(",")) - frozenset().union(*reads))
        elif epoch is not None and (s := _LOG_DIR_FAILURE.match(msg)):
            out.log_dir_reads.setdefault(epoch, []).append((epoch_ms(log_time(m["time"])), broker_ids(s["brokers"])))
            notified = _notified(out, epoch, broker_ids(s["brokers"]), broker_read_at) or notified
        elif epoch is not None and (s := _DELETION_ANSWER.match(msg)):
            reads = out.deletion_reads.get(epoch, [])
            if notified and notified[0] == len(reads) - 1 and broker_read_at < len(reads) and \
                    {t for t, _ in _answered(s["partitions"])} & reads[notified[0]]:
                # an answer to that read after the notification, no read since: the notification came first
                out.notified_before_answers.setdefault(epoch, {}).setdefault(notified[0], set()).update(notified[1])
                notified = None
            _late_answer(out, epoch, s["partitions"], broker_read_at)
            _storage_error_answer(out, epoch, int(s["broker"]), s["partitions"], broker_read_at)
            if out.broker_reads.get(epoch) and broker_read_at == len(out.deletion_reads.get(epoch, [])):
                out.broker_reads[epoch][-1].answers.append(int(s["broker"]))
                out.broker_reads[epoch][-1].answered_at.append(epoch_ms(log_time(m["time"])))
        else:
            out.other_lines += 1
    return out


def _answered(partitions: str) -> dict[tuple[str, int], str]:
    """A StopReplica answer's partition errors (`T-P -> ERROR, ...`), by partition."""
    pairs = (p.split(" -> ") for p in partitions.split(", ") if " -> " in p)
    return {(tp.rsplit("-", 1)[0], int(tp.rsplit("-", 1)[1])): error for tp, error in pairs}


def _storage_error_answer(out: ControllerReads, epoch: int, broker: int, partitions: str,
                          broker_read_at: int) -> None:
    """A broker's KAFKA_STORAGE_ERROR answer to the StopReplica (delete) of the newest read of /admin/delete_topics,
    logged before any BrokerChange read since it (not a startup's resumed deletion): a log dir that failed as the
    broker deleted the replica, which the controller did not know of (seed 1274)."""
    failed = frozenset(k for k, error in _answered(partitions).items() if error == "KAFKA_STORAGE_ERROR")
    reads = out.deletion_reads.get(epoch, [])
    if not failed or not reads or broker_read_at >= len(reads) or \
            not {t for t, _ in failed} <= reads[-1]:
        return
    answers = out.storage_error_answers.setdefault(epoch, {}).setdefault(len(reads) - 1, {})
    answers[broker] = answers.get(broker, frozenset()) | failed


def _notified(out: ControllerReads, epoch: int, brokers: Iterable[int], broker_read_at: int
              ) -> tuple[int, frozenset[int]] | None:
    """A log dir notification of brokers that answered the newest read's StopReplica (delete) with KAFKA_STORAGE_ERROR,
    before any BrokerChange read since it: the read and those brokers (whether an answer to it follows decides)."""
    reads = out.deletion_reads.get(epoch, [])
    if not reads or broker_read_at >= len(reads):
        return None
    failed = frozenset(brokers) & set(out.storage_error_answers.get(epoch, {}).get(len(reads) - 1, {}))
    return (len(reads) - 1, failed) if failed else None


def _late_answer(out: ControllerReads, epoch: int, partitions: str, broker_read_at: int) -> None:
    """A StopReplica answer (`T-P -> ERROR, ...`) logged after a later read of /admin/delete_topics than the one that
    started its topics, with no BrokerChange read since that one (a startup resumes deletions: its own requests)."""
    reads = out.deletion_reads.get(epoch, [])
    topics = frozenset(t for t, _ in _answered(partitions))
    started = [i for i, read in enumerate(reads) if read & topics]
    if not started or started[0] == len(reads) - 1 or broker_read_at > started[0] or not reads[-1]:
        return
    late = out.late_answers.setdefault(epoch, {})
    late[len(reads) - 1] = late.get(len(reads) - 1, frozenset()) | topics


def read_controller_logs(folder: Path) -> ControllerReads:
    """The reads in every `*.log` of `folder` (one controller.log per broker, as `broker-N.log`)."""
    return read_broker_logs(folder, parse_controller_log, ControllerReads())
