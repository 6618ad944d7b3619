"""The prepared audit (Spark): the audit columns plus the `q_*` context columns the rules are written against, and
where a check finds the decisions beside an audit table. A change to the `q_*` columns is a new suite version."""

from __future__ import annotations

from typing import TYPE_CHECKING

from statemachine.errors import Error
from statemachine.record import NO_LEADER
from statemachine.states import PartitionState
from streaming.io.storage import Location, Storage

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

NON_EXISTENT = PartitionState.NON_EXISTENT.value
# The decision columns the rules read.
DECISION_COLUMNS = ("topic", "partition", "source_offset", "partition_epoch", "leader", "leader_epoch", "isr",
                    "replicas", "election", "is_new", "cause_event_id")


def prepare(audit: DataFrame, decisions: DataFrame | None = None, single_partition: bool = True) -> DataFrame:
    """The prepared audit: audit columns plus the rules' context columns. Not cached.

    With `single_partition` (the default, for the audits of one check or one micro-batch) the inputs are first
    coalesced to one partition: the windows and joins then need no shuffle, and the validation's many small
    queries run one task each.

    q_initialised: the incarnation has had a leader (a leader_after, or a non-empty isr_before) by this row;
    q_seq: the row's physical position (the rules predate the audit's step column; rows of one partition and event are
    written in order by one task, so their position orders them); q_incarnation: per partition, the number of
    incarnation starts (from NonExistentPartition to another state) up to the row; q_live: a partition row
    inside an incarnation; q_prev_*: the previous q_live row's epochs in the same incarnation;
    q_prev_max_controller_epoch: the highest controller epoch at earlier offsets (stale rejections aside);
    q_replicas: the row's replicas_after when the audit has that column, else (with decisions) the replicas of
    the partition's latest decision at or before the row; with decisions, q_writes (non-initial decisions of the
    row's partition and event), q_group_epoch_delta and q_group_last (the partition_epoch rise over the event's
    rows of the partition, and its last row)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if single_partition:
        audit = audit.coalesce(1)
        decisions = None if decisions is None else decisions.coalesce(1)
    base = audit.withColumn("q_seq", F.monotonically_increasing_id())
    is_part = F.col("partition").isNotNull()
    from_ne = F.col("from_state").eqNullSafe(NON_EXISTENT)
    to_ne = F.col("to_state").eqNullSafe(NON_EXISTENT)
    so_far = (Window.unboundedPreceding, Window.currentRow)
    by_partition = Window.partitionBy("topic", "partition").orderBy("source_offset", "q_seq").rowsBetween(*so_far)
    df = base.withColumns({
        "q_incarnation": F.when(is_part, F.sum(F.when(from_ne & ~to_ne, 1).otherwise(0)).over(by_partition)),
        "q_live": is_part & ~(from_ne & to_ne),
    })
    chain = Window.partitionBy("topic", "partition", "q_incarnation", "q_live").orderBy("source_offset", "q_seq")
    had_leader = (F.col("leader_after") != NO_LEADER) | (F.size("isr_before") > 0)
    own_replicas = "replicas_after" in audit.columns
    df = df.withColumns({
        "q_initialised": F.col("q_live") & (F.max(F.when(had_leader, 1).otherwise(0)).over(
            chain.rowsBetween(*so_far)) == 1),
        "q_prev_leader_epoch_after": F.when(F.col("q_live"), F.lag("leader_epoch_after").over(chain)),
        "q_prev_partition_epoch_after": F.when(F.col("q_live"), F.lag("partition_epoch_after").over(chain)),
        "q_replicas": F.col("replicas_after") if own_replicas else F.lit(None).cast("array<int>"),
    })

    # The highest controller epoch of the earlier offsets: a window over the whole log (one partition anyway).
    stale = F.col("error").eqNullSafe(Error.STALE_CONTROLLER_EPOCH.value)
    per_offset = (base.where(~stale).groupBy("source_offset").agg(F.max("controller_epoch").alias("q_offset_max"))
                  .select("source_offset", F.max("q_offset_max").over(Window.orderBy("source_offset").rowsBetween(
                      Window.unboundedPreceding, -1)).alias("q_earlier_max")))
    df = (df.join(per_offset, "source_offset", "left")
          .withColumn("q_prev_max_controller_epoch", F.when(~stale, F.col("q_earlier_max"))).drop("q_earlier_max"))

    if decisions is not None:
        d = decisions.select(*DECISION_COLUMNS)
        writes = (d.where(~F.col("election").eqNullSafe("INITIAL"))
                  .groupBy("source_offset", "topic", "partition").agg(F.count(F.lit(1)).alias("q_decisions")))
        group = Window.partitionBy("source_offset", "topic", "partition")
        df = df.join(writes, ["source_offset", "topic", "partition"], "left").withColumns({
            "q_writes": F.when(is_part, F.coalesce(F.col("q_decisions"), F.lit(0))),
            "q_group_epoch_delta": F.when(is_part, F.sum(
                F.col("partition_epoch_after") - F.col("partition_epoch_before")).over(group)),
            "q_group_last": is_part & (F.col("q_seq") == F.max("q_seq").over(group)),
        }).drop("q_decisions")
        # Replicas of the latest decision at or before each row: rows and decisions in one per-partition order.
        array = "array<int>"
        rows = base.where(is_part).select("topic", "partition", "source_offset", F.lit(1).alias("k"),
                                          F.col("q_seq").alias("o"), F.lit(None).cast(array).alias("r"))
        decided = d.select("topic", "partition", "source_offset", F.lit(0).alias("k"),
                           F.col("partition_epoch").cast("long").alias("o"), F.col("replicas").cast(array).alias("r"))
        latest = Window.partitionBy("topic", "partition").orderBy("source_offset", "k", "o").rowsBetween(*so_far)
        known = (rows.unionByName(decided).withColumn("q_decided", F.last("r", ignorenulls=True).over(latest))
                 .where(F.col("k") == 1).select(F.col("o").alias("q_seq"), "q_decided"))
        df = (df.join(known, "q_seq", "left").withColumn("q_replicas", F.coalesce("q_replicas", "q_decided"))
              .drop("q_decided"))
    return df.coalesce(1) if single_partition else df


def read_decisions(spark: SparkSession, source: Location) -> DataFrame:
    """Decisions from a `decisions.jsonl` file or a `decisions` Delta table."""
    from schemas.tables import DECISION

    if source.name.endswith(".jsonl"):
        schema = DECISION.without(*(c for c in DECISION.names if c not in DECISION_COLUMNS)).to_spark()
        return spark.read.schema(schema).json(str(source))
    return spark.read.format("delta").load(str(source)).select(*DECISION_COLUMNS)


def find_decisions(audit_table: Location, storage: Storage | None = None) -> Location | None:
    """The decisions beside an audit table: `decisions.jsonl` (replay) or a `decisions` Delta table (run).
    `storage` reaches a URI (default: local paths only)."""
    storage = storage or Storage()
    jsonl = audit_table.parent / "decisions.jsonl"
    if storage.exists(jsonl):
        return jsonl
    table = audit_table.parent / "decisions"
    if is_delta_table(table, storage):
        return table
    return None


def is_delta_table(path: Location, storage: Storage | None = None) -> bool:
    return (storage or Storage()).exists(path / "_delta_log")
