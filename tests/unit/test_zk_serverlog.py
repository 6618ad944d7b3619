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


def test_a_kafka_2_leaders_alter_isr_is_read_as_its_alter_partition() -> None:
    # Kafka 2.8.2 (DefaultAlterIsrManager): topics by name alone, the partition epoch as currentIsrVersion; the
    # controller refused the second partition (FENCED_LEADER_EPOCH, 74).
    logger = "(kafka.server.DefaultAlterIsrManager)"
    lines = [
        "[2026-11-26 17:39:52,910] DEBUG Sending AlterIsr to controller AlterIsrRequestData(brokerId=2, "
        "brokerEpoch=108, topics=[TopicData(name='t1', partitions=[PartitionData(partitionIndex=1, leaderEpoch=3, "
        "newIsr=[2, 3], currentIsrVersion=5), PartitionData(partitionIndex=2, leaderEpoch=1, newIsr=[2], "
        f"currentIsrVersion=2)])]) {logger}",
        "[2026-11-26 17:39:52,930] DEBUG Received AlterIsr response ClientResponse(receivedTimeMs=1795714792928, "
        "latencyMs=18, disconnected=false, requestHeader=RequestHeader(apiKey=ALTER_ISR, apiVersion=0, clientId=2, "
        "correlationId=0), responseBody=AlterIsrResponseData(throttleTimeMs=0, errorCode=0, topics=[TopicData("
        "name='t1', partitions=[PartitionData(partitionIndex=1, errorCode=0, leaderId=2, leaderEpoch=3, isr=[2, 3], "
        f"currentIsrVersion=6), PartitionData(partitionIndex=2, errorCode=74, leaderId=0)])])) {logger}",
    ]
    [request] = parse_server_log(lines).requests
    assert (request.broker_id, request.broker_epoch) == (2, 108)
    assert [(p.topic, p.partition, p.leader_epoch, p.isr, p.recovering, p.partition_epoch, p.error)
            for p in request.partitions] == [("t1", 1, 3, (2, 3), False, 5, 0), ("t1", 2, 1, (2,), False, 2, 74)]
