"""Python's cyclic garbage collector, tuned for the loops that pile up many small objects, and the memory a finished
phase freed handed back to the system."""

from __future__ import annotations

import ctypes
import gc
import sys
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


def release_freed_memory() -> None:
    """Hand the memory a finished phase freed back to the system, so that the next phase does not grow on top of it.
    pyarrow's pool (mimalloc) keeps what the audit's columns and their join freed, a gigabyte on a 100,000-partition
    log; glibc's heap keeps its free pages (`malloc_trim`, on Linux with glibc only). Freed objects are enough: the
    engine leaves no cycles to collect (measured, docs/performance.md)."""
    if sys.platform == "linux":
        try:
            malloc_trim = ctypes.CDLL(None).malloc_trim
        except AttributeError:  # another C library than glibc (musl)
            pass
        else:
            malloc_trim(0)
    pyarrow = sys.modules.get("pyarrow")  # none to release if it was never imported
    if pyarrow is not None:
        pyarrow.default_memory_pool().release_unused()
