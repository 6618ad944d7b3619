"""Hostile input through `parse_event` and `Controller.handle`, in-process: Hypothesis-built events and
byte-level mutations of valid ones (bit flips, truncation, insertion, deletion, duplicated keys,
splicing, values swapped for huge integers, NaN, floats, lone surrogates, NUL), plus oversized and
deeply nested records. Nothing may raise; every bad record comes back as `Malformed` with a reason and
leaves the controller as it was; what the controller accepts fits the tables' column types.

`make test` runs ISRFLOW_FUZZ_INPUTS=10000 mutations (plus the Hypothesis examples), `make faults` 1,000,000.
"""

from __future__ import annotations

import json
import os
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas.events import EVENT_TYPES, Malformed, parse_event
from schemas.records import to_row
from schemas.tables import AUDIT, DECISION
from statemachine.controller import Controller
from streaming.infra.scenario import incident_scenario
from streaming.io.delta import arrow_table

pytestmark = [pytest.mark.faults]

INPUTS = int(os.environ.get("ISRFLOW_FUZZ_INPUTS", "10000"))
EXAMPLES = int(os.environ.get("ISRFLOW_FUZZ_EXAMPLES", "1000"))
SEED = int(os.environ.get("ISRFLOW_FUZZ_SEED", "20261122"))

VALID = incident_scenario().lines()[:-1]  # its last line is a truncated record
HOSTILE_VALUES: list[Any] = [
    2**31, 2**40, 2**63, 2**64, -(2**31) - 1, -1, 10**400, 1.5, 1e400, -0.0, True, None, "", "\x00", "\ud800",
    "é\u202e", [], {}, [[[[1]]]], {"a": {"b": [1, {"c": None}]}}, "x" * 10_000,
]
# JSON that Python's json.dumps cannot write: constants and literals as raw text.
HOSTILE_LITERALS = [b"NaN", b"Infinity", b"-Infinity", b"1e999", b"9" * 5000, b'"\\ud800"', b'"\\udfff\\u0000"',
                    b"-0", b"0x10", b"01", b'"\xff\xfe"', b"\xc0\xaf", b"[" * 3000 + b"]" * 3000]

BASE = Controller()
for offset, line in enumerate(VALID):
    BASE.handle(parse_event(line), offset)  # type: ignore[arg-type]
BASE_SNAPSHOT = BASE.snapshot()


class Fuzz:
    """Feeds records to one controller the way the engines do, checking the guarantees on each."""

    def __init__(self) -> None:
        self.controller = Controller()
        self.controller.restore(BASE_SNAPSHOT)
        self.inputs = self.malformed = self.accepted = 0
        self.reasons: dict[str, int] = {}

    def feed(self, raw: bytes | str) -> None:
        self.inputs += 1
        if self.inputs % 500 == 0:  # a fresh copy now and then: the state stays the size of a real cluster's
            self.controller.restore(BASE_SNAPSHOT)
        event = parse_event(raw)
        if isinstance(event, Malformed):
            assert isinstance(event.reason, str) and event.reason, raw
            assert len(event.reason) < 1000, "a quarantine reason must not carry the whole record"
            self.malformed += 1
            key = event.reason.split(":")[0].split("'")[0][:40]
            self.reasons[key] = self.reasons.get(key, 0) + 1
            return
        self.accepted += 1
        partitions = dict(self.controller.partitions)
        handled = self.controller.handle(event, self.inputs)
        audit = [{**to_row(h.applied.audit), "batch_id": 0} for h in handled]
        decisions = [to_row(d) for h in handled for d in h.applied.decisions]
        # The Delta/Kafka boundary: int32/int64 columns, UTF-8 strings; a bad value here would fail a
        # whole micro-batch's write instead of one record's quarantine.
        arrow_table(audit, AUDIT)
        arrow_table(decisions, DECISION)
        for d in decisions:
            json.dumps(d, default=str).encode("utf-8")
        if all(a["outcome"] == "REJECTED" for a in audit):
            assert self.controller.partitions == partitions, "a rejected event changed partition state"

    def feed_malformed(self, raw: bytes | str) -> None:
        """A record that must be quarantined, and must leave the controller exactly as it was."""
        before = self.controller.snapshot()
        malformed = self.malformed
        self.feed(raw)
        assert self.malformed == malformed + 1, f"accepted: {raw[:200]!r}"
        assert self.controller.snapshot() == before


