"""Benchmark: `isrflow replay kraft:DIR` of a 100,000-partition cluster's metadata log, import and replay timed apart.

The log (written once by Kafka's own classes, tests/integration/kraftlog/WriteMetadataLog.java, and cached under
.cache/big-replay/): a snapshot holding the cluster (features, `--brokers` registered brokers, `--topics` topics of
`--partitions-per-topic` partitions with replication factor 3), then one segment from the snapshot's end offset on
with at least `--records` records, in the shapes a KRaft controller writes them, each operation one batch:
leaders' ISR shrinks and expansions (AlterPartition, 1-5 partitions of one leader a batch), for each broker in turn
a failure (the PartitionChangeRecords that take it out of every ISR and move its leaderships, then its fence), its
restart (a new registration, its unfence, the leaders taking it back into their ISRs, the preferred elections that
give its leaderships back), reassignments (started by an admin, completed by the leader's AlterPartition), and
the controller's NO_OP records.

Each step runs in its own process, timed from here: wall seconds, CPU seconds (user + system, the process and its
children: the decoder JVM, Spark's JVM and Python workers) and peak RSS (the largest process of the step):
- import: decode (DumpLogSegments) + convert, writing events.jsonl and observed.jsonl (`import_kraft`);
- local: the local engine over those events, writing decisions.jsonl and the audit and quarantine Delta tables;
- replay: the two above as `replay kraft:DIR --engine local` runs them, the import in a child process feeding the
  engine as it converts (what comes before the agreement and the report read the outputs back);
- agreement: agreement.jsonl, histories.jsonl and report.html from the outputs;
- whole: `isrflow replay kraft:DIR --engine local` end to end (the 2-minute goal);
- spark: the Spark engine over the imported events (`replay_spark`, the streaming queries of `isrflow run`), with
  each query's micro-batches and their steps.

Run: nice -n 5 .venv/bin/python benchmarks/big_replay.py [--steps import,local,replay,agreement,whole,spark]
     [--topics 10000] [--partitions-per-topic 10] [--brokers 12] [--failures 12] [--records 1000000]
     [--profile STEP] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridge_poll import WRITER, topic_id
from harness import load

from streaming.engine.connectors import ROOT, java_executable
from streaming.infra.jars import kafka_broker_classpath

# "dirs": logs whose partition records name each replica's log dir (KIP-858); a log cached before has none.
CACHE = ROOT / ".cache" / "big-replay" / "dirs"
METADATA_VERSION = 27  # 4.1-IV1
NO_OP_EVERY = 200  # the controller's NO_OP_RECORD: one batch after every this many records
ELECTIONS_PER_BATCH = 1000  # preferred elections an auto leader rebalance writes in one batch
ALTER_PARTITION_MAX = 5  # partitions of one leader in one AlterPartition batch
# MetadataVersion.partitionRecordVersion() and partitionChangeRecordVersion() at 4.1-IV1: version 2, which carries
# `directories` (from version 1) and the ELR fields (version 2).
PARTITION_RECORD_VERSION = 2


@dataclass
class Partition:
    topic: int
    index: int
    replicas: list[int]
    isr: list[int]
    leader: int
    reassigning: bool = False


@dataclass
class Cluster:
    """The generator's view of the cluster, to write changes a controller would write."""

    brokers: int
    rng: random.Random
    partitions: list[Partition] = field(default_factory=list)
    alive: set[int] = field(default_factory=set)
    epochs: dict[int, int] = field(default_factory=dict)
    batch: int = 0
    offset: int = 0  # the log offset of the next record
    since_no_op: int = 0

    def record(self, type_: str, data: dict[str, Any], version: int = 0) -> dict[str, Any]:
        self.offset += 1
        self.since_no_op += 1
        return {"batch": self.batch, "type": type_, "version": version, "data": data}

    def end_batch(self) -> Iterator[dict[str, Any]]:
        self.batch += 1
        if self.since_no_op >= NO_OP_EVERY:
            self.since_no_op = 0
            yield self.record("NO_OP_RECORD", {})
            self.batch += 1

    def change(self, p: Partition, **fields: Any) -> dict[str, Any]:
        data = {"partitionId": p.index, "topicId": topic_id(p.topic), **fields}
        if "isr" in fields:
            p.isr = list(fields["isr"])
        if "leader" in fields:
            p.leader = fields["leader"]
        if "replicas" in fields:
            p.replicas = list(fields["replicas"])
            # PartitionChangeBuilder.setAssignmentChanges: a change of the replicas names their directories, a
            # remaining replica's kept and a new one's its broker's default, here always the broker's only log dir.
            data["directories"] = directories(p.replicas)
        return self.record("PARTITION_CHANGE_RECORD", data, PARTITION_RECORD_VERSION)

    def batches(self, changes: list[tuple[Partition, dict[str, Any]]], size: int) -> Iterator[dict[str, Any]]:
        for start in range(0, len(changes), size):
            for p, fields in changes[start:start + size]:
                yield self.change(p, **fields)
            yield from self.end_batch()


