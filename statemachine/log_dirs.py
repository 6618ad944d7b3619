"""The controller's view of its brokers' log directories: the events that name them, in KRaft (KIP-858) and in
ZooKeeper mode (KIP-112).

- BrokerRegistration: the log dirs a broker registered with (ClusterControlManager.registerBroker keeps them in the
  broker's registration); where a new replica on it goes follows from them (directories.default_directory).
- AssignReplicasToDirs: a broker put its replicas in its log dirs (ReplicationControlManager
  .handleAssignReplicasToDirs): one change per partition whose directory it changes, checked as Kafka checks the
  request (the broker's epoch, the partition, the broker being one of its replicas).
- LogDirsOffline: a broker's heartbeat named some of its log dirs offline (ReplicationControlManager
  .handleDirectoriesOffline): its replicas in them go offline as for a failed broker, but only for those
  partitions (out of the ISR, a new leader where it led, the ELR where it is on), and the dirs leave its
  registration. From then on its replicas there cannot lead (`offline_replicas`), until it registers again.
- LogDirEventNotification (ZooKeeper mode): a broker announced a failed log dir under
  /log_dir_event_notification. The controller knows no dirs: it sends the broker a LeaderAndIsr of each replica it
  holds (onBrokerLogDirFailure, OnlineReplica) and learns from the answer which are in the failed dir
  (KAFKA_STORAGE_ERROR); those it had not known offline go offline as for a failed broker, only for those partitions
  (processLeaderAndIsrResponseReceived, onReplicasBecomeOffline), and cannot lead from then on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from schemas.events import (
    AssignReplicasToDirs,
    BrokerRegistration,
    DirectoryAssignment,
    LeaderAndIsrResponseReceived,
    LogDirEventNotification,
    LogDirsOffline,
    PartitionRef,
)
from statemachine.directories import default_directory, is_online, placement
from statemachine.errors import Error, Outcome, Rejection
from statemachine.kraft_releases import release_name
from statemachine.record import Action, PartitionRecord
from statemachine.states import ReplicaState

if TYPE_CHECKING:
    from statemachine.controller import ClusterView, Controller, _Fanout


def default_directories(cv: ClusterView, replicas: Iterable[int]) -> dict[int, str]:
    """Where a new replica on each of `replicas` goes, as their registrations stand: a broker that registered
    without a BrokerRegistration (before 3.7-IV2, or a log that names no log dirs) has none."""
    return {b: default_directory(cv.log_dirs.get(b, () if b in cv.last_broker_epochs else None)) for b in replicas}


def offline_replicas(cv: ClusterView, rec: PartitionRecord | None) -> frozenset[int]:
    """The brokers whose replica of the partition is in a log dir they reported offline (KRaft), or that answered
    KAFKA_STORAGE_ERROR for it (ZooKeeper mode: ControllerContext.isReplicaOnline): none can lead it."""
    if rec is None:
        return frozenset()
    offline = [b for b, d in zip(rec.replicas, rec.directories, strict=False)
               if b in cv.log_dirs and not is_online(d, cv.log_dirs[b])]
    if cv.replicas_on_offline_dirs:
        key = (rec.topic, rec.partition)
        offline += [b for b in rec.replicas if key in cv.replicas_on_offline_dirs.get(b, ())]
    return frozenset(offline)


def on_broker_registration(controller: Controller, ev: BrokerRegistration, out: _Fanout) -> None:
    cv = controller.cluster
    if ev.log_dirs or ev.broker_id in cv.log_dirs:  # a registration naming none (below 3.7-IV2) places nothing
        cv.log_dirs[ev.broker_id] = tuple(ev.log_dirs)
        cv.registered_epochs[ev.broker_id] = ev.broker_epoch
    if ev.max_metadata_version is not None:
        cv.broker_levels[ev.broker_id] = ev.max_metadata_version
        out.facts_changed()
    release = "" if ev.max_metadata_version is None else f" (Kafka {release_name(ev.max_metadata_version)})"
    out.cluster(f"broker {ev.broker_id} (epoch {ev.broker_epoch}){release} registered with "
                f"{len(ev.log_dirs)} log dir(s): {', '.join(ev.log_dirs) or 'none'}")


def _check_registration(cv: ClusterView, broker: int, epoch: int) -> None:
    """ClusterControlManager.checkBrokerEpoch, for a broker that registered its log dirs."""
    if broker not in cv.log_dirs:
        raise Rejection(Error.BROKER_NOT_AVAILABLE, f"broker {broker} is not registered")
    known = cv.registered_epochs[broker]
    if epoch != known:
        raise Rejection(Error.STALE_BROKER_EPOCH, f"broker {broker}'s epoch is {known}, the request names {epoch}")


def on_log_dirs_offline(controller: Controller, ev: LogDirsOffline, out: _Fanout) -> None:
    cv, broker = controller.cluster, ev.broker_id
    _check_registration(cv, broker, ev.broker_epoch)
    registered = cv.log_dirs[broker]
    offline = [d for d in registered if d in ev.log_dirs]
    if not offline:
        raise Rejection(Error.INVALID_REQUEST, f"broker {broker} registered none of the log dirs "
                                               f"{', '.join(ev.log_dirs)}")
    in_them = [key for key, rec in sorted(controller.partitions.items())
               if broker in rec.replicas and not rec.queued_for_deletion
               and dict(zip(rec.replicas, rec.directories, strict=False)).get(broker) in offline]
    before = {key: controller.partitions[key] for key in in_them}
    cv.log_dirs[broker] = tuple(d for d in registered if d not in offline)
    for key in in_them:
        out.partition(Action.BROKER_FAILURE, key, broker_id=broker)
    after = {key: controller.partitions[key] for key in in_them}
    moved = sum(1 for key in in_them if before[key].leader == broker and after[key].leader != broker)
    shrunk = sum(1 for key in in_them if len(after[key].isr) < len(before[key].isr))
    out.cluster(f"broker {broker}'s log dir(s) {', '.join(offline)} went offline: {len(in_them)} partition(s) in "
                f"them; {moved} leader(s) moved away from broker {broker}, {shrunk} ISR(s) shrank")


def _directory_of(controller: Controller, broker: int, a: DirectoryAssignment) -> str | None:
    rec = controller.partitions.get((a.topic, a.partition))
    return None if rec is None else dict(zip(rec.replicas, rec.directories, strict=False)).get(broker)


def on_assign_replicas_to_dirs(controller: Controller, ev: AssignReplicasToDirs, out: _Fanout) -> None:
    cv = controller.cluster
    _check_registration(cv, ev.broker_id, ev.broker_epoch)
    out.cluster(f"broker {ev.broker_id} assigns {len(ev.assignments)} replica(s) to its log dirs: " + "; ".join(
        placement(f"{a.topic}-{a.partition}", _directory_of(controller, ev.broker_id, a), a.directory)
        for a in ev.assignments))
    for a in ev.assignments:
        out.partition(Action.ASSIGN_REPLICAS_TO_DIRS, (a.topic, a.partition), broker_id=ev.broker_id,
                      directory=a.directory)


def on_log_dir_event_notification(controller: Controller, ev: LogDirEventNotification, out: _Fanout) -> None:
    cv, broker = controller.cluster, ev.broker_id
    if broker not in cv.broker_epochs:
        out.cluster(f"log dir event of broker {broker}, which is not registered: nothing to ask", Outcome.NO_OP)
        return
    hosted = controller.partitions_on(broker)
    # onBrokerLogDirFailure: a LeaderAndIsr of every replica it holds (one batch).
    for key in hosted:
        out.partition(Action.LOG_DIR_FAILURE, key, broker_id=broker)
    # Its answer: the replicas in the failed dir, those not known offline yet go offline. Kept also when the dir
    # held none of its replicas: the broker has an offline dir from now on, and answers KAFKA_STORAGE_ERROR for logs
    # it deleted (`storage_errors`, seed 815).
    # Only replicas the LeaderAndIsr asked about: none whose deletion succeeded (ReplicaDeletionSuccessful to
    # OnlineReplica is no valid transition: nothing sent; a later request's answer marks it, seed 1250).
    asked = set(hosted) - deleted_replicas(controller, [broker])[broker]
    if ev.deletion_answers:
        # The other StopReplica answers of the read whose deletion this broker failed (`deletion_answers`: that read's
        # topics), handled after this notification, before its answer: none retries the failed replica, OnlineReplica
        # again (seed 1412). A later read's answers stay its own.
        controller._stop_replica_answers(out, {}, topics=ev.deletion_answers)
    answered = {(r.topic, r.partition) for r in ev.offline_replicas} & asked
    new = _answered(controller, out, broker, answered)
    out.cluster(f"broker {broker} announced a failed log dir: asked about its {len(hosted)} replica(s), "
                f"{len(answered)} in failed dirs, {len(new)} newly offline: {_names(new)}")


def _answered(controller: Controller, out: _Fanout, broker: int, answered: set[tuple[str, int]]
              ) -> list[tuple[str, int]]:
    """processLeaderAndIsrResponseReceived: the replicas the broker answered KAFKA_STORAGE_ERROR for join its
    replicasOnOfflineDirs, and those not known offline yet go offline (onReplicasBecomeOffline); returns them."""
    cv = controller.cluster
    known = cv.replicas_on_offline_dirs.get(broker, frozenset())
    new = sorted(answered - known)
    cv.replicas_on_offline_dirs[broker] = known | answered
    if new:
        controller._replicas_become_offline(out, broker, new)
    return new


def _names(keys: Iterable[tuple[str, int]]) -> str:
    return ", ".join(f"{t}-{p}" for t, p in keys) or "none"


def on_leader_and_isr_response(controller: Controller, ev: LeaderAndIsrResponseReceived, out: _Fanout) -> None:
    """processLeaderAndIsrResponseReceived: a broker's KAFKA_STORAGE_ERROR answer, handled after the events queued
    before it. One of a broker gone (its replicas offline with it), or naming none it hosts, changes nothing.
    Whatever request it answers: a log dir notification's came with it (`on_log_dir_event_notification`); a
    reassignment's (onPartitionReassignment A1 sends one to every replica, the new ones too), for a new replica of a
    reassignment in progress when the dir failed, NewReplica then, which the notification's LeaderAndIsr left out
    (seed 906, Kafka 3.5.2); any event's LeaderAndIsr a broker was handling when its dir failed, answered before its
    notification (seed 1114: broker 3's controlled shutdown made broker 4 t1-0's leader, writing t1-0's leader epoch
    checkpoint failed the dir); a startup's, queued behind an AlterIsr (seeds 1255, 1267)."""
    cv, broker = controller.cluster, ev.broker_id
    hosted = set(controller.partitions_on(broker)) if broker in cv.broker_epochs else set()
    answered = {(r.topic, r.partition) for r in ev.offline_replicas} & hosted
    if not answered:
        out.cluster(f"broker {broker}'s KAFKA_STORAGE_ERROR answer names none of its replicas", Outcome.NO_OP)
        return
    new = _answered(controller, out, broker, answered)
    out.cluster(f"broker {broker} answered KAFKA_STORAGE_ERROR for {len(answered)} replica(s) in failed dirs, "
                f"{len(new)} newly offline: {_names(new)}")


