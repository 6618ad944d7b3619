"""The five election algorithms, case by case as Kafka's PartitionLeaderElectionAlgorithmsTest checks them
(assignment / ISR / live brokers -> leader), plus what our decisions also carry: the new ISR, the
LeaderAndIsr recipients and the leader recovery state of an unclean election (docs/semantics.md, Elections)."""

from __future__ import annotations

from statemachine import elections
from statemachine.elections import Elected, Election


def leader_of(elected: Elected | None) -> int | None:
    return None if elected is None else elected.leader


# -- INITIAL (New -> Online) -------------------------------------------------------------------------

def test_initial_first_live_replica_leads_and_all_live_replicas_form_the_isr() -> None:
    elected = elections.initial([3, 1, 2], live={1, 2, 3})
    assert elected == Elected(Election.INITIAL, 3, (3, 1, 2), (3, 1, 2))
    assert elected.leader_recovery_state is None


def test_initial_skips_dead_replicas_and_keeps_replica_order() -> None:
    elected = elections.initial([3, 1, 2], live={2, 1})
    assert elected is not None
    assert elected.leader == 1
    assert elected.isr == (1, 2)
    assert elected.recipients == (1, 2)


def test_initial_with_no_live_replica_elects_nobody() -> None:
    assert elections.initial([1, 2], live={3, 4}) is None
    assert elections.initial([1, 2], live=set()) is None


# -- OFFLINE (Kafka: offlinePartitionLeaderElection) --------------------------------------------------

def test_offline_elects_first_live_isr_member() -> None:
    # Kafka: assignment [2, 4], ISR [2, 4], live {4} -> 4
    elected = elections.offline([2, 4], [2, 4], live={4}, unclean_allowed=False)
    assert elected is not None
    assert elected.election is Election.OFFLINE
    assert elected.leader == 4
    assert elected.isr == (4,)  # the old ISR filtered to live brokers
    assert elected.recipients == (4,)  # live replicas of RS
    assert elected.leader_recovery_state is None  # a clean election keeps the recovery state


def test_offline_last_isr_member_offline_unclean_disabled_elects_nobody() -> None:
    # Kafka: assignment [2, 4], ISR [2], live {4}, unclean disabled -> None
    assert elections.offline([2, 4], [2], live={4}, unclean_allowed=False) is None


def test_offline_last_isr_member_offline_unclean_enabled_elects_live_replica_recovering() -> None:
    # Kafka: assignment [2, 4], ISR [2], live {4}, unclean enabled -> 4 (one unclean election)
    elected = elections.offline([2, 4], [2], live={4}, unclean_allowed=True)
    assert elected == Elected(Election.OFFLINE_UNCLEAN, 4, (4,), (4,), "RECOVERING")


def test_offline_prefers_a_clean_leader_even_when_unclean_is_allowed() -> None:
    elected = elections.offline([1, 2, 3], [3], live={1, 3}, unclean_allowed=True)
    assert elected is not None
    assert elected.election is Election.OFFLINE
    assert elected.leader == 3
    assert elected.leader_recovery_state is None


def test_offline_follows_replica_order_not_isr_order() -> None:
    elected = elections.offline([1, 2, 3], [3, 2], live={2, 3}, unclean_allowed=False)
    assert elected is not None
    assert elected.leader == 2
    assert elected.isr == (3, 2)
    assert elected.recipients == (2, 3)


def test_offline_unclean_with_no_live_replica_elects_nobody() -> None:
    assert elections.offline([1, 2], [1], live={3}, unclean_allowed=True) is None


def test_offline_recipients_include_live_replicas_outside_the_isr() -> None:
    elected = elections.offline([1, 2, 3], [2], live={2, 3}, unclean_allowed=False)
    assert elected is not None
    assert (elected.leader, elected.isr, elected.recipients) == (2, (2,), (2, 3))


# -- REASSIGN (Kafka: reassignPartitionLeaderElection) ------------------------------------------------

def test_reassign_elects_first_live_isr_member_of_the_target() -> None:
    # Kafka: reassignment [2, 4], ISR [2, 4], live {4} -> 4
    elected = elections.reassign([2, 4], [2, 4], live={4})
    assert elected is not None
    assert elected.election is Election.REASSIGN
    assert elected.leader == 4
    assert elected.isr == (2, 4)  # unchanged
    assert elected.recipients == (2, 4)  # the target replicas


