"""The Kafka release a KRaft controller runs, where its decisions depend on the release and not on the cluster's
metadata.version: a controller that supports metadata.version up to level L is the release whose latest version
is L (its RegisterControllerRecord names the range; `ControllerRegistration`). Two controllers at the same
metadata.version may decide differently by release:

- `completes_reassignment_once_the_adding_replicas_caught_up`: a reassignment completes once every replica it adds
  is in the ISR (less the replicas it removes) on Kafka 3.7 and from Kafka 4.3 on; Kafka 3.8 to 4.2 wait for every
  target replica (PartitionReassignmentReplicas.maybeCompleteReassignment: a loop over `adding` at tags 3.6.2,
  3.7.0 and 3.7.1 and in kafka-metadata 3.7.2, `containsAll` of the target replicas at tag 3.8.0 and in 3.8.1,
  4.2.0; read from the classes of 4.3.0 and 4.4.0). `waits_for_every_target_when_removing_more`: from 4.3 on, a
  reassignment that removes more replicas than it adds still waits for every target replica (3.7 does not).
- `elects_uncleanly_by_config`: from Kafka 3.9 on, a topic's `unclean.leader.election.enable` (else the cluster
  default, else the controller's own) lets an offline partition elect a replica outside the ISR; the Kafka 3.7 and
  3.8 controllers never do by config, whatever it says (ConfigurationControlManager
  .uncleanLeaderElectionEnabledForTopic returns false, "TODO: support configuring unclean leader election", at tags
  3.7.0 and 3.8.0 and in kafka-metadata 3.8.1; 3.9.1 reads the config). An admin UNCLEAN election still elects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from schemas.events import ControllerRegistration
from statemachine.features import LATEST_PRODUCTION, metadata_version_name

if TYPE_CHECKING:
    from statemachine.controller import Controller, _Fanout

# The newest metadata.version level each KRaft release supports (its MetadataVersion.LATEST_PRODUCTION).
RELEASE_LEVELS = {"3.7": 19, "3.8": 20, "3.9": 21, "4.0": 25, "4.1": 27, "4.2": 29, "4.3": 30, "4.4": 33}
# Without a controller registration in the log: Kafka 4.1's controller, whose rules the kraft rules follow.
DEFAULT_CONTROLLER_LEVEL = LATEST_PRODUCTION
KAFKA_4_3, KAFKA_3_8 = RELEASE_LEVELS["4.3"], RELEASE_LEVELS["3.8"]


def release_name(level: int) -> str:
    """The release of a controller supporting metadata.version up to `level` ("after 4.4" for a newer one's)."""
    known = [name for name, top in RELEASE_LEVELS.items() if top == level]
    if known:
        return known[0]
    newest = max(RELEASE_LEVELS, key=RELEASE_LEVELS.__getitem__)
    return f"after {newest}" if level > RELEASE_LEVELS[newest] else f"supporting up to {metadata_version_name(level)}"


def completes_reassignment_once_the_adding_replicas_caught_up(controller_level: int) -> bool:
    return controller_level < KAFKA_3_8 or controller_level >= KAFKA_4_3


def waits_for_every_target_when_removing_more(controller_level: int) -> bool:
    return controller_level >= KAFKA_4_3


def elects_uncleanly_by_config(controller_level: int) -> bool:
    return controller_level >= RELEASE_LEVELS["3.9"]


def controller_level(controller: Controller) -> int:
    """The release the cluster's controllers run: the newest their registrations name (a rolling upgrade runs the
    new release as soon as one controller does: an approximation, the active one is not in the records). Below
    metadata.version 3.7-IV0 controllers do not register: then the newest release the brokers' registrations name
    (an approximation too: the controllers run the brokers' release)."""
    cv = controller.cluster
    return max(cv.controller_levels.values() or cv.broker_levels.values(), default=controller.config.controller_level)


def on_controller_registration(controller: Controller, ev: ControllerRegistration, out: _Fanout) -> None:
    controller.cluster.controller_levels[ev.controller_id] = ev.max_metadata_version
    out.facts_changed()
    out.cluster(f"controller {ev.controller_id} registered: Kafka {release_name(ev.max_metadata_version)} "
                f"(metadata.version up to {metadata_version_name(ev.max_metadata_version)})")
