"""The broker events of the controller: a broker's startup, failure and controlled shutdown (BrokerChange), and a
leader's ISR change (AlterPartition) and the ISR change notifications, each checked against the registered
brokers and fanned out to the partitions it touches. A broker's log dirs are in statemachine.log_dirs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from schemas.events import BrokerChange, BrokerChangeKind, IsrChange, IsrChangeNotification
from statemachine.errors import Error, Outcome, Rejection
from statemachine.features import is_alter_partition_supported
from statemachine.log_dirs import (
    answered_again,
    deleted_replicas,
    in_answer_order,
    lift_offline_dirs,
    merged,
    offline_replicas,
    replica_keys,
    storage_errors,
)
from statemachine.record import Action
from statemachine.states import PartitionState, ReplicaState
from statemachine.topic_deletion import replicas_not_deleted
from statemachine.zk_releases import broker_failure_updates_metadata_when_nothing_changed

if TYPE_CHECKING:
    from statemachine.controller import Key, _Fanout

# The partition states triggerOnlinePartitionStateChange tries to bring online.
_TRIED_EVERYWHERE = (PartitionState.NEW, PartitionState.OFFLINE)


class BrokerEvents:
    """The broker-event handlers of `Controller` (statemachine.controller), which
    supplies the cluster view, the partition records, the config and the queries they use."""

    # -- brokers ---------------------------------------------------------------------------------------
    def _on_broker_change(self, ev: BrokerChange, out: _Fanout) -> None:
        match ev.change:
            case BrokerChangeKind.STARTUP:
                registered = ev.new_brokers or {ev.broker_id: ev.broker_epoch}
                lifted = lift_offline_dirs(self.cluster, (b for b, e in registered.items()
                                                          if self.cluster.broker_epochs.get(b) != e))
                # A dir that failed while the broker was down (`offline_replicas`) fails the resumed deletion of its
                # replicas there as a known failed dir does (seed 1424).
                answered = {ev.broker_id: ev.offline_replicas} if ev.offline_replicas else None
                failing = self._failing_deletions(merged(lifted, replica_keys(answered)))
                deleted = deleted_replicas(self, registered)
                # Answers queued behind a later AlterIsr are that event's (seed 1417: `deletion_answers`).
                self._broker_startup(out, registered, ev.unclean_shutdown,
                                     stop_replica_answered=not failing and not ev.deletion_answers_queued)
                # Its own answer queued behind a later event is that event's (seeds 1255, 1477: behind AlterIsrs).
                answered_again(self, out, {b: k for b, k in lifted.items()
                                           if not (ev.storage_error_answer_queued and b == ev.broker_id)},
                               None if ev.storage_error_answer_queued else answered, not_asked=deleted)
                if failing:
                    self._stop_replica_answers(out, failing, order=ev.stop_replica_answer_order)
            case BrokerChangeKind.FAILURE:
                self._broker_failure(out, ev.broker_id, ev.broker_epoch)
            case BrokerChangeKind.CONTROLLED_SHUTDOWN:
                self._controlled_shutdown(out, ev.broker_id, ev.broker_epoch)

    def _failing_deletions(self, lifted: Mapping[int, frozenset[Key]], topics: Iterable[str] | None = None
                           ) -> dict[int, frozenset[Key]]:
        """The replicas of topics being deleted (of `topics` only, when given) that starting brokers with a failed log
        dir cannot delete (they answer KAFKA_STORAGE_ERROR: `storage_errors`)."""
        queued = self.cluster.topics_queued_for_deletion if topics is None else \
            self.cluster.topics_queued_for_deletion & set(topics)
        failing = {b: frozenset(k for k in storage_errors(self.cluster, b, keys) if k[0] in queued
                                and k in self.partitions and b in replicas_not_deleted(self.partitions[k]))
                   for b, keys in lifted.items()}
        return {b: keys for b, keys in sorted(failing.items()) if keys}

    def _stop_replica_answers(self, out: _Fanout, failing: Mapping[int, frozenset[Key]],
                              topics: Iterable[str] | None = None, order: Sequence[int] = (),
                              unanswered: Iterable[str] = ()) -> None:
        """The StopReplica (delete) answers to a deletion the startup resumed, taken one by one: each is an event of
        its own (TopicDeletionStopReplicaResponseReceived), and each ends in resumeDeletions, which retries a topic's
        failed replicas once none of its replicas waits for an answer. A broker with a failed log dir answers first
        (its LeaderAndIsr answer came before: answered_again), KAFKA_STORAGE_ERROR for `failing`; then the others,
        their replicas deleted, by broker id (seed 412: broker 4's t4-0 retried twice, t3-1 once broker 1 had
        answered, t2 once broker 2 had), or in the `order` they answered in (BrokerChange.stop_replica_answer_order;
        seed 1105: broker 4's answer before broker 1's, whose answer let t4 and t0 be retried in one batch). With
        `topics`, only the answers for those topics' replicas; the `unanswered` topics' answers come after these (a
        later read's own), so these retry none of theirs. A failing broker the `order` names after a broker still to
        answer answers in its place: its failure then retries again what its LeaderAndIsr answer's retry, once the
        answers before had come, took offline (seed 1519, Kafka 3.5.2: brokers 4 and 2 answered, then broker 1's
        LeaderAndIsr answer and its StopReplica (delete) answer each retried t3's replicas on it)."""
        resumable = None if not unanswered else self.cluster.topics_queued_for_deletion - set(unanswered)
        awaited = self._awaited(topics)
        late = {b: keys for b, keys in failing.items()
                if b in order and any(w != b and w in order[:order.index(b)] for w in awaited)}
        for broker, keys in failing.items():
            if broker not in late:
                self._stop_replica_failed(out, broker, keys, resumable)
        waiting = self._awaited(topics)
        for broker in in_answer_order({*waiting, *late}, order):
            if broker in late:
                self._stop_replica_failed(out, broker, late[broker], resumable)
            if broker in waiting:
                out.end_run()
                for key in waiting[broker]:
                    out.partition(Action.REPLICA_DELETED, key, broker_id=broker)
                self._resume_deletions(out, resumable)

    def _stop_replica_failed(self, out: _Fanout, broker: int, keys: Iterable[Key], resumable: set[str] | None) -> None:
        """A broker's KAFKA_STORAGE_ERROR answer to a StopReplica (delete): failReplicaDeletion, then
        resumeDeletions."""
        out.end_run()  # its retry's StopReplica is a batch of its own (seed 815: one per answer)
        for key in sorted(keys):
            out.partition(Action.REPLICA_DELETION_FAILED, key, broker_id=broker)
        self._resume_deletions(out, resumable)

    def _awaited(self, topics: Iterable[str] | None) -> dict[int, list[Key]]:
        """Per broker, the replicas of the topics queued for deletion (of `topics` only, when given) whose StopReplica
        (delete) answer the controller waits for (ReplicaDeletionStarted)."""
        queued = self.cluster.topics_queued_for_deletion
        if topics is not None:
            queued = queued & set(topics)
        waiting: dict[int, list[Key]] = {}
        for key in sorted(k for topic in sorted(queued) for k in self.partitions_of(topic)):
            for broker, state in self.partitions[key].replica_states.items():
                if state is ReplicaState.DELETION_STARTED:
                    waiting.setdefault(broker, []).append(key)
        return waiting

    def _broker_startup(self, out: _Fanout, registered: Mapping[int, int], unclean_shutdown: bool = False,
                        stop_replica_answered: bool = True) -> None:
        """onBrokerStartup for the brokers (id -> epoch) one read of the registrations found new. A broker already
        registered with its epoch is not new to the controller (processBrokerChange): a failover's read, or an
        earlier startup of brokers read together, took it."""
        cv = self.cluster
        new = {b: e for b, e in sorted(registered.items()) if cv.broker_epochs.get(b) != e}
        if not new:
            out.cluster(f"broker(s) {_listed(registered)} already registered with epoch(s) "
                        f"{_listed(registered.values())}: started before", Outcome.NO_OP)
            return
        for broker, epoch in new.items():
            last = cv.last_broker_epochs.get(broker)
            if last is not None and epoch <= last:
                raise Rejection(Error.STALE_BROKER_EPOCH,
                                f"broker {broker} registration epoch {epoch} is not newer than {last}")
        bounced = [b for b in new if b in cv.broker_epochs]
        for broker in bounced:
            # Re-registered without a failure in between: Kafka handles it as a failure then a startup.
            self._unregister(out, broker)
            for key in self.partitions_on(broker):
                out.partition(Action.BROKER_FAILURE, key, broker_id=broker)
        first = next(iter(new))
        for broker, epoch in new.items():
            if unclean_shutdown and self.elr_on:
                # Registered, still fenced: KRaft takes it out of every ISR and ELR before it can lead again.
                for key in self.partitions_on(broker):
                    rec = self.partitions[key]
                    if broker in rec.isr or broker in rec.eligible_leader_replicas:
                        out.partition(Action.UNCLEAN_REGISTRATION, key, broker_id=broker)
            cv.broker_epochs[broker] = cv.last_broker_epochs[broker] = epoch
        out.facts_changed()
        # onBrokerStartup: the other brokers learn of them, they learn every partition that has a leader.
        out.metadata(b for b in cv.broker_epochs if b not in new)
        out.metadata(new, (r for _, r in sorted(self.partitions.items())
                           if r.has_leader_and_isr and not r.queued_for_deletion))
        hosted = sorted({key for broker in new for key in self.partitions_on(broker)})
        together = tuple(new) if len(new) > 1 else ()
        for key in hosted:
            out.partition(Action.BROKER_STARTUP, key, broker_id=first, new_brokers=together)
        if self.config.rules.elects_everywhere:
            # The cluster's other New and Offline partitions try too (seed 143: a New partition a failed reassignment
            # had given a live replica).
            self._try_elections(out, sorted(set(self.partitions) - set(hosted)))
        # Last, resumeDeletionForTopics: the failed deletions are retried (the new brokers' own replicas are online
        # by then), then the deletion of each topic with a replica there goes on in all its partitions at once
        # (onTopicDeletion: one UpdateMetadata naming them all, then one batch per replica state).
        queued = {k[0] for k in hosted} & cv.topics_queued_for_deletion
        if queued:
            self._resume_deletions(out)
        for key in sorted(k for topic in queued for k in self.partitions_of(topic)
                          if self.partitions[k].queued_for_deletion):
            out.partition(Action.RESUME_DELETION, key, stop_replica_answered=stop_replica_answered)
        started = (f"brokers {_listed(new)} started together with epochs {_listed(new.values())}" if together
                   else f"broker {first} started with epoch {new[first]}")
        out.cluster(started + (" (bounce: failure, then startup)" if bounced else "")
                    + f"; {'they host' if together else 'hosts'} {len(hosted)} partition(s)")

    def _unregister(self, out: _Fanout, broker: int) -> None:
        del self.cluster.broker_epochs[broker]
        self.cluster.shutting_down.discard(broker)
        out.facts_changed()

    def _broker_failure(self, out: _Fanout, broker: int, epoch: int) -> None:
        registered = self.cluster.broker_epochs.get(broker)
        if registered is None and self.config.rules.fenced_brokers_stay_registered and \
                self.cluster.last_broker_epochs.get(broker) == epoch:
            self._fenced_again(out, broker)
            return
        if registered is None:
            raise Rejection(Error.BROKER_NOT_AVAILABLE, f"broker {broker} is not registered")
        if epoch < registered:
            raise Rejection(Error.STALE_BROKER_EPOCH,
                            f"failure of broker {broker} epoch {epoch}, but epoch {registered} is registered")
        self._unregister(out, broker)
        hosted = self.partitions_on(broker)
        self._replicas_become_offline(out, broker, hosted)
        offline = [k for k in hosted if k in self.partitions and self.partitions[k].state is PartitionState.OFFLINE]
        out.cluster(f"broker {broker} failed; hosted {len(hosted)} partition(s); {len(offline)} offline: "
                    + _names(offline))

    def _replicas_become_offline(self, out: _Fanout, broker: int, hosted: list[Key],
                                 unhandled: Mapping[int, frozenset[Key]] | None = None) -> None:
        """onReplicasBecomeOffline of broker's replicas of `hosted` (all of them at its failure, those of a failed
        log dir at its LeaderAndIsr answer): the partitions whose leader is offline elect, the replicas go offline,
        and a replica of a topic being deleted fails its deletion, which resumes the deletions. `unhandled`: the
        replicas of other brokers' answers to the same requests, not handled yet (`log_dirs.answered_again`)."""
        queued = self.cluster.topics_queued_for_deletion
        deleting = bool(queued) and any(k[0] in queued for k in hosted)
        # Only this call's elections count (onlineStateChangeResults): a failover's own, before a broker's answer
        # handled within it, do not (seed 1439, Kafka 3.5.2).
        first = len(out.handled)
        # Before KAFKA-13225 the failure's own UpdateMetadata goes out when no partition had an offline leader
        # before it: read now, before any change, and only when the requests are recorded (nothing else reads it).
        updates_when_nothing_changed = broker_failure_updates_metadata_when_nothing_changed(self.release)
        offline_leaders = (self._partitions_with_offline_leader(unhandled or {})
                           if out.requests and not updates_when_nothing_changed else [])
        # Kafka's partitionsWithOfflineLeader also takes in partitions still led by a shutting-down broker
        # (their controlled-shutdown election had failed): they elect now too. And those left leaderless (-1)
        # while OnlinePartition, as a reassignment's completion does when it removes the leader and no target is
        # live (its election failed, removeReplicasFromIsr wrote -1): no startup elects them, a failure does (707).
        live = self.cluster.live_brokers
        left_online = not self.config.rules.elects_when_a_reassignment_drops_the_leader
        led_elsewhere = [k for k, r in self.partitions.items()
                         if (r.leader >= 0 or (left_online and r.state is PartitionState.ONLINE))
                         and r.leader not in live and broker not in r.replicas and not r.queued_for_deletion]
        # triggerOnlinePartitionStateChange also tries the cluster's New and Offline partitions (seed 1008: a New one a
        # failed reassignment had given a live replica, elected at a failed log dir's answer; seed 1471: an Offline one
        # a reassignment had given a live replica, elected uncleanly at another broker's failure).
        # (The flag read once: the scan is the whole cluster's, and the kraft rules skip it.)
        elsewhere = [k for k, r in self.partitions.items() if r.state in _TRIED_EVERYWHERE
                     and not r.queued_for_deletion] if self.config.rules.elects_everywhere else []
        # Only the replicas of `hosted` go offline (OfflineReplica); the other partitions only elect.
        for key in sorted({*hosted, *led_elsewhere, *elsewhere}):
            out.partition(Action.BROKER_FAILURE, key, broker_id=broker, replica_goes_offline=key in hosted)
        if deleting:
            self._resume_deletions(out)  # failReplicaDeletion, then resumeDeletions
        if not out.requests:
            return
        if updates_when_nothing_changed:
            nothing_changed = not any(k in self.partitions and not self.partitions[k].queued_for_deletion
                                      for k in hosted) and not any(
                d.election for h in out.handled[first:] for d in h.applied.decisions)
        else:
            nothing_changed = not offline_leaders
        if nothing_changed:
            out.metadata(self.cluster.broker_epochs)  # the brokers learn it is gone

    def _partitions_with_offline_leader(self, unhandled: Mapping[int, frozenset[Key]]) -> list[Key]:
        """ControllerContext.partitionsWithOfflineLeader: the partitions with a leader and ISR, not being deleted,
        whose leader is not a live broker (leader -1 included) or whose leader's replica is in a failed log dir
        (one its broker's answer already handled: not in `unhandled`)."""
        live = self.cluster.live_brokers
        return [k for k, r in self.partitions.items()
                if r.has_leader_and_isr and not r.queued_for_deletion
                and (r.leader not in live or (r.leader in offline_replicas(self.cluster, r)
                                              and k not in unhandled.get(r.leader, ())))]

    def _fenced_again(self, out: _Fanout, broker: int) -> None:
        """KRaft: a fenced broker keeps its registration, and its session timing out later fences it again (after
        a controlled shutdown, say), which takes it out of the ISRs it was left in: the last member of an ISR,
        once the ELR feature lets the ISR go empty."""
        in_isr = [k for k in self.partitions_on(broker) if broker in self.partitions[k].isr]
        for key in in_isr:
            out.partition(Action.BROKER_FAILURE, key, broker_id=broker)
        out.cluster(f"broker {broker} fenced again; still in {len(in_isr)} ISR(s): " + _names(in_isr))

    def _controlled_shutdown(self, out: _Fanout, broker: int, epoch: int) -> None:
        registered = self.cluster.broker_epochs.get(broker)
        if registered is not None and epoch < registered:
            raise Rejection(Error.STALE_BROKER_EPOCH,
                            f"controlled shutdown of broker {broker} epoch {epoch}, but {registered} is registered")
        if registered is None:
            raise Rejection(Error.BROKER_NOT_AVAILABLE, f"broker {broker} is not registered")
        self.cluster.shutting_down.add(broker)
        out.facts_changed()
        hosted = self.partitions_on(broker)
        for key in hosted:
            out.partition(Action.CONTROLLED_SHUTDOWN, key, broker_id=broker)
        still_led = [k for k in hosted if k in self.partitions and self.partitions[k].leader == broker]
        out.cluster(f"broker {broker} shutting down; still leads {len(still_led)} partition(s): "
                    + _names(still_led))

    def _on_isr_change(self, ev: IsrChange, out: _Fanout) -> None:
        self._isr_change(ev, out)
        if ev.deletion_answers:
            # The StopReplica answers to a startup's resumed deletion that came while the controller handled this
            # change: each an event of its own after it (TopicDeletionStopReplicaResponseReceived), its
            # resumeDeletions retrying the failed replicas then (seed 1417, Kafka 3.0.2: t4-0's and t2-1's).
            self._stop_replica_answers(out, {}, order=ev.deletion_answers)

    def _isr_change(self, ev: IsrChange, out: _Fanout) -> None:
        registered = self.cluster.broker_epochs.get(ev.broker_id)
        if registered is None or registered != ev.broker_epoch:
            raise Rejection(Error.STALE_BROKER_EPOCH,
                            f"sender broker {ev.broker_id} epoch {ev.broker_epoch} is not the registered {registered}")
        leader_epoch, partition_epoch = ev.leader_epoch, ev.partition_epoch
        key = (ev.topic, ev.partition)
        rec = self.partitions.get(key)
        if self.config.isr_changes_at_current_epochs and rec is not None and rec.leader == ev.broker_id:
            leader_epoch, partition_epoch = rec.leader_epoch, rec.partition_epoch
        # processAlterPartition: one UpdateMetadata naming every partition of the request, accepted or not, once all
        # are written (after the last one's change), then the reassignments it lets complete, partition by partition
        # (maybeCompleteReassignment; the zk rules' `completes_reassignments_after_the_request`). Below protocol 2.7
        # the leader wrote it itself: the controller sends nothing until it reads the notification.
        request = [(p.topic, p.partition) for p in ev.request_partitions] or [key]
        controllers = is_alter_partition_supported(self.metadata_version)
        after_request = controllers and len(request) > 1 and self.config.rules.completes_reassignments_after_the_request
        out.partition(Action.ISR_CHANGE, key, broker_id=ev.broker_id, isr=ev.isr,
                      leader_epoch=leader_epoch, partition_epoch=partition_epoch,
                      leader_recovery_state=ev.leader_recovery_state,
                      reassignment_completed_by_queued_event=ev.reassignment_completed_by_queued_event,
                      controller_died_after_leader_move=ev.controller_died_after_leader_move,
                      controller_died_before_completion=ev.controller_died_before_completion,
                      controller_died_after_assignment=ev.controller_died_after_assignment,
                      write_failed=ev.write_failed, reassignment_completed_after_the_request=after_request)
        if not controllers or request[-1] != key:
            return
        out.metadata(self.cluster.broker_epochs, (self.partitions[k] for k in request if k in self.partitions),
                     action=Action.ISR_CHANGE)
        for k in request if after_request and not ev.write_failed else ():
            cut = k == key and ev.controller_died_before_completion
            if k in self.partitions and self.partitions[k].reassignment_in_progress and not cut:
                out.partition(Action.COMPLETE_REASSIGNMENT, k,
                              controller_died_after_leader_move=k == key and ev.controller_died_after_leader_move,
                              controller_died_after_assignment=k == key and ev.controller_died_after_assignment)

    def _on_isr_change_notification(self, ev: IsrChangeNotification, out: _Fanout) -> None:
        """processIsrChangeNotification: the named partitions' states read into the cache and one UpdateMetadata
        naming them (those that still exist) to every registered broker."""
        keys = sorted({(p.topic, p.partition) for p in ev.partitions} & self.partitions.keys())
        for key in keys:
            out.partition(Action.ISR_CHANGE_NOTIFICATION, key)
        if not keys:
            out.metadata(self.cluster.broker_epochs)


def _listed(ids: Iterable[int]) -> str:
    return ", ".join(map(str, ids))


def _names(keys: Iterable[Key], limit: int = 20) -> str:
    keys = list(keys)
    text = ", ".join(f"{t}-{p}" for t, p in keys[:limit])
    return text + (f" (+{len(keys) - limit} more)" if len(keys) > limit else "") if keys else "none"
