"""How far a replay of a real controller's history can be trusted, said first: what the import could not model
(record kinds isrflow does not read, partition changes no event explains, levels or records it cannot decode), and
how much of the controller's own decisions and partition histories isrflow reproduced.

The import writes what it found to `DIR/history.json` (`ImportFacts`), so that `isrflow report DIR` says it again
without the log; `trust_warnings` turns those facts and the agreement figures into the warnings the report and the
replay's printed summary start with.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

HISTORY_FACTS = "history.json"
# Over this share of the controller's decisions (or partition histories) that isrflow does not reproduce, its
# replay is not the cluster's story: the report tells the controller's own records first and says so.
DISAGREEMENT_SHARE = 0.01
# KRaft record kinds that change no partition, broker or feature: not modelling them costs nothing.
NO_PARTITION_EFFECT = frozenset({
    "NO_OP_RECORD", "PRODUCER_IDS_RECORD", "ACCESS_CONTROL_ENTRY_RECORD", "REMOVE_ACCESS_CONTROL_ENTRY_RECORD",
    "CLIENT_QUOTA_RECORD", "USER_SCRAM_CREDENTIAL_RECORD", "REMOVE_USER_SCRAM_CREDENTIAL_RECORD",
    "DELEGATION_TOKEN_RECORD", "REMOVE_DELEGATION_TOKEN_RECORD", "ZK_MIGRATION_STATE_RECORD",
})


@dataclass(frozen=True)
class ImportFacts:
    """What the import of a real history could not model."""

    # Record kinds (KRaft) or parts of the log (ZooKeeper: a torn tail, ...) isrflow read no event from, with counts.
    not_modelled: dict[str, int] = field(default_factory=dict)
    # The controller's partition changes that match no event isrflow models (kept in observed, no event).
    unexplained: int = 0
    # The import's own warnings (a metadata.version it does not know, records no decoder could read).
    warnings: list[str] = field(default_factory=list)

    def write(self, out: Path) -> None:
        (out / HISTORY_FACTS).write_text(json.dumps(asdict(self), sort_keys=True) + "\n", encoding="utf-8")

    @classmethod
    def read(cls, out: Path) -> ImportFacts | None:
        """The facts a replay wrote beside its outputs, or None (not a replay of a real history)."""
        path = out / HISTORY_FACTS
        return cls(**json.loads(path.read_text(encoding="utf-8"))) if path.exists() else None

    @property
    def not_modelled_with_effect(self) -> dict[str, int]:
        return {kind: n for kind, n in sorted(self.not_modelled.items()) if kind not in NO_PARTITION_EFFECT}


@dataclass(frozen=True)
class AgreementFigures:
    """The agreement in numbers: per decision of the controller's, per partition history."""

    decisions: int
    disagreements: int
    partitions: int = 0
    partitions_equal: int = 0

    @property
    def rate(self) -> float:
        return (self.decisions - self.disagreements) / self.decisions if self.decisions else 1.0

    @property
    def beyond_share(self) -> bool:
        """isrflow disagrees on more than DISAGREEMENT_SHARE of the decisions or of the histories."""
        differing = self.partitions - self.partitions_equal
        return (self.disagreements > DISAGREEMENT_SHARE * self.decisions
                or differing > DISAGREEMENT_SHARE * self.partitions)

    def counted(self) -> str:
        histories = (f" and {self.partitions_equal} of {self.partitions} partition histories"
                     if self.partitions else "")
        return (f"{self.rate:.1%} of the controller's {self.decisions} decisions ({self.disagreements} "
                f"disagree){histories}")


def trust_warnings(facts: ImportFacts | None, figures: AgreementFigures | None) -> list[str]:
    """The warnings a replay of a real history starts with (empty when isrflow modelled the whole log and agrees
    within DISAGREEMENT_SHARE)."""
    out: list[str] = []
    if figures is not None and figures.beyond_share:
        out.append(f"isrflow's replay differs from the controller: it reproduces {figures.counted()}. The report's "
                   f"\"What happened\" is told from the controller's own records, with isrflow's differences marked.")
    if facts is not None:
        kinds = facts.not_modelled_with_effect
        if kinds:
            out.append("the log holds record kinds isrflow does not model: "
                       + ", ".join(f"{kind} x{n}" for kind, n in kinds.items())
                       + ". isrflow's replay leaves them out.")
        if facts.unexplained:
            out.append(f"{facts.unexplained} of the controller's partition changes match no event isrflow models "
                       f"(unexplained): isrflow's replay does not make them.")
        out.extend(facts.warnings)
    return out

