"""The values the controller events carry (schemas.events): the enums of their kinds and the small records their
lists hold (a partition, a reassignment's target, an assignment, a log dir placement)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class BrokerChangeKind(StrEnum):
    STARTUP = "STARTUP"
    FAILURE = "FAILURE"
    CONTROLLED_SHUTDOWN = "CONTROLLED_SHUTDOWN"


class ElectionType(StrEnum):
    PREFERRED = "PREFERRED"
    UNCLEAN = "UNCLEAN"


class LeaderRecoveryState(StrEnum):
    """KIP-704: an unclean leader is RECOVERING until it reports its log recovered."""

    RECOVERED = "RECOVERED"
    RECOVERING = "RECOVERING"


@dataclass(frozen=True, slots=True)
class PartitionRef:
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class Move:
    """A ReassignPartitions entry: the target replicas, or None to cancel."""

    topic: str
    partition: int
    replicas: tuple[int, ...] | None


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """A partition's assignment with a reassignment in progress, as `/brokers/topics/T` holds it: the replica set
    (target and original), and the replicas being added and removed (Kafka's ReplicaAssignment)."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DirectoryAssignment:
    """An AssignReplicasToDirs entry: the log dir the broker put its replica of the partition in."""

    topic: str
    partition: int
    directory: str
