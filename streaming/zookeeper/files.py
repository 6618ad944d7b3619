"""Read a ZooKeeper server's files: the transaction logs (`log.<zxid>`) and snapshots (`snapshot.<zxid>`) of its
`dataDir/version-2`, in ZooKeeper's own format (jute: big-endian ints and longs, length-prefixed byte buffers and
UTF-8 strings, -1 for null).

A log file is a header (magic ZKLG, version 2, dbid), then one record per transaction: an Adler-32 checksum
(long), the transaction's bytes (a buffer), and the end-of-record byte 'B'. ZooKeeper preallocates the file with
zeros: a record of length 0 is the end. A record cut short (the server died while writing it) is the end too, and
counted. A transaction is a header (session, cxid, zxid, time, type) and a body by type; since ZooKeeper 3.6 a
digest may follow it, which is skipped.

A snapshot is a header (magic ZKSN), the sessions, the ACL cache, then every znode (path, data, ACL reference,
stat) until the path "/"; a checksum and, since 3.6, a digest follow, which are not needed here.
"""

from __future__ import annotations

import mmap
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from streaming.errors import UsageError
from streaming.zookeeper.txnlog import ZkHistory, ZkSnapshot, ZkTxn, Znode, ZnodeOp

LOG_MAGIC = b"ZKLG"
SNAPSHOT_MAGIC = b"ZKSN"
_LOG = re.compile(r"^log\.([0-9a-f]+)$")
_SNAPSHOT = re.compile(r"^snapshot\.([0-9a-f]+)$")

# ZooDefs.OpCode values of the transactions a server logs.
CREATE, DELETE, SET_DATA, SET_ACL, CHECK, MULTI, CREATE2 = 1, 2, 5, 7, 13, 14, 15
CREATE_CONTAINER, DELETE_CONTAINER, CREATE_TTL = 19, 20, 21
CREATE_SESSION, CLOSE_SESSION, ERROR = -10, -11, -1


class FormatError(ValueError):
    """A file that is not what ZooKeeper writes."""