def storage_errors(cv: ClusterView, broker: int, known: frozenset[tuple[str, int]]) -> frozenset[tuple[str, int]]:
    """What a broker with a failed log dir answers KAFKA_STORAGE_ERROR for when a controller asks about its replicas
    (a LeaderAndIsr, not of a new replica): those in the failed dir (`known`), and those of topics being deleted
    whose logs it deleted already. LogManager.getOrCreateLog creates no log that is not a new replica's while any
    of its log dirs is offline (the log could be in that dir): the broker marks the partition offline, and answers
    its StopReplica the same way (seeds 412, 422, 460). That holds for any broker with a failed dir, also one whose
    failed dir held none of its replicas (`offlineLogDirs.nonEmpty` is the broker's, not the partition's: seed
    815)."""
    return known | {k for k in cv.deleted_logs.get(broker, ()) if k[0] in cv.topics_queued_for_deletion}


def lift_offline_dirs(cv: ClusterView, brokers: Iterable[int]) -> dict[int, frozenset[tuple[str, int]]]:
    """What the controller forgets of `brokers`' replicas in failed dirs while it asks them again: a broker's startup
    clears its replicasOnOfflineDirs (onBrokerStartup), a new controller starts without any. Until their answers
    (`answered_again`), those replicas count as online: a startup's or a failover's elections may pick them."""
    return {b: cv.replicas_on_offline_dirs.pop(b) for b in sorted(brokers) if b in cv.replicas_on_offline_dirs}


