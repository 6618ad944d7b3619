"""A real ZooKeeper-mode controller's requests while it deletes topics (TopicDeletionManager: DeleteTopics
read in batches, StopReplica answers, deletions resumed or retried by startups, failovers and log dir
notifications), each a kept campaign run replayed with its brokers' logs (zklog/requests, README there)."""

from __future__ import annotations

from pathlib import Path

from zk_kept import RUN, SEED_1250, SEED_1301, ZKLOG, every_request_equal, replayed

from statemachine.controller import ControllerConfig
from statemachine.rules import ZK
from streaming.io.jsonl import read_jsonl
from streaming.jobs.replay import ReplayOptions, replay

RESUMED_DELETIONS = RUN.with_name("zookeeper-3.9-seed-19")


def test_a_deletion_resumed_by_broker_startups_sends_what_the_controller_sent(tmp_path: Path) -> None:
    # Campaign seed 19: brokers that come back resume the deletion of a topic they hold replicas of; each time the
    # controller sends one UpdateMetadata naming all the topic's partitions (leader -2) and one StopReplica batch per
    # replica state, also naming the partitions with no replica on the broker (resumeDeletionForTopics).
    summary = replay(ReplayOptions(f"zk:{RESUMED_DELETIONS / 'version-2'}", tmp_path, engine="local",
                                   config=ControllerConfig(rules=ZK)))
    assert ("LeaderAndIsr 56 of 56 (isrflow 56), StopReplica 12 of 12 (isrflow 12), "
            "UpdateMetadata 162 of 162 (isrflow 162)") in summary
    assert all(r["match"] for r in read_jsonl(tmp_path / "requests_agreement.jsonl"))


def test_a_startup_resuming_a_reassignment_of_a_topic_being_deleted_sends_its_leader_and_isr(tmp_path: Path) -> None:
    # Campaign seed 26 (protocol 2.6): t0-0, being reassigned (replicas [2, 3, 1, 4], adding 3), was deleted while
    # brokers 2 and 4 were down; each one's startup resumed the reassignment (LeaderAndIsr of a bumped leader epoch to
    # the replica set, 3 as new, and UpdateMetadata) before the deletion went on.
    summary, rows = replayed(ZKLOG / "requests" / "zookeeper-2.6-seed-26" / "version-2", tmp_path)
    assert "LeaderAndIsr 61 of 61 (isrflow 61), StopReplica 14 of 14 (isrflow 14), UpdateMetadata 137 of 137 " \
           "(isrflow 140)" in summary
    resumed = [(r["controller"]["time"][11:], r["broker"]) for r in rows if r["request"] == "LEADER_AND_ISR" and
               r["match"] and r["controller"]["time"][11:] in ("07:03:00.304", "07:03:03.616", "07:03:03.617",
                                                                "07:03:03.620")]
    assert sorted(resumed) == [("07:03:00.304", 1), ("07:03:00.304", 2), ("07:03:00.304", 3), ("07:03:03.616", 1),
                               ("07:03:03.617", 2), ("07:03:03.620", 3), ("07:03:03.620", 4)]
    # isrflow's only extras: registrations the controller read together (the cluster's first startups).
    extra = [(r["broker"], r["isrflow"]["event_type"]) for r in rows if not r["match"]]
    assert extra == [(2, "BrokerChange"), (3, "BrokerChange"), (4, "ControllerChange")]


