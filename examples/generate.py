"""Builds the example event logs in this folder with `streaming.infra.scenario.ScenarioBuilder`.

    .venv/bin/python examples/generate.py          # (re)write every examples/*.jsonl
    .venv/bin/python examples/generate.py --check  # exit 1 when a committed file differs from this script

The builder feeds every event to a shadow controller as it writes it, so IsrChange requests carry the
epochs the partition leader really holds at that point of the log: the logs replay the way a real
cluster's would. Each function below is one story; examples/README.md says what a replay shows.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent
if str(ROOT.parent) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT.parent))

from schemas.events import LeaderRecoveryState  # noqa: E402
from streaming.infra.scenario import ScenarioBuilder, round_robin_assignment  # noqa: E402


def rolling_restart() -> ScenarioBuilder:
    """A rolling restart of a 6-broker, 300-partition cluster: each broker in turn asks for a controlled
    shutdown (its leaderships move away, its followers leave the ISRs), stops, starts again with a new
    broker epoch, and its followers catch up. At the end the periodic leader imbalance check hands the
    leaderships back to the preferred replicas."""
    b = ScenarioBuilder(start="2026-03-02T02:00:00Z", step_seconds=0.2)
    brokers = [1, 2, 3, 4, 5, 6]
    for broker in brokers:
        b.start_broker(broker)
    b.emit("CreateTopic", topic="orders", assignment=round_robin_assignment(120, brokers, 3))
    b.emit("CreateTopic", topic="payments", assignment=round_robin_assignment(60, brokers, 3, offset=2))
    b.emit("CreateTopic", topic="clickstream", assignment=round_robin_assignment(120, brokers, 3, offset=4))
    b.wait(600)
    for broker in brokers:
        b.controlled_shutdown(broker)
        b.wait(4)  # the broker drains, then stops: its session ends
        b.fail_broker(broker)
        b.wait(45)  # the restart itself
        b.start_broker(broker)
        b.wait(5)
        b.catch_up(broker)  # one AlterPartition per partition as the replica rejoins the ISR
        b.wait(60)  # the operator waits for under-replicated partitions to reach 0 before the next broker
    b.wait(240)
    b.emit("LeaderImbalanceCheck")
    return b


def double_failure_unclean() -> ScenarioBuilder:
    """Two brokers fail within a minute while a third was lagging out of the ISRs. Partitions whose whole
    ISR was on the two dead brokers go offline. The operator restores orders-1 at once with an unclean
    election (data loss possible), then lets payments elect uncleanly by enabling
    unclean.leader.election.enable on the topic: payments-1 comes back, payments-0 cannot (both its
    replicas are dead). The rest wait for broker 3 to come back; then broker 4, repaired, catches up."""
    b = ScenarioBuilder(start="2026-05-14T09:30:00Z", step_seconds=0.5)
    brokers = [1, 2, 3, 4, 5]
    for broker in brokers:
        b.start_broker(broker)
    b.emit("CreateTopic", topic="orders", assignment=round_robin_assignment(10, brokers, 3))
    b.emit("CreateTopic", topic="payments", assignment=round_robin_assignment(5, brokers, 2, offset=1))
    b.wait(900)

    # Broker 4's disk slows down: the leaders it follows drop it from their ISRs.
    for (topic, partition), rec in sorted(b.shadow.partitions.items()):
        if 4 in rec.isr and rec.leader != 4:
            b.alter_isr(topic, partition, [r for r in rec.isr if r != 4])
    b.wait(120)
    # Broker 2 loses its session; 35 seconds later broker 3 does too.
    b.fail_broker(2)
    b.wait(35)
    b.fail_broker(3)
    b.wait(150)
    # The operator accepts possible data loss on orders-1 to get it back now.
    b.emit("ElectLeaders", election_type="UNCLEAN", partitions=[{"topic": "orders", "partition": 1}],
           principal="User:ops")
    b.wait(2)
    rec = b.record("orders", 1)
    b.alter_isr("orders", 1, rec.isr, recovered=True)  # the unclean leader finished its log recovery
    b.wait(60)
    # Payments must take traffic again: unclean elections allowed on the whole topic.
    b.emit("AlterTopicConfig", topic="payments", configs={"unclean.leader.election.enable": "true"},
           principal="User:ops")
    b.wait(2)
    for (topic, partition), rec in sorted(b.shadow.partitions.items()):
        if topic == "payments" and rec.leader_recovery_state is LeaderRecoveryState.RECOVERING:
            b.alter_isr(topic, partition, rec.isr, recovered=True)
    b.wait(30)
    b.emit("AlterTopicConfig", topic="payments", configs={"unclean.leader.election.enable": None},
           principal="User:ops")
    b.wait(240)
    # Broker 3 comes back: the partitions still offline elect it (a clean election: it was in their ISR).
    b.start_broker(3)
    b.wait(3)
    b.catch_up(3)
    b.wait(600)
    b.catch_up(4)  # broker 4's disk was replaced: its replicas rejoin the ISRs
    return b


def reassignment() -> ScenarioBuilder:
    """Broker 1 is decommissioned: brokers 4 and 5 join, and its replicas move to them in two throttled
    batches. Each move adds the new replica, waits for it to join the ISR (the leader's IsrChange), then
    completes: the new replica set takes over, leadership moves off broker 1 where it led, and broker 1's
    replica is deleted. One move of the second batch is cancelled before it completes, then resubmitted."""
    b = ScenarioBuilder(start="2026-07-08T14:00:00Z", step_seconds=1.0)
    for broker in (1, 2, 3):
        b.start_broker(broker)
    b.emit("CreateTopic", topic="inventory", assignment=round_robin_assignment(12, [1, 2, 3], 3))
    b.wait(3600)
    for broker in (4, 5):
        b.start_broker(broker)
    b.wait(30)

    def target(partition: int) -> list[int]:
        replicas = b.record("inventory", partition).replicas
        new = 4 if partition % 2 == 0 else 5
        return [new if r == 1 else r for r in replicas]

    def move(partitions: list[int]) -> None:
        b.emit("ReassignPartitions", principal="User:ops",
               partitions=[{"topic": "inventory", "partition": p, "replicas": target(p)} for p in partitions])

    def catch_up(partitions: list[int]) -> None:
        for p in partitions:
            rec = b.record("inventory", p)
            b.alter_isr("inventory", p, [*rec.isr, *(r for r in rec.adding_replicas if r not in rec.isr)])

    first, second = list(range(6)), list(range(6, 12))
    move(first)
    b.wait(240)  # copying the data under a replication throttle
    catch_up(first)
    b.wait(60)
    move(second)
    b.wait(30)
    # The operator cancels inventory-9 (wrong rack) and resubmits it a minute later.
    b.emit("ReassignPartitions", principal="User:ops",
           partitions=[{"topic": "inventory", "partition": 9, "replicas": None}])
    b.wait(60)
    move([9])
    b.wait(240)
    catch_up(second)
    b.wait(60)
    # Nothing is left on broker 1: its controlled shutdown moves nothing.
    b.controlled_shutdown(1)
    b.wait(5)
    b.fail_broker(1)
    b.wait(300)
    b.emit("LeaderImbalanceCheck")
    return b


def zombie_controller() -> ScenarioBuilder:
    """Controller 1 stalls in a long GC pause and loses its session; controller 2 takes over at epoch 2.
    When controller 1 wakes up it still believes it is in charge and keeps logging at epoch 1: a broker
    failure it saw late, an ISR change, a preferred election. All are fenced (STALE_CONTROLLER_EPOCH) and
    change nothing. Later controller 3 takes over implicitly: its first event carries epoch 3."""
    b = ScenarioBuilder(start="2026-09-21T22:10:00Z", step_seconds=1.0)
    brokers = [1, 2, 3, 4]
    for broker in brokers:
        b.start_broker(broker)
    b.emit("CreateTopic", topic="ledger", assignment=round_robin_assignment(8, brokers, 3))
    b.emit("CreateTopic", topic="sessions", assignment=round_robin_assignment(4, brokers, 2, offset=1))
    b.wait(1200)
    # Broker 4 restarts normally under controller 1.
    b.controlled_shutdown(4)
    b.fail_broker(4)
    b.wait(40)
    b.start_broker(4)
    b.catch_up(4)
    b.wait(300)

    # Controller 1 pauses; controller 2 is elected at epoch 2 and re-examines every partition.
    zombie_epoch = b.controller_epoch
    b.controller_epoch = 2
    b.emit("ControllerChange", controller_id=2)
    b.wait(8)
    # Controller 1 wakes up and logs what it thinks is happening, at its old epoch.
    b.emit("BrokerChange", broker_id=3, change="FAILURE", broker_epoch=b.broker_epochs[3],
           controller_epoch=zombie_epoch)
    rec = b.record("ledger", 2)
    b.emit("IsrChange", topic="ledger", partition=2, broker_id=rec.leader, broker_epoch=b.broker_epochs[rec.leader],
           leader_epoch=rec.leader_epoch, partition_epoch=rec.partition_epoch,
           isr=[r for r in rec.isr if r != 3], controller_epoch=zombie_epoch)
    b.emit("ElectLeaders", election_type="PREFERRED", partitions=None, controller_epoch=zombie_epoch,
           principal="User:ops")
    b.emit("ReassignPartitions", principal="User:ops", controller_epoch=zombie_epoch,
           partitions=[{"topic": "sessions", "partition": 0, "replicas": [1, 2]}])
    # Its last write is redelivered by the log's producer: a duplicate, refused as such.
    b.events.append(dict(b.events[-1]))
    b.wait(20)
    # Meanwhile controller 2 does real work: broker 2 restarts, and a preferred election restores balance.
    b.controlled_shutdown(2)
    b.fail_broker(2)
    b.wait(40)
    b.start_broker(2)
    b.catch_up(2)
    b.wait(120)
    b.emit("ElectLeaders", election_type="PREFERRED", partitions=None, principal="User:ops")
    b.wait(600)
    # Controller 3 takes over without a ControllerChange in the log: its first event carries epoch 3.
    b.controller_epoch = 3
    b.emit("LeaderImbalanceCheck")
    b.wait(5)
    # Controller 2, now a zombie too, is fenced in its turn.
    b.emit("LeaderImbalanceCheck", controller_epoch=2)
    return b


EXAMPLES: dict[str, Callable[[], ScenarioBuilder]] = {
    "rolling-restart.jsonl": rolling_restart,
    "double-failure-unclean.jsonl": double_failure_unclean,
    "reassignment.jsonl": reassignment,
    "zombie-controller.jsonl": zombie_controller,
}


def render(name: str) -> str:
    """The exact text of examples/<name>, as this script writes it."""
    return "\n".join(EXAMPLES[name]().lines()) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when a file is stale")
    parser.add_argument("--out", type=Path, default=ROOT, help="output folder (default: examples/)")
    args = parser.parse_args(argv)
    stale = []
    for name in EXAMPLES:
        path = args.out / name
        text = render(name)
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"{path}: {text.count(chr(10))} events")
    if stale:
        print("stale (run examples/generate.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
