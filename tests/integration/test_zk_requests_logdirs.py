"""A real ZooKeeper-mode controller's requests when a broker's log dir fails (JBOD: KAFKA_STORAGE_ERROR answers and
/log_dir_event_notification), each a kept campaign run replayed with its brokers' logs (zklog/requests, README
there)."""

from __future__ import annotations

import json
from pathlib import Path

from zk_kept import ZKLOG, every_request_equal, leader_and_isr, replayed

from streaming.io.jsonl import read_jsonl


def test_a_replica_offline_sends_its_leader_and_isr_to_a_replica_in_a_failed_log_dir(tmp_path: Path) -> None:
    # Campaign seed 706 (Kafka 3.5.2, two log dirs): broker 2's dir failed; its replica of t2-0 (replicas [2, 1], ISR
    # [2]) went offline, leader -1. Broker 1, whose own replica of t2-0 was in a dir failed earlier, still got the
    # LeaderAndIsr (the OfflineReplica step sends it to every other replica of the assignment; only brokers not
    # registered are dropped).
    summary, rows = replayed(ZKLOG / "requests" / "zookeeper-3.5-dirs-2-seed-706" / "version-2", tmp_path)
    assert "LeaderAndIsr 46 of 46 (isrflow 46), StopReplica 14 of 14 (isrflow 14), UpdateMetadata 84 of 84 " \
           "(isrflow 84)" in summary and all(r["match"] for r in rows)
    assert (2, 1, ["t0-1", "t2-0", "t2-2", "t3-0", "t3-1"]) in leader_and_isr(tmp_path, "zk-178")


def test_a_completion_queued_behind_a_request_and_an_in_place_bump_reaching_a_failed_dir(tmp_path: Path) -> None:
    # Campaign seed 808 (Kafka 3.9.1 at protocol 2.6, three log dirs; its history is a regression of
    # test_zk_histories): t0-1's leader took its target into the ISR itself just before the controller took an Admin
    # API reassignment of t1-1 asked again; the watch's completion of t0-1 came after it, so its LeaderAndIsr did
    # too. And t6-0's reassignment in place (B3, updateLeaderEpochAndSendRequest) reached broker 3 as well, whose
    # replica was in a failed log dir.
    kept = ZKLOG / "requests" / "zookeeper-2.6-dirs-3-seed-808"
    summary, _ = replayed(ZKLOG / "regressions" / kept.name / "version-2", tmp_path, kept)
    assert "LeaderAndIsr 92 of 92 (isrflow 92), StopReplica 21 of 21 (isrflow 21), UpdateMetadata 215 of 215 " \
           "(isrflow 215)" in summary
    assert all(r["match"] for r in read_jsonl(tmp_path / "requests_agreement.jsonl"))
    events = [e["event_id"] for e in read_jsonl(tmp_path / "zk" / "events.jsonl")]
    assert events.index("zk-117-t0-1") == events.index("zk-118-t1-1") + 1
    assert [b for _, b, parts in leader_and_isr(tmp_path, "zk-292-t3") if parts == ["t6-0"]] == [1, 3, 4]


def test_a_broker_whose_failed_dir_held_nothing_answers_storage_errors_for_the_logs_it_deleted(tmp_path: Path) -> None:
    # Campaign seed 815 (Kafka 2.7.2, two log dirs; its `version-2` is a regression of test_zk_histories): broker 2's
    # second dir failed while it held no replica, so its notification's answer named none. Later its session
    # expired while t4 was being deleted (its replicas of t4-0 and t4-1 deleted, t4-0's replica on broker 3 dead);
    # its re-registration resumed the deletion and broker 2 answered KAFKA_STORAGE_ERROR to the LeaderAndIsr and to
    # the StopReplica (LogManager.getOrCreateLog: no log re-created while any dir is offline), each answer's
    # resumeDeletions retrying both replicas: two more leader epoch bumps each, and a StopReplica per retry.
    logs = ZKLOG / "requests" / "zookeeper-2.7-dirs-2-seed-815"
    summary, _ = replayed(ZKLOG / "regressions" / logs.name / "version-2", tmp_path, logs)
    assert "LeaderAndIsr 53 of 53 (isrflow 53), StopReplica 20 of 20 (isrflow 20), UpdateMetadata 151 of 151 " \
           "(isrflow 151)" in summary and "16 of 16 equal" in summary
    stop_replicas = [(r["batch"], json.loads(r["partitions"])[0]["delete"])
                     for r in read_jsonl(tmp_path / "requests.jsonl")
                     if r["event_id"] == "zk-293-2" and r["request"] == "STOP_REPLICA"]
    assert stop_replicas == [(5, False), (6, True), (7, False), (8, False)]


