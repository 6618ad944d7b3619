"""The records the controller emits, each defined once as a frozen dataclass: a LeaderAndIsr `Decision` and an
`AuditRow`. Their table schemas (schemas.tables DECISION and AUDIT, hence the Spark StructType and the Arrow
schema) are derived from the fields and type hints here, and one generic `to_row` / `from_row` converts any of
them to and from a plain row (lists for tuples, plain strings for enum values).

Values of engine-specific shapes (NaN for a missing int, a map as a list of pairs) are the engine adapter's
business: `from_row` takes plain Python values.
"""

from __future__ import annotations

import operator
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, fields
from datetime import UTC, datetime
from enum import Enum
from functools import cache
from typing import Annotated, Any, ClassVar, TypeVar

# A 64-bit integer column (log offsets); a bare `int` is a 32-bit one, as in Kafka's schemas.
Long = Annotated[int, "long"]

T = TypeVar("T")


@cache
def _unfrozen(cls: type) -> type:
    """A plain class with the slots of the frozen slotted dataclass `cls` (the same layout), which a record of `cls`
    is while it is being built: its slots are then set by plain attribute stores, where the frozen class refuses
    them (and object.__setattr__ or a slot descriptor's __set__ per field costs four to seven times as much), and it
    is a `cls` again before anyone sees it."""
    assert cls.__bases__ == (object,), f"{cls.__name__}: a record with a base class is not built this way"
    return type(f"{cls.__name__}Unfrozen", (), {"__slots__": cls.__slots__})


