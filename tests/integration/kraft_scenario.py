"""The scripted operations the KRaft cluster tests run on a real cluster, in order."""

from __future__ import annotations

import time

from streaming.infra.kraftcluster import KraftCluster


def run_scenario(c: KraftCluster) -> None:
    """RF 1, 2, 3 topics; reassign and cancel; kill -9 and restart; SIGTERM; preferred and unclean
    elections; min.insync.replicas and unclean config changes; a new partition; a topic deletion."""
    c.create_topic("rf1", {0: [1], 1: [2]})
    c.create_topic("rf2", {0: [1, 2], 1: [2, 3]})
    c.create_topic("rf3", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}, {"min.insync.replicas": "2"})
    c.create_topic("gone", {0: [3, 1]})
    c.wait_until(lambda: all(p["leader"] >= 0 for p in c.describe("rf3").values()), what="rf3 leaders")
    # A reassignment that completes, then one that is cancelled while its new replica is down.
    c.reassign({("rf2", 0): [2, 3]})
    c.wait_until(lambda: c.describe("rf2")[0]["replicas"] == [2, 3], what="rf2-0 moved")
    c.kill(1)
    c.wait_fenced(1)
    c.reassign({("rf2", 1): [1, 3]})  # broker 1 is down: stays in progress
    time.sleep(1)
    c.reassign({("rf2", 1): None})
    c.create_partitions("rf2", 3, [[3, 1]])
    c.restart(1)
    c.wait_until(lambda: sorted(c.describe("rf3")[0]["isr"]) == [1, 2, 3], what="broker 1 back in rf3-0's ISR")
    c.elect("PREFERRED", {"rf3": [0, 1, 2], "rf2": [1]})
    c.alter_topic_config("rf3", {"min.insync.replicas": "1"})
    c.terminate(3)  # controlled shutdown
    c.wait_fenced(3)
    # gone-0 is [3, 1]: kill 1 too, so it goes leaderless; then allow unclean and elect.
    c.kill(1)
    c.wait_fenced(1)
    c.alter_topic_config("gone", {"unclean.leader.election.enable": "false"})
    c.restart(3)
    c.elect("UNCLEAN", {"gone": [0]})
    c.restart(1)
    c.elect("PREFERRED", {"rf3": [0, 1, 2], "rf1": [0], "rf2": [0, 1, 2]})
    c.delete_topic("gone")
    time.sleep(1)
