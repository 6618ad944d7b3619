"""Kafka's leader election algorithms (Election.scala, PartitionLeaderElectionAlgorithms), one small pure
function each. Each returns the elected leader with the new ISR and the LeaderAndIsr recipients, or
None when no replica qualifies (the caller leaves leader and ISR as they were)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum

from schemas.events import LeaderRecoveryState


class Election(StrEnum):
    INITIAL = "INITIAL"
    OFFLINE = "OFFLINE"
    OFFLINE_UNCLEAN = "OFFLINE_UNCLEAN"
    REASSIGN = "REASSIGN"
    PREFERRED = "PREFERRED"
    CONTROLLED_SHUTDOWN = "CONTROLLED_SHUTDOWN"


@dataclass(frozen=True, slots=True)
class Elected:
    election: Election
    leader: int
    isr: tuple[int, ...]
    recipients: tuple[int, ...]
    # An unclean leader starts RECOVERING (KIP-704); None keeps the partition's recovery state.
    leader_recovery_state: LeaderRecoveryState | None = None


def initial(replicas: Sequence[int], live: Collection[int]) -> Elected | None:
    """New -> Online: the first live replica leads, every live replica is in the ISR."""
    live_replicas = tuple(r for r in replicas if r in live)
    if not live_replicas:
        return None
    return Elected(Election.INITIAL, live_replicas[0], live_replicas, live_replicas)


def offline(replicas: Sequence[int], isr: Sequence[int], live: Collection[int],
            unclean_allowed: bool) -> Elected | None:
    """First live ISR member in replica order; failing that, if unclean is allowed, first live replica."""
    live_replicas = tuple(r for r in replicas if r in live)
    leader = next((r for r in live_replicas if r in isr), None)
    if leader is not None:
        return Elected(Election.OFFLINE, leader, tuple(r for r in isr if r in live), live_replicas)
    if unclean_allowed and live_replicas:
        # The new leader was not in sync: its log may miss acknowledged writes.
        return Elected(Election.OFFLINE_UNCLEAN, live_replicas[0], (live_replicas[0],), live_replicas,
                       LeaderRecoveryState.RECOVERING)
    return None


def reassign(target_replicas: Sequence[int], isr: Sequence[int], live: Collection[int]) -> Elected | None:
    """First target replica that is live and in the ISR; the ISR is unchanged."""
    leader = next((r for r in target_replicas if r in live and r in isr), None)
    if leader is None:
        return None
    return Elected(Election.REASSIGN, leader, tuple(isr), tuple(target_replicas))


def preferred(replicas: Sequence[int], isr: Sequence[int], live: Collection[int]) -> Elected | None:
    """Only the preferred replica (the first of the assignment), if live and in the ISR."""
    if not replicas or replicas[0] not in live or replicas[0] not in isr:
        return None
    return Elected(Election.PREFERRED, replicas[0], tuple(isr), tuple(replicas))


def controlled_shutdown(replicas: Sequence[int], isr: Sequence[int], live_or_shutting_down: Collection[int],
                        shutting_down: Collection[int]) -> Elected | None:
    """First ISR member still registered and not shutting down; shutting-down brokers leave the ISR."""
    leader = next((r for r in replicas
                   if r in live_or_shutting_down and r in isr and r not in shutting_down), None)
    if leader is None:
        return None
    return Elected(Election.CONTROLLED_SHUTDOWN, leader, tuple(r for r in isr if r not in shutting_down),
                   tuple(r for r in replicas if r in live_or_shutting_down))


def eligible(replicas: Sequence[int], isr: Sequence[int], elr: Sequence[int], last_known_elr: Sequence[int],
             live: Collection[int], unclean_allowed: bool) -> Elected | None:
    """KRaft with Eligible Leader Replicas (KIP-966; PartitionChangeBuilder.electAnyLeader): the first live
    replica in the ISR; with the ISR empty, the first live one in the ELR, which becomes the ISR alone; with
    both empty, the last known leader if live, uncleanly (RECOVERING) even when unclean election is disabled;
    then, if allowed, the first live replica uncleanly."""
    live_replicas = tuple(r for r in replicas if r in live)
    leader = next((r for r in live_replicas if r in isr), None)
    if leader is not None:
        return Elected(Election.OFFLINE, leader, tuple(r for r in isr if r in live), live_replicas)
    if not isr:
        leader = next((r for r in live_replicas if r in elr), None)
        if leader is not None:
            return Elected(Election.OFFLINE, leader, (leader,), live_replicas)
    if not isr and not elr and len(last_known_elr) == 1 and last_known_elr[0] in live:
        leader = last_known_elr[0]
        return Elected(Election.OFFLINE_UNCLEAN, leader, (leader,), live_replicas, LeaderRecoveryState.RECOVERING)
    if unclean_allowed and live_replicas:
        return Elected(Election.OFFLINE_UNCLEAN, live_replicas[0], (live_replicas[0],), live_replicas,
                       LeaderRecoveryState.RECOVERING)
    return None
