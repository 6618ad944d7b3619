"""The field validators of the controller event log's records (schemas.events): each checks one field's shape
and returns it normalised, or raises `Invalid` with the reason a `Malformed` record carries."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from functools import cache
from typing import Any, TypeVar

from schemas.values import DirectoryAssignment, LeaderRecoveryState, Move, PartitionRef, ReplicaAssignment


class Invalid(Exception):
    pass


# Kafka's ids and epochs are int32 (broker epochs int64), and so are the tables' columns: a larger value
# must stop here, not fail the Delta write of a whole micro-batch later.
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def non_negative_int(value: Any, name: str, maximum: int = INT32_MAX) -> int:
    if type(value) is int and 0 <= value <= maximum:  # the usual case, checked at once
        return value
    # bool is an int in Python; a JSON true is not a broker id.
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(f"field '{name}' must be an integer, got {type(value).__name__}")
    if value < 0:
        raise Invalid(f"field '{name}' must be >= 0, got {short(value)}")
    if value > maximum:
        raise Invalid(f"field '{name}' must be <= {maximum}, got {short(value)}")
    return value


def leader(value: Any, name: str) -> int:
    """A broker id, or -1 for none."""
    return -1 if value == -1 and not isinstance(value, bool) else non_negative_int(value, name)


def long(value: Any, name: str) -> int:
    return non_negative_int(value, name, INT64_MAX)


def short(value: Any) -> str:
    """A value for a quarantine reason: never the whole of a huge one."""
    if isinstance(value, int) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    text = str(value)
    return text if len(text) <= 80 else text[:80] + "..."


def string(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise Invalid(f"field '{name}' must be a string, got {type(value).__name__}")
    if value.isascii():  # the usual case, and no surrogate is ASCII
        return value
    try:  # a JSON escape can make a lone surrogate, which no UTF-8 writer (Kafka, Parquet) accepts
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Invalid(f"field '{name}' is not valid unicode: {exc.reason}") from None
    return value


def one_of(value: Any, name: str, allowed: tuple[str, ...]) -> str:
    string(value, name)
    if value not in allowed:
        raise Invalid(f"field '{name}' must be one of {', '.join(allowed)}, got '{short(value)}'")
    return value


def int_list(value: Any, name: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise Invalid(f"field '{name}' must be a list of integers")
    if all(type(v) is int and 0 <= v <= INT32_MAX for v in value):  # the usual case, checked at once
        return tuple(value)
    return tuple(non_negative_int(v, name) for v in value)


def broker_list(value: Any, name: str) -> tuple[int, ...]:
    """A replica list as written by an admin tool: int32 integers, any sign (a negative id is a Kafka
    refusal, INVALID_REPLICA_ASSIGNMENT, not unreadable input)."""
    if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int)
                                          or not -INT32_MAX - 1 <= v <= INT32_MAX for v in value):
        raise Invalid(f"field '{name}' must be a list of integer broker ids")
    return tuple(value)


def assignment(value: Any, name: str) -> dict[str, tuple[int, ...]]:
    if not isinstance(value, dict):
        raise Invalid(f"field '{name}' must be an object of partition id -> replica list")
    out: dict[str, tuple[int, ...]] = {}
    for key, replicas in value.items():
        # ASCII digits only: str.isdigit() also accepts '²', which int() refuses.
        if not (key.isascii() and key.isdigit() and int(key) <= INT32_MAX):
            raise Invalid(f"field '{name}' has a partition id that is not a non-negative integer: "
                           f"'{short(key.encode('utf-8', 'backslashreplace').decode())}'")
        out[str(int(key))] = broker_list(replicas, name)
    return out


def broker_epochs(value: Any, name: str) -> dict[int, int]:
    if not isinstance(value, dict):
        raise Invalid(f"field '{name}' must be an object of broker id -> broker epoch")
    out: dict[int, int] = {}
    for key, epoch in value.items():
        if not (key.isascii() and key.isdigit() and int(key) <= INT32_MAX):
            raise Invalid(f"field '{name}' has a broker id that is not a non-negative integer: "
                           f"'{short(key.encode('utf-8', 'backslashreplace').decode())}'")
        out[int(key)] = long(epoch, f"{name}.{key}")
    return out


def boolean(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"field '{name}' must be true or false, got {short(value)}")
    return value


def configs(value: Any, name: str, allow_null: bool) -> dict[str, str | None]:
    if not isinstance(value, dict):
        raise Invalid(f"field '{name}' must be an object of config name -> value")
    for key, v in value.items():
        string(key, f"{name} name")
        if v is None and allow_null:
            continue
        if isinstance(v, str):
            string(v, f"{name}.{key}")
        else:
            raise Invalid(f"field '{name}' value for '{key}' must be a string{' or null' if allow_null else ''}")
    return dict(value)


# Feature levels are int16 (FeatureLevelRecord.featureLevel).
INT16_MAX = 2**15 - 1
# The one level below 0: metadata.version -1, a ZooKeeper-era inter.broker.protocol.version from 2.7-IV2 to 3.0-IV0
# (statemachine.features.IBP_2_7_IV2).
_ALTER_ISR_PROTOCOL = ("metadata.version", -1)


def feature_levels(value: Any, name: str) -> dict[str, int]:
    if not isinstance(value, dict) or not value:
        raise Invalid(f"field '{name}' must be a non-empty object of feature name -> level")
    for key, level in value.items():
        if not string(key, f"{name} name"):
            raise Invalid(f"field '{name}' has an empty feature name")
        if (key, level) != _ALTER_ISR_PROTOCOL or isinstance(level, bool):
            non_negative_int(level, f"{name}.{key}", INT16_MAX)
    return dict(value)


def string_list(value: Any, name: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise Invalid(f"field '{name}' must be a list of strings")
    return tuple(string(v, name) for v in value)


MISSING = object()


def required(obj: Mapping[str, Any], key: str, where: str = "event") -> Any:
    value = obj.get(key, MISSING)
    if value is MISSING:
        raise Invalid(f"missing field '{key}'" + ("" if where == "event" else f" in '{where}'"))
    return value


# -- structured values: partition refs, assignments, recovery states ------------------------------------

E = TypeVar("E", bound=StrEnum)


@cache
def _members(kind: type[E]) -> dict[str, E]:
    return {member.value: member for member in kind}


def member(value: Any, name: str, kind: type[E]) -> E:
    """The member of the StrEnum `kind` whose value `value` is; else `one_of`'s reason."""
    found = _members(kind).get(value) if isinstance(value, str) else None
    return kind(one_of(value, name, tuple(kind))) if found is None else found


