"""KRaft metadata records -> contract events and observed decisions (pure, on record lists)."""

from __future__ import annotations

import json
from typing import Any

from schemas.events import ControllerEvent, CreateTopic, Malformed, parse_event
from schemas.records import to_row
from statemachine.controller import Controller, ControllerConfig
from statemachine.directories import MIGRATING
from statemachine.rules import KRAFT
from streaming.history.agreement import agreement_rate, agreement_rows
from streaming.history.histories import history_rows
from streaming.kraft.convert import Converter, PartitionView, convert, event_offset, topic_id_text
from streaming.kraft.metadatalog import MetadataRecord, parse_dump

T1 = "AAu-oSgDTO63js0uIRkgdQ"


class Log:
    """Builds records the way the controller writes them: offsets in order, one batch per `batch()`."""

    def __init__(self) -> None:
        self.records: list[MetadataRecord] = []
        self.offset = 0
        self.base = 0

    def batch(self, *records: tuple[str, dict[str, Any]]) -> list[int]:
        self.base = self.offset
        offsets = []
        for type_, data in records:
            self.records.append(MetadataRecord(self.offset, self.base, 1_700_000_000_000 + self.offset, 1, type_, 0,
                                               data))
            offsets.append(self.offset)
            self.offset += 1
        return offsets


def register(b: int, epoch_offset: int | None = None, incarnation: str = "") -> tuple[str, dict[str, Any]]:
    return "REGISTER_BROKER_RECORD", {"brokerId": b, "incarnationId": incarnation or f"inc{b}",
                                      "brokerEpoch": epoch_offset, "fenced": True}


def change(b: int, epoch: int, **fields: int) -> tuple[str, dict[str, Any]]:
    return "BROKER_REGISTRATION_CHANGE_RECORD", {"brokerId": b, "brokerEpoch": epoch, **fields}


def pcr(partition: int, **fields: Any) -> tuple[str, dict[str, Any]]:
    return "PARTITION_CHANGE_RECORD", {"partitionId": partition, "topicId": T1, **fields}


