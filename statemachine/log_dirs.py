"""The controller's view of its brokers' log directories (KIP-858, JBOD in KRaft): the events that name them.

- BrokerRegistration: the log dirs a broker registered with (ClusterControlManager.registerBroker keeps them in the
  broker's registration); where a new replica on it goes follows from them (directories.default_directory).
- AssignReplicasToDirs: a broker put its replicas in its log dirs (ReplicationControlManager
  .handleAssignReplicasToDirs): one change per partition whose directory it changes, checked as Kafka checks the
  request (the broker's epoch, the partition, the broker being one of its replicas).
- LogDirsOffline: a broker's heartbeat named some of its log dirs offline (ReplicationControlManager
  .handleDirectoriesOffline): its replicas in them go offline as for a failed broker, but only for those
  partitions (out of the ISR, a new leader where it led, the ELR where it is on), and the dirs leave its
  registration. From then on its replicas there cannot lead (`offline_replicas`), until it registers again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from schemas.events import AssignReplicasToDirs, BrokerRegistration, DirectoryAssignment, LogDirsOffline
from statemachine.directories import default_directory, is_online, placement
from statemachine.errors import Error, Rejection
from statemachine.kraft_releases import release_name
from statemachine.record import Action, PartitionRecord

if TYPE_CHECKING:
    from statemachine.controller import ClusterView, Controller, _Fanout


def default_directories(cv: ClusterView, replicas: Iterable[int]) -> dict[int, str]:
    """Where a new replica on each of `replicas` goes, as their registrations stand: a broker that registered
    without a BrokerRegistration (before 3.7-IV2, or a log that names no log dirs) has none."""
    return {b: default_directory(cv.log_dirs.get(b, () if b in cv.last_broker_epochs else None)) for b in replicas}


def offline_replicas(cv: ClusterView, rec: PartitionRecord | None) -> frozenset[int]:
    """The brokers whose replica of the partition is in a log dir they reported offline: none can lead it."""
    if rec is None or not cv.log_dirs:
        return frozenset()
    return frozenset(b for b, d in zip(rec.replicas, rec.directories, strict=False)
                     if b in cv.log_dirs and not is_online(d, cv.log_dirs[b]))


def on_broker_registration(controller: Controller, ev: BrokerRegistration, out: _Fanout) -> None:
    cv = controller.cluster
    if ev.log_dirs or ev.broker_id in cv.log_dirs:  # a registration naming none (below 3.7-IV2) places nothing
        cv.log_dirs[ev.broker_id] = tuple(ev.log_dirs)
        cv.registered_epochs[ev.broker_id] = ev.broker_epoch
    if ev.max_metadata_version is not None:
        cv.broker_levels[ev.broker_id] = ev.max_metadata_version
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
