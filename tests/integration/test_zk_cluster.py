"""A real ZooKeeper-mode cluster (ZooKeeper 3.8.4 and Kafka 3.9.1 brokers, streaming/infra/zkcluster.py) put
through a broker failure (kill -9), a controlled shutdown (SIGTERM), restarts and a controller's session expiry;
then what a user would check: ZooKeeper's transaction log (read with read_zk_history) holds the session ends and
the controller's partition-state writes, matching what the brokers report, and the controller's state-change.log
holds the requests it sent. A second, smaller cluster at inter.broker.protocol.version 2.6 shows a leader writing
its own ISR shrink and announcing it under /isr_change_notification. Each cluster runs its scenario once per module
and is stopped by pid on teardown, also when the scenario fails."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from streaming.infra.zkcluster import ZkCluster
from streaming.zookeeper.files import read_zk_history
from streaming.zookeeper.statechange import LEADER_AND_ISR, ControlRequest, read_state_change_log
from streaming.zookeeper.txnlog import ZkHistory, ZkTxn, ZnodeOp

pytestmark = pytest.mark.zk_cluster

TOPIC = "t"


@dataclass
class Run:
    """What the scenario did and saw, for the tests to check against the files it left."""

    cluster: ZkCluster
    controller: int = -1  # the controller while the brokers failed
    killed: int = -1
    terminated: int = -1
    new_controller: int = -1  # after the first controller's session expired
    seen: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)  # describe() after each step
    history: ZkHistory | None = None


def changes(history: ZkHistory) -> Iterator[tuple[ZkTxn, ZnodeOp]]:
    """Every op that changed something, in zxid order (a failed multi changed nothing)."""
    for txn in history.txns:
        if not txn.failed:
            for op in txn.ops:
                yield txn, op


def broker_sessions(history: ZkHistory, broker_id: int) -> list[int]:
    """The sessions broker `broker_id` registered with, in order: each /brokers/ids/N create names one."""
    return [t.session for t, op in changes(history) if op.kind == "create" and op.path == f"/brokers/ids/{broker_id}"]


def session_end(history: ZkHistory, session: int) -> ZkTxn:
    [end] = [t for t, op in changes(history) if op.kind == "closeSession" and t.session == session]
    return end


def state_writes(history: ZkHistory, topic: str = TOPIC) -> list[tuple[ZkTxn, int, ZnodeOp, dict[str, Any]]]:
    """(txn, partition, op, partition state) of each create or setData of the topic's partition state znodes."""
    state = re.compile(rf"^/brokers/topics/{topic}/partitions/(\d+)/state$")
    return [(t, int(m.group(1)), op, json.loads(op.data or b"{}")) for t, op in changes(history)
            if op.kind in ("create", "setData") and (m := state.match(op.path))]


