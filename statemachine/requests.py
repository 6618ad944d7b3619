"""The requests the ZooKeeper-era controller sends to brokers for each event it handles: Kafka 3.9's
ControllerBrokerRequestBatch (ControllerChannelManager.scala), batched as KafkaController's handlers batch them.

A state machine step adds requests to the open batch (`Added`: ControllerBrokerRequestBatch's
addLeaderAndIsrRequestForBrokers, addUpdateMetadataRequestForBrokers, addStopReplicaRequestForBrokers); the
handler sends the batch (`sendRequestsToBrokers`) when the step is done for every partition it covers. One
partition's command records what it adds, tagged with the step (`Phase`, and `sub` for the steps it takes in turn);
`batches` groups one event's additions into the batches Kafka sends, in its order, and each batch into requests:

- LeaderAndIsr, one request per broker (ascending ids): a partition's newest state wins, `isNew` sticks once set;
- UpdateMetadata, one request per broker named, all carrying every partition the batch named;
- StopReplica, one request per broker: `deletePartition` sticks once set. The leader epoch is the partition's at the
  time it was added, -2 while its topic is being deleted.

Requests go only to brokers registered at the time (live or shutting down): the controller drops the others
when it sends. The partitions of a request are in (topic, partition) order; Kafka's are in hash order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum

from schemas.records import RequestRow
from statemachine.visit_order import failover_resume_order

LEADER_DURING_DELETE = -2  # LeaderAndIsr.LeaderDuringDelete and EpochDuringDelete: the topic is being deleted
NO_EPOCH = -1


class RequestType(StrEnum):
    LEADER_AND_ISR = "LEADER_AND_ISR"
    UPDATE_METADATA = "UPDATE_METADATA"
    STOP_REPLICA = "STOP_REPLICA"


class Phase(StrEnum):
    """The step of a handler that sends one batch (or, for REASSIGNMENT and DELETION, batches in turn), in
    Kafka's words. Declared in the order most handlers take them; `_ORDER` names the others."""

    METADATA = "sendUpdateMetadataRequest"  # no state change: who is live, and the partitions named
    ONLINE_REPLICA = "OnlineReplica"
    OFFLINE_REPLICA = "OfflineReplica"
    ELECTION = "OnlinePartition"
    FOLLOWERS_STOPPED = "StopReplica"  # doControlledShutdown: the partitions the broker follows
    REASSIGNMENT = "onPartitionReassignment"  # one partition after the other
    DELETION = "onTopicDeletion"


# onBrokerFailure elects before taking the replicas offline; doControlledShutdown too, and stops the followers
# between the two.
_ORDER: dict[str, tuple[Phase, ...]] = {
    "BROKER_FAILURE": (Phase.ELECTION, Phase.OFFLINE_REPLICA),
    "CONTROLLED_SHUTDOWN": (Phase.ELECTION, Phase.FOLLOWERS_STOPPED, Phase.OFFLINE_REPLICA),
}
_DEFAULT_ORDER = tuple(Phase)
# maybeResumeReassignments: a new controller, and a broker's startup, resume the reassignments in progress by iterating
# the controller's partitionsBeingReassigned, a Scala hash set (visit_order.reassignment_order), not in the order the
# partitions come (seeds 702, 708); a new controller resumes those /admin/reassign_partitions still names first
# (visit_order.failover_resume_order; seeds 1043, 1232).
_RESUMING = frozenset({"CONTROLLER_FAILOVER", "BROKER_STARTUP"})


@dataclass(frozen=True, slots=True)
class RequestPartition:
    """One partition's state in a request: LeaderAndIsrPartitionState, UpdateMetadataPartitionState (its zkVersion
    is `partition_epoch`) or StopReplicaPartitionState (leader epoch and deletePartition only)."""

    topic: str
    partition: int
    leader: int | None = None
    leader_epoch: int | None = None
    isr: tuple[int, ...] | None = None
    partition_epoch: int | None = None
    replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    is_new: bool | None = None
    delete: bool | None = None


@dataclass(frozen=True, slots=True)
class Added:
    """What one add...RequestForBrokers call puts in the open batch: a request for `brokers` (those registered),
    about `partition` (None: an UpdateMetadata that only tells `brokers` who is live)."""

    phase: Phase
    sub: int  # the batch within the phase, for the steps a partition takes in turn
    request: RequestType
    brokers: tuple[int, ...]
    partition: RequestPartition | None


@dataclass(frozen=True, slots=True)
class Request:
    """One request the controller sends to one broker: the `batch`-th batch of its event."""

    batch: int
    request: RequestType
    broker: int
    partitions: tuple[RequestPartition, ...]


