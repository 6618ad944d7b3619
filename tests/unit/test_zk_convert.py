"""The ZooKeeper importer (streaming/zookeeper/convert.py): a real ZooKeeper server's files (tests/unit/zkdata) and
transactions built as the ZooKeeper-era controller writes them (docs/zookeeper.md), read as contract events
and the controller's observed decisions, and replayed under the zk rules to the controller's own states."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from schemas.events import parse_event
from statemachine.controller import Controller, ControllerConfig
from statemachine.features import IBP_2_7_IV2
from statemachine.rules import ZK
from statemachine.zk_releases import KafkaRelease
from streaming.engine.local import run_local
from streaming.zookeeper.context import event_ts
from streaming.zookeeper.controllerlog import parse_controller_log
from streaming.zookeeper.convert import Converter, convert
from streaming.zookeeper.files import read_zk_history
from streaming.zookeeper.serverlog import AlterPartitionRequest, AskedPartition, ControlledShutdowns
from streaming.zookeeper.txnlog import ZkTxn, ZnodeOp

from .zk_ensemble import (
    DATA,
    INVALID_UPDATE_VERSION,
    Ensemble,
    assert_every_history_equal,
    created,
    leaders_write_their_isr,
    replayed,
)


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


@pytest.mark.parametrize("registered_before_expiry_ms", [2400, 7000])
def test_a_registration_after_a_dead_controllers_last_request_is_read_by_the_next_failover(
        registered_before_expiry_ms: int) -> None:
    # Campaign seed 1119 (Kafka 3.5.2): controller 2's broker was killed (kill -9); broker 1 registered 2.4 s before
    # ZooKeeper expired the dead controller's session (timeout 6 s), and no controller read it until the next one's
    # failover, which elected it leader where its ISR was it alone. ZooKeeper expires a session its timeout after the
    # client's last request, and a read of /brokers/ids would have been one. A registration before that could have
    # been read: here the live controller elected broker 3 at its startup.
    z = Ensemble(session_timeout_ms=6000)
    z.topic({0: [3]})
    z.state(0, 3, [3], 0)
    z.session_end(3)
    z.state(0, -1, [3], 1)  # broker 3's failure: t-0 leaderless
    z.wait(1000)
    z.register(3, 0x2003)
    read = registered_before_expiry_ms > 6000
    if read:
        z.state(0, 3, [3], 2)  # its startup elects it
    z.wait(registered_before_expiry_ms)
    z.close(z.sessions[1], "/controller", "/brokers/ids/1")
    z.controller = z.sessions[2]
    z.txn(z.controller, ZnodeOp("create", "/controller", b'{"brokerid":2}'), ZnodeOp("setData", "/controller_epoch",
                                                                                     b"2", 2))
    if not read:
        z.state(0, 3, [3], 2)  # the failover elects it
    events, observed, decisions = replayed(z.history())
    startups = [e for e in events if e.get("change") == "STARTUP"]
    failover = events[-1]
    assert (failover["type"], sorted(failover["live_brokers"])) == ("ControllerChange", ["2", "3"])
    assert len(startups) == int(read)
    assert observed[-1]["cause_event_id"] == (startups[0] if read else failover)["event_id"]
    assert [d["cause_event_id"] for d in decisions if d["leader_epoch"] == 2] == [observed[-1]["cause_event_id"]]
    assert_every_history_equal(observed, decisions)


@pytest.mark.parametrize("failover_threw", [True, False])
def test_a_registration_during_a_failover_that_threw_is_read_by_the_next_failover(failover_threw: bool) -> None:
    # Campaign seed 1299 (Kafka 3.5.2): every failover of controller epochs 3 to 101 threw (resuming a reassignment
    # of a partition with no state znode) and its controller deleted /controller itself (triggerControllerMove). The
    # BrokerChange of a broker registered during one was handled after the resignation, by a controller no longer
    # active (processBrokerChange returns): the next failover read the broker and elected it. A failover that
    # reached its last write (the delete of /admin/preferred_replica_election, NONODE) handles it as a startup.
    z = Ensemble((2, 1, 3))  # controller 2
    z.session_end(1)
    z.topic({0: [2, 3], 1: [3, 1]})
    z.state(0, 2, [2, 3], 0)
    z.state(1, 3, [3], 0)  # broker 1 dead
    z.session_end(3)
    z.state(0, 2, [2], 1)  # broker 3's failure: out of t-0's ISR, t-1 leaderless
    z.state(1, -1, [3], 1)
    elect = ZnodeOp("create", "/controller", b'{"brokerid":2}')
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 1), ZnodeOp("delete", "/controller"))
    z.txn(z.controller, elect, ZnodeOp("setData", "/controller_epoch", b"2", 2))
    z.state(1, -1, [3], 2)  # the failover takes dead broker 3's replica offline again
    z.register(3, 0x2003)  # while that failover goes on
    if failover_threw:
        z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 2), ZnodeOp("delete", "/controller"))
        z.txn(z.controller, elect, ZnodeOp("setData", "/controller_epoch", b"3", 3))
    else:  # its last write, then the startup
        z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 2), ZnodeOp("error", error=-101))
    z.state(1, 3, [3], 3)  # t-1 elects broker 3
    events, observed, decisions = replayed(z.history())
    startups = [e for e in events if e.get("change") == "STARTUP"]
    failover = [e for e in events if e["type"] == "ControllerChange"][-1]
    assert (len(startups), failover["controller_epoch"]) == ((0, 3) if failover_threw else (1, 2))
    assert ("3" in failover["live_brokers"]) == failover_threw
    assert observed[-1]["cause_event_id"] == (failover if failover_threw else startups[0])["event_id"]
    assert_every_history_equal(observed, decisions)


@pytest.mark.parametrize("wrote", [False, True])
def test_a_failover_whose_session_ended_before_any_request_of_it_is_no_event(wrote: bool) -> None:
    # Campaign seed 1471 (Kafka 2.8.2): controller 4's session expired 6.5 s after its election, with no transaction
    # of it in between: its failover threw registering its watches, before it read the cluster, and never reached its
    # last request (the delete of /admin/preferred_replica_election, logged even when it fails). The next
    # controller's failover wrote what it would have: t1-0's dead replica offline (a leader epoch bump).
    z = Ensemble(session_timeout_ms=6000)
    z.topic({0: [2]})
    z.state(0, 2, [2], 0)
    z.session_end(2)
    z.state(0, -1, [2], 1)  # broker 2's failure: t-0 leaderless
    z.close(z.sessions[1], "/controller", "/brokers/ids/1")
    z.elect(3, 2)
    if wrote:  # the failover took dead broker 2's replica offline (the checked write bumps the leader epoch)
        z.state(0, -1, [2], 2)
    z.wait(6500)
    z.close(z.sessions[3], "/controller", "/brokers/ids/3")
    z.register(1, 0x2001)
    z.elect(1, 3)
    z.state(0, -1, [2], 3 if wrote else 2)  # the next failover's turn
    events, observed, decisions = replayed(z.history())
    failovers = [e["controller_epoch"] for e in events if e["type"] == "ControllerChange"]
    assert failovers == ([1, 2, 3] if wrote else [1, 3])
    assert observed[-1]["cause_event_id"] == events[-1]["event_id"]
    assert_every_history_equal(observed, decisions)
    # Its controller.log naming its read of /brokers/ids (it read the cluster, then could not write): it stays.
    registered = next(t.zxid for t in z.txns if t.ops[0].path == "/brokers/ids/3")
    at = "[2026-11-27 20:45:39,207] INFO [Controller id=3] "
    log = [f"{at}3 successfully elected as the controller. Epoch incremented to 2 and epoch zk version is now 2 "
           "(kafka.controller.KafkaController)",
           f"{at}Initialized broker epochs cache: HashMap(3 -> {registered}) (kafka.controller.KafkaController)"]
    logged = [e["controller_epoch"] for e in convert(z.history(), parse_controller_log(log)).events
              if e["type"] == "ControllerChange"]
    assert logged == [1, 2, 3]


def test_a_broker_registered_after_a_failovers_read_of_the_brokers_is_dead_to_it() -> None:
    # Campaign seed 1431 (Kafka 2.8.2): controller 1's session expired, broker 2 was elected and read /brokers/ids
    # (broker 2 alone); broker 1 registered 27 ms after the election, before the failover's writes. The failover took
    # broker 1's replicas offline (out of the ISR, leaderless where it led) and elected where it could; the
    # BrokerChange queued behind it came after its last write. Those writes are the failover's: neither unexplained
    # (a registered broker dropped) nor the startup's (an election).
    z = Ensemble((1, 2))
    z.topic({0: [1, 2], 1: [2, 1]})
    z.state(0, 1, [1, 2], 0)
    z.state(1, 2, [2, 1], 0)
    z.close(z.sessions[1], "/controller", "/brokers/ids/1")
    z.controller = z.sessions[2]
    z.txn(z.controller, ZnodeOp("create", "/controller", b'{"brokerid":2}'), ZnodeOp("setData", "/controller_epoch",
                                                                                     b"2", 2))
    z.register(1, 0x2001)
    z.state(0, -1, [2], 1)  # the failover: broker 1's replicas offline (OfflineReplica), then t-0 elects 2
    z.state(1, 2, [2], 1)
    z.state(0, 2, [2], 2)
    z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 2), ZnodeOp("error", error=-101))
    events, observed, decisions = replayed(z.history())
    failover, startup = events[-2:]
    assert (failover["type"], failover["live_brokers"], startup.get("change")) == (
        "ControllerChange", {"2": 2}, "STARTUP")
    assert [o["cause_event_id"] for o in observed[-3:]] == [failover["event_id"]] * 3
    assert_every_history_equal(observed, decisions)


def test_a_deletion_asked_while_no_controller_was_active_is_read_by_the_next_failover() -> None:
    # Campaign seed 1333 (Kafka 2.7.2): t1 and t3 were asked deleted after controller 4's session expired, before it
    # was elected again: no TopicDeletion event of the old controller read them; the new one's failover did
    # (initializeControllerContext), and found them ineligible (a replica on a dead broker): nothing written.
    z = Ensemble((1, 2))
    z.topic({0: [1, 2]})
    z.state(0, 1, [1, 2], 0)
    z.session_end(2)
    z.state(0, 1, [1], 1)  # broker 2's failure
    z.close(z.sessions[1], "/controller", "/brokers/ids/1")  # controller 1's session expires
    z.register(1, 0x2001)
    z.txn(0x3000, ZnodeOp("create", "/admin/delete_topics/t", b"", 0))
    z.elect(1, 2)
    events, observed, decisions = replayed(z.history())
    assert [e["type"] for e in events if e["type"] in ("DeleteTopic", "ControllerChange")] == [
        "ControllerChange", "ControllerChange"]
    assert events[-1]["topics_to_delete"] == ["t"]
    assert_every_history_equal(observed, decisions)


def test_a_broker_that_closes_its_session_itself_asked_for_a_controlled_shutdown_even_if_nothing_was_written() -> None:
    # Campaign seeds 29 (3.9) and 48 (2.6): a broker that led nothing and was in no ISR stopped (SIGTERM); the
    # controller sent it StopReplica twice and UpdateMetadata, and wrote nothing. Its session's end is its own
    # closeSession (a cxid of its session), not the server's expiry (cxid 0, a kill -9).
    z = created()
    z.register(4, 0x2000 + 4)
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


def test_a_controlled_shutdowns_retry_its_server_log_dates_goes_before_what_came_after_it() -> None:
    # Campaign seed 1236 (3.9.1): leader 2, shutting down, asked again to leave t-1's ISR between its retries; the
    # controller refused each request (no write) and answered each with an UpdateMetadata, sent between its answers
    # to the retries. Its server.log dates the retries; without it they go at the session's close, after the answers.
    z = created()
    z.session_end(3)
    z.state(0, 1, [1, 2], 1)
    z.state(1, 2, [2, 1], 1)
    z.state(1, 2, [2], 1)
    z.state(0, 1, [1], 2)  # broker 2's first request: out of t-0's ISR; it still leads t-1
    started = z.now
    z.wait(1_000)
    z.session_end(2, clean=True)
    closed = z.txns[-1].time
    refused = datetime.fromtimestamp((closed - 300) / 1000, UTC).replace(tzinfo=None)
    request = AlterPartitionRequest(2, 2, refused, refused, (
        AskedPartition("t", 1, 1, (2, 1), False, 2, INVALID_UPDATE_VERSION),))
    retries = ControlledShutdowns({2: [[started - 10, closed - 600, closed - 100]]})
    placed = [[(e["type"], e.get("change"), e["ts"]) for e in convert(
        z.history(), alter_partitions=[request], shutdowns=shutdowns).events[-4:]] for shutdowns in (None, retries)]
    isr, shutdown, failure = ("IsrChange", None), ("BrokerChange", "CONTROLLED_SHUTDOWN"), ("BrokerChange", "FAILURE")
    assert [e[:2] for e in placed[0]] == [isr, shutdown, shutdown, failure]
    assert [e[:2] for e in placed[1]] == [shutdown, isr, shutdown, failure]
    assert [e[2] for e in placed[1]] == [event_ts(t) for t in (closed - 600, closed - 300, closed - 100, closed)]


def test_a_controlled_shutdowns_write_is_the_request_its_server_log_dates_and_earlier_ones_wrote_nothing() -> None:
    # Campaign seed 1413 (Kafka 2.7.2): broker 2, the only ISR member of both partitions it led, asked for a
    # controlled shutdown; the controller had nobody to move them to (no write). A follower joined t-1's ISR, and the
    # retry elected it. The write is the second request, not the first: the third, 1 s later, is the last one the
    # broker sent (controlled.shutdown.max.retries), not a fourth.
    z = Ensemble()
    z.topic({0: [2, 3], 1: [2, 1]})
    z.state(0, 2, [2, 3], 0)
    z.state(1, 2, [2, 1], 0)
    z.state(0, 2, [2], 0)  # leader 2 drops its followers (AlterPartition)
    z.state(1, 2, [2], 0)
    started = z.now  # the first request: nothing written
    z.wait(100)
    z.state(1, 2, [2, 1], 0)  # 1 back in t-1's ISR
    z.wait(400)
    retried = z.now - 2
    z.state(1, 1, [1], 1)  # the second request elects it
    z.wait(1_000)
    z.session_end(2, clean=True)
    closed = z.txns[-1].time
    z.state(0, -1, [2], 1)  # its failure: t-0 leaderless
    shutdowns = ControlledShutdowns({2: [[started, retried, closed - 500, closed - 10]]})
    isr, failure = ("IsrChange", None), ("BrokerChange", "FAILURE")
    placed = [[(e["type"], e.get("change"), e["ts"]) for e in convert(z.history(), shutdowns=logged).events[-5:]]
              for logged in (None, shutdowns)]
    shutdown = ("BrokerChange", "CONTROLLED_SHUTDOWN")
    assert [e[:2] for e in placed[0]] == [isr, shutdown, shutdown, shutdown, failure]  # the write taken as the first
    assert [e[:2] for e in placed[1]] == [shutdown, isr, shutdown, shutdown, failure]
    assert [e[2] for e in placed[1] if e[:2] == shutdown] == [event_ts(t) for t in (started, retried + 2, closed - 500)]
    # At 2.7 the first request, before 1 was back in the ISR, elects nobody: every write is reproduced.
    converted = convert(z.history(), shutdowns=shutdowns)
    result = run_local([(n, json.dumps(e).encode()) for n, e in enumerate(converted.events)], ControllerConfig(
        rules=ZK, metadata_version=IBP_2_7_IV2, kafka_version=KafkaRelease.parse("2.7.2")))
    assert_every_history_equal(converted.observed, result.decisions)


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


def _refused_at(ms: int, *asked: AskedPartition, sent_ms: int = 1_700_000_000_000) -> AlterPartitionRequest:
    """Leader 1's request (broker epoch 1: its registration's zxid), sent at `sent_ms` (default: the ensemble's
    start), answered at `ms`: `asked`, or t-0 at partition epoch 0, refused."""
    def at(when: int) -> datetime:
        return datetime.fromtimestamp(when / 1000, UTC).replace(tzinfo=None)
    return AlterPartitionRequest(1, 1, at(sent_ms), at(ms), asked or (
        AskedPartition("t", 0, 0, (1,), False, 0, INVALID_UPDATE_VERSION),))


def _led_by_1() -> Ensemble:
    """Topic t's two partitions led by broker 1, created, then two reads of the controller."""
    z = Ensemble()
    z.topic({0: [1, 2, 3], 1: [1, 3, 2]})
    z.state(0, 1, [1, 2, 3], 0)
    z.state(1, 1, [1, 3, 2], 0)
    z.reads(z.controller, 2)
    return z