def started_cluster() -> Log:
    log = Log()
    log.batch(("FEATURE_LEVEL_RECORD", {"name": "metadata.version", "featureLevel": 27}))
    for b in (1, 2, 3):
        log.batch(register(b, log.offset))
    log.batch(change(1, 1, fenced=-1), change(2, 2, fenced=-1), change(3, 3, fenced=-1))
    log.batch(("TOPIC_RECORD", {"name": "t", "topicId": T1}),
              ("CONFIG_RECORD", {"resourceType": 2, "resourceName": "t", "name": "min.insync.replicas", "value": "2"}),
              ("PARTITION_RECORD", {"partitionId": 0, "topicId": T1, "replicas": [1, 2, 3], "isr": [1, 2, 3],
                                    "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0}),
              ("PARTITION_RECORD", {"partitionId": 1, "topicId": T1, "replicas": [2, 3, 1], "isr": [2, 3, 1],
                                    "leader": 2, "leaderEpoch": 0, "partitionEpoch": 0}))
    return log


def events(log: Log) -> list[ControllerEvent]:
    out = []
    for e in convert(log.records).events:
        parsed = parse_event(json.dumps(e))
        assert not isinstance(parsed, Malformed), parsed  # every event is valid contract input
        out.append(parsed)
    return out


def test_registration_unfence_and_creation_become_startup_and_create_topic() -> None:
    evs = events(started_cluster())[1:]  # after the log's metadata.version (UpdateFeatures)
    assert [(e.type, getattr(e, "broker_id", None), getattr(e, "broker_epoch", None)) for e in evs[:3]] == [
        ("BrokerChange", 1, 1), ("BrokerChange", 2, 2), ("BrokerChange", 3, 3)]
    create = evs[3]
    assert isinstance(create, CreateTopic)
    assert {k: list(v) for k, v in create.assignment.items()} == {"0": [1, 2, 3], "1": [2, 3, 1]}
    assert dict(create.configs) == {"min.insync.replicas": "2"}


def test_fence_with_the_changes_before_it_is_one_failure_and_observed_decisions() -> None:
    log = started_cluster()
    log.batch(pcr(0, isr=[2, 3], leader=2), pcr(1, isr=[2, 3]), change(1, 1, fenced=1))
    result = convert(log.records)
    failure = result.events[-1]
    assert (failure["type"], failure["change"], failure["broker_id"]) == ("BrokerChange", "FAILURE", 1)
    obs = [o for o in result.observed if o["cause"] == "BrokerChange"]
    # KRaft's merge: the leader change bumps the leader epoch, the ISR-only change does not; both bump the
    # partition epoch.
    assert [(o["partition"], o["leader"], o["isr"], o["leader_epoch"], o["partition_epoch"]) for o in obs] == [
        (0, 2, [2, 3], 1, 1), (1, 2, [2, 3], 0, 1)]
    assert all(o["cause_event_id"] == failure["event_id"] for o in obs)


def test_controlled_shutdown_then_its_changes() -> None:
    log = started_cluster()
    log.batch(change(2, 2, inControlledShutdown=1), pcr(1, isr=[3, 1], leader=3), pcr(0, isr=[1, 3]))
    result = convert(log.records)
    assert result.events[-1]["change"] == "CONTROLLED_SHUTDOWN"
    assert [o["cause_event_id"] for o in result.observed[-2:]] == [result.events[-1]["event_id"]] * 2


def test_isr_only_change_is_the_leaders_isr_change_with_its_epochs() -> None:
    log = started_cluster()
    log.batch(pcr(0, isr=[1, 2]))
    e = convert(log.records).events[-1]
    assert (e["type"], e["broker_id"], e["leader_epoch"], e["partition_epoch"], e["isr"]) == (
        "IsrChange", 1, 0, 0, [1, 2])


def test_leader_only_changes_are_one_preferred_election_and_unclean_is_recognised() -> None:
    log = started_cluster()
    log.batch(pcr(0, leader=2), pcr(1, leader=3))
    log.batch(pcr(0, isr=[3], leader=3, leaderRecoveryState=1))
    evs = convert(log.records).events
    assert evs[-2]["election_type"] == "PREFERRED"
    assert evs[-2]["partitions"] == [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}]
    assert evs[-1]["election_type"] == "UNCLEAN"
    obs = convert(log.records).observed[-1]
    assert (obs["leader_recovery_state"], obs["leader_epoch"]) == ("RECOVERING", 2)


def test_reassignment_start_cancel_and_completion() -> None:
    log = started_cluster()
    log.batch(pcr(0, replicas=[2, 3, 4, 1], addingReplicas=[4], removingReplicas=[1]))
    log.batch(pcr(0, replicas=[2, 3, 1], addingReplicas=[], removingReplicas=[], leader=1))  # cancel
    log.batch(pcr(1, replicas=[2, 4, 3, 1], addingReplicas=[4], removingReplicas=[3, 1]))
    log.batch(pcr(1, isr=[2, 4], replicas=[2, 4], addingReplicas=[], removingReplicas=[]))  # completion
    evs = convert(log.records).events
    assert [e["partitions"][0]["replicas"] for e in evs[-4:-1]] == [[2, 3, 4], None, [2, 4]]
    done = evs[-1]
    # The leader asked for its ISR plus the replica that caught up; the controller completed the move.
    assert (done["type"], done["isr"]) == ("IsrChange", [2, 3, 1, 4])


def test_partition_for_an_existing_topic_delete_and_configs() -> None:
    log = started_cluster()
    log.batch(("PARTITION_RECORD", {"partitionId": 2, "topicId": T1, "replicas": [3, 1], "isr": [3, 1], "leader": 3,
                                    "leaderEpoch": 0, "partitionEpoch": 0}))
    log.batch(("CONFIG_RECORD", {"resourceType": 2, "resourceName": "t", "name": "unclean.leader.election.enable",
                                 "value": "true"}))
    log.batch(("CONFIG_RECORD", {"resourceType": 4, "resourceName": "", "name": "min.insync.replicas",
                                 "value": "1"}))  # t keeps its own value (again: its ELR is cleared)
    log.batch(("CONFIG_RECORD", {"resourceType": 4, "resourceName": "", "name": "unclean.leader.election.enable",
                                 "value": "false"}))  # cluster default, t overrides it too
    log.batch(("CONFIG_RECORD", {"resourceType": 4, "resourceName": "", "name": "retention.ms", "value": "1"}))
    log.batch(("REMOVE_TOPIC_RECORD", {"topicId": T1}))
    evs = convert(log.records).events
    assert [e["type"] for e in evs[-5:]] == ["CreatePartitions", "AlterTopicConfig", "AlterTopicConfig",
                                             "AlterTopicConfig", "DeleteTopic"]
    assert evs[-5]["assignment"] == {"2": [3, 1]}
    assert evs[-4]["configs"] == {"unclean.leader.election.enable": "true"}
    assert evs[-3]["configs"] == {"min.insync.replicas": "2"}
    assert evs[-2]["configs"] == {"retention.ms": "1"}


def test_unknown_record_types_are_counted_and_skipped() -> None:
    log = started_cluster()
    log.batch(("NO_OP_RECORD", {}), ("PRODUCER_IDS_RECORD", {"brokerId": 1}), ("NO_OP_RECORD", {}))
    result = convert(log.records)
    assert result.unknown == {"NO_OP_RECORD": 2, "PRODUCER_IDS_RECORD": 1}
    assert len(result.events) == 5  # UpdateFeatures, 3 STARTUP, CreateTopic


def test_new_incarnation_is_a_new_epoch_and_same_incarnation_keeps_it() -> None:
    log = started_cluster()
    log.batch(pcr(0, isr=[2, 3], leader=2), change(1, 1, fenced=1))
    [offset] = log.batch(register(1, log.offset, incarnation="again"))
    log.batch(register(1, offset + 5, incarnation="again"))  # amended: epoch kept
    log.batch(change(1, offset, fenced=-1))
    startup = convert(log.records).events[-1]
    assert (startup["change"], startup["broker_epoch"]) == ("STARTUP", offset)


def test_merge_keeps_missing_tagged_fields() -> None:
    v = PartitionView((1, 2), (1, 2), 1, 3, 7, 0, elr=(5,))
    after = v.merge({"isr": [1]})
    assert (after.leader, after.leader_epoch, after.partition_epoch, after.elr) == (1, 3, 8, (5,))
    assert v.merge({"leader": 1}).leader_epoch == 4  # setting the same leader again still bumps


def test_directories_read_as_partition_registration_reads_them() -> None:
    M = MIGRATING
    # A record without directories (PartitionRecord below version 1): every replica MIGRATING (defaultToMigrating).
    assert PartitionView.from_record({"replicas": [1, 2], "isr": [1, 2], "leader": 1}).directories == (M, M)
    v = PartitionView((1, 2), (1, 2), 1, 3, 7, directories=("d1", "d2"))
    # A change without them keeps them; with replicas but none, still the old ones (merge does not re-place them).
    assert v.merge({"isr": [1]}).directories == ("d1", "d2")
    assert v.merge({"replicas": [1, 2, 3]}).directories == ("d1", "d2")
    # An empty list set is none known: MIGRATING for each replica, as Kafka's merge reads it.
    assert v.merge({"replicas": [1, 2, 3], "directories": []}).directories == (M, M, M)
    # All MIGRATING, kept through a change of the replicas: one MIGRATING per new replica.
    assert PartitionView((1, 2), (1, 2), 1, 3, 7, directories=(M, M)).merge({"replicas": [1, 2, 3]}).directories \
        == (M, M, M)


def test_topic_ids_in_any_base64_form_are_one_id() -> None:
    assert topic_id_text(T1) == topic_id_text(T1 + "==") == T1
    assert topic_id_text("AAu+oSgDTO63js0uIRkgdQ") == T1


def test_dump_lines_parse_records_and_skip_control_batches() -> None:
    text = "\n".join([
        "Dumping x.log", "Log starting offset: 0",
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        "partitionLeaderEpoch: 1 isTransactional: false isControl: true deleteHorizonMs: x position: 0",
        '| offset: 0 CreateTime: 5 keySize: 4 valueSize: 19 sequence: -1 headerKeys: [] LeaderChange: {"version":0}',
        "baseOffset: 1 lastOffset: 1 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        "partitionLeaderEpoch: 2 isTransactional: false isControl: false deleteHorizonMs: x position: 90",
        '| offset: 1 CreateTime: 6 keySize: -1 valueSize: 9 sequence: -1 headerKeys: [] payload: '
        '{"type":"TOPIC_RECORD","version":0,"data":{"name":"t","topicId":"' + T1 + '"}}',
    ])
    items = list(parse_dump(text))
    assert items[0] == ("control", 0)
    kind, record = items[1]
    assert (kind, record.offset, record.batch, record.epoch, record.type, record.data["name"]) == (
        "record", 1, 1, 2, "TOPIC_RECORD", "t")


def test_agreement_compares_isr_as_a_set_and_names_the_differing_fields() -> None:
    observed = [{"topic": "t", "partition": 0, "decision": True, "cause_event_id": "kraft-9", "source_offset": 9,
                 "leader": 2, "isr": [3, 2], "leader_epoch": 1, "partition_epoch": 1,
                 "leader_recovery_state": "RECOVERED"},
                {"topic": "t", "partition": 1, "decision": True, "cause_event_id": "kraft-9", "source_offset": 10,
                 "leader": 3, "isr": [3], "leader_epoch": 1, "partition_epoch": 2,
                 "leader_recovery_state": "RECOVERED"}]
    ours = [{"topic": "t", "partition": 0, "cause_event_id": "kraft-9", "leader": 2, "isr": [2, 3],
             "leader_epoch": 1, "partition_epoch": 1, "leader_recovery_state": "RECOVERED"},
            {"topic": "t", "partition": 1, "cause_event_id": "kraft-9", "leader": 3, "isr": [3],
             "leader_epoch": 2, "partition_epoch": 2, "leader_recovery_state": "RECOVERED"}]
    rows = agreement_rows(observed, ours)
    assert [(r["match"], r["differing"]) for r in rows] == [(True, []), (False, ["leader_epoch"])]
    assert agreement_rate(rows) == 0.5


def test_a_decision_the_controller_never_made_is_a_disagreement() -> None:
    observed = [{"topic": "t", "partition": 0, "decision": False, "cause_event_id": "kraft-4", "source_offset": 4,
                 "leader": 1, "isr": [1, 2], "leader_epoch": 0, "partition_epoch": 1,
                 "leader_recovery_state": "RECOVERED"}]
    ours = [{"topic": "t", "partition": 0, "cause_event_id": "kraft-4", "source_offset": 4, "leader": 1,
             "isr": [1, 2], "leader_epoch": 0, "partition_epoch": 1, "leader_recovery_state": "RECOVERED"},
            {"topic": "t", "partition": 0, "cause_event_id": "kraft-7", "source_offset": 7, "cause": "ElectLeaders",
             "leader": 2, "isr": [1, 2], "leader_epoch": 1, "partition_epoch": 2,
             "leader_recovery_state": "RECOVERED"}]
    rows = agreement_rows(observed, ours)
    assert [(r["cause_event_id"], r["match"], r["controller"]) for r in rows] == [("kraft-7", False, None)]
    assert rows[0]["isrflow"]["leader"] == 2
    assert agreement_rate(rows) == 0.0


def _agreement_dir(tmp_path: Any, match: bool) -> Any:
    import json

    row = {"topic": "t", "partition": 0, "source_offset": 9, "cause": "BrokerChange", "cause_event_id": "kraft-9",
           "match": match, "differing": [] if match else ["leader_epoch"],
           "controller": {"leader": 2, "isr": [2], "leader_epoch": 1, "partition_epoch": 1,
                          "leader_recovery_state": "RECOVERED"},
           "isrflow": {"leader": 2, "isr": [2], "leader_epoch": 2, "partition_epoch": 1,
                       "leader_recovery_state": "RECOVERED"}}
    (tmp_path / "agreement.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "observed.jsonl").write_text(json.dumps(
        {"topic": "t", "partition": 0, "source_offset": 4, "cause": "CreateTopic", "leader": 1, "isr": [1, 2],
         "leader_epoch": 0, "partition_epoch": 0}) + "\n")
    return tmp_path


