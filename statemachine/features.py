"""Feature levels: `metadata.version` and the finalized features Kafka's KRaft controller reads.

A KRaft cluster's metadata log records each level as a FeatureLevelRecord ("metadata.version" is one too); the
controller decides some things differently below a level (MetadataVersion's predicates, named here as Kafka names
them; the policies that use them are in statemachine.rules). Levels and names are those of Kafka 4.4.0
(server-common MetadataVersion); below 3.3-IV3 they are Kafka 3.9's, whose controller still ran at those levels.
A level above the newest known one (a newer Kafka's) is replayed with the rules of the newest known one, and said so
(`unknown_metadata_version`).
"""

from __future__ import annotations

METADATA_VERSION = "metadata.version"
ELIGIBLE_LEADER_REPLICAS_VERSION = "eligible.leader.replicas.version"

# Feature level -> name (MetadataVersion's ibpVersion), every KRaft metadata version up to Kafka 4.4's latest.
METADATA_VERSIONS: dict[int, str] = {
    1: "3.0-IV1", 2: "3.1-IV0", 3: "3.2-IV0", 4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2", 7: "3.3-IV3",
    8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0", 13: "3.6-IV1", 14: "3.6-IV2",
    15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3", 19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0",
    22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2", 25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1", 28: "4.2-IV0",
    29: "4.2-IV1", 30: "4.3-IV0", 31: "4.4-IV0", 32: "4.4-IV1", 33: "4.4-IV2",
}
# The levels the predicates below name.
IBP_3_2_IV0, IBP_3_6_IV0, IBP_3_7_IV2, IBP_4_0_IV1 = 3, 12, 17, 23
# The newest level isrflow knows: Kafka 4.4.0's latest production version (MetadataVersion.LATEST_PRODUCTION).
LATEST_KNOWN = 33
# Kafka 4.1's latest production version: what the kraft rules assume unless told otherwise.
LATEST_PRODUCTION = 27
# The first version a KRaft controller runs at (MetadataVersion.MINIMUM_KRAFT_VERSION in 3.x).
MINIMUM_KRAFT_VERSION = 1
# A ZooKeeper-era controller runs at its inter.broker.protocol.version, which Kafka 3.x models as a MetadataVersion
# too; those before 3.0-IV1 have no KRaft feature level (Kafka gives them all -1). Only the zk rules run at them, and
# they tell apart the two generations their controllers differ by: a protocol below 2.7-IV2, where each leader writes
# its own ISR changes to ZooKeeper and announces them under /isr_change_notification (level 0, as the ZooKeeper
# importer has always written it), and one from 2.7-IV2 up to 3.0-IV0, where leaders send AlterIsr to the controller
# (level -1). Neither is ordered against the other: the predicates below name them.
ZOOKEEPER_ERA_PROTOCOL = 0
IBP_2_7_IV2 = -1
# Kafka 2.x's protocols from the first that sends AlterIsr (ApiVersion: KAFKA_2_7_IV2, KAFKA_2_8_IV0, KAFKA_2_8_IV1)
# and the last before the KRaft levels (3.0-IV0); a release alone means its last internal version.
_ALTER_ISR_BEFORE_3 = ("2.7", "2.7-IV2", "2.8", "2.8-IV0", "2.8-IV1", "3.0-IV0")

_BY_NAME = {name: level for level, name in METADATA_VERSIONS.items()}
# A release alone ("3.5") means its last internal version, as MetadataVersion.fromVersionString reads it.
_BY_NAME.update({name.split("-")[0]: level for level, name in sorted(METADATA_VERSIONS.items())})