def test_an_alter_partition_the_controller_answered_without_a_write_is_placed_by_its_answer() -> None:
    # Campaign seed 123 (protocol 3.9): a leader's request the controller refused wrote nothing; the leader's
    # server.log names it and the time of the answer. It goes after the writes before that time, never inside
    # another request's pipelined writes, and not at all when answered before the retained history.
    z = _led_by_1()
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


def test_the_partitions_the_controller_refused_in_a_request_it_partly_wrote_join_its_update_metadata() -> None:
    # Campaign seeds 1221 (Kafka 2.8.2) and 1026 (3.9.1): a leader asked for two partitions in one request, one of
    # them at epochs the controller had moved past; it wrote the other alone and sent one UpdateMetadata naming both
    # (processAlterPartition). The leader's server.log names the request: the refused partition's IsrChange, at the
    # epochs it was asked at, goes before the written one's, the request's last, and the rules refuse it and send
    # the one UpdateMetadata.
    z = _led_by_1()
    z.state(1, 1, [1, 3], 0)  # t-1's ISR changed: partition epoch 1
    z.reads(z.controller, 2)
    z.state(0, 1, [1, 2], 0)  # the request's t-0; its t-1, asked at partition epoch 0, refused
    request = _refused_at(1_700_000_010_000, AskedPartition("t", 0, 0, (1, 2), False, 0, 0),
                          AskedPartition("t", 1, 0, (1,), False, 0, INVALID_UPDATE_VERSION))
    converted = convert(z.history(), alter_partitions=[request])
    both = [{"topic": "t", "partition": 1}, {"topic": "t", "partition": 0}]
    assert [(e["event_id"], e["partition_epoch"], e["isr"], e.get("request_partitions")) for e in
            converted.events[-2:]] == [(f"zk-{z.txns[-1].zxid}-t-1", 0, [1], both),
                                       (f"zk-{z.txns[-1].zxid}-t-0", 0, [1, 2], both)]
    records = [(n, json.dumps(e).encode()) for n, e in enumerate(converted.events)]
    replay = run_local(records, ControllerConfig(rules=ZK))
    assert [(r["event_id"], r["outcome"], r["error"]) for r in replay.audit[-2:]] == [
        (f"zk-{z.txns[-1].zxid}-t-1", "REJECTED", "INVALID_UPDATE_VERSION"),
        (f"zk-{z.txns[-1].zxid}-t-0", "ACCEPTED", None)]
    isr_changes = [r for r in replay.requests if r["event_type"] == "IsrChange"]
    assert [(r["event_id"], r["request"], r["broker"], r["partition_count"]) for r in isr_changes[-3:]] == \
        [(f"zk-{z.txns[-1].zxid}-t-0", "UPDATE_METADATA", b, 2) for b in (1, 2, 3)]
    # Without the leader's log the request is t-0's alone.
    assert convert(z.history()).events[-1].get("request_partitions") is None


