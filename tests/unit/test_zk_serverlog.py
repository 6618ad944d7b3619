"""The AlterPartition requests leaders logged sending, read from real server.log files (tests/unit/zkdata/server/:
the DefaultAlterPartitionManager lines, at DEBUG, of a campaign run's four Kafka 3.9.1 brokers, seed 121, and a few
other lines of each)."""

from __future__ import annotations

import itertools
from pathlib import Path

from streaming.zookeeper.serverlog import ControlledShutdowns, parse_server_log, read_server_logs

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


def test_a_kafka_2_7_leaders_answer_is_its_line_per_partition() -> None:
    # Kafka 2.7.2 (AlterIsrManagerImpl) logs no response line: a "successfully handled" line per partition of the
    # answer, whatever its error. These three lines are broker 3's, campaign seed 1060: controller 1, losing its
    # role, failed to write t3-0's ISR (UNKNOWN_SERVER_ERROR, -1) and still sent its UpdateMetadata.
    logger = "(kafka.server.AlterIsrManagerImpl)"
    sent = ("[2026-11-27 05:46:47,440] DEBUG Sending AlterIsr to controller AlterIsrRequestData(brokerId=3, "
            "brokerEpoch=188, topics=[TopicData(name='t3', partitions=[PartitionData(partitionIndex=0, leaderEpoch=0, "
            f"newIsr=[3], currentIsrVersion=0)])]) {logger}")
    other = "[2026-11-27 05:46:50,062] INFO [ReplicaFetcherManager on broker 3] Removed fetcher for partitions Set(t3)"
    handled = ("[2026-11-27 05:46:53,376] DEBUG Controller successfully handled AlterIsr request for t3-0: "
               "PartitionData(partitionIndex=0, errorCode=-1, leaderId=0, leaderEpoch=0, isr=[], currentIsrVersion=0) "
               f"{logger}")
    log = parse_server_log([sent, other, handled])
    [request] = log.requests
    assert (request.broker_id, request.broker_epoch, log.unanswered, log.other_lines) == (3, 188, 0, 1)
    assert request.answered > request.sent and request.unwritten
    assert [(p.topic, p.partition, p.isr, p.partition_epoch, p.error) for p in request.partitions] == \
        [("t3", 0, (3,), 0, -1)]
    # Answered for one partition of two: the other written; a topic name holding '-' read whole.
    two = sent.replace("name='t3'", "name='my-t3'").replace(
        "currentIsrVersion=0)]", "currentIsrVersion=0), PartitionData(partitionIndex=1, leaderEpoch=2, newIsr=[3, 1], "
        "currentIsrVersion=4)]")
    ok = handled.replace("for t3-0", "for my-t3-1").replace("partitionIndex=0, errorCode=-1", "partitionIndex=1, "
                                                                                                "errorCode=0")
    [request] = parse_server_log([two, handled.replace("for t3-0", "for my-t3-0"), ok, sent]).requests
    assert not request.unwritten and [(p.topic, p.partition, p.error) for p in request.partitions] == \
        [("my-t3", 0, -1), ("my-t3", 1, 0)]
    # From Kafka 2.8 on the "Received" line is the answer; the "successfully handled" lines after it are not read.
    received = ("[2026-11-27 05:46:53,375] DEBUG Received AlterIsr response ClientResponse(receivedTimeMs=1, "
                "latencyMs=1, disconnected=false, responseBody=AlterIsrResponseData(throttleTimeMs=0, errorCode=0, "
                "topics=[TopicData(name='t3', partitions=[PartitionData(partitionIndex=0, errorCode=0, leaderId=3)"
                "])]))")
    log = parse_server_log([sent, received, handled])
    assert [r.partitions[0].error for r in log.requests] == [0] and log.other_lines == 1