@dataclass
class _Reader:
    """Jute's binary input over one buffer."""

    data: bytes
    pos: int = 0

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise EOFError(f"{n} bytes wanted at {self.pos} of {len(self.data)}")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def int(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def long(self) -> int:
        return int(struct.unpack(">q", self._take(8))[0])

    def bool(self) -> bool:
        return self._take(1) != b"\0"

    def buffer(self) -> bytes | None:
        n = self.int()
        return None if n < 0 else self._take(n)

    def string(self) -> str:
        raw = self.buffer()
        return "" if raw is None else raw.decode("utf-8")

    def acls(self) -> None:
        for _ in range(max(self.int(), 0)):  # perms, scheme, id: not needed
            self.int()
            self.string()
            self.string()

    @property
    def left(self) -> int:
        return len(self.data) - self.pos


def _op(kind: int, r: _Reader) -> ZnodeOp:
    """One transaction body (zookeeper.jute's *Txn records)."""
    if kind in (CREATE, CREATE2, CREATE_CONTAINER, CREATE_TTL):
        path, data = r.string(), r.buffer()
        r.acls()
        ephemeral = r.bool() if kind in (CREATE, CREATE2) else False
        return ZnodeOp("create", path, data, 0, ephemeral)
    if kind in (DELETE, DELETE_CONTAINER):
        return ZnodeOp("delete", r.string())
    if kind == SET_DATA:
        path, data = r.string(), r.buffer()
        return ZnodeOp("setData", path, data, r.int())
    if kind == CHECK:
        path = r.string()
        return ZnodeOp("check", path, version=r.int())
    if kind == SET_ACL:
        path = r.string()
        r.acls()
        return ZnodeOp("setACL", path, version=r.int())
    if kind == CREATE_SESSION:
        return ZnodeOp("createSession", version=r.int())  # the session timeout (ms)
    if kind == CLOSE_SESSION:  # the ephemeral znodes it deleted: since ZooKeeper 3.6 (`with_deleted_ephemerals`)
        paths = tuple(r.string() for _ in range(max(r.int(), 0))) if r.left >= 4 else ()
        return ZnodeOp("closeSession", deleted=paths)
    if kind == ERROR:
        return ZnodeOp("error", error=r.int())
    raise FormatError(f"transaction type {kind} is not one a ZooKeeper server logs")


def decode_txn(raw: bytes) -> ZkTxn:
    """One transaction's bytes: header and body (a multi's sub-transactions in order)."""
    r = _Reader(raw)
    session, cxid, zxid, time, kind = r.long(), r.int(), r.long(), r.long(), r.int()
    if kind == MULTI:
        ops = []
        for _ in range(max(r.int(), 0)):
            sub_kind = r.int()
            ops.append(_op(sub_kind, _Reader(r.buffer() or b"")))
        return ZkTxn(zxid, time, session, cxid, tuple(ops))
    return ZkTxn(zxid, time, session, cxid, (_op(kind, r),))


@dataclass
class LogFile:
    path: Path
    txns: list[ZkTxn]
    torn: int  # records cut short at the end (0 or 1)


LOG_HEADER_BYTES = 16  # magic, format version, dbid


def read_log(path: Path) -> LogFile:
    """Every transaction of one `log.<zxid>` file, in file order."""
    txns, _, torn = read_log_from(path, LOG_HEADER_BYTES)
    return LogFile(Path(path), txns, torn)


def read_log_from(path: Path, position: int) -> tuple[list[ZkTxn], int, int]:
    """The whole transactions of a `log.<zxid>` file from byte `position` (a record's start; `LOG_HEADER_BYTES` for
    the first), the position after the last of them, and 1 if a record after it is cut short (a server still
    writing it: read it at the next call), else 0. The preallocated zeros end the records."""
    with Path(path).open("rb") as fh:
        # Mapped, not read: a follower's poll touches the bytes after `position` up to the preallocated zeros only,
        # whatever the file's size.
        data: bytes | mmap.mmap = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if fh.seek(0, 2) else b""
    r = _Reader(data)  # type: ignore[arg-type]
    try:
        magic, version = r._take(4), r.int()
        r.long()  # dbid
    except EOFError:
        raise FormatError(f"{path}: too short for a ZooKeeper transaction log header") from None
    if magic != LOG_MAGIC:
        raise FormatError(f"{path}: not a ZooKeeper transaction log (magic {magic!r}, expected {LOG_MAGIC!r})")
    if version != 2:
        raise FormatError(f"{path}: transaction log format version {version}, expected 2")
    r.pos = max(position, LOG_HEADER_BYTES)
    txns, torn, end = [], 0, r.pos
    while r.left >= 12:
        start = r.pos
        crc, length = r.long(), r.int()
        if length == 0:  # the preallocated zeros
            break
        if length < 0 or r.left < length + 1:
            torn = 1
            break
        raw = r._take(length)
        if r._take(1) != b"B":
            raise FormatError(f"{path}: no end-of-record byte after the record at byte {start}")
        if zlib.adler32(raw) != crc & 0xFFFFFFFF:
            raise FormatError(f"{path}: checksum mismatch in the record at byte {start}")
        txns.append(decode_txn(raw))
        end = r.pos
    if 0 < r.left < 12 and any(data[r.pos:]):
        torn = 1  # a record header cut short
    if isinstance(data, mmap.mmap):
        data.close()
    return txns, end, torn


def log_files(directory: Path) -> list[Path]:
    """A version-2 directory's `log.<zxid>` files, oldest first."""
    return _files(Path(directory), _LOG)


def snapshot_files(directory: Path) -> list[Path]:
    """A version-2 directory's `snapshot.<zxid>` files, oldest first."""
    return _files(Path(directory), _SNAPSHOT)


def read_snapshot(path: Path) -> ZkSnapshot:
    """The sessions and znodes of one `snapshot.<zxid>` file."""
    r = _Reader(Path(path).read_bytes())
    try:
        magic, version = r._take(4), r.int()
        r.long()  # dbid
        if magic != SNAPSHOT_MAGIC:
            raise FormatError(f"{path}: not a ZooKeeper snapshot (magic {magic!r}, expected {SNAPSHOT_MAGIC!r}; "
                              f"a compressed snapshot is not read)")
        if version != 2:
            raise FormatError(f"{path}: snapshot format version {version}, expected 2")
        sessions = {}
        for _ in range(r.int()):
            session = r.long()
            sessions[session] = r.int()
        for _ in range(r.int()):  # the ACL cache: reference -> ACL list
            r.long()
            r.acls()
        nodes = {}
        while (name := r.string()) != "/":
            data = r.buffer() or b""
            r.long()  # the ACL reference
            czxid, mzxid = r.long(), r.long()
            r.long()  # ctime
            r.long()  # mtime
            node_version = r.int()
            r.int()  # cversion
            r.int()  # aversion
            owner = r.long()
            r.long()  # pzxid
            path_name = name or "/"  # the root is written with an empty path
            nodes[path_name] = Znode(path_name, data, node_version, czxid, mzxid, owner)
    except EOFError:
        raise FormatError(f"{path}: cut short") from None
    return ZkSnapshot(file_zxid(Path(path)), nodes, sessions, Path(path))


def file_zxid(path: Path) -> int:
    """The zxid in a file's name: a log's first transaction, a snapshot's last one when it started."""
    m = _LOG.match(path.name) or _SNAPSHOT.match(path.name)
    if m is None:
        raise FormatError(f"{path.name} is not named log.<zxid> or snapshot.<zxid>")
    return int(m.group(1), 16)


def _files(directory: Path, pattern: re.Pattern[str]) -> list[Path]:
    return sorted((p for p in directory.iterdir() if pattern.match(p.name)), key=file_zxid)


def with_deleted_ephemerals(snapshot: ZkSnapshot | None, txns: list[ZkTxn]) -> list[ZkTxn]:
    """`txns` with each closeSession naming the ephemeral znodes its session still owned. A server from ZooKeeper
    3.6 on logs them in the transaction (CloseSessionTxn); one before (Kafka 2.x's ZooKeeper 3.5) deletes them as it
    applies it and logs nothing, so they are the session's own ephemeral creates (and the snapshot's), less those
    deleted since: a broker's /brokers/ids/N, the controller's /controller."""
    owned: dict[int, set[str]] = {}
    if snapshot is not None:
        for node in snapshot.nodes.values():
            if node.ephemeral_owner:
                owned.setdefault(node.ephemeral_owner, set()).add(node.path)
    out = []
    for txn in txns:
        if txn.failed:  # changed nothing
            out.append(txn)
            continue
        ops = []
        for op in txn.ops:
            if op.kind == "create" and op.ephemeral:
                owned.setdefault(txn.session, set()).add(op.path)
            elif op.kind == "delete":
                for paths in owned.values():
                    paths.discard(op.path)
            elif op.kind == "closeSession":
                gone = owned.pop(txn.session, set())
                if not op.deleted and gone:
                    op = ZnodeOp("closeSession", deleted=tuple(sorted(gone)))
            ops.append(op)
        out.append(txn if ops == list(txn.ops) else ZkTxn(txn.zxid, txn.time, txn.session, txn.cxid, tuple(ops)))
    return out


def read_zk_history(path: Path) -> ZkHistory:
    """A server's retained history: a `version-2` directory (or the dataDir holding it), or one file.

    From zxid 0 when the first log starts at zxid 1 (a server that kept everything); else from the newest
    snapshot at or before the first retained log's first zxid (older snapshots would need transactions that are
    gone); then each transaction after it once, in zxid order (log files overlap at their edges)."""
    path = Path(path)
    if path.is_dir() and (path / "version-2").is_dir():
        path = path / "version-2"
    if path.is_file():
        if _SNAPSHOT.match(path.name):
            snap = read_snapshot(path)
            return ZkHistory(snap, [], [path], f"the snapshot {path.name} alone (state, no transactions)")
        logs, snapshots = [path], []
    elif path.is_dir():
        logs, snapshots = _files(path, _LOG), _files(path, _SNAPSHOT)
    else:
        raise UsageError(f"{path} is neither a ZooKeeper version-2 directory nor a log.* or snapshot.* file")
    if not logs and not snapshots:
        raise UsageError(f"{path} holds no log.* or snapshot.* file of ZooKeeper")
    first = file_zxid(logs[0]) if logs else None
    if path.is_file():
        snapshot, start = None, None
        origin = (f"the log {path.name} alone" + ("" if first == 1 else ": the state before its first transaction "
                                                  "is not in it"))
    elif first is None or first > 1:
        reaching = [s for s in snapshots if first is None or file_zxid(s) >= first - 1]
        if not reaching:
            raise UsageError(f"{path}: the first retained log starts at zxid {first:#x} and no snapshot reaches it "
                             f"(the transactions between are gone: autopurge removed them)")
        start = reaching[0]
        snapshot: ZkSnapshot | None = read_snapshot(start)
        origin = (f"from the snapshot {start.name}: the first retained log {logs[0].name} starts after zxid 1"
                  if logs else f"from the snapshot {start.name}: no log is retained")
    else:
        snapshot, start = None, None
        origin = f"from zxid 0: the first log {logs[0].name} starts at the first transaction"
    after = snapshot.zxid if snapshot is not None else 0
    txns: dict[int, ZkTxn] = {}
    torn = 0
    for log in logs:
        read = read_log(log)
        torn += read.torn
        for txn in read.txns:
            if txn.zxid > after:
                txns.setdefault(txn.zxid, txn)
    files = ([start] if start is not None else []) + logs
    return ZkHistory(snapshot, with_deleted_ephemerals(snapshot, [txns[z] for z in sorted(txns)]), files, origin,
                     {"torn records at a log's end": torn} if torn else {})