def test_a_partly_refused_request_joins_the_writes_made_between_its_sending_and_its_answer() -> None:
    # Campaign seed 1289 (Kafka 3.5.2): leader 2's request of t4-1, t0-1 and t2-0, all written at 12:38:05; 23 s later
    # it asked for the same three and t2-1, which was refused. The later request is the later writes', not the
    # earlier ones' (it was sent after them): the UpdateMetadata of the first names three partitions, not four.
    z = _led_by_1()
    z.state(0, 1, [1, 2], 0)  # the first request: t-0 alone, written
    first = z.txns[-1]
    z.wait(5000)
    z.reads(z.controller, 2)
    z.state(0, 1, [1, 2, 3], 0)  # the second: t-0 written, t-1 refused
    later = _refused_at(z.txns[-1].time + 10, AskedPartition("t", 0, 0, (1, 2, 3), False, 1, 0),
                        AskedPartition("t", 1, 0, (1,), False, 0, INVALID_UPDATE_VERSION),
                        sent_ms=z.txns[-1].time - 10)
    converted = convert(z.history(), alter_partitions=[later])
    by_id = {e["event_id"]: e for e in converted.events}
    assert by_id[f"zk-{first.zxid}-t-0"].get("request_partitions") is None
    both = [{"topic": "t", "partition": 1}, {"topic": "t", "partition": 0}]
    assert by_id[f"zk-{z.txns[-1].zxid}-t-0"]["request_partitions"] == both
    assert by_id[f"zk-{z.txns[-1].zxid}-t-1"]["isr"] == [1]


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