def test_topics_deleted_by_one_request_go_in_the_batches_the_controllers_read_of_them_made(tmp_path: Path) -> None:
    # One DeleteTopics of t0, t2 and t3 on Kafka 2.8.2 (campaign seed 304): the controller's first read of
    # /admin/delete_topics found t0 alone, its next t2 and t3 together, one onTopicDeletion (one StopReplica batch)
    # for both. Kafka 3.9.1 (seed 301): t4 read alone, then t2. Seed 308: t4 alone, then t6, t7 and t1 (t6's znode
    # there before the controller's first write for t4). Their controller.log says which read took which.
    for run, counts in (("zookeeper-2.8-seed-304", "LeaderAndIsr 58 of 58 (isrflow 58), StopReplica 8 of 8 "
                                                   "(isrflow 8), UpdateMetadata 142 of 142 (isrflow 142)"),
                        ("zookeeper-3.9-seed-301", "LeaderAndIsr 53 of 53 (isrflow 53), StopReplica 30 of 30 "
                                                   "(isrflow 30), UpdateMetadata 129 of 129 (isrflow 129)"),
                        ("zookeeper-2.8-seed-308", "LeaderAndIsr 71 of 71 (isrflow 71), StopReplica 28 of 28 "
                                                   "(isrflow 28), UpdateMetadata 256 of 256 (isrflow 256)")):
        summary, rows = replayed(ZKLOG / "requests" / run / "version-2", tmp_path / run)
        assert counts in summary and "agreement with the controller: 100.0%" in summary
        assert all(r["match"] for r in rows)
    events = read_jsonl(tmp_path / "zookeeper-2.8-seed-304" / "zk" / "events.jsonl")
    assert [(e["topic"], e.get("topics")) for e in events if e["type"] == "DeleteTopic"] == [
        ("t0", None), ("t2", ["t2", "t3"]), ("t3", ["t2", "t3"])]
    events = read_jsonl(tmp_path / "zookeeper-2.8-seed-308" / "zk" / "events.jsonl")
    assert [e.get("topics") for e in events if e["type"] == "DeleteTopic"][1:] == [None, *[["t1", "t6", "t7"]] * 3]
    # Without the brokers' logs the requests the controller had not started on when the next came are one read.
    directory_alone = ZKLOG / "regressions" / "zookeeper-3.9-seed-301"
    summary = replay(ReplayOptions(f"zk:{directory_alone}", tmp_path / "alone", engine="local",
                                   config=ControllerConfig(rules=ZK)))
    assert "agreement with the controller: 100.0%" in summary
    deletions = [e for e in read_jsonl(tmp_path / "alone" / "zk" / "events.jsonl") if e["type"] == "DeleteTopic"]
    assert [(e["topic"], e.get("topics")) for e in deletions] == [
        ("t4", ["t2", "t4"]), ("t2", ["t2", "t4"]), ("t0", None), ("t5", ["t1", "t5"]), ("t1", ["t1", "t5"])]


def test_a_log_dir_notification_asks_about_the_replicas_of_a_halted_deletion_too(tmp_path: Path) -> None:
    # Campaign seed 1301 (Kafka 2.8.2, three log dirs): t0's deletion halted (broker 4 down); controller 1's
    # failover made broker 3's replica of t0-0 OnlineReplica. Broker 3's notification (zk-243, 14:05:46.701):
    # onBrokerLogDirFailure moves every replica broker 3 holds to OnlineReplica, t0-0 too (leader -1): a LeaderAndIsr
    # of 10 partitions, an UpdateMetadata of 10. isrflow had left t0-0 out (LeaderAndIsr 98 of 99, UpdateMetadata
    # 248 of 254).
    summary, rows = replayed(ZKLOG / "regressions" / SEED_1301.name / "version-2", tmp_path, SEED_1301)
    assert "LeaderAndIsr 99 of 99 (isrflow 99), StopReplica 18 of 18 (isrflow 18), UpdateMetadata 254 of 254 " \
           "(isrflow 254)" in summary
    asked = [r for r in rows if r["request"] == "LEADER_AND_ISR" and r["match"]
             and (r["isrflow"]["event_id"], r["isrflow"]["batch"]) == ("zk-243", 0)]
    assert [(r["broker"], r["isrflow"]["partition_count"], "t0-0" in r["isrflow"]["partitions"]) for r in asked] \
        == [(3, 10, True)]


