"""Where a pipeline's outputs and checkpoints live: the one place that knows the layout. A pipeline's tables
and checkpoints may be local paths or URIs of a Hadoop file system (streaming.io.storage); a replay's output
folder is local."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from streaming.io.storage import Location


@dataclass(frozen=True)
class Lake:
    """Where the pipeline's tables live."""

    audit: Location
    quarantine: Location
    bronze: Location
    commands: Location
    decisions: Location
    quality: Location
    # Behind `isrflow bridge`: the real controller's partition changes, and isrflow's agreement with them.
    observed: Location
    agreement: Location
    # Under the zk rules: the requests the controller sends for each event (the sequencer writes them).
    requests: Location

    @classmethod
    def beside(cls, audit: Location, root: Location | None = None) -> Lake:
        root = root or audit.parent
        return cls(audit=audit, quarantine=root / "quarantine", bronze=root / "bronze",
                   commands=root / "commands", decisions=root / "decisions", quality=root / "quality",
                   observed=root / "observed", agreement=root / "agreement", requests=root / "requests")


@dataclass(frozen=True)
class Checkpoints:
    root: Location

    @property
    def sequencer(self) -> Location:
        return self.root / "sequencer"

    @property
    def sequencer_state(self) -> Location:
        return self.root / "sequencer-state"

    @property
    def partitions(self) -> Location:
        return self.root / "partitions"


@dataclass(frozen=True)
class ReplayOutput:
    """A replay's output folder: `decisions.jsonl`, `audit/` and `quarantine/` (Delta), `report.html`, the ZK
    controller's requests (`requests.jsonl`, `requests/`, Delta), and the Spark engine's working tables and
    checkpoints under `_pipeline/`."""

    root: Path

    @property
    def decisions_jsonl(self) -> Path:
        return self.root / "decisions.jsonl"

    @property
    def audit(self) -> Path:
        return self.root / "audit"

    @property
    def quarantine(self) -> Path:
        return self.root / "quarantine"

    @property
    def requests_jsonl(self) -> Path:
        return self.root / "requests.jsonl"

    @property
    def requests(self) -> Path:
        return self.root / "requests"

    @property
    def report(self) -> Path:
        return self.root / "report.html"

    @property
    def work(self) -> Path:
        return self.root / "_pipeline"

    @property
    def lake(self) -> Lake:
        work = self.work
        return Lake(audit=self.audit, quarantine=self.quarantine, bronze=work / "bronze",
                    commands=work / "commands", decisions=work / "decisions", quality=work / "quality",
                    observed=work / "observed", agreement=work / "agreement", requests=self.requests)

    @property
    def checkpoints(self) -> Checkpoints:
        return Checkpoints(self.work / "checkpoints")

    @property
    def staging(self) -> Path:
        return self.work / "staging"

    def clear(self) -> None:
        """A replay rewrites its output folder's tables rather than mixing two runs."""
        import shutil

        for target in (self.audit, self.quarantine, self.work, self.decisions_jsonl, self.report, self.requests_jsonl,
                       self.requests):
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
