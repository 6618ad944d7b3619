"""`isrflow demo --kraft --keep-running`: a playground that stays up. A real KRaft cluster (1 controller, 3 brokers,
internal topics with 3 replicas, as in production), `isrflow bridge` following the controller's metadata log into
the events topic, and `isrflow run` (kraft rules, metrics on a port) deciding it into the decisions topic and Delta.
It prints how to break the cluster and where to look, takes commands on its standard input (kill, stop and start a
broker, move a partition, elect), and runs until Ctrl-C, then stops every process it started.

The shadow's own partitions (the events and decisions topics) are led by the broker that is also the transaction
coordinator of both, so killing that one broker shows the shadow riding through its own failover."""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from streaming.infra.kraftcluster import KraftCluster
from streaming.infra.localkafka import free_port
from streaming.infra.processes import die_with_parent
from streaming.jobs.run import stop_on_signals

EVENTS_TOPIC = "isrflow-kraft-events"
DECISIONS_TOPIC = "isrflow-kraft-decisions"
WARMUP_ID = "isrflow-playground"

HELP = """commands (type one and Enter):
  kill N                 kill -9 broker N (the controller fences it once its session times out)
  stop N                 SIGTERM broker N: a controlled shutdown
  start N                start broker N again
  move TOPIC P B1,B2,..  reassign partition P of TOPIC to those brokers
  elect TOPIC P          preferred leader election of one partition
  topic NAME             create a topic of 3 partitions on 3 replicas
  status                 leaders and ISRs of every topic, brokers up
  help                   this list"""


@dataclass(frozen=True)
class Shadow:
    """What the playground started besides the cluster."""

    bridge: subprocess.Popen[bytes]
    run: subprocess.Popen[bytes]
    metrics_port: int
    lake: Path
    logs: Path


def shadow_broker(cluster: KraftCluster) -> int:
    """The broker leading __transaction_state, where the shadow's own topics are put to lead too."""
    from kafka import KafkaProducer

    # __transaction_state exists once a transactional producer has asked for its coordinator.
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id=WARMUP_ID,
                             enable_idempotence=True)
    try:
        producer.init_transactions()
    finally:
        producer.close()
    leader = cluster.describe("__transaction_state")[0]["leader"]
    others = [b for b in cluster.brokers if b != leader]
    for topic in (EVENTS_TOPIC, DECISIONS_TOPIC):
        cluster.create_topic(topic, {0: [leader, *others]})
    return leader


def _echo(stream: IO[bytes], prefix: str, log: Path, out: Callable[[str], None]) -> None:
    with log.open("a") as file:
        for raw in stream:
            line = raw.decode(errors="replace").rstrip()
            file.write(line + "\n")
            file.flush()
            out(f"[{prefix}] {line}")