def test_report_section_shows_the_rate_and_each_disagreement_with_both_sides(tmp_path: Any) -> None:
    from streaming.analysis.agreement import agreement_section

    assert agreement_section(tmp_path) is None  # not a KRaft replay
    html = agreement_section(_agreement_dir(tmp_path, match=False))
    assert html is not None
    assert "isrflow vs the controller" in html and "0.0% of 1" in html
    assert "<b>leader_epoch=1</b>" in html and "<b>leader_epoch=2</b>" in html
    assert "@4 CreateTopic" in html  # the partition's recent changes at the controller


def test_check_rule_fails_on_any_disagreement(tmp_path: Any) -> None:
    from streaming.quality.agreement import agreement_result

    audit = tmp_path / "audit"
    assert agreement_result(audit) is None
    _agreement_dir(tmp_path, match=False)
    failed = agreement_result(audit)
    assert failed is not None and failed.fails_check and failed.unexpected == 1
    _agreement_dir(tmp_path, match=True)
    passed = agreement_result(audit)
    assert passed is not None and not passed.fails_check


def test_an_unclean_registration_makes_the_startup_say_so_and_cause_the_elr_removal() -> None:
    log = started_cluster()
    log.batch(pcr(0, isr=[], leader=-1, eligibleLeaderReplicas=[1], lastKnownElr=[1]), change(1, 1, fenced=1))
    # Broker 1 back after kill -9: out of the ELR before its registration, then unfenced.
    log.batch(pcr(0, eligibleLeaderReplicas=[]), register(1, log.offset + 1, incarnation="again"))
    log.batch(change(1, 5, fenced=-1), pcr(0, isr=[1], leader=1, leaderRecoveryState=1, lastKnownElr=[]))
    result = convert(log.records)
    startup = result.events[-1]
    assert (startup["change"], startup["unclean_shutdown"]) == ("STARTUP", True)
    assert parse_event(json.dumps(startup)).unclean_shutdown is True
    removal, elected = result.observed[-2:]
    assert (removal["eligible_leader_replicas"], removal["last_known_elr"], removal["decision"]) == ([], [1], False)
    assert removal["cause_event_id"] == elected["cause_event_id"] == startup["event_id"]
    assert (elected["leader_recovery_state"], elected["leader_epoch"], elected["partition_epoch"]) == (
        "RECOVERING", 2, 3)
    # A broker that registers without such changes starts as before: no unclean_shutdown field.
    assert "unclean_shutdown" not in result.events[0]