def test_an_earlier_deletion_reads_stop_replica_answer_after_a_later_read_retries_that_reads_dead_replicas(
        tmp_path: Path) -> None:
    # Campaign seed 1042 (Kafka 3.9.1 at protocol 2.6; its `version-2` is a regression of test_zk_histories): one
    # DeleteTopics of t4, t0 and t1. Controller 1 read t4 alone (05:21:31.357; a live replica on broker 1), then t0
    # and t1 (31.378; their one replica on broker 3, stopped: ReplicaDeletionIneligible, nothing written); broker 1's
    # StopReplica answer for t4 came at 31.431, and its resumeDeletions retried t0's and t1's replicas ("Retrying
    # deletion of topics t0,t1"): leader -1, ISR [3], the leader epoch bumped (0xc5 to 0xc7). isrflow folded the answer
    # into t4's request, before t0 and t1 were queued: those three writes missing (13 of 16 histories).
    logs = ZKLOG / "requests" / "zookeeper-2.6-seed-1042"
    summary, rows = replayed(ZKLOG / "regressions" / logs.name / "version-2", tmp_path, logs)
    assert "partition histories: 16 of 16 equal, 38 of 38 states equal" in summary
    assert "LeaderAndIsr 26 of 26 (isrflow 26), StopReplica 4 of 4 (isrflow 4), UpdateMetadata 91 of 91 " \
           "(isrflow 91)" in summary and all(r["match"] for r in rows)
    deletions = {e["event_id"]: (e.get("stop_replica_answered", True), e.get("stop_replica_answers"))
                 for e in read_jsonl(tmp_path / "zk" / "events.jsonl") if e["type"] == "DeleteTopic"}
    assert deletions == {"zk-192-t4": (False, None), "zk-193-t0": (True, ["t4"]), "zk-195-t1": (True, ["t4"])}
    retries = {(d["topic"], d["partition"]): (d["leader"], d["isr"], d["cause_event_id"])
               for d in read_jsonl(tmp_path / "decisions.jsonl") if d["topic"] in ("t0", "t1")
               and d["cause"] == "DeleteTopic"}
    assert retries == {("t0", 0): (-1, [3], "zk-193-t0"), ("t1", 0): (-1, [3], "zk-193-t0"),
                       ("t1", 1): (-1, [3], "zk-193-t0")}


def test_a_failover_logged_in_controller_log_ends_and_a_later_read_retries_the_deletions_queued_before(
        tmp_path: Path) -> None:
    # Campaign seed 1203 (Kafka 2.7.2, three log dirs; its `version-2` is a regression of test_zk_histories).
    # Controller 2's failover (zk-165) ended with its failed delete of /admin/preferred_replica_election (NONODE,
    # 0xaf); /admin/reassign_partitions came 67 s later (zk-187). With the failover named in controller.log the
    # importer never saw that end, read the reassignment as the failover's, and held broker 2's KAFKA_STORAGE_ERROR
    # answer for t2-1 (its failed dir) behind it: 23 of 24 histories, LeaderAndIsr 68 of 68 (isrflow 71).
    # Then one DeleteTopics of t4, t5, t0, t1 and t3, read as t4 (its only replica on dead broker 3), t5, then t0, t1
    # and t3: t5's read retried t4-0's dead replica first (resumeDeletions, a bare bump at 0xdc) and took t5's live
    # replicas offline; the importer gave that retry to t0's request, so t1's and t3's were not read with t0's.
    logs = ZKLOG / "requests" / "zookeeper-2.7-dirs-3-seed-1203"
    summary, rows = replayed(ZKLOG / "regressions" / logs.name / "version-2", tmp_path, logs)
    assert "LeaderAndIsr 68 of 68 (isrflow 68), StopReplica 28 of 28 (isrflow 28), UpdateMetadata 153 of 153 " \
           "(isrflow 153)" in summary and "24 of 24 equal" in summary
    assert "agreement with the controller: 100.0%" in summary and all(r["match"] for r in rows)
    events = read_jsonl(tmp_path / "zk" / "events.jsonl")
    assert not [e for e in events if e.get("read_at_failover") or e.get("reads_reassignment_znode")]
    causes = {o["source_offset"]: o["cause_event_id"] for o in read_jsonl(tmp_path / "observed.jsonl")}
    assert causes[0xdc] == causes[0xde] == "zk-218-t5"  # t4-0's retry, then t5-0's live replica offline
    assert {e["event_id"]: e.get("topics") for e in events if e["type"] == "DeleteTopic"} == {
        "zk-217-t4": None, "zk-218-t5": None, "zk-219-t0": ["t0", "t1", "t3"], "zk-221-t1": ["t0", "t1", "t3"],
        "zk-223-t3": ["t0", "t1", "t3"]}