def test_reassign_with_no_live_isr_member_elects_nobody() -> None:
    # Kafka: reassignment [2, 4], ISR [2], live {} -> None
    assert elections.reassign([2, 4], [2], live=set()) is None


def test_reassign_with_empty_isr_elects_nobody() -> None:
    # Kafka: reassignment [2, 4], ISR [], live {2} -> None
    assert elections.reassign([2, 4], [], live={2}) is None


def test_reassign_ignores_isr_members_outside_the_target() -> None:
    # A removing replica (in the ISR, live) must not be chosen.
    assert leader_of(elections.reassign([4, 5], [1, 4, 5], live={1, 5})) == 5
    assert leader_of(elections.reassign([4, 5], [1, 4], live={1})) is None


# -- PREFERRED (Kafka: preferredReplicaPartitionLeaderElection) --------------------------------------

def test_preferred_elects_the_first_replica_when_live_and_in_isr() -> None:
    # Kafka: assignment [2, 4], ISR [2, 4], live {2, 4} -> 2
    elected = elections.preferred([2, 4], [4, 2], live={2, 4})
    assert elected == Elected(Election.PREFERRED, 2, (4, 2), (2, 4))


def test_preferred_replica_in_isr_but_not_live() -> None:
    # Kafka: assignment [2, 4], ISR [2], live {} -> None
    assert elections.preferred([2, 4], [2], live=set()) is None


def test_preferred_replica_live_but_not_in_isr() -> None:
    # Kafka: assignment [2, 4], ISR [4], live {2, 4} -> None
    assert elections.preferred([2, 4], [4], live={2, 4}) is None


def test_preferred_replica_neither_in_isr_nor_live() -> None:
    # Kafka: assignment [2, 4], ISR [], live {} -> None
    assert elections.preferred([2, 4], [], live=set()) is None


def test_preferred_never_falls_back_to_another_replica() -> None:
    assert elections.preferred([2, 4], [4], live={4}) is None


# -- CONTROLLED_SHUTDOWN (Kafka: controlledShutdownPartitionLeaderElection) ----------------------------

def test_controlled_shutdown_moves_leadership_off_the_shutting_down_broker() -> None:
    # Kafka: assignment [2, 4], ISR [2, 4], live {2, 4}, shutting down {2} -> 4
    elected = elections.controlled_shutdown([2, 4], [2, 4], live_or_shutting_down={2, 4}, shutting_down={2})
    assert elected is not None
    assert elected.election is Election.CONTROLLED_SHUTDOWN
    assert elected.leader == 4
    assert elected.isr == (4,)  # shutting-down brokers leave the ISR
    assert elected.recipients == (2, 4)  # the shutting-down broker still hears about it


def test_controlled_shutdown_last_isr_member_shutting_down() -> None:
    # Kafka: assignment [2, 4], ISR [2], live {2, 4}, shutting down {2} -> None
    assert elections.controlled_shutdown([2, 4], [2], live_or_shutting_down={2, 4}, shutting_down={2}) is None


def test_controlled_shutdown_all_isr_simultaneously_shutting_down() -> None:
    # Kafka: assignment [2, 4], ISR [2, 4], live {2, 4}, shutting down {2, 4} -> None
    assert elections.controlled_shutdown([2, 4], [2, 4], live_or_shutting_down={2, 4}, shutting_down={2, 4}) is None


def test_controlled_shutdown_skips_dead_isr_members_and_excludes_dead_recipients() -> None:
    elected = elections.controlled_shutdown([1, 2, 3], [1, 2, 3], live_or_shutting_down={1, 3}, shutting_down={1})
    assert elected is not None
    assert elected.leader == 3
    assert elected.isr == (2, 3)  # only shutting-down brokers are removed here
    assert elected.recipients == (1, 3)


def test_election_results_are_plain_values_usable_as_decision_fields() -> None:
    elected = elections.offline([1, 2], [1], live={2}, unclean_allowed=True)
    assert elected is not None
    assert str(elected.election) == "OFFLINE_UNCLEAN"
    assert isinstance(elected.isr, tuple)
    assert isinstance(elected.recipients, tuple)