def test_an_isr_change_notification_read_goes_before_the_startups_registered_after_its_creation() -> None:
    # Campaign seed 1288 (Kafka 3.9.1 at protocol 2.6): the notification (0xc1) and broker 1's registration (0xc2),
    # then the controller's delete of the notification: its watch fired first, the read goes before the startup. A
    # registration before the notification's creation stays before it.
    def events(registered_first: bool) -> list[str]:
        z = created()
        z.session_end(3)
        z.state(0, 1, [1, 2], 1)
        z.state(1, 2, [2, 1], 1)
        z.state(0, 1, [1, 2, 3], 1, session=z.sessions[1], by_leader=True)
        data = b'{"version":1,"partitions":[{"topic":"t","partition":0}]}'
        notify = ZnodeOp("create", "/isr_change_notification/isr_change_0000000001", data, 0)
        if registered_first:
            z.register(3, 0x2003)
        z.txn(z.sessions[1], notify)
        if not registered_first:
            z.register(3, 0x2003)
        z.reads(z.controller, 2)
        z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 1),
              ZnodeOp("delete", "/isr_change_notification/isr_change_0000000001"))
        return [e["type"] + ("-" + e["change"] if "change" in e else "") for e in convert(z.history()).events][-2:]

    assert events(registered_first=False) == ["IsrChangeNotification", "BrokerChange-STARTUP"]
    assert events(registered_first=True) == ["BrokerChange-STARTUP", "IsrChangeNotification"]


