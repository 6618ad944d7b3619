"""statemachine/requests.py: the requests the ZooKeeper-era controller sends, checked against what a real one sent
(tests/unit/zkdata/statechange/controller-2.state-change.log, Kafka 3.9.1: topic `t` created on brokers 1-3, broker 1
killed and restarted, `t` deleted; its README) and against Kafka 3.9's ControllerChannelManager for the shapes that
log does not show."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from schemas.events import parse_event
from schemas.records import to_row
from statemachine.controller import Controller, ControllerConfig
from statemachine.features import ZOOKEEPER_ERA_PROTOCOL
from statemachine.record import Action
from statemachine.requests import Request, RequestType, request_rows
from statemachine.rules import KRAFT, ZK
from statemachine.states import ReplicaState
from statemachine.zk_releases import KafkaRelease
from streaming.zookeeper.requests import agreement_rows, modelled_by_isrflow, requests_agreement, sent_by_controller
from streaming.zookeeper.statechange import read_state_change_log

LOG = Path(__file__).parent / "zkdata" / "statechange" / "controller-2.state-change.log"
LAI, UM, SR = RequestType.LEADER_AND_ISR, RequestType.UPDATE_METADATA, RequestType.STOP_REPLICA
EPOCHS = {1: 10, 2: 11, 3: 12}


def _event(n: int, kind: str, **fields: Any) -> bytes:
    return json.dumps({"event_id": f"e{n}", "type": kind, "controller_epoch": 1, "ts": "2026-11-25T03:34:00Z",
                       **fields}).encode()


def _startup(n: int, broker: int, epoch: int, **fields: Any) -> bytes:
    return _event(n, "BrokerChange", broker_id=broker, change="STARTUP", broker_epoch=epoch, **fields)


# The captured scenario as isrflow's events: controller 2 elected with broker 2 registered, brokers 1 and 3
# registered during its failover and read together after it (one startup), then what the log shows.
TOGETHER = {"1": EPOCHS[1], "3": EPOCHS[3]}
SCENARIO = [
    _event(0, "ControllerChange", controller_id=2, live_brokers={"2": EPOCHS[2]}),
    _startup(1, 1, EPOCHS[1], new_brokers=TOGETHER),
    _startup(2, 3, EPOCHS[3], new_brokers=TOGETHER),
    _event(3, "CreateTopic", topic="t", assignment={"0": [1, 2, 3], "1": [2, 3, 1]}),
    _event(4, "BrokerChange", broker_id=1, change="FAILURE", broker_epoch=EPOCHS[1]),
    _startup(5, 1, 20),
    _event(6, "IsrChange", topic="t", partition=0, broker_id=2, broker_epoch=EPOCHS[2], leader_epoch=1,
           partition_epoch=1, isr=[2, 3, 1]),
    _event(7, "IsrChange", topic="t", partition=1, broker_id=2, broker_epoch=EPOCHS[2], leader_epoch=1,
           partition_epoch=1, isr=[2, 3, 1]),
    _event(8, "DeleteTopic", topic="t"),
]


def _replay(events: Iterable[bytes], config: ControllerConfig | None = None) -> list[list[Request]]:
    controller = Controller(config or ControllerConfig())
    return [controller.handle_event(parse_event(raw), offset).requests for offset, raw in enumerate(events)]


def _rows(per_event: list[list[Request]], first: int = 0) -> list[dict[str, Any]]:
    return [to_row(r) for offset, requests in enumerate(per_event) if offset >= first
            for r in request_rows(requests, f"e{offset}", "-", offset, 1)]


def _sent() -> list[Any]:
    return [r for r in read_state_change_log(LOG).requests if r.direction == "sent"]


def _to(requests: list[Request], broker: int) -> list[tuple[str, int]]:
    return [(str(r.request), len(r.partitions)) for r in requests if r.broker == broker]


def test_every_request_the_real_controller_sent_is_modelled_in_order() -> None:
    rows = agreement_rows(sent_by_controller(_sent()), modelled_by_isrflow(_rows(_replay(SCENARIO))))
    counts = requests_agreement(rows).counts
    assert {k: (c.agreeing, c.controller, c.isrflow) for k, c in counts.items()} == {
        LAI: (8, 8, 8), SR: (6, 6, 6), UM: (26, 26, 26)}
    assert all(r["match"] for r in rows)


def _lai_partitions(requests: list[Request], broker: int) -> list[tuple[str, int]]:
    return sorted((p.topic, p.partition) for r in requests if r.request is LAI and r.broker == broker
                  for p in r.partitions)


HALTED_DELETION = [
    _event(0, "ControllerChange", controller_id=1, live_brokers={"1": 10, "2": 11, "3": 12}),
    _event(1, "CreateTopic", topic="d", assignment={"0": [2, 3]}),
    _event(2, "CreateTopic", topic="u", assignment={"0": [2, 1]}),
    _event(3, "BrokerChange", broker_id=3, change="FAILURE", broker_epoch=12),
    _event(4, "DeleteTopic", topic="d"),  # 2's replica deleted, 3's waits: the deletion halts
]


def test_a_log_dir_notification_asks_about_a_halted_deletions_replica_too() -> None:
    # Seed 1301 (Kafka 2.8.2): onBrokerLogDirFailure moves every replica the broker holds to OnlineReplica, those of
    # a topic being deleted too. A failover made broker 2's replica of d-0 (deleted before, its topic's deletion
    # halted by broker 3's) OnlineReplica again: the notification's LeaderAndIsr names d-0 (leader -1), and its
    # UpdateMetadata goes to every live broker.
    failover = _event(5, "ControllerChange", controller_id=2, controller_epoch=2,
                      live_brokers={"1": 10, "2": 11})
    notification = json.dumps({"event_id": "e6", "type": "LogDirEventNotification", "controller_epoch": 2,
                               "ts": "2026-11-25T03:34:00Z", "broker_id": 2, "offline_replicas": []}).encode()
    *_, asked = _replay([*HALTED_DELETION, failover, notification])
    assert _lai_partitions(asked, 2) == [("d", 0), ("u", 0)]
    d0 = next(p for r in asked if r.request is LAI for p in r.partitions if p.topic == "d")
    assert d0.leader == -1
    assert [len(r.partitions) for r in asked if r.request is UM and r.broker == 1] == [2]


def test_a_log_dir_notification_asks_nothing_of_a_deleted_replica() -> None:
    # The contrast (seed 1250): without the failover broker 2's replica of d-0 is ReplicaDeletionSuccessful, no valid
    # previous state of OnlineReplica: no LeaderAndIsr of it.
    *_, asked = _replay([*HALTED_DELETION, _event(5, "LogDirEventNotification", broker_id=2, offline_replicas=[])])
    assert _lai_partitions(asked, 2) == [("u", 0)]


def test_an_alter_isr_whose_write_threw_writes_nothing_and_still_sends_its_update_metadata() -> None:
    # processAlterIsr (Kafka 2.7.2, 2.8.2) in a controller whose ZooKeeper session had expired: the write threw
    # (UNKNOWN_SERVER_ERROR to the leader), its cache keeps the state, and the UpdateMetadata naming the partition still
    # goes to every broker it knew (campaign seeds 1060, 1115, 1234). The same request written is accepted.
    controller = Controller(ControllerConfig())
    for offset, raw in enumerate(SCENARIO[:6]):
        controller.handle_event(parse_event(raw), offset)
    before = controller.partitions[("t", 0)]
    ask = {"topic": "t", "partition": 0, "broker_id": 2, "broker_epoch": EPOCHS[2], "leader_epoch": 1,
           "partition_epoch": 1, "isr": [2, 3, 1]}
    failed = controller.handle_event(parse_event(_event(6, "IsrChange", write_failed=True, **ask)), 6)
    audit = failed.handled[0].applied.audit
    assert (audit.outcome, audit.error) == ("REJECTED", "UNKNOWN_SERVER_ERROR")
    assert controller.partitions[("t", 0)] == before
    assert [(r.request, r.broker, len(r.partitions)) for r in failed.requests] == [(UM, 1, 1), (UM, 2, 1), (UM, 3, 1)]
    written = controller.handle_event(parse_event(_event(7, "IsrChange", **ask)), 7)
    assert written.handled[0].applied.audit.outcome == "ACCEPTED"
    assert controller.partitions[("t", 0)].isr == (2, 3, 1)


def test_brokers_read_together_are_one_startup() -> None:
    # The log's start: brokers 1 and 3 registered while controller 2's failover ran; its next read of /brokers/ids
    # took both (processBrokerChange): one onBrokerStartup, one UpdateMetadata to broker 2 and one to brokers 1 and 3.
    failover, startup, same = _replay(SCENARIO[:3])
    assert [(str(r.request), r.broker, len(r.partitions)) for r in failover] == [(UM, 2, 0)]
    assert [(r.batch, str(r.request), r.broker, len(r.partitions)) for r in startup] == [
        (0, UM, 2, 0), (1, UM, 1, 0), (1, UM, 3, 0)]
    assert same == []  # the second registration's event finds broker 3 started


def test_one_startup_of_two_brokers_brings_all_their_replicas_online_in_one_batch() -> None:
    # onBrokerStartup(newBrokers): the others learn of both, both get every partition with a leader, then one
    # OnlineReplica batch for the replicas of both (ReplicaStateMachine.handleStateChanges): a LeaderAndIsr to each,
    # one UpdateMetadata naming the partitions to every broker.
    events = [*SCENARIO[:4], _event(4, "BrokerChange", broker_id=1, change="FAILURE", broker_epoch=EPOCHS[1]),
              _event(5, "BrokerChange", broker_id=3, change="FAILURE", broker_epoch=EPOCHS[3])]
    together = {"1": 20, "3": 21}
    *_, startup, same = _replay([*events, _startup(6, 1, 20, new_brokers=together),
                                 _startup(7, 3, 21, new_brokers=together)])
    assert [(r.batch, str(r.request), r.broker, len(r.partitions)) for r in startup] == [
        (0, UM, 2, 0), (1, UM, 1, 2), (1, UM, 3, 2),
        (2, LAI, 1, 2), (2, LAI, 3, 2), (2, UM, 1, 2), (2, UM, 2, 2), (2, UM, 3, 2)]
    assert same == []


def test_before_protocol_2_6_each_stop_replica_request_carries_one_flag_and_compares_one_for_one() -> None:
    # The same scenario at inter.broker.protocol 2.5: every batch holds one delete flag per broker.
    sent = [r for r in read_state_change_log(LOG.with_name("controller-2-ibp2.5.state-change.log")).requests
            if r.direction == "sent"]
    assert {r.delete for r in sent if r.request == SR} == {False, True}
    rows = agreement_rows(sent_by_controller(sent), modelled_by_isrflow(_rows(_replay(SCENARIO))))
    stop_replica = requests_agreement(rows).counts[SR]
    assert (stop_replica.agreeing, stop_replica.controller, stop_replica.isrflow) == (6, 6, 6)


def test_a_broker_back_in_a_running_cluster_gets_metadata_then_its_partitions_then_metadata() -> None:
    restart = _replay(SCENARIO)[5]
    assert _to(restart, 1) == [(UM, 2), (LAI, 2), (UM, 2)]
    # The others only learn that it is back, then the partitions it follows.
    assert _to(restart, 2) == [(UM, 0), (UM, 2)]
    [lai] = [r for r in restart if r.request is LAI]
    assert [(p.partition, p.leader, p.isr, p.is_new) for p in lai.partitions] == [(0, 2, (2, 3), False),
                                                                                  (1, 2, (2, 3), False)]


def test_a_broker_failure_elects_first_then_takes_its_replicas_out_and_sends_nothing_to_it() -> None:
    failure = _replay(SCENARIO)[4]
    assert {r.broker for r in failure} == {2, 3}
    assert [(r.batch, str(r.request), r.broker) for r in failure if r.broker == 2] == [(0, LAI, 2), (0, UM, 2),
                                                                                       (1, LAI, 2), (1, UM, 2)]
    elected = next(r for r in failure if r.batch == 0 and r.request is LAI)
    assert [(p.topic, p.partition, p.leader, p.leader_epoch) for p in elected.partitions] == [("t", 0, 2, 1)]


def test_a_topic_deletion_marks_it_in_metadata_then_stops_and_deletes_every_replica() -> None:
    deletion = _replay(SCENARIO)[8]
    assert [(str(r.request), r.broker) for r in deletion] == [(UM, 1), (UM, 2), (UM, 3), (SR, 1), (SR, 2), (SR, 3),
                                                              (SR, 1), (SR, 2), (SR, 3)]
    assert {(p.leader, p.leader_epoch) for p in deletion[0].partitions} == {(-2, -2)}  # LeaderDuringDelete
    assert [[p.delete for p in r.partitions] for r in deletion[3:]] == [[False, False]] * 3 + [[True, True]] * 3
    assert {p.leader_epoch for r in deletion[3:] for p in r.partitions} == {-2}


def test_a_controlled_shutdown_moves_leadership_then_stops_the_follower_twice() -> None:
    # doControlledShutdown: led partitions elect (the shutting-down broker still gets the LeaderAndIsr), then a
    # StopReplica for what it follows, then OfflineReplica sends it another and the others the shrunk ISR; each
    # batch's UpdateMetadata names the partitions it changed.
    events = [*SCENARIO[:4], _event(4, "BrokerChange", broker_id=2, change="CONTROLLED_SHUTDOWN",
                                    broker_epoch=EPOCHS[2])]
    shutdown = _replay(events)[4]
    assert _to(shutdown, 2) == [(LAI, 1), (UM, 1), (SR, 1), (UM, 1), (SR, 1)]
    elected = next(r for r in shutdown if r.request is LAI and r.broker == 2)
    assert [(p.partition, p.leader, p.isr) for p in elected.partitions] == [(1, 3, (3, 1))]
    shrunk = next(r for r in shutdown if r.request is LAI and r.broker == 1 and r.batch > 0)
    assert [(p.partition, p.leader, p.isr) for p in shrunk.partitions] == [(0, 1, (1, 3))]


def test_a_new_controller_tells_every_broker_who_is_live_then_every_replica_its_partition() -> None:
    events = [*SCENARIO[:4], _event(4, "ControllerChange", controller_id=3, controller_epoch=2,
                                    live_brokers={str(b): e for b, e in EPOCHS.items()})]
    failover = _replay(events)[4]
    assert [(str(r.request), r.broker, len(r.partitions)) for r in failover] == [
        (UM, 1, 0), (UM, 2, 0), (UM, 3, 0), (LAI, 1, 2), (LAI, 2, 2), (LAI, 3, 2), (UM, 1, 2), (UM, 2, 2), (UM, 3, 2)]


def test_a_reassignment_sends_the_new_replica_set_with_the_added_replica_as_new() -> None:
    events = [*SCENARIO[:4], _event(4, "ReassignPartitions", partitions=[{"topic": "t", "partition": 0,
                                                                          "replicas": [2, 3, 4]}])]
    events.insert(3, _startup(9, 4, 13))
    start = _replay(events)[5]
    lai = [(r.batch, r.broker, [(p.replicas, p.adding_replicas, p.removing_replicas, p.is_new) for p in r.partitions])
           for r in start if r.request is LAI]
    # updateLeaderEpochAndSendRequest to the whole replica set, then NewReplica for broker 4 in a batch of its own.
    assert lai == [(0, 1, [((2, 3, 4, 1), (4,), (1,), False)]), (0, 2, [((2, 3, 4, 1), (4,), (1,), False)]),
                   (0, 3, [((2, 3, 4, 1), (4,), (1,), False)]), (0, 4, [((2, 3, 4, 1), (4,), (1,), True)]),
                   (1, 4, [((2, 3, 4, 1), (4,), (1,), True)])]


def test_one_alter_partition_naming_two_partitions_is_one_update_metadata_after_both_are_written() -> None:
    # Campaign seeds 15, 21 and 27 (protocol 3.9): a leader's AlterPartition for two partitions, written one after
    # the other; the controller sent one UpdateMetadata naming both to every broker (processAlterPartition).
    request = [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}]
    events = [*SCENARIO[:6], *(_event(n, "IsrChange", topic="t", partition=p, broker_id=2, broker_epoch=EPOCHS[2],
                                      leader_epoch=1, partition_epoch=1, isr=[2, 3, 1], request_partitions=request)
                               for n, p in ((6, 0), (7, 1)))]
    first, last = _replay(events)[6:]
    assert first == []
    assert [(str(r.request), r.broker, [(p.partition, p.isr, p.partition_epoch) for p in r.partitions])
            for r in last] == [(UM, b, [(0, (2, 3, 1), 2), (1, (2, 3, 1), 2)]) for b in (1, 2, 3)]


def test_an_alter_partition_naming_two_partitions_completes_their_reassignments_after_its_update_metadata() -> None:
    # Campaign seed 1023 (Kafka 2.7.2): processAlterIsr writes the request's partitions, sends one UpdateMetadata naming
    # them, answers, and only then completes each reassignment the request lets complete (maybeCompleteReassignment),
    # in its last partition's event; the first partition's event writes its ISR alone.
    controller = Controller(ControllerConfig())
    for offset, raw in enumerate([*SCENARIO[:6], _event(6, "ReassignPartitions", partitions=[
            {"topic": "t", "partition": p, "replicas": [1, 2]} for p in (0, 1)])]):
        controller.handle_event(parse_event(raw), offset)
    request = [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}]
    first, last = (controller.handle_event(parse_event(_event(
        n, "IsrChange", topic="t", partition=p, broker_id=2, broker_epoch=EPOCHS[2],
        leader_epoch=controller.partitions[("t", p)].leader_epoch,
        partition_epoch=controller.partitions[("t", p)].partition_epoch, isr=[2, 3, 1], request_partitions=request)),
        n) for n, p in ((7, 0), (8, 1)))
    assert first.requests == [] and [h.command.action for h in first.handled] == [Action.ISR_CHANGE]
    assert [(h.command.action, h.command.partition) for h in last.handled] == [
        (Action.ISR_CHANGE, 1), (Action.COMPLETE_REASSIGNMENT, 0), (Action.COMPLETE_REASSIGNMENT, 1)]
    to_broker_1 = [(r.batch, str(r.request), [p.partition for p in r.partitions]) for r in last.requests
                   if r.broker == 1 and r.request is not SR]
    assert to_broker_1[:3] == [(0, UM, [0, 1]), (1, LAI, [0]), (1, UM, [0])]
    assert [partition for _, request, [partition, *_] in to_broker_1 if request == LAI] == [0, 0, 1, 1]
    assert all(controller.partitions[("t", p)].replicas == (1, 2) for p in (0, 1))


def test_below_protocol_2_7_a_leaders_own_isr_write_is_sent_only_once_the_controller_reads_its_notification() -> None:
    # Campaign seed 12 (protocol 2.6): leader 2 wrote t2-0's ISR [2, 1] (zkVersion 3) itself; 3 s later, before it
    # announced it, broker 4's startup got t2-0 as the controller's cache still held it: ISR [2], zkVersion 2. The
    # controller then read the notifications and sent one UpdateMetadata naming their partitions.
    config = ControllerConfig(metadata_version=ZOOKEEPER_ERA_PROTOCOL)
    events = [*SCENARIO[:5],  # broker 1 failed: t-0 led by 2, ISR [2, 3], epochs 1
              _event(5, "IsrChange", topic="t", partition=0, broker_id=2, broker_epoch=EPOCHS[2], leader_epoch=1,
                     partition_epoch=1, isr=[2]),
              _startup(6, 1, 20),
              _event(7, "IsrChangeNotification", partitions=[{"topic": "t", "partition": 0}]),
              _startup(8, 3, 21)]
    written, startup, notification, later = _replay(events, config)[5:]
    assert written == []
    [lai] = [r for r in startup if r.request is LAI and r.broker == 1]
    assert [(p.partition, p.isr, p.partition_epoch) for p in lai.partitions] == [(0, (2, 3), 1), (1, (2, 3), 1)]
    assert [(str(r.request), r.broker, [(p.partition, p.isr, p.partition_epoch) for p in r.partitions])
            for r in notification] == [(UM, b, [(0, (2,), 2)]) for b in (1, 2, 3)]
    [lai] = [r for r in later if r.request is LAI and r.broker == 3]
    assert [(p.isr, p.partition_epoch) for p in lai.partitions if p.partition == 0] == [((2,), 2)]


def test_only_the_zk_rules_send_requests() -> None:
    assert not any(_replay(SCENARIO, ControllerConfig(rules=KRAFT)))


def test_a_startup_that_resumes_a_deletion_names_every_partition_of_the_topic_in_one_update_metadata() -> None:
    # Campaign seed 19 (3.9): resumeDeletionForTopics, after the startup's own batches, runs onTopicDeletion for the
    # whole topic: one UpdateMetadata naming all its partitions (leader -2), also those with no replica on the
    # broker, then the StopReplica batches of the replicas still to delete.
    events = [*SCENARIO[:3], _event(3, "CreateTopic", topic="u", assignment={"0": [1, 2], "1": [3, 1]}),
              _event(4, "BrokerChange", broker_id=3, change="FAILURE", broker_epoch=EPOCHS[3]),
              _event(5, "DeleteTopic", topic="u"), _startup(6, 3, 30)]
    restart = _replay(events)[6]
    # Its replica online first: the partition's state, as ever (OnlineReplica from ReplicaDeletionIneligible).
    assert [(r.batch, str(r.request), r.broker) for r in restart if r.request is LAI] == [(2, LAI, 3)]
    resumed = [r for r in restart if r.batch >= 3]
    assert [(str(r.request), r.broker, [(p.partition, p.delete) for p in r.partitions]) for r in resumed] == [
        (UM, 1, [(0, None), (1, None)]), (UM, 2, [(0, None), (1, None)]), (UM, 3, [(0, None), (1, None)]),
        (SR, 3, [(1, False)]), (SR, 3, [(1, True)])]
    assert {(p.leader, p.leader_epoch) for p in resumed[0].partitions} == {(-2, -2)}


def test_a_startup_resumes_a_reassignment_onto_it_of_a_topic_being_deleted_then_its_deletion() -> None:
    # Campaign seed 26 (2.6, 07:03:00.264): t0-0 (replicas [2, 3, 1, 4], adding 3) deleted while broker 2 was down;
    # 2's startup resumed the reassignment (maybeResumeReassignments skips no topic being deleted): LeaderAndIsr of
    # the bumped epoch to 1, 2 and 3 (3 as new), UpdateMetadata of it (leader -2); NewReplica of 3, deleted already,
    # failed and sent nothing; then the deletion went on: UpdateMetadata, StopReplica to 2, StopReplica deleting.
    events = [*SCENARIO[:3], _event(3, "CreateTopic", topic="u", assignment={"0": [1, 2]}),
              _event(4, "ReassignPartitions", partitions=[{"topic": "u", "partition": 0, "replicas": [1, 2, 3]}]),
              _event(5, "BrokerChange", broker_id=1, change="FAILURE", broker_epoch=EPOCHS[1]),
              _event(6, "DeleteTopic", topic="u"), _startup(7, 1, 20)]
    restart = _replay(events)[7]
    assert [(r.batch, str(r.request), r.broker) for r in restart if r.batch >= 2] == [
        (2, LAI, 1), (2, UM, 1), (2, UM, 2), (2, UM, 3),  # its replica online
        (3, LAI, 1), (3, LAI, 2), (3, LAI, 3), (3, UM, 1), (3, UM, 2), (3, UM, 3),  # the reassignment resumed
        (4, UM, 1), (4, UM, 2), (4, UM, 3), (5, SR, 1), (6, SR, 1)]  # the deletion resumed
    online, resumed = ([(r.broker, p.leader_epoch, p.partition_epoch, p.adding_replicas, p.is_new)
                        for r in restart if r.batch == batch and r.request is LAI for p in r.partitions]
                       for batch in (2, 3))
    assert online == [(1, 3, 3, (3,), False)]
    assert resumed == [(1, 4, 4, (3,), False), (2, 4, 4, (3,), False), (3, 4, 4, (3,), True)]
    assert {(p.leader, p.leader_epoch, p.partition_epoch) for r in restart if r.batch == 3 and r.request is UM
            for p in r.partitions} == {(-2, -2, 4)}


def test_a_controlled_shutdown_asked_again_stops_the_followers_and_resends_their_state() -> None:
    # Campaign seed 46 (2.6, 09:58:11.504 and 09:58:12.015): broker 1 still led partitions with nobody else in their
    # ISR and asked again; each time the controller's election failed (nothing sent), then StopReplica of the
    # partitions it follows, LeaderAndIsr of them to their other replicas, UpdateMetadata, and StopReplica again.
    events = [*SCENARIO[:4], _event(4, "IsrChange", topic="t", partition=1, broker_id=2, broker_epoch=EPOCHS[2],
                                    leader_epoch=0, partition_epoch=0, isr=[2]),
              *(_event(n, "BrokerChange", broker_id=2, change="CONTROLLED_SHUTDOWN", broker_epoch=EPOCHS[2])
                for n in (5, 6))]
    first, again = _replay(events)[5:]
    assert _to(first, 2) == [(SR, 1), (UM, 1), (SR, 1)]  # t-0: out of its ISR (written), t-1 still led by 2
    assert [(r.batch, str(r.request), r.broker, [(p.partition, p.leader, p.isr, p.delete) for p in r.partitions])
            for r in again] == [
        (0, SR, 2, [(0, None, None, False)]),
        (1, LAI, 1, [(0, 1, (1, 3), None)]), (1, LAI, 3, [(0, 1, (1, 3), None)]),
        (1, UM, 1, [(0, 1, (1, 3), None)]), (1, UM, 2, [(0, 1, (1, 3), None)]), (1, UM, 3, [(0, 1, (1, 3), None)]),
        (1, SR, 2, [(0, None, None, False)])]


def test_a_startup_elects_the_clusters_other_new_partitions_in_its_own_election_batch() -> None:
    # Campaign seed 1208 (3.9.1 at protocol 2.6): broker 4's startup elected t0-0 and t1-0, its own, and t1-1, no
    # replica of it, in one batch: onBrokerStartup's one triggerOnlinePartitionStateChange tries every New and Offline
    # partition of the cluster, one LeaderAndIsr per leader and one UpdateMetadata naming all three. Here u-0 is
    # broker 2's, offline at its failure, and t-0 New (created while its one replica was down, then reassigned onto
    # live broker 3, as in seed 143): broker 2's startup elects both.
    events = [_event(0, "ControllerChange", controller_id=3, live_brokers={str(b): e for b, e in EPOCHS.items()}),
              _event(1, "CreateTopic", topic="u", assignment={"0": [2]}),
              _event(2, "BrokerChange", broker_id=1, change="FAILURE", broker_epoch=EPOCHS[1]),
              _event(3, "BrokerChange", broker_id=2, change="FAILURE", broker_epoch=EPOCHS[2]),
              _event(4, "CreateTopic", topic="t", assignment={"0": [1]}),
              _event(5, "ReassignPartitions", partitions=[{"topic": "t", "partition": 0, "replicas": [3]}]),
              _startup(6, 2, 20)]
    restart = _replay(events, ControllerConfig(rules=ZK))[6]
    sent = [(r.batch, str(r.request), r.broker, [(p.topic, p.leader) for p in r.partitions]) for r in restart
            if r.request is LAI or len(r.partitions) == 2]
    # Its replica of u-0 online (leaderless still), then the one election batch.
    assert sent == [(2, LAI, 2, [("u", -1)]), (3, LAI, 2, [("u", 2)]), (3, LAI, 3, [("t", 3)]),
                    (3, UM, 2, [("t", 3), ("u", 2)]), (3, UM, 3, [("t", 3), ("u", 2)])]


def test_topics_one_read_of_brokers_topics_found_are_created_in_one_batch_at_the_last_ones_event() -> None:
    # processTopicChange read t6 and t7 together (seed 1216): one onNewPartitionCreation, one LeaderAndIsr per broker
    # naming both topics' partitions, one UpdateMetadata of them all; t6's event sends none. t8's partition has no
    # live replica (broker 4 is not registered): it stays New and is in no request.
    read = ["t6", "t7", "t8"]
    events = [*SCENARIO[:3], _event(3, "CreateTopic", topic="t6", assignment={"0": [2, 3]}, topics=read),
              _event(4, "CreateTopic", topic="t7", assignment={"0": [1, 2], "1": [3, 1]}, topics=read),
              _event(5, "CreateTopic", topic="t8", assignment={"0": [4]}, topics=read)]
    *_, t6, t7, t8 = _replay(events)
    assert t6 == [] and t7 == []
    assert [(r.batch, str(r.request), r.broker, [(p.topic, p.partition, p.is_new) for p in r.partitions])
            for r in t8 if r.request is LAI] == [
        (0, LAI, 1, [("t7", 0, True), ("t7", 1, True)]), (0, LAI, 2, [("t6", 0, True), ("t7", 0, True)]),
        (0, LAI, 3, [("t6", 0, True), ("t7", 1, True)])]
    assert [(r.batch, r.broker, len(r.partitions)) for r in t8 if r.request is UM] == [(0, 1, 3), (0, 2, 3), (0, 3, 3)]
    # Each alone: a batch per event, the same partition states.
    alone = _replay([*SCENARIO[:3], *(e.replace(b', "topics": ["t6", "t7", "t8"]', b"") for e in events[3:])])
    assert [len(requests) for requests in alone[3:]] == [5, 6, 0]
    together = {p for r in t8 for p in r.partitions}
    assert together == {p for requests in alone[3:] for r in requests for p in r.partitions}


def _stop_replicas(requests: list[Request], broker: int) -> list[tuple[int, list[tuple[str, int]]]]:
    return [(r.batch, [(p.topic, p.partition) for p in r.partitions]) for r in requests
            if r.request is SR and r.broker == broker and not any(p.delete for p in r.partitions)]


FAILED_DIR_DELETION = [
    _event(0, "ControllerChange", controller_id=2, live_brokers={"1": 10, "2": 11, "3": 12, "4": 13}),
    _event(1, "CreateTopic", topic="x", assignment={"0": [1, 3]}),
    _event(2, "CreateTopic", topic="y", assignment={"0": [1, 3], "1": [4, 3]}),
    _event(3, "LogDirEventNotification", broker_id=3, offline_replicas=[
        {"topic": "x", "partition": 0}, {"topic": "y", "partition": 0}, {"topic": "y", "partition": 1}]),
]


def test_a_deletions_stop_replica_answers_each_retry_the_topics_they_complete() -> None:
    # TopicDeletionStopReplicaResponseReceived, one per broker's answer, each ending in resumeDeletions: a topic's
    # failed replicas (broker 3's, in its failed dir) are retried once its last live replica answered (seed 1105:
    # t3-1, then t0-1, two requests). By broker id: broker 1's answer completes x (y still waits for broker 4's).
    *_, deletion, same = _replay([*FAILED_DIR_DELETION, _event(4, "DeleteTopic", topic="x", topics=["x", "y"]),
                                  _event(5, "DeleteTopic", topic="y", topics=["x", "y"])])
    assert same == []
    assert _stop_replicas(deletion, 3) == [(3, [("x", 0)]), (4, [("y", 0), ("y", 1)])]


def test_a_startups_resumed_deletion_retries_in_the_order_the_brokers_answered() -> None:
    # Seed 1105: broker 3 restarts with the dir holding x's and y's replicas failed. Its answers fail their
    # deletion; then broker 1's and broker 4's answers come, each ending in resumeDeletions. By broker id x is
    # retried at broker 1's answer and y at broker 4's; when broker 4 answered first
    # (BrokerChange.stop_replica_answer_order), broker 1's lets both be retried in one batch.
    events = [*FAILED_DIR_DELETION, _event(4, "BrokerChange", broker_id=3, change="FAILURE", broker_epoch=12),
              _event(5, "DeleteTopic", topic="x", topics=["x", "y"]),
              _event(6, "DeleteTopic", topic="y", topics=["x", "y"]),
              json.dumps({"event_id": "e7", "type": "ControllerChange", "controller_epoch": 2, "controller_id": 1,
                          "ts": "2026-11-25T03:34:00Z", "live_brokers": {"1": 10, "2": 11, "4": 13}}).encode()]

    def startup(**fields: Any) -> list[Request]:
        raw = json.dumps({"event_id": "e8", "type": "BrokerChange", "controller_epoch": 2, "broker_id": 3,
                          "change": "STARTUP", "broker_epoch": 20, "ts": "2026-11-25T03:34:00Z", **fields}).encode()
        return _replay([*events, raw])[-1]

    by_id = _stop_replicas(startup(), 3)
    assert [keys for _, keys in by_id[-2:]] == [[("x", 0)], [("y", 0), ("y", 1)]]
    answered = _stop_replicas(startup(stop_replica_answer_order=[3, 4, 1]), 3)
    assert answered[:-1] == by_id[:-2] and answered[-1][1] == [("x", 0), ("y", 0), ("y", 1)]
    # Seed 1519 (Kafka 3.5.2): the failing broker answered last. Its LeaderAndIsr answer failed the replicas, retried
    # once the others' answers were in; its StopReplica (delete) answer, KAFKA_STORAGE_ERROR, failed them again
    # (OfflineReplica -> ReplicaDeletionIneligible) and its resumeDeletions retried them again: a StopReplica more.
    last = _stop_replicas(startup(stop_replica_answer_order=[4, 1, 3]), 3)
    assert last[:-1] == answered and last[-1][1] == [("x", 0), ("y", 0), ("y", 1)]


def test_a_startups_own_storage_error_answer_fails_the_resumed_deletion_of_its_replica_in_the_failed_dir() -> None:
    # Seed 1424 (Kafka 3.9.1 at protocol 2.6): broker 1 restarts with a dir that failed while it was down holding its
    # replica of d-0 (BrokerChange.offline_replicas), d being deleted. The startup resumes the deletion (StopReplica,
    # delete, of d-0 and d-1 to 1); broker 1 answers KAFKA_STORAGE_ERROR for d-0 there too, so its replica fails
    # (ReplicaDeletionIneligible) while d-1's is deleted, and resumeDeletions retries it once the answer is in:
    # OfflineReplica, a StopReplica (no delete) of d-0 to broker 1, d never completed.
    events = [_event(0, "ControllerChange", controller_id=2, live_brokers={"1": 10, "2": 11, "3": 12}),
              _event(1, "CreateTopic", topic="d", assignment={"0": [1, 3], "1": [1, 3]}),
              _event(2, "BrokerChange", broker_id=1, change="FAILURE", broker_epoch=10),
              _event(3, "DeleteTopic", topic="d"),
              _startup(4, 1, 20, offline_replicas=[{"topic": "d", "partition": 0}])]
    controller = Controller(ControllerConfig())
    for offset, raw in enumerate(events):
        requests = controller.handle_event(parse_event(raw), offset).requests
    assert _stop_replicas(requests, 1)[-1][1] == [("d", 0)]  # the retry, after the StopReplica deleting it
    assert controller.partitions[("d", 0)].replica_states == {1: ReplicaState.OFFLINE,
                                                              3: ReplicaState.DELETION_SUCCESSFUL}
    assert "d" in controller.cluster.topics_queued_for_deletion


def test_a_dir_failing_as_its_broker_deletes_a_replica_fails_the_deletion_until_its_notification_asks_again() -> None:
    # Seed 1274 (Kafka 3.9.1 at protocol 2.6): broker 2's dir failed renaming d-0's log for deletion; it answered the
    # StopReplica (delete) with KAFKA_STORAGE_ERROR before its notification was written (DeleteTopic
    # .storage_error_answers). d-0's replica on 2 fails (ReplicaDeletionIneligible); once broker 1's, 3's and 4's
    # answers are in, resumeDeletions retries it: back to OfflineReplica, a StopReplica (no delete) to 2, and d is
    # never completed. The notification then moves it to OnlineReplica again (a LeaderAndIsr of d-0 to 2), its answer
    # names it, and failReplicaDeletion from OnlineReplica is no valid transition: nothing more for d-0.
    events = [_event(0, "ControllerChange", controller_id=2, live_brokers={"1": 10, "2": 11, "3": 12, "4": 13}),
              _event(1, "CreateTopic", topic="d", assignment={"0": [4, 2], "1": [1, 3]}),
              _event(2, "CreateTopic", topic="u", assignment={"0": [2, 1]})]
    failed = {"2": [{"topic": "d", "partition": 0}]}
    notification = _event(4, "LogDirEventNotification", broker_id=2, offline_replicas=[
        {"topic": "d", "partition": 0}, {"topic": "u", "partition": 0}])
    controller = Controller(ControllerConfig())
    for offset, raw in enumerate(events):
        controller.handle_event(parse_event(raw), offset)
    deletion = controller.handle_event(parse_event(_event(3, "DeleteTopic", topic="d", storage_error_answers=failed)),
                                       3).requests
    assert _stop_replicas(deletion, 2)[-1][1] == [("d", 0)]  # the retry, after the StopReplica deleting it
    assert "d" in controller.cluster.topics_queued_for_deletion
    assert controller.partitions[("d", 0)].replica_states == {4: ReplicaState.DELETION_SUCCESSFUL,
                                                              2: ReplicaState.OFFLINE}
    asked = controller.handle_event(parse_event(notification), 4).requests
    assert sorted(p.topic for r in asked if r.request is LAI and r.broker == 2 for p in r.partitions) == ["d", "u"]
    assert _stop_replicas(asked, 2) == [(_stop_replicas(asked, 2)[0][0], [("u", 0)])]  # none for d-0
    assert controller.partitions[("d", 0)].replica_states[2] is ReplicaState.ONLINE
    # Without the answer the deletion completes: no retry, the topic gone.
    plain = Controller(ControllerConfig())
    for offset, raw in enumerate([*events, _event(3, "DeleteTopic", topic="d")]):
        requests = plain.handle_event(parse_event(raw), offset).requests
    assert _stop_replicas(requests, 2) == [(1, [("d", 0)])] and "d" not in plain.cluster.topics


def test_a_failed_deletions_notification_before_the_other_answers_leaves_nothing_to_retry() -> None:
    # Seed 1412 (Kafka 3.9.1 at protocol 2.6): broker 3 answered t2-1's StopReplica (delete) with KAFKA_STORAGE_ERROR
    # (ReplicaDeletionIneligible), and the controller handled its log dir notification before brokers 1's and 2's
    # answers (controller.log): the notification's LeaderAndIsr took the replica back to OnlineReplica, so when the
    # last answer's resumeDeletions came no replica was ReplicaDeletionIneligible: no retry, no write (the DeleteTopic
    # says `stop_replica_answered` false, the notification takes the other answers: `deletion_answers`).
    events = [_event(0, "ControllerChange", controller_id=2, live_brokers={"1": 10, "2": 11, "3": 12, "4": 13}),
              _event(1, "CreateTopic", topic="d", assignment={"0": [4, 2], "1": [1, 3]}),
              _event(2, "CreateTopic", topic="u", assignment={"0": [2, 1]})]
    failed = {"2": [{"topic": "d", "partition": 0}]}
    controller = Controller(ControllerConfig())
    for offset, raw in enumerate(events):
        controller.handle_event(parse_event(raw), offset)
    deletion = controller.handle_event(parse_event(_event(3, "DeleteTopic", topic="d", storage_error_answers=failed,
                                                          stop_replica_answered=False)), 3).requests
    assert [keys for _, keys in _stop_replicas(deletion, 2)] == [[("d", 0)]]  # the deletion's, no retry
    assert controller.partitions[("d", 0)].replica_states == {4: ReplicaState.DELETION_STARTED,
                                                              2: ReplicaState.DELETION_INELIGIBLE}
    leader_epoch = controller.partitions[("d", 0)].leader_epoch
    asked = controller.handle_event(parse_event(_event(4, "LogDirEventNotification", broker_id=2, offline_replicas=[
        {"topic": "d", "partition": 0}, {"topic": "u", "partition": 0}], deletion_answers=["d"])), 4).requests
    assert sorted(p.topic for r in asked if r.request is LAI and r.broker == 2 for p in r.partitions) == ["d", "u"]
    assert [keys for _, keys in _stop_replicas(asked, 2)] == [[("u", 0)]]  # none for d-0
    assert controller.partitions[("d", 0)].replica_states == {4: ReplicaState.DELETION_SUCCESSFUL,
                                                              2: ReplicaState.ONLINE}
    assert controller.partitions[("d", 0)].leader_epoch == leader_epoch
    assert "d" in controller.cluster.topics_queued_for_deletion


def test_a_failed_deletions_notification_takes_only_that_deletions_answers() -> None:
    # The notification takes the StopReplica answers of the read whose deletion its broker failed (`deletion_answers`
    # names that read's topics); a later read's deletion, its answers not in yet, keeps waiting for its own.
    events = [_event(0, "ControllerChange", controller_id=2, live_brokers={"1": 10, "2": 11, "3": 12, "4": 13}),
              _event(1, "CreateTopic", topic="d", assignment={"0": [4, 2]}),
              _event(2, "CreateTopic", topic="x", assignment={"0": [1, 3]}),
              _event(3, "DeleteTopic", topic="d", storage_error_answers={"2": [{"topic": "d", "partition": 0}]},
                     stop_replica_answered=False),
              _event(4, "DeleteTopic", topic="x", stop_replica_answered=False)]
    controller = Controller(ControllerConfig())
    for offset, raw in enumerate(events):
        controller.handle_event(parse_event(raw), offset)
    waiting = {1: ReplicaState.DELETION_STARTED, 3: ReplicaState.DELETION_STARTED}
    assert controller.partitions[("x", 0)].replica_states == waiting
    controller.handle_event(parse_event(_event(5, "LogDirEventNotification", broker_id=2, offline_replicas=[
        {"topic": "d", "partition": 0}], deletion_answers=["d"])), 5)
    assert controller.partitions[("d", 0)].replica_states[4] is ReplicaState.DELETION_SUCCESSFUL
    assert controller.partitions[("x", 0)].replica_states == waiting


def _epoch_event(n: int, epoch: int, kind: str, **fields: Any) -> bytes:
    return json.dumps({"event_id": f"e{n}", "type": kind, "controller_epoch": epoch, "ts": "2026-11-27T05:22:00Z",
                       **fields}).encode()


def _reassigning_then_failover(*before: bytes, **failover: Any) -> list[Request]:
    """t0-0, t1-0 and t1-1 being reassigned from [1, 2] to [3, 4] when controller 3 takes over (after `before`, events
    numbered from 4): its requests."""
    live = {str(b): 10 + b for b in (1, 2, 3, 4)}
    read = [{"topic": t, "partition": p, "replicas": [3, 4, 1, 2], "adding_replicas": [3, 4],
             "removing_replicas": [1, 2]} for t, p in (("t0", 0), ("t1", 0), ("t1", 1))]
    events = [_epoch_event(0, 1, "ControllerChange", controller_id=1, live_brokers=live),
              _epoch_event(1, 1, "CreateTopic", topic="t0", assignment={"0": [1, 2]}),
              _epoch_event(2, 1, "CreateTopic", topic="t1", assignment={"0": [1, 2], "1": [1, 2]}),
              _epoch_event(3, 1, "ReassignPartitions", partitions=[
                  {"topic": t, "partition": p, "replicas": [3, 4]} for t, p in (("t0", 0), ("t1", 0), ("t1", 1))]),
              *before,
              _epoch_event(4 + len(before), 2, "ControllerChange", controller_id=3, live_brokers=live,
                           reassignments=read,
                           **failover)]
    return _replay(events)[-1]


def _resumed(requests: list[Request]) -> list[tuple[str, int]]:
    """The partitions of the resumed reassignments' LeaderAndIsr to new replica 3, one batch each, in batch order."""
    return [(p.topic, p.partition) for r in requests if r.request is LAI and r.broker == 3
            and len(r.partitions) == 1 for p in r.partitions]