def log_dir(broker: int) -> str:
    """The broker's only log dir, which its registrations name."""
    return topic_id(20_000_000 + broker)


def directories(replicas: list[int]) -> list[str]:
    """Where each replica is: on its broker's only log dir (ClusterControlManager.defaultDir), where the controller
    put it and where it stays (a broker with one log dir never moves a replica to another)."""
    return [log_dir(r) for r in replicas]


def registration(broker: int, epoch: int, incarnation: int, fenced: bool) -> dict[str, Any]:
    return {"brokerId": broker, "isMigratingZkBroker": False, "incarnationId": topic_id(10_000_000 + incarnation),
            "brokerEpoch": epoch, "endPoints": [{"name": "PLAINTEXT", "host": "localhost", "port": 9092 + broker,
                                                 "securityProtocol": 0}],
            "features": [{"name": "metadata.version", "minSupportedVersion": 7, "maxSupportedVersion": 27}],
            "rack": f"rack-{broker % 3}", "fenced": fenced, "inControlledShutdown": False,
            "logDirs": [log_dir(broker)]}


def snapshot_records(cluster: Cluster, topics: int, per_topic: int) -> Iterator[dict[str, Any]]:
    """The cluster as a snapshot holds it: features, the cluster's min.insync.replicas, brokers, topics."""
    for name, level in (("metadata.version", METADATA_VERSION), ("eligible.leader.replicas.version", 0)):
        yield {"batch": 0, "type": "FEATURE_LEVEL_RECORD", "version": 0, "data": {"name": name, "featureLevel": level}}
    yield {"batch": 0, "type": "CONFIG_RECORD", "version": 0,
           "data": {"resourceType": 4, "resourceName": "", "name": "min.insync.replicas", "value": "2"}}
    for b in range(1, cluster.brokers + 1):
        cluster.epochs[b] = 100 + b
        cluster.alive.add(b)
        yield {"batch": 1, "type": "REGISTER_BROKER_RECORD", "version": 3,
               "data": registration(b, cluster.epochs[b], b, fenced=False)}
    for t in range(topics):
        yield {"batch": 2 + t // 100, "type": "TOPIC_RECORD", "version": 0,
               "data": {"name": f"topic-{t:05d}", "topicId": topic_id(t)}}
        for k in range(per_topic):
            i = t * per_topic + k
            first, step = i % cluster.brokers, 1 + (i // cluster.brokers) % ((cluster.brokers - 1) // 2)
            replicas = [1 + (first + n * step) % cluster.brokers for n in range(3)]
            p = Partition(t, k, replicas, list(replicas), replicas[0])
            cluster.partitions.append(p)
            epoch = i % 7
            yield {"batch": 2 + t // 100, "type": "PARTITION_RECORD", "version": PARTITION_RECORD_VERSION, "data": {
                "partitionId": k, "topicId": topic_id(t), "replicas": replicas, "isr": replicas,
                "removingReplicas": [], "addingReplicas": [], "leader": replicas[0], "leaderEpoch": epoch,
                "partitionEpoch": epoch + i % 3, "directories": directories(replicas)}}