def test_topics_read_together_then_a_deletions_answers_one_broker_at_a_time(tmp_path: Path) -> None:
    # Campaign seed 1105 (Kafka 2.8.2, two log dirs): t2 and t3 read together by controller 3 ("New topics:
    # [HashSet(t3, t2)]", their partitions znodes at cxids 216 and 217 of its session, zxids 150 and 151): one batch
    # (isrflow had sent a batch per topic: LeaderAndIsr 113 of 114, UpdateMetadata 296 of 298).
    # Then the StopReplica answers of deletions, each broker's an event of its own ending in resumeDeletions (isrflow
    # had StopReplica 35 of 38): controller 3 read t0 and t3 while t4's answers were still to come; after them,
    # broker 3's answer for t3-0 let it retry t3-1 alone (05:59:16.119), broker 4's for t0-1 then t0-1 (16.124),
    # where isrflow had retried both at t4's answers. At broker 3's startup (controller 1), broker 4 answered before
    # broker 1, whose answer let t4 and t0 be retried together (one StopReplica of four, 25.455); by broker id isrflow
    # had sent t4's retry, then t0-1's.
    logs = ZKLOG / "requests" / "zookeeper-2.8-dirs-2-seed-1105"
    summary, rows = replayed(logs / "version-2", tmp_path, logs)
    assert "13 of 13 equal" in summary and all(r["match"] for r in rows)
    assert "LeaderAndIsr 114 of 114 (isrflow 114), StopReplica 38 of 38 (isrflow 38), UpdateMetadata 298 of 298 " \
           "(isrflow 298)" in summary
    events = {e["event_id"]: e for e in read_jsonl(tmp_path / "zk" / "events.jsonl")}
    assert events["zk-142"]["topics"] == events["zk-146"]["topics"] == ["t2", "t3"]
    assert events["zk-279-3"]["stop_replica_answer_order"] == [3, 4, 1]
    assert [e["event_id"] for e in events.values() if "stop_replica_answer_order" in e] == ["zk-279-3"]


def test_a_deletion_retry_of_a_replica_in_a_failed_dir_is_the_later_reads(tmp_path: Path) -> None:
    # Campaign seed 1250 (Kafka 2.7.2, three log dirs): t1 read alone (zk-199), its replica 3 of t1-0 in broker 3's
    # failed dir (broker 3 registered: a dead replica all the same, isReplicaOnline); broker 4's StopReplica answer
    # came after t2's read (zk-200, `stop_replica_answers`) and its resumeDeletions retried t1-0's replica 3, a bare
    # bump (leader -1, ISR [3], epoch 11). The importer had taken broker 3 for a live replica taken offline and given
    # the bump to t1's read: 45 of 46 decisions.
    summary, _ = replayed(SEED_1250 / "version-2", tmp_path)
    assert "agreement with the controller: 100.0% of 45 observed decisions" in summary and "10 of 10 equal" in summary
    causes = {(o["topic"], o["partition"], o["leader_epoch"]): o["cause_event_id"]
              for o in read_jsonl(tmp_path / "observed.jsonl")}
    assert causes[("t1", 0, 11)] == "zk-200-t2"
    # Broker 4's notification (zk-210) asked nothing of its deleted replicas (t1-1, t1-2: ReplicaDeletionSuccessful),
    # so it takes none offline and sends no UpdateMetadata for them, though the importer gives it the mark of a later
    # answer naming t1-2 (isrflow had 314). Broker 4's answer naming t1-1 to the reassignment broker 1's startup
    # resumed is its own event after the startup (seed 1426's rule: 311 before it); the 4 left: the xfail below.
    assert "UpdateMetadata 315 of 319 (isrflow 315)" in summary
    answer = next(e for e in read_jsonl(tmp_path / "zk" / "events.jsonl") if e["event_id"] == "zk-240-1-answer-4")
    assert answer["offline_replicas"] == [{"topic": "t1", "partition": 1}]


