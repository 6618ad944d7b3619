"""What the last micro-batches did, for the progress line."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class BatchCounts:
    """What the last micro-batches did, for the progress line (filled by the foreachBatch writers)."""

    sequencer: dict[int, dict[str, int]] = field(default_factory=dict)
    partitions: dict[int, dict[str, int]] = field(default_factory=dict)