def churn(cluster: Cluster, count: int) -> Iterator[dict[str, Any]]:
    """`count` AlterPartition changes: a leader drops a follower from a full ISR, or takes a missing live one back."""
    written = 0
    while written < count:
        # A leader's request names up to ALTER_PARTITION_MAX of its partitions: the first ones it leads from a
        # random place on.
        leader_batch: list[tuple[Partition, dict[str, Any]]] = []
        start = cluster.rng.randrange(len(cluster.partitions))
        for q in cluster.partitions[start:start + 40]:
            if len(leader_batch) == ALTER_PARTITION_MAX or q.reassigning or q.leader not in cluster.alive:
                continue
            if leader_batch and q.leader != leader_batch[0][0].leader:
                continue
            missing = [r for r in q.replicas if r not in q.isr and r in cluster.alive]
            if missing:
                leader_batch.append((q, {"isr": [*q.isr, missing[0]]}))
            elif len(q.isr) == 3 and all(r in cluster.alive for r in q.replicas):
                follower = cluster.rng.choice([r for r in q.isr if r != q.leader])
                leader_batch.append((q, {"isr": [r for r in q.isr if r != follower]}))
        if leader_batch:
            written += len(leader_batch)
            yield from cluster.batches(leader_batch, ALTER_PARTITION_MAX)


def failure(cluster: Cluster, broker: int) -> Iterator[dict[str, Any]]:
    """The broker's session expires: out of every ISR, its leaderships to the first live replica in the ISR, then
    its fence, in one batch."""
    for p in cluster.partitions:
        if broker in p.isr:
            isr = [r for r in p.isr if r != broker]
            if p.leader == broker:
                yield cluster.change(p, isr=isr, leader=next(r for r in p.replicas if r in isr))
            else:
                yield cluster.change(p, isr=isr)
    cluster.alive.discard(broker)
    yield cluster.record("BROKER_REGISTRATION_CHANGE_RECORD",
                         {"brokerId": broker, "brokerEpoch": cluster.epochs[broker], "fenced": 1})
    yield from cluster.end_batch()


def restart(cluster: Cluster, broker: int, incarnation: int) -> Iterator[dict[str, Any]]:
    """The broker registers again (a new epoch: its record's offset), is unfenced, caught up by its leaders (with
    every other follower out of an ISR), and gets its preferred leaderships back."""
    cluster.epochs[broker] = cluster.offset
    yield cluster.record("REGISTER_BROKER_RECORD", registration(broker, cluster.offset, incarnation, fenced=True), 3)
    yield from cluster.end_batch()
    cluster.alive.add(broker)
    yield cluster.record("BROKER_REGISTRATION_CHANGE_RECORD",
                         {"brokerId": broker, "brokerEpoch": cluster.epochs[broker], "fenced": -1})
    yield from cluster.end_batch()
    for leader in sorted(cluster.alive):  # every follower out of an ISR catches up, the broker among them
        back = [(p, {"isr": [*p.isr, *missing]}) for p in cluster.partitions if p.leader == leader
                for missing in [[r for r in p.replicas if r not in p.isr]] if missing]
        yield from cluster.batches(back, ALTER_PARTITION_MAX)
    preferred = [(p, {"leader": broker}) for p in cluster.partitions
                 if p.replicas[0] == broker and p.leader != broker and broker in p.isr]
    yield from cluster.batches(preferred, ELECTIONS_PER_BATCH)


def reassign(cluster: Cluster, count: int) -> Iterator[dict[str, Any]]:
    """An admin moves `count` partitions' last replica to another live broker (one batch), then each leader's
    AlterPartition brings the new replica into the ISR, which completes the move."""
    moving = [p for p in cluster.rng.sample(cluster.partitions, count * 2)
              if len(p.isr) == 3 and all(r in cluster.alive for r in p.replicas) and not p.reassigning][:count]
    targets = []
    for p in moving:
        old = p.replicas[2]
        new = cluster.rng.choice([b for b in sorted(cluster.alive) if b not in p.replicas])
        target = [*p.replicas[:2], new]
        targets.append((p, old, new, target))
        p.reassigning = True
        yield cluster.change(p, replicas=[*target, old], removingReplicas=[old], addingReplicas=[new])
    yield from cluster.end_batch()
    yield from churn(cluster, count * 5)
    for p, old, new, target in targets:
        p.reassigning = False
        yield cluster.change(p, isr=[*(r for r in p.isr if r != old), new], leader=p.leader, replicas=target,
                             removingReplicas=[], addingReplicas=[])
        yield from cluster.end_batch()