def _completed_to_the_assignment_write(through_znode: bool) -> Ensemble:
    """t-0 from [1, 2] to [2, 3] (asked through /admin/reassign_partitions or not); leader 1's own ISR [1, 2, 3] lets
    the controller complete it: 2 elected (B3), 1 out of the ISR (B4), the assignment [2, 3] written (B6)."""
    z = leaders_write_their_isr((1, 2, 3))
    z.topic({0: [1, 2]})
    z.state(0, 1, [1, 2], 0)
    if through_znode:
        z.txn(0x3000, ZnodeOp("create", "/admin/reassign_partitions",
                              b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,3]}]}', 0))
    z.topic({0: [2, 3, 1]}, op="setData", adding_replicas={0: [3]}, removing_replicas={0: [1]})  # A1
    z.state(0, 1, [1, 2], 1)
    z.state(0, 1, [1, 2, 3], 1, session=z.sessions[1], by_leader=True)
    z.state(0, 2, [1, 2, 3], 2)  # B3
    z.state(0, 2, [2, 3], 3)  # B4
    z.topic({0: [2, 3]}, op="setData")  # B6
    return z


def test_a_completion_whose_assignment_write_threw_is_marked_from_the_controllers_error() -> None:
    # Campaign seed 1288 (Kafka 3.9.1 at protocol 2.6): t-0 from [1, 2] to [2, 3]; leader 1's own ISR [1, 2, 3] let
    # the controller complete it (2 elected, 1 out of the ISR, the assignment written), then its session expired.
    # controller.log's "Error processing event PartitionReassignmentIsrChange(t-0)" says the assignment write threw:
    # without it the completion went on (its UpdateMetadata writes nothing).
    def marked(*logged: str) -> list[str]:
        z = _completed_to_the_assignment_write(through_znode=False)
        z.close(z.controller, "/controller", "/brokers/ids/1")
        at = "[2026-11-27 12:36:{}] {} [Controller id=1] {} (kafka.controller.KafkaController)"
        log = [at.format("00,000", "INFO", "1 successfully elected as the controller. Epoch incremented to 1 and "
                                           "epoch zk version is now 1"),
               *(at.format("58,907", "ERROR", f"Error processing event PartitionReassignmentIsrChange({p})")
                 for p in logged)]
        return [e["event_id"] for e in convert(z.history(), parse_controller_log(log)).events
                if e.get("controller_died_after_assignment")]

    assert marked("t-0") == ["zk-10-t-0"]
    assert marked() == [] and marked("t-1") == []


def test_a_completion_the_controller_died_in_before_clearing_the_reassignment_znode_is_marked() -> None:
    # Campaign seed 1408 (Kafka 3.9.1 at protocol 2.6): t-0 from [1, 2] to [2, 3] asked through
    # /admin/reassign_partitions; leader 1's own ISR [1, 2, 3] let the controller complete it (2 elected, 1 out of the
    # ISR, the assignment written: B3, B4, B6), then its broker was killed before B7 removed t-0 from the znode: the
    # UpdateMetadata of B8 never went out. A completion that went on deletes the znode (its last partition) first.
    def marked(znode: bool, cleared: bool) -> list[str]:
        z = _completed_to_the_assignment_write(through_znode=znode)
        if cleared:  # B7
            z.txn(z.controller, ZnodeOp("check", "/controller_epoch", None, 1),
                  ZnodeOp("delete", "/admin/reassign_partitions"))
        z.close(z.controller, "/controller", "/brokers/ids/1")
        return [e["event_id"] for e in convert(z.history()).events if e.get("controller_died_after_assignment")]

    [died] = marked(znode=True, cleared=False)
    assert died.endswith("-t-0")
    assert marked(znode=True, cleared=True) == [] and marked(znode=False, cleared=False) == []


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
    z = leaders_write_their_isr((4, 1, 2, 3))
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


