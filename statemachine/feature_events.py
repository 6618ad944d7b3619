"""The finalized feature levels (metadata.version, eligible.leader.replicas.version) the controller decides at:
as the log's UpdateFeatures set them, else as configured (ControllerConfig), and the UpdateFeatures event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from schemas.events import UpdateFeatures
from statemachine.errors import Error, Rejection
from statemachine.features import (
    ELIGIBLE_LEADER_REPLICAS_VERSION,
    METADATA_VERSION,
    is_elr_supported,
    metadata_version_name,
    unknown_metadata_version,
)
from statemachine.rules import eligible_leader_replicas_enabled
from statemachine.zk_releases import KafkaRelease

if TYPE_CHECKING:
    from statemachine.controller import _Fanout


class FeatureEvents:
    """The feature levels of `Controller` (statemachine.controller), which
    supplies the cluster view, the partition records, the config and the queries they use."""

    def feature_level(self, name: str) -> int:
        """The finalized level of a feature: as the log last set it, else as configured (0: off)."""
        level = self.cluster.features.get(name)
        if level is not None:
            return level
        if name == METADATA_VERSION:
            return self.config.metadata_version
        return int(self.config.eligible_leader_replicas) if name == ELIGIBLE_LEADER_REPLICAS_VERSION else 0

    @property
    def metadata_version(self) -> int:
        return self.feature_level(METADATA_VERSION)

    @property
    def elr_on(self) -> bool:
        """Eligible Leader Replicas: the rule set has them and the cluster's feature is on (rules
        .eligible_leader_replicas_enabled)."""
        return self.config.rules.eligible_leader_replicas and eligible_leader_replicas_enabled(
            self.feature_level(ELIGIBLE_LEADER_REPLICAS_VERSION), self.metadata_version)

    # -- features --------------------------------------------------------------------------------------
    def _on_update_features(self, ev: UpdateFeatures, out: _Fanout) -> None:
        """Finalized feature levels from this point of the log on (Kafka's FeatureLevelRecord), checked as
        FeatureControlManager does the dependencies the rules rely on; level 0 turns a feature off."""
        if ev.kafka_version is not None:
            try:
                KafkaRelease.parse(ev.kafka_version)
            except ValueError as e:
                raise Rejection(Error.INVALID_REQUEST, str(e)) from None
        levels = {**self.cluster.features, **ev.features}
        version = levels.get(METADATA_VERSION, self.metadata_version)
        lowest = self.config.rules.minimum_metadata_version
        if METADATA_VERSION in ev.features and version < lowest:
            raise Rejection(Error.INVALID_UPDATE_VERSION,
                            f"{METADATA_VERSION} {version} is below the first version the {self.config.rules.name} "
                            f"rules run at, {lowest}")
        if levels.get(ELIGIBLE_LEADER_REPLICAS_VERSION, 0) >= 1 and not is_elr_supported(version):
            raise Rejection(Error.INVALID_UPDATE_VERSION,
                            f"{ELIGIBLE_LEADER_REPLICAS_VERSION} >= 1 needs {METADATA_VERSION} 4.0-IV1 or later, not "
                            f"{metadata_version_name(version)}")
        before = {name: self.feature_level(name) for name in ev.features}
        self.cluster.features.update(ev.features)
        if ev.kafka_version is not None:
            self.cluster.kafka_version = ev.kafka_version
        out.facts_changed()
        unknown = unknown_metadata_version(version) if METADATA_VERSION in ev.features else None
        out.cluster("features: " + ", ".join(
            f"{name} {before[name]} -> {level}" + (f" ({metadata_version_name(level)})" if name == METADATA_VERSION
                                                   else "") for name, level in sorted(ev.features.items()))
                    + (f"; WARNING: {unknown}" if unknown else "")
                    + (f"; the controllers run Kafka {ev.kafka_version}" if ev.kafka_version is not None else ""))
