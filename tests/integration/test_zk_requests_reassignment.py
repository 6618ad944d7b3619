"""A real ZooKeeper-mode controller's requests while it reassigns partitions (started, resumed by a failover or a
startup, completed or cancelled, beside leaders' own ISR changes), each a kept campaign run replayed with its
brokers' logs (zklog/requests, README there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from zk_kept import UM, ZKLOG, every_request_equal, leader_and_isr, replayed

from streaming.io.jsonl import read_jsonl


def test_a_failover_resumes_reassignments_in_the_controllers_hash_set_order(tmp_path: Path) -> None:
    # Campaign seeds 702 (protocol 2.6; its history is a regression of test_zk_histories) and 708: a new controller
    # resumes the reassignments in progress by iterating partitionsBeingReassigned, a Scala hash set: t1-1 before t1-0,
    # t1-3 before t1-2 (isrflow had taken them by (topic, partition)).
    summary, rows = replayed(ZKLOG / "regressions" / "zookeeper-2.6-dirs-2-seed-702" / "version-2", tmp_path / "702",
                              ZKLOG / "requests" / "zookeeper-2.6-dirs-2-seed-702")
    assert "LeaderAndIsr 69 of 69 (isrflow 69), StopReplica 8 of 8 (isrflow 8)" in summary
    assert leader_and_isr(tmp_path / "702", "zk-160")[4:] == [(3, 1, ["t1-1"]), (4, 1, ["t1-0"]), (4, 3, ["t1-0"])]
    summary, rows = replayed(ZKLOG / "requests" / "zookeeper-2.6-dirs-3-seed-708" / "version-2", tmp_path / "708")
    assert "LeaderAndIsr 64 of 64 (isrflow 64), StopReplica 2 of 2 (isrflow 2), UpdateMetadata 146 of 146 " \
           "(isrflow 146)" in summary and all(r["match"] for r in rows)
    assert leader_and_isr(tmp_path / "708", "zk-156")[6:] == [(4, 2, ["t1-3"]), (4, 4, ["t1-3"]), (5, 2, ["t1-2"])]


def test_a_reassignment_carries_the_isr_a_leader_wrote_while_the_controller_worked_through_the_request(
        tmp_path: Path) -> None:
    # Campaign seed 1002 (Kafka 3.9.1 at protocol 2.6, two log dirs; its history is a regression of
    # test_zk_histories): one AlterPartitionReassignments of t0-2, t0-1, t0-0 and t1-1, in that order. Leader 2 wrote
    # t0-0's ISR [2, 4, 3] itself (0x141) after t0-0's assignment (0x140), and t1-1's [2, 1, 3] (0x142) before its
    # turn; the controller's bumps of both (0x144, 0x146) read them from ZooKeeper (updateLeaderEpoch) and their
    # LeaderAndIsr carried them. isrflow had bumped both from the ISR before: LeaderAndIsr 173 of 196.
    logs = ZKLOG / "requests" / "zookeeper-2.6-dirs-2-seed-1002"
    summary, rows = replayed(ZKLOG / "regressions" / logs.name / "version-2", tmp_path, logs)
    assert "LeaderAndIsr 196 of 196 (isrflow 196), StopReplica 22 of 22 (isrflow 22), UpdateMetadata 374 of 374 " \
           "(isrflow 374)" in summary and all(r["match"] for r in rows)
    sent = {(p["topic"], p["partition"], p["leader_epoch"], tuple(p["isr"]))
            for r in read_jsonl(tmp_path / "requests.jsonl")
            if r["event_id"] == "zk-315-t0" and r["request"] == "LEADER_AND_ISR" for p in json.loads(r["partitions"])}
    assert {x for x in sent if x[:2] in (("t0", 0), ("t1", 1))} == {("t0", 0, 12, (2, 4, 3)), ("t1", 1, 14, (2, 1, 3))}


def test_an_alter_isr_of_two_partitions_completes_their_reassignments_after_its_update_metadata(
        tmp_path: Path) -> None:
    # Campaign seed 1023 (Kafka 2.7.2, its own protocol; its `version-2` is a regression of test_zk_histories): leader
    # 1's AlterIsr for t2-2 and t2-1 (0x17f, 0x180) let both reassignments complete. processAlterIsr sent one
    # UpdateMetadata naming both (controller 4 at 04:56:19.730), then completed t2-2's (19.747) and t2-1's
    # (maybeCompleteReassignment, after the answer). isrflow had completed t2-2's in its own IsrChange event, before
    # the request's UpdateMetadata: 16 UpdateMetadata out of order (409 of 425), the same for leader 2's t0-1 and t1-1.
    logs = ZKLOG / "requests" / "zookeeper-2.7-seed-1023"
    summary, rows = replayed(ZKLOG / "regressions" / logs.name / "version-2", tmp_path, logs)
    assert "LeaderAndIsr 160 of 160 (isrflow 160), StopReplica 26 of 26 (isrflow 26), UpdateMetadata 425 of 425 " \
           "(isrflow 425)" in summary and all(r["match"] for r in rows)
    sent = [(r["batch"], r["request"], [f"{p['topic']}-{p['partition']}" for p in json.loads(r["partitions"])])
            for r in read_jsonl(tmp_path / "requests.jsonl")
            if r["event_id"] in ("zk-383-t2-2", "zk-384-t2-1") and r["broker"] == 3 and r["batch"] < 2]
    assert sent == [(0, "UPDATE_METADATA", ["t2-1", "t2-2"]), (1, "LEADER_AND_ISR", ["t2-2"]),
                    (1, "UPDATE_METADATA", ["t2-2"])]
    # Both completions are the request's last partition's event, as the importer gives their writes.
    completions = {(o["topic"], o["partition"]): o["cause_event_id"] for o in read_jsonl(tmp_path / "observed.jsonl")
                   if o["source_offset"] in range(0x181, 0x187)}
    assert set(completions.values()) == {"zk-384-t2-1"} and set(completions) == {("t2", 1), ("t2", 2)}


def test_a_reassignment_back_onto_a_failed_replica_the_new_controller_forgot_takes_it_offline_again(
        tmp_path: Path) -> None:
    # Campaign seed 1034 (Kafka 3.9.1 at protocol 2.6, two log dirs; its history is a regression of
    # test_zk_histories): t2-0 moved off broker 3, whose replica had failed with its dir; after failover zk-186 the
    # new controller knew nothing of it (replicasOnOfflineDirs starts empty, its failover asked broker 3 of other
    # partitions only). t2-0's reassignment back onto 3 (zk-202-t2) got KAFKA_STORAGE_ERROR for it ("Mark replicas
    # t2-0 on broker 3 as offline", 05:10:10.044): OfflineReplica, no write (3 not in the ISR), a LeaderAndIsr to 4
    # and a StopReplica to 3. Then the same reassignment asked again (zk-207-t2-0) bumped the leader epoch once more:
    # validateReplicas checks liveBrokerIds, not log dirs. isrflow had refused zk-207 (53 of 54 states) and kept t2-0
    # offline on 3 through the failover (no answer: LeaderAndIsr 81 of 86, StopReplica 18 of 20).
    logs = ZKLOG / "requests" / "zookeeper-2.6-dirs-2-seed-1034"
    summary, rows = replayed(ZKLOG / "regressions" / logs.name / "version-2", tmp_path, logs)
    assert "54 of 54 states equal" in summary
    # What is left is the notification's (zk-155): broker 3's answer to zk-145-t0's LeaderAndIsr came before the
    # notification's own LeaderAndIsr, and isrflow gives that mark to the notification (docs/zookeeper.md).
    assert "LeaderAndIsr 84 of 86 (isrflow 85), StopReplica 19 of 20 (isrflow 19), UpdateMetadata 301 of 309 " \
           "(isrflow 305)" in summary
    events = read_jsonl(tmp_path / "zk" / "events.jsonl")
    ids = [e["event_id"] for e in events]
    answer = events[ids.index("zk-202-t2") + 1]  # the answer, its own event right after the request
    assert (answer["event_id"], answer["broker_id"], answer["offline_replicas"]) == (
        "zk-202-t2-answer-3", 3, [{"topic": "t2", "partition": 0}])
    sent = [(r["broker"], r["request"]) for r in read_jsonl(tmp_path / "requests.jsonl")
            if r["event_id"] in ("zk-202-t2", "zk-202-t2-answer-3") and r["request"] != "UPDATE_METADATA"]
    assert sent == [(3, "LEADER_AND_ISR"), (4, "LEADER_AND_ISR"), (3, "LEADER_AND_ISR"), (4, "LEADER_AND_ISR"),
                    (3, "STOP_REPLICA")]
    answered = {(r["broker"], r["request"]) for r in rows
                if r["match"] and r["isrflow"]["event_id"] == "zk-202-t2-answer-3"}
    assert {(4, "LEADER_AND_ISR"), (3, "STOP_REPLICA")} <= answered


def test_a_failovers_answer_comes_after_the_reassignment_the_failover_read_from_the_znode(tmp_path: Path) -> None:
    # Campaign seed 1108 (Kafka 3.9.1 at protocol 2.6, three log dirs; its `version-2` is a regression of
    # test_zk_histories): controller 1's failover elected broker 1's replica of t1-1, in its failed dir, then read a
    # reassignment of t1-1 and t2-1 asked through /admin/reassign_partitions during the failover (its bump: leader 1,
    # epoch 4), resumed t0-0's reassignment, and only then handled broker 1's KAFKA_STORAGE_ERROR answer ("Mark
    # replicas t1-1 on broker 1 as offline"): OfflineReplica's StopReplica to broker 1 after the reassignment's
    # LeaderAndIsr. isrflow had taken the answer within the failover (StopReplica 14 of 15, LeaderAndIsr 42 of 50).
    logs = ZKLOG / "requests" / "zookeeper-2.6-dirs-3-seed-1108"
    summary, rows = replayed(ZKLOG / "regressions" / logs.name / "version-2", tmp_path, logs)
    assert "StopReplica 15 of 15 (isrflow 15)" in summary and "18 of 18 equal" in summary
    events = read_jsonl(tmp_path / "zk" / "events.jsonl")
    read = [e for e in events if e.get("read_at_failover")]
    assert [e["event_id"] for e in read] == ["zk-187-reassign_partitions"]
    assert not [e for e in events if e["event_id"] == "zk-191-t0-0"]  # t0-0's resumed bump is the failover's
    # t4 and t3, created during the failover, were read by one TopicChange queued behind it (their partitions znodes
    # at cxids 111 and 112): one batch, after the reassignment the failover read; their events come after its.
    at = next(i for i, e in enumerate(events) if e["event_id"] == "zk-170")
    assert [e["event_id"] for e in events[at:at + 4]] == ["zk-170", "zk-187-reassign_partitions", "zk-183", "zk-186"]
    assert events[at + 2]["topics"] == events[at + 3]["topics"] == ["t4", "t3"]
    assert "UpdateMetadata 145 of 145 (isrflow 145)" in summary
    # What is left (LeaderAndIsr 49 of 50): isrflow resumes t0-0's reassignment within the ControllerChange, before
    # the znode's (initializePartitionReassignments: the znode's first, then maybeResumeReassignments), its
    # LeaderAndIsr to broker 4 before t2-1's.
    assert {r["isrflow"]["event_id"] for r in rows if not r["match"] and r["isrflow"]} == {"zk-170"}


def test_a_failover_whose_read_the_controller_log_names_ends_before_a_later_znode_reassignment(tmp_path: Path) -> None:
    # Campaign seed 1117 (Kafka 3.0.2, three log dirs; its `version-2` is a regression of test_zk_histories):
    # controller 1's failover (zk-177) asked broker 1 about t0-2, in its failed dir, and took it offline at once
    # (StopReplica 06:10:56.656); /admin/reassign_partitions came 7 s later (zk-202). With the brokers' logs the
    # importer had never seen the failover end (its read of /brokers/ids is the controller.log's) and took that
    # reassignment for the failover's read, holding the answer behind it: t0-2's replica on broker 1 was online to
    # the startup and the deletion in between (StopReplica 28 of 32, LeaderAndIsr 85 of 85 with isrflow's 86).
    logs = ZKLOG / "requests" / "zookeeper-3.0-dirs-3-seed-1117"
    summary, rows = replayed(ZKLOG / "regressions" / logs.name / "version-2", tmp_path, logs)
    assert "LeaderAndIsr 85 of 85 (isrflow 85), StopReplica 32 of 32 (isrflow 32), UpdateMetadata 233 of 233 " \
           "(isrflow 233)" in summary and all(r["match"] for r in rows)
    assert "12 of 12 equal" in summary
    events = read_jsonl(tmp_path / "zk" / "events.jsonl")
    assert not [e["event_id"] for e in events if e.get("read_at_failover") or e.get("reads_reassignment_znode")]
    failover = [(r["controller"]["time"], r["isrflow"]["event_id"]) for r in rows
                if r["request"] == "STOP_REPLICA" and r["broker"] == 1 and r["match"]
                and r["controller"]["partitions"] == ["t0-2"]]
    assert ("2026-11-27 06:10:56.656", "zk-177") in failover
    # Broker 2's KAFKA_STORAGE_ERROR answer to its startup's LeaderAndIsr (zk-245-2; t1-1 and t3-1 marked offline at
    # 06:11:16.906) was handled after broker 1's AlterIsr of t3-0, sent at .890 before the answer came in (.893): its
    # UpdateMetadata (.905) went first. isrflow had taken the answer within the startup (UpdateMetadata 231 of 233);
    # now it is an event of its own right after the IsrChange, as in seed 1255.
    ids = [e["event_id"] for e in events]
    events = {e["event_id"]: e for e in events}
    assert events["zk-245-2"]["storage_error_answer_queued"] is True
    assert events["zk-247-t3-0-answer-2"]["offline_replicas"] == [{"topic": "t1", "partition": 1},
                                                                  {"topic": "t3", "partition": 1}]
    assert ids.index("zk-247-t3-0-answer-2") == ids.index("zk-247-t3-0") + 1


def test_a_cancel_queued_before_a_leaders_own_isr_write_that_caught_up_sends_the_cancels_requests(tmp_path: Path
                                                                                                  ) -> None:
    # Campaign seed 1208 (Kafka 3.9.1 at protocol 2.6, two log dirs; its `version-2` is a regression of
    # test_zk_histories): t0-0 being reassigned from [4] to [2]; its leader, 4, wrote the ISR [4, 2] itself and the
    # cancel's assignment write came next, in the same ms: the controller took the cancel first (2 out of the ISR,
    # StopReplica to broker 2, a bare bump of leader 4). isrflow had completed the reassignment at the IsrChange
    # (leader 2), then nothing for the cancel: LeaderAndIsr 50 of 54 (isrflow 56), StopReplica 10 of 12.
    logs = ZKLOG / "requests" / "zookeeper-2.6-dirs-2-seed-1208"
    summary, rows = replayed(ZKLOG / "regressions" / logs.name / "version-2", tmp_path, logs)
    assert "LeaderAndIsr 54 of 54 (isrflow 54), StopReplica 12 of 12 (isrflow 12), UpdateMetadata 154 of 154 " \
           "(isrflow 154)" in summary and all(r["match"] for r in rows)
    assert "3 of 3 equal" in summary
    # Broker 4's startup elected t1-1 (leaderless, reassigning, unclean election enabled, no replica on 4) with t0-0
    # and t1-0, its own: one triggerOnlinePartitionStateChange, one UpdateMetadata of the three (isrflow had sent
    # t1-1's apart: UpdateMetadata 152 of 154).
    startup = [(r["batch"], r["partitions"]) for r in read_jsonl(tmp_path / "requests.jsonl")
               if r["event_id"] == "zk-160-4" and r["broker"] == 2 and r["request"] == UM]
    assert [(b, sorted(f"{p['topic']}-{p['partition']}" for p in json.loads(parts))) for b, parts in startup][-1] \
        == (3, ["t0-0", "t1-0", "t1-1"])


def test_a_reassignments_answer_before_the_notifications_leader_and_isr_and_a_notification_read_after_an_alter_isr(
        tmp_path: Path) -> None:
    # Campaign seed 1113 (Kafka 2.7.2, three log dirs; its `version-2` is a regression of test_zk_histories): an
    # Admin API reassignment of t1-4, t1-3 and t1-0 made broker 1 t1-3's leader; writing its leader epoch checkpoint
    # failed the dir. Broker 1's notification came at 12.311, its answer to the request's LeaderAndIsr ("Mark
    # replicas t1-3 on broker 1 as offline") at 12.318, before the controller sent broker 1 anything since: t1-3
    # leaderless (0x9d), a LeaderAndIsr to broker 2, a StopReplica to broker 1. Broker 3's AlterIsr of t1-4, queued
    # behind that answer, and the completion it let go on came next; the controller read the notification only then
    # (12.369, "Handling log directory failure for brokers 1"), deleting it after its LeaderAndIsr. isrflow had given
    # the mark to the notification and handled it before the AlterIsr: LeaderAndIsr 68 of 69, UpdateMetadata 272 of
    # 276.
    summary = every_request_equal("zookeeper-2.7-dirs-3-seed-1113", tmp_path, (69, 23, 276))
    assert "12 of 12 equal" in summary
    events = read_jsonl(tmp_path / "zk" / "events.jsonl")
    by_id = {e["event_id"]: e for e in events}
    assert by_id["zk-150-t1-answer-1"]["offline_replicas"] == [{"topic": "t1", "partition": 3}]  # its own event
    assert by_id["zk-156"]["offline_replicas"] == []
    order = [e["event_id"] for e in events]
    assert order.index("zk-158-t1-4") < order.index("zk-156")


def test_a_failover_resumes_first_the_reassignments_the_znode_still_names(tmp_path: Path) -> None:
    # Campaign seed 1043 (Kafka 2.7.2, two log dirs): t1-1 and t1-0 were being reassigned through
    # /admin/reassign_partitions (zk-209), t0-0 through the Admin API (zk-205-t0), when controller 4 took over (zk-249):
    # initializePartitionReassignments resumed the znode's first (processZkPartitionReassignment: t1-1, t1-0), then
    # t0-0 (maybeResumeReassignments). isrflow had taken all three in the hash set's order (t0-0 first): LeaderAndIsr
    # 119 of 121.
    logs = ZKLOG / "requests" / "zookeeper-2.7-dirs-2-seed-1043"
    summary, rows = replayed(logs / "version-2", tmp_path / "1043", logs)
    assert "LeaderAndIsr 121 of 121 (isrflow 121), StopReplica 29 of 29 (isrflow 29), UpdateMetadata 246 of 246 " \
           "(isrflow 246)" in summary and all(r["match"] for r in rows)
    [failover] = [e for e in read_jsonl(tmp_path / "1043" / "zk" / "events.jsonl") if e["event_id"] == "zk-249"]
    assert failover["znode_reassignments"] == [{"topic": "t1", "partition": 0}, {"topic": "t1", "partition": 1}]
    resumed = [parts for _, broker, parts in leader_and_isr(tmp_path / "1043", "zk-249")
               if broker == 4 and len(parts) == 1]
    assert resumed[:3] == [["t1-1"], ["t1-0"], ["t0-0"]]
    # Seed 1232 (Kafka 3.9.1 at protocol 2.6, three log dirs): the znode named t0-0 (zk-211) at both failovers (1, 4);
    # each resumed t0-0 before t1-4 and t1-3. isrflow had LeaderAndIsr 127 of 130.
    logs = ZKLOG / "requests" / "zookeeper-2.6-dirs-3-seed-1232"
    summary, rows = replayed(logs / "version-2", tmp_path / "1232", logs)
    assert "LeaderAndIsr 130 of 130 (isrflow 130), StopReplica 25 of 25 (isrflow 25), UpdateMetadata 353 of 353 " \
           "(isrflow 353)" in summary and all(r["match"] for r in rows)
    resumed = [parts for _, broker, parts in leader_and_isr(tmp_path / "1232", "zk-262")
               if broker == 1 and len(parts) == 1]
    assert resumed == [["t0-0"], ["t1-4"]]


def test_a_later_controllers_mark_of_a_broker_answers_its_reassignment_not_the_brokers_old_notification(
        tmp_path: Path) -> None:
    # Campaign seed 1291 (Kafka 2.8.2, three log dirs): broker 1's dir failed under t1-0 (answered to a reassignment's
    # LeaderAndIsr at 12:40:36.737, before its notification at 36.750, which controller 1 read and whose answer named
    # nothing new: no mark). t1-0 moved off broker 1; 28 s and two failovers later controller 2 reassigned it back
    # onto broker 1 (zk-225-t1, 12:41:04.473), whose KAFKA_STORAGE_ERROR answer ("Mark replicas t1-0 on broker 1 as
    # offline", 04.492) took it offline again: no write, LeaderAndIsr to 2 and 3, StopReplica to 1, UpdateMetadata.
    # The importer had given that mark to the notification (the first within 30 s after it): LeaderAndIsr 100 of 102,
    # StopReplica 14 of 15, UpdateMetadata 231 of 234. A notification's answer is its reader's mark.
    logs = ZKLOG / "requests" / "zookeeper-2.8-dirs-3-seed-1291"
    summary, rows = replayed(logs / "version-2", tmp_path, logs)
    assert "LeaderAndIsr 102 of 102 (isrflow 102), StopReplica 15 of 15 (isrflow 15), UpdateMetadata 234 of 234 " \
           "(isrflow 234)" in summary and all(r["match"] for r in rows)
    events = {e["event_id"]: e for e in read_jsonl(tmp_path / "zk" / "events.jsonl")}
    assert events["zk-122"]["offline_replicas"] == []
    # the answer is its own event, right after the reassignment's (LeaderAndIsrResponseReceived)
    assert events["zk-225-t1-answer-1"]["offline_replicas"] == [{"topic": "t1", "partition": 0}]
    stopped = [(r["broker"], r["isrflow"]["event_id"]) for r in rows if r["request"] == "STOP_REPLICA"
               and r["controller"]["time"].endswith("04.510")]
    assert stopped == [(1, "zk-225-t1-answer-1")]


@pytest.mark.xfail(strict=True, reason="a controller whose session expired while it stalled in a reassignment's "
                   "completion: its leader move (B3) was written but answered SessionExpired, so it sent no "
                   "LeaderAndIsr or UpdateMetadata for it, then B4's StopReplica to the removed replica (its ISR "
                   "write failing), under its old epoch after the next controller's failover; isrflow models a "
                   "controller killed after B3 (controller_died_after_leader_move, seed 443)")
def test_a_controller_that_stalled_past_its_session_in_a_completion_sends_what_it_sent(tmp_path: Path) -> None:
    # Campaign seed 1018 (Kafka 2.6.3 at its own protocol): leader 3 wrote t1-0's ISR [3, 2] (zk-267), letting its
    # reassignment to [2] complete; controller 4 re-elected the leader (2, written at 04:48:12.07), stalled, and its
    # session expired; controller 3 was elected at 18.55 (epoch 5). At 23.652 controller 4 logged the election as
    # failed ("from OnlinePartition to OnlinePartition failed"), sent nothing for it, took replica 3 offline (B4):
    # a StopReplica to broker 3 (23.754, epoch 4) though the ISR write failed, then resigned on its failed assignment
    # write. isrflow sends the move's LeaderAndIsr to broker 2 and its UpdateMetadata, not the StopReplica.
    summary, rows = replayed(ZKLOG / "requests" / "zookeeper-2.6-seed-1018" / "version-2", tmp_path)
    assert "10 of 10 equal" in summary and all(r["match"] for r in rows)


@pytest.mark.xfail(strict=True, reason="seed 1108: a failover that read a znode reassignment resumes the reassignments "
                                       "in progress after it (initializePartitionReassignments); isrflow resumes them "
                                       "within the ControllerChange, t0-0's LeaderAndIsr before t2-1's")
def test_a_failovers_resumed_reassignments_come_after_the_znodes(tmp_path: Path) -> None:
    logs = ZKLOG / "requests" / "zookeeper-2.6-dirs-3-seed-1108"
    summary, rows = replayed(ZKLOG / "regressions" / logs.name / "version-2", tmp_path, logs)
    assert "LeaderAndIsr 50 of 50 (isrflow 50)" in summary and all(r["match"] for r in rows)


def test_a_completion_whose_assignment_write_threw_and_a_notification_read_before_a_startup(tmp_path: Path) -> None:
    # Campaign seed 1288 (Kafka 3.9.1 at protocol 2.6): leader 1's ISR [1, 2, 3] of t0-0 let controller 1 complete
    # its reassignment (zk-178); its assignment write (B5, 12:36:50.351) landed, but broker 1 was cut from ZooKeeper
    # and the answer was SessionExpired 8.5 s later ("Error processing event PartitionReassignmentIsrChange(t0-0)"):
    # no UpdateMetadata after it. Then, under controller 3, an ISR change notification (0xc1) and broker 1's
    # registration (0xc2): the notification's read first (one UpdateMetadata to brokers 2 and 3), then the startup.
    # isrflow had both UpdateMetadata requests to brokers 1-3: 178 of 180 (isrflow 184).
    logs = ZKLOG / "requests" / "zookeeper-2.6-seed-1288"
    summary, rows = replayed(logs / "version-2", tmp_path, logs)
    assert "LeaderAndIsr 87 of 87 (isrflow 87), StopReplica 12 of 12 (isrflow 12), UpdateMetadata 180 of 180 " \
           "(isrflow 180)" in summary and all(r["match"] for r in rows)
    events = read_jsonl(tmp_path / "zk" / "events.jsonl")
    assert [e["event_id"] for e in events if e.get("controller_died_after_assignment")] == ["zk-178-t0-0"]
    order = [e["event_id"] for e in events if e["event_id"] in ("zk-194-1", "zk-195-isr-change-notification")]
    assert order == ["zk-195-isr-change-notification", "zk-194-1"]


def test_an_answer_to_a_reassignments_leader_and_isr_before_the_notification_is_handled(tmp_path: Path) -> None:
    # Campaign seed 1371 (Kafka 2.8.2, two log dirs): controller 1's znode reassignment (zk-176) sent broker 4 t0-0's
    # LeaderAndIsr (15:48:12.451); broker 4's dir failed, it answered KAFKA_STORAGE_ERROR (.460) and wrote its
    # notification (.468) while the reassignment went on (t2-0's LeaderAndIsr to broker 4 at .471). The answer was
    # handled first ("Mark replicas t0-0 on broker 4" .494, leader 1 at epoch 4), the notification after ("Handling
    # log directory failure for brokers 4" .514). isrflow had taken t0-0 offline within the notification, and then
    # (reading t2-0's LeaderAndIsr as the notification's) as broker 4's controlled shutdown: 8 of 9 histories,
    # LeaderAndIsr 63 of 67, StopReplica 19 of 21, UpdateMetadata 130 of 136.
    every_request_equal("zookeeper-2.8-dirs-2-seed-1371", tmp_path, (67, 21, 136))
    events = read_jsonl(tmp_path / "zk" / "events.jsonl")
    answer = next(e for e in events if e["event_id"] == "zk-176-answer-4")
    assert answer["offline_replicas"] == [{"topic": "t0", "partition": 0}]
    # The notification's own answer (to onBrokerLogDirFailure's LeaderAndIsr) named t2-1 alone.
    assert next(e for e in events if e["event_id"] == "zk-183")["offline_replicas"] == [{"topic": "t2", "partition": 1}]


def test_a_completion_whose_controller_died_before_clearing_the_reassignment_znode_sends_no_metadata(
        tmp_path: Path) -> None:
    # Campaign seed 1408 (Kafka 3.9.1 at protocol 2.6): t1-0 from [2] to [3] asked through /admin/reassign_partitions
    # (zk-121); leader 2's own ISR [2, 3] (zk-135) let controller 4 complete it: 3 elected, 2 out of the ISR and
    # stopped, the assignment [3] written (B6, "Successfully updated assignment of partition t1-0", 17:31:18.177), and
    # broker 4 was killed before B7 removed t1-0 from the znode: the UpdateMetadata of B8 never went out. isrflow
    # sent it to brokers 2-4: UpdateMetadata 229 of 229 (isrflow 232).
    every_request_equal("zookeeper-2.6-seed-1408", tmp_path, (99, 16, 229))
    events = read_jsonl(tmp_path / "zk" / "events.jsonl")
    assert [e["event_id"] for e in events if e.get("controller_died_after_assignment")] == ["zk-135-t1-0"]


def test_another_brokers_answer_to_a_reassignment_a_startup_resumed_is_handled_after_it(tmp_path: Path) -> None:
    # Campaign seed 1426 (Kafka 3.9.1, two log dirs; `out/zk-camp-s16`): broker 3's startup (17:53:03.269) resumed
    # t1-0's reassignment (maybeResumeReassignments), whose LeaderAndIsr went to every replica. Broker 4, whose dir had
    # failed, had deleted its log of t1-0 (t1 being deleted) and answered KAFKA_STORAGE_ERROR ("Mark replicas t1-0 on
    # broker 4 as offline", 03.366): onReplicasBecomeOffline took no replica offline that was not being deleted and
    # every election failed, so the controller sent every broker an empty UpdateMetadata (03.379). isrflow had no such
    # answer: UpdateMetadata 81 of 84 (isrflow 81).
    every_request_equal("zookeeper-3.9-dirs-2-seed-1426", tmp_path, (42, 12, 84))
    events = read_jsonl(tmp_path / "zk" / "events.jsonl")
    answer = next(e for e in events if e["type"] == "LeaderAndIsrResponseReceived")
    assert (answer["event_id"], answer["broker_id"], answer["offline_replicas"]) == \
        ("zk-166-3-answer-4", 4, [{"topic": "t1", "partition": 0}])
    assert events[events.index(answer) - 1]["event_id"] == "zk-166-3"


def test_a_reassignment_of_a_new_partition_to_its_own_replicas_is_completed_by_its_brokers_startup(
        tmp_path: Path) -> None:
    # Campaign seed 1497 (Kafka 3.0.2, two log dirs): t5-1 was created on broker 3 while it was down (no state znode)
    # and reassigned through /admin/reassign_partitions to the [3] it had (zk-167): nothing to add or remove, so the
    # completion ran at once and threw at B3 (NoSuchElementException: no leader to read). The controller dropped t5-1
    # from the znode and kept it in partitionsBeingReassigned. Broker 3's startup (zk-229) elected it (21:20:54.030),
    # completed that reassignment (leader epoch 1, .042; the assignment and the znode rewritten) and resumed t2-1's
    # onto broker 3 (leader epoch 6, .065). isrflow had read each bump as a reassignment of its own and bumped t2-1
    # twice: 11 of 12 histories, LeaderAndIsr 62 of 69 (isrflow 67), StopReplica 24 of 26, UpdateMetadata 183 of 191.
    every_request_equal("zookeeper-3.0-dirs-2-seed-1497", tmp_path, (69, 26, 191))
    events = read_jsonl(tmp_path / "zk" / "events.jsonl")
    assert [e["event_id"] for e in events if e["type"] == "ReassignPartitions"] == ["zk-167", "zk-255-t3"]
    startup = [(o["topic"], o["partition"], o["leader"], o["leader_epoch"]) for o in
               read_jsonl(tmp_path / "observed.jsonl") if o["cause_event_id"] == "zk-229-3" and o["topic"] != "t4"]
    assert startup == [("t5", 1, 3, 0), ("t5", 1, 3, 1), ("t2", 1, 4, 6)]
    assert all(h["match"] for h in read_jsonl(tmp_path / "histories.jsonl"))


def test_leaders_own_isr_writes_during_another_completion_are_completed_in_the_order_of_the_bumps(
        tmp_path: Path) -> None:
    # Campaign seed 1542 (Kafka 3.9.1 at protocol 2.6, two log dirs; its `version-2` is a regression of
    # test_zk_histories): one znode reassignment (zk-157) of t0-1, t1-2 and t1-0, bumped in that order (zk-159, 161,
    # 165), each bump firing the watch on its state. During t0-1's completion leader 2 took 3 into t1-0's ISR
    # (zk-168), then 1 into t1-2's (zk-171); controller 4 completed t1-2 (29.026, "Target replicas ... caught up"),
    # then t1-0 (29.063), as their bumps were queued. isrflow had completed t1-0 at its leader's write and read the
    # controller's t1-0 writes (zk-177, 178) as an admin preferred election: 39 of 41 decisions, StopReplica 32 of 34.
    every_request_equal("zookeeper-2.6-dirs-2-seed-1542", tmp_path, (77, 34, 264))
    ids = [e["event_id"] for e in read_jsonl(tmp_path / "zk" / "events.jsonl")]
    assert "zk-177" not in ids and ids.index("zk-171-t1-2") + 1 == ids.index("zk-168-t1-0")
    completions = [(r["event_id"], r["broker"]) for r in read_jsonl(tmp_path / "requests.jsonl")
                   if r["event_id"] in ("zk-168-t1-0", "zk-171-t1-2") and r["request"] == "STOP_REPLICA"]
    assert completions == [("zk-171-t1-2", 2), ("zk-171-t1-2", 2), ("zk-168-t1-0", 2), ("zk-168-t1-0", 2)]
    t1_0 = [(o["source_offset"], o["leader"], o["cause_event_id"]) for o in read_jsonl(tmp_path / "observed.jsonl")
            if (o["topic"], o["partition"]) == ("t1", 0) and o["source_offset"] in (177, 178)]
    assert t1_0 == [(177, 3, "zk-168-t1-0"), (178, 3, "zk-168-t1-0")]
    assert all(a["match"] for a in read_jsonl(tmp_path / "agreement.jsonl"))


def test_an_offline_partitions_reassignment_in_place_through_the_znode_sends_its_update_metadata(tmp_path: Path
                                                                                                 ) -> None:
    # Campaign seed 1555 (Kafka 2.8.2, two log dirs): t0-0 and t1-1, leaderless, reassigned through
    # /admin/reassign_partitions to the replicas they had (00:35:43.250). Controller 4 failed to elect either, rewrote
    # each assignment unchanged, dropped each from the znode and sent an UpdateMetadata of it to broker 4, the one
    # live broker (.326, .390); its session ended later. isrflow took the reassignment for one it never read
    # (UpdateMetadata 72 of 74).
    every_request_equal("zookeeper-2.8-dirs-2-seed-1555", tmp_path, (30, 7, 74))
    [reassignment] = [e for e in read_jsonl(tmp_path / "zk" / "events.jsonl")
                      if e["type"] == "ReassignPartitions" and e.get("through_znode")]
    assert [(m["topic"], m["partition"], m["replicas"]) for m in reassignment["partitions"]] == [
        ("t0", 0, [1, 3]), ("t1", 1, [2])]


def test_a_reassignment_after_a_broker_startup_the_controller_read_is_its_own_request(tmp_path: Path) -> None:
    # Campaign seed 1584 (Kafka 3.9.1 at protocol 2.6): t1-0 reassigned in place (01:13:58), broker 2's startup read
    # at 01:14:01.185 (UpdateMetadata of no partition to 1, 3, 4; of 3 to 2), then t0-0 and t1-0 reassigned
    # (02.528). isrflow had read t0-0's writes as the first request's, before the startup (UpdateMetadata 146 of 151).
    every_request_equal("zookeeper-2.6-seed-1584", tmp_path, (42, 4, 151))
    events = [e for e in read_jsonl(tmp_path / "zk" / "events.jsonl") if e["ts"] >= "2026-11-28T01:13:58"
              and e["type"] in ("ReassignPartitions", "BrokerChange")]
    assert [(e["type"], [(m["topic"], m["partition"]) for m in e.get("partitions", [])]) for e in events[:3]] == [
        ("ReassignPartitions", [("t1", 0)]), ("BrokerChange", []), ("ReassignPartitions", [("t0", 0), ("t1", 0)])]


def test_a_znode_reassignments_rewrite_in_place_after_a_leaders_own_isr_write_leaves_the_completion_to_it(
        tmp_path: Path) -> None:
    # Campaign seed 1548 (Kafka 3.9.1 at protocol 2.6, one log dir): one reassignment through
    # /admin/reassign_partitions (zk-170) of t0-3 ([2] to [3]), t0-2, t1-2 and t0-0 (to the [1] it had, broker 1 dead,
    # leaderless). t0-3's leader, 2, wrote the ISR [2, 3] itself (zk-176) while controller 4 started t1-2; the
    # controller then rewrote t0's assignment unchanged for t0-0 (its election failed: no bump; "Successfully updated
    # assignment of partition t0-0", 00:27:04.653), took t0-0 off the znode, and only then handled the watch's event:
    # t0-3's completion (3 elected, then 2 out of the ISR, zk-180 and 181). isrflow had read the rewrite as an Admin
    # API reassignment in place of t0-0 and the completion as an admin preferred election: 59 of 61 decisions.
    summary = every_request_equal("zookeeper-2.6-seed-1548", tmp_path, (120, 14, 286))
    assert "32 of 32 equal" in summary
    events = read_jsonl(tmp_path / "zk" / "events.jsonl")
    assert [e["event_id"] for e in events if e["type"] in ("ReassignPartitions", "ElectLeaders")] == \
        ["zk-106-t0", "zk-115", "zk-170", "zk-249-t3"]
    completion = [(o["source_offset"], o["leader"], o["isr"], o["cause_event_id"])
                  for o in read_jsonl(tmp_path / "observed.jsonl") if (o["topic"], o["partition"]) == ("t0", 3)][-2:]
    assert completion == [(180, 3, [2, 3], "zk-176-t0-3"), (181, 3, [3], "zk-176-t0-3")]
    assert leader_and_isr(tmp_path, "zk-176-t0-3") == [(0, 3, ["t0-3"]), (1, 3, ["t0-3"])]
