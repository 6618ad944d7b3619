"""The controller event log's records (docs/contract.md, section 1): parsing and validation.

`parse_event` never raises on bad input: it returns either a `ControllerEvent` or a `Malformed` with a
reason, which the caller quarantines with the record's offset. Only the shape is checked here; whether
Kafka's controller would accept the event is the state machine's business.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

BROKER_CHANGES = ("STARTUP", "FAILURE", "CONTROLLED_SHUTDOWN")
ELECTION_TYPES = ("PREFERRED", "UNCLEAN")
LEADER_RECOVERY_STATES = ("RECOVERED", "RECOVERING")


@dataclass(frozen=True)
class ControllerEvent:
    type: str
    event_id: str
    controller_epoch: int
    ts: str | None
    principal: str | None
    fields: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        body = {"type": self.type, "event_id": self.event_id, "ts": self.ts,
                "controller_epoch": self.controller_epoch, **self.fields}
        if self.principal is not None:
            body["principal"] = self.principal
        return json.dumps(body, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Malformed:
    reason: str


class _Invalid(Exception):
    pass


def _non_negative_int(value: Any, name: str) -> int:
    # bool is an int in Python; a JSON true is not a broker id.
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Invalid(f"field '{name}' must be an integer, got {type(value).__name__}")
    if value < 0:
        raise _Invalid(f"field '{name}' must be >= 0, got {value}")
    return value


def _string(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"field '{name}' must be a string, got {type(value).__name__}")
    return value


def _one_of(value: Any, name: str, allowed: tuple[str, ...]) -> str:
    _string(value, name)
    if value not in allowed:
        raise _Invalid(f"field '{name}' must be one of {', '.join(allowed)}, got '{value}'")
    return value


def _int_list(value: Any, name: str) -> list[int]:
    if not isinstance(value, list):
        raise _Invalid(f"field '{name}' must be a list of integers")
    return [_non_negative_int(v, name) for v in value]


def _broker_list(value: Any, name: str) -> list[int]:
    """A replica list as written by an admin tool: integers, any sign (a negative id is a Kafka
    refusal, INVALID_REPLICA_ASSIGNMENT, not unreadable input)."""
    if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
        raise _Invalid(f"field '{name}' must be a list of integer broker ids")
    return list(value)


def _assignment(value: Any, name: str) -> dict[str, list[int]]:
    if not isinstance(value, dict):
        raise _Invalid(f"field '{name}' must be an object of partition id -> replica list")
    out: dict[str, list[int]] = {}
    for key, replicas in value.items():
        if not key.isdigit():
            raise _Invalid(f"field '{name}' has a partition id that is not a non-negative integer: '{key}'")
        out[str(int(key))] = _broker_list(replicas, name)
    return out


def _configs(value: Any, name: str, allow_null: bool) -> dict[str, str | None]:
    if not isinstance(value, dict):
        raise _Invalid(f"field '{name}' must be an object of config name -> value")
    for key, v in value.items():
        if v is None and allow_null:
            continue
        if not isinstance(v, str):
            raise _Invalid(f"field '{name}' value for '{key}' must be a string{' or null' if allow_null else ''}")
    return dict(value)


def _partition_refs(value: Any, name: str, with_replicas: bool) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise _Invalid(f"field '{name}' must be a list of {{topic, partition}} objects")
    refs = []
    for item in value:
        if not isinstance(item, dict):
            raise _Invalid(f"field '{name}' must be a list of {{topic, partition}} objects")
        ref: dict[str, Any] = {"topic": _string(_required(item, "topic", name), f"{name}.topic"),
                               "partition": _non_negative_int(_required(item, "partition", name),
                                                              f"{name}.partition")}
        if with_replicas:
            replicas = _required(item, "replicas", name)
            ref["replicas"] = None if replicas is None else _broker_list(replicas, f"{name}.replicas")
        refs.append(ref)
    return refs


_MISSING = object()


def _required(obj: Mapping[str, Any], key: str, where: str = "event") -> Any:
    value = obj.get(key, _MISSING)
    if value is _MISSING:
        raise _Invalid(f"missing field '{key}'" + ("" if where == "event" else f" in '{where}'"))
    return value


# Per type: field name -> validator. Validators return the normalised value.
_FIELDS: dict[str, dict[str, Any]] = {
    "BrokerChange": {
        "broker_id": _non_negative_int,
        "change": lambda v, n: _one_of(v, n, BROKER_CHANGES),
        "broker_epoch": _non_negative_int,
    },
    "IsrChange": {
        "topic": _string,
        "partition": _non_negative_int,
        "broker_id": _non_negative_int,
        "broker_epoch": _non_negative_int,
        "leader_epoch": _non_negative_int,
        "partition_epoch": _non_negative_int,
        "isr": _int_list,
    },
    "CreateTopic": {"topic": _string, "assignment": _assignment},
    "CreatePartitions": {"topic": _string, "assignment": _assignment},
    "DeleteTopic": {"topic": _string},
    "ReassignPartitions": {"partitions": lambda v, n: _partition_refs(v, n, with_replicas=True)},
    "ElectLeaders": {"election_type": lambda v, n: _one_of(v, n, ELECTION_TYPES)},
    "AlterTopicConfig": {"topic": _string, "configs": lambda v, n: _configs(v, n, allow_null=True)},
    "ControllerChange": {"controller_id": _non_negative_int},
    "LeaderImbalanceCheck": {},
}

# Optional fields: name -> (validator, default).
_OPTIONAL: dict[str, dict[str, Any]] = {
    "IsrChange": {"leader_recovery_state": (lambda v, n: _one_of(v, n, LEADER_RECOVERY_STATES), "RECOVERED")},
    "CreateTopic": {"configs": (lambda v, n: _configs(v, n, allow_null=False), {})},
    "ElectLeaders": {"partitions": (lambda v, n: None if v is None else _partition_refs(v, n, False), None)},
}

EVENT_TYPES = tuple(_FIELDS)


def parse_event(raw: bytes | str | None) -> ControllerEvent | Malformed:
    """Read one record of the event log. Bad input comes back as `Malformed(reason)`, never raised."""
    if raw is None:
        return Malformed("empty record (null value)")
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes | bytearray) else raw
        obj = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return Malformed(f"not JSON: {exc}")
    if not isinstance(obj, dict):
        return Malformed(f"not a JSON object: {type(obj).__name__}")
    try:
        return _validate(obj)
    except _Invalid as exc:
        return Malformed(str(exc))


def _validate(obj: Mapping[str, Any]) -> ControllerEvent:
    event_type = _string(_required(obj, "type"), "type")
    if event_type not in _FIELDS:
        raise _Invalid(f"unknown event type '{event_type}' (known: {', '.join(EVENT_TYPES)})")
    event_id = _string(_required(obj, "event_id"), "event_id")
    if not event_id:
        raise _Invalid("field 'event_id' must not be empty")
    ts = _string(_required(obj, "ts"), "ts")
    controller_epoch = _non_negative_int(_required(obj, "controller_epoch"), "controller_epoch")
    principal = obj.get("principal")
    if principal is not None:
        _string(principal, "principal")
    fields: dict[str, Any] = {}
    for name, validate in _FIELDS[event_type].items():
        fields[name] = validate(_required(obj, name), name)
    for name, (validate, default) in _OPTIONAL.get(event_type, {}).items():
        fields[name] = validate(obj[name], name) if name in obj else default
    return ControllerEvent(event_type, event_id, controller_epoch, ts, principal, fields)
