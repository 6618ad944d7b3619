"""`run --metrics-port`: Prometheus metrics of the shadow controller, served from the driver.

Three kinds, all kept on the driver, in one registry of their own (not prometheus_client's global one, so
two pipelines in one process never share a counter):

- the shadow's view of the cluster (`ClusterView`): the latest state, leader, ISR and replicas of every
  partition, taken from each micro-batch's audit rows; the gauges (offline, under-replicated, under min ISR,
  leaderless, preferred replica imbalance, leaders per broker) are counted from it at scrape time;
- counters of what the partition query decided and refused, and of the records the sequencer quarantined;
- the queries' health: the newest decided event's offset and its lag, micro-batch durations, state rows.

The names mirror Kafka's controller and broker metrics where Kafka has one (in each help text).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from schemas.records import audit_sort_key, parse_ts
from statemachine.controller import MIN_ISR_CONFIG
from statemachine.record import NO_LEADER, PartitionRecord
from statemachine.states import PartitionState

# The audit columns the metrics read: the partition query collects only these to the driver.
AUDIT_COLUMNS = ("source_offset", "step", "topic", "partition", "outcome", "error", "to_state", "leader_after",
                 "isr_after", "replicas_after", "event_ts")

UNCLEAN = "OFFLINE_UNCLEAN"
# A decision that elected no leader (an ISR change, a reassignment step) is counted under this election label.
NO_ELECTION = "NONE"
# Spark micro-batches take from a fraction of a second to minutes (a broker failure on a big cluster).
BATCH_SECONDS_BUCKETS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, float("inf"))

Key = tuple[str, int]

# Every metric's help text (counters without their `_total`), naming Kafka's metric where Kafka has one.
HELP = {
    "isrflow_partitions": "Partitions in the shadow's view (Kafka: "
                          "kafka.controller:type=KafkaController,name=GlobalPartitionCount)",
    "isrflow_offline_partitions": "Partitions in OfflinePartition state (Kafka: "
                                  "kafka.controller:type=KafkaController,name=OfflinePartitionsCount)",
    "isrflow_under_replicated_partitions": "Partitions whose ISR is smaller than their replicas (Kafka, per leader: "
                                           "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions)",
    "isrflow_under_min_isr_partitions": "Partitions whose ISR is below the topic's min.insync.replicas (Kafka, per "
                                        "leader: kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount)",
    "isrflow_leaderless_partitions": "Partitions without a leader (leader -1; what the KRaft controller's "
                                     "OfflinePartitionsCount counts)",
    "isrflow_preferred_replica_imbalance_partitions": "Partitions whose leader is not their first replica (Kafka: "
                                                      "kafka.controller:type=KafkaController,"
                                                      "name=PreferredReplicaImbalanceCount)",
    "isrflow_leaders": "Partitions the broker leads (Kafka, per broker: kafka.server:type=ReplicaManager,"
                       "name=LeaderCount)",
    "isrflow_decisions": "LeaderAndIsr decisions the shadow made, by election (NONE: no leader elected, e.g. an "
                         "ISR change)",
    "isrflow_unclean_leader_elections": "Unclean leader elections the shadow made (Kafka: "
                                        "kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec)",
    "isrflow_rejections": "Events or partition changes the shadow refused, by Kafka error name (audit outcome "
                          "REJECTED)",
    "isrflow_quarantined_records": "Event log records that could not be read as an event (quarantine table)",
    "isrflow_controller_decisions_compared": "The real controller's partition changes compared with the shadow's "
                                             "decisions (behind `isrflow bridge`: the agreement table's rows), by "
                                             "the cause event's type",
    "isrflow_disagreements": "Agreement rows where the shadow and the real controller differ (leader, ISR, epochs, "
                             "recovery state, ELR), by the cause event's type",
    "isrflow_last_event_offset": "Offset in the events topic (source_offset) of the newest event the partition "
                                 "query has decided",
    "isrflow_last_event_lag_seconds": "Seconds from the newest decided event's ts to now",
    "isrflow_micro_batch_duration_seconds": "Duration of a streaming micro-batch, by query",
    "isrflow_state_rows": "Rows in the partition query's state store (one per partition), at its last micro-batch",
}


@dataclass(frozen=True, slots=True)
class PartitionView:
    """One partition as its newest audit row left it."""

    state: str
    leader: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]


@dataclass(frozen=True)
class ClusterGauges:
    """The gauges of the shadow's view of the cluster, counted over its partitions."""

    partitions: int
    offline: int
    under_replicated: int
    under_min_isr: int
    leaderless: int
    preferred_replica_imbalance: int
    leaders: dict[int, int]  # broker -> partitions it leads; 0 for a broker that only holds replicas


