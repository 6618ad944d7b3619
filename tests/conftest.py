"""Session-wide fixtures for the integration tests: one Kafka broker and one SparkSession per run.

Both are lazy (imports inside the fixtures): tests that do not ask for them, such as tests/unit, start no
JVM and import neither pyspark nor kafka-python.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from streaming.localkafka import LocalKafkaBroker


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[LocalKafkaBroker]:
    from streaming.localkafka import LocalKafkaBroker

    with LocalKafkaBroker() as broker:
        yield broker


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from streaming.spark_session import build_spark

    session = build_spark(app_name="isrflow-tests")
    yield session
    session.stop()
