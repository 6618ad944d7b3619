"""The project's SparkSession, and the one place for Spark settings: Delta and the Kafka connector on the
classpath, quiet logging, and two sizings: small-machine settings (demo, replays, tests) and production
settings for `run`, whose state partitions are fixed for the life of a checkpoint."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import SparkSession

from streaming.engine import connectors
from streaming.errors import UsageError
from streaming.io.storage import Location, Storage

LOG4J2_CONFIG = Path(__file__).resolve().with_name("log4j2.properties")
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
# Keys of `conf` that are isrflow's own choices, not Spark's (the CLI's --jars and --verbose).
JARS_KEY, VERBOSE_KEY = "isrflow.jars", "isrflow.verbose"
# Spark's own default, kept by `run`: the state store of applyInPandasWithState gets this many partitions.
DEFAULT_STATE_PARTITIONS = 200


def spark_tmp() -> Path:
    """Spark's scratch space: the checkout's git-ignored cache, or the system's temp dir for an installed wheel."""
    if connectors.in_checkout():
        return connectors.CACHE / "spark-tmp"
    return Path(tempfile.gettempdir()) / "isrflow-spark"


# The driver's heap on a small machine, enough for REPLAY_BATCH_EVENTS events a micro-batch (replay_sizing).
DRIVER_MEMORY_MIB = 1024


def small_machine_conf() -> dict[str, str]:
    """Sized to 2 cores: Spark's 200 shuffle partitions and Delta's 50 log-replay partitions are that many
    tiny tasks per micro-batch or table read (a first Delta read of a 1-commit table took 24 s)."""
    tmp = spark_tmp()
    return {
        SHUFFLE_PARTITIONS: "2",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.ui.enabled": "false",
        "spark.sql.warehouse.dir": str(tmp / "warehouse"),
        "spark.local.dir": str(tmp / "local"),
        "spark.driver.memory": f"{DRIVER_MEMORY_MIB}m",
    }


# A bounded replay's events per micro-batch when none is asked: big_replay.py's 100,000-partition log (892,368
# events) ran at this size in the driver's default 1 GiB heap; the whole log in one micro-batch did not (the staging
# task alone was 248 MB). docs/performance.md, "A 100,000-partition log".
REPLAY_BATCH_EVENTS = 100_000