def merged(lifted: Mapping[int, frozenset[tuple[str, int]]], more: Mapping[int, frozenset[tuple[str, int]]]
           ) -> dict[int, frozenset[tuple[str, int]]]:
    """The replicas of each broker to be answered for: those of `lifted` and of `more`."""
    out = dict(lifted)
    for broker, keys in sorted(more.items()):
        out[broker] = out.get(broker, frozenset()) | keys
    return out


def in_answer_order(brokers: Iterable[int], order: Sequence[int]) -> list[int]:
    """The brokers in the order their answers came: those `order` names first, in its order, then the others by id
    (which broker answers first is timing; without the controller's log isrflow takes them by id)."""
    return sorted(brokers, key=lambda b: (order.index(b) if b in order else len(order), b))


def replica_keys(answered: Mapping[int, Iterable[PartitionRef]] | None) -> dict[int, frozenset[tuple[str, int]]]:
    """An event's replicas per broker (its `offline_replicas` refs) as partition keys."""
    return {broker: frozenset((r.topic, r.partition) for r in refs) for broker, refs in (answered or {}).items()}


def deleted_replicas(controller: Controller, brokers: Iterable[int]) -> dict[int, frozenset[tuple[str, int]]]:
    """The brokers' replicas whose deletion succeeded (ReplicaDeletionSuccessful), which a startup's LeaderAndIsr
    leaves out: onBrokerStartup moves every replica on the new brokers to OnlineReplica, no valid transition from
    ReplicaDeletionSuccessful (Kafka logs the change as failed and sends nothing), and a failure before leaves them
    so (failReplicaDeletion's move to ReplicaDeletionIneligible fails the same way). Read before the startup: its
    resumed deletion may delete others, asked about first. Only a topic being deleted has such replicas."""
    queued = [k for topic in sorted(controller.cluster.topics_queued_for_deletion)
              for k in controller.partitions_of(topic)]
    return {b: frozenset(k for k in queued
                         if controller.partitions[k].replica_states.get(b) is ReplicaState.DELETION_SUCCESSFUL)
            for b in brokers}