def log_records(cluster: Cluster, records: int, failures: int) -> Iterator[dict[str, Any]]:
    """The log after the snapshot: for each of the first `failures` brokers, churn, reassignments, the broker's
    failure and restart; then churn until `records` are written."""
    start = cluster.offset
    per_broker = max(0, records - 60_000 * failures) // (3 * failures) if failures else 0
    for broker in range(1, failures + 1):
        yield from churn(cluster, per_broker)
        yield from reassign(cluster, 300)
        yield from churn(cluster, per_broker)
        yield from failure(cluster, broker)
        yield from churn(cluster, per_broker)
        yield from restart(cluster, broker, cluster.brokers + broker)
    while cluster.offset - start < records:
        yield from churn(cluster, min(10_000, records - (cluster.offset - start)))


def write(records: Iterator[dict[str, Any]], out: Path, writer: Path, base_offset: int = 0) -> None:
    """`records` into the segment or snapshot `out`, by Kafka's classes."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", dir=out.parent.parent, delete=False) as spec:
        for r in records:
            spec.write(json.dumps(r, separators=(",", ":")) + "\n")
    try:
        subprocess.run([java_executable(), "-Xmx1g", "-cp", f"{writer}{os.pathsep}{kafka_broker_classpath()}",
                        "WriteMetadataLog", spec.name, str(out), str(base_offset)], check=True)
    finally:
        os.unlink(spec.name)


def build(args: argparse.Namespace) -> Path:
    """The log's `__cluster_metadata-0` directory, built once per parameter set."""
    name = f"t{args.topics}-p{args.partitions_per_topic}-b{args.brokers}-r{args.records}-s{args.seed}"
    if args.failures != args.brokers:  # the name of a log with every broker failing, as cached before the flag
        name += f"-f{args.failures}"
    directory = CACHE / name / "__cluster_metadata-0"
    done = directory.parent / "built.json"
    if done.exists():
        print(f"log: {directory} (cached; built in {json.loads(done.read_text())['seconds']:.0f}s)", flush=True)
        return directory
    started = time.perf_counter()
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.iterdir():
        stale.unlink()
    with tempfile.TemporaryDirectory(prefix="big-replay-") as tmp:
        writer = Path(tmp)
        javac = str(Path(java_executable()).with_name("javac"))
        subprocess.run([javac, "-d", str(writer), "-cp", kafka_broker_classpath(), str(WRITER)], check=True)
        cluster = Cluster(args.brokers, random.Random(args.seed))
        snapshot = list(snapshot_records(cluster, args.topics, args.partitions_per_topic))
        end = len(snapshot)  # the snapshot's end offset: the log goes on from there
        write(iter(snapshot), directory / f"{end:020d}-{1:010d}.checkpoint", writer)
        cluster.offset, cluster.batch = end, 0
        write(log_records(cluster, args.records, args.failures), directory / f"{end:020d}.log", writer, end)
    seconds = time.perf_counter() - started
    size = sum(p.stat().st_size for p in directory.iterdir())
    done.write_text(json.dumps({"seconds": seconds, "snapshot_records": end, "log_records": cluster.offset - end,
                                "bytes": size}))
    print(f"log: built {directory} in {seconds:.0f}s: snapshot of {end:,} records, {cluster.offset - end:,} log "
          f"records, {size / 1e6:.0f} MB", flush=True)
    return directory


# ---- the steps, each in its own process ---------------------------------------------------------------------


def config() -> Any:
    from statemachine.controller import ControllerConfig
    from statemachine.rules import rules_named

    return ControllerConfig(rules=rules_named("kraft"))


