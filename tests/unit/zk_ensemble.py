"""A ZooKeeper ensemble's transactions written by hand, as a ZooKeeper-mode cluster writes them, and the replay of
what the importer makes of them (tests of streaming/zookeeper: test_zk_convert, test_zk_convert_dirs)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from statemachine.controller import ControllerConfig
from statemachine.rules import ZK
from streaming.engine.local import run_local
from streaming.history.histories import history_rows
from streaming.zookeeper.convert import convert
from streaming.zookeeper.txnlog import ZkHistory, ZkTxn, ZnodeOp

DATA = Path(__file__).parent / "zkdata"
STATE = "/brokers/topics/{}/partitions/{}/state"
INVALID_UPDATE_VERSION = 108  # Kafka's error code


def replayed(history: ZkHistory) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    converted = convert(history)
    return converted.events, converted.observed, decisions_of(converted.events)


def decisions_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The decisions of the importer's `events` under the ZooKeeper rules."""
    records = [(n, json.dumps(e).encode()) for n, e in enumerate(events)]
    return run_local(records, ControllerConfig(rules=ZK)).decisions


def mark_line(at_ms: int, replicas: str, broker: int, controller: int = 1) -> str:
    """A controller's state-change.log line marking `replicas` ("t-0,t-1") on `broker` offline at `at_ms`."""
    at = datetime.fromtimestamp(at_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    return f"[{at}] INFO [Controller id={controller}] Mark replicas {replicas} on broker {broker} as offline " \
           "(state.change.logger)\n"


def assert_every_history_equal(observed: list[dict[str, Any]], decisions: list[dict[str, Any]]) -> None:
    histories = history_rows(observed, decisions)
    assert histories and all(h["match"] for h in histories), [h["first_difference"] for h in histories
                                                              if not h["match"]]


class Ensemble:
    """Transactions as a ZooKeeper-mode cluster writes them: brokers' sessions, the controller's multis."""

    def __init__(self, brokers: tuple[int, ...] = (1, 2, 3), session_timeout_ms: int | None = None) -> None:
        self.txns: list[ZkTxn] = []
        self.cxids: dict[int, int] = {}  # per session: the client's request count (reads count too)
        self.sessions = {b: 0x1000 + b for b in brokers}
        self.waited = 0  # ms: each transaction comes 1 ms after the one before, plus the waits
        for b in brokers:
            if session_timeout_ms is not None:  # each broker's session, with the timeout it negotiated
                self.txn(self.sessions[b], ZnodeOp("createSession", version=session_timeout_ms))
            self.txn(self.sessions[b], ZnodeOp("create", f"/brokers/ids/{b}", b"{}", 0, ephemeral=True))
        self.txn(self.sessions[brokers[0]], ZnodeOp("create", "/controller", b'{"brokerid":%d}' % brokers[0]),
                 ZnodeOp("setData", "/controller_epoch", b"1", 1))
        self.controller = self.sessions[brokers[0]]
        self.versions: dict[tuple[str, int], int] = {}  # per partition state znode

    @property
    def zxid(self) -> int:
        return len(self.txns) + 1

    @property
    def now(self) -> int:
        """The next transaction's time (ms)."""
        return 1_700_000_000_000 + self.zxid + self.waited

    def wait(self, ms: int) -> None:
        self.waited += ms

    def txn(self, session: int, *ops: ZnodeOp) -> None:
        self.cxids[session] = self.cxids.get(session, 0) + 1
        self.txns.append(ZkTxn(self.zxid, self.now, session, self.cxids[session], ops))

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
              recovering: bool = False, by_leader: bool = False, topic: str = "t") -> None:
        """The controller's write of `topic`'s partition state (a multi checking /controller_epoch), or with
        `by_leader` a leader's own write of its ISR below protocol 2.7 (a bare setData), in `session` (default: the
        controller's)."""
        version = self.versions.get((topic, partition), -1) + 1
        self.versions[(topic, partition)] = version
        data = {"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": leader_epoch, "isr": isr,
                **({"leader_recovery_state": 1} if recovering else {})}
        write = ZnodeOp("create" if version == 0 else "setData", STATE.format(topic, partition),
                        json.dumps(data).encode(), version)
        self.txn(session or self.controller, *(() if by_leader else (ZnodeOp("check", "/controller_epoch", None, 1),)),
                 write)

    def elect(self, broker: int, epoch: int) -> None:
        """Broker `broker` becomes the controller of `epoch` (its failover's first write)."""
        self.txn(self.sessions[broker], ZnodeOp("create", "/controller", b'{"brokerid":%d}' % broker),
                 ZnodeOp("setData", "/controller_epoch", str(epoch).encode(), epoch))
        self.controller = self.sessions[broker]

    def register(self, broker: int, session: int | None = None) -> None:
        """Broker `broker` registers in `session` (default 0x1000 + its id; a new one when it comes back)."""
        self.sessions[broker] = session or 0x1000 + broker
        self.txn(self.sessions[broker], ZnodeOp("create", f"/brokers/ids/{broker}", b"{}", 0, ephemeral=True))

    def close(self, session: int, *deleted: str, clean: bool = False) -> None:
        """The end of a session: closed by its client (a clean shutdown: the client's next cxid), or expired (a kill
        -9: the server closes it, cxid 0)."""
        op = ZnodeOp("closeSession", deleted=deleted)
        if clean:
            self.txn(session, op)
        else:
            self.txns.append(ZkTxn(self.zxid, self.now, session, 0, (op,)))

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


def leaders_write_their_isr(brokers: tuple[int, ...] = (1, 2, 3)) -> Ensemble:
    """An ensemble below protocol 2.7: a leader announces its own ISR writes under /isr_change_notification (the
    first broker the controller)."""
    z = Ensemble(brokers)
    z.txn(z.sessions[1], ZnodeOp("create", "/isr_change_notification/isr_change_0000000000",
                                 b'{"version":1,"partitions":[]}', 0))
    return z
