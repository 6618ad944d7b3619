"""The steps of ReplicaStateMachine that the partition handlers share (a replica online, offline, deleted), and
the check every handler starts with: the partition exists.
"""

from __future__ import annotations

from collections.abc import Iterable

from statemachine.errors import Error, Rejection
from statemachine.record import NO_LEADER
from statemachine.requests import Phase
from statemachine.states import PartitionState, ReplicaState
from statemachine.step import Step
from statemachine.visit_order import replica_state_machine_order

P = PartitionState
R = ReplicaState


def _require_partition(s: Step) -> None:
    if s.record.state is P.NON_EXISTENT:
        raise Rejection(Error.UNKNOWN_TOPIC_OR_PARTITION,
                        f"partition {s.record.topic}-{s.record.partition} does not exist")


def _offline_replica(s: Step, broker: int) -> None:
    """Replica -> OfflineReplica: StopReplica (no delete) to its broker. If the ISR holds it, the controller writes
    it out of the ISR (never emptying the ISR, unless ELR is on) and drops it as leader. For a topic being deleted
    the ZK controller still writes that (removeReplicasFromIsr) but sends no LeaderAndIsr; KRaft removes the topic
    in one record. The ZK controller sends the other replicas the partition's state, changed or not, and
    UpdateMetadata (only the live brokers, for a partition that never had a leader)."""
    s.move_replica(broker, R.OFFLINE)
    s.send_stop_replica(broker, delete=False)
    s.read_state()  # removeReplicasFromIsr reads the state, whether it writes or not
    rec = s.record
    if not rec.has_leader_and_isr:
        s.send_metadata()
        return
    if broker not in rec.isr or (rec.queued_for_deletion and not s.rules.deletion_writes_offline_replicas):
        if not rec.queued_for_deletion:
            s.send_leader_and_isr(r for r in rec.replicas if r != broker)
        return
    # The last member stays, unless ELR is on: then the ISR may go empty (the member moves to the ELR).
    isr = rec.isr if len(rec.isr) == 1 and not s.elr_on else tuple(r for r in rec.isr if r != broker)
    leader = NO_LEADER if rec.leader == broker else rec.leader
    # The other replicas of the assignment, as sent: a registered broker whose own replica is in a failed log dir
    # gets it too (seed 706).
    registered = s.command.registered_brokers
    others = () if rec.queued_for_deletion else (r for r in rec.replicas if r != broker and r in registered)
    s.write(leader, isr, others, sent=not rec.queued_for_deletion)
    s.note(f"replica {broker} offline: ISR {list(rec.isr)} -> {list(isr)}"
           + (", leader -1" if leader == NO_LEADER and rec.leader == broker else ""))


def _delete_replicas(s: Step, replicas: Iterable[int], last: ReplicaState = R.NON_EXISTENT) -> None:
    """OfflineReplica -> ReplicaDeletionStarted -> ReplicaDeletionSuccessful -> NonExistentReplica: each step for
    all of them before the next, in one batch each (StopReplica, then StopReplica deleting), brokers in the
    ReplicaStateMachine's order (the ISR shrinks in that order). A topic's deletion stops at ReplicaDeletionSuccessful
    (`last`) until every replica of the topic is there."""
    order = replica_state_machine_order(replicas)
    with s.batch(Phase.OFFLINE_REPLICA):
        for broker in order:
            # Every one goes through OfflineReplica, as in Kafka, also one already offline: a restored (snapshot)
            # state can hold offline replicas in the ISR, and the transition takes them out.
            _offline_replica(s, broker)
    with s.batch(Phase.DELETION):
        for broker in order:
            s.move_replica(broker, R.DELETION_STARTED)
            s.send_stop_replica(broker, delete=True)
    if last is R.DELETION_STARTED:
        return  # no answers (the controller stopped before they came back)
    for broker in order:
        s.move_replica(broker, R.DELETION_SUCCESSFUL)
        if last is R.NON_EXISTENT:
            s.move_replica(broker, R.NON_EXISTENT)


def _online_replica(s: Step, broker: int) -> None:
    """Replica -> OnlineReplica: a replica that was not new gets the partition's state (when it has one)."""
    was = s.record.replica_states.get(broker)
    s.move_replica(broker, R.ONLINE)
    if was is not R.NEW and s.record.has_leader_and_isr:
        s.send_leader_and_isr((broker,))
