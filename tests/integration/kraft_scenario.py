"""The scripted operations the KRaft cluster tests run on a real cluster, in order."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from streaming.engine.connectors import java_executable
from streaming.infra.jars import kafka_broker_classpath
from streaming.infra.kraftcluster import KraftCluster

UPDATE_FEATURES = Path(__file__).parent / "kraftlog" / "UpdateFeatures.java"
ALTER_REPLICA_LOG_DIRS = Path(__file__).parent / "kraftlog" / "AlterReplicaLogDirs.java"


def run_scenario(c: KraftCluster) -> None:
    """RF 1, 2, 3 topics; reassign and cancel (every shape of reassignment record); kill -9 and restart; SIGTERM;
    preferred and unclean elections; min.insync.replicas and unclean config changes; a new partition; a topic
    deletion."""
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
    # More shapes while broker 1 is down, throttled as kafka-reassign-partitions --throttle does: a cancel that
    # shrinks the ISR (3 caught up, 1 never does), a move that removes the leader, replicas reordered.
    c.create_topic("moves", {0: [2], 1: [3]})
    c.wait_until(lambda: all(p["leader"] >= 0 for p in c.describe("moves").values()), what="moves leaders")
    c.alter_topic_config("moves", {"leader.replication.throttled.replicas": "*",
                                   "follower.replication.throttled.replicas": "*"})
    c.reassign({("moves", 0): [2, 3, 1], ("moves", 1): [2], ("rf2", 1): [3, 2]})
    c.wait_until(lambda: 3 in c.describe("moves")[0]["isr"] and c.describe("moves")[1]["replicas"] == [2],
                 what="moves-0 half caught up, moves-1 moved")
    c.reassign({("moves", 0): None})
    c.wait_until(lambda: c.describe("moves")[0]["replicas"] == [2], what="moves-0 reverted")
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


def update_features(c: KraftCluster, **levels: int) -> None:
    """Admin UpdateFeatures (what kafka-features.sh upgrade/downgrade sends), names with '_' for '.'."""
    subprocess.run([java_executable(), "-Xmx128m", "-cp", kafka_broker_classpath(), str(UPDATE_FEATURES),
                    c.bootstrap_servers, *(f"{name.replace('_', '.')}={level}" for name, level in levels.items())],
                   check=True, capture_output=True, timeout=120)


def move_replica_log_dir(c: KraftCluster, broker: int, topic: str, partition: int, index: int) -> None:
    """Admin AlterReplicaLogDirs (what kafka-reassign-partitions sends for the `log_dirs` of its JSON): broker's
    replica of topic-partition to its log dir `index`, waiting until the broker has swapped it in (and so told the
    controller, AssignReplicasToDirs)."""
    moved = subprocess.run([java_executable(), "-Xmx128m", "-cp", kafka_broker_classpath(), str(ALTER_REPLICA_LOG_DIRS),
                            c.bootstrap_servers, str(broker), topic, str(partition),
                            str(c.brokers[broker].log_dirs[index])],
                           check=False, capture_output=True, text=True, timeout=120)
    if moved.returncode != 0:
        raise RuntimeError(moved.stderr.strip().splitlines()[-1] if moved.stderr.strip() else "the move failed")


def turn_elr_off_mid_run(c: KraftCluster) -> None:
    """After the scenario, on a cluster with ELR on: rf3 at min ISR 3 and broker 3 killed, so each rf3 partition
    holds ELR [3]; then eligible.leader.replicas.version goes to 0 (a safe downgrade); then broker 3 back (its ISR
    return empties the ELR), and brokers fail again."""
    c.alter_topic_config("rf3", {"min.insync.replicas": "3"})
    c.kill(3)
    c.wait_fenced(3)
    c.wait_until(lambda: all(3 not in p["isr"] for p in c.describe("rf3").values()), what="broker 3 out of rf3 ISRs")
    update_features(c, eligible_leader_replicas_version=0)
    c.restart(3)
    _wait_rf3_isrs_full(c)
    _fail_brokers_again(c)


def upgrade_metadata_version_mid_run(c: KraftCluster) -> None:
    """After the scenario, on a cluster formatted at metadata.version 3.5-IV2: upgrade to 3.6-IV2 (ISR shrinks
    stop bumping the leader epoch at 3.6-IV0; below 3.7-IV2, so no directory assignment starts), then brokers fail
    again."""
    update_features(c, metadata_version=14)
    _fail_brokers_again(c)


def _fail_brokers_again(c: KraftCluster) -> None:
    """kill -9 of broker 3 and SIGTERM of broker 1, both restarted (broker 2 keeps running: its copy of the log is
    the whole history)."""
    c.kill(3)
    c.wait_fenced(3)
    c.restart(3)
    c.terminate(1)
    c.wait_fenced(1)
    c.restart(1)
    _wait_rf3_isrs_full(c)
    time.sleep(1)


def _wait_rf3_isrs_full(c: KraftCluster) -> None:
    c.wait_until(lambda: all(p["isr"] == [1, 2, 3] for p in c.describe("rf3").values()), what="rf3 ISRs full")
