"""The rule sets: where Kafka 4.1's KRaft controller decides differently from the ZooKeeper-era one.

One state machine (partition.py) runs both; a `Rules` value names the few places that differ, each a small
policy. `ZK` is the design's controller (Kafka 3.9 and earlier), the default. `KRAFT` follows Kafka 4.1's
PartitionChangeBuilder / ReplicationControlManager:

- one operation writes at most one PartitionChangeRecord per partition: the ZK controller's several
  writes of one step (an election, then a replica out of the ISR; a reassignment's phases) become one decision,
  partition_epoch + 1;
- the leader epoch is bumped only when the leader changes, or when the replica set loses a member
  (PartitionChangeBuilder: tryElection, triggerLeaderEpochBumpForReplicaReassignmentIfNeeded), never for an
  ISR change alone (metadata version >= 3.6, KAFKA-15021);
- a controlled shutdown covers every partition the broker leads, one replica or not; when no other ISR
  member can lead, the partition goes leaderless (leader -1) and keeps its last ISR member
  (ReplicationControlManager.handleBrokerInControlledShutdown);
- a reassignment may add a fenced broker (it stays in progress until the broker catches up);
- a preferred election of a leaderless partition falls back to the first other valid replica;
- the automatic rebalance elects every partition whose leader is not its preferred replica;
- a new controller (a new Raft epoch) takes over the replicated state as it is: no partition is re-examined.

With the feature eligible.leader.replicas.version >= 1 (KIP-966, `Command.elr_enabled`), the kraft
rules also keep each partition's Eligible Leader Replicas (`eligible_leader_replicas`, `last_known_leader`,
elections.eligible): the ISR may go empty, its members below min ISR move to the ELR, the ELR can lead when the
ISR is empty, and the last known leader leads (uncleanly) when both are empty.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

from schemas.records import Decision


def _every_write(before: Any, decisions: Sequence[Decision]) -> list[Decision]:
    return list(decisions)


def _one_record_per_operation(before: Any, decisions: Sequence[Decision]) -> list[Decision]:
    """The last write of the operation, with KRaft's epochs (PartitionRegistration.merge) counted from
    `before`; nothing when the partition ends where it started."""
    if not decisions:
        return []
    last = decisions[-1]
    if any(d.is_new for d in decisions):
        return [last]  # creation: epochs start at 0 either way
    if (last.leader, tuple(last.isr), tuple(last.replicas), tuple(last.adding_replicas),
            tuple(last.removing_replicas), str(last.leader_recovery_state), tuple(last.eligible_leader_replicas),
            tuple(last.last_known_elr)) == (
            before.leader, tuple(before.isr), tuple(before.replicas), tuple(before.adding_replicas),
            tuple(before.removing_replicas), str(before.leader_recovery_state),
            tuple(before.eligible_leader_replicas), tuple(before.last_known_elr)):
        return []
    lost_replica = not set(before.replicas) <= set(last.replicas)
    # The election that happened in the operation, if any, names the decision.
    return [replace(last, leader_epoch=before.leader_epoch + (1 if last.leader != before.leader or lost_replica else 0),
                    partition_epoch=before.partition_epoch + 1,
                    election=next((d.election for d in reversed(decisions) if d.election), None))]


def _zk_shutdown_fallback(leader: int, isr: Sequence[int], replicas: Sequence[int],
                          broker: int) -> tuple[int, tuple[int, ...]] | None:
    """ZK: nothing to do when no other ISR member can take over (the broker keeps leading), or for RF=1."""
    return None


def _kraft_shutdown_fallback(leader: int, isr: Sequence[int], replicas: Sequence[int],
                             broker: int) -> tuple[int, tuple[int, ...]] | None:
    """KRaft: leader -1; the broker leaves the ISR unless it is its last member (ELR off)."""
    remaining = tuple(r for r in isr if r != broker)
    return -1, remaining or tuple(isr)


def eligible_leader_replicas(elr: Sequence[int], isr: Sequence[int], target_isr: Sequence[int], min_isr: int,
                             unclean_shutdown: Collection[int] = ()) -> tuple[int, ...]:
    """KIP-966 (PartitionChangeBuilder.maybePopulateTargetElr): an ISR of at least min ISR needs no ELR; below
    it, whoever was in the ISR or the ELR and is not in the new ISR stays eligible, unless it shut down
    uncleanly (its log may have lost acknowledged records). Kafka keeps it as a hash set: sorted here."""
    if len(target_isr) >= min_isr:
        return ()
    return tuple(sorted((set(elr) | set(isr)) - set(target_isr) - set(unclean_shutdown)))


def last_known_leader(before_leader: int, before_isr: Sequence[int], before_last_known: Sequence[int],
                      isr: Sequence[int], leader: int) -> tuple[int, ...]:
    """KIP-966 (PartitionChangeBuilder.maybeUpdateLastKnownLeader): when a change empties the ISR, the leader
    it had is remembered; as soon as the partition has a leader again, it is forgotten."""
    if not isr and before_isr:
        return (before_leader,)
    if leader >= 0:
        return ()
    return tuple(before_last_known)


@dataclass(frozen=True)
class Rules:
    name: str
    # (record before the operation, the operation's writes in order) -> the decisions it publishes.
    decisions: Callable[[Any, Sequence[Decision]], list[Decision]]
    # Controlled shutdown when no other ISR member can lead: (leader, isr, replicas, broker) -> new
    # (leader, isr), or None to leave the partition as it is.
    shutdown_fallback: Callable[[int, Sequence[int], Sequence[int], int], tuple[int, tuple[int, ...]] | None]
    # Whether a controlled shutdown skips single-replica partitions.
    shutdown_skips_single_replica: bool
    # Whether a reassignment may add only live brokers (ZK). KRaft takes any registered broker, fenced ones
    # included; the shadow controller does not track fenced registrations, so it takes any id.
    reassign_to_live_brokers_only: bool
    # Preferred election of a leaderless partition whose preferred replica cannot lead: ZK refuses
    # (PREFERRED_LEADER_NOT_AVAILABLE); KRaft elects the first other valid replica (PartitionChangeBuilder
    # electPreferredLeader).
    preferred_falls_back: bool
    # Automatic rebalance: ZK elects only where a broker's imbalance exceeds leader.imbalance.per.broker.percentage;
    # KRaft elects every partition whose leader is not its preferred replica, at most `rebalance_batch` per run
    # (ReplicationControlManager.maybeBalancePartitionLeaders). None = the ZK threshold.
    rebalance_batch: int | None
    # A new controller epoch: ZK's new controller re-examines every partition (onControllerFailover: offline
    # replicas out of the ISR, elections); a new KRaft controller replays the same metadata log and writes nothing.
    reexamine_on_failover: bool
    # Whether the rule set has Eligible Leader Replicas (KIP-966), used when the cluster's feature is on
    # (Command.elr_enabled). The ZK controller never had them.
    eligible_leader_replicas: bool = False


ZK = Rules("zk", _every_write, _zk_shutdown_fallback, shutdown_skips_single_replica=True,
           reassign_to_live_brokers_only=True, preferred_falls_back=False, rebalance_batch=None,
           reexamine_on_failover=True)
KRAFT = Rules("kraft", _one_record_per_operation, _kraft_shutdown_fallback, shutdown_skips_single_replica=False,
              reassign_to_live_brokers_only=False, preferred_falls_back=True, rebalance_batch=1000,
              reexamine_on_failover=False, eligible_leader_replicas=True)
RULE_SETS = {r.name: r for r in (ZK, KRAFT)}


def rules_named(name: str) -> Rules:
    try:
        return RULE_SETS[name]
    except KeyError:
        raise ValueError(f"unknown rule set '{name}' (known: {', '.join(RULE_SETS)})") from None