def test_a_brokers_answer_to_its_startup_for_a_dir_that_failed_while_it_was_down_goes_with_the_startup(
        tmp_path: Path) -> None:
    # Campaign seed 805 (Kafka 3.0.2, three log dirs): broker 1, the controller, was killed and its second dir failed
    # while it was down, so it wrote no notification. At its restart (zk-218-1) it answered the startup's LeaderAndIsr
    # with KAFKA_STORAGE_ERROR for t1-0 and t1-1 (controller 2: "Mark replicas t1-1,t1-0 on broker 1 as offline"):
    # OfflineReplica, 1 being in neither ISR no write, but a LeaderAndIsr to broker 2, an UpdateMetadata and a
    # StopReplica to broker 1. The importer gives the mark to the startup (`offline_replicas`).
    summary, rows = replayed(ZKLOG / "requests" / "zookeeper-3.0-dirs-3-seed-805" / "version-2", tmp_path)
    assert "LeaderAndIsr 61 of 61 (isrflow 61), StopReplica 3 of 3 (isrflow 3), UpdateMetadata 145 of 145 " \
           "(isrflow 145)" in summary and all(r["match"] for r in rows)
    startup = next(e for e in read_jsonl(tmp_path / "zk" / "events.jsonl") if e["event_id"] == "zk-218-1")
    assert startup["offline_replicas"] == [{"topic": "t1", "partition": 0}, {"topic": "t1", "partition": 1}]


def test_a_log_dirs_answer_elects_a_new_partition_a_failed_reassignment_gave_a_live_replica(tmp_path: Path) -> None:
    # Campaign seed 1008 (Kafka 3.9.1 at protocol 2.6, three log dirs; its `version-2` is a regression of
    # test_zk_histories): t2-2 was created while its one replica's broker was dead (no state znode), then reassigned
    # through the znode to broker 4, whose start failed (no state to bump). Broker 4's answer to its log dir
    # notification took t1-3 offline, and onReplicasBecomeOffline's triggerOnlinePartitionStateChange elected t2-2
    # too, in the one election batch (controller 4's state-change.log: LeaderAndIsr of t1-3 to broker 2 and of t2-2,
    # new, to broker 4, one UpdateMetadata of both), then took t1-3's replica offline. isrflow had elected only t1-3.
    logs = ZKLOG / "requests" / "zookeeper-2.6-dirs-3-seed-1008"
    summary, rows = replayed(ZKLOG / "regressions" / logs.name / "version-2", tmp_path, logs)
    assert "LeaderAndIsr 65 of 65 (isrflow 65), StopReplica 3 of 3 (isrflow 3), UpdateMetadata 150 of 150 " \
           "(isrflow 150)" in summary and all(r["match"] for r in rows)
    answer = [(batch, broker, parts) for batch, broker, parts in leader_and_isr(tmp_path, "zk-253") if batch > 0]
    assert answer == [(1, 2, ["t1-3"]), (1, 4, ["t2-2"]), (2, 2, ["t1-3"])]


