"""The field validators of each record type of the controller event log (schemas.events parses with them): per
type, field name -> validator, each returning the field's normalised value or raising `Invalid`."""

from __future__ import annotations

from typing import Any

from schemas.fields import (
    INT16_MAX,
    assignment,
    boolean,
    broker_epochs,
    configs,
    directory_assignments,
    feature_levels,
    int_list,
    leader,
    long,
    member,
    non_negative_int,
    partition_refs,
    recovery_state,
    replica_assignments,
    replicas_by_broker,
    string,
    string_list,
)
from schemas.values import BrokerChangeKind, ElectionType, LeaderRecoveryState

_BROKER_LOG_DIRS = {"broker_id": non_negative_int, "broker_epoch": long, "log_dirs": string_list}
# Per type: field name -> validator. Validators return the normalised value.
EVENT_FIELDS: dict[str, dict[str, Any]] = {
    "BrokerChange": {
        "broker_id": non_negative_int,
        "change": lambda v, n: member(v, n, BrokerChangeKind),
        "broker_epoch": long,
    },
    "IsrChange": {
        "topic": string,
        "partition": non_negative_int,
        "broker_id": non_negative_int,
        "broker_epoch": long,
        "leader_epoch": non_negative_int,
        "partition_epoch": non_negative_int,
        "isr": int_list,
    },
    "CreateTopic": {"topic": string, "assignment": assignment},
    "CreatePartitions": {"topic": string, "assignment": assignment},
    "DeleteTopic": {"topic": string},
    "ReassignPartitions": {"partitions": lambda v, n: partition_refs(v, n, with_replicas=True)},
    "ElectLeaders": {"election_type": lambda v, n: member(v, n, ElectionType)},
    "AlterTopicConfig": {"topic": string, "configs": lambda v, n: configs(v, n, allow_null=True)},
    "ControllerChange": {"controller_id": non_negative_int},
    "LeaderImbalanceCheck": {},
    "PartitionSnapshot": {
        "topic": string,
        "partition": non_negative_int,
        "replicas": int_list,
        "isr": int_list,
        "leader": leader,
        "leader_epoch": non_negative_int,
        "partition_epoch": non_negative_int,
    },
    "UpdateFeatures": {"features": feature_levels},
    "IsrChangeNotification": {"partitions": lambda v, n: partition_refs(v, n, with_replicas=False)},
    "BrokerRegistration": _BROKER_LOG_DIRS,
    "ControllerRegistration": {"controller_id": non_negative_int,
                               "max_metadata_version": lambda v, n: non_negative_int(v, n, INT16_MAX)},
    "LogDirsOffline": _BROKER_LOG_DIRS,
    "AssignReplicasToDirs": {"broker_id": non_negative_int, "broker_epoch": long,
                             "assignments": directory_assignments},
    "LogDirEventNotification": {"broker_id": non_negative_int},
    "LeaderAndIsrResponseReceived": {"broker_id": non_negative_int,
                                     "offline_replicas": lambda v, n: partition_refs(v, n, with_replicas=False)},
}

# Optional fields: name -> (validator, default).
OPTIONAL_FIELDS: dict[str, dict[str, Any]] = {
    "BrokerChange": {"unclean_shutdown": (boolean, False),
                     "new_brokers": (lambda v, n: None if v is None else broker_epochs(v, n), None),
                     "offline_replicas": (lambda v, n: partition_refs(v, n, with_replicas=False), ()),
                     "stop_replica_answer_order": (int_list, ()),
                     "storage_error_answer_queued": (boolean, False), "deletion_answers_queued": (boolean, False)},
    "IsrChange": {"leader_recovery_state": (recovery_state, LeaderRecoveryState.RECOVERED),
                  "request_partitions": (lambda v, n: partition_refs(v, n, with_replicas=False), ()),
                  "reassignment_completed_by_queued_event": (boolean, False),
                  "controller_died_after_leader_move": (boolean, False),
                  "controller_died_before_completion": (boolean, False),
                  "controller_died_after_assignment": (boolean, False),
                  "write_failed": (boolean, False), "deletion_answers": (int_list, ())},
    "CreateTopic": {"configs": (lambda v, n: configs(v, n, allow_null=False), {}), "topics": (string_list, ())},
    "ReassignPartitions": {"through_znode": (boolean, False), "read_at_failover": (boolean, False)},
    "DeleteTopic": {"topics": (string_list, ()), "stop_replica_answered": (boolean, True),
                    "stop_replica_answers": (string_list, ()),
                    "storage_error_answers": (lambda v, n: None if v is None else replicas_by_broker(v, n), None)},
    "ElectLeaders": {"partitions": (lambda v, n: None if v is None else partition_refs(v, n, False), None)},
    "ControllerChange": {"live_brokers": (lambda v, n: None if v is None else broker_epochs(v, n), None),
                         "offline_replicas": (lambda v, n: None if v is None else replicas_by_broker(v, n), None),
                         "reassignments": (replica_assignments, ()),
                         "reads_reassignment_znode": (boolean, False),
                         "znode_reassignments": (lambda v, n: partition_refs(v, n, with_replicas=False), ()),
                         "restarted_reassignments": (replica_assignments, ()),
                         "answer_order": (int_list, ()), "topics_to_delete": (string_list, ())},
    "LogDirEventNotification": {"offline_replicas": (lambda v, n: partition_refs(v, n, with_replicas=False), ()),
                                "deletion_answers": (string_list, ())},
    "UpdateFeatures": {"kafka_version": (lambda v, n: None if v is None else string(v, n), None)},
    "BrokerRegistration": {"max_metadata_version": (
        lambda v, n: None if v is None else non_negative_int(v, n, INT16_MAX), None)},
    "PartitionSnapshot": {
        "leader_recovery_state": (recovery_state, LeaderRecoveryState.RECOVERED),
        "adding_replicas": (int_list, ()),
        "removing_replicas": (int_list, ()),
        "configs": (lambda v, n: configs(v, n, allow_null=False), {}),
        "eligible_leader_replicas": (int_list, ()),
        "last_known_elr": (int_list, ()),
        "directories": (string_list, ()),
    },
}

# ObservedDecision: every field required (the bridge writes the import's observed row whole).
OBSERVED_FIELDS: dict[str, Any] = {
    "topic": string,
    "partition": non_negative_int,
    "leader": leader,
    "isr": int_list,
    "leader_epoch": non_negative_int,
    "partition_epoch": non_negative_int,
    "replicas": int_list,
    "adding_replicas": int_list,
    "removing_replicas": int_list,
    "leader_recovery_state": lambda v, n: str(recovery_state(v, n)),
    "eligible_leader_replicas": int_list,
    "last_known_elr": int_list,
    "source_offset": long,
    "cause": string,
    "cause_event_id": lambda v, n: None if v is None else string(v, n),
    "decision": boolean,
}