def test_a_failover_resumes_the_reassignments_the_znode_still_names_first() -> None:
    # Kafka 2.7.2 campaign seed 1043: /admin/reassign_partitions still named t1-1 and t1-0 when controller 4 took over;
    # initializePartitionReassignments resumed them first (processZkPartitionReassignment, its map's order), then
    # t0-0, asked through the Admin API (maybeResumeReassignments skips those resumed already).
    assert _resumed(_reassigning_then_failover()) == [("t0", 0), ("t1", 1), ("t1", 0)]  # the set's order alone
    in_znode = [{"topic": "t1", "partition": 0}, {"topic": "t1", "partition": 1}]
    assert _resumed(_reassigning_then_failover(znode_reassignments=in_znode)) == [("t1", 1), ("t1", 0), ("t0", 0)]


def test_a_failover_resumes_a_znode_reassignment_of_a_topic_being_deleted_with_the_others() -> None:
    # Kafka 3.9.1 at protocol 2.6, campaign seed 1284: the znode still named t4-0 and t0-2 when controller 2 took over,
    # t4 queued for deletion. processZkPartitionReassignment refused t4-0 (maybeTriggerPartitionReassignment: "Skipping
    # reassignment of t4-0 since the topic is currently being deleted") and maybeResumeReassignments resumed it
    # after t0-2. Here t1 is queued for deletion (broker 4, hosting it, dead): its partitions go in the set's order.
    in_znode = [{"topic": "t1", "partition": 0}, {"topic": "t1", "partition": 1}]
    dead = _epoch_event(4, 1, "BrokerChange", broker_id=4, change="FAILURE", broker_epoch=14)
    deleting = _epoch_event(5, 1, "DeleteTopic", topic="t1")
    assert _resumed(_reassigning_then_failover(dead, znode_reassignments=in_znode)) == [("t1", 1), ("t1", 0), ("t0", 0)]
    assert _resumed(_reassigning_then_failover(dead, deleting, znode_reassignments=in_znode)) == [
        ("t0", 0), ("t1", 1), ("t1", 0)]