@dataclass
class _Batch:
    leader_and_isr: dict[int, dict[tuple[str, int], RequestPartition]] = field(default_factory=dict)
    metadata_brokers: set[int] = field(default_factory=set)
    metadata: dict[tuple[str, int], RequestPartition] = field(default_factory=dict)
    stop_replica: dict[int, dict[tuple[str, int], RequestPartition]] = field(default_factory=dict)

    def add(self, a: Added) -> None:
        p = a.partition
        if a.request is RequestType.UPDATE_METADATA:
            self.metadata_brokers.update(a.brokers)
            if p is not None:
                self.metadata[(p.topic, p.partition)] = p
            return
        assert p is not None
        key = (p.topic, p.partition)
        requests = self.leader_and_isr if a.request is RequestType.LEADER_AND_ISR else self.stop_replica
        for broker in a.brokers:
            states = requests.setdefault(broker, {})
            earlier = states.get(key)
            if earlier is not None and a.request is RequestType.LEADER_AND_ISR and earlier.is_new:
                p = _with(p, is_new=True)
            elif earlier is not None and a.request is RequestType.STOP_REPLICA and earlier.delete:
                p = _with(p, delete=True)
            states[key] = p

    def requests(self, index: int) -> list[Request]:
        # sendRequestsToBrokers: LeaderAndIsr, then UpdateMetadata, then StopReplica.
        lai, um, sr = RequestType.LEADER_AND_ISR, RequestType.UPDATE_METADATA, RequestType.STOP_REPLICA
        metadata = _sorted(self.metadata)
        return ([Request(index, lai, b, _sorted(s)) for b, s in sorted(self.leader_and_isr.items())]
                + [Request(index, um, b, metadata) for b in sorted(self.metadata_brokers)]
                + [Request(index, sr, b, _sorted(s)) for b, s in sorted(self.stop_replica.items())])


_PARTITION_FIELDS = tuple(f.name for f in fields(RequestPartition))


def _with(p: RequestPartition, **changes: object) -> RequestPartition:
    return RequestPartition(**{**asdict(p), **changes})


def _sorted(states: dict[tuple[str, int], RequestPartition]) -> tuple[RequestPartition, ...]:
    return tuple(p for _, p in sorted(states.items()))


def batches(added: Sequence[tuple[int, str, Added]], from_znode: Iterable[tuple[str, int]] = ()) -> list[Request]:
    """One event's requests, batch by batch: `added` holds (run, action, addition) in the order the event made
    them, a run being a stretch of commands of one action (a failover's, then the event's own). Within a run the
    additions go out by the action's order of phases; the reassignment's one partition after the other: in the
    event's order, or, where the controller resumes them (`_RESUMING`), in its hash set's, after those of
    `from_znode` (a failover's read of /admin/reassign_partitions)."""
    first_seen: dict[tuple[int, str, int], int] = {}
    resumed: dict[int, set[tuple[str, int]]] = {}
    for i, (run, action, a) in enumerate(added):
        if a.phase is Phase.REASSIGNMENT and a.partition is not None:
            key = (a.partition.topic, a.partition.partition)
            first_seen.setdefault((run, *key), i)
            if action in _RESUMING:
                resumed.setdefault(run, set()).add(key)
    for run, keys in resumed.items():
        for turn, key in enumerate(failover_resume_order(keys, from_znode)):
            first_seen[(run, *key)] = turn
    # Each batch's additions in the order the event made them (one _Batch per batch, not per addition).
    grouped: dict[tuple[int, int, int, int], list[Added]] = {}
    for run, action, a in added:
        order = _ORDER.get(action, _DEFAULT_ORDER)
        rank = order.index(a.phase) if a.phase in order else len(order)
        who = 0  # a step's batch covers every partition, but a reassignment's batches are the partition's own
        if a.phase is Phase.REASSIGNMENT and a.partition is not None:
            who = first_seen[(run, a.partition.topic, a.partition.partition)]
        grouped.setdefault((run, rank, who, a.sub), []).append(a)
    out: list[Request] = []
    index = 0
    for key in sorted(grouped):
        batch = _Batch()
        for a in grouped[key]:
            batch.add(a)
        if batch.leader_and_isr or batch.metadata_brokers or batch.stop_replica:  # an empty one is not sent
            out.extend(batch.requests(index))
            index += 1
    return out


def request_rows(requests: Iterable[Request], event_id: str, event_type: str, source_offset: int,
                 controller_epoch: int) -> list[RequestRow]:
    """Each request as a row of requests.jsonl / the requests table; the partitions as a JSON list of their
    fields that are set, in field order."""
    # A failure's requests share their partition states (one UpdateMetadata tuple for every broker, one state per
    # partition in each broker's LeaderAndIsr): each is written once, keyed by identity. The list keeps every
    # request alive meanwhile, so no id is reused.
    requests = list(requests)
    states: dict[int, str] = {}
    lists: dict[int, str] = {}

    def state_json(p: RequestPartition) -> str:
        text = states.get(id(p))
        if text is None:
            text = states[id(p)] = json.dumps({k: v for k in _PARTITION_FIELDS if (v := getattr(p, k)) is not None},
                                              separators=(",", ":"))
        return text

    def partitions_json(partitions: tuple[RequestPartition, ...]) -> str:
        text = lists.get(id(partitions))
        if text is None:
            text = lists[id(partitions)] = "[" + ",".join(map(state_json, partitions)) + "]"
        return text

    return [RequestRow(event_id=event_id, event_type=event_type, source_offset=source_offset,
                       controller_epoch=controller_epoch, batch=r.batch, request=str(r.request), broker=r.broker,
                       partition_count=len(r.partitions), partitions=partitions_json(r.partitions))
            for r in requests]
