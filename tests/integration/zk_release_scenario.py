"""A small scripted run of a ZooKeeper-mode cluster of one release, kept for a regression test (replayed without a
cluster): three brokers, topics created, a broker killed and restarted, a reassignment, a preferred election, a
topic deleted, an unclean election (Admin ElectLeaders), a controlled shutdown, and the controller's broker killed
while it leads partitions (the next controller's failover finds it gone: its replicas go offline, leader -1, before
the elections). ZooKeeper's `version-2` (log files' preallocated zero tails cut) and each broker's
state-change.log, controller.log and server.log are written under OUT, in the campaign's layout.

    .venv/bin/python tests/integration/zk_release_scenario.py --kafka-version 2.8.2 --out DIR
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from streaming.infra.cluster import copy_live_dir
from streaming.infra.zkcluster import RELEASES, ZkCluster


def cut_preallocated_tails(version_2: Path) -> None:
    """ZooKeeper preallocates each log file with zeros; a kept copy needs only what was written."""
    for log in version_2.glob("log.*"):
        log.write_bytes(log.read_bytes().rstrip(b"\0"))


def scenario(c: ZkCluster) -> None:
    c.create_topic("a", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
    c.create_topic("b", {0: [1, 2]})
    time.sleep(3)
    c.kill(2)  # a broker failure: its session expires, its partitions elect
    c.wait_fenced(2)
    time.sleep(2)
    c.restart(2)
    c.wait_until(lambda: all(2 in p["isr"] for p in c.describe("a").values()), 30, "broker 2 back in every ISR")
    c.reassign({("b", 0): [2, 3]})
    c.wait_until(lambda: c.describe("b")[0]["replicas"] == [2, 3], 30, "b-0 reassigned")
    c.elect("PREFERRED", {"a": [0, 1, 2]})
    c.create_topic("c", {0: [3, 1]})
    time.sleep(2)
    c.delete_topic("c")
    # Done once the controller says so: the brokers stop listing a topic as soon as its deletion is asked for.
    c.wait_until(lambda: any("Deletion of topic c successfully completed" in c.controller_log(b).read_text()
                             for b in c.brokers if c.controller_log(b).exists()), 30, "c deleted")
    # An unclean election: u-0's ISR down to broker 2, which dies; broker 3, out of the ISR, comes back.
    c.create_topic("u", {0: [2, 3]})
    c.wait_until(lambda: c.describe("u")[0]["isr"] == [2, 3], 30, "u-0 fully in sync")
    c.kill(3)
    c.wait_until(lambda: c.describe("u")[0]["isr"] == [2], 30, "broker 3 out of u-0's ISR")
    c.kill(2)
    c.wait_until(lambda: c.describe("u")[0]["leader"] == -1, 30, "u-0 without a leader")
    c.restart(3)
    c.elect("UNCLEAN", {"u": [0]})
    c.restart(2)
    c.wait_until(lambda: all(2 in p["isr"] and 3 in p["isr"] for p in c.describe("a").values()), 60,
                 "brokers 2 and 3 back in every ISR of a")
    c.terminate(3)  # a controlled shutdown
    c.restart(3)
    c.wait_until(lambda: all(3 in p["isr"] for p in c.describe("a").values()), 30, "broker 3 back in every ISR")
    c.kill_controller(c.active_controller())
    c.restart_controllers()
    time.sleep(3)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kafka-version", default="2.8.2", choices=list(RELEASES))
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    with ZkCluster(brokers=3, kafka_version=args.kafka_version) as c:
        scenario(c)
        shutil.rmtree(args.out, ignore_errors=True)
        copy_live_dir(c.zookeeper_data_dir / "version-2", args.out / "version-2")
        cut_preallocated_tails(args.out / "version-2")
        c.copy_logs(c.state_change_log, args.out / "state-change")
        c.copy_logs(c.controller_log, args.out / "controller")
        c.copy_logs(c.server_log, args.out / "server")
    print(f"kept in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