def test_a_leaders_own_isr_write_that_a_reassignment_requests_next_partition_read_goes_before_the_request() -> None:
    # A real 2.6 run (zk campaign seed 1002): broker 1 is the controller and leads t-0 and t-1. One
    # AlterPartitionReassignments of t-0 (to [4, 1, 2]) and t-1 (in place, to [3, 1, 2]); broker 1, as leader, took 3
    # back into t-0's ISR between t-0's assignment and its bump, and into t-1's before t-1's turn. The controller reads
    # each partition's state as it comes to it (updateLeaderEpoch): both bumps carry the leader's ISR.
    z = leaders_write_their_isr((1, 2, 3, 4))
    z.topic({0: [1, 2, 3], 1: [1, 3, 2]})
    z.state(0, 1, [1, 2, 3], 0)
    z.state(1, 1, [1, 3, 2], 0)
    z.state(0, 1, [1, 2], 0, by_leader=True)
    z.state(1, 1, [1, 2], 0, by_leader=True)
    z.topic({0: [4, 1, 2, 3], 1: [1, 3, 2]}, op="setData", adding_replicas={0: [4]}, removing_replicas={0: [3]})
    z.state(0, 1, [1, 2, 3], 0, by_leader=True)
    z.state(0, 1, [1, 2, 3], 1)  # A1: the bump reads the leader's ISR
    z.state(1, 1, [1, 2, 3], 0, by_leader=True)
    z.topic({0: [4, 1, 2, 3], 1: [3, 1, 2]}, op="setData", adding_replicas={0: [4]}, removing_replicas={0: [3]})
    z.state(1, 1, [1, 2, 3], 1)  # B3, in place
    z.topic({0: [4, 1, 2, 3], 1: [3, 1, 2]}, op="setData", adding_replicas={0: [4]}, removing_replicas={0: [3]})
    events, observed, decisions = replayed(z.history())
    assert [(e["type"], e.get("partition")) for e in events[-3:]] == [
        ("IsrChange", 0), ("IsrChange", 1), ("ReassignPartitions", None)]
    [request] = [e for e in events if e["type"] == "ReassignPartitions"]
    assert [m["partition"] for m in request["partitions"]] == [0, 1]
    assert_every_history_equal(observed, decisions)


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
    z.register(2, 0x2002)
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


def test_a_reassignment_of_a_new_partition_to_its_own_replicas_completes_within_its_brokers_startup() -> None:
    # Campaign seed 1497 (Kafka 3.0.2): t-1, created on broker 3 while it was down (no state znode), and t-0 were
    # reassigned through /admin/reassign_partitions, t-1 to the [3] it had, t-0 from [1] to [3]. t-1's completion
    # threw (no leader to read), the controller dropped it from the znode and kept it in partitionsBeingReassigned.
    # Broker 3's startup elected t-1, completed it (a leader epoch bump, the assignment rewritten unchanged, the znode
    # rewritten), then resumed t-0's onto 3 (a bump): all the startup's, no reassignment of their own.
    z = Ensemble()
    z.session_end(3)
    z.topic({0: [1], 1: [3]})
    z.state(0, 1, [1], 0)
    z.txn(0x3000, ZnodeOp("create", "/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [3]}, {"topic": "t", "partition": 1, "replicas": [3]}]}).encode(),
        0))
    assigned = {0: [3, 1], 1: [3]}
    z.topic(assigned, op="setData", adding_replicas={0: [3]}, removing_replicas={0: [1]})  # t-0's U1
    z.state(0, 1, [1], 1)  # its A1
    remaining = json.dumps({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [3]}]})
    z.txn(z.controller, ZnodeOp("setData", "/admin/reassign_partitions", remaining.encode(), 1))  # t-1 failed
    z.register(3, 0x2003)
    z.state(1, 3, [3], 0)  # the startup's election
    z.state(1, 3, [3], 1)  # t-1's completion: B3, then B6 and B7
    z.topic(assigned, op="setData", adding_replicas={0: [3]}, removing_replicas={0: [1]})
    z.txn(z.controller, ZnodeOp("setData", "/admin/reassign_partitions", remaining.encode(), 2))
    z.state(0, 1, [1], 2)  # t-0 resumed: A1
    events, observed, decisions = replayed(z.history())
    startup = next(e for e in events if e.get("change") == "STARTUP")
    assert events[-1] is startup  # no reassignment after it
    assert [(o["partition"], o["leader_epoch"], o["cause_event_id"]) for o in observed[-3:]] == \
        [(1, 0, startup["event_id"]), (1, 1, startup["event_id"]), (0, 2, startup["event_id"])]
    assert_every_history_equal(observed, decisions)


