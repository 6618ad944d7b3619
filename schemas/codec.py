"""Records as JSON, derived from their dataclass fields and type hints, never written per column.

Used wherever a record leaves the process: the state store (one binary column per partition), the silver
command column, the operator's packed output, the sequencer's snapshots. Names, not positions: a field
added with a default reads old JSON; an unknown name is ignored; a None that is the field's default is left
out. Enums travel as their values, tuples and
sets as lists (sets sorted), mappings as JSON objects (keys as text, converted back from the type hint).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

Convert = Callable[[Any], Any]


def _identity(value: Any) -> Any:
    return value


def _is_optional(tp: Any) -> tuple[bool, Any]:
    """(True, X) for `X | None`; (False, tp) otherwise."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return True, args[0]
        return True, Any  # a wider union: values pass as they are
    return False, tp


def _none_or(tp: Any, build: Callable[[Any], Convert]) -> Convert:
    """`build(X)` for `X | None`, letting None through (JSON's null); `build(tp)` otherwise."""
    optional, tp = _is_optional(tp)
    convert = build(tp)
    if not optional or convert is _identity:
        return convert
    return lambda v: None if v is None else convert(v)


@cache
def encoder(tp: Any) -> Convert:
    """A function turning a value of type `tp` into JSON-able data."""
    return _none_or(tp, _encoder)


def _encoder(tp: Any) -> Convert:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        # A None that is also the field's default is left out: smaller rows, and decoding restores it.
        fields = [(f.name, encoder(hints[f.name]), f.default is None) for f in dataclasses.fields(tp)]

        def encode(v: Any) -> dict[str, Any]:
            out = {}
            for name, enc, skip_none in fields:
                value = getattr(v, name)
                if value is not None or not skip_none:
                    out[name] = enc(value)
            return out

        return encode
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return lambda v: v._value_  # the value property's own attribute, without its Python call
    if origin in (tuple, list) or tp in (tuple, list):
        item = encoder(args[0]) if args else encode_any
        if item is _identity:
            return list
        return lambda v: [item(x) for x in v]
    if origin in (frozenset, set) or tp in (frozenset, set):
        item = encoder(args[0]) if args else encode_any
        return lambda v: sorted(item(x) for x in v)
    if origin in (dict, Mapping) or tp is dict:
        key, value = (encoder(args[0]), encoder(args[1])) if args else (encode_any, encode_any)
        return lambda v: {str(key(k)): value(x) for k, x in v.items()}
    if tp in (int, str, bool, float):
        return _identity
    return encode_any


def encode_any(value: Any) -> Any:
    """Without a type hint (`Any`): by the value's own type."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value._value_ if isinstance(value, enum.Enum) else value
    if isinstance(value, enum.Enum):
        return value._value_
    if dataclasses.is_dataclass(value):
        return encoder(type(value))(value)
    if isinstance(value, Mapping):
        return {str(encode_any(k)): encode_any(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(encode_any(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [encode_any(v) for v in value]
    return value


@cache
def decoder(tp: Any) -> Convert:
    """The inverse of `encoder(tp)`."""
    return _none_or(tp, _decoder)


def _decoder(tp: Any) -> Convert:
    # The hot path decodes a command and a record per partition per micro-batch: fields whose JSON value
    # already is the value (text, numbers, booleans) cost no call.
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        known = frozenset(f.name for f in dataclasses.fields(tp) if f.init)
        convert = [(name, fn) for name in known if (fn := decoder(hints[name])) is not _identity]

        def decode(d: dict[str, Any]) -> Any:
            kw = dict(d) if d.keys() <= known else {k: v for k, v in d.items() if k in known}
            for name, fn in convert:
                if name in kw:
                    kw[name] = fn(kw[name])
            return tp(**kw)

        return decode
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        members = {m.value: m for m in tp}

        def member(v: Any) -> Any:
            try:
                return members[v]
            except (KeyError, TypeError):
                return tp(v)  # Enum's own lookup and error for anything else

        return member
    if origin is tuple or tp is tuple:
        item = decoder(args[0]) if args else _identity
        return tuple if item is _identity else lambda v: tuple(item(x) for x in v)
    if origin is list or tp is list:
        item = decoder(args[0]) if args else _identity
        return list if item is _identity else lambda v: [item(x) for x in v]
    if origin in (frozenset, set) or tp in (frozenset, set):
        item = decoder(args[0]) if args else _identity
        kind = frozenset if (origin or tp) is frozenset else set
        return kind if item is _identity else lambda v: kind(item(x) for x in v)
    if origin in (dict, Mapping) or tp is dict:
        # A JSON object's keys are text: an int key is converted back.
        key = (int if args[0] is int else decoder(args[0])) if args else _identity
        value = decoder(args[1]) if args else _identity
        return lambda v: {key(k): value(x) for k, x in v.items()}
    return _identity  # int, str, bool, float: JSON's own value


# One encoder for every call: json.dumps with separators builds a new JSONEncoder each time.
compact: Callable[[Any], str] = json.JSONEncoder(separators=(",", ":")).encode


def dumps(value: Any, tp: Any = None) -> str:
    """`value` (of type `tp`, or by its own type) as compact JSON text."""
    return compact(encode_any(value) if tp is None else encoder(tp)(value))


def loads(text: str | bytes, tp: Any) -> Any:
    return decoder(tp)(json.loads(text))