def full_isr(c: ZkCluster) -> bool:
    return all(p["leader"] >= 0 and p["isr"] == [1, 2, 3] for p in c.describe(TOPIC).values())


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    cluster = ZkCluster(brokers=3, root=tmp_path_factory.mktemp("zk-cluster"))
    r = Run(cluster)
    try:
        cluster.start()
        cluster.create_topic(TOPIC, {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
        cluster.wait_until(lambda: full_isr(cluster), what="every partition led, full ISRs")
        r.seen["created"] = cluster.describe(TOPIC)
        r.controller = cluster.controller_id()
        # kill -9 a broker that leads a partition and is not the controller: its session times out, then the
        # controller moves the leadership.
        r.killed = next(p["leader"] for p in r.seen["created"].values() if p["leader"] != r.controller)
        cluster.kill(r.killed)
        cluster.wait_fenced(r.killed)
        cluster.wait_until(lambda: all(p["leader"] not in (-1, r.killed) for p in cluster.describe(TOPIC).values()),
                           what=f"leadership moved off broker {r.killed}")
        r.seen["killed"] = cluster.describe(TOPIC)
        # SIGTERM the other non-controller: a controlled shutdown, through the controller.
        r.terminated = next(b for b in cluster.brokers if b not in (r.controller, r.killed))
        cluster.terminate(r.terminated)
        cluster.wait_fenced(r.terminated)
        r.seen["terminated"] = cluster.describe(TOPIC)
        cluster.restart(r.killed)
        cluster.restart(r.terminated)
        cluster.wait_until(lambda: full_isr(cluster), what="restarted brokers back in every ISR")
        # The controller pauses past its session timeout: ZooKeeper deletes /controller and another broker is
        # elected; the old one registers again.
        cluster.expire_session(r.controller)
        r.new_controller = cluster.wait_for_controller(other_than=r.controller)
        cluster.wait_until(lambda: full_isr(cluster), what="every ISR full after the controller moved")
        r.seen["final"] = cluster.describe(TOPIC)
        # Read while the cluster runs (ZooKeeper logs a transaction before it answers): stopping the brokers
        # writes more (their controlled shutdowns).
        r.history = read_zk_history(cluster.zookeeper_data_dir)
    finally:
        cluster.stop()  # by pid, also when the scenario failed
    assert not cluster.pids
    yield r


def test_zookeeper_rolled_its_log_and_took_snapshots(run: Run) -> None:
    version2 = run.cluster.zookeeper_data_dir / "version-2"
    assert len(list(version2.glob("log.*"))) > 1 and list(version2.glob("snapshot.*"))
    history = read_zk_history(run.cluster.zookeeper_data_dir)
    assert history.snapshot is None and not history.skipped  # autopurge off: from the first transaction on
    assert run.history is not None and history.txns[:len(run.history.txns)] == run.history.txns


def test_kill_9_ends_the_brokers_session_and_the_controller_moves_its_leaderships(run: Run) -> None:
    history = run.history
    assert history is not None
    first_session = broker_sessions(history, run.killed)[0]
    end = session_end(history, first_session)
    [close] = end.ops
    assert f"/brokers/ids/{run.killed}" in close.deleted
    led = [p for p, s in run.seen["created"].items() if s["leader"] == run.killed]
    assert led
    for partition in led:
        # The controller's first write for the partition after the session ended: a new leader, the dead broker
        # out of the ISR, the leader epoch bumped; the same leader the brokers reported.
        after = [(t, st) for t, p, _, st in state_writes(history) if p == partition and t.zxid > end.zxid]
        txn, state = after[0]
        assert state["leader"] == run.seen["killed"][partition]["leader"] != run.killed
        assert run.killed not in state["isr"]
        assert txn.session != first_session


def test_controlled_shutdown_moves_leaderships_before_the_session_ends(run: Run) -> None:
    history = run.history
    assert history is not None
    end = session_end(history, broker_sessions(history, run.terminated)[0])
    assert f"/brokers/ids/{run.terminated}" in end.ops[0].deleted
    before = [st for t, _, _, st in state_writes(history) if t.zxid < end.zxid and st["leader"] != run.terminated
              and run.terminated not in st["isr"]]
    assert before, "the controller should have taken the broker out of leaderships and ISRs before it left"
    for state in run.seen["terminated"].values():
        assert state["leader"] == run.controller and state["isr"] == [run.controller]


def test_partition_state_writes_have_increasing_versions_and_end_where_the_brokers_say(run: Run) -> None:
    history = run.history
    assert history is not None
    writes = state_writes(history)
    for partition in (0, 1, 2):
        mine = [(op, st) for _, p, op, st in writes if p == partition]
        assert mine[0][0].kind == "create" and mine[0][0].version == 0
        assert [op.version for op, _ in mine] == list(range(len(mine)))  # zkVersion: +1 per write
        epochs = [st["leader_epoch"] for _, st in mine]
        assert epochs == sorted(epochs)
        last = mine[-1][1]
        assert (last["leader"], sorted(last["isr"])) == (run.seen["final"][partition]["leader"],
                                                          run.seen["final"][partition]["isr"])


def test_a_controllers_session_expiry_elects_another_controller(run: Run) -> None:
    history = run.history
    assert history is not None
    controls = [(t, json.loads(op.data or b"{}")["brokerid"]) for t, op in changes(history)
                if op.kind == "create" and op.path == "/controller"]
    assert [b for _, b in controls][:1] == [run.controller] and run.new_controller in [b for _, b in controls]
    end = session_end(history, controls[0][0].session)
    assert "/controller" in end.ops[0].deleted and f"/brokers/ids/{run.controller}" in end.ops[0].deleted
    # It registered again under a new session.
    assert len(broker_sessions(history, run.controller)) == 2


def test_the_controllers_state_change_log_holds_the_requests_it_sent(run: Run) -> None:
    lines = run.cluster.state_change_log(run.controller).read_text().splitlines()
    leader_and_isr = [ln for ln in lines if "] TRACE [Controller id=" in ln
                      and f"LeaderAndIsr request LeaderAndIsrPartitionState(topicName='{TOPIC}'," in ln]
    assert any("Sending become-leader" in ln for ln in leader_and_isr)
    assert any("Sending become-follower LeaderAndIsr request" in ln and f"to broker {run.killed} " in ln
               for ln in leader_and_isr), "the restarted broker should have been told to follow"
    assert any("] INFO [Controller id=" in ln and "Sending UpdateMetadata request to brokers" in ln for ln in lines)
    # As a broker too, it cached what its own UpdateMetadata requests said (TRACE).
    assert any(" TRACE " in ln and f"Cached leader info UpdateMetadataPartitionState(topicName='{TOPIC}'," in ln
               for ln in lines)
    # Read as requests: every LeaderAndIsr the killed broker received from this controller is one it sent, in order.
    sent = [r for r in read_state_change_log(run.cluster.state_change_log(run.controller)).requests
            if r.direction == "sent" and r.request == LEADER_AND_ISR and r.broker == run.killed]
    received = [r for r in read_state_change_log(run.cluster.state_change_log(run.killed)).requests
                if r.request == LEADER_AND_ISR and r.controller_id == run.controller]
    assert received and _in_order([_states(r) for r in received], [_states(r) for r in sent])


def _states(r: ControlRequest) -> list[tuple[object, ...]]:
    return [(p.topic, p.partition, p.leader, p.leader_epoch, p.isr, p.zk_version, p.is_new) for p in r.partitions]


def _in_order(items: list[Any], within: list[Any]) -> bool:
    """Whether `items` appear in `within` in the same order (a request sent to a broker that dies is never
    received)."""
    rest = iter(within)
    return all(any(item == other for other in rest) for item in items)


# ---- inter.broker.protocol.version 2.6: leaders write their own ISR changes ----------------------------------

@pytest.fixture(scope="module")
def ibp26(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ZkCluster, ZkHistory, int]]:
    """The cluster (stopped), its history, and u-0's leader: the broker that is not the controller, so that its
    own writes are told apart from the controller's by their session."""
    # replica.lag.time.max.ms 2 s: the leader drops the paused follower within 3 s, well inside the 6 s session.
    cluster = ZkCluster(brokers=2, inter_broker_protocol="2.6", root=tmp_path_factory.mktemp("zk-ibp26"),
                        extra_broker_config={"replica.lag.time.max.ms": "2000"})
    try:
        cluster.start()
        follower = cluster.wait_for_controller()
        leader = 3 - follower
        cluster.create_topic("u", {0: [leader, follower]})
        cluster.wait_until(lambda: cluster.describe("u")[0]["leader"] == leader
                           and cluster.describe("u")[0]["isr"] == [1, 2], what=f"u-0 led by {leader}, ISR [1, 2]")
        producer = cluster.producer()
        try:
            producer.send("u", b"x", partition=0).get(timeout=10)
            cluster.pause(follower)
            deadline = time.monotonic() + 4
            while time.monotonic() < deadline and not _leader_isr_writes(
                    read_zk_history(cluster.zookeeper_data_dir), leader):
                # The leader's log end moves on; the paused follower's does not.
                producer.send("u", b"x", partition=0).get(timeout=2)
                time.sleep(0.3)
        finally:
            cluster.resume(follower)
            producer.close(timeout=5)
        cluster.wait_until(lambda: _notifications(read_zk_history(cluster.zookeeper_data_dir)), timeout=20,
                           what="an /isr_change_notification")
        cluster.wait_until(lambda: cluster.describe("u")[0]["isr"] == [1, 2], timeout=20, what="follower back")
    finally:
        cluster.stop()
    assert not cluster.pids
    yield cluster, read_zk_history(cluster.zookeeper_data_dir), leader


def _leader_isr_writes(history: ZkHistory, leader: int) -> list[tuple[ZkTxn, dict[str, Any]]]:
    """Writes of u-0's state by the leader's session, not the controller's."""
    leader_sessions = set(broker_sessions(history, leader))
    controller_session = None  # the session that created /controller last: the controller's
    writes = []
    for t, op in changes(history):
        if op.kind == "create" and op.path == "/controller":
            controller_session = t.session
        if (op.kind == "setData" and op.path == "/brokers/topics/u/partitions/0/state"
                and t.session in leader_sessions and t.session != controller_session):
            writes.append((t, json.loads(op.data or b"{}")))
    return writes


def _notifications(history: ZkHistory) -> list[tuple[ZkTxn, ZnodeOp]]:
    return [(t, op) for t, op in changes(history)
            if op.kind == "create" and re.fullmatch(r"/isr_change_notification/isr_change_\d+", op.path)]


def test_at_ibp_2_6_the_leader_writes_its_own_isr_shrink_and_announces_it(
        ibp26: tuple[ZkCluster, ZkHistory, int]) -> None:
    _, history, leader = ibp26
    [(shrink_txn, shrink), *_] = _leader_isr_writes(history, leader)
    assert shrink["leader"] == leader and shrink["isr"] == [leader]
    created = [st for t, p, _, st in state_writes(history, "u") if p == 0 and t.zxid < shrink_txn.zxid]
    assert shrink["leader_epoch"] == created[-1]["leader_epoch"]  # a leader's ISR change keeps the epoch
    [(note_txn, note), *_] = _notifications(history)
    assert note_txn.session == shrink_txn.session and note_txn.zxid > shrink_txn.zxid
    assert {"topic": "u", "partition": 0} in json.loads(note.data or b"{}")["partitions"]
    # The controller deletes the notification once it has read it.
    assert any(op.kind == "delete" and op.path == note.path for _, op in changes(history))


def test_teardown_left_no_process(run: Run, ibp26: tuple[ZkCluster, ZkHistory, int]) -> None:
    assert not run.cluster.pids and not ibp26[0].pids
    assert all(not b.running for b in (*run.cluster.brokers.values(), run.cluster.zookeeper))