def test_a_log_dirs_answer_queued_behind_a_reassignment_is_no_controlled_shutdown(tmp_path: Path) -> None:
    # Campaign seed 1035 (Kafka 2.8.2, three log dirs; its `version-2` is a regression of test_zk_histories): broker
    # 4's dir failed; controller 3 read the notification (LeaderAndIsr of t0-0 and t0-1 to broker 4), then handled an
    # Admin API reassignment of t2-0 that came meanwhile, then broker 4's answer ("Mark replicas t0-1 on broker 4"):
    # t0-1 without 4 (0xc5). The importer read that write as broker 4's controlled shutdown, so isrflow took 4 out of
    # t0-0 too and left it out of t7 and t8, created later with replicas on it (StopReplica 12 of 14, isrflow 16).
    logs = ZKLOG / "requests" / "zookeeper-2.8-dirs-3-seed-1035"
    summary, rows = replayed(ZKLOG / "regressions" / logs.name / "version-2", tmp_path, logs)
    assert "StopReplica 14 of 14 (isrflow 14)" in summary and "18 of 18 equal" in summary
    events = read_jsonl(tmp_path / "zk" / "events.jsonl")
    assert not [e for e in events if e.get("change") == "CONTROLLED_SHUTDOWN"]
    created = {(d["topic"], d["partition"]): (d["leader"], d["isr"]) for d in read_jsonl(tmp_path / "decisions.jsonl")
               if d["cause"] == "CreateTopic" and d["topic"] in ("t7", "t8")}  # isrflow's: broker 4 online for them
    assert created == {("t7", 0): (4, [4, 2, 1]), ("t8", 0): (1, [1, 2, 4]), ("t8", 1): (3, [3, 4, 2])}
    # The answer is handled after the reassignment, the controller's order: the request's event carries it
    # (isrflow had handled it within the notification's event, before the reassignment: broker 1's LeaderAndIsr of
    # t0-1 and one UpdateMetadata per broker out of order, LeaderAndIsr 54 of 55, UpdateMetadata 161 of 165).
    assert "LeaderAndIsr 55 of 55 (isrflow 55), StopReplica 14 of 14 (isrflow 14), UpdateMetadata 165 of 165 " \
           "(isrflow 165)" in summary and all(r["match"] for r in rows)
    by_id = {e["event_id"]: e for e in events}
    assert by_id["zk-191"]["offline_replicas"] == []
    assert by_id["zk-193-t2-answer-4"]["offline_replicas"] == [{"topic": "t0", "partition": 1}]  # its own event


def test_an_answer_to_a_reassignment_in_place_handled_before_the_notification_is_its_own_event(tmp_path: Path) -> None:
    # Campaign seed 1543 (Kafka 2.7.2, three log dirs; its `version-2` is a regression of test_zk_histories): an Admin
    # API reassignment of t0-1 to the replica it had ([4]) bumped it (00:18:29.856); broker 4, whose dir had failed,
    # answered that LeaderAndIsr with KAFKA_STORAGE_ERROR ("Mark replicas t0-1 on broker 4", .888) before its
    # notification came (.908): t0-1 leaderless (.916), then the notification's LeaderAndIsr of its four replicas,
    # whose answer marked t3-0 alone. isrflow had given both marks to the notification, then written t0-1 leaderless
    # again at t0's deletion (never written): 13 of 14 histories, LeaderAndIsr 42 of 43, StopReplica 18 of 20,
    # UpdateMetadata 132 of 138.
    summary = every_request_equal("zookeeper-2.7-dirs-3-seed-1543", tmp_path, (43, 20, 138))
    assert "14 of 14 equal" in summary
    events = {e["event_id"]: e for e in read_jsonl(tmp_path / "zk" / "events.jsonl")}
    ids = list(events)
    assert ids.index("zk-186-t0-2-answer-4") == ids.index("zk-186-t0-2") + 1
    assert events["zk-186-t0-2-answer-4"]["offline_replicas"] == [{"topic": "t0", "partition": 1}]
    assert events["zk-190"]["offline_replicas"] == [{"topic": "t3", "partition": 0}]
    t0_1 = [(d["cause_event_id"], d["leader"], d["isr"], d["leader_epoch"])
            for d in read_jsonl(tmp_path / "decisions.jsonl") if (d["topic"], d["partition"]) == ("t0", 1)]
    assert t0_1[-1] == ("zk-186-t0-2-answer-4", -1, [4], 2)  # nothing more: not at the notification, nor the deletion
    # The notification asks broker 4 about its four replicas, then its answer elects 3 for t3-0.
    assert leader_and_isr(tmp_path, "zk-190") == [(0, 4, ["t0-0", "t0-1", "t2-0", "t3-0"]), (1, 3, ["t3-0"])]


