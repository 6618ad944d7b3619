"""The order in which Kafka's ZooKeeper-era ReplicaStateMachine visits brokers.

`handleStateChanges(replicas, state)` groups the replicas by broker (Scala's `groupBy`, an immutable `HashMap`) and
handles one broker after the other in that map's iteration order. Each broker's OfflineReplica writes its
replicas out of the ISR, so when several replicas of one partition go offline together (a reassignment's removed
replicas, a topic deletion, a new controller finding dead brokers) the partition's ISR shrinks in this order, one
write per broker: it is not the id order.

Scala 2.13's `HashMap` is a CHAMP trie over `improve(key.hashCode)` (an Int's hashCode is itself): at each level
five bits of the improved hash pick a slot; keys alone in their slot are iterated first, in slot order, then the
sub-tries of shared slots, in slot order, recursively.
"""

from __future__ import annotations

from collections.abc import Iterable

_BITS, _MASK = 5, 31


def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def improved_hash(key: int) -> int:
    """scala.collection.Hashing.improve of an Int key, as an unsigned 32-bit value."""
    h = _int32(key + _int32(~_int32(key << 9)))
    h = _int32(h ^ ((h & 0xFFFFFFFF) >> 14))
    h = _int32(h + _int32(h << 4))
    return (h ^ ((h & 0xFFFFFFFF) >> 10)) & 0xFFFFFFFF


def replica_state_machine_order(brokers: Iterable[int]) -> list[int]:
    """The distinct `brokers` in the order ReplicaStateMachine.handleStateChanges handles them."""
    return _trie_order(sorted(set(brokers)), 0)


def _trie_order(keys: list[int], shift: int) -> list[int]:
    slots: dict[int, list[int]] = {}
    for key in keys:
        slots.setdefault((improved_hash(key) >> shift) & _MASK, []).append(key)
    alone = [slots[s][0] for s in sorted(slots) if len(slots[s]) == 1]
    shared = [k for s in sorted(slots) if len(slots[s]) > 1 for k in _trie_order(slots[s], shift + _BITS)]
    return alone + shared


def _java_string_hash(s: str) -> int:
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h


def _topic_partition_hash(topic: str, partition: int) -> int:
    """org.apache.kafka.common.TopicPartition.hashCode (31 * (31 + partition) + topic.hashCode), unsigned."""
    return (31 * (31 + partition) + _java_string_hash(topic)) & 0xFFFFFFFF


def reassignment_order(partitions: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """The distinct `partitions` in the order KafkaController starts their reassignments: it collects one request's
    partitions in a Scala 2.13 `mutable.HashMap` (processApiPartitionReassignment, processZkPartitionReassignment)
    and calls onPartitionReassignment for each in that map's iteration order: by bucket (the improved hash,
    `h ^ (h >>> 16)`, masked by the table's size: 16, doubled as it fills past three quarters), then by improved
    hash within a bucket."""
    keys = sorted(set(partitions))
    size = 16
    while len(keys) >= size * 3 // 4:
        size *= 2
    improved = {k: (h := _topic_partition_hash(*k)) ^ (h >> 16) for k in keys}
    return sorted(keys, key=lambda k: (improved[k] & (size - 1), improved[k]))


def failover_resume_order(partitions: Iterable[tuple[str, int]], from_znode: Iterable[tuple[str, int]]
                          ) -> list[tuple[str, int]]:
    """The distinct `partitions` being reassigned in the order a new controller resumes them
    (initializePartitionReassignments): first those `/admin/reassign_partitions` still names, in the order of the
    map its read of the znode builds (processZkPartitionReassignment), then the others, in the order of its set of
    reassignments in progress (maybeResumeReassignments, which skips the ones resumed already)."""
    keys = set(partitions)
    first = keys & set(from_znode)
    return reassignment_order(first) + reassignment_order(keys - first)