def test_a_dir_failing_as_its_broker_deletes_a_replica_fails_the_deletion_and_the_notification_asks_again(
        tmp_path: Path) -> None:
    # Campaign seed 1274 (Kafka 3.9.1 at protocol 2.6, two log dirs): t2's deletion (zk-145-t2); broker 2's dir
    # failed renaming t2-0's log for deletion, so it answered the StopReplica (delete) with KAFKA_STORAGE_ERROR
    # (controller.log, 12:19:43.361) before its notification (zk-150). The other answers in, resumeDeletions retried
    # t2-0's replica on 2 (StopReplica, no delete, 43.376); the notification moved it back to OnlineReplica (a
    # LeaderAndIsr of four partitions, t2-0 among them, 43.381), and its answer's failReplicaDeletion from
    # OnlineReplica failed. t2 was never deleted: broker 2's startup and controller 1's failover wrote t2-1 and t2-0
    # again. isrflow had deleted t2 at once: 19 of 21 histories, LeaderAndIsr 120 of 128, StopReplica 35 of 43,
    # UpdateMetadata 249 of 267.
    summary = every_request_equal("zookeeper-2.6-dirs-2-seed-1274", tmp_path, (128, 43, 267))
    assert "partition histories: 21 of 21 equal" in summary
    events = {e["event_id"]: e for e in read_jsonl(tmp_path / "zk" / "events.jsonl")}
    assert events["zk-145-t2"]["storage_error_answers"] == {"2": [{"topic": "t2", "partition": 0}]}


SEED_1412 = "zookeeper-2.6-dirs-2-seed-1412"


def test_a_failed_deletions_notification_before_the_other_answers_retries_nothing(tmp_path: Path) -> None:
    # Campaign seed 1412 (Kafka 3.9.1 at protocol 2.6, two log dirs). t2's deletion (zk-159-t2): broker 3 answered
    # t2-1's StopReplica (delete) with KAFKA_STORAGE_ERROR (controller.log 17:36:04.256), and the controller handled
    # its notification (zk-166, "Handling log directory failure for brokers 3", .273) before brokers 1's, 2's and
    # 4's answers (.288-.290): the notification's LeaderAndIsr took the replica back to OnlineReplica, so the last
    # answer's resumeDeletions retried nothing. isrflow had retried it (leader epoch 4, never written).
    # Controller 4's failover (zk-211, epoch 3) resumed t4's deletion, not knowing broker 4's failed dir (t4-1 in
    # it): broker 4's LeaderAndIsr answer (Mark replicas, 17:36:24.148) failed t4-1's deletion, its StopReplica
    # answer was KAFKA_STORAGE_ERROR (.156), and broker 2's answer for t4-0 let resumeDeletions retry t4-1 (.175):
    # leader -1 ISR [4] at leader epoch 10, a StopReplica to broker 4 (.180). isrflow had folded the answers into
    # the failover (no retry). Before: 5 of 7 histories, 26 of 29 decisions, LeaderAndIsr 72 of 78, StopReplica 43
    # of 44.
    summary = every_request_equal(SEED_1412, tmp_path, (78, 44, 257))
    assert "partition histories: 7 of 7 equal" in summary
    assert "agreement with the controller: 100.0% of 29 observed decisions" in summary
    events = {e["event_id"]: e for e in read_jsonl(tmp_path / "zk" / "events.jsonl")}
    assert events["zk-159-t2"]["stop_replica_answered"] is False
    assert events["zk-166"]["deletion_answers"] == ["t2"]


def test_a_znode_reassignment_of_a_topic_being_deleted_is_resumed_with_the_others(tmp_path: Path) -> None:
    # Campaign seed 1284 (Kafka 3.9.1 at protocol 2.6, two log dirs): /admin/reassign_partitions still named t4-0
    # and t0-2 when controller 2 took over (zk-229), t4 queued for deletion. processZkPartitionReassignment refused
    # t4-0 ("Skipping reassignment of t4-0 since the topic is currently being deleted") and resumed t0-2 (its bump to
    # leader epoch 4, 12:32:37.734); maybeResumeReassignments then resumed t4-0 (epoch 7, .761). isrflow had resumed
    # t4-0 first: LeaderAndIsr 85 of 86.
    logs = ZKLOG / "requests" / "zookeeper-2.6-dirs-2-seed-1284"
    summary, rows = replayed(logs / "version-2", tmp_path, logs)
    assert "LeaderAndIsr 86 of 86 (isrflow 86), StopReplica 30 of 30 (isrflow 30), UpdateMetadata 215 of 215 " \
           "(isrflow 215)" in summary and all(r["match"] for r in rows)
    resumed = [r["isrflow"]["partitions"] for r in rows if r["broker"] == 4 and r["request"] == "LEADER_AND_ISR"
               and r["isrflow"]["event_id"] == "zk-229" and r["isrflow"]["batch"] >= 4]
    assert resumed == [["t0-2"], ["t4-0"]]