def test_a_reassignment_asked_again_after_a_startup_and_its_replica_in_a_failed_dir(tmp_path: Path) -> None:
    # Campaign seed 1030 (Kafka 2.7.2, three log dirs; its `version-2` is a regression of test_zk_histories): t0-1 was
    # being reassigned through the znode from [2] (dead) to [4], replica 4 online since controller 4's failover.
    # After broker 3's startup (which wrote nothing) and an AlterIsr of t1-1, an Admin API reassignment of t0-1 to [4]
    # again took it out of the znode (0x99) and bumped it (0x9a, LeaderAndIsr to broker 4): the importer had given
    # the bump to the startup, and isrflow was one leader epoch behind from there. Its NewReplica step failed
    # ("from OnlineReplica to NewReplica failed"), so broker 4's log dir notification asked about t0-1 and its
    # answer marked it offline (StopReplica, UpdateMetadata), as did each later failover's and startup's answer.
    kept = ZKLOG / "requests" / "zookeeper-2.7-dirs-3-seed-1030"
    summary, rows = replayed(ZKLOG / "regressions" / kept.name / "version-2", tmp_path, kept)
    assert "LeaderAndIsr 41 of 41 (isrflow 41), StopReplica 14 of 14 (isrflow 14), UpdateMetadata 115 of 115 " \
           "(isrflow 115)" in summary and all(r["match"] for r in rows)
    events = {e["event_id"]: e for e in read_jsonl(tmp_path / "zk" / "events.jsonl")}
    assert events["zk-154-t0-1"]["partitions"] == [{"topic": "t0", "partition": 1, "replicas": [4]}]
    assert events["zk-200"]["offline_replicas"] == [{"topic": "t0", "partition": 1}]
    assert leader_and_isr(tmp_path, "zk-154-t0-1") == [(0, 4, ["t0-1"])]


def test_a_brokers_storage_error_answer_to_a_controlled_shutdowns_leader_and_isr_goes_offline_after_it(
        tmp_path: Path) -> None:
    # Campaign seed 1114 (Kafka 3.9.1 at protocol 2.6, three log dirs; its `version-2` is a regression of
    # test_zk_histories): broker 3's controlled shutdown made broker 4 t1-0's leader; broker 4's dir failed as it
    # wrote t1-0's leader epoch checkpoint, it answered KAFKA_STORAGE_ERROR ("Mark replicas t1-0 on broker 4",
    # 06:08:14.862) and the controller elected 2 (0xa9), 14 ms before broker 4's notification. The importer had read
    # that write as broker 4's controlled shutdown: 5 of 11 histories, LeaderAndIsr 44 of 60 (isrflow 63).
    logs = ZKLOG / "requests" / "zookeeper-2.6-dirs-3-seed-1114"
    summary, rows = replayed(ZKLOG / "regressions" / logs.name / "version-2", tmp_path, logs)
    assert "11 of 11 equal" in summary and all(r["match"] for r in rows)
    assert "LeaderAndIsr 60 of 60 (isrflow 60), StopReplica 7 of 7 (isrflow 7), UpdateMetadata 139 of 139 " \
           "(isrflow 139)" in summary
    events = {e["event_id"]: e for e in read_jsonl(tmp_path / "zk" / "events.jsonl")}
    assert events["zk-164-3-answer-4"]["offline_replicas"] == [{"topic": "t1", "partition": 0}]
    assert list(events).index("zk-164-3-answer-4") == list(events).index("zk-164-3") + 1
    assert events["zk-170"]["offline_replicas"] == [{"topic": "t2", "partition": 0}]  # the rest of the failed dir
    assert [e["broker_id"] for e in events.values() if e.get("change") == "CONTROLLED_SHUTDOWN"] == [3]
    # The answer's requests follow the shutdown's: the election's LeaderAndIsr to 2, OfflineReplica's to 2 and 3
    # (shutting down, still sent), its StopReplica to 4.
    assert leader_and_isr(tmp_path, "zk-164-3-answer-4") == [(0, 2, ["t1-0"]), (1, 2, ["t1-0"]), (1, 3, ["t1-0"])]


