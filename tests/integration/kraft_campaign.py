"""The differential campaign on real KRaft clusters (`make kraft-campaign`, docs/kraft.md "The campaign").

Each run: a seeded random script of operations (`script`, pure: the same seed gives the same script) on a real
cluster started from the project's jars; then the controller's copy of `__cluster_metadata-0` is replayed through
the directory path (`replay kraft:DIR --rules kraft`) and every partition history and every decision is compared
with the controller's. A run that disagrees keeps its log copy, to become a regression test.

    .venv/bin/python tests/integration/kraft_campaign.py --runs 20 --seed 1 --ops 30 [--spark] [--out DIR]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kraft_scenario import move_replica_log_dir, update_features

from statemachine.controller import ControllerConfig
from statemachine.features import IBP_3_7_IV2, IBP_4_0_IV1, metadata_version_name
from statemachine.rules import KRAFT, Rules
from streaming.engine.connectors import (
    KAFKA_37,
    KAFKA_38,
    KAFKA_39,
    KAFKA_40,
    KAFKA_42,
    KAFKA_43,
    KAFKA_44,
    KAFKA_BROKER,
    JarSet,
)
from streaming.infra.cluster import copy_live_dir
from streaming.infra.jars import fetched
from streaming.infra.kraftcluster import KraftCluster
from streaming.io.jsonl import read_jsonl
from streaming.jobs.replay import ReplayOptions, replay

BROKERS = 4
RACKS = 2
# A quorum of three, so the active controller can be killed (kill -9) and another voter takes over mid-run.
CONTROLLERS = 3


@dataclass(frozen=True)
class Version:
    """A Kafka to run: its jar set, the metadata.version it is formatted at, and whether it has ELR (4.0+)."""

    name: str
    jar_set: JarSet
    release_version: str | None
    elr: bool | None
    # A metadata.version the run upgrades to mid-run (kafka-features upgrade), or None.
    upgrade_to: int | None = None
    # Whether its brokers may have several log dirs: KRaft JBOD needs metadata.version 3.7-IV2 from the start.
    jbod: bool = True
    # The feature levels a run formats at, drawn per seed (oldest, newest: the release's newest), a run below the
    # newest upgrading to it mid-run; None: `release_version` as given.
    levels: tuple[int, int] | None = None

    def drawn(self, seed: int) -> Version:
        """The version a seed runs: formatted at a drawn level, upgraded to the newest when below it, ELR only
        where its level has it (4.0-IV1), several log dirs only from 3.7-IV2."""
        if self.levels is None:
            return self
        level = random.Random(f"metadata.version {self.name} {seed}").randint(*self.levels)
        newest = self.levels[1]
        return replace(self, name=f"{self.name}@{metadata_version_name(level)}",
                       release_version=metadata_version_name(level), upgrade_to=newest if level < newest else None,
                       elr=self.elr if level >= IBP_4_0_IV1 else None, jbod=level >= IBP_3_7_IV2, levels=None)


VERSIONS = {
    "4.4": Version("4.4", KAFKA_44, None, True),
    "4.1": Version("4.1", KAFKA_BROKER, None, True),
    # Each formatted at a level drawn from 3.3-IV3 (the oldest Kafka 4 still formats at) to the release's newest.
    "3.9": Version("3.9", KAFKA_39, None, None, levels=(7, 21)),
    "4.3": Version("4.3", KAFKA_43, None, True, levels=(7, 30)),
    "4.2": Version("4.2", KAFKA_42, None, True, levels=(7, 29)),
    "4.0": Version("4.0", KAFKA_40, None, True, levels=(7, 25)),
    "3.8": Version("3.8", KAFKA_38, None, None, levels=(7, 20)),
    "3.7": Version("3.7", KAFKA_37, None, None, levels=(7, 19)),
}
# The Admin requests a KRaft run draws besides the common ones: several topics or partitions in one request
# (CreateTopics, DeleteTopics, AlterPartitionReassignments, CreatePartitions, ElectLeaders) and dynamic broker
# configs (the cluster default and a broker's own).
KRAFT_EXTRA = ("create_topics", "delete_topics", "reassign_many", "create_partitions_many", "elect_many",
               "broker_config")
# How many log dirs each broker of a run has, drawn per seed (apart from the script's draws) when the campaign runs.
LOG_DIRS = (1, 3)


def drawn_log_dirs(seed: int, version: Version) -> int:
    return random.Random(f"log dirs {seed}").randint(*LOG_DIRS) if version.jbod else 1


# The controller writes what a real one writes on its own, sooner: the periodic unclean election every few seconds
# (its default is 5 minutes), and a segment roll and a snapshot every 8 seconds, so the copy replayed is segment 0,
# several snapshots and several segments.
CONTROLLER_CONFIG = {"unclean.leader.election.interval.ms": "3000", "metadata.log.segment.ms": "8000",
                     "metadata.log.max.snapshot.interval.ms": "8000"}


@dataclass(frozen=True)
class Op:
    kind: str
    args: tuple[Any, ...] = ()

    def __str__(self) -> str:
        return f"{self.kind}{self.args}"


@dataclass
class _Model:
    """What the script knows of the cluster while drawing it: enough to draw only operations Kafka can take."""

    up: set[int]
    topics: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    controller_down: bool = False  # one voter of the three at most, so the quorum keeps a majority
    elr: bool = True
    next_topic: int = 0

    def new_topic(self, rng: random.Random) -> Op:
        name = f"t{self.next_topic}"
        self.next_topic += 1
        rf = rng.randint(1, min(3, len(self.up)))
        assignment = {p: rng.sample(sorted(self.up), rf) for p in range(rng.randint(1, 3))}
        self.topics[name] = assignment
        return Op("create_topic", (name, {p: list(r) for p, r in assignment.items()}))


def script(seed: int, ops: int, version: Version = VERSIONS["4.1"], brokers: int = BROKERS,
           extra: tuple[str, ...] = (), log_dirs: int = 1) -> list[Op]:
    """A seeded random script of `ops` operations (after two topics are created) for a Kafka `version`: ELR
    turned on and off where it exists, else one metadata.version upgrade; `extra` adds operations a cluster kind
    has of its own (a ZooKeeper session's expiry: "expire"); brokers with several `log_dirs` may lose one under
    them ("fail_dir"; such a broker is never stopped again, it could not restart) and move a replica to another of
    their log dirs ("move_dir", AlterReplicaLogDirs)."""
    rng = random.Random(seed)
    failed: dict[int, int] = {}  # broker -> its log dir that failed
    extra = (*extra, "fail_dir", "move_dir") if log_dirs > 1 else extra
    m = _Model(up=set(range(1, brokers + 1)), elr=bool(version.elr))
    upgraded = version.upgrade_to is None
    out = [m.new_topic(rng), m.new_topic(rng)]
    down = lambda: sorted(set(range(1, brokers + 1)) - m.up)  # noqa: E731
    while len(out) < ops + 2:
        kind = rng.choice(["kill", "terminate", "restart", "restart", "reassign", "reassign", "cancel", "preferred",
                           "unclean", "config", "create_partitions", "create_topic", "delete_topic", "elr",
                           "controller", *extra])
        topic = rng.choice(sorted(m.topics)) if m.topics else None
        if kind in ("kill", "terminate") and len(m.up) > 2:
            broker = rng.choice(sorted(m.up))
            if broker not in failed:
                m.up.discard(broker)
                out.append(Op(kind, (broker,)))
        elif kind == "fail_dir" and m.up - set(failed):
            broker = rng.choice(sorted(m.up - set(failed)))
            failed[broker] = rng.randint(1, log_dirs - 1)
            out.append(Op(kind, (broker, failed[broker])))
        elif kind == "move_dir" and topic:
            # A replica of a running broker to another of its log dirs (one that has not failed).
            partition = rng.choice(sorted(m.topics[topic]))
            holders = sorted(set(m.topics[topic][partition]) & m.up)
            if holders:
                broker = rng.choice(holders)
                index = rng.choice([i for i in range(log_dirs) if i != failed.get(broker)])
                out.append(Op(kind, (broker, topic, partition, index)))
        elif kind == "restart" and down():
            broker = rng.choice(down())
            m.up.add(broker)
            out.append(Op(kind, (broker,)))
        elif kind == "reassign" and topic:
            partition = rng.choice(sorted(m.topics[topic]))
            rf = len(m.topics[topic][partition])
            # Any registered broker, fenced ones included (KRaft takes them): such a move stays in progress.
            target = rng.sample(range(1, brokers + 1), rng.choice([rf, min(rf + 1, brokers), max(rf - 1, 1)]))
            throttled = rng.random() < 0.5
            m.topics[topic][partition] = target  # if it completes; a new partition then takes its size
            out.append(Op(kind, (topic, partition, target, throttled)))
        elif kind == "cancel" and topic:
            out.append(Op(kind, (topic, rng.choice(sorted(m.topics[topic])))))
        elif kind in ("preferred", "unclean") and topic:
            out.append(Op(kind, (topic, sorted(m.topics[topic]))))
        elif kind == "config" and topic:
            out.append(Op(kind, (topic, {"min.insync.replicas": str(rng.randint(1, 2)),
                                         "unclean.leader.election.enable": rng.choice(["true", "false"])})))
        elif kind == "create_partitions" and topic:
            rf = len(m.topics[topic][0])
            if rf <= len(m.up):
                new = rng.sample(sorted(m.up), rf)
                m.topics[topic][len(m.topics[topic])] = new
                out.append(Op(kind, (topic, len(m.topics[topic]), [new])))
        elif kind == "create_topic":
            out.append(m.new_topic(rng))
        elif kind == "delete_topic" and len(m.topics) > 2:
            del m.topics[topic]
            out.append(Op(kind, (topic,)))
        elif kind == "expire" and m.up:
            out.append(Op(kind, (rng.choice(sorted(m.up)),)))
        elif kind == "expire_controller":
            out.append(Op(kind))
        elif kind == "create_topics":
            out.append(Op(kind, tuple(m.new_topic(rng).args for _ in range(rng.randint(2, 3)))))
        elif kind == "delete_topics" and len(m.topics) > 3:
            names = rng.sample(sorted(m.topics), rng.randint(2, len(m.topics) - 2))
            for name in names:
                del m.topics[name]
            out.append(Op(kind, tuple(sorted(names))))
        elif kind in ("reassign_many", "reassign_znode") and topic:
            chosen = rng.sample([(t, p) for t in sorted(m.topics) for p in sorted(m.topics[t])],
                                min(rng.randint(2, 4), sum(len(a) for a in m.topics.values())))
            moves = []
            for t, p in sorted(chosen):
                m.topics[t][p] = rng.sample(range(1, brokers + 1), len(m.topics[t][p]))
                moves.append((t, p, m.topics[t][p]))
            out.append(Op(kind, tuple(moves)))
        elif kind == "elect_many" and len(m.topics) > 1:
            chosen_topics = rng.sample(sorted(m.topics), rng.randint(2, min(3, len(m.topics))))
            out.append(Op(kind, (rng.choice(["PREFERRED", "UNCLEAN"]),
                                 {t: sorted(rng.sample(sorted(m.topics[t]), rng.randint(1, len(m.topics[t]))))
                                  for t in chosen_topics})))
        elif kind == "broker_config":
            # The cluster default (None: --entity-default) or one running broker's own dynamic config.
            entity = rng.choice([None, rng.choice(sorted(m.up))])
            out.append(Op(kind, (entity, {"min.insync.replicas": str(rng.randint(1, 2)),
                                          "unclean.leader.election.enable": rng.choice(["true", "false"])})))
        elif kind == "create_partitions_many" and len(m.topics) > 1:
            grown = []
            for t in rng.sample(sorted(m.topics), 2):
                if len(m.topics[t][0]) <= len(m.up):
                    m.topics[t][len(m.topics[t])] = rng.sample(sorted(m.up), len(m.topics[t][0]))
                    grown.append((t, len(m.topics[t]), [m.topics[t][len(m.topics[t]) - 1]]))
            if grown:
                out.append(Op(kind, tuple(grown)))
        elif kind == "controller":
            # kill -9 of the active controller, or the killed one back.
            out.append(Op("restart_controller" if m.controller_down else "kill_controller"))
            m.controller_down = not m.controller_down
        elif kind == "elr" and not upgraded:
            upgraded = True
            out.append(Op("upgrade", (version.upgrade_to,)))
        elif kind == "elr" and version.elr is not None:
            m.elr = not m.elr
            out.append(Op(kind, (int(m.elr),)))
    return out


def execute(c: Any, op: Op) -> str:
    """Apply one operation and wait until the cluster has taken it; returns what happened, in words."""
    a = op.args
    done = "ok"
    try:
        if op.kind == "kill":
            c.kill(a[0])
            c.wait_fenced(a[0])
        elif op.kind == "terminate":
            c.terminate(a[0])
            c.wait_fenced(a[0])
        elif op.kind == "restart":
            c.restart(a[0])
        elif op.kind == "kill_controller":
            killed = c.active_controller()
            done = f"ok: controller {killed} killed, {c.kill_controller(killed)} leads"
        elif op.kind == "restart_controller":
            c.restart_controllers()
        elif op.kind == "expire":
            c.expire_session(a[0])
        elif op.kind == "fail_dir":
            c.fail_log_dir(a[0], a[1])
        elif op.kind == "move_dir":
            move_replica_log_dir(c, *a)
        elif op.kind == "elect_many":
            c.elect(a[0], a[1])
        elif op.kind == "broker_config":
            c.alter_broker_config(a[0], a[1])
        elif op.kind == "expire_controller":
            expired = c.active_controller()
            c.expire_session(expired)
            done = f"ok: controller {expired}'s session expired, {c.active_controller()} leads"
        elif op.kind == "create_topics":
            c.create_topics({name: assignment for name, assignment in a})
        elif op.kind == "delete_topics":
            c.delete_topics(list(a))
        elif op.kind == "reassign_many":
            c.reassign({(t, p): target for t, p, target in a})
        elif op.kind == "reassign_znode":
            c.reassign_through_znode({(t, p): target for t, p, target in a})
        elif op.kind == "create_partitions_many":
            c.create_partitions_of({t: (total, new) for t, total, new in a})
        elif op.kind == "create_topic":
            c.create_topic(a[0], a[1])
        elif op.kind == "reassign":
            topic, partition, target, throttled = a
            if throttled:  # what kafka-reassign-partitions --throttle sets on the topic
                c.alter_topic_config(topic, {"leader.replication.throttled.replicas": "*",
                                             "follower.replication.throttled.replicas": "*"})
            c.reassign({(topic, partition): target})
        elif op.kind == "cancel":
            c.reassign({(a[0], a[1]): None})
        elif op.kind in ("preferred", "unclean"):
            c.elect(op.kind.upper(), {a[0]: a[1]})
        elif op.kind == "config":
            c.alter_topic_config(a[0], a[1])
        elif op.kind == "create_partitions":
            c.create_partitions(a[0], a[1], a[2])
        elif op.kind == "delete_topic":
            c.delete_topic(a[0])
        elif op.kind == "elr":
            update_features(c, eligible_leader_replicas_version=a[0])
        elif op.kind == "upgrade":
            update_features(c, metadata_version=a[0])
        else:
            raise ValueError(op.kind)
    except Exception as exc:  # Kafka refusing an operation is part of the run (a cancel with nothing to cancel)
        return f"refused: {type(exc).__name__}: {str(exc)[:120]}"
    time.sleep(1.0)  # let the controller's own follow-ups (elections, ISR changes) land
    return done


@dataclass
class RunResult:
    version: str
    seed: int
    engine: str
    partitions: int
    partitions_equal: int
    states: int
    states_equal: int
    decisions: int
    decisions_agreeing: int
    by_cause: Counter[tuple[str, bool]]
    kept: Path | None

    @property
    def agrees(self) -> bool:
        return self.partitions == self.partitions_equal and self.decisions == self.decisions_agreeing


def compare(metadata_copy: Path, out: Path, engine: str, seed: int, version: str, source: str = "kraft:",
            rules: Rules = KRAFT) -> RunResult:
    """Replay the copy through the directory path (`source` kraft: or zk:) under `rules` and compare with the
    controller."""
    replay(ReplayOptions(f"{source}{metadata_copy}", out, engine=engine, config=ControllerConfig(rules=rules)))
    histories, agreement = read_jsonl(out / "histories.jsonl"), read_jsonl(out / "agreement.jsonl")
    return RunResult(version, seed, engine, len(histories), sum(1 for h in histories if h["match"]),
                     sum(h["states_compared"] for h in histories), sum(h["states_equal"] for h in histories),
                     len(agreement), sum(1 for r in agreement if r["match"]),
                     Counter((str(r["cause"]), bool(r["match"])) for r in agreement), None)


def run(seed: int, ops: int, work: Path, version: Version = VERSIONS["4.1"], engines: tuple[str, ...] = ("local",),
        log: Any = print, keep: bool = False, log_dirs: int = 1) -> list[RunResult]:
    """One campaign run: the script of `seed` on a fresh cluster of `version` whose brokers have `log_dirs` log dirs
    each, then one comparison per engine."""
    steps = script(seed, ops, version, extra=KRAFT_EXTRA, log_dirs=log_dirs)
    here = run_dir(work, "kafka", version.name, seed, log_dirs)
    with KraftCluster(brokers=BROKERS, elr=version.elr, racks=RACKS, extra_controller_config=CONTROLLER_CONFIG,
                      release_version=version.release_version, jar_set=fetched(version.jar_set),
                      controllers=CONTROLLERS, log_dirs=log_dirs) as c:
        copy = play(c, steps, f"kafka {version.name} seed {seed} ({log_dirs} log dir(s))", lambda: c.metadata_dir,
                    here / "metadata", log)
    return kept_if_disagreeing([compare(copy, here / engine, engine, seed, version.name) for engine in engines],
                               here, copy, keep)


def run_dir(work: Path, kind: str, version: str, seed: int, log_dirs: int) -> Path:
    """A run's folder under `work`: `<kind>-<version>[-dirs-<log_dirs>]-seed-<seed>` (read back by `kept_run`)."""
    dirs = "" if log_dirs == 1 else f"-dirs-{log_dirs}"
    return work / f"{kind}-{version}{dirs}-seed-{seed}"


def kept_run(here: Path, kind: str) -> tuple[str, int]:
    """A kept run's version (with its `-dirs-<n>`, if any) and seed, from its folder's name (`run_dir`)."""
    version, seed = here.name.removeprefix(f"{kind}-").split("-seed-")
    return version, int(seed)


def play(c: Any, steps: list[Op], label: str, history: Any, copy: Path, log: Any = print) -> Path:
    """Run the script on a started cluster, let the controller finish, and copy its history directory
    (`history()`, asked at the end: KRaft's active controller may have changed) to `copy`."""
    for op in steps:
        log(f"  {label}: {op} -> {execute(c, op)}")
    time.sleep(2)
    copy_live_dir(history(), copy)
    return copy


def kept_if_disagreeing(results: list[RunResult], here: Path, copy: Path, keep: bool = False) -> list[RunResult]:
    """A run that agrees leaves nothing behind (unless asked to `keep` every run, to be checked again later with
    `--recheck`); one that disagrees keeps its log copy, to become a regression."""
    if all(r.agrees for r in results):
        if not keep:
            shutil.rmtree(here, ignore_errors=True)
    else:
        for r in results:
            r.kept = copy
    return results


def summary(results: list[RunResult]) -> str:
    lines = [f"{'kafka':<14} {'seed':>5} {'engine':<6} {'histories equal':>16} {'states equal':>14} "
             f"{'decisions agreeing':>19}"]
    for r in results:
        lines.append(f"{r.version:<14} {r.seed:>5} {r.engine:<6} {r.partitions_equal:>7}/{r.partitions:<8} "
                     f"{r.states_equal:>6}/{r.states:<7} {r.decisions_agreeing:>9}/{r.decisions:<9}"
                     + (f" KEPT {r.kept}" if r.kept else ""))
    causes: Counter[tuple[str, bool]] = Counter()
    for r in results:
        causes.update(r.by_cause)
    for name in sorted({r.version for r in results}):
        mine = [r for r in results if r.version == name]
        lines.append(f"kafka {name}: runs {len({r.seed for r in mine})}, partition histories "
                     f"{sum(r.partitions_equal for r in mine)}/{sum(r.partitions for r in mine)} equal, states "
                     f"{sum(r.states_equal for r in mine)}/{sum(r.states for r in mine)} equal, decisions "
                     f"{sum(r.decisions_agreeing for r in mine)}/{sum(r.decisions for r in mine)} agreeing")
    for cause in sorted({c for c, _ in causes}):
        lines.append(f"  {cause:<20} {causes[(cause, True)]}/{causes[(cause, True)] + causes[(cause, False)]} "
                     f"decisions agreeing")
    return "\n".join(lines)


def campaign(argv: list[str] | None, versions: dict[str, Any], default_versions: str, default_out: str,
             run_one: Any, recheck_one: Any = None, doc: str = __doc__) -> int:
    """The command line of a campaign: RUNS runs over the versions in turn, each `run_one(seed, ops, out, version,
    engines, keep=)`, Spark beside the local engine on each version's first run with --spark. With --recheck, no
    cluster: every run kept under --out is compared again (`recheck_one(run_dir)`), as after a fix. `doc`: the
    campaign module's docstring, whose first line describes it."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--seed", type=int, default=1, help="the first run's seed; run n uses seed + n")
    p.add_argument("--ops", type=int, default=30, help="operations per run, after two topics are created")
    p.add_argument("--versions", default=default_versions,
                   help=f"versions, taken in turn ({', '.join(versions)})")
    p.add_argument("--spark", action="store_true", help="also replay each version's first run with Spark")
    p.add_argument("--out", type=Path, default=Path(default_out))
    p.add_argument("--keep", action="store_true", help="keep every run's copy, also the ones that agree")
    if recheck_one is not None:
        p.add_argument("--recheck", action="store_true",
                       help="start no cluster: compare every run kept under --out again")
    args = p.parse_args(argv)
    results: list[RunResult] = []
    if getattr(args, "recheck", False):
        for here in sorted((d for d in args.out.iterdir() if "-seed-" in d.name),
                           key=lambda d: int(d.name.rsplit("-", 1)[1])):
            results += recheck_one(here)
            print(summary(results[-1:]).splitlines()[1], flush=True)
        print(summary(results))
        return 0 if all(r.agrees for r in results) else 1
    chosen = [versions[v] for v in args.versions.split(",")]
    for n in range(args.runs):
        version = chosen[n % len(chosen)]
        engines = ("local", "spark") if args.spark and n < len(chosen) else ("local",)
        results += run_one(args.seed + n, args.ops, args.out, version, engines, keep=args.keep)
        print(summary(results[-len(engines):]).splitlines()[1], flush=True)
    print(summary(results))
    return 0 if all(r.agrees for r in results) else 1


def run_drawn(seed: int, ops: int, work: Path, version: Version, engines: tuple[str, ...], keep: bool = False
              ) -> list[RunResult]:
    """A run of the version its seed draws (a metadata.version to format at, where the release has several) whose
    brokers have the number of log dirs its seed draws (1 to 3)."""
    version = version.drawn(seed)
    return run(seed, ops, work, version, engines, keep=keep, log_dirs=drawn_log_dirs(seed, version))


def recheck(here: Path) -> list[RunResult]:
    """Compare a kept run (`kafka-<version>[-dirs-<n>]-seed-<n>`) again, on the local engine, as after a fix."""
    version, seed = kept_run(here, "kafka")
    shutil.rmtree(here / "local", ignore_errors=True)
    return [compare(here / "metadata", here / "local", "local", seed, version.split("-dirs-")[0])]


def main(argv: list[str] | None = None) -> int:
    return campaign(argv, VERSIONS, "4.1,3.9", "out/kraft-campaign", run_drawn, recheck)


if __name__ == "__main__":
    sys.exit(main())
