"""The ZooKeeper importer (streaming/zookeeper/convert.py): a real ZooKeeper server's files (tests/unit/zkdata) and
transactions built as the ZooKeeper-era controller writes them (docs/zookeeper.md), read as contract events
and the controller's observed decisions, and replayed under the zk rules to the controller's own states."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from schemas.events import parse_event
from statemachine.controller import Controller, ControllerConfig
from statemachine.rules import ZK
from streaming.engine.local import run_local
from streaming.history.histories import history_rows
from streaming.zookeeper.controllerlog import parse_controller_log
from streaming.zookeeper.convert import Converter, convert
from streaming.zookeeper.files import read_zk_history
from streaming.zookeeper.serverlog import AlterPartitionRequest, AskedPartition
from streaming.zookeeper.statechange import parse_offline_marks
from streaming.zookeeper.txnlog import ZkHistory, ZkTxn, ZnodeOp

DATA = Path(__file__).parent / "zkdata"
CONTROLLER_SESSION = 0x100
STATE = "/brokers/topics/t/partitions/{}/state"
INVALID_UPDATE_VERSION = 108  # Kafka's error code


def replayed(history: ZkHistory) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    converted = convert(history)
    records = [(n, json.dumps(e).encode()) for n, e in enumerate(converted.events)]
    result = run_local(records, ControllerConfig(rules=ZK))
    return converted.events, converted.observed, result.decisions


def assert_every_history_equal(observed: list[dict[str, Any]], decisions: list[dict[str, Any]]) -> None:
    histories = history_rows(observed, decisions)
    assert histories and all(h["match"] for h in histories), [h["first_difference"] for h in histories
                                                              if not h["match"]]


def test_a_real_servers_history_becomes_the_controllers_events_and_is_reproduced() -> None:
    # One Kafka 3.9.1 broker: started, topic t created (2 partitions), its config set, a partition added, topic
    # "gone" created and deleted, the broker shut down with the controller, started again (a new controller).
    # Its SIGTERM closed its session itself: it had asked itself, the controller, for a controlled shutdown first
    # (nothing to move: every partition has one replica). The kill -9 after was an expiry: no event.
    events, observed, decisions = replayed(read_zk_history(DATA / "version-2"))
    assert [(e["type"], e.get("topic") or e.get("change")) for e in events] == [
        ("ControllerChange", None), ("CreateTopic", "t"), ("AlterTopicConfig", "t"), ("CreatePartitions", "t"),
        ("CreateTopic", "gone"), ("DeleteTopic", "gone"), ("BrokerChange", "CONTROLLED_SHUTDOWN"),
        ("ControllerChange", None)]
    first, second = events[0], events[-1]
    assert (first["controller_epoch"], first["live_brokers"]) == (1, {"1": 0x19})  # the registration's zxid
    assert (second["controller_epoch"], second["live_brokers"]) == (2, {"1": 0x4B})
    # Every state znode write: the creations (version 0) and the deletion's way out of the ISR (leader -1).
    assert [(o["topic"], o["partition"], o["leader"], o["leader_epoch"], o["partition_epoch"], o["cause"])
            for o in observed] == [("t", 0, 1, 0, 0, "CreateTopic"), ("t", 1, 1, 0, 0, "CreateTopic"),
                                   ("t", 2, 1, 0, 0, "CreatePartitions"), ("gone", 0, 1, 0, 0, "CreateTopic"),
                                   ("gone", 0, -1, 1, 1, "DeleteTopic")]
    assert_every_history_equal(observed, decisions)


class Ensemble:
    """Transactions as a ZooKeeper-mode cluster writes them: brokers' sessions, the controller's multis."""

    def __init__(self, brokers: tuple[int, ...] = (1, 2, 3)) -> None:
        self.txns: list[ZkTxn] = []
        self.cxids: dict[int, int] = {}  # per session: the client's request count (reads count too)
        self.sessions = {b: 0x1000 + b for b in brokers}
        for b in brokers:
            self.txn(self.sessions[b], ZnodeOp("create", f"/brokers/ids/{b}", b"{}", 0, ephemeral=True))
        self.txn(self.sessions[brokers[0]], ZnodeOp("create", "/controller", b'{"brokerid":%d}' % brokers[0]),
                 ZnodeOp("setData", "/controller_epoch", b"1", 1))
        self.controller = self.sessions[brokers[0]]
        self.versions: dict[int, int] = {}

    @property
    def zxid(self) -> int:
        return len(self.txns) + 1

    def txn(self, session: int, *ops: ZnodeOp) -> None:
        self.cxids[session] = self.cxids.get(session, 0) + 1
        self.txns.append(ZkTxn(self.zxid, 1_700_000_000_000 + self.zxid, session, self.cxids[session], ops))

    def reads(self, session: int, count: int = 1) -> None:
        """Requests of the session that write nothing (getData): their cxids are in no transaction."""
        self.cxids[session] = self.cxids.get(session, 0) + count

    def topic(self, assignment: dict[int, list[int]], op: str = "create", **extra: dict[int, list[int]]) -> None:
        data = {"partitions": {str(p): r for p, r in assignment.items()}, "version": 3,
                **{k: {str(p): r for p, r in v.items()} for k, v in extra.items()}}
        # The controller's rewrite checks its epoch (a multi), as its partition state writes do; a topic's creation
        # is the admin's write.
        check = (ZnodeOp("check", "/controller_epoch", None, 1),) if op == "setData" else ()
        self.txn(self.controller, *check, ZnodeOp(op, "/brokers/topics/t", json.dumps(data).encode(), 0))

    def state(self, partition: int, leader: int, isr: list[int], leader_epoch: int, session: int | None = None,
              recovering: bool = False, by_leader: bool = False) -> None:
        """The controller's write (a multi checking /controller_epoch), or with `by_leader` a leader's own write of
        its ISR below protocol 2.7 (a bare setData), in `session` (default: the controller's)."""
        version = self.versions.get(partition, -1) + 1
        self.versions[partition] = version
        data = {"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": leader_epoch, "isr": isr,
                **({"leader_recovery_state": 1} if recovering else {})}
        write = ZnodeOp("create" if version == 0 else "setData", STATE.format(partition), json.dumps(data).encode(),
                        version)
        self.txn(session or self.controller, *(() if by_leader else (ZnodeOp("check", "/controller_epoch", None, 1),)),
                 write)

    def register(self, broker: int) -> None:
        self.sessions[broker] = 0x1000 + broker
        self.txn(self.sessions[broker], ZnodeOp("create", f"/brokers/ids/{broker}", b"{}", 0, ephemeral=True))

    def close(self, session: int, *deleted: str, clean: bool = False) -> None:
        """The end of a session: closed by its client (a clean shutdown: the client's next cxid), or expired (a kill
        -9: the server closes it, cxid 0)."""
        op = ZnodeOp("closeSession", deleted=deleted)
        if clean:
            self.txn(session, op)
        else:
            self.txns.append(ZkTxn(self.zxid, 1_700_000_000_000 + self.zxid, session, 0, (op,)))

    def session_end(self, broker: int, clean: bool = False) -> None:
        self.close(self.sessions[broker], f"/brokers/ids/{broker}", clean=clean)

    def history(self) -> ZkHistory:
        return ZkHistory(None, self.txns, [], "test")


def created() -> Ensemble:
    z = Ensemble()
    z.topic({0: [1, 2, 3], 1: [2, 3, 1]})
    z.state(0, 1, [1, 2, 3], 0)
    z.state(1, 2, [2, 3, 1], 0)
    return z


def test_a_broker_failure_is_its_session_end_and_the_controllers_writes_follow_it() -> None:
    z = created()
    z.session_end(2)
    z.state(1, 3, [3, 1], 1)  # t-1: led by 2, elected 3 (the election drops 2 from the ISR)
    z.state(0, 1, [1, 3], 1)  # t-0: 2 out of the ISR
    events, observed, decisions = replayed(z.history())
    assert (events[-1]["type"], events[-1]["change"], events[-1]["broker_id"]) == ("BrokerChange", "FAILURE", 2)
    assert [o["cause_event_id"] for o in observed[-2:]] == [events[-1]["event_id"]] * 2
    assert_every_history_equal(observed, decisions)


def test_a_controlled_shutdown_is_read_from_the_writes_before_the_brokers_session_ends() -> None:
    z = created()
    z.state(1, 3, [3, 1], 1)  # t-1: leadership moves away from 2, which leaves the ISR: no znode says why
    z.state(0, 1, [1, 3], 1)
    z.session_end(2, clean=True)
    events, observed, decisions = replayed(z.history())
    assert [(e["type"], e.get("change")) for e in events[-2:]] == [("BrokerChange", "CONTROLLED_SHUTDOWN"),
                                                                   ("BrokerChange", "FAILURE")]
    assert {o["cause"] for o in observed[-2:]} == {"BrokerChange"}
    assert_every_history_equal(observed, decisions)


def test_a_controlled_shutdown_right_after_a_failover_is_not_the_failovers() -> None:
    # Real 3.9 controllers (zk campaign seeds 21 and 30): a new controller's failover writes nothing for a registered
    # broker's replicas; a broker leaving the ISRs soon after, before its session ends, is that broker's controlled
    # shutdown, not the failover (which explains anything written before the next input).
    z = created()
    z.close(z.sessions[1], "/controller", "/brokers/ids/1")
    z.controller = z.sessions[2]
    z.txn(z.controller, ZnodeOp("create", "/controller", b'{"brokerid":2}'), ZnodeOp("setData", "/controller_epoch",
                                                                                     b"2", 2))
    z.state(0, -1, [2, 3], 1)  # the failover: the dead broker 1 out of the ISRs, then t-0 elects 2
    z.state(1, 2, [2, 3], 1)
    z.state(0, 2, [2, 3], 2)
    z.state(0, 2, [2], 3)  # broker 3 shuts down: out of both ISRs
    z.state(1, 2, [2], 2)
    z.session_end(3, clean=True)
    events, observed, decisions = replayed(z.history())
    failover = [e for e in events if e["type"] == "ControllerChange"][-1]
    shutdown, failure = [e for e in events if e["type"] == "BrokerChange"]
    assert [(e["change"], e["broker_id"]) for e in (shutdown, failure)] == [("CONTROLLED_SHUTDOWN", 3), ("FAILURE", 3)]
    assert [o["cause_event_id"] for o in observed[-5:]] == [failover["event_id"]] * 3 + [shutdown["event_id"]] * 2
    assert_every_history_equal(observed, decisions)


def test_a_controlled_shutdown_after_a_failover_that_wrote_nothing_is_the_shutdowns() -> None:
    # Campaign seed 21: a new controller that wrote nothing, then a controlled shutdown of broker 2. A failover takes
    # only dead brokers' replicas out of the ISR, and nothing queued before it explains a write after it: the writes
    # are the shutdown's.
    z = created()
    z.txn(z.controller, ZnodeOp("delete", "/controller"))
    z.controller = z.sessions[3]
    z.txn(z.controller, ZnodeOp("create", "/controller", b'{"brokerid":3}'),
          ZnodeOp("setData", "/controller_epoch", b"2", 2))
    z.state(1, 3, [3, 1], 1)  # t-1: leadership moves away from 2
    z.state(0, 1, [1, 3], 1)  # t-0: 2 leaves the ISR, leader 1 stays
    z.session_end(2, clean=True)
    events, observed, decisions = replayed(z.history())
    assert [(e["type"], e.get("change")) for e in events[-3:]] == [
        ("ControllerChange", None), ("BrokerChange", "CONTROLLED_SHUTDOWN"), ("BrokerChange", "FAILURE")]
    assert [o["cause_event_id"] for o in observed[-2:]] == [events[-2]["event_id"]] * 2
    assert_every_history_equal(observed, decisions)


def test_a_broker_that_closes_its_session_itself_asked_for_a_controlled_shutdown_even_if_nothing_was_written() -> None:
    # Campaign seeds 29 (3.9) and 48 (2.6): a broker that led nothing and was in no ISR stopped (SIGTERM); the
    # controller sent it StopReplica twice and UpdateMetadata, and wrote nothing. Its session's end is its own
    # closeSession (a cxid of its session), not the server's expiry (cxid 0, a kill -9).
    z = created()
    z.txn(0x2000 + 4, ZnodeOp("create", "/brokers/ids/4", b"{}", 0, ephemeral=True))
    z.sessions[4] = 0x2000 + 4
    z.session_end(4, clean=True)
    z.session_end(3)
    z.state(0, 1, [1, 2], 1)
    z.state(1, 2, [2, 1], 1)
    events, observed, decisions = replayed(z.history())
    assert [(e["type"], e.get("change"), e.get("broker_id")) for e in events[-3:]] == [
        ("BrokerChange", "CONTROLLED_SHUTDOWN", 4), ("BrokerChange", "FAILURE", 4), ("BrokerChange", "FAILURE", 3)]
    assert_every_history_equal(observed, decisions)


def test_a_controlled_shutdown_that_leaves_a_partition_led_by_the_broker_is_asked_again_until_the_retries_end() -> None:
    # Campaign seed 46 (2.6): broker 1's controlled shutdown moved what it could, but it still led partitions whose
    # ISR was itself alone; the answer named them, so it asked twice more (controlled.shutdown.max.retries 3, 0.5 s
    # apart), each time StopReplica, LeaderAndIsr and UpdateMetadata of the partitions it follows, nothing written.
    z = created()
    z.session_end(3)
    z.state(0, 1, [1, 2], 1)  # the failure of 3: out of both ISRs
    z.state(1, 2, [2, 1], 1)
    z.state(1, 2, [2], 1)  # leader 2 drops 1 from t-1's ISR (AlterPartition)
    z.state(0, 1, [1], 2)  # broker 2 shuts down: out of t-0's ISR; t-1 has nobody else to lead it
    z.session_end(2, clean=True)
    z.state(1, -1, [2], 2)  # its failure: t-1 leaderless
    events, observed, decisions = replayed(z.history())
    assert [(e["type"], e.get("change"), e.get("broker_id")) for e in events[-4:]] == [
        ("BrokerChange", "CONTROLLED_SHUTDOWN", 2)] * 3 + [("BrokerChange", "FAILURE", 2)]
    assert [o["cause_event_id"] for o in observed[-2:]] == [events[-4]["event_id"], events[-1]["event_id"]]
    assert_every_history_equal(observed, decisions)


def registrations_around_a_first_failover() -> Ensemble:
    """Brokers 1 and 3 registered, 1 elected; then 2 registers, the new controller writes /feature, 4 and 5 register."""
    z = Ensemble((1, 3))
    z.register(2)
    z.txn(z.controller, ZnodeOp("create", "/feature", b"{}"))
    z.register(4)
    z.register(5)
    return z


def test_registrations_during_a_failover_are_part_of_it_or_one_startup_after_it() -> None:
    # A cluster's first start (campaign seeds 23 and 13, protocol 3.9). The new controller writes /feature, then reads
    # /brokers/ids: a broker registered before that write is part of the failover (seed 23's broker 2). Brokers
    # registered after it and before the failover's last write (the failed delete of the absent
    # /admin/preferred_replica_election) were read by one processBrokerChange after the failover, as far as the
    # failover did not read them, which the log does not show (seed 13: brokers 2 and 4, 251 and 258 ms after the
    # election, one startup of both). One registered after that last write is a startup of its own.
    z = registrations_around_a_first_failover()
    follower = Converter()
    follower.feed(z.txns)
    assert follower.unsettled_from(quiet_since=z.txns[-1].time + 1) == 3  # the ControllerChange, until the read
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 1), ZnodeOp("error", error=-101))
    z.register(6)
    assert follower.feed(z.txns[-2:]).events and follower.unsettled_from(quiet_since=z.txns[-1].time + 1) is None
    events = convert(z.history()).events
    failover, *startups = events
    epoch = {int(e["broker_id"]): e["broker_epoch"] for e in startups}
    assert failover["live_brokers"] == {"1": 1, "2": epoch[2], "3": 2}
    together = {"4": epoch[4], "5": epoch[5]}
    assert [(e["broker_id"], e.get("new_brokers")) for e in startups] == [(2, None), (4, together), (5, together),
                                                                          (6, None)]
    # What the controller sends: one UpdateMetadata to each registered broker at the failover, nothing for broker 2's
    # registration, one startup of 4 and 5 (the others learn of both, then both of every partition), one of 6.
    controller = Controller(ControllerConfig(rules=ZK))
    sent = [sorted((r.batch, r.broker) for r in controller.handle_event(parse_event(json.dumps(e)), n).requests)
            for n, e in enumerate(events)]
    assert sent == [[(0, 1), (0, 2), (0, 3)], [], [(0, 1), (0, 2), (0, 3), (1, 4), (1, 5)], [],
                    [(0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (1, 6)]]


def test_a_leaders_isr_change_keeps_the_leader_epoch_whoever_writes_it() -> None:
    z = created()
    z.state(0, 1, [1, 2], 0)  # the controller writes the leader's AlterPartition (IBP 2.7+)
    z.state(1, 2, [2, 3], 0, session=z.sessions[2])  # the leader's own write (IBP below 2.7)
    events, observed, decisions = replayed(z.history())
    assert [(e["type"], e["broker_id"], e["isr"], e["partition_epoch"]) for e in events[-2:]] == [
        ("IsrChange", 1, [1, 2], 0), ("IsrChange", 2, [2, 3], 0)]
    assert_every_history_equal(observed, decisions)


def test_the_isr_changes_of_one_alter_partition_request_are_the_controllers_pipelined_writes() -> None:
    # Campaign seed 27 (protocol 3.9): leader 1's request for three partitions, written as zxids 0x115-0x117 with
    # cxids 91-93 of the controller's session; the controller then reads each state back (a getData each), so the
    # next request's first write never follows on.
    z = Ensemble()
    z.topic({0: [1, 2, 3], 1: [1, 3, 2], 2: [2, 1, 3]})
    for partition, replicas in enumerate(([1, 2, 3], [1, 3, 2], [2, 1, 3])):
        z.state(partition, replicas[0], replicas, 0)
    z.reads(z.controller, 3)
    z.state(0, 1, [1, 2], 0)  # one request: t-0 and t-1
    z.state(1, 1, [1, 3], 0)
    z.reads(z.controller, 2)
    z.state(1, 1, [1, 3, 2], 0)  # the next request of the same leader: after the reads
    z.state(2, 2, [2, 1], 0)  # another leader's request, though the cxid follows on
    events, observed, decisions = replayed(z.history())
    both = [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}]
    assert [(e["partition"], e.get("request_partitions")) for e in events[-4:]] == [
        (0, both), (1, both), (1, None), (2, None)]
    assert_every_history_equal(observed, decisions)
    # A follower holds the request's events back from its first on while the controller may still be writing it:
    # the next partition names itself in all of them.
    converter, first = Converter(), len(z.txns) - 4
    converter.feed(z.txns[:first + 2])
    assert converter.unsettled_from(quiet_since=0) == z.txns[first].zxid


