"""The controller's epoch: a new one adopted (the log's first controller, or a failover that takes over the
partitions: KafkaController.onControllerFailover), and the ControllerChange event.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from schemas.events import ControllerChange
from statemachine.errors import Outcome
from statemachine.log_dirs import answered_again, lift_offline_dirs, merged, replica_keys
from statemachine.record import Action

if TYPE_CHECKING:
    from statemachine.controller import _Fanout


class ControllerEpoch:
    """The controller-epoch handling of `Controller` (statemachine.controller), which
    supplies the cluster view, the partition records, the config and the queries they use."""

    # -- controller epoch ------------------------------------------------------------------------------
    def _failover(self, out: _Fanout) -> None:
        cv, ev = self.cluster, out.event
        first = cv.controller_epoch < 0
        cv.controller_epoch = ev.controller_epoch
        cv.controller_id = ev.controller_id if isinstance(ev, ControllerChange) else -1
        if isinstance(ev, ControllerChange) and ev.live_brokers is not None:
            self._read_registrations(ev.live_brokers, out)
        # onControllerFailover: every broker learns who is live before the state machines start.
        out.metadata(cv.broker_epochs)
        if first:
            out.failover = "first"  # the log's first controller: nothing to take over from
            return
        out.failover = "takeover"
        if not self.config.rules.reexamine_on_failover:
            out.cluster(f"controller epoch {cv.controller_epoch}: the new controller keeps the replicated state")
            return
        # A new controller knows nothing of the old one's shutting-down brokers (they retry), nor of replicas in
        # failed log dirs (the brokers answer its LeaderAndIsr requests again).
        cv.shutting_down.clear()
        lifted = lift_offline_dirs(cv, list(cv.replicas_on_offline_dirs))
        lifted = merged(lifted, cv.failover_answers)  # a failover before it whose answers were not handled yet
        cv.failover_answers = {}
        out.facts_changed()
        # initializeControllerContext reads every assignment: a reassignment in progress there is the new controller's
        # to resume, whatever the old one had written of it.
        read = {(r.topic, r.partition): r for r in ev.reassignments} if isinstance(ev, ControllerChange) else {}
        # initializeControllerContext reads /admin/delete_topics: a topic asked deleted while no controller was active
        # is queued by this failover, not by a TopicDeletion event (seed 1333: t1 and t3, asked as controller 4's
        # session expired, ineligible at its next failover since a replica of each was on a dead broker).
        asked = {t for t in ev.topics_to_delete if t in cv.topics} - cv.topics_queued_for_deletion \
            if isinstance(ev, ControllerChange) else set()
        cv.topics_queued_for_deletion |= asked
        restarted: dict[tuple[str, int], tuple[int, ...]] = {}
        if isinstance(ev, ControllerChange):
            # processZkPartitionReassignment refuses a partition of a topic queued for deletion
            # (maybeTriggerPartitionReassignment: UNKNOWN_TOPIC_OR_PARTITION): maybeResumeReassignments resumes it
            # with the others (seed 1284: t4-0, being deleted, after t0-2).
            # A reassignment /brokers/topics lost, the znode still naming it, starts over in the same read (seed 1547).
            restarted = {(r.topic, r.partition): r.replicas for r in ev.restarted_reassignments
                         if r.topic not in cv.topics_queued_for_deletion}
            out.from_znode = frozenset((r.topic, r.partition) for r in ev.znode_reassignments
                                       if r.topic not in cv.topics_queued_for_deletion) | set(restarted)
        for key in sorted(self.partitions):
            if key in read:
                out.partition(Action.CONTROLLER_FAILOVER, key, replicas=read[key].replicas,
                              adding_replicas=read[key].adding_replicas, removing_replicas=read[key].removing_replicas,
                              queued_for_deletion=key[0] in asked)
            elif key in restarted:
                out.partition(Action.CONTROLLER_FAILOVER, key, replicas=restarted[key], reassignment_restarted=True,
                              queued_for_deletion=key[0] in asked)
            else:
                out.partition(Action.CONTROLLER_FAILOVER, key, queued_for_deletion=key[0] in asked)
        answers = ev.offline_replicas if isinstance(ev, ControllerChange) else None
        queued_answers = isinstance(ev, ControllerChange) and ev.reads_reassignment_znode
        # The resumed deletions' replicas in failed dirs, which the new controller does not know of: their brokers
        # answer the StopReplica (delete) with KAFKA_STORAGE_ERROR, after their LeaderAndIsr answers (seed 1412).
        # TopicDeletionManager.init, then resumeDeletions: a topic being deleted goes on at once, unless a replica of
        # it is on a dead broker (ineligible until that broker starts).
        resumed = [t for t in sorted(cv.topics_queued_for_deletion) if all(
            b in cv.live_brokers for key in self.partitions_of(t) for b in self.partitions[key].replicas)]
        failing = {} if queued_answers else self._failing_deletions(merged(lifted, replica_keys(answers)), resumed)
        for topic in resumed:
            for key in self.partitions_of(topic):
                if self.partitions[key].queued_for_deletion:
                    out.partition(Action.RESUME_DELETION, key, stop_replica_answered=not any(
                        k[0] == topic for keys in failing.values() for k in keys))
        if queued_answers:
            # The answers are events of their own, queued behind the whole failover: after the reassignment it
            # read (seed 1108: t1-1's bump for it, then its replica in broker 1's failed dir offline).
            cv.failover_answers = merged(lifted, replica_keys(answers))
        else:
            order = ev.answer_order if isinstance(ev, ControllerChange) else ()
            answered_again(self, out, lifted, answers, order=order)
            if failing:
                # Then the StopReplica answers one by one, the failed ones first: the last one's resumeDeletions
                # retries them (t4-1 at 17:36:24.175, a write and a StopReplica).
                self._stop_replica_answers(out, failing, order=order)
        who = f"controller {cv.controller_id}" if cv.controller_id >= 0 else "a new controller (implicit)"
        out.cluster(f"controller failover: {who} at epoch {cv.controller_epoch}; "
                    f"{len(self.partitions)} partition(s) re-examined", action=Action.CONTROLLER_FAILOVER)

    def _read_registrations(self, live: Mapping[int, int], out: _Fanout) -> None:
        """The brokers a new controller finds registered (ZooKeeper's /brokers/ids at onControllerFailover): one
        that died, or registered again, while no controller was active is gone, or registered with its new epoch,
        from here on; no controller handled that change, so it decides nothing by itself."""
        cv = self.cluster
        for broker in sorted(set(cv.broker_epochs) - set(live)):
            del cv.broker_epochs[broker]
            cv.shutting_down.discard(broker)
        for broker, epoch in live.items():
            cv.broker_epochs[broker] = epoch
            cv.last_broker_epochs[broker] = max(epoch, cv.last_broker_epochs.get(broker, epoch))
        out.facts_changed()

    def _on_controller_change(self, out: _Fanout) -> None:
        cv = self.cluster
        if out.failover == "first":
            out.cluster(f"controller {cv.controller_id} active at epoch {cv.controller_epoch}")
        elif out.failover is None:
            out.cluster(f"controller epoch {cv.controller_epoch} is already active "
                        f"(controller {cv.controller_id})", Outcome.NO_OP)
