"""KIP-858 (JBOD in KRaft) in a metadata log: the records that name log directories, as contract events.

- REGISTER_BROKER_RECORD `logDirs` -> BrokerRegistration {broker_id, broker_epoch, log_dirs}: where the controller
  puts the broker's new replicas from then on (statemachine.directories.default_directory).
- REGISTER_CONTROLLER_RECORD -> ControllerRegistration {controller_id, max_metadata_version}: the controller's
  release (statemachine.kraft_releases), which decides some things apart from the metadata.version.
- A PARTITION_CHANGE_RECORD that sets only `directories`, one replica's directory changed -> AssignReplicasToDirs
  from that replica's broker (ReplicationControlManager.handleAssignReplicasToDirs writes one per partition of the
  request); a run of them from one broker in a batch is one event.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streaming.kraft.views import PartitionView

# The keys of a PartitionChangeRecord that sets nothing but directories.
_DIRECTORIES_ONLY = frozenset({"partitionId", "topicId", "directories"})


def supported_metadata_version(registration: Mapping[str, Any]) -> int | None:
    """The newest metadata.version level a RegisterControllerRecord (or RegisterBrokerRecord) says its controller
    (or broker) supports: its release."""
    return next((f.get("maxSupportedVersion") for f in registration.get("features") or ()
                 if f.get("name") == "metadata.version"), None)


def log_dirs(registration: Mapping[str, Any]) -> list[str]:
    """The log dirs a REGISTER_BROKER_RECORD names (none before metadata version 3.7-IV2)."""
    return list(registration.get("logDirs") or ())


def assigning_broker(data: Mapping[str, Any], before: PartitionView, after: PartitionView) -> int | None:
    """The broker whose AssignReplicasToDirs wrote this change: it sets only `directories`, and they differ in one
    replica's directory, that broker's (None for anything else)."""
    if not set(data) <= _DIRECTORIES_ONLY or "directories" not in data or before.replicas != after.replicas:
        return None
    changed = [r for r, old, new in zip(after.replicas, before.directories, after.directories, strict=False)
               if old != new]
    return changed[0] if len(changed) == 1 else None


def assignment(topic: str, partition: int, broker: int, after: PartitionView) -> dict[str, Any]:
    """One entry of an AssignReplicasToDirs event: where the change put the broker's replica."""
    return {"topic": topic, "partition": partition,
            "directory": after.directories[after.replicas.index(broker)]}
