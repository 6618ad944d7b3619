"""`isrflow` (also `python -m streaming`): argument parsing only. Each command turns its arguments into a
typed call of a library function; `main` is the one place that maps errors to exit codes:
0 done, 1 a check failed or a query stopped with an error, 2 bad input from the user."""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from statemachine.controller import ControllerConfig
from statemachine.features import LATEST_PRODUCTION, metadata_version_level, metadata_version_name
from statemachine.rules import rules_named
from statemachine.zk_releases import LAST_ZOOKEEPER_RELEASE, KafkaRelease
from streaming.engine.connectors import KRAFT_RELEASES
from streaming.errors import UsageError

if TYPE_CHECKING:
    from streaming.io.eventlog import Bounds

Command = Callable[[argparse.Namespace], int]


def key_values(pairs: Sequence[str] | None, flag: str = "--conf") -> dict[str, str]:
    """`--conf k=v` style pairs as a dict; a pair without a key or `=` is a UsageError (exit 2)."""
    out: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} takes key=value, got '{pair}'")
        out[key.strip()] = value
    return out


def _add_rules_option(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    p.add_argument("--rules", choices=("zk", "kraft"), default="zk",
                   help="whose decisions to reproduce: the ZooKeeper-era controller (default) or Kafka 4.1's KRaft "
                        "controller; see docs/kraft.md")


def _add_controller_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("cluster defaults (Kafka's names and defaults)")
    g.add_argument("--unclean-leader-election-enable", choices=("true", "false"), default="false")
    g.add_argument("--auto-leader-rebalance-enable", choices=("true", "false"), default="true")
    g.add_argument("--leader-imbalance-per-broker-percentage", type=int, default=10)
    _add_rules_option(g)
    g.add_argument("--eligible-leader-replicas", choices=("true", "false"), default="false",
                   help="kraft rules: the cluster runs with eligible.leader.replicas.version >= 1 (KIP-966); a "
                        "kraft: replay source takes it from the log where the log sets it")
    g.add_argument("--metadata-version", default=metadata_version_name(LATEST_PRODUCTION), metavar="VERSION",
                   help="the cluster's metadata.version, a name such as 3.5-IV2 or a feature level (default "
                        "%(default)s, Kafka 4.1's latest); for the zk rules its inter.broker.protocol.version (2.6: "
                        "leaders write their own ISR; 2.7-IV2 to 3.0-IV0: they send AlterIsr); a kraft: or zk: replay "
                        "source takes it from what the cluster wrote where it can")
    g.add_argument("--kafka-version", metavar="RELEASE",
                   help="zk rules: the release the cluster's controller ran, such as 2.8.2 (default: what a zk: "
                        f"source's server.log files name, else {LAST_ZOOKEEPER_RELEASE}, the last with ZooKeeper "
                        "mode); see docs/zookeeper.md")
    g.add_argument("--min-insync-replicas", type=int, default=1,
                   help="cluster default of min.insync.replicas (read by the kraft rules' ELR and run's under-min-ISR "
                        "metric)")
    g.add_argument("--super-users", help="comma-separated principals allowed to issue admin commands "
                                         "(default: anyone)")
    g.add_argument("--duplicate-window", type=int, default=ControllerConfig.duplicate_window, metavar="OFFSETS",
                   help="an event_id seen again within this many offsets is rejected as a duplicate; older ids "
                        "are forgotten (default %(default)s)")


def _controller_config(args: argparse.Namespace) -> ControllerConfig:
    if args.min_insync_replicas < 1:
        raise UsageError(f"--min-insync-replicas must be >= 1, got {args.min_insync_replicas}")
    try:
        metadata_version = metadata_version_level(args.metadata_version)
    except ValueError as e:
        raise UsageError(f"--metadata-version: {e}") from None
    try:
        release = KafkaRelease.parse(args.kafka_version) if args.kafka_version else None
    except ValueError as e:
        raise UsageError(f"--kafka-version: {e}") from None
    return ControllerConfig(
        unclean_leader_election_enable=args.unclean_leader_election_enable == "true",
        auto_leader_rebalance_enable=args.auto_leader_rebalance_enable == "true",
        leader_imbalance_per_broker_percentage=args.leader_imbalance_per_broker_percentage,
        super_users=frozenset(s.strip() for s in args.super_users.split(",")) if args.super_users else None,
        duplicate_window=args.duplicate_window,
        rules=rules_named(args.rules),
        eligible_leader_replicas=args.eligible_leader_replicas == "true",
        metadata_version=metadata_version,
        min_insync_replicas=args.min_insync_replicas,
        kafka_version=release,
    )


def _add_spark_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master", help="Spark master URL (default local[2], or spark-submit's --master)")
    p.add_argument("--conf", action="append", metavar="spark.k=v", help="extra Spark configuration")
    p.add_argument("--jars", help="comma-separated Kafka connector and Delta jars to use instead of the cache or "
                                  "their Maven coordinates (also: ISRFLOW_SPARK_JARS); see `isrflow jars`")
    p.add_argument("--verbose", action="store_true", help="Spark's own logging instead of isrflow's quiet one")


def _spark_conf(args: argparse.Namespace) -> dict[str, str]:
    """--conf pairs, with --jars and --verbose carried as the `isrflow.*` keys build_spark reads."""
    conf = key_values(args.conf, "--conf")
    if getattr(args, "jars", None):
        conf["isrflow.jars"] = args.jars
    if getattr(args, "verbose", False):
        conf["isrflow.verbose"] = "true"
    return conf


def _add_kafka_client_options(p: argparse.ArgumentParser, option_help: str) -> None:
    p.add_argument("--kafka-option", action="append", metavar="k=v", help=option_help)
    p.add_argument("--kafka-option-file", type=Path, metavar="PATH",
                   help="Kafka client properties in the syntax of Kafka's tools' --command-config "
                        "(security.protocol=SASL_SSL, sasl.jaas.config=..., ssl.truststore.location=...); "
                        "values may name environment variables as ${env:NAME}")


def _add_broker_logs_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--controller-logs", type=Path, metavar="DIR",
                   help="a zk: source's controller.log files (broker-N.log): what each controller read of "
                        "/brokers/ids, which ZooKeeper's log does not show (default: a controller folder beside the "
                        "zk: path, if any)")
    p.add_argument("--server-logs", type=Path, metavar="DIR",
                   help="a zk: source's server.log files (broker-N.log), with the logger "
                        "kafka.server.DefaultAlterPartitionManager (before 3.2, DefaultAlterIsrManager) at DEBUG: the "
                        "AlterPartition (AlterIsr) requests the controller answered without a write (default: a "
                        "server folder beside the zk: path, if any)")


def _add_bounds_options(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--from-offset", type=int, help="first offset (inclusive)")
    g.add_argument("--to-offset", type=int, help="last offset (exclusive)")
    g.add_argument("--from", dest="from_time", metavar="ISO-8601", help="first record at or after this time")
    g.add_argument("--to", dest="to_time", metavar="ISO-8601", help="stop before the first record at this time")


def _bounds(args: argparse.Namespace) -> Bounds:
    from streaming.io.eventlog import Bounds

    return Bounds(args.from_offset, args.to_offset, args.from_time, args.to_time)


def _cmd_replay(args: argparse.Namespace) -> int:
    from streaming.jobs.replay import ReplayOptions, replay

    print(replay(ReplayOptions(args.source, args.out, args.engine, args.batch_size, _bounds(args),
                               _controller_config(args), args.master, _spark_conf(args),
                               args.kafka_option_file, key_values(args.kafka_option, "--kafka-option"),
                               args.state_change, args.controller_logs, args.server_logs)))
    return 0


def _cmd_import_kraft(args: argparse.Namespace) -> int:
    from streaming.jobs.kraft import import_kraft

    print(import_kraft(args.path, args.out, args.observed, _bounds(args)).describe())
    return 0


def _cmd_import_zk(args: argparse.Namespace) -> int:
    from streaming.jobs.zookeeper import import_zk

    print(import_zk(args.path, args.out, args.observed, controller_logs=args.controller_logs,
                    server_logs=args.server_logs).describe())
    return 0


def _cmd_bridge(args: argparse.Namespace) -> int:
    from streaming.jobs.bridge import KRAFT, ZOOKEEPER, BridgeOptions, bridge

    source, directory = (KRAFT, args.metadata_dir) if args.metadata_dir else (ZOOKEEPER, args.zookeeper_data_dir)
    return bridge(BridgeOptions(directory, args.bootstrap_servers, args.events_topic, args.poll_seconds,
                                1 if args.once else None, args.kafka_option_file,
                                key_values(args.kafka_option, "--kafka-option"), source))


def _cmd_run(args: argparse.Namespace) -> int:
    from streaming.jobs.run import RunOptions, run

    return run(RunOptions(
        bootstrap_servers=args.bootstrap_servers, events_topic=args.events_topic,
        decisions_topic=args.decisions_topic, audit_table=args.audit_table, checkpoint_dir=args.checkpoint_dir,
        lake_dir=args.lake_dir, trigger=args.trigger,
        kafka_options=key_values(args.kafka_option, "--kafka-option"), kafka_option_file=args.kafka_option_file,
        starting_offsets=args.starting_offsets,
        quality=args.quality, config=_controller_config(args), master=args.master, spark_conf=_spark_conf(args),
        state_partitions=args.state_partitions, metrics_port=args.metrics_port, requests=args.requests))


def _cmd_demo(args: argparse.Namespace) -> int:
    if args.kafka_version is not None and not args.kraft:
        raise UsageError("demo --kafka-version is the KRaft cluster's release: use it with --kraft")
    if args.keep_running:
        if not args.kraft:
            raise UsageError("--keep-running is the KRaft playground: use it with --kraft")
        from streaming.jobs.playground import playground

        return playground(args.work_dir.with_name(args.work_dir.name + "-playground"), args.kafka_version)
    if args.kraft:
        from streaming.jobs.kraftdemo import kraft_demo

        return kraft_demo(args.work_dir.with_name(args.work_dir.name + "-kraft"), args.master, _spark_conf(args),
                          args.kafka_version)
    if args.zookeeper:
        from streaming.jobs.zkdemo import zookeeper_demo

        return zookeeper_demo(args.work_dir.with_name(args.work_dir.name + "-zookeeper"), args.master,
                              _spark_conf(args))
    from streaming.jobs.demo import demo

    return demo(args.port, args.work_dir, args.master, _spark_conf(args), args.rules)


def _cmd_jars(args: argparse.Namespace) -> int:
    from streaming.engine.connectors import SPARK_PACKAGE_EXCLUDES, SPARK_PACKAGES, TOKEN_PROVIDER, spark_jar_source

    source = spark_jar_source(args.jars.split(",") if args.jars else None)
    if args.spark_submit:
        print(shlex.join(source.submit_args()))
        return 0
    print("Maven coordinates (spark-submit --packages / spark.jars.packages):")
    print("  " + ",".join(SPARK_PACKAGES))
    print(f"  plus {TOKEN_PROVIDER}, resolved on its own (spark.jars)")
    print("excluded (pyspark ships them; spark.jars.excludes):\n  " + ",".join(SPARK_PACKAGE_EXCLUDES))
    print("this machine uses " + source.describe())
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from streaming.quality.runner import check

    return check(args.audit_table, args.since_batch, args.html, args.master, _spark_conf(args), args.engine)


def _cmd_explain(args: argparse.Namespace) -> int:
    from streaming.analysis.explain import explain

    sys.stdout.write(explain(args.source, args.topic, args.partition))
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from streaming.analysis.controller_story import real_history_warnings
    from streaming.analysis.report import write_report

    target = write_report(args.source, args.out)
    for warning in real_history_warnings(Path(args.source)):  # a real history isrflow does not reproduce: first
        print(f"WARNING: {warning}")
    print(target)
    return 0


def _cmd_inspect(args: argparse.Namespace) -> int:
    from streaming.analysis.inspect import inspect

    sys.stdout.write(inspect(args.checkpoint_dir, args.topic, args.partition, args.json, args.master,
                             _spark_conf(args)))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="isrflow", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="the main job on embedded defaults: local Spark, a local Kafka broker, "
                                    "the bundled incident scenario")
    p.add_argument("--port", type=int, default=9092, help="the local broker's port (default 9092)")
    p.add_argument("--work-dir", type=Path, default=Path("out/demo"), help="tables and checkpoints of the demo")
    _add_rules_option(p)
    p.add_argument("--kraft", action="store_true",
                   help="instead: a real 3-broker KRaft cluster, a broker killed and one shut down, its metadata log "
                        "bridged and replayed under the kraft rules, next to the real controller's decisions")
    p.add_argument("--zookeeper", action="store_true",
                   help="instead: a real ZooKeeper-mode cluster (3 Kafka 3.9 brokers) through a failure, a controlled "
                        "shutdown and a reassignment, its history decided by `isrflow run` under the zk rules, next "
                        "to the real controller's writes")
    p.add_argument("--keep-running", action="store_true",
                   help="with --kraft: a playground that stays up until Ctrl-C (a KRaft cluster, `bridge` and `run` "
                        "with metrics), with commands to kill, stop and start brokers and move partitions")
    p.add_argument("--kafka-version", choices=list(KRAFT_RELEASES), metavar="RELEASE",
                   help=f"with --kraft: the Kafka release the cluster runs, of {', '.join(KRAFT_RELEASES)} (default "
                        "4.1, the project's broker jars; another's jars are fetched on first use)")
    _add_spark_options(p)
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser("run", help="the long-running streaming query")
    p.add_argument("--bootstrap-servers", required=True)
    p.add_argument("--events-topic", required=True)
    p.add_argument("--decisions-topic", required=True)
    # Locations are local paths or URIs (s3a://, abfss://, gs://, hdfs://, file:/): docs/deploy.md, "Storage".
    p.add_argument("--audit-table", required=True, help="the audit Delta table: a path or a URI such as "
                                                         "s3a://bucket/isrflow/audit")
    p.add_argument("--checkpoint-dir", default="checkpoints",
                   help="root of the queries' checkpoints, a path or a URI (default checkpoints/)")
    p.add_argument("--lake-dir",
                   help="where bronze, commands, decisions, quarantine and requests tables go, a path or a URI "
                        "(default: beside the audit table)")
    p.add_argument("--trigger", default="5 seconds",
                   help="processing-time interval, e.g. '5 seconds', or 'available-now' for one bounded run")
    _add_kafka_client_options(p, "Kafka client property or Spark source option, e.g. "
                                 "maxOffsetsPerTrigger=1000 or security.protocol=SASL_SSL (over the file's)")
    p.add_argument("--starting-offsets", default="earliest")
    p.add_argument("--quality", action="store_true",
                   help="run the data-quality suite on each micro-batch's audit rows; results to a 'quality' "
                        "Delta table beside the audit, summary in the progress line")
    p.add_argument("--state-partitions", type=int, metavar="N",
                   help="partitions of the state store (spark.sql.shuffle.partitions) for a new checkpoint; fixed "
                        "for the checkpoint's life (default: the checkpoint's own, else Spark's default 200)")
    p.add_argument("--metrics-port", type=int, metavar="N",
                   help="serve Prometheus metrics on this port of the driver, path /metrics (0: a free port, printed); "
                        "see docs/operations.md")
    p.add_argument("--no-requests", dest="requests", action="store_false",
                   help="zk rules: do not write the requests the controller sends (the requests table); they cost "
                        "the sequencer a few seconds per event that moves 10,000 partitions")
    _add_spark_options(p)
    _add_controller_options(p)
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("replay", help="replay an event log (JSONL file or folder, kafka://HOST:PORT/TOPIC, "
                                      "kraft:PATH for a KRaft metadata log, or zk:PATH for a ZooKeeper server's "
                                      "version-2 directory)")
    p.add_argument("source")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--engine", choices=("spark", "local"), default="spark")
    p.add_argument("--batch-size", type=int, default=None,
                   help="events per micro-batch with the spark engine (0: all at once; default: all at once up to "
                        "100,000 events, else 100,000 a micro-batch, with the driver's memory sized to them)")
    p.add_argument("--state-change", type=Path, metavar="DIR",
                   help="a zk: source's state-change logs (broker-N.log): the controller's requests, compared with "
                        "isrflow's (local engine; default: a state-change folder beside the zk: path, if any)")
    _add_broker_logs_options(p)
    bounds = p.add_argument_group("bounds of a kafka:// source (default: from the beginning to the current end) or a "
                                  "kraft: source (a window of its history, seeded with the state at its start)")
    _add_bounds_options(bounds)
    _add_kafka_client_options(bounds, "Kafka client property of a kafka:// source, e.g. security.protocol=SASL_SSL")
    _add_spark_options(p)
    _add_controller_options(p)
    p.set_defaults(func=_cmd_replay)

    p = sub.add_parser("jars", help="the connectors' Maven coordinates, and where this machine takes them from")
    p.add_argument("--jars", help="comma-separated jars, as the Spark commands take them")
    p.add_argument("--spark-submit", action="store_true",
                   help="print only spark-submit's flags for the connectors this machine uses (docs/deploy.md)")
    p.set_defaults(func=_cmd_jars)

    p = sub.add_parser("import-kraft", help="a KRaft metadata log (__cluster_metadata-0 dir, segment or snapshot) "
                                            "as a contract event log, decoded with Kafka's own dump tool")
    p.add_argument("path", type=Path)
    p.add_argument("--out", required=True, type=Path, help="the events JSONL to write")
    p.add_argument("--observed", type=Path, help="also write the controller's partition changes (JSONL)")
    _add_bounds_options(p.add_argument_group(
        "a window of the history: metadata offsets or record CreateTimes (default: the whole retained history); "
        "the state at its start is seeded, its records are the events"))
    p.set_defaults(func=_cmd_import_kraft)

    p = sub.add_parser("import-zk", help="a ZooKeeper-mode cluster's history (a ZooKeeper server's version-2 "
                                         "directory or dataDir, a log.* or a snapshot.* file) as a contract event log")
    p.add_argument("path", type=Path)
    p.add_argument("--out", required=True, type=Path, help="the events JSONL to write")
    p.add_argument("--observed", type=Path, help="also write every partition state write of the controller (JSONL)")
    _add_broker_logs_options(p)
    p.set_defaults(func=_cmd_import_zk)

    p = sub.add_parser("bridge", help="follow a live KRaft node's metadata log or ZooKeeper server's transaction log "
                                      "and publish its new events to the events topic (resumes after the last "
                                      "published metadata offset or zxid)")
    followed = p.add_mutually_exclusive_group(required=True)
    followed.add_argument("--metadata-dir", type=Path, help="a KRaft node's __cluster_metadata-0 directory")
    followed.add_argument("--zookeeper-data-dir", type=Path,
                          help="a ZooKeeper server's dataDir (or its version-2), on the server's machine")
    p.add_argument("--bootstrap-servers", required=True)
    p.add_argument("--events-topic", required=True)
    p.add_argument("--poll-seconds", type=float, default=2.0)
    p.add_argument("--once", action="store_true", help="publish what is new and exit")
    _add_kafka_client_options(p, "Kafka client property, e.g. security.protocol=SASL_SSL (over the file's)")
    p.set_defaults(func=_cmd_bridge)

    p = sub.add_parser("check", help="the data-quality suite on an audit table; exit 1 when an expectation fails")
    p.add_argument("audit_table", help="an audit Delta table: a path or a URI such as s3a://bucket/isrflow/audit")
    p.add_argument("--since-batch", type=int, help="only audit rows of micro-batches >= N")
    p.add_argument("--html", type=Path, help="folder for Great Expectations' HTML results (Spark engine)")
    p.add_argument("--engine", choices=("auto", "local", "spark"), default="auto",
                   help="local: the suite without Spark, in seconds (a local table, no --html); spark: through "
                        "Spark and Great Expectations; auto (default): local for a local table of at most 100,000 "
                        "rows without --html, else spark")
    _add_spark_options(p)
    p.set_defaults(func=_cmd_check)

    p = sub.add_parser("explain", help="the history of one partition, readable")
    p.add_argument("source", help="a replay output folder or an audit table (a path, or a URI read with the "
                                  "cloud's environment credentials: docs/deploy.md, \"Storage\")")
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", required=True, type=int)
    p.set_defaults(func=_cmd_explain)

    p = sub.add_parser("report", help="the incident report, one self-contained HTML file, of a replay's output folder "
                                      "or of a run's tables")
    p.add_argument("source", type=Path, metavar="DIR_OR_LAKE",
                   help="a replay's --out folder, or LAKE: the local folder of a run's audit table (its decisions, "
                        "observed and agreement tables beside it)")
    p.add_argument("--out", type=Path, metavar="FILE",
                   help="the HTML file to write (default: DIR/report.html for a replay's folder, LAKE-report.html "
                        "beside a run's LAKE)")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("inspect", help="current state records read from a checkpoint's state store")
    p.add_argument("checkpoint_dir",
                   help="the checkpoint root given to run (or its partitions/ query folder), a path or a URI")
    p.add_argument("--topic")
    p.add_argument("--partition", type=int)
    p.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    _add_spark_options(p)
    p.set_defaults(func=_cmd_inspect)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # kafka-python logs every reconnect and coordinator change as a warning; --verbose shows them.
    logging.getLogger("kafka").setLevel(logging.INFO if getattr(args, "verbose", False) else logging.ERROR)
    try:
        code = args.func(args)
    except (UsageError, FileNotFoundError) as exc:
        print(f"isrflow {args.command}: {exc}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