def test_clear_elr_empties_the_elr_of_the_altered_topic_with_one_partition_epoch() -> None:
    log = started_cluster()
    log.batch(pcr(0, isr=[2], eligibleLeaderReplicas=[3]))
    log.batch(("CONFIG_RECORD", {"resourceType": 2, "resourceName": "t", "name": "min.insync.replicas", "value": "1"}),
              ("CLEAR_ELR_RECORD", {"topicName": "t"}))
    result = convert(log.records)
    alter = result.events[-1]
    cleared = result.observed[-1]
    assert (cleared["partition"], cleared["eligible_leader_replicas"], cleared["partition_epoch"]) == (0, [], 2)
    assert (cleared["cause"], cleared["cause_event_id"]) == ("AlterTopicConfig", alter["event_id"])
    assert len([o for o in result.observed if o["source_offset"] == cleared["source_offset"]]) == 1  # not t-1


def test_a_cluster_default_min_isr_clears_the_elr_of_a_topic_with_its_own_value_too() -> None:
    """Kafka's ClearElrRecord with no topic (ConfigurationControlManager.createClearElrRecordsAsNeeded, for the
    cluster default) clears every topic's ELR, those with their own min.insync.replicas (t: 2) included: t gets its
    own value again, which clears its ELR in the shadow as the record does in Kafka."""
    log = started_cluster()
    log.batch(pcr(0, isr=[1], eligibleLeaderReplicas=[2]))
    log.batch(("CONFIG_RECORD", {"resourceType": 4, "resourceName": "", "name": "min.insync.replicas", "value": "1"}),
              ("CLEAR_ELR_RECORD", {}))
    result = convert(log.records)
    alter = result.events[-1]
    assert (alter["type"], alter["topic"], alter["configs"]) == ("AlterTopicConfig", "t", {"min.insync.replicas": "2"})
    cleared = result.observed[-1]
    assert (cleared["partition"], cleared["eligible_leader_replicas"], cleared["cause_event_id"]) == (
        0, [], alter["event_id"])


