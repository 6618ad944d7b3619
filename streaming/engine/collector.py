"""Python's cyclic garbage collector, tuned for the loops that pile up many small objects."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def young_collection_only() -> Iterator[None]:
    """Replays and sequencer batches pile up many small objects without reference cycles; the collector's
    passes over the older generations cost a fifth of a long replay (measured,
    benchmarks/replay_throughput.py). Only young objects are collected meanwhile, so short-lived cycles (a
    caught exception's frames) still go."""
    thresholds = gc.get_threshold()
    gc.set_threshold(50_000, 1_000_000, 1_000_000)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