def recovery_state(value: Any, name: str) -> LeaderRecoveryState:
    return member(value, name, LeaderRecoveryState)


def partition_refs(value: Any, name: str, with_replicas: bool) -> tuple[PartitionRef | Move, ...]:
    if not isinstance(value, list):
        raise Invalid(f"field '{name}' must be a list of {{topic, partition}} objects")
    refs: list[PartitionRef | Move] = []
    for item in value:
        if not isinstance(item, dict):
            raise Invalid(f"field '{name}' must be a list of {{topic, partition}} objects")
        topic = string(required(item, "topic", name), f"{name}.topic")
        partition = non_negative_int(required(item, "partition", name), f"{name}.partition")
        if with_replicas:
            replicas = required(item, "replicas", name)
            refs.append(Move(topic, partition,
                             None if replicas is None else broker_list(replicas, f"{name}.replicas")))
        else:
            refs.append(PartitionRef(topic, partition))
    return tuple(refs)


def replica_assignments(value: Any, name: str) -> tuple[ReplicaAssignment, ...]:
    if not isinstance(value, list) or not all(isinstance(a, dict) for a in value):
        raise Invalid(f"field '{name}' must be a list of {{topic, partition, replicas, adding_replicas, "
                      f"removing_replicas}} objects")
    return tuple(ReplicaAssignment(string(required(a, "topic", name), f"{name}.topic"),
                                   non_negative_int(required(a, "partition", name), f"{name}.partition"),
                                   *(int_list(required(a, f, name), f"{name}.{f}")
                                     for f in ("replicas", "adding_replicas", "removing_replicas")))
                 for a in value)


def directory_assignments(value: Any, name: str) -> tuple[DirectoryAssignment, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(a, dict) for a in value):
        raise Invalid(f"field '{name}' must be a non-empty list of {{topic, partition, directory}} objects")
    return tuple(DirectoryAssignment(topic=string(required(a, "topic", name), f"{name}.topic"),
                                     partition=non_negative_int(required(a, "partition", name), f"{name}.partition"),
                                     directory=string(required(a, "directory", name), f"{name}.directory"))
                 for a in value)


def replicas_by_broker(value: Any, name: str) -> dict[int, tuple[PartitionRef, ...]]:
    if not isinstance(value, dict):
        raise Invalid(f"field '{name}' must be an object of broker id -> [{{topic, partition}}]")
    ids = broker_epochs(dict.fromkeys(value, 0), name)  # the keys checked as broker ids
    return {b: partition_refs(value[str(b)], f"{name}.{b}", with_replicas=False)  # type: ignore[misc]
            for b in ids}