def test_features_and_cluster_defaults_reach_the_replay() -> None:
    log = Log()
    log.batch(("FEATURE_LEVEL_RECORD", {"name": "eligible.leader.replicas.version", "featureLevel": 1}),
              ("CONFIG_RECORD", {"resourceType": 4, "resourceName": "", "name": "min.insync.replicas", "value": "2"}))
    log.batch(register(1, log.offset))
    log.batch(change(1, 2, fenced=-1))
    log.batch(("TOPIC_RECORD", {"name": "t", "topicId": T1}),
              ("PARTITION_RECORD", {"partitionId": 0, "topicId": T1, "replicas": [1], "isr": [1], "leader": 1}))
    log.batch(("CONFIG_RECORD", {"resourceType": 2, "resourceName": "t", "name": "min.insync.replicas", "value": "1"}))
    log.batch(("CONFIG_RECORD", {"resourceType": 2, "resourceName": "t", "name": "min.insync.replicas",
                                 "value": None}))
    result = convert(log.records)
    assert result.features == {"eligible.leader.replicas.version": 1}
    create, own, deleted = result.events[-3:]
    assert create["configs"] == {"min.insync.replicas": "2"}  # the cluster default, carried by the topic
    assert own["configs"] == {"min.insync.replicas": "1"}
    assert deleted["configs"] == {"min.insync.replicas": "2"}  # deleting the topic's value: back to the default