class ClusterView:
    """The latest state of each existing partition, from audit rows in log order. A deleted partition leaves the
    map, so it holds at most one entry per partition of the cluster. Every partition row carries the state after
    the event (a rejected one the unchanged state), so any row of a partition is a complete picture of it."""

    def __init__(self) -> None:
        self.partitions: dict[Key, PartitionView] = {}
        # min.insync.replicas of the topics whose config sets it (as the event log set it); others: the default.
        self.min_insync_replicas: dict[str, int] = {}

    def apply(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in sorted((r for r in rows if r["partition"] is not None), key=audit_sort_key):
            key = (row["topic"], int(row["partition"]))
            if row["to_state"] in (None, PartitionState.NON_EXISTENT):
                self.partitions.pop(key, None)
                continue
            leader = row["leader_after"]
            self.partitions[key] = PartitionView(
                row["to_state"], NO_LEADER if leader is None else int(leader), tuple(row["isr_after"] or ()),
                tuple(row["replicas_after"] or ()))

    def seed(self, records: Iterable[PartitionRecord]) -> None:
        """Start from the controller's own records (the sequencer's saved state) instead of an empty view."""
        for r in records:
            self.partitions[(r.topic, r.partition)] = PartitionView(r.state.value, r.leader, r.isr, r.replicas)

    def gauges(self, default_min_insync_replicas: int = 1) -> ClusterGauges:
        offline = under_replicated = under_min_isr = leaderless = imbalance = 0
        leaders: dict[int, int] = {}
        for (topic, _), p in self.partitions.items():
            for broker in p.replicas:
                leaders.setdefault(broker, 0)
            offline += p.state == PartitionState.OFFLINE
            under_replicated += len(p.isr) < len(p.replicas)
            under_min_isr += len(p.isr) < self.min_insync_replicas.get(topic, default_min_insync_replicas)
            if p.leader == NO_LEADER:
                leaderless += 1
            else:
                leaders[p.leader] = leaders.get(p.leader, 0) + 1
            # Kafka counts a leaderless partition too: its leader (none) is not the preferred replica.
            imbalance += bool(p.replicas) and p.leader != p.replicas[0]
        return ClusterGauges(len(self.partitions), offline, under_replicated, under_min_isr, leaderless, imbalance,
                             dict(sorted(leaders.items())))


def topic_min_insync_replicas(topic_configs: Mapping[str, Mapping[str, str]]) -> dict[str, int]:
    """The topics whose configs set min.insync.replicas (the controller's cluster view holds them as the event log
    set them: CreateTopic, AlterTopicConfig, a PartitionSnapshot's configs), with their value."""
    return {topic: int(configs[MIN_ISR_CONFIG]) for topic, configs in topic_configs.items()
            if MIN_ISR_CONFIG in configs}


class ShadowMetrics:
    """Every metric of one pipeline, in its own registry. Fed by the sequencer's and the partition query's
    foreachBatch writers and by a query listener (each on a driver thread of its own), read by the HTTP server's
    thread: the cluster view and the last event are behind a lock."""

    def __init__(self, default_min_insync_replicas: int = 1) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics

        # Else each counter and histogram also serves a `*_created` series (when it was created): Prometheus reads
        # a counter's reset from the counter itself, and docs/operations.md lists every series served. The switch
        # is prometheus_client's, for the whole process, whose only registry is this one.
        disable_created_metrics()
        self.registry = CollectorRegistry(auto_describe=True)
        self.default_min_insync_replicas = default_min_insync_replicas
        self.view = ClusterView()
        self._lock = threading.Lock()
        self._last_offset: int | None = None
        self._last_ts: float | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None
        r = self.registry
        self.decisions = Counter("isrflow_decisions", HELP["isrflow_decisions"], ["election"], registry=r)
        self.unclean_elections = Counter("isrflow_unclean_leader_elections", HELP["isrflow_unclean_leader_elections"],
                                         registry=r)
        self.rejections = Counter("isrflow_rejections", HELP["isrflow_rejections"], ["error"], registry=r)
        self.quarantined = Counter("isrflow_quarantined_records", HELP["isrflow_quarantined_records"], registry=r)
        self.compared = Counter("isrflow_controller_decisions_compared",
                                HELP["isrflow_controller_decisions_compared"], ["cause"], registry=r)
        self.disagreements = Counter("isrflow_disagreements", HELP["isrflow_disagreements"], ["cause"], registry=r)
        self.batch_seconds = Histogram("isrflow_micro_batch_duration_seconds",
                                       HELP["isrflow_micro_batch_duration_seconds"], ["query"],
                                       buckets=BATCH_SECONDS_BUCKETS, registry=r)
        self.state_rows = Gauge("isrflow_state_rows", HELP["isrflow_state_rows"], registry=r)
        r.register(_ViewCollector(self))

    # -- fed by the pipeline --------------------------------------------------------------------------
    def observe_sequenced(self, quarantined: int, topic_configs: Mapping[str, Mapping[str, str]]) -> None:
        """A sequencer micro-batch: its quarantined records, and the topic configs as its events left them."""
        self.quarantined.inc(quarantined)
        min_isr = topic_min_insync_replicas(topic_configs)
        with self._lock:
            self.view.min_insync_replicas = min_isr

    def seed(self, records: Iterable[PartitionRecord], topic_configs: Mapping[str, Mapping[str, str]]) -> None:
        """The cluster as a restarted run's checkpoint left it (the sequencer's saved state), so the gauges count
        every partition before the first micro-batch, not only those decided since the start."""
        min_isr = topic_min_insync_replicas(topic_configs)
        with self._lock:
            self.view.seed(records)
            self.view.min_insync_replicas = min_isr

    def observe_decided(self, audit_rows: list[Mapping[str, Any]], decisions: Iterable[Mapping[str, Any]]) -> None:
        """A partition micro-batch: its audit rows (AUDIT_COLUMNS at least) and decisions."""
        for d in decisions:
            election = d.get("election") or NO_ELECTION
            self.decisions.labels(election).inc()
            if election == UNCLEAN:
                self.unclean_elections.inc()
        for row in audit_rows:
            if row["outcome"] == "REJECTED":
                self.rejections.labels(row["error"] or "UNKNOWN").inc()
        newest = max(audit_rows, key=audit_sort_key, default=None)
        with self._lock:
            self.view.apply(audit_rows)
            if newest is not None and (self._last_offset is None or newest["source_offset"] >= self._last_offset):
                self._last_offset = int(newest["source_offset"])
                ts = parse_ts(newest["event_ts"])
                self._last_ts = None if ts is None else ts.timestamp()

    def observe_agreement(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """A partition micro-batch's agreement rows (behind `isrflow bridge`). A batch re-run after a failure
        recomputes its rows and counts them again: the agreement table, idempotent per batch, is exact."""
        for row in rows:
            cause = row.get("cause") or "UNKNOWN"
            self.compared.labels(cause).inc()
            if not row["match"]:
                self.disagreements.labels(cause).inc()

    def observe_batch(self, query: str, seconds: float, state_rows: int | None = None) -> None:
        """A query's micro-batch as Spark reported its progress."""
        self.batch_seconds.labels(query).observe(seconds)
        if state_rows is not None:
            self.state_rows.set(state_rows)

    # -- served -----------------------------------------------------------------------------------------
    def serve(self, port: int, addr: str = "0.0.0.0") -> int:
        """Serve the registry over HTTP (any path; /metrics by convention) from a daemon thread; port 0 picks a
        free one. Returns the port."""
        from prometheus_client import start_http_server

        self._server, self._thread = start_http_server(port, addr, registry=self.registry)
        return int(self._server.server_port)

    def close(self) -> None:
        """Stop serving and free the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            if self._thread is not None:
                self._thread.join()
            self._server = self._thread = None

    def _view_families(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        with self._lock:
            g = self.view.gauges(self.default_min_insync_replicas)
            last_offset, last_ts = self._last_offset, self._last_ts
        for name, value in (("isrflow_partitions", g.partitions), ("isrflow_offline_partitions", g.offline),
                            ("isrflow_under_replicated_partitions", g.under_replicated),
                            ("isrflow_under_min_isr_partitions", g.under_min_isr),
                            ("isrflow_leaderless_partitions", g.leaderless),
                            ("isrflow_preferred_replica_imbalance_partitions", g.preferred_replica_imbalance)):
            yield GaugeMetricFamily(name, HELP[name], value=value)
        leaders = GaugeMetricFamily("isrflow_leaders", HELP["isrflow_leaders"], labels=["broker"])
        for broker, count in g.leaders.items():
            leaders.add_metric([str(broker)], count)
        yield leaders
        if last_offset is not None:
            yield GaugeMetricFamily("isrflow_last_event_offset", HELP["isrflow_last_event_offset"], value=last_offset)
        if last_ts is not None:
            # At scrape time: it grows while no event is decided, whether the shadow is stuck or the log quiet.
            yield GaugeMetricFamily("isrflow_last_event_lag_seconds", HELP["isrflow_last_event_lag_seconds"],
                                    value=max(0.0, time.time() - last_ts))


class _ViewCollector:
    """The view's gauges, counted when Prometheus scrapes: nothing to maintain per micro-batch."""

    def __init__(self, metrics: ShadowMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Any]:
        return self.metrics._view_families()


def metrics_listener(metrics: ShadowMetrics) -> Any:
    """A streaming query listener feeding each micro-batch's duration and the state store's rows to `metrics`."""
    from pyspark.sql.streaming import StreamingQueryListener

    class BatchMetrics(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            p = event.progress
            # The partition query's state store (one row per partition); the sequencer keeps no Spark state.
            state_rows = sum(op.numRowsTotal for op in p.stateOperators) \
                if p.stateOperators and p.name == "isrflow-partitions" else None
            metrics.observe_batch(p.name or str(p.id), p.batchDuration / 1000, state_rows)

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    return BatchMetrics()