def test_a_failover_starts_over_a_znode_reassignment_the_topics_assignment_lost() -> None:
    # Kafka 3.0.2 campaign seed 1547: /admin/reassign_partitions asked t1-2 from [2] to [4] (broker 4 dead); the
    # controller wrote its assignment, then an admin CreatePartitions read before that write put t1's assignment back
    # with t1-2 on [2] alone. The next controller read [2], knew no state of replica 4 (NonExistentReplica) and
    # started the znode's reassignment over: the bump's LeaderAndIsr and UpdateMetadata, then 4's NewReplica
    # transition, whose LeaderAndIsr to dead broker 4 is dropped and whose UpdateMetadata goes out (00:26:08.373).
    # Resumed from the old controller's reassignment, 4 would be offline (ReplicaDeletionIneligible): no NewReplica.
    live = {str(b): 10 + b for b in (1, 2, 3)}

    def failover(**fields: Any) -> list[tuple[str, int, tuple[int, ...]]]:
        events = [_epoch_event(0, 1, "ControllerChange", controller_id=1, live_brokers=live),
                  _epoch_event(1, 1, "CreateTopic", topic="t", assignment={"0": [2, 3]}),
                  _epoch_event(2, 1, "ReassignPartitions", through_znode=True,
                               partitions=[{"topic": "t", "partition": 0, "replicas": [4, 3]}]),
                  _epoch_event(3, 2, "ControllerChange", controller_id=3, live_brokers={"1": 11, "3": 13}, **fields)]
        return [(r.request.name, r.broker, p.replicas) for r in _replay(events)[-1] if r.broker == 3
                for p in r.partitions]

    resumed = failover()
    assert resumed[-2:] == [("LEADER_AND_ISR", 3, (4, 3, 2)), ("UPDATE_METADATA", 3, (4, 3, 2))]
    assert all(replicas == (4, 3, 2) for _, _, replicas in resumed)
    restarted = failover(restarted_reassignments=[{"topic": "t", "partition": 0, "replicas": [2, 3],
                                                   "adding_replicas": [], "removing_replicas": []}])
    assert restarted[0] == ("LEADER_AND_ISR", 3, (2, 3))  # the replicas it read
    assert restarted[-3:] == [("LEADER_AND_ISR", 3, (4, 3, 2)), ("UPDATE_METADATA", 3, (4, 3, 2)),
                              ("UPDATE_METADATA", 3, (4, 3, 2))]