def _refused_at(ms: int) -> AlterPartitionRequest:
    """Leader 1's request (broker epoch 1: its registration's zxid) for t-0 at partition epoch 0, answered at `ms`."""
    answered = datetime.fromtimestamp(ms / 1000, UTC).replace(tzinfo=None)
    return AlterPartitionRequest(1, 1, answered, answered, (
        AskedPartition("t", 0, 0, (1,), False, 0, INVALID_UPDATE_VERSION),))


def test_an_alter_partition_the_controller_answered_without_a_write_is_placed_by_its_answer() -> None:
    # Campaign seed 123 (protocol 3.9): a leader's request the controller refused wrote nothing; the leader's
    # server.log names it and the time of the answer. It goes after the writes before that time, never inside
    # another request's pipelined writes, and not at all when answered before the retained history.
    z = Ensemble()
    z.topic({0: [1, 2, 3], 1: [1, 3, 2]})
    z.state(0, 1, [1, 2, 3], 0)
    z.state(1, 1, [1, 3, 2], 0)
    z.reads(z.controller, 2)
    z.state(0, 1, [1, 2], 0)  # one request of leader 1, two pipelined writes
    z.state(1, 1, [1, 3], 0)
    t0 = 1_700_000_000_000
    requests = [_refused_at(t0),  # before the first transaction: of a state the history does not hold
                _refused_at(t0 + z.txns[-2].zxid),  # answered between the pipelined writes
                _refused_at(t0 + 10_000)]  # after the last write
    converted = convert(z.history(), alter_partitions=requests)
    ids = [e["event_id"] for e in converted.events[-4:]]
    first, second = (f"zk-{t.zxid}-t-{p}" for t, p in ((z.txns[-2], 0), (z.txns[-1], 1)))
    refused = [f"zk-{z.txns[-1].zxid}-alter-partition-1-{t0 + ms}-t-0" for ms in (z.txns[-2].zxid, 10_000)]
    assert ids == [first, second, *refused]  # the request of the pipelined writes stays one
    assert converted.events[-4]["request_partitions"] == [{"topic": "t", "partition": 0},
                                                          {"topic": "t", "partition": 1}]
    assert [(e["leader_epoch"], e["partition_epoch"], e["isr"]) for e in converted.events[-2:]] == [(0, 0, [1])] * 2
    records = [(n, json.dumps(e).encode()) for n, e in enumerate(converted.events)]
    audit = run_local(records, ControllerConfig(rules=ZK)).audit
    assert [(r["outcome"], r["error"]) for r in audit if r["event_id"] in refused] == \
        [("REJECTED", "INVALID_UPDATE_VERSION")] * 2


