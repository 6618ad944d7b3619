"""parse_event: bad input is Malformed with a reason, never an exception; well-formed events parse into their typed
class.

JSON events in (through `parse_event`), decisions and audit rows out (through `Controller.handle`), for the
triggers of docs/semantics.md."""

from __future__ import annotations

import json

import pytest

from schemas.events import ControllerEvent, Malformed, parse_event
from statemachine.states import PartitionState, ReplicaState

from .cluster import UNCLEAN, event_json

P = PartitionState
R = ReplicaState


# =====================================================================================================
# parse_event: bad input is Malformed with a reason, never an exception
# =====================================================================================================

def envelope(event_type: str = "BrokerChange", **fields: object) -> dict:
    body = {"type": event_type, "event_id": "e-1", "ts": "2024-05-01T12:00:00Z", "controller_epoch": 3}
    if event_type == "BrokerChange":
        body |= {"broker_id": 1, "change": "STARTUP", "broker_epoch": 10}
    body |= fields
    return body


def without(body: dict, key: str) -> dict:
    return {k: v for k, v in body.items() if k != key}


MALFORMED: dict[str, tuple[object, str]] = {
    "null record": (None, "empty"),
    "not JSON": ("{not json", "not JSON"),
    "truncated JSON": (b'{"type": "BrokerChange"', "not JSON"),
    "not UTF-8": (b"\xff\xfe{}", "not JSON"),
    "byte order mark": (b"\xef\xbb\xbf" + json.dumps(envelope()).encode(), "not JSON: Unexpected UTF-8 BOM"),
    "lone surrogate": (json.dumps(envelope(event_id="\ud800")), "'event_id' is not valid unicode"),
    "JSON array": ("[1, 2]", "not a JSON object"),
    "JSON number": ("42", "not a JSON object"),
    "JSON string": ('"BrokerChange"', "not a JSON object"),
    "unknown type": (envelope("BrokerExplosion"), "unknown event type 'BrokerExplosion'"),
    "type not a string": (envelope() | {"type": 7}, "'type'"),
    "missing type": (without(envelope(), "type"), "missing field 'type'"),
    "missing event_id": (without(envelope(), "event_id"), "missing field 'event_id'"),
    "empty event_id": (envelope(event_id=""), "'event_id'"),
    "missing ts": (without(envelope(), "ts"), "missing field 'ts'"),
    "missing controller_epoch": (without(envelope(), "controller_epoch"), "missing field 'controller_epoch'"),
    "missing broker_id": (without(envelope(), "broker_id"), "missing field 'broker_id'"),
    "broker_id as string": (envelope(broker_id="1"), "'broker_id' must be an integer"),
    "broker_id as float": (envelope(broker_id=1.0), "'broker_id' must be an integer"),
    "broker_id as bool": (envelope(broker_id=True), "'broker_id' must be an integer"),
    "controller_epoch as bool": (envelope(controller_epoch=False), "'controller_epoch' must be an integer"),
    "negative broker id": (envelope(broker_id=-1), "'broker_id' must be >= 0"),
    "negative controller epoch": (envelope(controller_epoch=-2), "'controller_epoch' must be >= 0"),
    "unknown change": (envelope(change="REBOOT"), "'change' must be one of"),
    "principal not a string": (envelope(principal=5), "'principal'"),
    "isr not a list": (envelope("IsrChange", topic="t", partition=0, broker_id=1, broker_epoch=1, leader_epoch=0,
                                partition_epoch=0, isr="1,2"), "'isr'"),
    "isr with bool": (envelope("IsrChange", topic="t", partition=0, broker_id=1, broker_epoch=1, leader_epoch=0,
                               partition_epoch=0, isr=[1, True]), "'isr' must be an integer"),
    "unknown recovery state": (envelope("IsrChange", topic="t", partition=0, broker_id=1, broker_epoch=1,
                                        leader_epoch=0, partition_epoch=0, isr=[1], leader_recovery_state="DONE"),
                               "'leader_recovery_state'"),
    "topic not a string": (envelope("DeleteTopic", topic=3), "'topic' must be a string"),
    "assignment not an object": (envelope("CreateTopic", topic="t", assignment=[[1, 2]]), "'assignment'"),
    "assignment key not a partition id": (envelope("CreateTopic", topic="t", assignment={"a": [1]}),
                                          "'assignment'"),
    "assignment replicas with bool": (envelope("CreateTopic", topic="t", assignment={"0": [True]}),
                                      "'assignment'"),
    "config value not a string": (envelope("CreateTopic", topic="t", assignment={"0": [1]},
                                           configs={UNCLEAN: True}), "'configs'"),
    "config null at creation": (envelope("CreateTopic", topic="t", assignment={"0": [1]}, configs={UNCLEAN: None}),
                                "'configs'"),
    "reassignment without replicas": (envelope("ReassignPartitions", partitions=[{"topic": "t", "partition": 0}]),
                                      "missing field 'replicas'"),
    "reassignment partition as bool": (envelope("ReassignPartitions",
                                                partitions=[{"topic": "t", "partition": False, "replicas": [1]}]),
                                       "'partitions.partition' must be an integer"),
    "unknown election type": (envelope("ElectLeaders", election_type="RANDOM"), "'election_type'"),
    "election partitions not a list": (envelope("ElectLeaders", election_type="PREFERRED", partitions={"t": 0}),
                                       "'partitions'"),
    "controller id missing": (envelope("ControllerChange"), "missing field 'controller_id'"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_input(case: str) -> None:
    raw, reason = MALFORMED[case]
    if isinstance(raw, dict):
        raw = json.dumps(raw)
    parsed = parse_event(raw)  # type: ignore[arg-type]
    assert isinstance(parsed, Malformed), parsed
    assert reason in parsed.reason


def test_well_formed_events_parse_with_their_defaults() -> None:
    isr = parse_event(json.dumps(envelope("IsrChange", topic="t", partition=0, broker_id=1, broker_epoch=1,
                                          leader_epoch=0, partition_epoch=0, isr=[1])))
    assert isinstance(isr, ControllerEvent)
    assert isr.leader_recovery_state == "RECOVERED"
    assert (isr.type, isr.event_id, isr.controller_epoch, isr.principal) == ("IsrChange", "e-1", 3, None)
    create = parse_event(json.dumps(envelope("CreateTopic", topic="t", assignment={"0": [1, 2]})).encode())
    assert isinstance(create, ControllerEvent)
    assert create.configs == {}
    elect = parse_event(json.dumps(envelope("ElectLeaders", election_type="UNCLEAN")))
    assert isinstance(elect, ControllerEvent)
    assert elect.partitions is None
    imbalance = parse_event(json.dumps(envelope("LeaderImbalanceCheck", principal="User:ops")))
    assert isinstance(imbalance, ControllerEvent)
    assert imbalance.principal == "User:ops"


def test_text_beyond_ascii_is_kept() -> None:
    parsed = parse_event(json.dumps(envelope(event_id="évènement-1", principal="User:Zoë"), ensure_ascii=False))
    assert not isinstance(parsed, Malformed), parsed
    assert (parsed.event_id, parsed.principal) == ("évènement-1", "User:Zoë")


def test_kafka_refusals_are_not_malformed() -> None:
    # A negative broker id in an admin tool's replica list is Kafka's INVALID_REPLICA_ASSIGNMENT, not bad input.
    raw = event_json("ReassignPartitions", event_id="r", controller_epoch=1,
                     partitions=[{"topic": "t", "partition": 0, "replicas": [1, -1]}])
    parsed = parse_event(raw)
    assert isinstance(parsed, ControllerEvent)
    assert parsed.partitions[0].replicas == (1, -1)
    create = parse_event(event_json("CreateTopic", event_id="c", controller_epoch=1, topic="t",
                                    assignment={"0": [-4]}))
    assert isinstance(create, ControllerEvent)


def test_round_trip_through_to_json() -> None:
    raw = event_json("AlterTopicConfig", event_id="a", controller_epoch=2, principal="User:ops", topic="t",
                     configs={UNCLEAN: None})
    parsed = parse_event(raw)
    assert isinstance(parsed, ControllerEvent)
    again = parse_event(parsed.to_json())
    assert again == parsed


def test_broker_change_unclean_shutdown_is_an_optional_bool_left_out_of_the_v1_json() -> None:
    base = {"type": "BrokerChange", "event_id": "e", "ts": "2024-05-01T12:00:00Z", "controller_epoch": 1,
            "broker_id": 1, "change": "STARTUP", "broker_epoch": 5}
    plain = parse_event(json.dumps(base))
    assert not isinstance(plain, Malformed) and plain.unclean_shutdown is False
    assert "unclean_shutdown" not in plain.to_json()
    flagged = parse_event(json.dumps({**base, "unclean_shutdown": True}))
    assert not isinstance(flagged, Malformed) and '"unclean_shutdown":true' in flagged.to_json()
    bad = parse_event(json.dumps({**base, "unclean_shutdown": "yes"}))
    assert isinstance(bad, Malformed) and "unclean_shutdown" in bad.reason


def test_broker_change_new_brokers_is_an_optional_map_left_out_of_the_v1_json() -> None:
    startup = {**envelope("BrokerChange"), "broker_id": 2, "change": "STARTUP", "broker_epoch": 82}
    plain = parse_event(json.dumps(startup))
    assert not isinstance(plain, Malformed) and plain.new_brokers is None
    assert "new_brokers" not in plain.to_json()
    together = parse_event(json.dumps({**startup, "new_brokers": {"2": 82, "4": 83}}))
    assert not isinstance(together, Malformed) and together.new_brokers == {2: 82, 4: 83}
    assert json.loads(together.to_json())["new_brokers"] == {"2": 82, "4": 83}
    bad = parse_event(json.dumps({**startup, "new_brokers": {"two": 82}}))
    assert isinstance(bad, Malformed) and "new_brokers" in bad.reason


def test_isr_change_request_partitions_and_isr_change_notification_are_additions() -> None:
    isr = {**envelope("IsrChange"), "topic": "t", "partition": 0, "broker_id": 1, "broker_epoch": 10,
           "leader_epoch": 2, "partition_epoch": 3, "isr": [1, 2]}
    plain = parse_event(json.dumps(isr))
    assert not isinstance(plain, Malformed) and plain.request_partitions == ()
    assert "request_partitions" not in plain.to_json()  # the v1 JSON stays as it was
    request = [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}]
    grouped = parse_event(json.dumps({**isr, "request_partitions": request}))
    assert not isinstance(grouped, Malformed) and json.loads(grouped.to_json())["request_partitions"] == request
    bad = parse_event(json.dumps({**isr, "request_partitions": [{"topic": "t"}]}))
    assert isinstance(bad, Malformed) and "partition" in bad.reason
    read = parse_event(json.dumps({**envelope("IsrChangeNotification"), "partitions": request}))
    assert not isinstance(read, Malformed) and [(p.topic, p.partition) for p in read.partitions] == [("t", 0), ("t", 1)]
    missing = parse_event(json.dumps(envelope("IsrChangeNotification")))
    assert isinstance(missing, Malformed) and "missing field 'partitions'" in missing.reason