def test_an_admin_reordering_of_a_new_partitions_replicas_completes_within_a_startup_of_one_of_them() -> None:
    # The same completion through the Admin API (not seen in a run; KafkaController at 2.6.3 to 3.9.0-rc3): t-1 [3, 2]
    # with both brokers down, reordered to [2, 3]: the new order written (U1), the completion threw at B3. Broker 2's
    # startup elects 2 and completes it: a leader epoch bump, the assignment rewritten unchanged.
    z = Ensemble((1, 2, 3))
    z.session_end(2)
    z.session_end(3)
    z.topic({0: [1, 3], 1: [3, 2]})
    z.state(0, 1, [1], 0)
    z.topic({0: [1, 3], 1: [2, 3]}, op="setData")  # U1
    z.register(2, 0x2002)
    z.state(1, 2, [2], 0)  # the startup's election
    z.state(1, 2, [2], 1)  # B3
    z.topic({0: [1, 3], 1: [2, 3]}, op="setData")  # B6
    events, observed, decisions = replayed(z.history())
    startup = next(e for e in events if e.get("change") == "STARTUP")
    assert events[-1] is startup
    assert [(o["leader_epoch"], o["replicas"], o["cause_event_id"]) for o in observed if o["partition"] == 1] == \
        [(0, [2, 3], startup["event_id"]), (1, [2, 3], startup["event_id"])]
    assert_every_history_equal(observed, decisions)


def test_an_alter_partition_the_controller_wrote_ends_the_events_before_it() -> None:
    # Campaign seed 1030 (Kafka 2.7.2): broker 5's startup elected nothing (t-0's ISR holds only dead broker 3),
    # then the controller wrote leader 1's AlterPartition of t-1, then an Admin API reassignment of t-0 to the target
    # in progress bumped its leader epoch again. A startup keeps a leaderless partition leaderless only resuming a
    # reassignment onto its broker or retrying a deletion: the bump is that request's.
    z = Ensemble((1, 2, 3, 4))
    z.topic({0: [3, 4], 1: [1, 2]})
    z.state(0, 3, [3, 4], 0)
    z.state(1, 1, [1, 2], 0)
    z.session_end(4)
    z.state(0, 3, [3], 1)  # broker 4's failure
    z.session_end(3)
    z.state(0, -1, [3], 2)  # broker 3's
    z.topic({0: [1, 3, 4], 1: [1, 2]}, op="setData", adding_replicas={0: [1]}, removing_replicas={0: [3, 4]})
    z.state(0, -1, [3], 3)  # the reassignment's start (A1)
    z.register(5)
    z.state(1, 1, [1], 0)  # leader 1's AlterPartition
    z.state(0, -1, [3], 4)  # the reassignment asked again
    events, observed, decisions = replayed(z.history())
    assert [e["type"] for e in events[-3:]] == ["BrokerChange", "IsrChange", "ReassignPartitions"]
    assert events[-1]["partitions"] == [{"topic": "t", "partition": 0, "replicas": [1]}]
    assert observed[-1]["cause_event_id"] == events[-1]["event_id"]
    assert_every_history_equal(observed, decisions)


def _controller_1_expired() -> tuple[Ensemble, ZkTxn]:
    """Topic t led by brokers 1 and 2; controller 1's session expired (the transaction returned), then broker 2
    elected."""
    z = Ensemble(session_timeout_ms=6000)
    z.topic({0: [1, 2, 3], 1: [2, 3, 1]})
    z.state(0, 1, [1, 2, 3], 0)
    z.state(1, 2, [2, 3, 1], 0)
    z.close(z.controller, "/controller", "/brokers/ids/1")
    expiry = z.txns[-1]
    z.txn(z.sessions[2], ZnodeOp("create", "/controller", b'{"brokerid":2}'),
          ZnodeOp("setData", "/controller_epoch", b"2", 2))
    return z, expiry


def test_an_alter_isr_a_controller_answered_after_its_session_expired_is_its_own() -> None:
    # Campaign seeds 1060, 1115, 1234 (Kafka 2.7.2, 2.8.2): the controller's session expired; before it heard so it
    # took leader 2's AlterIsr, its write threw and the leader got UNKNOWN_SERVER_ERROR 2 s after the expiry. The
    # request is that controller's (epoch 1, brokers 1 to 3), before the next one's election; an answer past the
    # session's timeout, or with another error, stays at its answer's time.
    z, expiry = _controller_1_expired()

    epoch = next(t.zxid for t in z.txns if t.ops[0].path == "/brokers/ids/2")  # broker 2's registration

    def asked(ms: int, error: int) -> AlterPartitionRequest:
        answered = datetime.fromtimestamp((expiry.time + ms) / 1000, UTC).replace(tzinfo=None)
        return AlterPartitionRequest(2, epoch, answered, answered,
                                     (AskedPartition("t", 1, 0, (2, 3), False, 0, error),))

    requests = [asked(2000, -1), asked(2500, INVALID_UPDATE_VERSION), asked(7000, -1)]
    converted = convert(z.history(), alter_partitions=requests)
    shown = [(e["type"], e["controller_epoch"], e.get("write_failed", False)) for e in converted.events[-4:]]
    assert shown == [("IsrChange", 1, True), ("ControllerChange", 2, False), ("IsrChange", 2, False),
                     ("IsrChange", 2, False)]
    assert converted.events[-4]["event_id"] == f"zk-{expiry.zxid}-alter-partition-2-{expiry.time + 2000}-t-1"
    records = [(n, json.dumps(e).encode()) for n, e in enumerate(converted.events)]
    audit = run_local(records, ControllerConfig(rules=ZK)).audit
    assert [(r["outcome"], r["error"]) for r in audit if r["event_id"] == converted.events[-4]["event_id"]] == \
        [("REJECTED", "UNKNOWN_SERVER_ERROR")]