def test_below_protocol_2_7_the_controllers_deletes_of_isr_change_notifications_are_its_read_of_them() -> None:
    z = created()
    notification = "/isr_change_notification/isr_change_{:010d}"

    def announce(n: int, broker: int, *partitions: int) -> None:
        data = {"version": 1, "partitions": [{"topic": "t", "partition": p} for p in partitions]}
        z.txn(z.sessions[broker], ZnodeOp("create", notification.format(n), json.dumps(data).encode(), 0))

    def delete(*numbers: int) -> None:
        for n in numbers:  # one multi each, pipelined
            z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 1),
                  ZnodeOp("delete", notification.format(n)))

    z.state(0, 1, [1, 2], 0, session=z.sessions[1])  # leaders write their own ISR, then announce it
    z.state(1, 2, [2, 3], 0, session=z.sessions[2])
    announce(0, 1, 0)
    announce(1, 2, 1)
    z.reads(z.controller, 5)
    delete(0, 1)  # one read of both
    z.state(0, 1, [1, 2, 3], 0, session=z.sessions[1])
    announce(2, 1, 0)
    # The controller's broker dies: broker 2 takes over, deletes what it finds unread, reads every state.
    z.close(z.sessions[1], "/controller", "/brokers/ids/1")
    z.txn(z.sessions[2], ZnodeOp("create", "/controller", b'{"brokerid":2}'), ZnodeOp("setData", "/controller_epoch",
                                                                                     b"2", 2))
    z.controller = z.sessions[2]
    delete(2)
    z.state(0, -1, [2, 3], 1)  # its failover: broker 1 out of the ISR, then an election
    z.state(0, 2, [2, 3], 2)
    events, observed, decisions = replayed(z.history())
    assert events[0] == {**events[0], "type": "UpdateFeatures", "features": {"metadata.version": 0}}
    assert [(e["type"], e.get("partitions")) for e in events if e["type"] == "IsrChangeNotification"] == [
        ("IsrChangeNotification", [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}])]
    assert_every_history_equal(observed, decisions)