def test_a_failovers_storage_error_answers_are_handled_in_the_order_they_came() -> None:
    # Kafka 2.7.2 campaign seed 1240: brokers 4 and 2 answered the new controller's LeaderAndIsr with
    # KAFKA_STORAGE_ERROR, 4 first; each answer is an event of its own, handled in the order they came (its "Mark
    # replicas" lines): broker 4's StopReplica, then broker 2's. Without the order, by broker id.
    live = {str(b): 10 + b for b in (1, 2, 3, 4)}
    answers = {"2": [{"topic": "t", "partition": 0}], "4": [{"topic": "t", "partition": 1}]}

    def stopped(**order: Any) -> list[int]:
        events = [_epoch_event(0, 1, "ControllerChange", controller_id=1, live_brokers=live),
                  _epoch_event(1, 1, "CreateTopic", topic="t", assignment={"0": [2, 1], "1": [4, 3]}),
                  _epoch_event(2, 2, "ControllerChange", controller_id=3, live_brokers=live, offline_replicas=answers,
                               **order)]
        return [r.broker for r in _replay(events)[-1] if r.request is SR]

    assert stopped() == [2, 4]
    assert stopped(answer_order=[4, 2]) == [4, 2]


def test_an_answer_handled_before_anothers_sees_only_its_own_failed_replicas_offline() -> None:
    # Kafka 3.0.2 campaign seed 1267: brokers 3 and 1 answered the new controller's LeaderAndIsr with
    # KAFKA_STORAGE_ERROR, 3 first (t-1, a follower) then 1 (t-0, which it leads). Before KAFKA-13225 an answer sends
    # an UpdateMetadata of no partition when no partition has an offline leader, read from the answers handled so
    # far: broker 1's, not handled yet, leaves t-0's leader online to broker 3's, which sends it.
    live = {str(b): 10 + b for b in (1, 2, 3, 4)}
    answers = {"1": [{"topic": "t", "partition": 0}], "3": [{"topic": "t", "partition": 1}]}
    events = [_epoch_event(0, 1, "ControllerChange", controller_id=4, live_brokers=live),
              _epoch_event(1, 1, "CreateTopic", topic="t", assignment={"0": [1, 2], "1": [2, 3]}),
              _epoch_event(2, 2, "ControllerChange", controller_id=4, live_brokers=live, offline_replicas=answers,
                           answer_order=[3, 1])]
    failover = _replay(events, ControllerConfig(kafka_version=KafkaRelease(3, 0, 2)))[-1]
    stops = [i for i, r in enumerate(failover) if r.request is SR]
    assert [failover[i].broker for i in stops] == [3, 1]
    between = failover[stops[0] + 1:stops[1]]
    # Broker 3's answer: its StopReplica, then the UpdateMetadata of no partition to every live broker; broker 1's
    # answer then elects t-0 (its own UpdateMetadata names it), so sends none of no partition.
    assert sorted(r.broker for r in between if r.request is UM and not r.partitions) == [1, 2, 3, 4]
    assert not [r for r in failover[stops[1]:] if r.request is UM and not r.partitions]


