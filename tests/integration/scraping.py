"""Scraping `isrflow run --metrics-port` while it runs (the tests of its metrics)."""

from __future__ import annotations

import os
import signal
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any


def scraped_value(samples: list[Any], name: str, **labels: str) -> float | None:
    return next((s.value for s in samples if s.name == name and s.labels == labels), None)


def run_scraped(args: list[str], url: str, seen: Callable[[list[Any]], bool]) -> tuple[int, list[Any] | None]:
    """`isrflow run ARGS` (on this thread, as the CLI runs it), scraped over HTTP from another thread until a scrape
    satisfies `seen`, then stopped with SIGTERM as an operator stops it (also when none does, after 300 s).
    Returns the exit code and that scrape's samples."""
    from prometheus_client.parser import text_string_to_metric_families

    from streaming.cli import main

    scraped: list[list[Any]] = []
    returned = threading.Event()
    handler_before = signal.getsignal(signal.SIGTERM)

    def scrape_then_stop() -> None:
        deadline = time.monotonic() + 300
        try:
            while not returned.is_set() and time.monotonic() < deadline:
                try:
                    with urllib.request.urlopen(url, timeout=10) as response:
                        samples = [s for family in text_string_to_metric_families(response.read().decode())
                                   for s in family.samples]
                except OSError:  # not serving yet
                    samples = []
                if samples and seen(samples):
                    scraped.append(samples)
                    break
                returned.wait(0.5)
        finally:
            # Found or not, only while run's own handler is there to catch it.
            while not returned.is_set() and signal.getsignal(signal.SIGTERM) is handler_before:
                returned.wait(0.2)
            if not returned.is_set():
                os.kill(os.getpid(), signal.SIGTERM)

    scraper = threading.Thread(target=scrape_then_stop, daemon=True)
    scraper.start()
    try:
        code = main(args)
    finally:
        returned.set()
        scraper.join()
    return code, scraped[0] if scraped else None