def metadata_version_level(text: str) -> int:
    """A metadata version given as a name ("3.5-IV2", "3.5") or a feature level ("11"), or a ZooKeeper-era
    inter.broker.protocol.version before 3.0-IV1 ("2.8", "2.7-IV2", "3.0-IV0": IBP_2_7_IV2; "2.6", "2.7-IV1":
    level 0); ValueError if unknown."""
    value = text.strip()
    if value in _ALTER_ISR_BEFORE_3:
        return IBP_2_7_IV2
    major = value.split(".", 1)[0]
    if "." in value and major.isascii() and major.isdigit() and int(major) < 3:
        return ZOOKEEPER_ERA_PROTOCOL
    if value.isascii() and value.isdigit():
        level = int(value)
        if level not in METADATA_VERSIONS:
            raise ValueError(f"no metadata.version with feature level {level} (known: "
                             f"{min(METADATA_VERSIONS)}..{max(METADATA_VERSIONS)})")
        return level
    try:
        return _BY_NAME[value]
    except KeyError:
        raise ValueError(f"unknown metadata.version '{value}' (known: {METADATA_VERSIONS[MINIMUM_KRAFT_VERSION]} .. "
                         f"{METADATA_VERSIONS[LATEST_PRODUCTION]}, or a feature level)") from None


def metadata_version_name(level: int) -> str:
    """The version's name, or the bare level for one this isrflow does not know (a newer Kafka's)."""
    if level == ZOOKEEPER_ERA_PROTOCOL:
        return "an inter.broker.protocol.version before 2.7-IV2"
    if level == IBP_2_7_IV2:
        return "an inter.broker.protocol.version from 2.7-IV2 to 3.0-IV0"
    return METADATA_VERSIONS.get(level, f"level {level}")


# The words every such warning holds (the report finds them in the audit).
UNKNOWN_VERSION = "newer than any isrflow knows"


def unknown_metadata_version(level: int) -> str | None:
    """What to tell a user whose log holds a metadata.version level isrflow does not know: it is replayed with the
    rules of the newest level it knows (every predicate below holds for it as for that one); None for a known
    level."""
    if level in METADATA_VERSIONS or level == ZOOKEEPER_ERA_PROTOCOL:
        return None
    nearest = max((known for known in METADATA_VERSIONS if known <= level), default=MINIMUM_KRAFT_VERSION)
    return (f"metadata.version level {level} is {UNKNOWN_VERSION} (the newest it knows is "
            f"{METADATA_VERSIONS[LATEST_KNOWN]}, level {LATEST_KNOWN}): replayed with the rules of "
            f"{METADATA_VERSIONS[nearest]}")


def is_leader_recovery_supported(metadata_version: int) -> bool:
    """KIP-704: an unclean leader starts RECOVERING only from 3.2-IV0 (Kafka 3.9 PartitionChangeBuilder.tryElection)."""
    return metadata_version >= IBP_3_2_IV0


def is_leader_epoch_bump_required_on_isr_shrink(metadata_version: int) -> bool:
    """KAFKA-15021: below 3.6-IV0 brokers needed a new leader epoch whenever the ISR shrank."""
    return metadata_version < IBP_3_6_IV0


def is_elr_supported(metadata_version: int) -> bool:
    """KIP-966: Eligible Leader Replicas need 4.0-IV1 (eligible.leader.replicas.version 1 depends on it)."""
    return metadata_version >= IBP_4_0_IV1


def is_directory_assignment_supported(metadata_version: int) -> bool:
    """KIP-858: from 3.7-IV2 on, each replica's log directory is in the partition's records (`directories`), set at
    creation and by the broker's AssignReplicasToDirs; below it every replica's directory is MIGRATING."""
    return metadata_version >= IBP_3_7_IV2


def is_alter_partition_supported(metadata_version: int) -> bool:
    """Whether leaders send their ISR changes to the controller (AlterIsr from inter.broker.protocol 2.7-IV2 on,
    AlterPartition from 3.2); below it a leader writes its ISR to ZooKeeper itself and announces it under
    /isr_change_notification (level 0, which the ZooKeeper importer gives the clusters whose leaders do so)."""
    return metadata_version != ZOOKEEPER_ERA_PROTOCOL