def test_a_brokers_controlled_shutdowns_and_their_retries() -> None:
    # Broker 3's lines of campaign seed 1236 (Kafka 3.9.1), then a Kafka 2.6 broker's (a WARN before each retry and
    # after the last attempt) shutting down twice.
    server = "(kafka.server.KafkaServer)"
    lines = [f"[2026-11-27 09:24:23,378] INFO [KafkaServer id=3] Starting controlled shutdown {server}",
             f"[2026-11-27 09:24:23,426] INFO [KafkaServer id=3] Controlled shutdown request returned after 43ms "
             f"with 1 partitions remaining to move {server}",
             f"[2026-11-27 09:24:23,933] INFO [KafkaServer id=3] Retrying controlled shutdown (2 retries remaining) "
             f"{server}",
             f"[2026-11-27 09:24:24,443] INFO [KafkaServer id=3] Retrying controlled shutdown (1 retries remaining) "
             f"{server}"]
    retry = f"WARN [KafkaServer id=1] Retrying controlled shutdown after the previous attempt failed... {server}"
    lines += [f"[2026-11-25 10:00:00,000] INFO [KafkaServer id=1] Starting controlled shutdown {server}",
              f"[2026-11-25 10:00:00,500] {retry}",
              f"[2026-11-25 10:05:00,000] INFO [KafkaServer id=1] Starting controlled shutdown {server}",
              f"[2026-11-25 10:05:00,500] {retry}", f"[2026-11-25 10:05:01,000] {retry}",
              f"[2026-11-25 10:05:01,500] {retry}"]
    log = parse_server_log(lines)
    assert log.other_lines == 1 and log.requests == []
    ms = 1_795_771_463_000
    assert log.shutdowns.retries(3, ms + 1_000) == [ms + 933, ms + 1_443]
    assert log.shutdowns.retries(3, ms) == []  # no shutdown started before
    second = log.shutdowns.by_broker[1][1][0]
    assert log.shutdowns.retries(1, second) == [second - 299_500]
    assert log.shutdowns.retries(1, second + 2_000) == [second + 500, second + 1_000, second + 1_500]
    assert ControlledShutdowns().retries(1, second) == []
    # The requests sent by a time: the start and the retries logged by then (seed 1413: a write 4 ms after a retry).
    assert log.shutdowns.attempts_by(1, second + 504) == [second, second + 500]
    assert log.shutdowns.attempts_by(1, second) == [second - 300_000, second - 299_500]  # the first shutdown
    assert ControlledShutdowns().attempts_by(1, second) == []


def test_a_not_controller_answer_is_the_channels_disconnect_before_the_request_is_sent_again() -> None:
    """A controller whose cache is behind the leader's epochs answers NOT_CONTROLLER for the partition: the leader's
    channel drops the connection (NetworkClient's INFO line, seed 1289 at Kafka 3.5.2) and sends the request again
    to the next controller, whose answer is the one logged. Outside a request the line is just counted."""
    lines = (DATA / "broker-2.log").read_text().splitlines()
    sent, answered = (line for line in lines if "Sending AlterPartition" in line or "Received AlterPartition" in line)
    disconnect = ("[2026-11-27 12:38:17,986] INFO [BrokerToControllerChannelManager id=2 name=alter-partition] Client "
                  "requested disconnect from node 3 (org.apache.kafka.clients.NetworkClient)")
    recorded = ("[2026-11-27 12:38:17,987] INFO [zk-broker-2-to-controller-alter-partition-channel-manager]: Recorded "
                "new controller, from now on will use node 127.0.0.1:55045 (id: 1 rack: rack-0) "
                "(kafka.server.BrokerToControllerRequestThread)")
    log = parse_server_log([sent, disconnect, recorded, answered])
    [request] = log.requests
    assert request.redirected == ((3, 1795783097986),) and not request.unwritten
    assert log.other_lines == 1  # the "Recorded new controller" line
    alone = parse_server_log([disconnect, sent, answered])
    assert alone.requests[0].redirected == () and alone.other_lines == 1
