"""The releases of the ZooKeeper-era controller: where one Kafka release's KafkaController decides differently from
another's, whatever inter.broker.protocol.version its brokers run at (the protocol's own differences are
statemachine.features' predicates: AlterIsr from 2.7-IV2, KIP-704's recovery state from 3.2-IV0).

Each policy names the release whose controller first did so (read in Kafka's KafkaController at the tags 2.8.2,
3.0.2, 3.1.2, 3.3.0, 3.4.1 and 3.9):
- KAFKA-13225 (3.1): a broker failure sends its own UpdateMetadata when no partition changed (no replica went
  offline, no election); before, whenever no partition had an offline leader (`partitionsWithOfflineLeader`, taken
  before the elections, which counts a leaderless partition anywhere in the cluster).
- KIP-841 (3.3): AlterPartition naming a broker that is not live is refused (INELIGIBLE_REPLICA); the 2.x controller
  took AlterIsr as it came.
- KAFKA-10149 (3.4): the automatic preferred election runs while partitions are being reassigned; before, a
  reassignment in progress anywhere held it back.

The release's code matters apart from its protocol: Kafka 3.9.1 brokers at inter.broker.protocol 2.6 run 3.9.1's
controller. isrflow takes Kafka 3.9.1 (`LAST_ZOOKEEPER_RELEASE`) unless told otherwise (`--kafka-version`, or a
broker's server.log naming its version).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_RELEASE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")


@dataclass(frozen=True, order=True)
class KafkaRelease:
    """A Kafka release, major.minor.patch."""

    major: int
    minor: int
    patch: int = 0

    @classmethod
    def parse(cls, text: str) -> KafkaRelease:
        """"2.8.2" or "2.8" (its .0); ValueError otherwise."""
        m = _RELEASE.match(text.strip())
        if m is None:
            raise ValueError(f"not a Kafka release: '{text}' (e.g. 2.8.2)")
        return cls(int(m[1]), int(m[2]), int(m[3] or 0))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


# The last release with ZooKeeper mode: what isrflow's zk rules follow unless told otherwise.
LAST_ZOOKEEPER_RELEASE = KafkaRelease(3, 9, 1)
KAFKA_13225 = KafkaRelease(3, 1)
KIP_841 = KafkaRelease(3, 3)
KAFKA_10149 = KafkaRelease(3, 4)


def broker_failure_updates_metadata_when_nothing_changed(release: KafkaRelease) -> bool:
    """KAFKA-13225 (onReplicasBecomeOffline): from 3.1 the failure's own UpdateMetadata goes out when no replica went
    offline and no election changed a partition; before, when no partition of the cluster had an offline leader."""
    return release >= KAFKA_13225


def alter_partition_checks_live_brokers(release: KafkaRelease) -> bool:
    """KIP-841 (processAlterPartition): from 3.3 an ISR naming a broker that is not live is refused."""
    return release >= KIP_841


def rebalance_waits_for_reassignments(release: KafkaRelease) -> bool:
    """KAFKA-10149 (checkAndTriggerAutoLeaderRebalance): before 3.4 no automatic preferred election while any
    partition is being reassigned."""
    return release < KAFKA_10149
