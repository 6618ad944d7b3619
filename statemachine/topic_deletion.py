"""A topic's deletion, partition by partition (TopicDeletionManager): the deletion starts (DELETE), its replicas
are deleted, fail on a dead broker and are retried (RETRY_DELETION), it resumes (RESUME_DELETION) and completes
(COMPLETE_DELETION). The controller's side (which partitions, when) is in statemachine.topic_events.
"""

from __future__ import annotations

from statemachine.record import PartitionRecord
from statemachine.replica_steps import _delete_replicas, _offline_replica, _require_partition
from statemachine.requests import Phase
from statemachine.states import VALID_PREVIOUS_REPLICA_STATES, PartitionState, ReplicaState
from statemachine.step import Step
from statemachine.visit_order import replica_state_machine_order

P = PartitionState
R = ReplicaState


def _topic_deletion(s: Step) -> None:
    """onTopicDeletion for this partition: UpdateMetadata (leader -2: brokers stop serving it), then its replicas'
    deletion."""
    with s.batch(Phase.DELETION):
        s.send_metadata()
        _continue_deletion(s)


def _continue_deletion(s: Step) -> None:
    """TopicDeletionManager.onPartitionDeletion: delete every replica whose broker is live; one on a dead broker
    fails (ReplicaDeletionIneligible) and waits for that broker's startup (resumeDeletions retries the failed ones:
    RETRY_DELETION, fanned out by the controller). A deleted replica stays ReplicaDeletionSuccessful, and the partition
    with it, until every replica of the topic is deleted (COMPLETE_DELETION, fanned out by the controller)."""
    live = s.command.live_brokers
    pending = replicas_not_deleted(s.record)
    # Deleted once the StopReplica answers come back; a controller that stopped first leaves them started (the next
    # one knows them online again and deletes them again: deletion-cut-short).
    last = R.DELETION_SUCCESSFUL if s.command.stop_replica_answered else R.DELETION_STARTED
    _delete_replicas(s, [b for b in pending if b in live], last=last)
    for broker in sorted(b for b in pending if b not in live):
        _fail_deletion(s, broker)
    waiting = replicas_not_deleted(s.record)
    s.note(f"deletion waits for dead broker(s) {waiting}" if waiting else "every replica deleted")


def replicas_not_deleted(rec: PartitionRecord) -> list[int]:
    """The replicas of a partition whose deletion is not done (not ReplicaDeletionSuccessful), in id order."""
    return sorted(b for b, state in rec.replica_states.items() if state is not R.DELETION_SUCCESSFUL)


def _on_complete_deletion(s: Step) -> None:
    """TopicDeletionManager.completeDeleteTopic: every replica of the topic is deleted; they and the partition cease
    to exist."""
    _require_partition(s)
    for broker in sorted(s.record.replica_states):
        s.move_replica(broker, R.NON_EXISTENT)
    s.move(P.NON_EXISTENT)
    s.note("all replicas of the topic deleted")


def _on_replica_deletion_failed(s: Step) -> None:
    """The broker answered the replica's StopReplica (delete) with an error (KAFKA_STORAGE_ERROR: a failed log dir):
    TopicDeletionManager.failReplicaDeletion."""
    assert s.command.broker_id is not None
    _require_partition(s)
    _fail_deletion(s, s.command.broker_id)


def _on_replica_deleted(s: Step) -> None:
    """The broker answered the replica's StopReplica (delete) without error: TopicDeletionManager
    .completeReplicaDeletion, ReplicaDeletionStarted -> ReplicaDeletionSuccessful."""
    broker = s.command.broker_id
    assert broker is not None
    _require_partition(s)
    if s.record.replica_states.get(broker) is R.DELETION_STARTED:
        s.move_replica(broker, R.DELETION_SUCCESSFUL)
        s.note(f"replica {broker} deleted")


def _fail_deletion(s: Step, broker: int) -> None:
    """A replica whose deletion cannot go on (its broker is not live, or it answered an error):
    ReplicaDeletionIneligible, from OfflineReplica or ReplicaDeletionStarted only
    (TopicDeletionManager.failReplicaDeletion). One still OnlineReplica (a deletion
    halted since the failover or its broker's startup had not started it) stays so: Kafka logs the transition as
    invalid and writes nothing."""
    state = s.record.replica_states[broker]
    if state in VALID_PREVIOUS_REPLICA_STATES[R.DELETION_INELIGIBLE]:
        s.move_replica(broker, R.DELETION_INELIGIBLE)
    elif state is not R.DELETION_INELIGIBLE:
        s.note(f"replica {broker} is {state}: not ReplicaDeletionIneligible")


def _on_resume_deletion(s: Step) -> None:
    """TopicDeletionManager.onPartitionDeletion for a topic that is eligible again (after a failover, or a startup
    of one of its replicas' brokers): every replica not deleted yet is deleted, or fails on a dead broker. A topic whose
    deletion no controller had started (one a failover read: seed 1333) goes offline first, as at a DELETE
    (onTopicDeletion); the others are there already."""
    _require_partition(s)
    s.move(P.OFFLINE)
    _topic_deletion(s)


def _on_retry_deletion(s: Step) -> None:
    """TopicDeletionManager.retryDeletionForIneligibleReplicas: each replica whose deletion failed goes back to
    OfflineReplica, which takes it out of the ISR where it still is (the last member stays; the ZK controller writes
    that). A replica of a broker that is live again is not among them when its startup brought it online first; one
    of a live broker whose StopReplica answered KAFKA_STORAGE_ERROR is (seed 1274: StopReplica, no delete)."""
    _require_partition(s)
    with s.batch(Phase.OFFLINE_REPLICA):
        for broker in replica_state_machine_order(b for b, state in s.record.replica_states.items()
                                                  if state is R.DELETION_INELIGIBLE):
            _offline_replica(s, broker)


def _on_delete(s: Step) -> None:
    _require_partition(s)
    # A pending reassignment ends with the topic (every replica of RS is deleted): nothing resumes it.
    s.record = s.record.evolve(queued_for_deletion=True, reassignment_in_progress=False)
    s.move(P.OFFLINE)
    _topic_deletion(s)