def test_an_admin_preferred_election_is_read_from_the_leader_moving_to_the_first_replica() -> None:
    z = created()
    z.session_end(2)
    z.state(1, 3, [3, 1], 1)  # t-1 [2, 3, 1]: 2 died, 3 leads
    z.state(0, 1, [1, 3], 1)
    z.txn(0x2002, ZnodeOp("create", "/brokers/ids/2", b"{}", 0, ephemeral=True))
    z.state(1, 3, [3, 1, 2], 1)  # 2 catches up (AlterPartition)
    z.state(1, 2, [3, 1, 2], 2)  # ElectLeaders PREFERRED: the leader moves back to 2, the ISR stays
    events, observed, decisions = replayed(z.history())
    assert (events[-1]["type"], events[-1]["election_type"]) == ("ElectLeaders", "PREFERRED")
    assert_every_history_equal(observed, decisions)


def test_a_reassignment_starts_at_the_topic_znode_and_completes_after_the_new_replica_joins() -> None:
    z = created()
    # [1, 2, 3] -> [1, 2, 4]: RS = target + origin, adding 4, removing 3 (KIP-455), then the leader epoch bump.
    z.txn(0x2000, ZnodeOp("create", "/brokers/ids/4", b"{}", 0, ephemeral=True))
    z.topic({0: [1, 2, 4, 3], 1: [2, 3, 1]}, op="setData", adding_replicas={0: [4]}, removing_replicas={0: [3]})
    z.state(0, 1, [1, 2, 3], 1)
    z.state(0, 1, [1, 2, 3, 4], 1)  # 4 joined: the leader's AlterPartition
    z.state(0, 1, [1, 2, 3, 4], 2)  # B3: the new replica set goes out with a new leader epoch
    z.state(0, 1, [1, 2, 4], 3)  # B4: 3 out of the ISR
    z.topic({0: [1, 2, 4], 1: [2, 3, 1]}, op="setData")  # B6: RS = target, the maps cleared
    events, observed, decisions = replayed(z.history())
    types = [e["type"] for e in events]
    assert types[-2:] == ["ReassignPartitions", "IsrChange"]
    assert events[-2]["partitions"] == [{"topic": "t", "partition": 0, "replicas": [1, 2, 4]}]
    assert [o["cause"] for o in observed[-3:]] == ["IsrChange"] * 3
    assert_every_history_equal(observed, decisions)


def test_a_broker_leaving_the_isr_mid_reassignment_is_not_the_reassignments() -> None:
    # A real 3.9 controller (zk campaign seed 43): a reassignment in progress (not every target replica in the ISR)
    # takes no broker out of the ISR; replica 3, being removed, left it by its broker's controlled shutdown.
    z = created()
    z.txn(0x2000, ZnodeOp("create", "/brokers/ids/4", b"{}", 0, ephemeral=True))
    z.topic({0: [1, 2, 4, 3], 1: [2, 3, 1]}, op="setData", adding_replicas={0: [4]}, removing_replicas={0: [3]})
    z.state(0, 1, [1, 2, 3], 1)
    z.state(0, 1, [1, 2], 2)  # 3 leaves; 4 has not joined
    z.state(1, 2, [2, 1], 1)
    z.session_end(3, clean=True)
    events, observed, decisions = replayed(z.history())
    assert [(e["type"], e.get("change")) for e in events[-2:]] == [("BrokerChange", "CONTROLLED_SHUTDOWN"),
                                                                   ("BrokerChange", "FAILURE")]
    assert [o["cause_event_id"] for o in observed[-2:]] == [events[-2]["event_id"]] * 2
    assert_every_history_equal(observed, decisions)


def test_each_admin_reassignment_to_the_replicas_a_partition_has_is_its_own_event() -> None:
    # A real 2.6 run (zk campaign seed 48): twice a reassignment of t-0 to the replicas it has, each completed at
    # once: a bare leader epoch bump, then /brokers/topics/T rewritten unchanged. The second bump is the second
    # reassignment's, not the first's.
    z = created()
    for epoch in (1, 2):
        z.state(0, 1, [1, 2, 3], epoch)
        z.topic({0: [1, 2, 3], 1: [2, 3, 1]}, op="setData")
    events, observed, decisions = replayed(z.history())
    reassignments = [e for e in events if e["type"] == "ReassignPartitions"]
    assert [e["partitions"] for e in reassignments] == [[{"topic": "t", "partition": 0, "replicas": [1, 2, 3]}]] * 2
    assert [o["cause_event_id"] for o in observed[-2:]] == [e["event_id"] for e in reassignments]
    assert_every_history_equal(observed, decisions)


def test_one_reassignment_of_several_partitions_is_one_event_also_when_a_leader_writes_its_isr_in_between() -> None:
    # A real 2.6 run (make test's smoke run, seed 3): one AlterPartitionReassignments of two partitions. t-0's leader
    # took its new replica into the ISR itself (a bare setData) while the controller went on to t-1; the watch on
    # t-0's state queued its completion behind the request, so it comes after t-1's start. Read as two requests, the
    # completion found t-1's written and nothing to explain it (then a controlled shutdown of broker 3).
    z = Ensemble((4, 1, 2, 3))
    z.txn(z.sessions[1], ZnodeOp("create", "/isr_change_notification/isr_change_0000000000",
                                 b'{"version":1,"partitions":[]}', 0))  # leaders announce their ISR: protocol 2.x
    z.topic({0: [1, 2, 3], 1: [2, 3, 1]})
    z.state(0, 1, [1, 2, 3], 0)
    z.state(1, 2, [2, 3, 1], 0)
    z.topic({0: [4, 1, 2, 3], 1: [2, 3, 1]}, op="setData", adding_replicas={0: [4]}, removing_replicas={0: [3]})
    z.state(0, 1, [1, 2, 3], 1)
    z.state(0, 1, [1, 2, 3, 4], 1, session=z.sessions[1], by_leader=True)
    z.topic({0: [4, 1, 2, 3], 1: [2, 3, 4, 1]}, op="setData", adding_replicas={0: [4], 1: [4]},
            removing_replicas={0: [3], 1: [1]})
    z.state(1, 2, [2, 3, 1], 1)
    z.state(0, 1, [1, 2, 3, 4], 2)  # t-0's completion: B3, B4, B6
    z.state(0, 1, [1, 2, 4], 3)
    z.topic({0: [4, 1, 2], 1: [2, 3, 4, 1]}, op="setData", adding_replicas={1: [4]}, removing_replicas={1: [1]})
    events, observed, decisions = replayed(z.history())
    [request] = [e for e in events if e["type"] == "ReassignPartitions"]
    assert request["partitions"] == [{"topic": "t", "partition": 0, "replicas": [4, 1, 2]},
                                     {"topic": "t", "partition": 1, "replicas": [2, 3, 4]}]
    assert [e["type"] for e in events[-2:]] == ["ReassignPartitions", "IsrChange"]
    assert [o["cause"] for o in observed[-2:]] == ["IsrChange"] * 2
    assert_every_history_equal(observed, decisions)


def leaders_write_their_isr() -> Ensemble:
    """An ensemble below protocol 2.7: a leader announces its own ISR writes under /isr_change_notification."""
    z = Ensemble()
    z.txn(z.sessions[1], ZnodeOp("create", "/isr_change_notification/isr_change_0000000000",
                                 b'{"version":1,"partitions":[]}', 0))
    return z


