"""The AlterPartition requests leaders logged sending, read from real server.log files (tests/unit/zkdata/server/:
the DefaultAlterPartitionManager lines, at DEBUG, of a campaign run's four Kafka 3.9.1 brokers, seed 121, and a few
other lines of each)."""

from __future__ import annotations

import itertools
from pathlib import Path

from streaming.zookeeper.serverlog import parse_server_log, read_server_logs

DATA = Path(__file__).parent / "zkdata" / "server"


def test_each_answered_request_with_its_partitions_and_answers() -> None:
    log = read_server_logs(DATA)
    assert log.unanswered == 0
    # the files' first lines (other loggers) and the leader's "Controller successfully handled" line per request
    assert log.other_lines == 4 * 3 + 7
    by_broker = {b: [r for r in log.requests if r.broker_id == b] for b in (1, 2, 3, 4)}
    assert [len(rs) for rs in by_broker.values()] == [0, 1, 1, 5]
    first = by_broker[2][0]
    assert first.broker_epoch == 78 and first.sent < first.answered
    [asked] = first.partitions
    assert (asked.topic, asked.partition, asked.leader_epoch, asked.isr, asked.partition_epoch, asked.error) == \
        ("t1", 0, 1, (2, 4, 3, 1), 1, 0)
    assert not any(r.unwritten for r in log.requests)  # the controller wrote every one of these
    # Broker 4's requests in the order it sent them: each is sent after the answer to the one before.
    sent = by_broker[4]
    assert all(a.answered <= b.sent for a, b in itertools.pairwise(sent))
    assert [(p.topic, p.leader_epoch, p.partition_epoch) for r in sent for p in r.partitions] == \
        [("t1", 5, 6), ("t1", 8, 10), ("t2", 2, 2), ("t1", 9, 12), ("t3", 1, 1)]


def test_a_request_refused_for_every_partition_wrote_nothing() -> None:
    """The answer's error codes are the request's (FENCED_LEADER_EPOCH is 74): a request refused for every partition
    is `unwritten`; a disconnect or a top-level error (NOT_CONTROLLER, 41) is no answer at all."""
    lines = (DATA / "broker-2.log").read_text().splitlines()
    sent, answered = (line for line in lines if "Sending AlterPartition" in line or "Received AlterPartition" in line)
    fenced = answered.replace("partitionIndex=0, errorCode=0,", "partitionIndex=0, errorCode=74,")
    assert fenced != answered
    [request] = parse_server_log([sent, fenced]).requests
    assert request.unwritten and request.partitions[0].error == 74
    for not_answered in (answered.replace("disconnected=false", "disconnected=true"),
                         answered.replace("throttleTimeMs=0, errorCode=0", "throttleTimeMs=0, errorCode=41")):
        log = parse_server_log([sent, not_answered])
        assert log.requests == [] and log.unanswered == 1
    assert parse_server_log([sent]).unanswered == 1