def test_a_failovers_storage_error_answers_are_handled_in_the_order_they_came(tmp_path: Path) -> None:
    # Campaign seed 1240 (Kafka 2.7.2, two log dirs): brokers 4 and 2, with failed dirs, answered controller 2's
    # failover LeaderAndIsr with KAFKA_STORAGE_ERROR, 4 first (its "Mark replicas" line at 32.646, broker 2's at
    # 32.654): broker 4's answer took t0-3 and t0-0 offline (UpdateMetadata of 2 partitions), then broker 2's t0-2
    # (of 1). isrflow had taken them by broker id: UpdateMetadata 180 of 182.
    logs = ZKLOG / "requests" / "zookeeper-2.7-dirs-2-seed-1240"
    summary, rows = replayed(logs / "version-2", tmp_path, logs)
    assert "LeaderAndIsr 75 of 75 (isrflow 75), StopReplica 11 of 11 (isrflow 11), UpdateMetadata 182 of 182 " \
           "(isrflow 182)" in summary and all(r["match"] for r in rows)
    [failover] = [e for e in read_jsonl(tmp_path / "zk" / "events.jsonl") if e["event_id"] == "zk-158"]
    assert failover["answer_order"] == [4, 2]
    stopped = [r["broker"] for r in read_jsonl(tmp_path / "requests.jsonl")
               if r["event_id"] == "zk-158" and r["request"] == "STOP_REPLICA"]
    assert stopped == [4, 2]


def test_a_startups_storage_error_answer_queued_behind_an_alter_isr_comes_after_it(tmp_path: Path) -> None:
    # Campaign seed 1255 (Kafka 2.8.2, three log dirs): broker 4 registered again (zk-160-4, 11:52:30.197) with its dir
    # holding t2-0 still failed. Its answer to the startup's LeaderAndIsr (KAFKA_STORAGE_ERROR for t2-0) came at
    # 30.495, as the controller handled leader 2's AlterIsr of t0-0 (zk-162-t0-0, written 30.505, UpdateMetadata
    # 30.507); the answer, an event of its own, came after it ("Mark replicas t2-0 on broker 4 as offline" at 30.510:
    # LeaderAndIsr, UpdateMetadata of t2-0, StopReplica, an UpdateMetadata of no partition). isrflow had handled it
    # within the startup, before the AlterIsr: UpdateMetadata 160 of 163. Now the answer is its own event after the
    # IsrChange (LeaderAndIsrResponseReceived) and the startup leaves it (`storage_error_answer_queued`).
    logs = ZKLOG / "requests" / "zookeeper-2.8-dirs-3-seed-1255"
    summary, rows = replayed(logs / "version-2", tmp_path, logs)
    assert "LeaderAndIsr 52 of 52 (isrflow 52), StopReplica 8 of 8 (isrflow 8), UpdateMetadata 163 of 163 " \
           "(isrflow 163)" in summary and all(r["match"] for r in rows)
    events = {e["event_id"]: e for e in read_jsonl(tmp_path / "zk" / "events.jsonl")}
    assert events["zk-160-4"]["storage_error_answer_queued"] is True
    answers = [e for e in read_jsonl(tmp_path / "zk" / "events.jsonl") if e["type"] == "LeaderAndIsrResponseReceived"]
    assert [(e["event_id"], e["broker_id"], e["offline_replicas"]) for e in answers] == [
        ("zk-162-t0-0-answer-4", 4, [{"topic": "t2", "partition": 0}])]
    ids = list(events)
    assert ids.index("zk-162-t0-0-answer-4") == ids.index("zk-162-t0-0") + 1
    offline = [(r["broker"], r["isrflow"]["event_id"]) for r in rows if r["request"] == "STOP_REPLICA"
               and r["controller"]["time"].endswith("30.518")]
    assert offline == [(4, "zk-162-t0-0-answer-4")]