def start_shadow(cluster: KraftCluster, work: Path, out: Callable[[str], None]) -> Shadow:
    """`isrflow bridge` and `isrflow run` as child processes, their lines echoed with a prefix and kept in logs/."""
    logs, lake, port = work / "logs", work / "lake", free_port()
    logs.mkdir(parents=True, exist_ok=True)
    bootstrap = cluster.bootstrap_servers
    commands = {
        "bridge": ["bridge", "--metadata-dir", str(cluster.metadata_dir), "--bootstrap-servers", bootstrap,
                   "--events-topic", EVENTS_TOPIC],
        "run": ["run", "--bootstrap-servers", bootstrap, "--events-topic", EVENTS_TOPIC, "--decisions-topic",
                DECISIONS_TOPIC, "--audit-table", str(lake / "audit"), "--checkpoint-dir",
                str(work / "checkpoints"), "--rules", "kraft", "--state-partitions", "2", "--metrics-port", str(port)],
    }
    started: dict[str, subprocess.Popen[bytes]] = {}
    for name, args in commands.items():
        proc = subprocess.Popen([sys.executable, "-m", "streaming", *args], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=die_with_parent,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        started[name] = proc
        threading.Thread(target=_echo, args=(proc.stdout, name, logs / f"{name}.out", out), daemon=True).start()
    return Shadow(started["bridge"], started["run"], port, lake, logs)


def stop_shadow(shadow: Shadow) -> None:
    """`run` stops after its current micro-batches (SIGTERM), the bridge after its round (SIGINT)."""
    for proc, sig, timeout in ((shadow.run, signal.SIGTERM, 120), (shadow.bridge, signal.SIGINT, 30)):
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def guide(cluster: KraftCluster, shadow: Shadow, leader: int, work: Path) -> str:
    nodes = [*(f"controller {c}: pid {n.pid}" for c, n in cluster.controllers.items()),
             *(f"broker {b}: pid {n.pid}" for b, n in cluster.brokers.items())]
    brokers = "  ".join(nodes)
    return f"""
isrflow playground: up. Ctrl-C stops everything it started.

  cluster   {cluster.bootstrap_servers}  (1 controller, 3 brokers; internal topics on 3 replicas)
            {brokers}
  shadow    isrflow bridge (pid {shadow.bridge.pid}): the controller's metadata log -> {EVENTS_TOPIC}
            isrflow run (pid {shadow.run.pid}, kraft rules): -> {DECISIONS_TOPIC}, Delta tables in {shadow.lake}
  metrics   http://127.0.0.1:{shadow.metrics_port}/metrics

Break things:
  kill {leader}     broker {leader} leads the shadow's own partitions ({EVENTS_TOPIC}, {DECISIONS_TOPIC},
             __transaction_state): the shadow rides through its own failover
  kill 1     any broker: the controller fences it and moves its leaderships; run's lines say N/M agreeing
  start 1    it rejoins the ISRs
  (or from another shell: kill -9 PID of a broker)
{HELP}

Where to look:
  tail -f {shadow.logs / 'run.out'}       run's progress lines (also echoed here)
  curl -s http://127.0.0.1:{shadow.metrics_port}/metrics | grep ^isrflow_
  .venv/bin/isrflow explain {shadow.lake / 'audit'} --topic orders --partition 0
  .venv/bin/isrflow report {shadow.lake}           the incident report, written beside the lake
  the cluster's own logs: {work / 'cluster'}
"""


def command(cluster: KraftCluster, line: str) -> str:
    """One playground command (HELP); what happened, in a line."""
    words = line.split()
    if not words:
        return ""
    try:
        match words:
            case ["kill", b]:
                cluster.kill(int(b))
                return f"broker {b} killed (kill -9)"
            case ["stop", b]:
                cluster.terminate(int(b))
                return f"broker {b} shut down (controlled shutdown)"
            case ["start", b]:
                cluster.restart(int(b))
                return f"broker {b} started"
            case ["move", topic, p, brokers]:
                cluster.reassign({(topic, int(p)): [int(x) for x in brokers.split(",")]})
                return f"{topic}-{p}: reassignment to {brokers} asked"
            case ["elect", topic, p]:
                codes = cluster.elect("PREFERRED", {topic: [int(p)]})
                return f"{topic}-{p}: preferred election answered {codes}"
            case ["topic", name]:
                cluster.create_topic(name, {p: [(p + i) % 3 + 1 for i in range(3)] for p in range(3)})
                return f"topic {name} created"
            case ["status"]:
                return status(cluster)
            case ["help"]:
                return HELP
    except Exception as exc:  # a refused admin request, a broker id that is not there: say so, keep going
        return f"{line.strip()}: {type(exc).__name__}: {exc}"
    return f"unknown command {line.strip()!r}\n{HELP}"


def status(cluster: KraftCluster) -> str:
    lines = [f"brokers up: {sorted(cluster.live_brokers())}"]
    for topic in sorted(t for t in cluster.list_topics() if not t.startswith("__")):
        for p, d in sorted(cluster.describe(topic).items()):
            lines.append(f"  {topic}-{p}: leader {d['leader']} isr {d['isr']} replicas {d['replicas']}")
    return "\n".join(lines)


def _printer() -> Callable[[str], None]:
    """print, one line at a time: the children's lines come from their own threads."""
    lock = threading.Lock()

    def out(text: str) -> None:
        with lock:
            print(text, flush=True)

    return out


def playground(work_dir: Path = Path("out/playground"), release: str | None = None) -> int:
    """`release`: the Kafka release the cluster runs (connectors.KRAFT_RELEASES; None: Kafka 4.1)."""
    work = work_dir.resolve()
    shutil.rmtree(work, ignore_errors=True)
    out = _printer()
    with stop_on_signals() as stop:
        out(f"isrflow playground: starting a Kafka {release or '4.1'} KRaft cluster (1 controller + 3 brokers) ...")
        with KraftCluster(brokers=3, root=work / "cluster", internal_replication=3, release=release) as cluster:
            leader = shadow_broker(cluster)
            cluster.create_topic("orders", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
            shadow = start_shadow(cluster, work, out)
            try:
                out(guide(cluster, shadow, leader, work))
                _serve(cluster, shadow, stop, out)
            finally:
                out("isrflow playground: stopping run, the bridge and the cluster ...")
                stop_shadow(shadow)
    out("isrflow playground: stopped")
    return 0


def _serve(cluster: KraftCluster, shadow: Shadow, stop: threading.Event, out: Callable[[str], None]) -> None:
    """Commands from standard input until Ctrl-C (or SIGTERM), or until the bridge or run ends."""
    reading = True
    while not stop.is_set():
        for name, proc in (("bridge", shadow.bridge), ("run", shadow.run)):
            if proc.poll() is not None:
                out(f"isrflow playground: {name} exited ({proc.returncode}); see {shadow.logs / (name + '.out')}")
                return
        if not reading:
            stop.wait(1.0)
            continue
        try:
            ready, _, _ = select.select([sys.stdin], [], [], 1.0)
        except (OSError, ValueError):  # no standard input at all
            ready, reading = [], False
        if ready:
            line = sys.stdin.readline()
            if not line:  # no more input (not a terminal): keep running until Ctrl-C
                reading = False
                continue
            if said := command(cluster, line):
                out(said)
