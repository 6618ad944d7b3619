"""What ZooKeeper's files hold, as plain records: the transactions of `version-2/log.<zxid>` and the znodes of
`version-2/snapshot.<zxid>`. Everything a ZooKeeper-mode controller reads or decides is a znode write, so these
records are the whole input of the importer (convert.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True)
class ZnodeOp:
    """One change inside a transaction (a multi holds several, in order)."""

    kind: str  # create | delete | setData | check | createSession | closeSession | error
    path: str = ""
    data: bytes | None = None
    # setData: the znode's version after the write (Kafka's zkVersion); create: 0; check: the version checked.
    version: int = -1
    ephemeral: bool = False
    # closeSession: the ephemeral znodes the session's end deleted (written since ZooKeeper 3.6).
    deleted: tuple[str, ...] = ()
    error: int = 0  # error: ZooKeeper's error code


@dataclass(frozen=True, slots=True)
class ZkTxn:
    """One transaction: its zxid, time (ms), the session that wrote it, and its changes."""

    zxid: int
    time: int
    session: int
    cxid: int
    ops: tuple[ZnodeOp, ...]

    @property
    def failed(self) -> bool:
        """ZooKeeper logs a multi that failed with the failing op (and the ops after it) as errors, the ops
        before it as they were: a multi with any error changed nothing."""
        return any(op.kind == "error" for op in self.ops)


@dataclass(frozen=True, slots=True)
class Znode:
    """A znode as a snapshot holds it."""

    path: str
    data: bytes
    version: int  # the data version: for a partition state znode, Kafka's zkVersion
    czxid: int  # the creating zxid: for /brokers/ids/N, the broker epoch
    mzxid: int
    ephemeral_owner: int  # the owning session, 0 for a persistent znode


@dataclass(frozen=True)
class ZkSnapshot:
    """A fuzzy snapshot: taken while transactions went on, so the log is replayed from `zxid` on."""

    zxid: int
    nodes: dict[str, Znode]
    sessions: dict[int, int]  # session id -> timeout (ms)
    path: Path


@dataclass
class ZkHistory:
    """A server's retained history: the snapshot the state starts from (or None: from zxid 0), then every
    transaction after it, once each, in zxid order."""

    snapshot: ZkSnapshot | None
    txns: list[ZkTxn]
    files: list[Path]
    origin: str  # where the state starts, and why
    skipped: dict[str, int] = field(default_factory=dict)  # what was left out, by reason (a torn tail, ...)