def test_a_storage_error_answer_within_a_failover_reads_only_its_own_elections(tmp_path: Path) -> None:
    # Campaign seed 1439 (Kafka 3.5.2, two log dirs): controller 1's failover (18:09:48) elected t4-0 onto broker 1;
    # broker 1 answered its LeaderAndIsr with KAFKA_STORAGE_ERROR for t1's replicas only (t1 being deleted, mark
    # 48.324): no replica outside the deletion went offline and the answer itself elected nothing, so the controller
    # sent every broker an UpdateMetadata of no partition (48.362). isrflow counted the failover's election as the
    # answer's and sent none (UpdateMetadata 349 of 352).
    every_request_equal("zookeeper-3.5-dirs-2-seed-1439", tmp_path, (128, 53, 352))
    answer = [(r["broker"], r["isrflow"]["event_id"]) for r in read_jsonl(tmp_path / "requests_agreement.jsonl")
              if r["request"] == "UPDATE_METADATA" and r["controller"]["time"] == "2026-11-27 18:09:48.362"]
    assert answer == [(b, "zk-282") for b in (1, 2, 3)]


def test_a_startups_answer_for_a_dir_failed_while_down_is_handled_after_the_alter_isrs_before_it(tmp_path: Path
                                                                                              ) -> None:
    # Campaign seed 1477 (Kafka 3.0.2, three log dirs): a dir of broker 3 failed while it was down. Its startup
    # (20:53:29.514) elected it for t0-1 and t1-1; leaders 2 and 4 then took it back into t0-0's and t0-4's ISRs
    # (AlterIsr, UpdateMetadata at .844 and .852), and only then did the controller handle broker 3's
    # KAFKA_STORAGE_ERROR answer to the startup's LeaderAndIsr (mark .854): its UpdateMetadata of 7 partitions to
    # brokers 2-4 at .871. isrflow had sent it within the startup, before the two AlterIsrs' (UpdateMetadata 209 of
    # 212).
    every_request_equal("zookeeper-3.0-dirs-3-seed-1477", tmp_path, (101, 12, 212))
    events = read_jsonl(tmp_path / "zk" / "events.jsonl")
    answer = next(e for e in events if e["type"] == "LeaderAndIsrResponseReceived")
    assert [e["event_id"] for e in events[events.index(answer) - 2:events.index(answer) + 1]] == [
        "zk-248-t0-0", "zk-249-t0-4", "zk-249-t0-4-answer-3"]
    assert len(answer["offline_replicas"]) == 7
    rows = [(r["broker"], r["isrflow"]["event_id"]) for r in read_jsonl(tmp_path / "requests_agreement.jsonl")
            if r["request"] == "UPDATE_METADATA" and r["controller"]["time"] == "2026-11-27 20:53:29.871"]
    assert rows == [(b, "zk-249-t0-4-answer-3") for b in (2, 3, 4)]


def test_a_notifications_answer_handled_after_a_topic_creation_that_came_meanwhile_goes_after_it(tmp_path: Path
                                                                                                ) -> None:
    # Campaign seed 1535 (Kafka 2.8.2, three log dirs): controller 4 read broker 3's notification (00:10:15.351), then
    # created t7, which came meanwhile (UpdateMetadata of t7-0 at .380), then handled broker 3's answer (mark .382,
    # UpdateMetadata of t0-0 and t1-0 at .394). isrflow had sent the answer's requests within the notification's
    # event, before t7's (UpdateMetadata 164 of 167).
    every_request_equal("zookeeper-2.8-dirs-3-seed-1535", tmp_path, (73, 8, 167))
    events = read_jsonl(tmp_path / "zk" / "events.jsonl")
    notification = next(e for e in events if e["type"] == "LogDirEventNotification")
    at = events.index(notification)
    assert [(e["type"], e.get("topic")) for e in events[at:at + 3]] == [
        ("LogDirEventNotification", None), ("CreateTopic", "t7"), ("LeaderAndIsrResponseReceived", None)]
    assert notification["offline_replicas"] == []
    assert events[at + 2]["offline_replicas"] == [{"topic": "t0", "partition": 0}, {"topic": "t1", "partition": 0}]


