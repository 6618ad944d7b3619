"""The project's SparkSession: Delta and the Kafka connector on the classpath, sized for a small machine."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from streaming.engine import connectors

SPARK_TMP = connectors.CACHE / "spark-tmp"


def default_conf() -> dict[str, str]:
    return {
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        # Local jars cached by `make jars`, so sessions start offline and resolve nothing.
        **connectors.spark_jar_conf(),
        # Sized to 2 cores: Spark's 200 shuffle partitions and Delta's 50 log-replay partitions are that many
        # tiny tasks per micro-batch or table read (a first Delta read of a 1-commit table took 24 s).
        "spark.sql.shuffle.partitions": "2",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.warehouse.dir": str(SPARK_TMP / "warehouse"),
        "spark.local.dir": str(SPARK_TMP / "local"),
        "spark.driver.memory": "1g",
        # The partition query's state: RocksDB writes what a batch changed (changelog checkpointing); the
        # default HDFS-backed store copies every partition's record into a new map each micro-batch, so a
        # one-event batch would cost more the larger the cluster. A checkpoint keeps the provider it began with.
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    }


def build_spark(
    app_name: str = "isrflow", master: str = "local[2]", conf: dict[str, str] | None = None
) -> SparkSession:
    """Create (or return the process's existing) SparkSession; `conf` entries override the defaults."""
    # Python workers must run this interpreter, or they miss the venv's packages (pandas, pyarrow, ours).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    settings = default_conf()
    user = dict(conf or {})
    if "spark.jars" in user:  # add to our connectors rather than drop Delta and Kafka
        user["spark.jars"] = f"{settings['spark.jars']},{user['spark.jars']}"
    settings.update(user)

    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