@pytest.mark.parametrize("read_between", [False, True])
def test_topics_whose_partitions_znodes_the_controller_creates_one_after_the_other_were_read_together(
        read_between: bool) -> None:
    # Seed 1216: t6 and t7 created 7 ms apart, both found by one read of /brokers/topics: the controller created
    # t6's then t7's partitions znode (consecutive cxids), their partitions' znodes, then their states. t8, created
    # later, its own read (a getChildren between), is alone. Seed 1260 (Kafka 2.7.2): a read of the controller's
    # broker's other threads, in its session, came between the two pipelined creates (cxids 126 and 128): still one
    # read, no write of the controller's between them.
    z = Ensemble()
    admin, check = z.sessions[2], ZnodeOp("check", "/controller_epoch", None, 1)
    assignments = {"t6": {"0": [1, 2]}, "t7": {"0": [2, 3], "1": [3, 1]}, "t8": {"0": [3]}}

    def topic(name: str) -> None:
        z.txn(admin, ZnodeOp("create", f"/brokers/topics/{name}", json.dumps({"partitions": assignments[name]}
                                                                              ).encode(), 0))

    def partitions(*names: str) -> None:
        z.reads(z.controller)  # processTopicChange's getChildren
        for name in names:
            z.txn(z.controller, check, ZnodeOp("create", f"/brokers/topics/{name}/partitions", b"", 0))
            if read_between:
                z.reads(z.controller)
        for name in names:
            for p, replicas in assignments[name].items():
                z.txn(z.controller, check, ZnodeOp("create", f"/brokers/topics/{name}/partitions/{p}", b"", 0))
                z.state(int(p), replicas[0], replicas, 0, topic=name)

    topic("t6")
    topic("t7")
    partitions("t6", "t7")
    topic("t8")
    partitions("t8")
    events, observed, decisions = replayed(z.history())
    created = [(e["topic"], e.get("topics")) for e in events if e["type"] == "CreateTopic"]
    assert created == [("t6", ["t6", "t7"]), ("t7", ["t6", "t7"]), ("t8", None)]
    assert_every_history_equal(observed, decisions)
    controller = Controller(ControllerConfig(rules=ZK))
    sent = [controller.handle_event(parse_event(json.dumps(e).encode()), i).requests for i, e in enumerate(events)]
    assert [sorted({(p.topic, p.partition) for r in requests for p in r.partitions}) for requests in sent[-3:]] == [
        [], [("t6", 0), ("t7", 0), ("t7", 1)], [("t8", 0)]]


def test_an_alter_partition_a_deposed_controller_answered_not_controller_still_sent_its_update_metadata() -> None:
    # Campaign seed 1289 (Kafka 3.5.2): controller 3, paused, its session expired; when it came back it took leader
    # 2's AlterPartition of t2-1, asked at leader epoch 5 while it cached 2: NOT_CONTROLLER for the partition, no write,
    # and still the request's UpdateMetadata to the brokers it knew. The leader logged no answer from it, only its
    # channel's disconnect from it, and asked the next controller. The request is that controller's, before the next
    # one's election. Not a disconnect from it once it registered again (it had resigned, or restarted: a top-level
    # NOT_CONTROLLER, nothing sent), nor from a broker that was not the controller.
    z, expiry = _controller_1_expired()
    z.wait(1000)
    z.register(1, session=0x2001)  # broker 1 back, 1 s after the expiry
    epoch = next(t.zxid for t in z.txns if t.ops[0].path == "/brokers/ids/2")  # broker 2's registration

    def asked(disconnected_from: int, ms: int) -> AlterPartitionRequest:
        def at(after: int) -> datetime:
            return datetime.fromtimestamp((expiry.time + after) / 1000, UTC).replace(tzinfo=None)
        return AlterPartitionRequest(2, epoch, at(ms - 100), at(ms + 20),
                                     (AskedPartition("t", 1, 1, (2, 3), False, 1, 0),),
                                     redirected=((disconnected_from, expiry.time + ms),))

    requests = [asked(1, 500), asked(1, 1500), asked(3, 600)]
    converted = convert(z.history(), alter_partitions=requests)
    deposed = [e for e in converted.events if e.get("write_failed")]
    assert [(e["event_id"], e["controller_epoch"], e["leader_epoch"]) for e in deposed] == [
        (f"zk-{expiry.zxid}-alter-partition-2-{expiry.time + 520}-not-controller-{expiry.time + 500}-t-1", 1, 1)]
    after = converted.events[converted.events.index(deposed[0]) + 1]
    assert (after["type"], after["controller_epoch"]) == ("ControllerChange", 2)  # before the next one's election
    records = [(n, json.dumps(e).encode()) for n, e in enumerate(converted.events)]
    replay = run_local(records, ControllerConfig(rules=ZK))
    assert [(r["outcome"], r["error"]) for r in replay.audit if r["event_id"] == deposed[0]["event_id"]] == \
        [("REJECTED", "NOT_CONTROLLER")]
    assert [(r["request"], r["broker"], r["partition_count"]) for r in replay.requests
            if r["event_id"] == deposed[0]["event_id"]] == [("UPDATE_METADATA", b, 1) for b in (1, 2, 3)]