def test_a_leaders_own_isr_write_inside_a_startup_goes_before_it_also_when_the_leader_is_the_controller() -> None:
    # A real 2.6 run (zk campaign seed 66): broker 1 leads t-0 and is the controller (one ZooKeeper session). Broker 2
    # restarts; the controller's startup handling sends it LeaderAndIsr, broker 1 as leader takes it back into the
    # ISR (a bare setData, no /controller_epoch check) and the handling goes on to resume the reassignment onto 2,
    # reading that ISR: a leader epoch bump with ISR [1, 2].
    z = leaders_write_their_isr()
    z.topic({0: [1, 2]})
    z.state(0, 1, [1, 2], 0)
    z.session_end(2)
    z.state(0, 1, [1], 1)
    z.topic({0: [2, 3, 1]}, op="setData", adding_replicas={0: [3]})  # to [2, 3, 1]: adding 3
    z.state(0, 1, [1], 2)
    z.sessions[2] = 0x2002
    z.txn(z.sessions[2], ZnodeOp("create", "/brokers/ids/2", b"{}", 0, ephemeral=True))
    z.state(0, 1, [1, 2], 2, by_leader=True)
    z.state(0, 1, [1, 2], 3)  # the resumed reassignment (3 not yet in the ISR)
    events, observed, decisions = replayed(z.history())
    assert [e["type"] for e in events[-2:]] == ["IsrChange", "BrokerChange"]
    assert_every_history_equal(observed, decisions)



def test_a_controlled_shutdown_right_after_a_startup_that_resumed_a_reassignment_is_the_shutdowns() -> None:
    # A real 2.6 run (zk campaign seed 70): a startup resumed a reassignment onto the broker (a leader epoch bump),
    # then the leader's broker shut down: its leadership moved and it left the ISR. A resumed reassignment that does
    # not complete moves no leader and drops nobody, so that write is the shutdown's, not the startup's.
    z = Ensemble((1, 2, 3, 4))
    z.topic({0: [1, 2, 3], 1: [2, 3, 1]})
    z.state(0, 1, [1, 2, 3], 0)
    z.state(1, 2, [2, 3, 1], 0)
    z.topic({0: [1, 2, 3, 4], 1: [2, 3, 1]}, op="setData", adding_replicas={0: [4]})
    z.state(0, 1, [1, 2, 3], 1)
    z.session_end(4)  # 4 restarts before it joined the ISR
    z.register(4)
    z.state(0, 1, [1, 2, 3], 2)  # the startup resumes the reassignment: 4 not yet in the ISR
    z.state(0, 2, [2, 3], 3)  # broker 1 shuts down
    z.state(1, 2, [2, 3], 1)
    z.session_end(1, clean=True)
    events, observed, decisions = replayed(z.history())
    shutdown = next(e for e in events if e.get("change") == "CONTROLLED_SHUTDOWN")
    assert shutdown["broker_id"] == 1
    assert [o["cause_event_id"] for o in observed[-2:]] == [shutdown["event_id"]] * 2
    assert_every_history_equal(observed, decisions)


def test_with_the_controllers_logs_a_failovers_live_brokers_and_each_brokerchange_read_are_theirs() -> None:
    # What ZooKeeper's log cannot show, the controller.log can (campaign seed 103): the failover's read found broker 4
    # too, registered after /feature, and one processBrokerChange read took 5 and 6, 6 registered after the
    # failover's last write: one startup of both.
    z = registrations_around_a_first_failover()
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 1), ZnodeOp("error", error=-101))
    z.register(6)
    epoch = {int(op.path.rsplit("/", 1)[1]): t.zxid for t in z.txns for op in t.ops
             if op.path.startswith("/brokers/ids/")}
    at = "[2026-11-25 10:00:00,000] INFO [Controller id=1] "
    log = [f"{at}1 successfully elected as the controller. Epoch incremented to 1 and epoch zk version is now 1 "
           "(kafka.controller.KafkaController)",
           f"{at}Initialized broker epochs cache: HashMap({', '.join(f'{b} -> {epoch[b]}' for b in (1, 2, 3, 4))}) "
           "(kafka.controller.KafkaController)",
           f"{at}Newly added brokers: 5,6, deleted brokers: , bounced brokers: , all live brokers: 1,2,3,4,5,6 "
           "(kafka.controller.KafkaController)"]
    events = convert(z.history(), parse_controller_log(log)).events
    failover, *startups = events
    assert failover["live_brokers"] == {str(b): epoch[b] for b in (1, 2, 3, 4)}
    together = {"5": epoch[5], "6": epoch[6]}
    assert [(e["broker_id"], e.get("new_brokers")) for e in startups] == [(5, together), (6, together)]
    controller = Controller(ControllerConfig(rules=ZK))
    sent = [sorted((r.batch, r.broker) for r in controller.handle_event(parse_event(json.dumps(e)), n).requests)
            for n, e in enumerate(events)]
    assert sent == [[(0, 1), (0, 2), (0, 3), (0, 4)], [(0, 1), (0, 2), (0, 3), (0, 4), (1, 5), (1, 6)], []]
    # Without the logs, the writes alone put 4 with 5 (and 6 on its own).
    guessed = [(e["broker_id"], sorted(e.get("new_brokers") or ())) for e in convert(z.history()).events[1:]]
    assert guessed == [(2, []), (4, ["4", "5"]), (5, ["4", "5"]), (6, [])]


def test_a_reassignment_in_place_of_a_leaderless_partition_is_read_from_the_unchanged_rewrite_alone() -> None:
    # Campaign seeds 111 and 11: an Admin API reassignment of a partition whose only replica's broker is down, to the
    # replicas it has. Its election fails, so nothing is written but /brokers/topics/T, unchanged; the controller
    # still sends the partition's UpdateMetadata. The partition: the topic's only leaderless one, or the one the
    # controller's log names for that write when there are several.
    def leaderless(partitions: dict[int, list[int]]) -> Ensemble:
        z = Ensemble()
        z.topic(partitions)
        for p, replicas in partitions.items():
            z.state(p, replicas[0], replicas, 0)
        z.session_end(2)
        for p in (p for p, replicas in partitions.items() if replicas == [2]):
            z.state(p, -1, [2], 1)
        z.topic(partitions, op="setData")
        return z

    z = leaderless({0: [1], 1: [2]})
    events = convert(z.history()).events
    assert events[-1]["type"] == "ReassignPartitions"
    assert events[-1]["partitions"] == [{"topic": "t", "partition": 1, "replicas": [2]}]
    controller = Controller(ControllerConfig(rules=ZK))
    sent = [controller.handle_event(parse_event(json.dumps(e)), n).requests for n, e in enumerate(events)][-1]
    assert [(r.request, r.broker, [(p.topic, p.partition) for p in r.partitions]) for r in sent] == [
        ("UPDATE_METADATA", 1, [("t", 1)]), ("UPDATE_METADATA", 3, [("t", 1)])]

    z = leaderless({0: [1], 1: [2], 2: [2]})
    assert "ReassignPartitions" not in [e["type"] for e in convert(z.history()).events]  # which one, nothing says
    at = "[2026-11-25 10:00:00,000] INFO [Controller id=1] "
    log = [f"{at}1 successfully elected as the controller. Epoch incremented to 1 and epoch zk version is now 1",
           f"{at}Initialized broker epochs cache: HashMap(1 -> 1, 2 -> 2, 3 -> 3)",
           f"{at}Successfully updated assignment of partition t-2 to ReplicaAssignment(replicas=2, addingReplicas=, "
           "removingReplicas=)"]
    events = convert(z.history(), parse_controller_log(log)).events
    assert events[-1]["partitions"] == [{"topic": "t", "partition": 2, "replicas": [2]}]
    # A cancel that leaves the partition leaderless ends with the same unchanged rewrite: its completion, no new
    # reassignment (seed 102).
    z = Ensemble()
    z.topic({0: [1], 1: [2]})
    z.state(0, 1, [1], 0)
    z.state(1, 2, [2], 0)
    z.session_end(2)
    z.state(1, -1, [2], 1)
    z.topic({0: [1], 1: [3, 2]}, op="setData", adding_replicas={1: [3]}, removing_replicas={1: [2]})
    z.state(1, -1, [2], 2)
    z.topic({0: [1], 1: [2]}, op="setData")
    z.state(1, -1, [2], 3)
    z.topic({0: [1], 1: [2]}, op="setData")
    reassignments = [e["partitions"] for e in convert(z.history()).events if e["type"] == "ReassignPartitions"]
    assert reassignments == [[{"topic": "t", "partition": 1, "replicas": [3]}],
                             [{"topic": "t", "partition": 1, "replicas": None}]]