def test_agreement_compares_the_elr_as_sets() -> None:
    observed = [{"topic": "t", "partition": 0, "source_offset": 7, "cause": "BrokerChange", "cause_event_id": "e",
                 "decision": True, "leader": -1, "isr": [], "leader_epoch": 1, "partition_epoch": 1,
                 "leader_recovery_state": "RECOVERED", "eligible_leader_replicas": [2, 1], "last_known_elr": [1]}]
    ours = {**observed[0], "eligible_leader_replicas": [1, 2]}
    assert agreement_rows(observed, [ours])[0]["match"]
    row = agreement_rows(observed, [{**ours, "last_known_elr": []}])[0]
    assert (row["match"], row["differing"]) == (False, ["last_known_elr"])


def test_a_snapshot_becomes_the_live_brokers_then_each_partition_as_it_stood() -> None:
    """A log that begins at a snapshot (end offset 100): the snapshot's state is seeded at offset 99, brokers
    first, so that the partitions after them decide nothing; the segment's first change follows."""
    snap = [MetadataRecord(i, 0, 1_700_000_000_000, 4, t, 0, d, snapshot=True) for i, (t, d) in enumerate([
        ("REGISTER_BROKER_RECORD", {"brokerId": 1, "incarnationId": "a", "brokerEpoch": 10, "fenced": False}),
        ("REGISTER_BROKER_RECORD", {"brokerId": 2, "incarnationId": "b", "brokerEpoch": 12, "fenced": True}),
        ("TOPIC_RECORD", {"name": "t", "topicId": T1}),
        ("CONFIG_RECORD", {"resourceType": 2, "resourceName": "t", "name": "unclean.leader.election.enable",
                           "value": "true"}),
        ("PARTITION_RECORD", {"partitionId": 0, "topicId": T1, "replicas": [1, 2], "isr": [1], "leader": 1,
                              "leaderEpoch": 3, "partitionEpoch": 7}),
    ])]
    after = MetadataRecord(100, 100, 1_700_000_001_000, 4, "PARTITION_CHANGE_RECORD",
                           0, {"partitionId": 0, "topicId": T1, "isr": [1, 2]})
    result = convert([*snap, after], start=100)
    evs = [parse_event(json.dumps(e)) for e in result.events]
    assert not any(isinstance(e, Malformed) for e in evs)
    assert [(e.type, e.event_id) for e in evs] == [
        ("BrokerChange", "kraft-99-snapshot-0"), ("PartitionSnapshot", "kraft-99-snapshot-1"),
        ("IsrChange", "kraft-100")]
    seed = evs[1]
    assert (seed.topic, seed.partition, seed.replicas, seed.isr, seed.leader, seed.leader_epoch,
            seed.partition_epoch, dict(seed.configs)) == ("t", 0, (1, 2), (1,), 1, 3, 7,
                                                          {"unclean.leader.election.enable": "true"})
    # Broker 2 is registered but fenced in the snapshot: not live. The ISR change is the leader's, from epoch 7.
    assert (evs[0].broker_id, evs[0].broker_epoch) == (1, 10)
    assert (evs[2].leader_epoch, evs[2].partition_epoch) == (3, 7)
    assert [(o["partition_epoch"], o["cause"]) for o in result.observed] == [(8, "IsrChange")]