def test_a_completion_whose_assignment_write_threw_sends_no_update_metadata() -> None:
    # Kafka 3.9.1 at protocol 2.6, campaign seed 1288: t0-0 reassigned from [2, 1] to [2, 3]; leader 1's ISR [1, 2, 3]
    # let controller 1 complete it: 2 elected (B3), 1 out of the ISR and stopped (B4), the assignment written (B5),
    # whose answer was SessionExpired ("Error processing event PartitionReassignmentIsrChange(t0-0)"): no
    # UpdateMetadata (B6) after the StopReplica.
    events = [_epoch_event(0, 1, "ControllerChange", controller_id=1, live_brokers={"1": 11, "2": 12, "3": 13}),
              _epoch_event(1, 1, "CreateTopic", topic="t", assignment={"0": [1, 2]}),
              _epoch_event(2, 1, "ReassignPartitions", partitions=[{"topic": "t", "partition": 0, "replicas": [2, 3]}])]

    def completion(**fields: Any) -> list[RequestType]:
        controller = Controller(ControllerConfig())
        for offset, raw in enumerate(events):
            controller.handle_event(parse_event(raw), offset)
        rec = controller.partitions[("t", 0)]
        isr_change = _epoch_event(3, 1, "IsrChange", topic="t", partition=0, broker_id=1, broker_epoch=11,
                                  leader_epoch=rec.leader_epoch, partition_epoch=rec.partition_epoch,
                                  isr=[1, 2, 3], **fields)
        requests = controller.handle_event(parse_event(isr_change), 3).requests
        assert controller.partitions[("t", 0)].replicas == (2, 3)  # the assignment was written either way
        return [r.request for r in requests if r.broker == 3]

    whole = completion()
    assert whole[-1] is UM and whole.count(LAI) == 2
    assert completion(controller_died_after_assignment=True) == whole[:-1]


