"""The rule sets: where Kafka 4.1's KRaft controller decides differently from the ZooKeeper-era one.

One state machine (partition.py) runs both; a `Rules` value names the few places that differ, each a small
policy. `ZK` is the design's controller (Kafka 3.9 and earlier), the default. `KRAFT` follows Kafka 4.1's
PartitionChangeBuilder / ReplicationControlManager:

- one operation writes at most one PartitionChangeRecord per partition: the ZK controller's several
  writes of one step (an election, then a replica out of the ISR; a reassignment's phases) become one decision,
  partition_epoch + 1;
- the leader epoch is bumped only when the leader changes, or when the replica set loses a member
  (PartitionChangeBuilder: tryElection, triggerLeaderEpochBumpForReplicaReassignmentIfNeeded), never for an
  ISR change alone from metadata version 3.6-IV0 on (KAFKA-15021; below it, also when the ISR shrinks);
- a controlled shutdown covers every partition the broker leads, one replica or not; when no other ISR
  member can lead, the partition goes leaderless (leader -1) and keeps its last ISR member
  (ReplicationControlManager.handleBrokerInControlledShutdown);
- a reassignment may add a fenced broker (it stays in progress until the broker catches up);
- a new reassignment over one in progress starts from the current replicas, those being added included
  (`reassignment_from_current`), and a reassignment completes only with the ISR an operation starts from, never
  with the one its election sets (`Rules.completes_reassignment_before_election`);
- a preferred election of a leaderless partition falls back to the first other valid replica;
- the automatic rebalance elects every partition whose leader is not its preferred replica;
- a new controller (a new Raft epoch) takes over the replicated state as it is: no partition is re-examined.

The kraft rules follow the cluster's metadata version (`Command.metadata_version`) where Kafka's controller does:
`leader_epoch_bumped`, `unclean_leader_recovery_state`, `eligible_leader_replicas_enabled` (statemachine.features
holds the levels and MetadataVersion's predicates). The ZK rules ignore it.

With the feature eligible.leader.replicas.version >= 1 (KIP-966, `Command.elr_enabled`), the kraft
rules also keep each partition's Eligible Leader Replicas (`eligible_leader_replicas`, `last_known_leader`,
elections.eligible): the ISR may go empty, its members below min ISR move to the ELR, the ELR can lead when the
ISR is empty, and the last known leader leads (uncleanly) when both are empty. Once the feature is turned off, a
partition's next change empties the ELR it kept (`elr_after_disabling`), which can still lead while its ISR is
empty (`elr_that_can_lead_without_the_feature`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from schemas.events import LeaderRecoveryState
from schemas.records import Decision
from statemachine.features import (
    IBP_2_7_IV2,
    MINIMUM_KRAFT_VERSION,
    is_alter_partition_supported,
    is_elr_supported,
    is_leader_epoch_bump_required_on_isr_shrink,
    is_leader_recovery_supported,
)
from statemachine.kraft_releases import (
    completes_reassignment_once_the_adding_replicas_caught_up,
    elects_uncleanly_by_config,
    waits_for_every_target_when_removing_more,
)
from statemachine.zk_releases import KafkaRelease, alter_partition_checks_live_brokers


def _every_write(before: Any, decisions: Sequence[Decision], metadata_version: int) -> list[Decision]:
    return list(decisions)


def leader_epoch_bumped(before: Any, after: Decision, metadata_version: int) -> bool:
    """PartitionChangeBuilder.build: a new leader (tryElection) or a replica set that lost a member
    (triggerLeaderEpochBumpForReplicaReassignmentIfNeeded) bump the leader epoch; below metadata version 3.6-IV0
    so does an ISR that lost a member (triggerLeaderEpochBumpForIsrShrinkIfNeeded, KAFKA-15021)."""
    if after.leader != before.leader or not set(before.replicas) <= set(after.replicas):
        return True
    return is_leader_epoch_bump_required_on_isr_shrink(metadata_version) and not set(before.isr) <= set(after.isr)


def reassignment_from_original(replicas: Sequence[int], adding: Sequence[int], removing: Sequence[int],
                               target: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """ZK (ReplicaAssignment.reassignTo): the replica set is the target, then the original replicas it drops (the
    original ones: those a reassignment in progress was not adding). Returns (replicas, adding, removing)."""
    origin = tuple(r for r in replicas if r not in adding)
    full = tuple(dict.fromkeys((*target, *origin)))
    return full, tuple(r for r in full if r not in origin), tuple(r for r in full if r not in target)


def reassignment_from_current(replicas: Sequence[int], adding: Sequence[int], removing: Sequence[int],
                              target: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """KRaft (ReplicationControlManager.changePartitionReassignment, PartitionReassignmentReplicas): from the current
    replicas, those a reassignment in progress is adding included: the target, then the current replicas it drops,
    in id order (a TreeSet); adding and removing in id order too. An empty adding or removing list is not set on
    the change, so the partition keeps the one it had. Returns (replicas, adding, removing)."""
    dropped = tuple(sorted(set(replicas) - set(target)))
    added = tuple(sorted(set(target) - set(replicas)))
    return (*target, *dropped), added or tuple(adding), dropped or tuple(removing)


def every_target_in_the_isr(isr: Sequence[int], target: Sequence[int], adding: Sequence[int],
                            removing: Sequence[int], controller_level: int) -> bool:
    """ZK (KafkaController.isReassignmentComplete): a reassignment completes once every target replica is in the
    ISR."""
    return all(r in isr for r in target)


def caught_up_by_release(isr: Sequence[int], target: Sequence[int], adding: Sequence[int],
                         removing: Sequence[int], controller_level: int) -> bool:
    """KRaft (PartitionReassignmentReplicas.maybeCompleteReassignment), by the controller's release
    (statemachine.kraft_releases): the ISR less the replicas being removed must not be empty; Kafka 3.8 to 4.2
    then wait for every target replica in it; 3.7 and 4.3 on, for every replica being added (a target replica
    that stays, fenced say, need not be), and from 4.3 on for every target replica when the reassignment removes
    more than it adds."""
    remaining = [r for r in isr if r not in removing]
    if not remaining:
        return False
    if completes_reassignment_once_the_adding_replicas_caught_up(controller_level):
        return all(r in remaining for r in adding) and (
            len(adding) >= len(removing) or not waits_for_every_target_when_removing_more(controller_level)
            or all(r in remaining for r in target))
    return all(r in remaining for r in target)


def _one_record_per_operation(before: Any, decisions: Sequence[Decision], metadata_version: int) -> list[Decision]:
    """The last write of the operation, with KRaft's epochs (PartitionRegistration.merge) counted from
    `before`; nothing when the partition ends where it started."""
    if not decisions:
        return []
    last = decisions[-1]
    if any(d.is_new for d in decisions):
        return [last]  # creation: epochs start at 0 either way
    if (last.leader, tuple(last.isr), tuple(last.replicas), tuple(last.adding_replicas),
            tuple(last.removing_replicas), str(last.leader_recovery_state), tuple(last.eligible_leader_replicas),
            tuple(last.last_known_elr), tuple(last.directories)) == (
            before.leader, tuple(before.isr), tuple(before.replicas), tuple(before.adding_replicas),
            tuple(before.removing_replicas), str(before.leader_recovery_state),
            tuple(before.eligible_leader_replicas), tuple(before.last_known_elr), tuple(before.directories)):
        return []
    bump = 1 if leader_epoch_bumped(before, last, metadata_version) else 0
    # The election that happened in the operation, if any, names the decision.
    published = (before.leader_epoch + bump, before.partition_epoch + 1,
                 next((d.election for d in reversed(decisions) if d.election), None))
    if published == (last.leader_epoch, last.partition_epoch, last.election):
        return [last]  # one write, with the epochs KRaft publishes (the usual operation): no copy
    return [last.evolve(leader_epoch=published[0], partition_epoch=published[1], election=published[2])]


def _zk_shutdown_fallback(leader: int, isr: Sequence[int], replicas: Sequence[int],
                          broker: int) -> tuple[int, tuple[int, ...]] | None:
    """ZK: nothing to do when no other ISR member can take over (the broker keeps leading), or for RF=1."""
    return None


def _kraft_shutdown_fallback(leader: int, isr: Sequence[int], replicas: Sequence[int],
                             broker: int) -> tuple[int, tuple[int, ...]] | None:
    """KRaft: leader -1; the broker leaves the ISR unless it is its last member (ELR off)."""
    remaining = tuple(r for r in isr if r != broker)
    return -1, remaining or tuple(isr)


def unclean_leader_recovery_state(metadata_version: int) -> LeaderRecoveryState | None:
    """KIP-704: an unclean leader starts RECOVERING from metadata version 3.2-IV0 on (Kafka 3.9
    PartitionChangeBuilder.tryElection; for the ZooKeeper-era controller the inter.broker.protocol.version,
    PartitionStateMachine's leaderForOffline); below it the election leaves the recovery state as it was (None)."""
    return LeaderRecoveryState.RECOVERING if is_leader_recovery_supported(metadata_version) else None


def isr_checked_against_live_brokers(metadata_version: int, release: KafkaRelease) -> bool:
    """KIP-841: a controller refuses an ISR change naming a broker that is not live (INELIGIBLE_REPLICA; the
    ZooKeeper-era controller's processAlterPartition from Kafka 3.3, KRaft's ReplicationControlManager). Below
    inter.broker.protocol 2.7 the leader writes its ISR to ZooKeeper itself, and the 2.x controller took AlterIsr
    as it came."""
    return is_alter_partition_supported(metadata_version) and alter_partition_checks_live_brokers(release)


def reassigning_states_watched(metadata_version: int) -> bool:
    """Below inter.broker.protocol 2.7 the ZooKeeper-era controller watches each reassigning partition's state znode
    (PartitionReassignmentIsrChangeHandler, re-armed by its own reads). Its own writes fire the watch too: the event
    it queues completes the reassignment once every target replica is in the ISR
    (processPartitionReassignmentIsrChange), which only an unclean election can newly make so."""
    return not is_alter_partition_supported(metadata_version)


def _always_for_every_release(_metadata_version: int, _release: KafkaRelease) -> bool:
    return True


def _never(_metadata_version: int) -> bool:
    return False


def _every_release(_controller_level: int) -> bool:
    return True


def eligible_leader_replicas_enabled(elr_version: int, metadata_version: int) -> bool:
    """KIP-966: ELR is on when the feature eligible.leader.replicas.version is at least 1
    (FeatureControlManager.isElrFeatureEnabled) on a metadata version that supports it (isElrSupported, 4.0-IV1,
    which that feature level depends on)."""
    return elr_version >= 1 and is_elr_supported(metadata_version)


def elr_after_disabling(last_known_elr: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """KIP-966 with the feature off (PartitionChangeBuilder.maybeUpdateRecordElr): a change empties the ELR a
    partition still holds from when it was on, and keeps its last known ELR (maybeUpdateLastKnownLeader does
    nothing with the feature off). Returns (ELR, last known ELR)."""
    return (), tuple(last_known_elr)


def elr_that_can_lead_without_the_feature(isr: Sequence[int], elr: Sequence[int]) -> tuple[int, ...]:
    """KIP-966 with the feature off: the ELR a partition kept from when it was on can still lead while its ISR is
    empty (PartitionChangeBuilder.isValidNewLeader reads the partition's ELR whatever the feature says; only
    maybePopulateTargetElr and the last known leader's election need it)."""
    return () if isr else tuple(elr)


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
    it had is remembered (a partition already leaderless has none to remember: Kafka 4.1 writes no last known
    ELR then); as soon as the partition has a leader again, it is forgotten."""
    if not isr and before_isr and before_leader >= 0:
        return (before_leader,)
    if leader >= 0:
        return ()
    return tuple(before_last_known)


@dataclass(frozen=True)
class Rules:
    name: str
    # (record before the operation, the operation's writes in order, metadata version) -> the decisions it
    # publishes.
    decisions: Callable[[Any, Sequence[Decision], int], list[Decision]]
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
    # Turning unclean.leader.election.enable on: ZK's controller elects the topic's offline partitions at once
    # (TopicConfigHandler -> enableTopicUncleanLeaderElection); KRaft's does not, it elects them at its periodic
    # task (unclean.leader.election.interval.ms) or the next fence, unfence or AlterPartition, each of which is an
    # event of its own.
    elects_unclean_at_config_change: bool
    # A fenced broker: ZK deletes its registration; KRaft keeps it, and may fence it again (its session timing out
    # after a controlled shutdown), which is a failure of the same broker epoch.
    fenced_brokers_stay_registered: bool
    # A new reassignment's (replicas, adding, removing) from the partition's and the target:
    # reassignment_from_original (ZK) or reassignment_from_current (KRaft). A cancel reverts to the original replicas
    # under both.
    reassignment_replicas: Callable[[Sequence[int], Sequence[int], Sequence[int], Sequence[int]],
                                    tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]
    # When a reassignment whose targets are all in the ISR completes. ZK: whenever the controller looks at it, also
    # right after the election of a starting broker (onBrokerStartup, then maybeResumeReassignments). KRaft: in the
    # change an operation writes, judged by the ISR the operation starts from (PartitionChangeBuilder.build runs
    # completeReassignmentIfNeeded before tryElection), so the ISR an election sets completes nothing until the
    # partition's next change.
    completes_reassignment_before_election: bool
    # Whether a partition's leader and ISR are registered from its creation on. ZK writes a partition's state znode
    # at its first election, so a partition that never had a leader (nor, with ELR, one it remembers) has nothing to
    # write a reassignment into; KRaft's PartitionRecord exists from the topic's creation, so every change of the
    # replicas is a PartitionChangeRecord, leader or not.
    registered_from_creation: bool
    # Whether a topic's deletion writes its replicas out of the ISR as they go offline. ZK: yes, the partition state
    # znode is written (ReplicaStateMachine OfflineReplica -> removeReplicasFromIsr), only the LeaderAndIsr request
    # is skipped. KRaft: the topic goes in one RemoveTopicRecord, no partition change.
    deletion_writes_offline_replicas: bool
    # Whether a reassignment (or its cancel) whose replicas would hold no member of the ISR is refused. KRaft: yes
    # (INVALID_REPLICA_ASSIGNMENT). ZK: no, the replicas it drops go offline, the last ISR member stays in the ISR
    # and the partition is left without a leader.
    refuses_reassignment_dropping_the_isr: bool
    # How a reassignment's steps are written. ZK: updateLeaderEpochAndSendRequest, a leader epoch bump for a leader
    # that stays (also a startup resuming it on a topic being deleted); no write when no leader stays and none is
    # elected. KRaft: each change carries the new replica set, leader or not.
    reassignment_steps_bump_the_leader_epoch: bool
    # Whether a reassignment that drops the leader's replica elects a new leader as for an offline partition. KRaft:
    # yes, in the same change. ZK: no; the removed leader goes offline (leader -1) and the partition, still
    # OnlinePartition to the state machine, waits for a failover, a later reassignment, or any broker's failure
    # (onReplicasBecomeOffline elects every partition whose leader is not live, -1 too; a startup does not).
    elects_when_a_reassignment_drops_the_leader: bool
    # Whether an offline election may go unclean only when no ISR member is live. ZK: PartitionStateMachine
    # (collectUncleanLeaderElectionState) sorts partitions by whether their ISR has a live broker, replica or not, and
    # elects those that have one cleanly only, so an ISR left holding a live broker that is no longer a replica (a
    # reassignment away from it that found no leader) blocks the unclean election. KRaft looks at live ISR replicas.
    unclean_needs_the_isr_offline: bool
    # The lowest metadata.version the rules run at: a KRaft controller's first (3.0-IV1), or for the ZooKeeper-era
    # controller any inter.broker.protocol.version (those before 3.0-IV1 are levels 0 and -1, statemachine.features).
    minimum_metadata_version: int
    # The recovery state an unclean election gives its leader, by metadata version (None: unchanged).
    unclean_recovery_state: Callable[[int], LeaderRecoveryState | None] = unclean_leader_recovery_state
    # Whether an ISR change naming a broker that is not live is refused, by metadata version and controller release.
    isr_members_must_be_live: Callable[[int, KafkaRelease], bool] = _always_for_every_release
    # Whether the rule set has Eligible Leader Replicas (KIP-966), used when the cluster's feature is on
    # (Command.elr_enabled). The ZK controller never had them.
    eligible_leader_replicas: bool = False
    # Whether the controller's own write of a reassigning partition's state can complete the reassignment, by
    # metadata version (KRaft completes it within the change that elects).
    reassigning_states_watched: Callable[[int], bool] = _never
    # Whether a broker's startup, and replicas going offline (a broker's failure, a failed log dir's answer), try to
    # elect every New or Offline partition of the cluster, not only the broker's. ZK: onBrokerStartup and
    # onReplicasBecomeOffline call triggerOnlinePartitionStateChange for all of them, so a partition another change
    # gave a live replica without electing (a reassignment of a partition that never had a leader) elects then. The
    # kraft rules elect the broker's own.
    elects_everywhere: bool = False
    # When a reassignment's ISR has caught up: (isr, target, adding, removing, the controller's release as the
    # newest metadata.version level it supports) -> whether it completes. every_target_in_the_isr (ZK) or
    # caught_up_by_release (KRaft).
    reassignment_caught_up: Callable[[Sequence[int], Sequence[int], Sequence[int], Sequence[int], int], bool] = \
        every_target_in_the_isr
    # Whether partitions keep each replica's log directory (KIP-858, statemachine.directories): KRaft's
    # PartitionRecord and PartitionChangeRecord carry them; the ZooKeeper-era controller never knew them.
    assigns_directories: bool = False
    # Whether unclean.leader.election.enable lets an offline partition elect uncleanly, by the controller's release
    # (the newest metadata.version level it supports). ZK: always. KRaft: from Kafka 3.9 on
    # (kraft_releases.elects_uncleanly_by_config).
    unclean_by_config: Callable[[int], bool] = _every_release
    # Whether an AlterPartition naming several partitions completes the reassignments it lets complete after all its
    # ISR changes are written and its one UpdateMetadata sent. ZK: processAlterIsr / processAlterPartition answers the
    # request, then calls maybeCompleteReassignment for each partition (the same at 2.7.2, 2.8.2, 3.0.2, 3.5.2 and
    # 3.9). KRaft: each partition's change completes its reassignment itself (PartitionChangeBuilder).
    completes_reassignments_after_the_request: bool = False


ZK = Rules("zk", _every_write, _zk_shutdown_fallback, shutdown_skips_single_replica=True,
           reassign_to_live_brokers_only=True, preferred_falls_back=False, rebalance_batch=None,
           reexamine_on_failover=True, elects_unclean_at_config_change=True,
           fenced_brokers_stay_registered=False, reassignment_replicas=reassignment_from_original,
           completes_reassignment_before_election=False, registered_from_creation=False,
           deletion_writes_offline_replicas=True, refuses_reassignment_dropping_the_isr=False,
           elects_when_a_reassignment_drops_the_leader=False, reassignment_steps_bump_the_leader_epoch=True,
           unclean_needs_the_isr_offline=True,
           minimum_metadata_version=IBP_2_7_IV2,
           isr_members_must_be_live=isr_checked_against_live_brokers,
           reassigning_states_watched=reassigning_states_watched, elects_everywhere=True,
           completes_reassignments_after_the_request=True)
KRAFT = Rules("kraft", _one_record_per_operation, _kraft_shutdown_fallback, shutdown_skips_single_replica=False,
              reassign_to_live_brokers_only=False, preferred_falls_back=True, rebalance_batch=1000,
              reexamine_on_failover=False, elects_unclean_at_config_change=False, fenced_brokers_stay_registered=True,
              reassignment_replicas=reassignment_from_current, completes_reassignment_before_election=True,
              registered_from_creation=True, deletion_writes_offline_replicas=False,
              refuses_reassignment_dropping_the_isr=True, elects_when_a_reassignment_drops_the_leader=True,
              reassignment_steps_bump_the_leader_epoch=False, unclean_needs_the_isr_offline=False,
              minimum_metadata_version=MINIMUM_KRAFT_VERSION,
              eligible_leader_replicas=True, assigns_directories=True,
              reassignment_caught_up=caught_up_by_release, unclean_by_config=elects_uncleanly_by_config)
RULE_SETS = {r.name: r for r in (ZK, KRAFT)}


def rules_named(name: str) -> Rules:
    try:
        return RULE_SETS[name]
    except KeyError:
        raise ValueError(f"unknown rule set '{name}' (known: {', '.join(RULE_SETS)})") from None