def replay_sizing(events: int | None, batch_size: int | None, machine_bytes: int | None = None
                  ) -> tuple[int, dict[str, str]]:
    """A bounded replay's events per micro-batch (0: the whole log in one) and the driver memory for it, from the
    log's size: `batch_size` when asked (0: one micro-batch), else the whole log when it holds at most
    REPLAY_BATCH_EVENTS events (or its size is not known), else that many. The driver's heap: 1 GiB per
    REPLAY_BATCH_EVENTS events of the largest micro-batch, at least 1 GiB and at most half the machine's memory."""
    if batch_size is None:
        batch_size = REPLAY_BATCH_EVENTS if events is not None and events > REPLAY_BATCH_EVENTS else 0
    largest = batch_size or events or 0
    if machine_bytes is None:
        machine_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    mib = min(max(DRIVER_MEMORY_MIB, -(-largest * DRIVER_MEMORY_MIB // REPLAY_BATCH_EVENTS)),
              max(DRIVER_MEMORY_MIB, machine_bytes // 2 // (1 << 20)))
    return batch_size, {"spark.driver.memory": f"{mib}m"} if mib > DRIVER_MEMORY_MIB else {}


def quiet_logging_conf() -> dict[str, str]:
    """Our log4j2 file for the driver and executor JVMs, read when each JVM starts (so before the session)."""
    option = f"-Dlog4j.configurationFile=file:{LOG4J2_CONFIG}"
    return {"spark.driver.extraJavaOptions": option, "spark.executor.extraJavaOptions": option}


def base_conf() -> dict[str, str]:
    return {
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        # The partition query's state: RocksDB writes what a batch changed (changelog checkpointing); the
        # default HDFS-backed store copies every partition's record into a new map each micro-batch, so a
        # one-event batch would cost more the larger the cluster. A checkpoint keeps the provider it began with.
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    }


def recorded_state_partitions(checkpoint_dirs: Sequence[Location], storage: Storage | None = None) -> int | None:
    """The shuffle partitions a checkpoint was started with, as Spark wrote them into its newest offset log
    entry (`offsets/<batch>`: a version line, then metadata JSON whose conf Spark re-applies on restart)."""
    storage = storage or Storage()
    for directory in checkpoint_dirs:
        offsets = directory / "offsets"
        batches = sorted((int(name) for name in storage.names(offsets) if name.isdigit()), reverse=True)
        for batch in batches:
            lines = storage.read_text(offsets / str(batch)).splitlines()
            conf = json.loads(lines[1]).get("conf", {}) if len(lines) > 1 else {}
            if SHUFFLE_PARTITIONS in conf:
                return int(conf[SHUFFLE_PARTITIONS])
    return None


def state_partitions_conf(requested: int | None, checkpoint_dirs: Sequence[Location],
                          storage: Storage | None = None) -> dict[str, str]:
    """spark.sql.shuffle.partitions for `run`: the checkpoint's own value on a restart (asking for another one
    is a UsageError), else `requested`, else Spark's default."""
    recorded = recorded_state_partitions(checkpoint_dirs, storage)
    if requested is not None and requested < 1:
        raise UsageError(f"--state-partitions must be at least 1, got {requested}")
    if recorded is not None and requested is not None and requested != recorded:
        raise UsageError(
            f"--state-partitions {requested}: the checkpoint in {checkpoint_dirs[0].parent} was started with "
            f"{recorded} state partitions, and Spark fixes them for the life of a checkpoint (the state store "
            f"is split by them). Run with --state-partitions {recorded}, or start a new checkpoint directory "
            "(and new tables) to change it.")
    return {SHUFFLE_PARTITIONS: str(recorded or requested or DEFAULT_STATE_PARTITIONS)}


def under_spark_submit() -> bool:
    """True in a driver that spark-submit started: its JVM, classpath and log4j are already set."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def default_master() -> str | None:
    """local[2], unless spark-submit already chose the master (None: keep its choice)."""
    return None if under_spark_submit() else "local[2]"


def session_conf(conf: dict[str, str] | None = None, small_machine: bool = True) -> dict[str, str]:
    """Every setting of a new session: ours, then `conf` on top. In `conf`, `isrflow.verbose=true` leaves
    Spark's own logging (its log4j2 defaults) in place and `isrflow.jars` lists connector jars to use instead
    of the cache or the Maven coordinates. `small_machine` applies the 2-core settings; without it Spark's
    and Delta's defaults stand except what `conf` sets."""
    user = dict(conf or {})
    jars = user.pop(JARS_KEY, "").split(",")
    verbose = user.pop(VERBOSE_KEY, "false") == "true"
    settings = base_conf()
    if not under_spark_submit():  # else spark-submit's --packages/--jars and --driver-java-options decide
        settings.update(connectors.spark_jar_conf(jars))
        if not verbose:
            settings.update(quiet_logging_conf())
    if small_machine:
        settings.update(small_machine_conf())
    for key in ("spark.jars", "spark.jars.packages", "spark.driver.extraJavaOptions",
                "spark.executor.extraJavaOptions"):
        if key in user and key in settings:  # add to ours rather than drop Delta, Kafka or the log config
            user[key] = f"{settings[key]}{' ' if 'JavaOptions' in key else ','}{user[key]}"
    return {**settings, **user}


def build_spark(
    app_name: str = "isrflow", master: str | None = None, conf: dict[str, str] | None = None, *,
    small_machine: bool = True,
) -> SparkSession:
    """Create (or return the process's existing) SparkSession with `session_conf(conf, small_machine)`."""
    # Python workers must run this interpreter, or they miss the venv's packages (pandas, pyarrow, ours).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = SparkSession.builder.appName(app_name)
    master = master or default_master()
    if master:
        builder = builder.master(master)
    for key, value in session_conf(conf, small_machine).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
