"""ZooKeeper's files read by streaming/zookeeper/files.py, checked against what ZooKeeper's own tools print of
files a real server wrote (tests/unit/zkdata/README.md)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from streaming.errors import UsageError
from streaming.zookeeper.files import FormatError, read_log, read_snapshot, read_zk_history

DATA = Path(__file__).parent / "zkdata"
LOGS = sorted((DATA / "version-2").glob("log.*"))
# TxnLogToolkit -d: "<date> session 0x.. cxid 0x.. zxid 0x.. <type> <body>"
_TXN = re.compile(r"session (0x[0-9a-f]+) cxid 0x[0-9a-f]+ zxid (0x[0-9a-f]+) (\w+)")


def toolkit_txns(log: Path) -> list[tuple[int, int, str]]:
    text = (DATA / "toolkit" / f"{log.name}.txt").read_text(errors="replace")
    return [(int(z, 16), int(s, 16), kind) for s, z, kind in _TXN.findall(text)]


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
def test_every_transaction_of_a_real_log_is_read_as_zookeeper_prints_it(log: Path) -> None:
    read = read_log(log)
    expected = toolkit_txns(log)
    assert [(t.zxid, t.session) for t in read.txns] == [(z, s) for z, s, _ in expected]
    for txn, (_, _, kind) in zip(read.txns, expected, strict=True):
        if kind != "multi":
            assert [op.kind for op in txn.ops] == [kind]
    assert read.torn == 0


def test_a_brokers_registration_is_an_ephemeral_create_and_its_session_end_deletes_it() -> None:
    history = read_zk_history(DATA / "version-2")
    registrations = [(t, op) for t in history.txns for op in t.ops
                     if op.kind == "create" and op.path == "/brokers/ids/1"]
    assert len(registrations) == 2  # started twice
    assert all(op.ephemeral and not t.failed for t, op in registrations)
    last, _ = registrations[-1]
    [close] = [t for t in history.txns if t.ops[0].kind == "closeSession" and t.session == last.session]
    assert set(close.ops[0].deleted) == {"/brokers/ids/1", "/controller"}  # the kill -9: its session expired


def test_a_multi_with_an_error_changed_nothing_and_partition_state_versions_count_up() -> None:
    history = read_zk_history(DATA / "version-2")
    failed = [t for t in history.txns if len(t.ops) > 1 and t.failed]
    assert failed and all(any(op.kind == "error" for op in t.ops) for t in failed)
    states = [op for t in history.txns if not t.failed for op in t.ops
              if op.path == "/brokers/topics/t/partitions/0/state" and op.kind in ("create", "setData")]
    assert states[0].kind == "create" and [op.version for op in states] == list(range(len(states)))
    assert b'"leader"' in (states[-1].data or b"")


def test_snapshot_znodes_are_those_zookeeper_prints() -> None:
    for snapshot in sorted((DATA / "version-2").glob("snapshot.*")):
        printed = (DATA / "toolkit" / f"{snapshot.name}.txt").read_text()
        paths = re.findall(r"^(/\S*)$", printed, re.MULTILINE)
        read = read_snapshot(snapshot)
        assert sorted(read.nodes) == sorted(paths)
        sessions = re.findall(r"^(0x[0-9a-f]+), (\d+), \d+$", printed, re.MULTILINE)
        assert read.sessions == {int(s, 16): int(t) for s, t in sessions}


def test_the_whole_history_starts_at_zxid_0_and_each_transaction_is_read_once() -> None:
    history = read_zk_history(DATA)  # the dataDir holding version-2
    assert history.snapshot is None and "from zxid 0" in history.origin
    zxids = [t.zxid for t in history.txns]
    assert zxids == sorted(set(zxids)) and zxids[0] == 1
    assert len(zxids) == sum(len(toolkit_txns(log)) for log in LOGS)


def test_a_purged_directory_starts_at_the_oldest_snapshot_that_reaches_its_first_log(tmp_path: Path) -> None:
    purged = tmp_path / "version-2"
    shutil.copytree(DATA / "version-2", purged)
    (purged / "log.1").unlink()  # autopurge took the first log and the snapshot before it
    (purged / "snapshot.0").unlink()
    history = read_zk_history(purged)
    # snapshot.22 lacks transaction 0x23, which only log.1 held: the next snapshot is the oldest that reaches
    assert history.snapshot is not None and history.snapshot.path.name == "snapshot.39"
    assert history.txns[0].zxid == 0x3a and "snapshot.39" in history.origin
    (purged / "snapshot.39").unlink()
    with pytest.raises(UsageError, match="no snapshot reaches it"):
        read_zk_history(purged)


def test_a_torn_last_record_ends_the_log_and_is_counted(tmp_path: Path) -> None:
    data = (DATA / "version-2" / "log.3a").read_bytes()
    end = data.rstrip(b"\0")
    torn = tmp_path / "log.3a"
    torn.write_bytes(end[:-10])  # the server died while writing the last record
    read = read_log(torn)
    assert read.torn == 1 and len(read.txns) == len(read_log(DATA / "version-2" / "log.3a").txns) - 1
    not_a_log = tmp_path / "log.1"
    not_a_log.write_bytes(b"PK\3\4" + bytes(20))
    with pytest.raises(FormatError, match="not a ZooKeeper transaction log"):
        read_log(not_a_log)


def test_a_zookeeper_3_5_closed_session_deletes_the_ephemeral_znodes_it_owned() -> None:
    # ZooKeeper 3.5.9 (Kafka 2.8.2's) logs a session's close with no paths (CloseSessionTxn came in 3.6): the history
    # names the ephemeral znodes it still owned: each kill -9 or controlled shutdown deletes the broker's
    # registration, and the controller's broker's /controller too.
    run = Path(__file__).parents[1] / "integration" / "zklog" / "regressions" / "zookeeper-2.8-scripted"
    closed = [op.deleted for txn in read_zk_history(run / "version-2").txns for op in txn.ops
              if op.kind == "closeSession" and op.deleted]
    assert closed == [("/brokers/ids/2", "/controller"), ("/brokers/ids/3",), ("/brokers/ids/2",),
                      ("/brokers/ids/3",), ("/brokers/ids/1", "/controller")]