def test_another_brokers_answer_to_a_resumed_reassignment_marked_after_an_alter_isr_goes_after_it(tmp_path: Path
                                                                                                  ) -> None:
    # Campaign seed 1550 (Kafka 2.7.2, two log dirs): broker 4's startup resumed t0-0's reassignment; leader 1's
    # AlterIsr of t4-1, t3-0 and t4-0 was written at 00:29:40.185 (UpdateMetadata .191); broker 1's answer to the
    # resumed reassignment's LeaderAndIsr was marked at .197, its empty UpdateMetadata sent at .214. isrflow had sent
    # that before the AlterIsr's (UpdateMetadata 115 of 117).
    every_request_equal("zookeeper-2.7-dirs-2-seed-1550", tmp_path, (55, 19, 117))
    order = [e["event_id"] for e in read_jsonl(tmp_path / "zk" / "events.jsonl") if e["ts"] >= "2026-11-28T00:29:40"]
    assert order[:6] == ["zk-181-4", "zk-184-t4-1", "zk-185-t3-0", "zk-185-t4-0", "zk-185-t4-0-answer-1",
                         "zk-186-t3-0"]


def test_a_notifications_answer_handled_after_a_preferred_election_that_came_meanwhile_goes_after_it(tmp_path: Path
                                                                                                    ) -> None:
    # Campaign seed 1575 (Kafka 2.8.2, two log dirs): controller 4 read broker 3's notification (01:02:55.700), then an
    # Admin API preferred election (.712) made 3 the leader of t1-0 and t1-1 again (LeaderAndIsr .733), then handled
    # broker 3's answer (mark .796): t1-1 to 4 without 3. isrflow had taken 3 offline at the notification: t1-1 one
    # leader epoch behind (4 of 5 histories, 22 of 24 decisions, LeaderAndIsr 74 of 78).
    every_request_equal("zookeeper-2.8-dirs-2-seed-1575", tmp_path, (78, 9, 132))
    order = [(e["type"], e.get("offline_replicas")) for e in read_jsonl(tmp_path / "zk" / "events.jsonl")
             if e["type"] in ("LogDirEventNotification", "ElectLeaders", "LeaderAndIsrResponseReceived")]
    assert order[-3:] == [("LogDirEventNotification", []), ("ElectLeaders", None), (
        "LeaderAndIsrResponseReceived", [{"topic": "t1", "partition": 1}, {"topic": "t1", "partition": 2}])]


def test_a_leaders_own_isr_write_after_a_notification_read_is_unknown_to_a_later_log_dir_failures_request(
        tmp_path: Path) -> None:
    # Campaign seed 1588 (Kafka 3.9.1 at protocol 2.6, two log dirs): broker 2 re-registered; its new session announced
    # a stale ISR change of t1-0, which controller 1 read after the startup (ISR [4], partition epoch 7); leader 4 then
    # took 2 back in itself (ISR [4, 2]) and announced nothing before broker 2's dir failed 2.5 s later. The log dir
    # notification's LeaderAndIsr to broker 2 carried t1-0 as the controller's cache held it; isrflow had sent [4, 2]
    # at partition epoch 8 (LeaderAndIsr 54 of 55).
    every_request_equal("zookeeper-2.6-dirs-2-seed-1588", tmp_path, (55, 7, 114))
    [partitions] = [json.loads(r["partitions"]) for r in read_jsonl(tmp_path / "requests.jsonl")
                    if r["event_id"] == "zk-223" and r["request"] == "LEADER_AND_ISR" and r["broker"] == 2]
    t1_0 = next(p for p in partitions if (p["topic"], p["partition"]) == ("t1", 0))
    assert (t1_0["isr"], t1_0["partition_epoch"]) == ([4], 7)
    order = [e["event_id"] for e in read_jsonl(tmp_path / "zk" / "events.jsonl")]
    assert order.index("zk-211-2") < order.index("zk-218-isr-change-notification") < order.index("zk-219-t1-0")
