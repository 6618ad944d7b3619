"""JBOD in ZooKeeper mode, on real clusters: three brokers with two log dirs each (Kafka 3.9.1 on ZooKeeper 3.8.4, and
Kafka 2.8.2 on ZooKeeper 3.5.9), one dir failed under broker 2 as a disk fails (its /log_dir_event_notification),
then broker 2's session expired (it registers again: the controller asks it again, and takes the failed dir's
replicas offline again). `replay zk:` then reproduces every partition history and every decision of the controller,
with the brokers' logs beside ZooKeeper's directory (the controller's state-change.log names the replicas it took
offline) and from the directory alone (inferred from the writes). Each cluster is stopped by pid at the end."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from streaming.infra.cluster import copy_live_dir
from streaming.infra.zkcluster import ZkCluster
from streaming.io.jsonl import read_jsonl
from streaming.jobs.replay import ReplayOptions, replay

pytestmark = pytest.mark.zk_cluster

FAILING = 2  # the broker whose second log dir fails


def _replay(zookeeper: Path, out: Path) -> tuple[list[dict], list[dict], list[dict]]:
    replay(ReplayOptions(f"zk:{zookeeper}", out, engine="local"))
    return (read_jsonl(out / "histories.jsonl"), read_jsonl(out / "agreement.jsonl"),
            [e for e in read_jsonl(out / "zk" / "events.jsonl") if e["type"] == "LogDirEventNotification"])


@pytest.mark.parametrize("release", ["3.9.1", "2.8.2"])
def test_a_failed_log_dir_takes_only_its_replicas_offline_and_replay_reproduces_it(release: str,
                                                                                  tmp_path: Path) -> None:
    with ZkCluster(brokers=3, kafka_version=release, log_dirs=2) as c:
        c.create_topic("t0", {0: [2, 1, 3], 1: [1, 2, 3], 2: [2, 3, 1], 3: [3, 2, 1]})
        c.create_topic("t1", {0: [2, 3], 1: [2, 1], 2: [1, 3]})
        c.create_topic("t2", {0: [2]})
        c.create_topic("t3", {0: [2]})
        c.wait_until(lambda: all(len(p["isr"]) == len(p["replicas"]) for t in ("t0", "t1")
                                 for p in c.describe(t).values()), 30, "every ISR full")
        failed_dir = c.brokers[FAILING].log_dirs[1]
        in_failed_dir = {(name.rsplit("-", 1)[0], int(name.rsplit("-", 1)[1]))
                         for name in (p.name for p in failed_dir.iterdir() if p.is_dir() and "-" in p.name)}
        c.fail_log_dir(FAILING, 1)
        # The controller moves the leaders away from the failed dir's replicas (and keeps the others).
        c.wait_until(lambda: all(c.describe(t)[p]["leader"] != FAILING for t, p in in_failed_dir
                                 if len(c.describe(t)[p]["replicas"]) > 1), 30, "leaders moved off the failed dir")
        c.expire_session(FAILING)
        # Registered again, it is asked again (onBrokerStartup): the controller marks the failed dir's replicas
        # offline a second time and moves what its startup elected there away again.
        marks = lambda: sum(log.read_text().count(" as offline") for log in  # noqa: E731
                            map(c.state_change_log, c.brokers) if log.exists())
        c.wait_until(lambda: marks() >= 2, 60, "the failed dir's replicas marked offline again")
        c.wait_until(lambda: all(c.describe(t)[p]["leader"] != FAILING for t, p in in_failed_dir), 30,
                     "the startup's elections there undone")
        here = tmp_path / "run"
        copy_live_dir(c.zookeeper_data_dir, here / "zookeeper")
        c.copy_logs(c.state_change_log, here / "state-change")
        c.copy_logs(c.controller_log, here / "controller")
        c.copy_logs(c.server_log, here / "server")
    assert in_failed_dir and in_failed_dir != {(t, p) for t, parts in {"t0": 4, "t1": 3}.items() for p in range(parts)}

    # With the brokers' logs: the replicas the controller marked offline are the failed dir's, and every history and
    # decision agrees.
    histories, agreement, [event] = _replay(here / "zookeeper", tmp_path / "with-logs")
    assert event["broker_id"] == FAILING
    assert {(r["topic"], r["partition"]) for r in event["offline_replicas"]} == in_failed_dir
    assert histories and all(h["match"] for h in histories), [h for h in histories if not h["match"]]
    assert agreement and all(r["match"] for r in agreement), [r for r in agreement if not r["match"]]
    assert any(r["cause"] == "LogDirEventNotification" for r in agreement)

    # From the directory alone: the replicas inferred from the controller's writes are the failed dir's ones it was
    # leader of or in the ISR of (here all of them), and the replay agrees as well.
    alone = tmp_path / "alone"
    shutil.copytree(here / "zookeeper", alone / "zookeeper")
    histories, agreement, [event] = _replay(alone / "zookeeper", tmp_path / "alone-out")
    assert {(r["topic"], r["partition"]) for r in event["offline_replicas"]} == in_failed_dir
    assert all(h["match"] for h in histories), [h for h in histories if not h["match"]]
    assert all(r["match"] for r in agreement), [r for r in agreement if not r["match"]]