def frozen_record(cls: type[T]) -> type[T]:
    """`@dataclass(frozen=True, slots=True)` with its __init__ written again to set each slot by a plain attribute
    store (`_unfrozen`), where the frozen __init__ calls object.__setattr__ by name per field: the same record at
    a fraction of the cost, for the classes the core builds once or more per command (Command, PartitionRecord,
    Decision, AuditRow, Applied, Handled). The parameters are the dataclass's own (order, defaults, default
    factories)."""
    cls = dataclass(frozen=True, slots=True)(cls)
    namespace: dict[str, Any] = {"_FACTORY": _FACTORY, "_cls": cls, "_unfrozen": _unfrozen(cls),
                                 "_set_class": object.__setattr__}
    params, body = [], []
    for f in fields(cls):
        assert f.init and not f.kw_only, f"{cls.__name__}.{f.name}: only plain fields are written again"
        value = f.name
        if f.default is not MISSING:
            namespace[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not MISSING:
            namespace[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_FACTORY")
            value = f"_factory_{f.name}() if {f.name} is _FACTORY else {f.name}"
        else:
            params.append(f.name)
        body.append(f"    self.{f.name} = {value}\n")
    assert not hasattr(cls, "__post_init__"), f"{cls.__name__}: a __post_init__ is not called"
    exec(f"def __init__(self, {', '.join(params)}):\n    _set_class(self, '__class__', _unfrozen)\n{''.join(body)}"
         "    self.__class__ = _cls\n", namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init  # type: ignore[misc]
    return cls


# A default factory's field left out of the call (dataclasses' own __init__ uses such a marker too).
_FACTORY = object()


@frozen_record
class Decision:
    """A LeaderAndIsr decision: the partition's leader and ISR after one controller write, and who gets it.
    `event_ts` (the source event's `ts`) is an addition to Kafka's fields; so are the KRaft partition's Eligible
    Leader Replicas (KIP-966) and last known ELR, empty unless the kraft rules run with ELR on, and the replicas'
    log directories (KIP-858)."""

    topic: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    leader_recovery_state: str
    is_new: bool
    recipients: tuple[int, ...]
    election: str | None
    cause: str
    cause_event_id: str
    source_offset: Long
    event_ts: str | None
    eligible_leader_replicas: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    # KRaft (KIP-858): each replica's log directory id, in the order of `replicas`; empty under the zk rules.
    directories: tuple[str, ...] = ()

    def evolve(self, **changes: object) -> Decision:
        """`evolve(self, **changes)`: a KRaft command settles its last decision's epochs and directories this way."""
        return evolve(self, **changes)


@cache
def _copier(cls: type) -> tuple[Callable[[Any, Mapping[str, object]], Any], frozenset[str]]:
    """A copy function for the frozen slotted dataclass `cls`, and its field names. The function is written out
    field by field, as dataclasses writes a class's __init__: each field is the change if there is one, else the
    record's value, set on the copy while it is unfrozen (`_unfrozen`). A loop over the fields did the same at twice
    the cost, and the core derives a record or two per command."""
    names = tuple(f.name for f in fields(cls))
    body = "".join(f"    new.{name} = changes['{name}'] if '{name}' in changes else record.{name}\n" for name in names)
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_unfrozen": _unfrozen(cls)}
    exec(f"def copy(record, changes):\n    new = _new(_unfrozen)\n{body}    new.__class__ = _cls\n    return new\n",
         namespace)
    return namespace["copy"], frozenset(names)


def evolve(record: T, **changes: object) -> T:
    """A copy of a frozen dataclass with `changes`, as dataclasses.replace builds it, without its per-call look at
    the fields and the frozen __init__. A name that is not a field raises AttributeError."""
    copy, names = _copier(type(record))
    if not names.issuperset(changes):
        raise AttributeError(f"{type(record).__name__} has no field {', '.join(sorted(set(changes) - names))}")
    return copy(record, changes)


@dataclass(frozen=True, slots=True)
class AgreementRow:
    """One observed decision of the real controller beside isrflow's in the same place
    (streaming.history.agreement.agreement_rows; agreement.jsonl's fields). `source_offset` is the controller's
    record's (isrflow's decision's where the controller wrote nothing); `differing` names the compared fields
    that differ; `controller` and `isrflow` are the compared fields of each side as a JSON object, null where
    that side wrote nothing."""

    topic: str
    partition: int
    source_offset: Long
    cause: str | None
    cause_event_id: str | None
    match: bool
    differing: tuple[str, ...]
    controller: str | None
    isrflow: str | None


@dataclass(frozen=True, slots=True)
class RequestRow:
    """One request the ZooKeeper-era controller sends to one broker for an event (statemachine.requests;
    requests.jsonl's fields and the requests table): LEADER_AND_ISR, UPDATE_METADATA or STOP_REPLICA, the `batch`-th
    batch of the event, and its partitions' states as a JSON list (LeaderAndIsr: leader, leader_epoch, isr,
    partition_epoch, replicas, adding_replicas, removing_replicas, is_new; UpdateMetadata: leader, leader_epoch,
    isr, partition_epoch, replicas; StopReplica: leader_epoch, delete)."""

    event_id: str
    event_type: str
    source_offset: Long
    controller_epoch: int
    batch: int
    request: str
    broker: int
    partition_count: int
    partitions: str


@frozen_record
class AuditRow:
    """One row per (event, partition) the controller handled; an event's cluster-level verdict has a null
    partition (and a null topic unless the event names one).

    Beyond the per-transition facts: `step` orders two rows of one event for one partition (an implicit
    failover, a bounce, a failed creation election); `action` is what the controller did for the partition
    (CONTROLLER_FAILOVER on a failover's rows, CLUSTER on an event's own cluster-level verdict);
    `broker_change` and `broker_epoch` are a BrokerChange's kind and epoch (an IsrChange's sender epoch);
    `controller_id` is the active controller when the row was decided (null when a failover did not name
    it); `event_controller_epoch` is the epoch the event itself carried (older than `controller_epoch` on a
    fenced event); `configs` are an AlterTopicConfig's changes (null: back to the cluster default)."""

    event_id: str
    event_type: str
    source_offset: Long
    step: int | None
    topic: str | None
    partition: int | None
    controller_epoch: int | None
    from_state: str | None
    to_state: str | None
    outcome: str
    error: str | None
    message: str | None
    leader_before: int | None
    leader_after: int | None
    leader_epoch_before: int | None
    leader_epoch_after: int | None
    isr_before: tuple[int, ...] | None
    isr_after: tuple[int, ...] | None
    partition_epoch_before: int | None
    partition_epoch_after: int | None
    election: str | None
    replica_states: dict[int, str] | None
    replicas_after: tuple[int, ...] | None
    leader_recovery_state_after: str | None
    broker_id: int | None
    principal: str | None
    event_ts: str | None
    action: str | None = None
    broker_change: str | None = None
    broker_epoch: Long | None = None  # int64 in Kafka: a KRaft broker epoch is a log offset
    controller_id: int | None = None
    event_controller_epoch: int | None = None
    configs: dict[str, str | None] | None = None


# -- derived row conversion ------------------------------------------------------------------------------

@dataclass(frozen=True)
class FieldType:
    """A field's column type in Spark's DDL words, and whether it may be null."""

    ddl: str
    nullable: bool
    kind: str  # "scalar", "tuple" or "map": how to convert a value to and from a row


_SCALARS: dict[Any, str] = {str: "string", int: "int", bool: "boolean", bytes: "binary"}


def _field_type(hint: Any) -> FieldType:
    nullable = False
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        nullable = True
        (hint,) = [a for a in args if a is not type(None)]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        return FieldType(args[1], nullable, "scalar")
    if origin is tuple:
        return FieldType(f"array<{_SCALARS[args[0]]}>", nullable, "tuple")
    if origin is dict:
        value = args[1]
        if typing.get_origin(value) in (typing.Union, types.UnionType):
            (value,) = [a for a in typing.get_args(value) if a is not type(None)]
        return FieldType(f"map<{_SCALARS[args[0]]},{_SCALARS[value]}>", nullable, "map")
    return FieldType(_SCALARS[hint], nullable, "scalar")


@cache
def field_types(cls: type) -> dict[str, FieldType]:
    """Each field of a record class, in order, with its column type (from the type hints)."""
    hints = typing.get_type_hints(cls, include_extras=True)
    return {f.name: _field_type(hints[f.name]) for f in fields(cls)}


def plain(value: Any) -> Any:
    """A value as a row holds it: an enum member as its value, anything else as itself."""
    # `_value_` is what an enum member's `value` property returns, without the property's Python-level call.
    return value._value_ if isinstance(value, Enum) else value


@dataclass(frozen=True)
class RowFields:
    """A record class's fields for `to_row`: all of them read at once, then grouped by how a value converts."""

    names: tuple[str, ...]
    values: Callable[[Any], tuple[Any, ...]]
    scalars: tuple[str, ...]
    tuples: tuple[str, ...]
    maps: tuple[str, ...]


@cache
def row_fields(cls: type) -> RowFields:
    """`cls`'s fields, one getter for all their values, and the names of each kind (scalar, tuple, map)."""
    types = field_types(cls)
    names = tuple(types)

    def kind(k: str) -> tuple[str, ...]:
        return tuple(name for name, ft in types.items() if ft.kind == k)

    return RowFields(names, operator.attrgetter(*names), kind("scalar"), kind("tuple"), kind("map"))


def to_row(record: Any) -> dict[str, Any]:
    """A record as a plain row: tuples as lists, maps as dicts, enum members as their values."""
    fields_ = row_fields(type(record))
    row = dict(zip(fields_.names, fields_.values(record), strict=True))
    for name in fields_.scalars:
        value = row[name]
        if isinstance(value, Enum):
            row[name] = value._value_
    for name in fields_.tuples:
        value = row[name]
        if value is not None:
            row[name] = [plain(v) for v in value]
    for name in fields_.maps:
        value = row[name]
        if value is not None:
            row[name] = {plain(k): plain(v) for k, v in value.items()}
    return row


def from_row(cls: type[T], row: Mapping[str, Any]) -> T:
    """A record from a plain row (extra columns, such as a table's batch_id, are ignored)."""
    values: dict[str, Any] = {}
    for name, ft in field_types(cls).items():
        value = row.get(name)
        if value is not None and ft.kind == "tuple":
            value = tuple(value)
        elif value is not None and ft.kind == "map":
            value = dict(value)
        values[name] = value
    return cls(**values)


# -- one vocabulary for reading the audit ---------------------------------------------------------------

def _int(value: Any) -> int:
    return -1 if value is None else int(value)


def audit_sort_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """Log order: by offset; an event's cluster-level row first, then its partitions by name; several rows of
    one event for one partition (an implicit failover, a bounce) by their `step`."""
    partition = row.get("partition")
    return (row["source_offset"], partition is not None, row.get("topic") or "", _int(partition),
            _int(row.get("step")))


def parse_ts(value: str | None) -> datetime | None:
    """An event's ISO-8601 `ts` as a UTC datetime (a naive one is taken as UTC); None when absent or unreadable."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class ObservedDecision:
    """A partition change the real controller wrote (a KRaft PartitionChangeRecord or PartitionRecord, with the
    epochs as KRaft's merge rules leave them), as `isrflow bridge` publishes it after the event that caused it:
    an observed row of the import (streaming/kraft/convert.py). Not an event: it changes no state and is
    compared with isrflow's decisions of its cause event. isrflow's addition to the contract."""

    type: ClassVar[str] = "ObservedDecision"
    topic: str
    partition: int
    leader: int  # -1: no leader
    isr: tuple[int, ...]
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    leader_recovery_state: str  # a LeaderRecoveryState's text
    eligible_leader_replicas: tuple[int, ...]
    last_known_elr: tuple[int, ...]
    source_offset: Long  # the metadata log offset of the controller's record
    cause: str
    cause_event_id: str | None  # None: no event explains the change
    decision: bool  # a new leader or a smaller ISR (what agreement compares)
    # KIP-858: each replica's log directory (addition: a bridge of an older isrflow wrote none).
    directories: tuple[str, ...] = ()

    def to_row(self) -> dict[str, Any]:
        """The observed row as the import writes it (observed.jsonl) and the observed table holds it."""
        return to_row(self)