def test_a_deletion_asked_while_no_controller_was_active_is_the_next_failovers(tmp_path: Path) -> None:
    # Campaign seed 1333 (Kafka 2.7.2, two log dirs; its `version-2` is a regression of test_zk_histories): controller
    # 4's session expired (14:54:09.864); t1 and t3 were asked deleted (zk-239, zk-240) after broker 4 registered again
    # and before it was elected at epoch 6 (zk-241). No TopicDeletion event read them: the failover did ("List of
    # topics to be deleted: t1,t3"), each ineligible (replicas on dead brokers), and wrote and sent nothing for them.
    # isrflow had started both deletions at epoch 5: 8 of 14 histories, LeaderAndIsr 43 of 44, StopReplica 6 of 6
    # (isrflow 8), UpdateMetadata 88 of 88 (isrflow 89).
    every_request_equal("zookeeper-2.7-dirs-2-seed-1333", tmp_path, (44, 6, 88))
    events = read_jsonl(tmp_path / "zk" / "events.jsonl")
    assert not [e for e in events if e["type"] == "DeleteTopic"]
    failover = next(e for e in events if e["event_id"] == "zk-241")
    assert failover["topics_to_delete"] == ["t1", "t3"]


def test_a_startups_stop_replica_answer_queued_behind_alter_isrs_retries_after_them(tmp_path: Path) -> None:
    # Campaign seed 1417 (Kafka 3.0.2, two log dirs): broker 2 registered again (zk-238) while t2 and t4 were being
    # deleted; the startup's StopReplica (delete) of t2-0 was answered at 17:41:14.086, after the AlterIsr of t0-2,
    # t0-1, t1-0, t0-0 and t1-1 (13.954-14.001), and that answer's resumeDeletions retried t4-0's and t2-1's dead
    # replicas: one UpdateMetadata naming no partition to brokers 1-3 (14.090). isrflow sent it within the startup:
    # 200 of 203 UpdateMetadata.
    every_request_equal("zookeeper-3.0-dirs-2-seed-1417", tmp_path, (71, 11, 203))
    events = {e["event_id"]: e for e in read_jsonl(tmp_path / "zk" / "events.jsonl")}
    assert events["zk-238-2"]["deletion_answers_queued"] and events["zk-245-t1-1"]["deletion_answers"] == [2]


def test_a_log_dir_notification_read_by_a_controller_that_hung_before_deleting_it_keeps_its_requests(
        tmp_path: Path) -> None:
    # Campaign seed 1435 (Kafka 2.8.2, three log dirs): broker 1's dir failed (18:04:31.982); controller 3 read its
    # notification ("Handling log directory failure for brokers 1", 18:04:32.019), sent broker 1 the LeaderAndIsr of
    # t0-0, t1-1 and t1-0 and the UpdateMetadata to brokers 1-3, then hung (its session expired) before deleting it;
    # controller 2's failover deleted it (18:04:38). isrflow took it for unread: LeaderAndIsr 72 of 73, UpdateMetadata
    # 189 of 192.
    every_request_equal("zookeeper-2.8-dirs-3-seed-1435", tmp_path, (73, 10, 192))
    events = read_jsonl(tmp_path / "zk" / "events.jsonl")
    read = [e for e in events if e["type"] == "LogDirEventNotification" and e["controller_epoch"] == 1]
    assert [(e["broker_id"], e["offline_replicas"]) for e in read] == [(1, [])]  # its answer never handled
    failover = next(e for e in events if e["type"] == "ControllerChange" and e["controller_epoch"] == 2)
    assert failover["offline_replicas"] == {"1": [{"topic": "t1", "partition": 1}]}


