"""What the ZooKeeper importer knows while it reads a history, shared by the modules that read each kind of znode
(streaming.zookeeper.convert says which reads what): the cluster as its znodes show it (Kafka's ControllerContext:
registered brokers, assignments, partition states, configs, topics being deleted), the events made so far, the
events the controller may still be handling (its queue, `causes`), and how an event or an observed decision is
written out (`Context.event`, `Context.observe`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from streaming.zookeeper.controllerlog import BrokerRead, ControllerReads
from streaming.zookeeper.serverlog import AlterPartitionRequest, ControlledShutdowns
from streaming.zookeeper.statechange import OfflineMarks
from streaming.zookeeper.txnlog import ZkTxn

NO_LEADER = -1
# Cluster-default configs the rules read, handed to each topic without its own value (as the KRaft importer does).
UNCLEAN_CONFIG = "unclean.leader.election.enable"
INHERITED = frozenset({"min.insync.replicas", UNCLEAN_CONFIG})
BROKER_DEFAULTS = "/config/brokers/<default>"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification/"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification/"
# A broker's KAFKA_STORAGE_ERROR answer to a LeaderAndIsr: an event of its own, queued behind those before it.
ANSWER = "LeaderAndIsrResponseReceived"
# onControllerFailover's first writes: the log dir event and ISR change notifications it finds, deleted unread.
FAILOVER_DELETES = (LOG_DIR_EVENT_NOTIFICATION, ISR_CHANGE_NOTIFICATION)
# The requests a new controller sends before (or between) those deletes: /feature read and written, the existence of
# the preferred election and reassignment znodes, a listing of each notification folder.
FAILOVER_PROLOGUE_REQUESTS = 8


@dataclass(frozen=True)
class PartitionState:
    """A partition state znode: what the controller decided, and the znode's version (Kafka's zkVersion)."""

    leader: int
    isr: tuple[int, ...]
    leader_epoch: int
    version: int
    recovering: bool = False

    @classmethod
    def parse(cls, data: bytes | None, version: int) -> PartitionState:
        d = json.loads(data or b"{}")
        return cls(d.get("leader", NO_LEADER), tuple(d.get("isr", ())), d.get("leader_epoch", 0), version,
                   d.get("leader_recovery_state", 0) == 1)


@dataclass
class TopicAssignment:
    """`/brokers/topics/T`: each partition's replicas, and the adding/removing replicas of a reassignment."""

    replicas: dict[int, tuple[int, ...]]
    adding: dict[int, tuple[int, ...]] = field(default_factory=dict)
    removing: dict[int, tuple[int, ...]] = field(default_factory=dict)

    @classmethod
    def parse(cls, data: bytes | None) -> TopicAssignment:
        d = json.loads(data or b"{}")

        def ids(m: dict[str, list[int]] | None) -> dict[int, tuple[int, ...]]:
            return {int(p): tuple(r) for p, r in (m or {}).items() if r}

        return cls(ids(d.get("partitions")), ids(d.get("adding_replicas")), ids(d.get("removing_replicas")))

    def fields(self, partition: int) -> dict[str, list[int]]:
        """The partition's replicas, adding_replicas and removing_replicas, as events and observed rows name them."""
        return {"replicas": list(self.replicas.get(partition, ())),
                "adding_replicas": list(self.adding.get(partition, ())),
                "removing_replicas": list(self.removing.get(partition, ()))}

    def target(self, partition: int) -> tuple[int, ...]:
        removing = self.removing.get(partition, ())
        return tuple(r for r in self.replicas.get(partition, ()) if r not in removing)

    def origin(self, partition: int) -> tuple[int, ...]:
        adding = self.adding.get(partition, ())
        return tuple(r for r in self.replicas.get(partition, ()) if r not in adding)

    def reassigning(self, partition: int) -> bool:
        return bool(self.adding.get(partition) or self.removing.get(partition))