def step_import(log: Path, work: Path, batch_size: int) -> dict[str, Any]:
    """`import_kraft` alone, with the seconds of its decoding, then of its conversion and writing."""
    from streaming.jobs import kraft

    seconds: dict[str, float] = {}

    def timed(name: str, call: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - started
        return run

    kraft.read_metadata_log = timed("decode", kraft.read_metadata_log)
    started = time.perf_counter()
    summary = kraft.import_kraft(log, work / "events.jsonl", work / "observed.jsonl")
    seconds["convert and write, batch by batch"] = time.perf_counter() - started - seconds["decode"]
    return {"seconds": seconds, "records": summary.records, "events": summary.events, "observed": summary.observed,
            "unexplained": summary.unexplained}


def step_local(log: Path, work: Path, batch_size: int) -> dict[str, Any]:
    from streaming.engine.local import replay_local
    from streaming.io.eventlog import read_event_log

    done = replay_local(read_event_log(work / "events.jsonl"), work / "local", config())
    return {"events": done.events, "decisions": done.decisions, "audit": done.audit}


def step_replay(log: Path, work: Path, batch_size: int) -> dict[str, Any]:
    """What `replay kraft:DIR --engine local` does before it reads its outputs back: the import in its child
    process feeding the local engine, which writes decisions.jsonl and the audit, quarantine and requests tables."""
    from streaming.engine.local import replay_local
    from streaming.jobs.kraft import ImportPipe

    out = work / "replay"
    with ImportPipe(log, out / "kraft" / "events.jsonl", out / "observed.jsonl") as pipe:
        done = replay_local(pipe.records(), out, config())
        assert pipe.summary is not None
    return {"events": done.events, "decisions": done.decisions, "audit": done.audit,
            "observed": pipe.summary.observed, "unexplained": pipe.summary.unexplained}


def step_agreement(log: Path, work: Path, batch_size: int) -> dict[str, Any]:
    from streaming.analysis.report import write_report
    from streaming.history.outputs import write_agreement

    laps = Laps()
    agreed = write_agreement(work / "local", work / "observed.jsonl", work / "local" / "decisions.jsonl")
    laps.lap("agreement")
    write_report(work / "local")
    laps.lap("report")
    return {"seconds": laps.seconds, "rate": agreed.rate, "decisions": agreed.decisions,
            "disagreements": agreed.disagreements, "partitions": agreed.partitions,
            "partitions_equal": agreed.partitions_equal}


def step_whole(log: Path, work: Path, batch_size: int) -> dict[str, Any]:
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "isrflow"), "replay", f"kraft:{log}", "--out",
                           str(work / "whole"), "--engine", "local", "--rules", "kraft"],
                          capture_output=True, text=True, check=True)
    return {"summary": "replayed " + done.stdout.split("replayed ", 1)[1].splitlines()[0]}


def step_spark(log: Path, work: Path, batch_size: int) -> dict[str, Any]:
    from harness import KeptCounts, Progress

    from streaming.engine.counts import BatchCounts
    from streaming.engine.pipeline import progress_listener, run_bounded
    from streaming.engine.session import build_spark
    from streaming.engine.sources import staged_events
    from streaming.io.delta import read_delta, write_decisions_jsonl
    from streaming.io.eventlog import read_event_log
    from streaming.io.layout import ReplayOutput

    spark = build_spark("isrflow-big-replay")
    laps = Laps()
    progress, counts = Progress(), BatchCounts(sequencer=KeptCounts(), partitions=KeptCounts())
    spark.streams.addListener(progress.listener())
    spark.streams.addListener(progress_listener(counts, echo=lambda line: None))
    layout = ReplayOutput(work / "spark")
    events = staged_events(spark, layout.staging, read_event_log(work / "events.jsonl"), batch_size)
    laps.lap("stage the log as a Delta table")
    run_bounded(spark, events, layout.lake, layout.checkpoints, config(), counts=counts, source="file",
                one_sequencer_batch_per_trigger=batch_size > 0)
    laps.lap("both queries")
    write_decisions_jsonl(layout.decisions_jsonl, read_delta(layout.lake.decisions))
    laps.lap("decisions.jsonl from the decisions table")
    queries = {}
    for name, kept in (("isrflow-sequencer", counts.sequencer), ("isrflow-partitions", counts.partitions)):
        batches = progress.batches(name)
        queries[name] = [{"batch": b["batchId"], "rows": b["numInputRows"], "seconds": b["batchDuration"] / 1000,
                          "durationMs": b["durationMs"],
                          "steps": kept.kept.get(b["batchId"], {}).get("steps", {}),
                          "within": kept.kept.get(b["batchId"], {}).get("within", {}),
                          "state": [{k: op.get(k) for k in ("numRowsTotal", "memoryUsedBytes", "allUpdatesTimeMs",
                                                            "commitTimeMs")} for op in b.get("stateOperators", [])]}
                         for b in batches]
    # Stop the JVM and reap it, so that its CPU and RSS count in this step's usage.
    gateway = spark.sparkContext._gateway
    spark.stop()
    gateway.shutdown()
    gateway.proc.stdin.close()
    gateway.proc.wait(120)
    return {"seconds": laps.seconds, "queries": queries}