def log_dir_failure(z: Ensemble, broker: int) -> None:
    """Broker `broker` announces a failed log dir; the controller reads and deletes the notification."""
    path = "/log_dir_event_notification/log_dir_event_0000000000"
    z.txn(z.sessions[broker], ZnodeOp("create", path, b'{"version":1,"broker":%d,"event":1}' % broker, 0))
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 1), ZnodeOp("delete", path))


def failed_under_2() -> Ensemble:
    """t-0 led by broker 2, t-1 followed by it; a log dir fails under it, t-0's leadership moves."""
    z = Ensemble()
    z.topic({0: [2, 1, 3], 1: [1, 2, 3]})
    z.state(0, 2, [2, 1, 3], 0)
    z.state(1, 1, [1, 2, 3], 0)
    log_dir_failure(z, 2)
    z.state(0, 1, [1, 3], 1)
    return z


def test_a_log_dir_failure_names_from_the_directory_alone_the_replicas_its_writes_drop() -> None:
    # t-1's replica on 2 is in its other dir: t-1 is not written.
    events, observed, decisions = replayed(failed_under_2().history())
    [event] = [e for e in events if e["type"] == "LogDirEventNotification"]
    assert (event["broker_id"], event["offline_replicas"]) == (2, [{"topic": "t", "partition": 0}])
    assert observed[-1]["cause_event_id"] == event["event_id"]
    assert_every_history_equal(observed, decisions)


def test_a_log_dir_failure_takes_its_replicas_from_the_controllers_mark() -> None:
    z = failed_under_2()
    z.state(1, 1, [1, 3], 1)  # both in the failed dir: t-1's ISR shrinks too
    at = datetime.fromtimestamp(z.txns[-3].time / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    marks = parse_offline_marks([f"[{at}] INFO [Controller id=1] Mark replicas t-1,t-0 on broker 2 as offline "
                                 "(state.change.logger)\n"])
    converted = Converter(offline_marks=marks).convert(z.history())
    [event] = [e for e in converted.events if e["type"] == "LogDirEventNotification"]
    assert sorted((r["topic"], r["partition"]) for r in event["offline_replicas"]) == [("t", 0), ("t", 1)]
    assert [o["cause"] for o in converted.observed[-2:]] == ["LogDirEventNotification"] * 2


def test_a_log_dir_notification_a_failover_deletes_unread_is_the_failovers_answer() -> None:
    # The controller (broker 1) is gone, its session not expired yet, when broker 2 announces a failed dir; broker 3's
    # failover deletes the notification unread and its LeaderAndIsr brings broker 2's answer: t-0 leaves 2.
    z = Ensemble()
    z.topic({0: [2, 1, 3]})
    z.state(0, 2, [2, 1, 3], 0)
    path = "/log_dir_event_notification/log_dir_event_0000000000"
    z.txn(z.sessions[2], ZnodeOp("create", path, b'{"version":1,"broker":2,"event":1}', 0))
    z.close(z.sessions[1], "/brokers/ids/1", "/controller")
    z.txn(z.sessions[3], ZnodeOp("create", "/controller", b'{"brokerid":3}'),
          ZnodeOp("setData", "/controller_epoch", b"2", 2))
    z.controller = z.sessions[3]
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 2), ZnodeOp("delete", path))
    z.state(0, 2, [2, 3], 1)  # the failover: dead 1 out of the ISR
    z.state(0, 3, [3], 2)  # then 2's answer: its replica offline, 3 leads
    events, observed, decisions = replayed(z.history())
    assert "LogDirEventNotification" not in {e["type"] for e in events}
    [failover] = [e for e in events if e["type"] == "ControllerChange" and e["controller_id"] == 3]
    assert failover["offline_replicas"] == {"2": [{"topic": "t", "partition": 0}]}
    assert observed[-1]["cause_event_id"] == failover["event_id"]
    assert_every_history_equal(observed, decisions)


def test_a_notification_takes_the_mark_after_it_and_one_just_before() -> None:
    # Kafka 2.8.2, campaign seed 415: broker 1, the controller's own broker, answered KAFKA_STORAGE_ERROR for t0-1 to a
    # LeaderAndIsr sent for broker 2's failed dir, before its own notification (13.333) came; its answer to that
    # notification named the rest of its failed dir.
    lines = [f"[2026-11-26 21:26:13,{ms}] INFO [Controller id=1] Mark replicas {replicas} on broker {broker} as "
             "offline (state.change.logger)\n" for ms, replicas, broker in (("108", "t5-0,t0-1", 2), ("230", "t0-1", 1),
                                                                    ("410", "t3-0,t4-3", 1))]
    marks = parse_offline_marks(lines)
    at = int(datetime(2026, 11, 26, 21, 26, 13, tzinfo=UTC).timestamp() * 1000)
    assert marks.answer(2, at + 9) == {("t5", 0), ("t0", 1)}
    assert marks.answer(1, at + 333) == {("t0", 1), ("t3", 0), ("t4", 3)}
    assert marks.answer(1, at + 400) is None  # taken


def test_a_startup_takes_the_mark_after_it_unless_a_notification_of_the_broker_comes_first() -> None:
    # Campaign seed 805: broker 1's dir failed while it was down (no notification); controller 2 marked its replicas
    # at 34.213, answering the startup at 33.155. A mark after a later notification of the broker is that one's.
    lines = [f"[2026-11-27 01:33:{t}] INFO [Controller id=2] Mark replicas {replicas} on broker 1 as offline "
             "(state.change.logger)\n" for t, replicas in (("34,213", "t1-1,t1-0"), ("50,100", "t0-0"))]
    marks = parse_offline_marks(lines)
    at = int(datetime(2026, 11, 27, 1, 33, 33, 155000, tzinfo=UTC).timestamp() * 1000)
    assert marks.startup_answer(1, at, [at + 16_000]) == {("t1", 1), ("t1", 0)}
    assert marks.startup_answer(1, at, [at + 16_000]) == frozenset()  # taken; the next is the notification's
    assert marks.answer(1, at + 16_000) == {("t0", 0)}

def test_the_unchanged_rewrite_after_a_znode_reassignments_bump_in_place_is_its_completion() -> None:
    # A real 3.9 run (zk campaign seed 303, from the ZooKeeper directory alone): a reassignment through the znode
    # names t-0 with the replicas it has: a bare bump, then /brokers/topics/t rewritten unchanged (B6). t-1 has no
    # leader: the rewrite is not a reassignment in place of t-1 (seed 111's reading of a rewrite with no bump).
    z = Ensemble()
    z.topic({0: [1, 3], 1: [2]})
    z.state(0, 1, [1, 3], 0)
    z.state(1, 2, [2], 0)
    z.session_end(2)
    z.state(1, -1, [2], 1)
    z.txn(0x3000, ZnodeOp("create", "/admin/reassign_partitions",
                          b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,3]}]}', 0))
    z.state(0, 1, [1, 3], 1)
    z.topic({0: [1, 3], 1: [2]}, op="setData")
    converted = convert(z.history())
    [reassignment] = [e for e in converted.events if e["type"] == "ReassignPartitions"]
    assert reassignment["partitions"] == [{"topic": "t", "partition": 0, "replicas": [1, 3]}]
    assert converted.observed[-1]["cause_event_id"] == reassignment["event_id"] and not converted.unexplained