def test_a_snapshot_partition_carries_its_elr_into_the_shadow() -> None:
    snap = [MetadataRecord(i, 0, 1_700_000_000_000, 4, t, 0, d, snapshot=True) for i, (t, d) in enumerate([
        ("FEATURE_LEVEL_RECORD", {"name": "eligible.leader.replicas.version", "featureLevel": 1}),
        ("REGISTER_BROKER_RECORD", {"brokerId": 2, "incarnationId": "b", "brokerEpoch": 12, "fenced": False}),
        ("TOPIC_RECORD", {"name": "t", "topicId": T1}),
        ("PARTITION_RECORD", {"partitionId": 0, "topicId": T1, "replicas": [1, 2], "isr": [], "leader": -1,
                              "leaderEpoch": 3, "partitionEpoch": 7, "eligibleLeaderReplicas": [1],
                              "lastKnownElr": [1]}),
    ])]
    result = convert(snap, start=10)
    assert result.features == {"eligible.leader.replicas.version": 1}
    seed = parse_event(json.dumps(result.events[-1]))
    assert (seed.type, seed.eligible_leader_replicas, seed.last_known_elr) == ("PartitionSnapshot", (1,), (1,))
    shadow = Controller(ControllerConfig(rules=KRAFT, eligible_leader_replicas=True))
    for offset, e in enumerate(result.events):
        shadow.handle(parse_event(json.dumps(e)), offset)
    rec = shadow.partitions[("t", 0)]
    assert (rec.leader, rec.isr, rec.eligible_leader_replicas, rec.last_known_elr) == (-1, (), (1,), (1,))


def replayed(events: list[dict[str, Any]]) -> Controller:
    shadow = Controller(ControllerConfig(rules=KRAFT))
    for offset, e in enumerate(events):
        shadow.handle(parse_event(json.dumps(e)), offset)
    return shadow


def incident() -> tuple[Log, int]:
    """Broker 1 fails and comes back, then broker 2 fails: the window starts at broker 1's return."""
    log = started_cluster()
    log.batch(pcr(0, isr=[2, 3], leader=2), pcr(1, isr=[2, 3]), change(1, 1, fenced=1))
    log.batch(register(1, log.offset, "again"))
    start = log.offset
    log.batch(change(1, start - 1, fenced=-1))
    log.batch(pcr(0, isr=[2, 3, 1]))
    log.batch(pcr(0, isr=[3, 1], leader=3), pcr(1, isr=[3, 1], leader=3), change(2, 2, fenced=1))
    return log, start


def test_a_window_is_seeded_with_the_state_its_earlier_records_leave_and_decides_only_inside() -> None:
    log, start = incident()
    whole, window = convert(log.records), convert(log.records, start=start)
    # The records before the window decide nothing: the seed (at start - 1) holds what they left, the feature levels
    # first, then the brokers, then the partitions.
    seeds = [e for e in window.events if event_offset(e) < start]
    assert [(e["type"], e.get("broker_id"), e.get("broker_epoch"), e["event_id"]) for e in seeds] == [
        ("UpdateFeatures", None, None, f"kraft-{start - 1}-snapshot-features"),
        ("BrokerChange", 2, 2, f"kraft-{start - 1}-snapshot-0"),
        ("BrokerChange", 3, 3, f"kraft-{start - 1}-snapshot-1"),
        ("PartitionSnapshot", None, None, f"kraft-{start - 1}-snapshot-2"),
        ("PartitionSnapshot", None, None, f"kraft-{start - 1}-snapshot-3")]
    assert [(e["leader"], e["isr"], e["leader_epoch"], e["partition_epoch"]) for e in seeds[3:]] == [
        (2, [2, 3], 1, 1), (2, [2, 3], 0, 1)]
    # From the window's start on, the same events as the whole log's, and only the window's partition changes.
    assert window.events[len(seeds):] == [e for e in whole.events if event_offset(e) >= start]
    assert window.observed == [o for o in whole.observed if o["source_offset"] >= start]
    assert window.features == whole.features and not window.unexplained
    # The shadow seeded there reproduces the controller's decisions inside the window and ends in the same state.
    shadow_whole, shadow_window = replayed(whole.events), replayed(window.events)
    assert shadow_window.partitions == shadow_whole.partitions
    assert shadow_window.partitions[("t", 1)].leader == 3  # broker 2's failure, inside the window, moved it