def test_an_answer_within_a_failover_reads_only_its_own_elections() -> None:
    # Kafka 3.5.2 campaign seed 1439: controller 1's failover elected t4-0 (its leader 4 dead), then broker 1 answered
    # its LeaderAndIsr with KAFKA_STORAGE_ERROR for replicas of t1 only, a topic being deleted. From KAFKA-13225 that
    # answer (onReplicasBecomeOffline) sends an UpdateMetadata of no partition when none of its replicas went offline
    # outside a deletion and its own triggerOnlinePartitionStateChange elected nothing: the failover's election is
    # not its own, so it sends one.
    live = {str(b): 10 + b for b in (1, 2, 3, 4)}
    events = [_epoch_event(0, 1, "ControllerChange", controller_id=2, live_brokers=live),
              _epoch_event(1, 1, "CreateTopic", topic="d", assignment={"0": [1, 4]}),
              _epoch_event(2, 1, "CreateTopic", topic="t", assignment={"0": [4, 1]}),
              _epoch_event(3, 2, "ControllerChange", controller_id=1, live_brokers={"1": 11, "2": 12, "3": 13},
                           topics_to_delete=["d"], offline_replicas={"1": [{"topic": "d", "partition": 0}]})]
    failover = _replay(events, ControllerConfig(kafka_version=KafkaRelease(3, 5, 2)))[-1]
    elected = max(i for i, r in enumerate(failover)
                  if r.request is LAI and ("t", 0) in {(p.topic, p.partition) for p in r.partitions})
    after = [r.broker for r in failover[elected:] if r.request is UM and not r.partitions]
    assert sorted(after) == [1, 2, 3]