def _object(raw: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) and obj else None


def mutate(rng: random.Random, raw: bytes) -> bytes:
    if not raw:
        return rng.randbytes(rng.randint(0, 4))
    data = bytearray(raw)
    parsed = _object(raw)
    op = rng.randrange(11 if parsed is not None else 5)  # the structural ones need an object to work on
    if op == 0:  # bit flips
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
    elif op == 1:  # truncation
        del data[rng.randrange(len(data) + 1):]
    elif op == 2:  # insertion of random bytes
        i = rng.randrange(len(data) + 1)
        data[i:i] = rng.randbytes(rng.randint(1, 8))
    elif op == 3:  # deletion of a range
        i = rng.randrange(len(data))
        del data[i:i + rng.randint(1, 16)]
    elif op == 4:  # splicing two events
        other = rng.choice(VALID).encode()
        data = data[:rng.randrange(len(data) + 1)] + other[rng.randrange(len(other) + 1):]
    elif parsed is None:
        raise AssertionError(op)
    elif op == 5:  # a key repeated with a hostile value (json keeps the last one)
        key = rng.choice(sorted(parsed))
        extra = json.dumps(rng.choice(HOSTILE_VALUES)).encode()
        data = bytearray(raw[:-1] + b',"' + key.encode() + b'":' + extra + b"}")
    elif op in (6, 7):  # one field's value replaced by a hostile one
        obj = dict(parsed)
        obj[rng.choice(sorted(obj))] = rng.choice(HOSTILE_VALUES)
        data = bytearray(json.dumps(obj).encode())
    elif op == 8:  # a number or string token replaced by a literal json.dumps never writes
        text = raw.decode("utf-8", "replace")
        spots = [i for i, c in enumerate(text) if c in ":,[" and i + 1 < len(text)]
        i = rng.choice(spots) + 1
        j = i
        while j < len(text) and text[j] not in ",]}":
            j += 1
        data = bytearray(text[:i].encode() + rng.choice(HOSTILE_LITERALS) + text[j:].encode())
    elif op == 9:  # a field dropped
        obj = dict(parsed)
        obj.pop(rng.choice(sorted(obj)))
        data = bytearray(json.dumps(obj).encode())
    else:  # the type swapped: the right fields for the wrong event
        obj = {**parsed, "type": rng.choice(EVENT_TYPES)}
        data = bytearray(json.dumps(obj).encode())
    return bytes(data)


def test_byte_level_mutations_of_valid_events(capsys: Any) -> None:
    rng = random.Random(SEED)
    fuzz = Fuzz()
    seeds = [line.encode() for line in VALID]
    while fuzz.inputs < INPUTS:
        raw = rng.choice(seeds)
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            raw = mutate(rng, raw)
        fuzz.feed(raw)
    with capsys.disabled():
        print(f"\n[hostile] {fuzz.inputs} mutated records: {fuzz.malformed} quarantined, {fuzz.accepted} accepted")
    # Both paths exercised: mostly quarantine, and enough accepted events to reach the state machine.
    assert fuzz.malformed > fuzz.inputs // 2 and fuzz.accepted > fuzz.inputs // 50