STEPS = {"import": step_import, "local": step_local, "replay": step_replay, "agreement": step_agreement,
         "whole": step_whole, "spark": step_spark}


class Laps:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = now - self._last
        self._last = now


def measured(step: str, log: Path, work: Path, batch_size: int, profile: bool) -> dict[str, Any]:
    """`step` in a new process: its result, wall and CPU seconds, peak RSS (of its largest process)."""
    command = [sys.executable, *(["-m", "cProfile", "-o", str(work / f"{step}.prof")] if profile else []),
               __file__, "--in-process", step, "--log", str(log), "--work", str(work), "--batch-size", str(batch_size)]
    started_load, started = load(), time.perf_counter()
    with (work / f"{step}.json").open("w+") as out:
        process = subprocess.Popen(command, stdout=out, env={
            **os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'benchmarks'}"})
        # wait4, not wait: the step's own usage (with the children it reaped: the decoder JVM, Spark's JVM).
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - started
        if process.returncode:
            raise RuntimeError(f"step {step} failed ({process.returncode})")
        out.seek(0)
        result = json.loads(out.read().strip().splitlines()[-1])
    result.update(wall=seconds, cpu=usage.ru_utime + usage.ru_stime, peak_rss_mib=usage.ru_maxrss / 1024,
                  load=f"{started_load} -> {load()}")
    return result


def report(step: str, r: dict[str, Any]) -> None:
    details = {k: v for k, v in r.items() if k not in ("wall", "cpu", "peak_rss_mib", "load", "queries", "seconds")}
    print(f"{step}: {r['wall']:.1f}s wall, {r['cpu']:.1f}s CPU, peak RSS {r['peak_rss_mib']:,.0f} MiB, load "
          f"{r['load']}; " + ", ".join(f"{k} {v:.2f}s" for k, v in r.get("seconds", {}).items()) + "; "
          + ", ".join(f"{k} {v}" for k, v in details.items()), flush=True)
    for name, batches in r.get("queries", {}).items():
        for b in batches:
            print(f"  {name} batch {b['batch']}: {b['rows']:,} rows, {b['seconds']:.1f}s; Spark's "
                  f"durationMs {b['durationMs']}; foreachBatch steps {b['steps']} (at once: {b['within']}); "
                  f"state {b['state']}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="import,local,agreement,whole,spark")
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--partitions-per-topic", type=int, default=10)
    parser.add_argument("--brokers", type=int, default=12)
    parser.add_argument("--records", type=int, default=1_000_000, help="records in the log after the snapshot")
    parser.add_argument("--failures", type=int, default=None,
                        help="brokers that fail and restart after the snapshot, each moving every partition it holds "
                             "(default: every broker; 0 for a log that is mostly its snapshot)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=100_000,
                        help="Spark engine: events per micro-batch (replay's --batch-size; 0 = one micro-batch, which "
                             "does not fit the driver's default 1 GiB heap at this size)")
    parser.add_argument("--profile", default="", help="steps to run under cProfile (STEP.prof in --work)")
    parser.add_argument("--work", type=Path, help="where the steps write (default: a new temporary directory)")
    parser.add_argument("--in-process", choices=STEPS, help=argparse.SUPPRESS)
    parser.add_argument("--log", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.failures is None:
        args.failures = args.brokers
    if args.in_process:
        print(json.dumps(STEPS[args.in_process](args.log, args.work, args.batch_size)))
        return 0
    log = build(args)
    work = args.work or Path(tempfile.mkdtemp(prefix="big-replay-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work: {work}", flush=True)
    for step in args.steps.split(","):
        report(step, measured(step, log, work, args.batch_size, step in args.profile.split(",")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
