"""The topic and admin events of the controller: topic creation (and a partition seeded from a snapshot),
partitions added, topic deletion (TopicDeletionManager's side: resuming and completing it), topic configs, and
the admin elections, reassignments and the leader rebalance, each checked and fanned out to its partitions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from schemas.events import (
    AlterTopicConfig,
    CreatePartitions,
    CreateTopic,
    DeleteTopic,
    ElectionType,
    ElectLeaders,
    PartitionRef,
    PartitionSnapshot,
    ReassignPartitions,
)
from statemachine.admin_checks import MIN_ISR_CONFIG, check_configs, checked_assignment
from statemachine.errors import Error, Outcome, Rejection
from statemachine.log_dirs import answered_again, default_directories
from statemachine.record import Action, PartitionRecord
from statemachine.states import PartitionState, ReplicaState
from statemachine.topic_deletion import replicas_not_deleted
from statemachine.zk_releases import rebalance_waits_for_reassignments

if TYPE_CHECKING:
    from statemachine.controller import Key, _Fanout

_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


class TopicEvents:
    """The topic- and admin-event handlers of `Controller` (statemachine.controller), which
    supplies the cluster view, the partition records, the config and the queries they use."""

    # -- topics ----------------------------------------------------------------------------------------
    def _on_create_topic(self, ev: CreateTopic, out: _Fanout) -> None:
        cv, topic = self.cluster, ev.topic
        if not _LEGAL_TOPIC.fullmatch(topic) or topic in (".", ".."):
            raise Rejection(Error.INVALID_TOPIC_EXCEPTION, f"illegal topic name '{topic}'")
        if topic in cv.topics:
            raise Rejection(Error.TOPIC_ALREADY_EXISTS, f"topic {topic} already exists"
                            + (" (queued for deletion)" if topic in cv.topics_queued_for_deletion else ""))
        if not ev.assignment:
            raise Rejection(Error.INVALID_PARTITIONS, "a topic needs at least one partition")
        assignment = checked_assignment(ev.assignment, 0, None, Error.INVALID_REPLICA_ASSIGNMENT)
        check_configs(ev.configs)
        cv.topics[topic] = len(assignment)
        if ev.configs:
            cv.topic_configs[topic] = dict(ev.configs)
        sent = len(out.sent)
        self._create(out, topic, 0, assignment)
        if ev.topics and topic != ev.topics[-1]:
            # One read of /brokers/topics found this topic with later ones (processTopicChange): one
            # onNewPartitionCreation of them all, its requests sent once, at the last one's event (seed 1216).
            del out.sent[sent:]
        elif ev.topics:
            out.created_earlier(self.partitions[k] for t in ev.topics[:-1] for k in self.partitions_of(t))

    def _create(self, out: _Fanout, topic: str, first: int, assignment: list[tuple[int, ...]]) -> None:
        """onNewPartitionCreation per new partition. One whose replicas are all on dead brokers stays New:
        its failed New -> Online change is a second, rejected step (NO_LIVE_REPLICA), as Kafka logs it."""
        for i, replicas in enumerate(assignment):
            key = (topic, first + i)
            out.partition(Action.CREATE, key, replicas=replicas,
                          default_directories=default_directories(self.cluster, replicas))
            if self.partitions[key].state is PartitionState.NEW:
                out.partition(Action.TRY_ELECTION, key)

    def _on_partition_snapshot(self, ev: PartitionSnapshot, out: _Fanout) -> None:
        """A partition as a metadata snapshot holds it: the starting state of a log that begins there. It seeds a
        partition isrflow does not know; it never overwrites one (the log after the snapshot says what changed)."""
        cv, key = self.cluster, (ev.topic, ev.partition)
        if not _LEGAL_TOPIC.fullmatch(ev.topic) or ev.topic in (".", ".."):
            raise Rejection(Error.INVALID_TOPIC_EXCEPTION, f"illegal topic name '{ev.topic}'")
        if key in self.partitions:
            raise Rejection(Error.TOPIC_ALREADY_EXISTS,
                            f"partition {ev.topic}-{ev.partition} already exists: a snapshot only seeds a new one")
        checked_assignment({str(ev.partition): ev.replicas}, ev.partition, None, Error.INVALID_REPLICA_ASSIGNMENT)
        outside = [b for b in (*ev.isr, *ev.adding_replicas, *ev.removing_replicas, *ev.eligible_leader_replicas,
                               *ev.last_known_elr) if b not in ev.replicas]
        both = set(ev.adding_replicas) & set(ev.removing_replicas)
        if outside or both or (ev.leader >= 0 and ev.leader not in ev.isr):
            raise Rejection(Error.INVALID_REPLICA_ASSIGNMENT,
                            f"ISR {list(ev.isr)}, leader {ev.leader}, ELR and the reassignment must lie within the "
                            f"replicas {list(ev.replicas)} (the leader in the ISR, adding and removing apart)")
        check_configs(ev.configs)
        cv.topics[ev.topic] = max(cv.topics.get(ev.topic, 0), ev.partition + 1)
        if ev.configs:
            cv.topic_configs[ev.topic] = dict(ev.configs)
        out.partition(Action.RESTORE, key, replicas=ev.replicas, isr=ev.isr, leader=ev.leader,
                      leader_epoch=ev.leader_epoch, partition_epoch=ev.partition_epoch,
                      leader_recovery_state=ev.leader_recovery_state, adding_replicas=ev.adding_replicas,
                      removing_replicas=ev.removing_replicas, eligible_leader_replicas=ev.eligible_leader_replicas,
                      last_known_elr=ev.last_known_elr, directories=ev.directories)

    def _on_create_partitions(self, ev: CreatePartitions, out: _Fanout) -> None:
        cv, topic = self.cluster, ev.topic
        if topic not in cv.topics:
            raise Rejection(Error.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic} does not exist")
        if topic in cv.topics_queued_for_deletion:
            raise Rejection(Error.INVALID_TOPIC_EXCEPTION, f"topic {topic} is queued for deletion")
        if not ev.assignment:
            raise Rejection(Error.INVALID_PARTITIONS, "no partitions to add")
        count = cv.topics[topic]
        first = self.partitions.get((topic, 0))
        rf = len(first.target_replicas) if first else None
        assignment = checked_assignment(ev.assignment, count, rf, Error.INVALID_PARTITIONS)
        cv.topics[topic] = count + len(assignment)
        self._create(out, topic, count, assignment)

    def _on_delete_topic(self, ev: DeleteTopic, out: _Fanout) -> None:
        topic, cv = ev.topic, self.cluster
        if topic not in cv.topics:
            raise Rejection(Error.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic} does not exist")
        if topic in cv.topics_queued_for_deletion:
            out.cluster(f"topic {topic} is already queued for deletion", Outcome.NO_OP)
            return
        # enqueueTopicsForDeletion -> resumeDeletions: the failed replicas of the topics queued before are retried
        # first (seed 1203: t4-0's dead replica, t4 read alone, retried at t5's read).
        self._resume_deletions(out)
        # One read of /admin/delete_topics: every topic it found, in one onTopicDeletion (one batch of requests).
        topics = [t for t in sorted({topic, *ev.topics}) if t in cv.topics and t not in cv.topics_queued_for_deletion]
        cv.topics_queued_for_deletion.update(topics)
        keys = [k for t in topics for k in self.partitions_of(t)]
        failing = bool(ev.storage_error_answers)
        for key in keys:
            out.partition(Action.DELETE, key, stop_replica_answered=ev.stop_replica_answered and not failing)
        if ev.stop_replica_answers:
            # An earlier read's StopReplica answers, queued behind this read (TopicDeletionStopReplicaResponseReceived):
            # each ends in resumeDeletions, which retries this read's failed replicas too (seed 1042).
            self._stop_replica_answers(out, {}, ev.stop_replica_answers,
                                       unanswered=topics if ev.stop_replica_answered else ())
        if failing:
            # A broker whose log dir failed as it deleted a replica answered KAFKA_STORAGE_ERROR for it (seed 1274):
            # the answers one by one, that one first, as a startup's resumed deletion's. Not answered: only that one
            # (its notification came before the others, which it takes: `deletion_answers`, seed 1412).
            self._stop_replica_answers(out, self._deletions_failed(ev.storage_error_answers, keys),
                                       topics if ev.stop_replica_answered else ())
        elif ev.stop_replica_answered:
            self._answered_one_broker_at_a_time(out, topics)

    def _deletions_failed(self, answers: Mapping[int, Iterable[PartitionRef]], keys: Iterable[Key]
                          ) -> dict[int, frozenset[Key]]:
        """The replicas of `keys` whose StopReplica (delete) the brokers answered with KAFKA_STORAGE_ERROR
        (`answers`), among those waiting for their answer (ReplicaDeletionStarted), by broker id."""
        started = {(b, k) for k in keys for b, state in self.partitions[k].replica_states.items()
                   if state is ReplicaState.DELETION_STARTED}
        failed = {b: frozenset(k for r in refs if (b, k := (r.topic, r.partition)) in started)
                  for b, refs in answers.items()}
        return {b: keys for b, keys in sorted(failed.items()) if keys}

    def _answered_one_broker_at_a_time(self, out: _Fanout, topics: list[str]) -> None:
        """The read's own StopReplica answers, one per broker (by id), each ending in resumeDeletions: a topic whose
        failed replicas wait for a retry is retried at the answer that completes its live replicas, in a batch of
        that answer's (seed 1105: t3-1 at broker 3's answer, t0-1 at broker 4's, two requests)."""
        last: dict[int, list[str]] = {}
        for topic in topics:
            answered = [b for key in self.partitions_of(topic)
                        for b, state in self.partitions[key].replica_states.items()
                        if state is ReplicaState.DELETION_SUCCESSFUL]
            if answered:
                last.setdefault(max(answered), []).append(topic)
        for _, completed in sorted(last.items()):
            out.end_run()
            self._resume_deletions(out, completed)

    def _finish_deletions(self, out: _Fanout) -> None:
        cv = self.cluster
        if out.replica_deleted:  # their StopReplica answers are in: resumeDeletions
            self._resume_deletions(out)
        queued = cv.topics_queued_for_deletion
        touched = {h.command.topic for h in out.handled if h.command.topic in queued} if queued else set()
        for topic in sorted(touched):
            keys = self.partitions_of(topic)
            if not any(replicas_not_deleted(self.partitions[k]) for k in keys):
                for key in keys:  # completeDeleteTopic
                    out.partition(Action.COMPLETE_DELETION, key)
            if not self.partitions_of(topic):
                del cv.topics[topic]
                cv.topic_configs.pop(topic, None)
                cv.topics_queued_for_deletion.discard(topic)
                for broker, keys in list(cv.deleted_logs.items()):
                    cv.deleted_logs[broker] = frozenset(k for k in keys if k[0] != topic)

    def _resume_deletions(self, out: _Fanout, topics: Iterable[str] | None = None) -> None:
        """TopicDeletionManager.resumeDeletions (after a replica's deletion, a replica host's failure or startup):
        every replica whose deletion failed, of any topic being deleted, is retried (RETRY_DELETION): on a dead
        broker, or on a live one whose StopReplica answered KAFKA_STORAGE_ERROR (a failed log dir, known or not).
        Not while a replica of the topic is still ReplicaDeletionStarted (its answer not in yet): the topic waits
        for it."""
        queued = self.cluster.topics_queued_for_deletion
        for topic in sorted(queued if topics is None else queued & set(topics)):
            if any(state is ReplicaState.DELETION_STARTED for key in self.partitions_of(topic)
                   for state in self.partitions[key].replica_states.values()):
                continue
            for key in self.partitions_of(topic):
                if ReplicaState.DELETION_INELIGIBLE in self.partitions[key].replica_states.values():
                    out.partition(Action.RETRY_DELETION, key)

    def _on_alter_topic_config(self, ev: AlterTopicConfig, out: _Fanout) -> None:
        cv, topic = self.cluster, ev.topic
        if topic not in cv.topics:
            raise Rejection(Error.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic} does not exist")
        check_configs(ev.configs)
        was_unclean = self.unclean_allowed(topic)
        configs = cv.topic_configs.setdefault(topic, {})
        for name, value in ev.configs.items():
            if value is None:
                configs.pop(name, None)
            else:
                configs[name] = value
        if not configs:
            del cv.topic_configs[topic]
        out.cluster(f"topic {topic} configs: " + ", ".join(f"{k}={v}" for k, v in sorted(ev.configs.items(),
                                                                                           key=str)),
                    configs=ev.configs)
        if MIN_ISR_CONFIG in ev.configs and self.elr_on and topic not in cv.topics_queued_for_deletion:
            for key in self.partitions_of(topic):
                out.partition(Action.CLEAR_ELR, key)
        if self.config.rules.elects_unclean_at_config_change and self.unclean_allowed(topic) and not was_unclean:
            self._try_elections(out, self.partitions_of(topic))

    def _try_elections(self, out: _Fanout, keys: Iterable[Key]) -> None:
        """triggerOnlinePartitionStateChange of `keys`: those New or Offline, of a topic not being deleted, elect."""
        for key in keys:
            rec = self.partitions[key]
            if rec.state in (PartitionState.NEW, PartitionState.OFFLINE) and not rec.queued_for_deletion:
                out.partition(Action.TRY_ELECTION, key)

    # -- admin elections and reassignments -------------------------------------------------------------
    def _on_reassign_partitions(self, ev: ReassignPartitions, out: _Fanout) -> None:
        for move in ev.partitions:
            out.partition(Action.REASSIGN, (move.topic, move.partition), replicas=move.replicas,
                          through_znode=ev.through_znode,
                          default_directories=default_directories(self.cluster, move.replicas or ()))
        if ev.read_at_failover and self.cluster.failover_answers:
            # The failover this reassignment was read by is over: the answers to its requests (controller_epoch).
            pending, self.cluster.failover_answers = self.cluster.failover_answers, {}
            answered_again(self, out, pending)

    def _on_elect_leaders(self, ev: ElectLeaders, out: _Fanout) -> None:
        keys = sorted(self.partitions) if ev.partitions is None else [(r.topic, r.partition) for r in ev.partitions]
        unclean = ev.election_type is ElectionType.UNCLEAN
        for key in keys:
            if unclean:
                out.partition(Action.ELECT_UNCLEAN, key, unclean_allowed=True)
            else:
                out.partition(Action.ELECT_PREFERRED, key)

    def _on_leader_imbalance_check(self, out: _Fanout) -> None:
        """checkAndTriggerAutoLeaderRebalance, on the partition records as of this event."""
        if not self.config.auto_leader_rebalance_enable:
            out.cluster("auto.leader.rebalance.enable=false: no check", Outcome.NO_OP)
            return
        if self.config.rules.rebalance_batch is not None:
            self._rebalance_every_partition(out, self.config.rules.rebalance_batch)
            return
        threshold = self.config.leader_imbalance_per_broker_percentage / 100
        live = self.cluster.live_brokers
        by_preferred: dict[int, list[tuple[Key, PartitionRecord]]] = {}
        for key, rec in sorted(self.partitions.items()):
            if rec.replicas and not rec.queued_for_deletion:
                by_preferred.setdefault(rec.replicas[0], []).append((key, rec))
        reports = []
        # Before KAFKA-10149 a reassignment in progress anywhere holds every election back.
        held_back = rebalance_waits_for_reassignments(self.release) and any(
            r.reassignment_in_progress for r in self.partitions.values())
        for broker, hosted in sorted(by_preferred.items()):
            not_preferred = [(k, r) for k, r in hosted if r.has_leader_and_isr and r.leader != broker]
            ratio = len(not_preferred) / len(hosted)
            if ratio <= threshold:
                continue
            candidates = [] if held_back else [k for k, r in not_preferred if broker in live and broker in r.isr]
            reports.append(f"broker {broker} leads {len(hosted) - len(not_preferred)}/{len(hosted)} of its "
                           f"preferred partitions (imbalance {ratio:.0%}): {len(candidates)} preferred election(s)")
            for key in candidates:
                out.partition(Action.ELECT_PREFERRED, key)
        out.cluster("; ".join(reports) if reports else
                    f"no broker above leader.imbalance.per.broker.percentage="
                    f"{self.config.leader_imbalance_per_broker_percentage}")

    def _rebalance_every_partition(self, out: _Fanout, batch: int) -> None:
        """KRaft: a preferred election for every partition not led by its preferred replica, if that replica
        can lead (live and in the ISR), at most `batch` per run."""
        live = self.cluster.live_brokers
        keys = [k for k, r in sorted(self.partitions.items())
                if r.replicas and r.has_leader_and_isr and not r.queued_for_deletion and r.leader != r.replicas[0]
                and r.replicas[0] in live and r.replicas[0] in r.isr][:batch]
        for key in keys:
            out.partition(Action.ELECT_PREFERRED, key)
        out.cluster(f"{len(keys)} partition(s) not led by their preferred replica: preferred election(s)")
