"""The controller's view of its brokers' log directories (KIP-858, JBOD in KRaft): the events that name them.

- BrokerRegistration: the log dirs a broker registered with (ClusterControlManager.registerBroker keeps them in the
  broker's registration); where a new replica on it goes follows from them (directories.default_directory).
- AssignReplicasToDirs: a broker put its replicas in its log dirs (ReplicationControlManager
  .handleAssignReplicasToDirs): one change per partition whose directory it changes, checked as Kafka checks the
  request (the broker's epoch, the partition, the broker being one of its replicas).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from schemas.events import AssignReplicasToDirs, BrokerRegistration
from statemachine.directories import default_directory, directory_name
from statemachine.errors import Error, Rejection
from statemachine.record import Action

if TYPE_CHECKING:
    from statemachine.controller import ClusterView, Controller, _Fanout


def default_directories(cv: ClusterView, replicas: Iterable[int]) -> dict[int, str]:
    """Where a new replica on each of `replicas` goes, as their registrations stand: a broker that registered
    without a BrokerRegistration (before 3.7-IV2, or a log that names no log dirs) has none."""
    return {b: default_directory(cv.log_dirs.get(b, () if b in cv.last_broker_epochs else None)) for b in replicas}


def on_broker_registration(controller: Controller, ev: BrokerRegistration, out: _Fanout) -> None:
    cv = controller.cluster
    cv.log_dirs[ev.broker_id] = tuple(ev.log_dirs)
    cv.registered_epochs[ev.broker_id] = ev.broker_epoch
    out.cluster(f"broker {ev.broker_id} (epoch {ev.broker_epoch}) registered with "
                f"{len(ev.log_dirs)} log dir(s): {', '.join(ev.log_dirs) or 'none'}")


def on_assign_replicas_to_dirs(controller: Controller, ev: AssignReplicasToDirs, out: _Fanout) -> None:
    cv = controller.cluster
    if ev.broker_id not in cv.log_dirs:
        raise Rejection(Error.BROKER_NOT_AVAILABLE, f"broker {ev.broker_id} is not registered")
    known = cv.registered_epochs[ev.broker_id]
    if ev.broker_epoch != known:
        raise Rejection(Error.STALE_BROKER_EPOCH,
                        f"broker {ev.broker_id}'s epoch is {known}, the request names {ev.broker_epoch}")
    out.cluster(f"broker {ev.broker_id} assigns {len(ev.assignments)} replica(s) to its log dirs: " + ", ".join(
        f"{a.topic}-{a.partition} to {directory_name(a.directory)}" for a in ev.assignments))
    for a in ev.assignments:
        out.partition(Action.ASSIGN_REPLICAS_TO_DIRS, (a.topic, a.partition), broker_id=ev.broker_id,
                      directory=a.directory)
