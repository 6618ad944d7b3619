"""What the admin tools write (Kafka's AdminZkClient): requests under `/admin/`, and configs under `/config/`.

- `create /admin/delete_topics/T` -> DeleteTopic; `/admin/reassign_partitions` -> ReassignPartitions;
  `/admin/preferred_replica_election` -> ElectLeaders PREFERRED.
- `/config/topics/T` -> AlterTopicConfig (a topic being created: its CreateTopic carries them);
  `/config/brokers/<default>` -> AlterTopicConfig of each topic without its own value of a default the rules read.
"""

from __future__ import annotations

import json

from streaming.zookeeper.context import BROKER_DEFAULTS, INHERITED, Cause, Context
from streaming.zookeeper.txnlog import ZkTxn, ZnodeOp


def config_change(ctx: Context, txn: ZkTxn, op: ZnodeOp) -> None:
    """A write of `/config/topics/T` or of `/config/brokers/<default>`."""
    if op.kind not in ("create", "setData", "delete"):
        return
    values = {} if op.kind == "delete" else dict(json.loads(op.data or b"{}").get("config", {}))
    if op.path == BROKER_DEFAULTS:
        changed = {k: values.get(k) for k in INHERITED if values.get(k) != ctx.cluster_configs.get(k)}
        ctx.cluster_configs = values
        for topic in sorted(ctx.topics):
            own = {k: v for k, v in changed.items() if k not in ctx.configs.get(topic, {})}
            if own:
                _config_event(ctx, txn, topic, own, f"-{topic}")
        return
    topic = op.path.split("/")[3]
    old = ctx.configs.get(topic, {})
    ctx.configs[topic] = values
    if topic not in ctx.topics:
        return  # a topic being created: its CreateTopic carries them
    changed = {k: v for k, v in values.items() if old.get(k) != v}
    for k in old.keys() - values.keys():
        changed[k] = ctx.cluster_configs.get(k) if k in INHERITED else None
    if changed:
        _config_event(ctx, txn, topic, changed)


def _config_event(ctx: Context, txn: ZkTxn, topic: str, configs: dict[str, str | None], suffix: str = "") -> None:
    event = ctx.event(txn, "AlterTopicConfig", suffix, topic=topic, configs=configs)
    ctx.cause(Cause(event, "CONFIG", topic=topic))


def admin_request(ctx: Context, txn: ZkTxn, op: ZnodeOp) -> None:
    """A write under `/admin/`."""
    path = op.path
    if path.startswith("/admin/delete_topics/"):
        topic = path.rsplit("/", 1)[1]
        if op.kind == "create" and topic in ctx.topics and topic not in ctx.deleting:
            ctx.deleting.add(topic)
            event = ctx.event(txn, "DeleteTopic", f"-{topic}", topic=topic)
            ctx.cause(Cause(event, "DELETE", topic=topic))
        elif op.kind == "delete":
            ctx.deleting.discard(topic)
    elif path == "/admin/reassign_partitions":
        if op.kind == "delete":
            ctx.znode_reassignments.clear()
            return
        wanted = {(p["topic"], p["partition"]): tuple(p["replicas"])
                  for p in json.loads(op.data or b"{}").get("partitions", [])}
        new = {k: r for k, r in wanted.items() if ctx.znode_reassignments.get(k) != r}
        ctx.znode_reassignments = wanted
        if op.kind == "create" and new:
            event = ctx.event(txn, "ReassignPartitions", partitions=[
                {"topic": t, "partition": p, "replicas": list(r)} for (t, p), r in sorted(new.items())])
            ctx.cause(Cause(event, "PARTITIONS", partitions=set(new)))
    elif path == "/admin/preferred_replica_election" and op.kind == "create":
        refs = sorted({(p["topic"], p["partition"]) for p in json.loads(op.data or b"{}").get("partitions", [])})
        event = ctx.event(txn, "ElectLeaders", election_type="PREFERRED",
                          partitions=[{"topic": t, "partition": p} for t, p in refs])
        ctx.cause(Cause(event, "PREFERRED", partitions=set(refs)))