def test_a_startups_own_storage_error_answer_fails_the_deletion_it_resumed_and_its_retry_stops_the_replica(
        tmp_path: Path) -> None:
    # Campaign seed 1424 (Kafka 3.9.1 at protocol 2.6, two log dirs; `out/zk-camp-s16`): broker 1 registered again
    # (17:50:49.269) with the dir holding its replica of t1-0 failed while it was down, t1 being deleted. Its startup
    # resumed t1's deletion (StopReplica, delete, of t1-0 and t1-2 to broker 1); broker 1 answered KAFKA_STORAGE_ERROR
    # for t1-0 to the startup's LeaderAndIsr and to that StopReplica, so its replica failed (ReplicaDeletionIneligible)
    # while t1-2's was deleted, and resumeDeletions retried it with broker 3's: a StopReplica (no delete) of t1-0 to
    # broker 1 (49.782). isrflow had counted t1-0 deleted on broker 1: StopReplica 20 of 21 (isrflow 20).
    every_request_equal("zookeeper-2.6-dirs-2-seed-1424", tmp_path, (79, 21, 196))
    retry = [r for r in read_jsonl(tmp_path / "requests_agreement.jsonl") if r["request"] == "STOP_REPLICA"
             and r["broker"] == 1 and r["controller"]["time"] == "2026-11-27 17:50:49.782"]
    assert [(r["isrflow"]["event_id"], r["controller"]["partitions"]) for r in retry] == [("zk-220-1", ["t1-0"])]


def test_the_writes_of_a_deletion_read_before_a_later_reads_znode_are_that_earlier_reads(tmp_path: Path) -> None:
    # Campaign seed 1514 (Kafka 3.9.1 at protocol 2.6, one log dir; `out/zk-camp-s18`): one DeleteTopics of t0, t1,
    # t3, t4, t6, t7 and t8, brokers 2 and 4 dead. Controller 1 read t4 (21:48:10.070), then t0, t6, t7 and t8
    # (.096), then t1 and t3 (.143): t1's znode (zk-213) came before the first write of the second read's pass (t6,
    # t7 and t8's live replicas offline, zk-214 on), t3's (zk-221) inside it. The importer gave that pass to t1's and
    # t3's requests: 45 of 70 decisions, StopReplica 26 of 28 (isrflow 30), UpdateMetadata 211 of 213 (isrflow 215).
    summary = every_request_equal("zookeeper-2.6-seed-1514", tmp_path, (82, 28, 213))
    assert "partition histories: 17 of 17 equal" in summary
    assert "agreement with the controller: 100.0% of 60 observed decisions" in summary
    causes = {o["source_offset"]: o["cause_event_id"] for o in read_jsonl(tmp_path / "observed.jsonl")}
    assert {causes[z] for z in (*range(214, 221), *range(222, 229))} == {"zk-206-t6"}  # the read of t0, t6, t7, t8
    # then t1's and t3's: t0-0's dead replica retried (resumeDeletions), t3's and t1's replicas offline
    assert {causes[z] for z in range(229, 234)} == {"zk-213-t1"}


SEED_1519 = "zookeeper-3.5-dirs-3-seed-1519"


def test_the_writes_of_a_deletion_read_before_a_later_reads_znode_are_that_earlier_reads_on_3_5(
        tmp_path: Path) -> None:
    # Campaign seed 1519 (Kafka 3.5.2, three log dirs; `out/zk-camp-s18`): one DeleteTopics of t0, t3, t5 and t6
    # after broker 1's dir 2 failed. Controller 1 read t5 and t6 (21:56:18.971), then t0 and t3 (19.040); t0's znode
    # (zk-197) came before the first read's writes (t5-0 and t6-0 offline, zk-199 and 200), which the importer gave
    # to t0's request: 47 of 51 decisions.
    # Then broker 1, restarted (zk-280-1) with t3's replicas in its failed dir, answered controller 4's resumed
    # deletion last (after brokers 4 and 2): its LeaderAndIsr answer (21:57:06.720) failed them, retried (.758), and
    # its StopReplica (delete) answer, KAFKA_STORAGE_ERROR (.804), failed them again, retried again (.815); isrflow
    # had taken the failing answer first, one retry: StopReplica 27 of 28.
    summary = every_request_equal(SEED_1519, tmp_path, (64, 28, 183))
    assert "partition histories: 14 of 14 equal" in summary
    assert "agreement with the controller: 100.0% of 49 observed decisions" in summary
    causes = {o["source_offset"]: o["cause_event_id"] for o in read_jsonl(tmp_path / "observed.jsonl")}
    assert causes[199] == causes[200] == "zk-193-t5" and causes[202] == "zk-197-t0"
    events = {e["event_id"]: e for e in read_jsonl(tmp_path / "zk" / "events.jsonl")}
    assert events["zk-280-1"]["stop_replica_answer_order"] == [4, 2, 1]
