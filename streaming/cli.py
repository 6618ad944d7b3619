"""`isrflow` (also `python -m streaming`): demo, run, replay, and the tools around them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from statemachine.controller import ControllerConfig

Command = Callable[[argparse.Namespace], int]


def key_values(pairs: Sequence[str] | None, flag: str = "--conf") -> dict[str, str]:
    """`--conf k=v` style pairs as a dict; a pair without a key or `=` is a ValueError (exit 2)."""
    out: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{flag} takes key=value, got '{pair}'")
        out[key.strip()] = value
    return out


def _add_controller_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("cluster defaults (Kafka's names and defaults)")
    g.add_argument("--unclean-leader-election-enable", choices=("true", "false"), default="false")
    g.add_argument("--auto-leader-rebalance-enable", choices=("true", "false"), default="true")
    g.add_argument("--leader-imbalance-per-broker-percentage", type=int, default=10)
    g.add_argument("--super-users", help="comma-separated principals allowed to issue admin commands "
                                         "(default: anyone)")


def controller_config(args: argparse.Namespace) -> ControllerConfig:
    return ControllerConfig(
        unclean_leader_election_enable=args.unclean_leader_election_enable == "true",
        auto_leader_rebalance_enable=args.auto_leader_rebalance_enable == "true",
        leader_imbalance_per_broker_percentage=args.leader_imbalance_per_broker_percentage,
        super_users=frozenset(s.strip() for s in args.super_users.split(",")) if args.super_users else None,
    )


def _add_spark_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master", default="local[2]", help="Spark master URL (default local[2])")
    p.add_argument("--conf", action="append", metavar="spark.k=v", help="extra Spark configuration")


def _cmd_replay(args: argparse.Namespace) -> int:
    from streaming.replay import replay

    return replay(args)


def _cmd_run(args: argparse.Namespace) -> int:
    from streaming.run import run

    return run(args)


def _cmd_demo(args: argparse.Namespace) -> int:
    from streaming.demo import demo

    return demo(args)


def _cmd_check(args: argparse.Namespace) -> int:
    from streaming.quality import check_command

    return check_command(args)


def _cmd_explain(args: argparse.Namespace) -> int:
    from streaming.explain import explain_command

    return explain_command(args)


def _cmd_inspect(args: argparse.Namespace) -> int:
    from streaming.inspect_state import inspect_command

    return inspect_command(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="isrflow", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="the main job on embedded defaults: local Spark, a local Kafka broker, "
                                    "the bundled incident scenario")
    p.add_argument("--port", type=int, default=9092, help="the local broker's port (default 9092)")
    p.add_argument("--work-dir", type=Path, default=Path("out/demo"), help="tables and checkpoints of the demo")
    _add_spark_options(p)
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser("run", help="the long-running streaming query")
    p.add_argument("--bootstrap-servers", required=True)
    p.add_argument("--events-topic", required=True)
    p.add_argument("--decisions-topic", required=True)
    p.add_argument("--audit-table", required=True, type=Path)
    p.add_argument("--checkpoint-dir", type=Path, default=Path("checkpoints"),
                   help="root of the queries' checkpoints (default checkpoints/)")
    p.add_argument("--lake-dir", type=Path,
                   help="where bronze, commands, decisions and quarantine tables go (default: beside the audit table)")
    p.add_argument("--trigger", default="5 seconds",
                   help="processing-time interval, e.g. '5 seconds', or 'available-now' for one bounded run")
    p.add_argument("--kafka-option", action="append", metavar="k=v",
                   help="Kafka source option, e.g. maxOffsetsPerTrigger=1000 or kafka.security.protocol=SSL")
    p.add_argument("--starting-offsets", default="earliest")
    p.add_argument("--quality", action="store_true",
                   help="run the data-quality suite on each micro-batch's audit rows; results to a 'quality' "
                        "Delta table beside the audit, summary in the progress line")
    _add_spark_options(p)
    _add_controller_options(p)
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("replay", help="replay an event log (JSONL file or folder, or kafka://HOST:PORT/TOPIC)")
    p.add_argument("source")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--engine", choices=("spark", "local"), default="spark")
    p.add_argument("--batch-size", type=int, default=0,
                   help="events per micro-batch with the spark engine (default: all at once)")
    bounds = p.add_argument_group("bounds of a kafka:// source (default: from the beginning to the current end)")
    bounds.add_argument("--from-offset", type=int, help="first offset (inclusive)")
    bounds.add_argument("--to-offset", type=int, help="last offset (exclusive)")
    bounds.add_argument("--from", dest="from_time", metavar="ISO-8601", help="first record at or after this time")
    bounds.add_argument("--to", dest="to_time", metavar="ISO-8601", help="stop before the first record at this time")
    _add_spark_options(p)
    _add_controller_options(p)
    p.set_defaults(func=_cmd_replay)

    p = sub.add_parser("check", help="the data-quality suite on an audit table; exit 1 when an expectation fails")
    p.add_argument("audit_table", type=Path)
    p.add_argument("--since-batch", type=int, help="only audit rows of micro-batches >= N")
    p.add_argument("--html", type=Path, help="folder for Great Expectations' HTML results")
    _add_spark_options(p)
    p.set_defaults(func=_cmd_check)

    p = sub.add_parser("explain", help="the history of one partition, readable")
    p.add_argument("source", type=Path, help="a replay output folder or an audit table")
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", required=True, type=int)
    p.set_defaults(func=_cmd_explain)

    p = sub.add_parser("inspect", help="current state records read from a checkpoint's state store")
    p.add_argument("checkpoint_dir", type=Path,
                   help="the checkpoint root given to run (or its partitions/ query folder)")
    p.add_argument("--topic")
    p.add_argument("--partition", type=int)
    p.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    _add_spark_options(p)
    p.set_defaults(func=_cmd_inspect)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (FileNotFoundError, ValueError) as exc:
        print(f"isrflow: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