def answered_again(controller: Controller, out: _Fanout, lifted: dict[int, frozenset[tuple[str, int]]],
                   answered: Mapping[int, Iterable[PartitionRef]] | None = None,
                   not_asked: Mapping[int, frozenset[tuple[str, int]]] | None = None,
                   order: Sequence[int] = ()) -> None:
    """The registered brokers' answers to the LeaderAndIsr requests of a startup or a failover: the replicas of a
    failed dir answer KAFKA_STORAGE_ERROR again (a dir stays failed: isrflow does not see a disk replaced) and go
    offline again (processLeaderAndIsrResponseReceived); so do those the event names (`answered`: a dir that failed
    while no controller read its notification). `not_asked`: each broker's replicas the requests left out. `order`:
    the brokers whose answers came first, in the order they came; the others after them, by id."""
    cv = controller.cluster
    lifted = merged(lifted, replica_keys(answered))
    # Only the replicas the requests asked about are answered: a failed replica the broker no longer hosts stays
    # unknown to the controller until a later request reaches it (seed 1034: t2-0, moved off broker 3 before the
    # failover, marked offline again at its reassignment back onto broker 3); nor does a deleted one a startup's
    # request left out (`deleted_replicas`, seed 1117: broker 2's deleted log of t0-2, t0 still being deleted).
    skipped = not_asked or {}
    lifted = {broker: storage_errors(cv, broker, keys & set(controller.partitions_on(broker)))
              - skipped.get(broker, frozenset()) for broker, keys in lifted.items()}
    # Each answer is handled as it comes (processLeaderAndIsrResponseReceived records the broker's offline replicas,
    # then takes them offline): an election for one broker's offline replicas may pick another's replica in a failed
    # dir whose answer is still queued (seed 1269: t0-1 elected onto broker 4 at broker 2's answer, leaderless at
    # broker 4's). Without the order (the directory alone) every answer counts as in before any is handled: the
    # controller's own broker answers first (seed 437), which the order by id cannot tell. Whether a leader is
    # offline, though, is each answer's own reading (partitionsWithOfflineLeader): the answers not handled yet leave
    # their leaders online to it, so nothing changed sends its UpdateMetadata (seed 1267).
    unhandled = {broker: keys - cv.replicas_on_offline_dirs.get(broker, frozenset())
                 for broker, keys in lifted.items()}
    if not order:
        cv.replicas_on_offline_dirs.update(lifted)
    for broker in in_answer_order(lifted, order):
        cv.replicas_on_offline_dirs[broker] = lifted[broker]
        del unhandled[broker]
        hosted = sorted(lifted[broker] & set(controller.partitions_on(broker)))
        if broker in cv.broker_epochs and hosted:
            # Each answer is an event of its own (LeaderAndIsrResponseReceived): its own batches (seed 719). Which
            # broker answers first is timing: as the event says, else by id.
            out.end_run()
            controller._replicas_become_offline(out, broker, hosted, unhandled)
            out.cluster(f"broker {broker} answered KAFKA_STORAGE_ERROR again for {len(hosted)} replica(s) in failed "
                        f"dirs: " + ", ".join(f"{t}-{p}" for t, p in hosted))
