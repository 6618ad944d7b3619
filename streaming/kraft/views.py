"""The converter's view of a KRaft cluster as its metadata records leave it: each partition as
PartitionRegistration holds it (merged as Kafka merges a PartitionChangeRecord), each broker's registration, and a
partition change read from the log (before and after)."""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from statemachine.directories import MIGRATING
from streaming.kraft.metadatalog import MetadataRecord

NO_LEADER, LEADER_UNCHANGED = -1, -2


@cache  # a log names each topic id again in every change of its partitions
def topic_id_text(value: str) -> str:
    """Kafka prints topic ids base64url without padding; normalise (padding, '+/' alphabets) to that form."""
    raw = base64.urlsafe_b64decode(value.replace("+", "-").replace("/", "_") + "=" * (-len(value) % 4))
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def directories(recorded: list[str] | None, replicas: tuple[int, ...], kept: tuple[str, ...]) -> tuple[str, ...]:
    """The replicas' directories a record leaves (PartitionRegistration): the record's, else (None: a change that
    leaves them) those kept; all MIGRATING when none is known (a record below 3.7-IV2 has none, an empty list names
    none: defaultToMigrating)."""
    dirs = tuple(recorded) if recorded is not None else kept
    return (MIGRATING,) * len(replicas) if all(d == MIGRATING for d in dirs) else dirs


@dataclass(frozen=True)
class PartitionView:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    leader_recovery_state: int = 0
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    directories: tuple[str, ...] = ()  # each replica's log dir (KIP-858)

    @classmethod
    def from_record(cls, d: dict[str, Any]) -> PartitionView:
        return cls(tuple(d["replicas"]), tuple(d["isr"]), d["leader"], d.get("leaderEpoch", 0),
                   d.get("partitionEpoch", 0), max(d.get("leaderRecoveryState", 0), 0),
                   tuple(d.get("addingReplicas") or ()), tuple(d.get("removingReplicas") or ()),
                   tuple(d.get("eligibleLeaderReplicas") or ()), tuple(d.get("lastKnownElr") or ()),
                   directories(d.get("directories"), tuple(d["replicas"]), ()))

    def merge(self, d: dict[str, Any]) -> PartitionView:
        """PartitionRegistration.merge: a missing (tagged) field keeps its value."""
        leader = d.get("leader", LEADER_UNCHANGED)
        lrs = d.get("leaderRecoveryState", -1)
        replicas = tuple(d["replicas"]) if "replicas" in d else self.replicas
        return PartitionView(
            replicas=replicas,
            isr=tuple(d["isr"]) if "isr" in d else self.isr,
            leader=self.leader if leader == LEADER_UNCHANGED else leader,
            leader_epoch=self.leader_epoch + (leader != LEADER_UNCHANGED),
            partition_epoch=self.partition_epoch + 1,
            leader_recovery_state=self.leader_recovery_state if lrs == -1 else lrs,
            adding=tuple(d["addingReplicas"]) if "addingReplicas" in d else self.adding,
            removing=tuple(d["removingReplicas"]) if "removingReplicas" in d else self.removing,
            elr=tuple(d["eligibleLeaderReplicas"]) if "eligibleLeaderReplicas" in d else self.elr,
            last_known_elr=tuple(d["lastKnownElr"]) if "lastKnownElr" in d else self.last_known_elr,
            directories=directories(d.get("directories"), replicas, self.directories),
        )

    def directory_of(self, broker: int) -> str | None:
        """The log dir of `broker`'s replica, if the records named one."""
        if broker not in self.replicas or len(self.directories) != len(self.replicas):
            return None
        return self.directories[self.replicas.index(broker)]

    def drops(self, after: PartitionView, broker: int) -> bool:
        """Whether the change from self to `after` takes `broker` out of the ISR, the ELR or leadership."""
        return ((broker in self.isr and broker not in after.isr) or (broker in self.elr and broker not in after.elr)
                or (self.leader == broker and after.leader != broker))


@dataclass
class Broker:
    epoch: int
    incarnation: str
    fenced: bool = True
    in_controlled_shutdown: bool = False
    log_dirs: list[str] = field(default_factory=list)  # as registered (KIP-858)
    max_level: int | None = None  # the newest metadata.version its Kafka supports, as registered: its release
    # The observed rows of the PCRs that took this incarnation out of ISR/ELR at its registration (an unclean
    # shutdown before it): its STARTUP carries `unclean_shutdown` and becomes their cause.
    unclean_registration: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Change:
    record: MetadataRecord
    key: tuple[str, int]
    before: PartitionView
    after: PartitionView


def dropping(changes: list[Change], broker: int, in_dirs: Collection[str] | None = None
             ) -> tuple[list[Change], list[Change]]:
    """`changes` split in one pass, each in order: those that take `broker` out of an ISR, an ELR or leadership
    (with `in_dirs`, only where the broker's replica was in one of those log dirs), and the others (a broker's
    failure moves a partition of its every ISR: no quadratic `not in`)."""
    mine: list[Change] = []
    others: list[Change] = []
    for c in changes:
        ours = c.before.drops(c.after, broker) and (in_dirs is None or c.before.directory_of(broker) in in_dirs)
        (mine if ours else others).append(c)
    return mine, others


def reassignment_target(d: dict[str, Any], after: PartitionView) -> list[int]:
    """The target of the reassignment a change starts (ReplicationControlManager.changePartitionReassignment): its
    replicas are the target, then the replicas it removes in id order. A record that leaves `removingReplicas` out
    removes none (an empty list is not written: the partition keeps the one it had) unless its replicas end with
    the ones it had, in id order."""
    removing = list(after.removing)
    if "removingReplicas" not in d and list(after.replicas[len(after.replicas) - len(removing):]) != sorted(removing):
        removing = []
    return [r for r in after.replicas if r not in removing]


@dataclass
class Converted:
    events: list[dict[str, Any]] = field(default_factory=list)
    observed: list[dict[str, Any]] = field(default_factory=list)
    unknown: Counter[str] = field(default_factory=Counter)
    # Partition changes that match no pattern: kept in `observed`, no event.
    unexplained: list[int] = field(default_factory=list)
    snapshot_state: bool = False
    # FEATURE_LEVEL_RECORDs as the log ends (eligible.leader.replicas.version, metadata.version, ...).
    features: dict[str, int] = field(default_factory=dict)
    # Every level the log sets, in log order: (offset, feature, level); a snapshot's at the offset of its seeds.
    feature_changes: list[tuple[int, str, int]] = field(default_factory=list)