@dataclass
class Cause:
    """An event whose consequences the controller may still be writing, and the partitions they may touch."""

    event: dict[str, Any]
    kind: str  # STARTUP, FAILURE, CONTROLLED_SHUTDOWN, FAILOVER, CREATED, CONFIG, DELETE, PARTITIONS, PREFERRED,
    # UNCLEAN, ISR, LOG_DIR
    broker: int | None = None
    topic: str | None = None
    partitions: set[tuple[str, int]] = field(default_factory=set)
    wrote: bool = False  # the controller wrote a partition state for it
    last_write: tuple[int, int] | None = None  # the newest of those writes' session and cxid
    # the zxid of the controller's newest write for it: a partition state, or a reassignment's /brokers/topics/T
    last_zxid: int = 0
    started: tuple[int, ...] = ()  # STARTUP: every broker of a startup that took several (`new_brokers`)
    # DELETE: the topics of the deletion requests still queued when it came (no controller write since them), and
    # the DeleteTopic events of the requests the controller's same read of /admin/delete_topics took
    queued_with: tuple[str, ...] = ()
    joined: list[dict[str, Any]] = field(default_factory=list)
    # LOG_DIR: the replicas the controller marked offline (its state-change.log); None: not logged, inferred
    logged: frozenset[tuple[str, int]] | None = None
    # the event whose handling this one is a step of, which goes on after it: a failover's read of a reassignment
    # asked through /admin/reassign_partitions while no controller was active (initializePartitionReassignments)
    within: Cause | None = None
    # FAILOVER: its last write (the delete of /admin/preferred_replica_election) is past: it writes nothing more
    finished: bool = False
    # ISR below protocol 2.7: where the watch on its reassigning partition's state queued the controller's
    # PartitionReassignmentIsrChange, when the controller's own write of the state fired it before the leader's
    # write, for an event still being handled (`isrchanges.queued_at`); 0: at the leader's write
    queued_at: int = 0

    @property
    def queued(self) -> int:
        """The zxid the event is queued at: for a leader's ISR write, where its watch fired."""
        return self.queued_at or event_zxid(self.event)

    @property
    def read_topics(self) -> set[str]:
        """DELETE: the topics its read of /admin/delete_topics took: its own and those of the requests it joined."""
        return {str(self.topic), *(e["topic"] for e in self.joined)}

    def read_live(self, broker: int | None) -> bool:
        """FAILOVER: whether its read of /brokers/ids found `broker` (its `live_brokers`). One that registered after
        that read is dead to it until the BrokerChange queued behind it (seed 1431)."""
        return broker is not None and str(broker) in self.event.get("live_brokers", {})

    def deletes(self, topic: str) -> bool:
        """Whether it is a deletion request whose read of /admin/delete_topics took `topic`."""
        return self.kind == "DELETE" and topic in self.read_topics

    def pipelined(self, txn: ZkTxn) -> bool:
        """Whether `txn` is the controller's next request after its newest state write for this event: one request's
        writes, or one pass's, pipelined (consecutive cxids of its session, no read in between)."""
        return self.last_write is not None and follows_on(txn, *self.last_write)

    @property
    def brokers(self) -> set[int]:
        """The brokers it is about: a startup's all."""
        return {self.broker, *self.started} if self.broker is not None else set(self.started)


@dataclass
class Failover:
    """A new controller's onControllerFailover, from its election to its last write: the STARTUP events of the
    registrations since (since its last write before it reads /brokers/ids), read by nobody yet as far as the log
    shows."""

    event: dict[str, Any]  # its ControllerChange
    since: int  # the election's time (ms)
    startups: list[Cause] = field(default_factory=list)
    read: bool = False  # it wrote what it writes after its read of /brokers/ids: no registration joins its live set

    def unsettled_from(self) -> int | None:
        """The zxid from which its writes may still change events: its ControllerChange until its read, the first
        of its startups while they may become one."""
        if not self.read:
            return event_zxid(self.event)
        return event_zxid(self.startups[0].event) if self.startups else None