def test_oversized_deeply_nested_and_out_of_range_records() -> None:
    fuzz = Fuzz()
    event = json.loads(VALID[-3])
    ten_mb = json.dumps({**event, "padding": "x" * 10 * 1024 * 1024}).encode()
    isr = next(json.loads(v) for v in VALID if '"IsrChange"' in v)
    records: list[bytes | str] = [
        ten_mb, b"x" * 10 * 1024 * 1024, b"[" * 100_000, b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 100_000, json.dumps({**isr, "isr": [[[]]]}).encode(),
        json.dumps({**isr, "partition": 2**40}).encode(), json.dumps({**isr, "leader_epoch": 2**31}).encode(),
        json.dumps({**isr, "broker_epoch": 2**63}).encode(), json.dumps({**isr, "isr": [1, 2**33]}).encode(),
        VALID[-3][:-1].encode() + b',"controller_epoch":' + b"7" * 4400 + b"}",
        VALID[-3].replace('"controller_epoch":', '"controller_epoch":NaN,"x":'),
        VALID[-3].replace('"controller_epoch":', '"controller_epoch":Infinity,"x":'),
        json.dumps({**isr, "topic": "\ud800"}), json.dumps({**isr, "topic": "a\udc00b"}),
        VALID[-3][:-1] + ',"controller_epoch":"2"}', VALID[-3][:-1] + ',"type":"Nope"}',
        json.dumps({**isr, "partition": 1.0}), json.dumps({**isr, "isr": [True]}),
        json.dumps({"type": "CreateTopic", "event_id": "c", "ts": "t", "controller_epoch": 9,
                    "topic": "n", "assignment": {"\u00b2": [1, 2]}}),
        json.dumps({"type": "CreateTopic", "event_id": "c", "ts": "t", "controller_epoch": 9,
                    "topic": "n", "assignment": {str(2**31): [1, 2]}}),
        json.dumps({"type": "CreateTopic", "event_id": "c", "ts": "t", "controller_epoch": 9,
                    "topic": "n", "assignment": {"0": [1, 2**31]}}),
        json.dumps({"type": "AlterTopicConfig", "event_id": "c", "ts": "t", "controller_epoch": 9,
                    "topic": "n", "configs": {"\ud800": "x"}}),
        "\x00", b"\x00" * 100, b"", b"null", b"[]", b'"a"', b"1e999", b"9" * 10_000,
    ]
    for raw in records:
        fuzz.feed_malformed(raw)
    assert sum(n for reason, n in fuzz.reasons.items() if reason.startswith("record of")) == 2
    # NUL inside a string is valid JSON and valid UTF-8: accepted (a topic name Kafka itself would refuse is
    # the state machine's business), and it must still reach the tables intact.
    fuzz.feed(json.dumps({**isr, "event_id": "nul\x00id", "topic": "t\x00"}))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12)
FIELD_NAMES = ["broker_id", "change", "broker_epoch", "topic", "partition", "leader_epoch", "partition_epoch",
               "isr", "assignment", "partitions", "election_type", "configs", "controller_id",
               "leader_recovery_state", "principal", "replicas"]


@st.composite
def events(draw: Any) -> dict[str, Any]:
    """Event-shaped objects: a real type and header, then real field names with any JSON value, or the
    values of a valid event of that type with one of them swapped."""
    if draw(st.booleans()):
        obj = json.loads(draw(st.sampled_from(VALID)))
        names = sorted(obj) + FIELD_NAMES
    else:
        obj = {"type": draw(st.sampled_from(EVENT_TYPES) | st.text(max_size=12)),
               "event_id": draw(st.text(max_size=8) | json_values), "ts": draw(st.text(max_size=8)),
               "controller_epoch": draw(st.integers(min_value=-2, max_value=2**65) | json_values)}
        names = FIELD_NAMES
    for name in draw(st.lists(st.sampled_from(names), max_size=3, unique=True)):
        obj[name] = draw(json_values | st.integers(min_value=-(2**70), max_value=2**70))
    return obj


COUNT = {"hypothesis": 0}


@settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(obj=events(), as_text=st.booleans())
def test_hypothesis_events(obj: dict[str, Any], as_text: bool) -> None:
    COUNT["hypothesis"] += 1
    fuzz = FUZZ
    try:
        text = json.dumps(obj)  # NaN/Infinity written as Python writes them: not JSON
    except (ValueError, RecursionError):
        return
    fuzz.feed(text if as_text else text.encode("utf-8", "surrogatepass"))


@settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(raw=st.binary(max_size=300) | st.text(max_size=300))
def test_hypothesis_arbitrary_bytes_and_text(raw: bytes | str) -> None:
    COUNT["hypothesis"] += 1
    FUZZ.feed(raw)


FUZZ = Fuzz()


def test_hostile_input_count(capsys: Any) -> None:
    """Runs after the tests above (file order): the figure docs/reliability.md quotes."""
    with capsys.disabled():
        print(f"\n[hostile] {COUNT['hypothesis']} Hypothesis examples through parse + controller: "
              f"{FUZZ.malformed} quarantined, {FUZZ.accepted} accepted; mutated records: {INPUTS}")
    assert COUNT["hypothesis"] >= 2 * EXAMPLES * 0.9
