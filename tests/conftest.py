"""Session-wide fixtures for the integration tests: one Kafka broker and one SparkSession per run.

Both are lazy (imports inside the fixtures): tests that do not ask for them, such as tests/unit, start no
JVM and import neither pyspark nor kafka-python.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from streaming.infra.localkafka import LocalKafkaBroker


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[LocalKafkaBroker]:
    from streaming.infra.localkafka import LocalKafkaBroker

    with LocalKafkaBroker() as broker:
        yield broker


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from streaming.engine.session import build_spark

    session = build_spark(app_name="isrflow-tests")
    yield session
    session.stop()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config.stash[_EXIT_STATUS] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Leave as soon as pytest has reported. delta-rs's native threads can abort the interpreter during its
    final teardown ("terminate called without an active exception", delta-io/delta-rs#2184), which would
    turn a green run's exit status into 134; everything worth doing at exit has been done by now."""
    status = config.stash.get(_EXIT_STATUS, None)
    if status is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


_EXIT_STATUS = pytest.StashKey[int]()
