"""Each replica's log directory (KIP-858, JBOD in KRaft), as Kafka's KRaft controller keeps it.

A partition's `directories` go with its replicas, one per replica in the same order: the id of the broker's log
directory that holds the replica (a Uuid, printed as Kafka prints it), or one of three reserved ids (Kafka's
`DirectoryId`):

- MIGRATING: the replica's directory is not known to the controller. Every replica is MIGRATING below metadata
  version 3.7-IV2 (`isDirectoryAssignmentSupported`), and stays so after an upgrade until its broker assigns it;
- UNASSIGNED: a new replica the broker has not placed yet (a broker with several log dirs, or not registered);
- LOST: a replica in a directory that went offline (only brokers write it).

A replica is online when its directory is one of its broker's online log dirs (`is_online`): one in a log dir the
broker reported offline cannot lead (ReplicationControlManager.LeaderAcceptor), until the broker registers again.

Where the controller sets them (ReplicationControlManager, PartitionChangeBuilder.setAssignmentChanges):

- `default_directory` (ClusterControlManager.defaultDir): a new replica goes to its broker's only log dir, is
  UNASSIGNED when the broker has several (or is not registered) and MIGRATING when it registered none;
- `directories_for`: a change of the replicas keeps each remaining replica's directory and gives a new one its
  default; below 3.7-IV2 every replica is MIGRATING;
- `on_assign_replicas_to_dirs`: the broker's AssignReplicasToDirs sets its own replica's directory, a change with
  nothing else (partition epoch + 1, the leader epoch as it was). After an upgrade past 3.7-IV2 each broker assigns
  its MIGRATING replicas so: the directory migration. An intra-broker move (AlterReplicaLogDirs) is the same
  request once the broker has swapped in the future replica: the replica goes from one log dir to another.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from statemachine.errors import Error, Rejection
from statemachine.features import is_directory_assignment_supported
from statemachine.states import PartitionState

if TYPE_CHECKING:
    from statemachine.step import Step

# Kafka's DirectoryId reserved ids: Uuid(0, 0), Uuid(0, 1), Uuid(0, 2), as its JSON prints them.
MIGRATING = "AAAAAAAAAAAAAAAAAAAAAA"
UNASSIGNED = "AAAAAAAAAAAAAAAAAAAAAQ"
LOST = "AAAAAAAAAAAAAAAAAAAAAg"
RESERVED = {MIGRATING: "MIGRATING", UNASSIGNED: "UNASSIGNED", LOST: "LOST"}


def directory_name(directory: str) -> str:
    """A directory as a person reads it: the reserved ids by name, a log dir by its id."""
    return RESERVED.get(directory, directory)


def is_online(directory: str, online: Sequence[str]) -> bool:
    """DirectoryId.isOnline: whether a replica in `directory` is on one of its broker's online log dirs. UNASSIGNED
    and MIGRATING count as online, LOST never; a broker that registered no log dirs has every replica online."""
    if directory in (UNASSIGNED, MIGRATING):
        return True
    return directory != LOST and (not online or directory in online)


def default_directory(log_dirs: Sequence[str] | None) -> str:
    """ClusterControlManager.defaultDir: where a new replica on a broker with these registered log dirs goes (None:
    the broker is not registered)."""
    if log_dirs is None or len(log_dirs) > 1:
        return UNASSIGNED
    return log_dirs[0] if log_dirs else MIGRATING


def directories_for(before_replicas: Sequence[int], before_directories: Sequence[str], replicas: Sequence[int],
                    assigned: Mapping[int, str], defaults: Mapping[int, str], metadata_version: int
                    ) -> tuple[str, ...]:
    """The directories of `replicas` after a change (PartitionChangeBuilder's targetDirectories): a replica the
    partition had keeps its directory unless `assigned` gives it one, a new one gets its broker's default
    (`defaults`, UNASSIGNED for a broker missing there); below 3.7-IV2 all are MIGRATING."""
    if not is_directory_assignment_supported(metadata_version):
        return (MIGRATING,) * len(replicas)
    if (not assigned and replicas == before_replicas and len(before_directories) == len(replicas)
            and all(before_directories)):
        return tuple(before_directories)  # the same replicas, each in its directory still (the usual operation)
    known = dict(zip(before_replicas, before_directories, strict=False))
    known.update(assigned)
    return tuple(known.get(r) or defaults.get(r, UNASSIGNED) for r in replicas)


def on_assign_replicas_to_dirs(s: Step) -> None:
    """ReplicationControlManager.handleAssignReplicasToDirs for one partition: the broker's replica goes to the
    directory it names, a change of nothing else; none when it is there already."""
    cmd, rec = s.command, s.record
    broker, directory = cmd.broker_id, cmd.directory
    assert broker is not None and directory is not None
    if rec.state is PartitionState.NON_EXISTENT:
        raise Rejection(Error.UNKNOWN_TOPIC_OR_PARTITION, f"partition {rec.topic}-{rec.partition} does not exist")
    if broker not in rec.replicas:
        raise Rejection(Error.NOT_LEADER_OR_FOLLOWER,
                        f"broker {broker} holds no replica of {rec.topic}-{rec.partition}")
    if not s.rules.assigns_directories:
        s.note("the ZooKeeper-era controller keeps no log directories")
        return
    s.assigned[broker] = directory
    before = dict(zip(rec.replicas, rec.directories, strict=False)).get(broker)
    if before == directory:
        s.note(f"broker {broker}'s replica is in log dir {directory_name(directory)} already")
        return
    s.write(rec.leader, rec.isr, (), bump_leader_epoch=False, sent=False)
    s.note(f"broker {broker} {placement(f'{rec.topic}-{rec.partition}', before, directory)}")


def placement(partition: str, before: str | None, directory: str) -> str:
    """A broker's assignment in words: its replica placed (it was UNASSIGNED or MIGRATING), or moved from one of
    its log dirs to another (AlterReplicaLogDirs: the broker swapped in the future replica, then assigned it)."""
    if before is None or before in (UNASSIGNED, MIGRATING):
        return f"placed {partition} in log dir {directory_name(directory)}"
    return f"moved {partition} from log dir {directory_name(before)} to {directory_name(directory)}"