def test_a_snapshot_plus_records_up_to_the_window_seed_as_the_whole_log_does() -> None:
    """One mechanism: state from a snapshot and the log's records up to the window, or from the log alone,
    gives the same seed and the same events."""
    log, start = incident()
    cut = start - 2  # the snapshot ends at the failure's batch: the records between it and the window are state
    state = Converter()
    state.feed(r for r in log.records if r.offset < cut)
    snapshot = [MetadataRecord(i, 0, 1_700_000_000_000, 1, t, 0, d, snapshot=True) for i, (t, d) in enumerate([
        ("FEATURE_LEVEL_RECORD", {"name": "metadata.version", "featureLevel": 27}),
        *(("REGISTER_BROKER_RECORD", {"brokerId": b, "incarnationId": broker.incarnation, "brokerEpoch": broker.epoch,
                                      "fenced": broker.fenced}) for b, broker in sorted(state.brokers.items())),
        ("TOPIC_RECORD", {"name": "t", "topicId": T1}),
        ("CONFIG_RECORD", {"resourceType": 2, "resourceName": "t", "name": "min.insync.replicas", "value": "2"}),
        *(("PARTITION_RECORD", {"partitionId": p, "topicId": T1, "replicas": list(v.replicas), "isr": list(v.isr),
                                "leader": v.leader, "leaderEpoch": v.leader_epoch, "partitionEpoch": v.partition_epoch})
          for (_, p), v in sorted(state.partitions.items()))])]
    from_snapshot = convert([*snapshot, *(r for r in log.records if r.offset >= cut)], start=start)
    from_zero = convert(log.records, start=start)
    assert from_snapshot.events == from_zero.events and from_snapshot.observed == from_zero.observed


def test_a_window_from_offset_0_has_no_seed() -> None:
    log, _ = incident()
    assert convert(log.records, start=0).events == convert(log.records).events


U = "AAAAAAAAAAAAAAAAAAAAAQ"  # UNASSIGNED


def jbod_cluster() -> Log:
    """Metadata version 4.4-IV2, brokers with two log dirs each (a1, b1, ...), topic t with replicas UNASSIGNED."""
    log = Log()
    log.batch(("FEATURE_LEVEL_RECORD", {"name": "metadata.version", "featureLevel": 33}))
    for b in (1, 2, 3):
        name, data = register(b, log.offset)
        log.batch((name, {**data, "logDirs": [f"a{b}", f"b{b}"]}))
    log.batch(change(1, 1, fenced=-1), change(2, 2, fenced=-1), change(3, 3, fenced=-1))
    log.batch(("TOPIC_RECORD", {"name": "t", "topicId": T1}),
              *(("PARTITION_RECORD", {"partitionId": p, "topicId": T1, "replicas": r, "isr": r, "leader": r[0],
                                      "leaderEpoch": 0, "partitionEpoch": 0, "directories": [U, U, U]})
                for p, r in ((0, [1, 2, 3]), (1, [2, 3, 1]))))
    return log


def test_directory_only_changes_are_each_brokers_assignment_and_a_dropped_dir_is_offline() -> None:
    log = jbod_cluster()
    # One batch, two brokers' requests: broker 1 places both its replicas, broker 2 one.
    log.batch(pcr(0, directories=["a1", U, U]), pcr(1, directories=[U, U, "b1"]), pcr(0, directories=["a1", "a2", U]))
    # Broker 1's heartbeat: dir a1 offline; t-0 (led by 1, its replica in a1) moves, t-1 does not.
    log.batch(pcr(0, leader=2, isr=[2, 3]), change(1, 1, logDirs=["b1"]))
    evs = [e for e in events(log) if e.type in ("BrokerRegistration", "AssignReplicasToDirs", "LogDirsOffline")]
    assert [(e.type, e.broker_id) for e in evs] == [
        ("BrokerRegistration", 1), ("BrokerRegistration", 2), ("BrokerRegistration", 3),
        ("AssignReplicasToDirs", 1), ("AssignReplicasToDirs", 2), ("LogDirsOffline", 1)]
    assert [(a.topic, a.partition, a.directory) for a in evs[3].assignments] == [("t", 0, "a1"), ("t", 1, "b1")]
    assert evs[5].log_dirs == ("a1",)
    observed = convert(log.records).observed
    assert [o["cause"] for o in observed[-4:]] == ["AssignReplicasToDirs"] * 3 + ["LogDirsOffline"]
    assert observed[-1]["directories"] == ["a1", "a2", U]
    # The kraft rules write each partition's states as the controller did, directories included.
    controller = Controller(ControllerConfig(rules=KRAFT))
    ours = [to_row(d) for e in events(log) for h in controller.handle(e, event_offset({"event_id": e.event_id}))
            for d in h.applied.decisions]
    histories = history_rows(observed, ours)
    assert histories and all(h["match"] for h in histories), histories