def test_a_deletion_the_controllers_session_ended_inside_is_marked_unanswered_and_a_completed_one_is_not() -> None:
    # zklog/regressions/zookeeper-3.0-deletion-cut-short: both replicas live, the topic's znodes still there when the
    # controller's session ends: its StopReplica answers never came back to it.
    def deleted(completed: bool) -> dict[str, Any]:
        z = created()
        z.txn(0x3000, ZnodeOp("create", "/admin/delete_topics/t", None, 0))
        z.state(0, -1, [1], 1)
        if completed:
            z.txn(z.controller, ZnodeOp("delete", "/brokers/topics/t"))
        z.close(z.controller, "/controller", "/brokers/ids/1", clean=True)
        [event] = [e for e in convert(z.history()).events if e["type"] == "DeleteTopic"]
        return event

    assert deleted(completed=False)["stop_replica_answered"] is False
    assert "stop_replica_answered" not in deleted(completed=True)


def test_a_startup_queued_before_a_leaders_own_isr_write_completes_the_reassignment_the_write_caught_up() -> None:
    # A real 2.6 run (zk campaign seed 702): t-0 being reassigned from [3, 1] to [2, 3]; broker 2 registered again
    # and the leader, 3, then wrote the ISR [3, 1, 2] itself. The startup, queued first, read that ISR from
    # ZooKeeper and completed the reassignment (a bump, then 1 out of the ISR, then the assignment): the IsrChange is
    # marked so that isrflow leaves the completion to the startup.
    z = leaders_write_their_isr()
    z.topic({0: [3, 1]})
    z.state(0, 3, [3, 1], 0)
    z.topic({0: [2, 3, 1]}, op="setData", adding_replicas={0: [2]}, removing_replicas={0: [1]})
    z.state(0, 3, [3, 1], 1)  # A: 2 not yet in the ISR
    z.session_end(2)
    z.sessions[2] = 0x2002
    z.txn(z.sessions[2], ZnodeOp("create", "/brokers/ids/2", b"{}", 0, ephemeral=True))
    z.state(0, 3, [3, 1, 2], 1, by_leader=True)
    z.state(0, 3, [3, 1, 2], 2)  # the startup's completion: B3, B4, B6
    z.state(0, 3, [3, 2], 3)
    z.topic({0: [2, 3]}, op="setData")
    events, observed, decisions = replayed(z.history())
    [isr_change] = [e for e in events if e["type"] == "IsrChange"]
    assert isr_change.get("reassignment_completed_by_queued_event") is True
    assert [o["cause"] for o in observed[-2:]] == ["BrokerChange"] * 2
    assert_every_history_equal(observed, decisions)


def test_a_completion_whose_watch_fired_after_a_request_was_taken_is_the_leaders_isr_changes() -> None:
    # A real 3.9.1 run at protocol 2.6 (zk campaign seed 808): t-0's leader took its target replica into the ISR
    # itself; an Admin API reassignment of t-1, asked again, was taken first (its bump is the controller's next
    # write), and the watch on t-0's state queued the completion behind it. Its bump and ISR shrink are the ISR
    # change's, not an unexplained write and broker 3's controlled shutdown, and the IsrChange goes after the request.
    z = leaders_write_their_isr()
    z.topic({0: [2, 3], 1: [3, 2]})
    z.state(0, 2, [2, 3], 0)
    z.state(1, 3, [3, 2], 0)
    z.topic({0: [2, 1, 3], 1: [3, 2]}, op="setData", adding_replicas={0: [1]}, removing_replicas={0: [3]})
    z.state(0, 2, [2, 3], 1)
    z.topic({0: [2, 1, 3], 1: [1, 3, 2]}, op="setData", adding_replicas={0: [1], 1: [1]},
            removing_replicas={0: [3], 1: [3, 2]})
    z.state(1, 3, [3, 2], 1)
    z.state(0, 2, [2, 3, 1], 1, session=z.sessions[2], by_leader=True)
    z.state(1, 3, [3, 2], 2)  # t-1's reassignment asked again: a bare bump
    # A follower polling here holds the IsrChange back: its completion may still come, behind the request.
    follower = Converter()
    [isr_write] = follower.feed(z.txns).events[-2:-1]
    assert follower.unsettled_from(0) == int(isr_write["event_id"].split("-")[1])
    z.state(0, 2, [2, 3, 1], 2)  # t-0's completion: B3, B4, B6
    z.state(0, 2, [2, 1], 3)
    z.topic({0: [2, 1], 1: [1, 3, 2]}, op="setData", adding_replicas={1: [1]}, removing_replicas={1: [3, 2]})
    events, observed, decisions = replayed(z.history())
    assert not [e for e in events if e.get("change") == "CONTROLLED_SHUTDOWN"]
    assert [e["type"] for e in events[-2:]] == ["ReassignPartitions", "IsrChange"]  # as the controller handled them
    [isr_change] = [e for e in events if e["type"] == "IsrChange"]
    assert [o["cause_event_id"] for o in observed[-2:]] == [isr_change["event_id"]] * 2
    assert_every_history_equal(observed, decisions)


def other_topic(z: Ensemble, name: str, partitions: dict[int, tuple[int, list[int]]]) -> None:
    """Topic `name` created (the admin's write), each partition's first state written by the controller:
    partition -> (leader, isr); its replicas are its ISR."""
    data = {"partitions": {str(p): isr for p, (_, isr) in partitions.items()}, "version": 3}
    z.txn(0x3000, ZnodeOp("create", f"/brokers/topics/{name}", json.dumps(data).encode(), 0))
    for p, (leader, isr) in partitions.items():
        write_state(z, name, p, leader, isr, 0, 0)


def write_state(z: Ensemble, topic: str, partition: int, leader: int, isr: list[int], leader_epoch: int,
                version: int) -> None:
    """The controller's write of another topic's partition state (a multi checking /controller_epoch)."""
    data = {"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": leader_epoch, "isr": isr}
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 1),
          ZnodeOp("create" if version == 0 else "setData", f"/brokers/topics/{topic}/partitions/{partition}/state",
                  json.dumps(data).encode(), version))


def test_an_isr_change_the_controller_writes_after_a_deletions_first_write_ends_that_deletions_read() -> None:
    # A real 3.9 run (zk campaign seed 411): one DeleteTopics of u and w, their znodes one after the other; the
    # controller's first read took u alone (its replica offline), then it wrote w-0's AlterPartition, then deleted w:
    # a deletion takes all its read's live replicas offline before the controller handles anything else.
    z = created()
    other_topic(z, "u", {0: (3, [3])})
    other_topic(z, "w", {0: (1, [1, 2])})
    write_state(z, "w", 0, 1, [1], 0, 1)  # 2 left w-0's ISR
    z.txn(0x3000, ZnodeOp("create", "/admin/delete_topics/u", None, 0))
    z.txn(0x3000, ZnodeOp("create", "/admin/delete_topics/w", None, 0))
    write_state(z, "u", 0, -1, [3], 1, 1)
    write_state(z, "w", 0, 1, [1, 2], 0, 2)  # w-0's leader takes 2 back
    write_state(z, "w", 0, -1, [2], 1, 3)  # w deleted: 1's replica offline, then 2's (the last ISR member stays)
    write_state(z, "w", 0, -1, [2], 2, 4)
    events, observed, decisions = replayed(z.history())
    assert [(e["type"], e.get("topic")) for e in events[-3:]] == [
        ("DeleteTopic", "u"), ("IsrChange", "w"), ("DeleteTopic", "w")]
    assert not any("topics" in e for e in events[-3:])
    assert [o["cause_event_id"] for o in observed[-3:]] == [events[-2]["event_id"]] + [events[-1]["event_id"]] * 2
    assert_every_history_equal(observed, decisions)