@dataclass
class LoggedRead:
    """One BrokerChange read the active controller logged (controller.log), and the registrations it took so far."""

    read: BrokerRead
    taken: set[int] = field(default_factory=set)
    # when it found several brokers new: their one STARTUP, at the first registration; its `new_brokers`, shared by
    # the others' events, fills as they register
    startup: Cause | None = None


@dataclass
class QueuedAnswers:
    """The StopReplica answers to the deletion a startup resumed, as the controller logged them (controller.log): the
    startup's event, the brokers in the order they answered, when the first answer was logged (ms), the leaders'
    AlterIsrs the controller wrote meanwhile (event ids), and the one that carries them once placed
    (`Context.place_answers`)."""

    startup: dict[str, Any]
    brokers: list[int]
    first_ms: int
    alter_isrs: set[str] = field(default_factory=set)
    carrier: dict[str, Any] | None = None


@dataclass
class Batch:
    """Consecutive writes (or deletes) of one request the controller pipelines: consecutive cxids of its session."""

    session: int
    cxid: int
    leader: int  # an AlterPartition's sender (-1 for ISR change notifications)
    events: list[dict[str, Any]]
    # The partitions it names, in order, as its events name them (isrchanges._extend), and the set of them.
    partitions: list[dict[str, Any]]
    named: set[tuple[str, int]] = field(init=False)

    def __post_init__(self) -> None:
        self.named = {(p["topic"], p["partition"]) for p in self.partitions}


@dataclass
class ZkConverted:
    events: list[dict[str, Any]] = field(default_factory=list)
    observed: list[dict[str, Any]] = field(default_factory=list)
    # Partition state writes no pattern explains (zxids): kept in `observed`, no event.
    unexplained: list[int] = field(default_factory=list)
    failed_txns: int = 0  # multis that failed (changed nothing)
    snapshot_state: bool = False


def controllers_write(txn: ZkTxn) -> bool:
    """Whether a write is the controller's event thread's: a multi that checks /controller_epoch's version (failed or
    not); a leader writing its own ISR (below inter.broker.protocol 2.7) writes alone, also when it is the controller's
    broker and shares its session (seed 66)."""
    return any(op.kind == "check" and op.path == "/controller_epoch" for op in txn.ops)


def follows_on(txn: ZkTxn, session: int, cxid: int) -> bool:
    """Whether `txn` is `session`'s next request after `cxid`: a pipelined write, no read in between."""
    return txn.session == session and txn.cxid == cxid + 1


def drops(broker: int | None, before: PartitionState, after: PartitionState) -> bool:
    """Whether a write takes `broker` out of the leadership or the ISR."""
    return (before.leader == broker and after.leader != broker) or (broker in before.isr and broker not in after.isr)


def _event_id(zxid: int, suffix: str = "") -> str:
    return f"zk-{zxid}{suffix}"


