"""A real ZooKeeper-mode controller's requests (a campaign run kept in tests/integration/zklog/requests, README there):
`replay zk:DIR` with the brokers' state-change logs beside the history models every LeaderAndIsr and StopReplica
request the controllers sent, per broker in order, and every UpdateMetadata request's partition count."""

from __future__ import annotations

from pathlib import Path

import pytest

from statemachine.controller import ControllerConfig
from statemachine.rules import ZK
from streaming.errors import UsageError
from streaming.io.jsonl import read_jsonl
from streaming.jobs.replay import ReplayOptions, replay
from streaming.zookeeper.requests import requests_agreement

RUN = Path(__file__).parent / "zklog" / "requests" / "zookeeper-3.9-seed-13"
RESUMED_DELETIONS = RUN.with_name("zookeeper-3.9-seed-19")


def test_every_request_of_the_real_controllers_is_modelled_per_broker_in_order(tmp_path: Path) -> None:
    summary = replay(ReplayOptions(f"zk:{RUN / 'version-2'}", tmp_path, engine="local",
                                   config=ControllerConfig(rules=ZK)))
    assert "LeaderAndIsr 60 of 60 (isrflow 60), StopReplica 6 of 6 (isrflow 6)" in summary
    rows = read_jsonl(tmp_path / "requests_agreement.jsonl")
    counts = requests_agreement(rows).counts
    assert counts["UPDATE_METADATA"].agreeing == counts["UPDATE_METADATA"].controller == 197
    # isrflow's only extra requests: brokers 2 and 4 registered together at the cluster's start, which the controller
    # handled as one startup (one UpdateMetadata, naming no partition, to the brokers before them); isrflow's events
    # name one broker each, so the second startup tells brokers 1, 2 and 3 once more. Which of a broker's
    # partition-less UpdateMetadata requests is the extra one the order cannot tell.
    extra = [(r["broker"], r["request"], r["isrflow"]["partition_count"]) for r in rows if not r["match"]]
    assert extra == [(1, "UPDATE_METADATA", 0), (2, "UPDATE_METADATA", 0), (3, "UPDATE_METADATA", 0)]
    assert "The controller's requests" in (tmp_path / "report.html").read_text()


def test_a_deletion_resumed_by_broker_startups_sends_what_the_controller_sent(tmp_path: Path) -> None:
    # Campaign seed 19: brokers that come back resume the deletion of a topic they hold replicas of; each time the
    # controller sends one UpdateMetadata naming all the topic's partitions (leader -2) and one StopReplica batch per
    # replica state, also naming the partitions with no replica on the broker (resumeDeletionForTopics).
    summary = replay(ReplayOptions(f"zk:{RESUMED_DELETIONS / 'version-2'}", tmp_path, engine="local",
                                   config=ControllerConfig(rules=ZK)))
    assert ("LeaderAndIsr 56 of 56 (isrflow 56), StopReplica 12 of 12 (isrflow 12), "
            "UpdateMetadata 162 of 162 (isrflow 162)") in summary
    assert all(r["match"] for r in read_jsonl(tmp_path / "requests_agreement.jsonl"))


def test_state_change_logs_go_with_a_zk_source_and_must_be_there(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="goes with a zk: source"):
        replay(ReplayOptions(str(RUN / "version-2"), tmp_path, engine="local", state_change=RUN / "state-change"))
    with pytest.raises(UsageError, match="no such directory"):
        replay(ReplayOptions(f"zk:{RUN / 'version-2'}", tmp_path, engine="local", state_change=tmp_path / "none"))