def test_a_deletion_write_pipelined_with_a_later_requests_first_write_is_of_the_later_read() -> None:
    # A real 3.9 run (zk campaign seed 443): DeleteTopics of u and w, then of v: the controller's first read took u
    # alone; w's first write came in one broker batch with v's (pipelined: consecutive cxids), so the later read
    # took w with v.
    z = created()
    for name in ("u", "w", "v"):
        other_topic(z, name, {0: (3 if name == "u" else 1, [3] if name == "u" else [1])})
    z.txn(0x3000, ZnodeOp("create", "/admin/delete_topics/u", None, 0))
    z.txn(0x3000, ZnodeOp("create", "/admin/delete_topics/w", None, 0))
    write_state(z, "u", 0, -1, [3], 1, 1)
    z.txn(0x3000, ZnodeOp("create", "/admin/delete_topics/v", None, 0))
    z.reads(z.controller, 2)  # the next read of /admin/delete_topics, and of the states
    write_state(z, "w", 0, -1, [1], 1, 1)  # broker 1's batch of the second pass
    write_state(z, "v", 0, -1, [1], 1, 1)
    events, observed, decisions = replayed(z.history())
    deletions = {e["topic"]: e for e in events if e["type"] == "DeleteTopic"}
    assert "topics" not in deletions["u"] and deletions["w"]["topics"] == deletions["v"]["topics"] == ["v", "w"]
    assert [o["cause_event_id"] for o in observed[-2:]] == [deletions["w"]["event_id"]] * 2
    assert_every_history_equal(observed, decisions)


def test_a_broker_dropped_from_a_reassigning_partition_after_a_failovers_last_write_is_its_controlled_shutdown(
) -> None:
    # A real 3.9 run (zk campaign seed 439): a new controller's failover resumed t-0's reassignment (a bump) and
    # ended with its delete of /admin/preferred_replica_election, failing (NONODE: none there); broker 3 dropped from
    # t-0's ISR after that is broker 3's controlled shutdown, not the failover's.
    def writes_after(failover_ended: bool) -> list[tuple[str, str | None]]:
        z = Ensemble((4, 1, 2, 3, 5))
        z.topic({0: [1, 2, 3]})
        z.state(0, 1, [1, 2, 3], 0)
        z.topic({0: [1, 2, 3, 5]}, op="setData", adding_replicas={0: [5]})
        z.state(0, 1, [1, 2, 3], 1)
        z.close(z.sessions[4], "/controller", "/brokers/ids/4")
        z.controller = z.sessions[1]
        z.txn(z.controller, ZnodeOp("create", "/controller", b'{"brokerid":1}'),
              ZnodeOp("setData", "/controller_epoch", b"2", 2))
        z.state(0, 1, [1, 2, 3], 2)  # the failover resumes the reassignment
        if failover_ended:
            z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 2), ZnodeOp("error", error=-101))
        z.state(0, 1, [1, 2], 3)
        z.session_end(3, clean=True)
        events, observed, decisions = replayed(z.history())
        if failover_ended:
            assert_every_history_equal(observed, decisions)
        causes = {e["event_id"]: (e["type"], e.get("change")) for e in events}
        return [causes[o["cause_event_id"]] for o in observed[-2:]]

    assert writes_after(failover_ended=True) == [("ControllerChange", None), ("BrokerChange", "CONTROLLED_SHUTDOWN")]
    # Without its end in the log, a reassigning partition's write before the next input may still be the failover's.
    assert writes_after(failover_ended=False) == [("ControllerChange", None)] * 2


def test_an_isr_change_whose_completion_the_controllers_death_cut_after_the_leader_moved_says_so() -> None:
    # A real 3.9 run (zk campaign seed 443): t-0 reassigned from [3] to [2]; 2 joined the ISR, the completion moved
    # the leader to 2 (B3), and the controller, broker 3, was killed before 3 left the ISR (B4).
    def isr_change(completed: bool) -> dict[str, Any]:
        z = Ensemble((3, 1, 2))
        z.topic({0: [3]})
        z.state(0, 3, [3], 0)
        z.topic({0: [2, 3]}, op="setData", adding_replicas={0: [2]}, removing_replicas={0: [3]})
        z.state(0, 3, [3], 1)
        z.state(0, 3, [3, 2], 1)  # the AlterPartition
        z.state(0, 2, [3, 2], 2)  # B3
        if completed:
            z.state(0, 2, [2], 3)  # B4, then B6
            z.topic({0: [2]}, op="setData")
        z.close(z.sessions[3], "/controller", "/brokers/ids/3")
        [event] = [e for e in convert(z.history()).events if e["type"] == "IsrChange"]
        return event

    assert isr_change(completed=False)["controller_died_after_leader_move"] is True
    assert "controller_died_after_leader_move" not in isr_change(completed=True)


def test_a_broker_down_at_the_failover_that_deleted_its_notification_unread_answers_at_its_startup() -> None:
    # A real 2.8.2 run (zk campaign seed 437, from the ZooKeeper directory alone): a dir failed under broker 2, the
    # controller, whose session then expired; broker 1's failover deleted the notification unread while broker 2 was
    # down. At broker 2's re-registration its startup elected it for t-1 and its answer (KAFKA_STORAGE_ERROR) took
    # it offline again: the failover's ControllerChange restores that answer.
    z = Ensemble((2, 1, 3))
    z.topic({0: [2, 3], 1: [2, 3]})
    z.state(0, 2, [2, 3], 0)
    z.state(1, 2, [2, 3], 0)
    z.state(1, 2, [2], 0)  # 3 out of t-1's ISR (its leader's AlterPartition)
    path = "/log_dir_event_notification/log_dir_event_0000000000"
    z.txn(z.sessions[2], ZnodeOp("create", path, b'{"version":1,"broker":2,"event":1}', 0))
    z.close(z.sessions[2], "/brokers/ids/2", "/controller")
    z.controller = z.sessions[1]
    z.txn(z.controller, ZnodeOp("create", "/controller", b'{"brokerid":1}'),
          ZnodeOp("setData", "/controller_epoch", b"2", 2))
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 2), ZnodeOp("delete", path))
    z.state(0, -1, [3], 1)  # the failover: the dead 2's replicas offline, then t-0 elects 3; t-1 keeps its last
    z.state(1, -1, [2], 1)  # ISR member (no unclean election)
    z.state(0, 3, [3], 2)
    z.sessions[2] = 0x2002
    z.txn(z.sessions[2], ZnodeOp("create", "/brokers/ids/2", b"{}", 0, ephemeral=True))
    z.state(1, 2, [2], 2)  # the startup elects 2 for t-1; its answer takes it offline again
    z.state(1, -1, [2], 3)
    events, observed, decisions = replayed(z.history())
    [failover] = [e for e in events if e["type"] == "ControllerChange" and e["controller_id"] == 1]
    [startup] = [e for e in events if e["type"] == "BrokerChange" and e["change"] == "STARTUP"]
    assert failover["offline_replicas"] == {"2": [{"topic": "t", "partition": 1}]}
    assert [o["cause_event_id"] for o in observed[-2:]] == [startup["event_id"]] * 2
    assert_every_history_equal(observed, decisions)