def event_ts(time_ms: int) -> str:
    """A transaction's time (ms) as an event's `ts`."""
    return datetime.fromtimestamp(max(time_ms, 0) / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def event_ms(event: dict[str, Any]) -> int:
    """An event's `ts` back in ms (`event_ts`' inverse): to compare with the brokers' log lines' times."""
    return int(datetime.fromisoformat(event["ts"]).timestamp() * 1000)


def event_zxid(event: dict[str, Any]) -> int:
    """The zxid an event was read at (its id is `zk-<zxid>[-<suffix>]`)."""
    return int(event["event_id"].split("-")[1])


class Context:
    """The importer's state, which each znode's reader takes and updates; `result` is what it made."""

    def __init__(self, reads: ControllerReads | None = None,
                 alter_partitions: Iterable[AlterPartitionRequest] = (),
                 offline_marks: OfflineMarks | None = None, shutdowns: ControlledShutdowns | None = None) -> None:
        self.result = ZkConverted()
        # The replicas the controllers marked offline at a broker's answer (their state-change.log), when given.
        self.offline_marks = offline_marks
        # Per broker, its replicas in failed log dirs as far as known (marked, or inferred from the writes): its
        # startups and the failovers ask it again, and the controller takes them offline again.
        self.failed_replicas: dict[int, set[tuple[str, int]]] = {}
        # The controller's writes (zxid, partition) that a broker's KAFKA_STORAGE_ERROR answer made, read as a
        # request's (`answers.request_answer`): their event is the answer's, handled after the request.
        self.answer_writes: dict[tuple[int, tuple[str, int]], str] = {}
        # Per broker, the times of its log dir notifications, read ahead (the whole history, or a follower's polls so
        # far): their marks are theirs, not a startup's (OfflineMarks.startup_answer); a request's answer just before
        # one came from a dir that failed as the broker handled that request (answers.request_answer).
        self.notified_at: dict[int, list[int]] = {}
        # Per broker, the replicas its newest notification's LeaderAndIsr left out (NewReplica then: `logdirs`), with
        # the controller's election and the broker's registration they hold under: the next request naming one asks.
        self.left_out: dict[int, tuple[int, int, frozenset[tuple[str, int]]]] = {}
        # Each notification's reader, read ahead as well: the controller whose session deleted it (path -> broker id;
        # the sessions that created /controller -> the broker elected): its answer is that controller's mark.
        self.notification_readers: dict[str, int] = {}
        self.controller_sessions: dict[int, int] = {}
        # The log dir notifications not deleted yet (path -> its LOG_DIR cause), and the brokers whose one a new
        # controller's failover deleted unread (broker -> that failover's event id).
        self.log_dir_events: dict[str, Cause] = {}
        # Without the controller's log: deletions a broker's notification came right after (the deletion's cause, the
        # notification's, the broker's replicas of its topics), confirmed as its KAFKA_STORAGE_ERROR answers when the
        # controller's session ends with the topics still there (logdirs.deletions_failed_in_dir).
        self.deletions_in_failed_dir: list[tuple[Cause, Cause, frozenset[tuple[str, int]]]] = []
        self.unread_log_dirs: dict[int, str] = {}
        # Those of them down at that failover: their answer comes at their next startup, and the failover's
        # ControllerChange, which restores the answers it never got, names it (broker -> that event).
        self.answer_at_startup: dict[int, dict[str, Any]] = {}
        # What the controllers logged they read (controller.log), when given: a failover's live brokers and which
        # registrations each BrokerChange read took, in place of what the writes suggest.
        self.reads = reads if reads is not None else ControllerReads()
        # The leaders' AlterPartition requests the controller answered without a write (their server.log), oldest
        # answer last: no znode shows them, their UpdateMetadata is all they made.
        alter_partitions = list(alter_partitions)
        self.unwritten_requests = sorted((r for r in alter_partitions if r.unwritten), key=lambda r: r.answered_ms,
                                         reverse=True)
        # Those it answered with an error for some partitions and wrote the others, oldest answer first: their
        # refused partitions join the written ones' request (isrchanges.refused_with).
        self.partly_refused = sorted((r for r in alter_partitions if r.partly_refused), key=lambda r: r.answered_ms)
        # Those a controller answered NOT_CONTROLLER first, before the leader asked the next one.
        self.redirected_requests = [r for r in alter_partitions if r.redirected]
        self.logged_reads: list[LoggedRead] = []  # the active controller's BrokerChange reads not yet past
        self.logged_assignments: list[tuple[str, int]] = []  # its assignment writes not yet past: (topic, partition)
        self.logged_deletions: list[frozenset[str]] = []  # its reads of /admin/delete_topics: the topics new to each
        # Per such read, the brokers whose log dir notification takes its other StopReplica answers (not taken yet).
        self.notified_deletions: dict[int, set[int]] = {}
        self.brokers: dict[int, int] = {}  # registered broker -> its epoch (the czxid of /brokers/ids/N)
        self.sessions: dict[int, int] = {}  # session id -> the broker whose registration it holds
        self.session_timeouts: dict[int, int] = {}  # session id -> its timeout (ms), from its createSession
        # Per broker, the times it registered (created /brokers/ids/N), read ahead as the notifications' times are.
        self.registered_at: dict[int, list[int]] = {}
        # Each registered broker's STARTUP event, where a controller handled its registration: its answer to the
        # startup's LeaderAndIsr (`offline_replicas`) names its replicas in a dir that failed while it was down.
        self.startup_events: dict[int, dict[str, Any]] = {}
        self.queued_answers: QueuedAnswers | None = None  # the newest startup's deletion answers, while events come
        self.shutdown_attempts: dict[int, int] = {}  # broker -> its CONTROLLED_SHUTDOWN events since it registered
        # When each broker asked for its controlled shutdown again (its server.log), when given.
        self.shutdowns = shutdowns if shutdowns is not None else ControlledShutdowns()
        self.controller_id = -1
        self.controller_session: int | None = None
        self.controller_epoch = 0
        self.topics: dict[str, TopicAssignment] = {}
        self.states: dict[tuple[str, int], PartitionState] = {}
        self.written_for: dict[tuple[str, int], str | None] = {}  # the event its newest state write was for
        self.written_at: dict[tuple[str, int], int] = {}  # the zxid of that write
        self.started_by: dict[tuple[str, int], str] = {}  # the reassignment whose start bumped it last
        # Per partition, the zxid of the assignment write that made a broker one of its replicas (none: at the
        # topic's creation, or before the history): a reassignment's start makes only those NewReplica.
        self.replica_added_at: dict[tuple[str, int], dict[int, int]] = {}
        self.configs: dict[str, dict[str, str]] = {}
        self.cluster_configs: dict[str, str] = {}
        self.deleting: set[str] = set()
        self.created: dict[str, dict[str, Any]] = {}  # topic -> the event that created its newest partitions
        # The controller's newest create of a topic's partitions znode (its session and zxid) and the CreateTopic
        # events of the read of /brokers/topics it was for (topics.partitions_created).
        self.creation_read: tuple[int, int, list[dict[str, Any]]] | None = None
        self.znode_reassignments: dict[tuple[str, int], tuple[int, ...]] = {}  # /admin/reassign_partitions
        # Those of them asked while no controller was active, which the next one's failover reads.
        self.unread_reassignments: dict[tuple[str, int], tuple[int, ...]] = {}
        # Partitions the active controller holds as being reassigned while ZooKeeper shows nothing of it: reassigned
        # to their own replicas before they ever had a leader, a completion that threw (admin.completion_threw).
        self.reassigning_in_memory: set[tuple[str, int]] = set()
        # The topics /admin/delete_topics named while no controller was active, which the next one's failover reads.
        self.unread_deletions: set[str] = set()
        self.causes: list[Cause] = []  # newest last
        self.protocol_before_3 = False
        self.controller_since = 0  # the zxid of the active controller's election
        self.failover: Failover | None = None  # the active controller's, until its last write
        # The cxid of the active controller's newest request known to be in its failover's prologue (its election,
        # then the deletes of the notifications it finds: onControllerFailover deletes them unread before it reads
        # anything else); None once it wrote anything else.
        self.failover_prologue: int | None = None
        # Below protocol 2.7: /isr_change_notification/isr_change_N -> (its creating zxid, the partitions it names).
        self.notifications: dict[str, tuple[int, list[tuple[str, int]]]] = {}
        self.alter_partition: Batch | None = None  # the newest AlterPartition request's IsrChange events
        self.notifications_read: Batch | None = None  # the controller's last read of ISR change notifications
        self.zxid = self.time = 0  # the last transaction fed, and its time (ms)
        self.controller_writes: list[int] = []  # the zxids of the controller's event thread's newest writes
        self.controller_heard_at = 0  # the zxid of the active controller's session's newest transaction, failed too

    def event(self, txn: ZkTxn, type_: str, suffix: str = "", **fields: Any) -> dict[str, Any]:
        event = {"type": type_, "event_id": _event_id(txn.zxid, suffix), "ts": event_ts(txn.time),
                 "controller_epoch": self.controller_epoch, **fields}
        self.place_answers(txn)
        self.result.events.append(event)
        self.place_answers(txn, event)
        return event

    def place_answers(self, txn: ZkTxn, event: dict[str, Any] | None = None) -> None:
        """A startup's resumed deletion's StopReplica answers (`queued_answers`): each is an event of its own
        (TopicDeletionStopReplicaResponseReceived), queued behind what came before it. At the first event or write
        after the first answer was logged, the output's newest event is the last handled before the answers: a
        leader's AlterIsr the controller wrote after the startup carries them (IsrChange.deletion_answers; the
        startup says `deletion_answers_queued`: seed 1417, Kafka 3.0.2, five AlterIsrs before broker 2's answer).
        Anything else (the startup itself, a leader's own write below protocol 2.7): the startup keeps them."""
        queued = self.queued_answers
        if queued is None or queued.carrier is not None:
            return
        if txn.time < queued.first_ms:
            if event is not None and event["type"] == "IsrChange" and txn.session == self.controller_session:
                queued.alter_isrs.add(event["event_id"])
            return
        newest = self.result.events[-1] if self.result.events else None
        if newest is None or newest["event_id"] not in queued.alter_isrs:
            self.queued_answers = None
            return
        newest["deletion_answers"] = queued.brokers
        queued.startup["deletion_answers_queued"] = True
        queued.carrier = newest

    def carried_answer(self, txn: ZkTxn, event_id: str) -> str | None:
        """The event of a startup's write made after its queued answers were logged (their resumeDeletions' retry):
        the IsrChange that carries them (`place_answers`), or None."""
        queued = self.queued_answers
        if queued is None or queued.carrier is None or queued.startup["event_id"] != event_id or \
                txn.time < queued.first_ms:
            return None
        return queued.carrier["event_id"]

    def answers_after(self, event: dict[str, Any]) -> dict[int, dict[str, Any]]:
        """The brokers' KAFKA_STORAGE_ERROR answers handled right after `event` (in the output), by broker: their
        LeaderAndIsrResponseReceived events, which follow it by broker id."""
        events, at = self.result.events, self._after(event)
        answers: dict[int, dict[str, Any]] = {}
        while at < len(events) and events[at]["type"] == ANSWER:
            answers[events[at]["broker_id"]] = events[at]
            at += 1
        return answers

    def answer_after(self, event: dict[str, Any], broker: int) -> dict[str, Any]:
        """The broker's answer handled right after `event` (`answers_after`), made with no replica the first time."""
        answers = self.answers_after(event)
        if broker not in answers:
            answers[broker] = {"type": ANSWER, "event_id": f"{event['event_id']}-answer-{broker}", "ts": event["ts"],
                               "controller_epoch": event["controller_epoch"], "broker_id": broker,
                               "offline_replicas": []}
            at = self._after(event)
            self.result.events[at:at + len(answers) - 1] = [answers[b] for b in sorted(answers)]
        return answers[broker]

    def answered_after(self, event: dict[str, Any], broker: int, txn: ZkTxn, key: tuple[str, int]) -> None:
        """The broker's answer handled right after `event` names its replica of `key` (KAFKA_STORAGE_ERROR), and the
        write `txn` made of it is that answer's; the replica is known in a failed dir from then on."""
        answer = self.answer_after(event, broker)
        answer["offline_replicas"].append({"topic": key[0], "partition": key[1]})
        self.answer_writes[txn.zxid, key] = answer["event_id"]
        self.failed_replicas.setdefault(broker, set()).add(key)

    def deletion_read_of(self, topic: str) -> int | None:
        """With the controller's log: which of the active controller's reads of /admin/delete_topics found `topic`."""
        return next((i for i, read in enumerate(self.logged_deletions) if topic in read), None)

    def _after(self, event: dict[str, Any]) -> int:
        """The output position right after `event` (one in the output)."""
        at = self.event_at(event)
        assert at is not None, event["event_id"]
        return at + 1

    @property
    def newest_event(self) -> dict[str, Any] | None:
        """The output's last event (the events the importer moves keep it so), past the answers after it: an answer
        follows the event it was handled after (`answer_after`), no read of the controller's of its own."""
        return next((e for e in reversed(self.result.events) if e["type"] != ANSWER), None)

    def event_at(self, event: dict[str, Any]) -> int | None:
        """Where `event` is in the output (None: a follower handed it out with an earlier poll)."""
        events = self.result.events
        return next((i for i in range(len(events) - 1, -1, -1) if events[i] is event), None)

    @property
    def controller_wrote_at(self) -> int:
        """The zxid of the controller's event thread's newest write (0: none yet)."""
        return self.controller_writes[-1] if self.controller_writes else 0

    def controller_wrote(self, txn: ZkTxn) -> None:
        self.controller_writes = [*self.controller_writes[-7:], txn.zxid]
        if self.in_failover_prologue(txn) and all(
                op.kind == "check" or (op.kind == "delete" and op.path.startswith(FAILOVER_DELETES))
                for op in txn.ops):
            self.failover_prologue = txn.cxid
        else:
            self.failover_prologue = None

    def in_failover_prologue(self, txn: ZkTxn) -> bool:
        """Whether the controller's `txn` comes in its failover's prologue: nothing but notification deletes written
        since its election, and only the prologue's few reads (the /feature znode, two handlers' existence, the
        notifications' two listings) between them: its reads of every topic and partition come after."""
        last = self.failover_prologue
        return last is not None and txn.session == self.controller_session and \
            0 < txn.cxid - last <= FAILOVER_PROLOGUE_REQUESTS

    def handling(self, txn: ZkTxn, but: int | None = None) -> Cause | None:
        """The event the controller's newest write before `txn` was for (leaving out the write `but`), if the
        importer gave that write to one still queued: the event the controller was handling then."""
        writes = [z for z in self.controller_writes if z < txn.zxid and z != but]
        if not writes:
            return None
        return next((c for c in reversed(self.causes) if c.last_zxid == writes[-1]), None)

    def newest(self, cause: Cause) -> bool:
        """Whether `cause` is the event the controller handles last so far: none after it but steps of it, log
        dir notifications that wrote nothing yet (a broker writes one during a failover, read after it), a
        leader's own ISR write (below protocol 2.7) that the controller wrote for `cause` after: its notification
        is queued behind `cause`, still being handled (seed 718: t1-5's leader took a replica in while the
        controller worked through a reassignment of four partitions, the last one's write still to come), or the
        startup of a broker that registered after a failover's read of /brokers/ids, before its last write: its
        BrokerChange is queued behind the failover (seed 1431, Kafka 2.8.2: broker 1 registered 27 ms after
        controller 2's election, which read only broker 2; the failover then took broker 1's replicas offline)."""
        later = self.causes[next(i for i, c in enumerate(self.causes) if c is cause) + 1:]
        # An event before a step of `cause` that wrote nothing was queued behind it (seed 1108: topics created
        # while a failover went on, before the reassignment it read).
        step = max((i for i, c in enumerate(later) if c.within is cause), default=-1)
        return all(c.within is cause or (c.kind == "LOG_DIR" and not c.wrote) or (i < step and not c.wrote) or
                   (c.kind == "ISR" and not c.wrote and cause.last_zxid > event_zxid(c.event)) or
                   self.behind_failover(c) is cause
                   for i, c in enumerate(later))

    def behind_failover(self, startup: Cause) -> Cause | None:
        """The active controller's failover, still going on, that a STARTUP is queued behind: its broker registered
        after the failover's read of /brokers/ids (dead to it), its BrokerChange handled once the failover is over
        (seed 1431). None once the failover wrote its last write, or the startup wrote."""
        failover = self.newest_failover()
        if startup.kind != "STARTUP" or startup.wrote or failover is None or failover.finished or \
                event_zxid(failover.event) != self.controller_since or failover.read_live(startup.broker) or \
                event_zxid(startup.event) < event_zxid(failover.event):
            return None
        return failover

    def newest_failover(self) -> Cause | None:
        """The newest new controller's failover among the events kept (its ControllerChange's cause)."""
        return next((c for c in reversed(self.causes) if c.kind == "FAILOVER"), None)

    def cause_of(self, event_id: str | None) -> Cause | None:
        return next((c for c in reversed(self.causes) if c.event["event_id"] == event_id), None)

    def cause(self, cause: Cause) -> Cause:
        self.causes = [*self.causes[-7:], cause]  # the controller works through a few queued events at most
        return cause

    def forget_cause(self, cause: Cause) -> None:
        self.causes = [c for c in self.causes if c is not cause]

    def retract(self, cause: Cause) -> None:
        """An event the controller never read after all (its broker was gone): out of the output and the queue."""
        self.result.events.remove(cause.event)
        self.forget_cause(cause)

    def observe(self, txn: ZkTxn, key: tuple[str, int], before: PartitionState | None, after: PartitionState,
                cause: str, event_id: str | None) -> None:
        if (txn.zxid, key) in self.answer_writes:
            cause, event_id = ANSWER, self.answer_writes.pop((txn.zxid, key))
        elif cause == "BrokerChange" and event_id is not None:
            self.place_answers(txn)
            if (carrier := self.carried_answer(txn, event_id)) is not None:
                cause, event_id = "IsrChange", carrier
            else:
                cause, event_id = self._queued_answer(txn, key, before, after, cause, event_id)
        topic = self.topics.get(key[0]) or TopicAssignment({})
        self.written_for[key], self.written_at[key] = event_id, txn.zxid
        self.result.observed.append({
            "topic": key[0], "partition": key[1], "leader": after.leader, "isr": list(after.isr),
            "leader_epoch": after.leader_epoch, "partition_epoch": after.version,
            **topic.fields(key[1]),
            "leader_recovery_state": "RECOVERING" if after.recovering else "RECOVERED",
            "eligible_leader_replicas": [], "last_known_elr": [], "source_offset": txn.zxid, "cause": cause,
            "cause_event_id": event_id,
            "decision": before is None or before.leader != after.leader or not set(before.isr) <= set(after.isr),
        })

    def _queued_answer(self, txn: ZkTxn, key: tuple[str, int], before: PartitionState | None, after: PartitionState,
                       cause: str, event_id: str) -> tuple[str, str]:
        """A broker event's write taking a replica offline after an answer's event that names it and was handled
        after the broker event: that answer's. A startup's own answer queued behind an IsrChange
        (`logdirs.queued_startup_answer`; seed 1267: t0-0 elected by broker 1's startup, then leaderless after leader
        4's AlterIsr of t4-0). A request's own answers' writes are marked where read (`answer_writes`)."""
        for event in reversed(self.result.events):
            if event["event_id"] == event_id:
                break
            if event["type"] == ANSWER and event_zxid(event) < txn.zxid and before is not None and \
                    drops(event["broker_id"], before, after) and \
                    {"topic": key[0], "partition": key[1]} in event["offline_replicas"]:
                return ANSWER, event["event_id"]
        return cause, event_id

    def reassigning(self, key: tuple[str, int]) -> bool:
        topic = self.topics.get(key[0])
        return topic is not None and topic.reassigning(key[1])

    def replica_online(self, broker: int, key: tuple[str, int]) -> bool:
        """ControllerContext.isReplicaOnline: the broker registered and its replica of `key` in no failed log
        dir (as far as known)."""
        return broker in self.brokers and key not in self.failed_replicas.get(broker, ())

    def topic_configs(self, topic: str) -> dict[str, str]:
        """The configs a topic's events carry: its own, over the cluster defaults the rules read."""
        return {**{k: v for k, v in self.cluster_configs.items() if k in INHERITED}, **self.configs.get(topic, {})}
