"""The differential campaign on real ZooKeeper-mode clusters (`make zk-campaign`, docs/zookeeper.md "The campaign").

Each run: a seeded random script of operations (the KRaft campaign's, `kraft_campaign.script`, with the session
expiry only ZooKeeper has, and Admin requests naming several topics or partitions) on a real ZooKeeper + four Kafka
brokers started from the project's jars, each with 1 to 3 log dirs drawn per seed (with several, a log dir may fail
under a broker: `fail_dir`, a /log_dir_event_notification): Kafka 3.9.1 (on ZooKeeper 3.8.4) at its own
inter.broker.protocol.version or at 2.6 (the Kafka 2.x path), or Kafka 2.7.2, 2.8.2 (on ZooKeeper 3.5.9), 3.0.2
(3.6.3) or 3.5.2 (3.6.4) at its own (2.7 to 3.0: leaders send AlterIsr); then ZooKeeper's `version-2` directory is
replayed through the directory path (`replay zk:DIR --rules zk`) and every partition history and every decision is
compared with the controller's writes, and (local engine) the requests the controllers sent, from each broker's
state-change.log, with isrflow's (printed, not counted as disagreement). A run that disagrees keeps its copy, to
become a regression test.

    .venv/bin/python tests/integration/zk_campaign.py --runs 20 --seed 1 --ops 25 [--spark] [--out DIR]
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraft_campaign import (
    BROKERS,
    RACKS,
    RunResult,
    campaign,
    compare,
    drawn_log_dirs,
    kept_if_disagreeing,
    kept_run,
    play,
    run_dir,
    script,
)

from statemachine.rules import ZK
from streaming.infra.zkcluster import ZkCluster
from streaming.io.jsonl import read_jsonl
from streaming.zookeeper.requests import requests_agreement


@dataclass(frozen=True)
class ZkVersion:
    """A Kafka release (`streaming.infra.zkcluster.RELEASES`) in ZooKeeper mode at an inter.broker.protocol.version
    (None: the release's own)."""

    name: str
    inter_broker_protocol: str | None
    kafka_version: str = "3.9.1"
    # What the shared script reads of a version: no ELR, no metadata.version upgrade in ZooKeeper mode.
    elr: bool | None = None
    upgrade_to: int | None = None
    # Several log dirs per broker, one of which may fail under it (JBOD): every ZooKeeper-mode release has them.
    jbod: bool = True


# The operations only ZooKeeper mode has (a session's expiry, of any broker or of the controller's own; the legacy
# reassignment znode), and the Admin requests naming several topics or partitions (one CreateTopics, DeleteTopics,
# CreatePartitions or AlterPartitionReassignments each), which the KRaft campaign does not draw.
EXTRA = ("expire", "expire_controller", "create_topics", "delete_topics", "reassign_many", "reassign_znode",
         "create_partitions_many")
# Every release ZkCluster runs, at its own protocol, and Kafka 3.9.1 at 2.6 (the Kafka 2.x path, where leaders write
# their own ISR changes).
VERSIONS = {"3.9": ZkVersion("3.9", None), "2.6": ZkVersion("2.6", "2.6"),
            "2.8": ZkVersion("2.8", None, kafka_version="2.8.2"), "2.7": ZkVersion("2.7", None, kafka_version="2.7.2"),
            "3.0": ZkVersion("3.0", None, kafka_version="3.0.2"), "3.5": ZkVersion("3.5", None, kafka_version="3.5.2")}
DEFAULT_VERSIONS = "3.9,2.6,2.8,2.7,3.0,3.5"


def run(seed: int, ops: int, work: Path, version: ZkVersion = VERSIONS["3.9"], engines: tuple[str, ...] = ("local",),
        log: Any = print, keep: bool = False, log_dirs: int = 1) -> list[RunResult]:
    """One campaign run: the script of `seed` on a fresh ZooKeeper-mode cluster whose brokers have `log_dirs` log
    dirs each (several: the script may fail one under a broker, `fail_dir`), then one comparison per engine.
    Each broker's state-change.log (the requests it sent as controller and received) and controller.log (what it
    read as controller) are kept beside ZooKeeper's directory, in `state-change/broker-N.log` and
    `controller/broker-N.log`; its server.log too (`server/broker-N.log`: the AlterPartition requests it sent)."""
    steps = script(seed, ops, version, extra=EXTRA, log_dirs=log_dirs)  # type: ignore[arg-type]
    here = run_dir(work, "zookeeper", version.name, seed, log_dirs)
    with ZkCluster(brokers=BROKERS, inter_broker_protocol=version.inter_broker_protocol, racks=RACKS,
                   kafka_version=version.kafka_version, log_dirs=log_dirs) as c:
        copy = play(c, steps, f"zookeeper {version.name} seed {seed} ({log_dirs} log dir(s))",
                    lambda: c.zookeeper_data_dir, here / "zookeeper", log)
        c.copy_logs(c.state_change_log, here / "state-change")
        c.copy_logs(c.controller_log, here / "controller")
        c.copy_logs(c.server_log, here / "server")
    results = [compare(copy, here / engine, engine, seed, version.name, "zk:", ZK) for engine in engines]
    _log_requests(here, log)
    return kept_if_disagreeing(results, here, copy, keep)


def _log_requests(here: Path, log: Any = print) -> None:
    """The run's requests agreement (replay zk: found the state-change logs beside ZooKeeper's copy)."""
    compared = here / "local" / "requests_agreement.jsonl"
    if compared.exists():
        log(f"  {here.name} requests: {requests_agreement(read_jsonl(compared)).counted()}")


def recheck(here: Path) -> list[RunResult]:
    """Compare a kept run (`zookeeper-<version>-seed-<n>`) again, on the local engine."""
    version, seed = kept_run(here, "zookeeper")  # version: 3.9, or 3.9-dirs-2
    results = [compare(here / "zookeeper", here / "local", "local", seed, version, "zk:", ZK)]
    _log_requests(here)
    return results


def run_drawn(seed: int, ops: int, work: Path, version: ZkVersion, engines: tuple[str, ...], keep: bool = False
              ) -> list[RunResult]:
    """A run whose brokers have the number of log dirs its seed draws (1 to 3, as the KRaft campaign draws)."""
    return run(seed, ops, work, version, engines, keep=keep,
               log_dirs=drawn_log_dirs(seed, version))  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    return campaign(argv, VERSIONS, DEFAULT_VERSIONS, "out/zk-campaign", run_drawn, recheck, __doc__)


if __name__ == "__main__":
    sys.exit(main())
