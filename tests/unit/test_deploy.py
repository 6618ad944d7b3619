"""Deployment settings without a JVM: the connectors' Maven coordinates match the pom the cache is built from,
and state partitions are fixed per checkpoint."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from streaming.engine import connectors
from streaming.engine.session import (
    JARS_KEY,
    REPLAY_BATCH_EVENTS,
    VERBOSE_KEY,
    replay_sizing,
    session_conf,
    state_partitions_conf,
)
from streaming.errors import UsageError

POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def pom_coordinates(section: str) -> set[str]:
    root = ET.parse(connectors.SPARK.pom).getroot()
    return {":".join(d.findtext(f"m:{k}", namespaces=POM_NS) for k in ("groupId", "artifactId", "version"))
            for d in root.findall(f"{section}/m:dependency", POM_NS)}


def test_maven_coordinates_are_the_poms_dependencies_and_pins() -> None:
    assert set(connectors.SPARK_PACKAGES) | {connectors.TOKEN_PROVIDER} == (
        pom_coordinates("m:dependencies") | pom_coordinates("m:dependencyManagement/m:dependencies"))
    # Every jar the cache route keeps is one the coordinates bring; nothing it drops is left unexcluded.
    excluded = {e.split(":")[1] for e in connectors.SPARK_PACKAGE_EXCLUDES}
    assert "spark-token-provider-kafka-0-10_2.13" in excluded
    assert not excluded & {c.split(":")[1] for c in connectors.SPARK_PACKAGES}


def test_explicit_jars_win_over_the_environment_and_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(connectors.JARS_ENV, "/opt/env.jar")
    assert connectors.spark_jar_conf(["/opt/a.jar", "/opt/b.jar"]) == {"spark.jars": "/opt/a.jar,/opt/b.jar"}
    assert connectors.spark_jar_conf([""]) == {"spark.jars": "/opt/env.jar"}


def write_offset_log(checkpoint: Path, batch: int, partitions: int) -> None:
    """An offset log entry as Spark writes it: a version line, the batch metadata with its conf, the offsets."""
    offsets = checkpoint / "offsets"
    offsets.mkdir(parents=True, exist_ok=True)
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {"spark.sql.shuffle.partitions": str(partitions)}}
    (offsets / str(batch)).write_text(f"v1\n{json.dumps(meta)}\n{{\"events\":{{\"0\":{batch}}}}}")


def test_state_partitions_default_to_sparks_and_follow_the_checkpoint(tmp_path: Path) -> None:
    partitions = tmp_path / "partitions"
    assert state_partitions_conf(None, [partitions]) == {"spark.sql.shuffle.partitions": "200"}
    assert state_partitions_conf(8, [partitions]) == {"spark.sql.shuffle.partitions": "8"}
    write_offset_log(partitions, 0, 8)
    write_offset_log(partitions, 1, 8)
    assert state_partitions_conf(None, [partitions]) == {"spark.sql.shuffle.partitions": "8"}
    assert state_partitions_conf(8, [partitions]) == {"spark.sql.shuffle.partitions": "8"}


def test_changing_state_partitions_on_an_existing_checkpoint_is_refused(tmp_path: Path) -> None:
    write_offset_log(tmp_path / "partitions", 3, 2)
    with pytest.raises(UsageError, match="was started with 2 state partitions") as info:
        state_partitions_conf(200, [tmp_path / "partitions", tmp_path / "sequencer"])
    assert "--state-partitions 2" in str(info.value)
    with pytest.raises(UsageError, match="at least 1"):
        state_partitions_conf(0, [tmp_path / "new"])


def test_quiet_by_default_verbose_gives_spark_its_own_logging(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    quiet = session_conf({"spark.driver.extraJavaOptions": "-Dx=1"})
    option = quiet["spark.executor.extraJavaOptions"]
    assert option.startswith("-Dlog4j.configurationFile=file:")
    assert Path(option.split("file:", 1)[1]).is_file()  # shipped with the package
    assert quiet["spark.driver.extraJavaOptions"] == f"{option} -Dx=1"  # the user's options kept
    verbose = session_conf({VERBOSE_KEY: "true"})
    assert "spark.driver.extraJavaOptions" not in verbose and VERBOSE_KEY not in verbose


def test_jars_given_replace_the_connectors_and_production_keeps_sparks_defaults(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    conf = session_conf({JARS_KEY: "/opt/k.jar,/opt/d.jar"}, small_machine=False)
    assert conf["spark.jars"] == "/opt/k.jar,/opt/d.jar" and JARS_KEY not in conf
    assert "spark.sql.shuffle.partitions" not in conf and "spark.driver.memory" not in conf
    assert session_conf()["spark.sql.shuffle.partitions"] == "2"  # demo, replay, tests


def test_spark_submit_flags_carry_the_same_jars(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`isrflow jars --spark-submit`: the Maven route as --packages/--exclude-packages and the pinned jar, the
    explicit route as --jars."""
    monkeypatch.delenv(connectors.JARS_ENV, raising=False)
    monkeypatch.setattr(connectors, "in_checkout", lambda: False)
    monkeypatch.setattr(connectors, "pinned_jar", lambda coordinate, ivy: ivy / "jars" / "token.jar")
    monkeypatch.setenv(connectors.IVY_ENV, str(tmp_path))
    args = connectors.spark_jar_source().submit_args()
    assert args == ["--packages", ",".join(connectors.SPARK_PACKAGES),
                    "--exclude-packages", ",".join(connectors.SPARK_PACKAGE_EXCLUDES),
                    "--conf", f"spark.jars.ivy={tmp_path}", "--jars", str(tmp_path / "jars" / "token.jar")]
    explicit = connectors.spark_jar_source(["/opt/a.jar", "/opt/b.jar"])
    assert explicit.submit_args() == ["--jars", "/opt/a.jar,/opt/b.jar"]


def test_jars_fetch_names_an_unknown_set_and_takes_none() -> None:
    """`make jars` runs `python -m streaming.infra.jars fetch` with no set: that must parse (an empty
    `nargs="*"` positional once failed against argparse choices on Python 3.11); an unknown set is a usage error."""
    import pytest

    from streaming.infra import jars

    with pytest.raises(SystemExit) as exit_info:
        jars.main(["fetch", "bogus"])
    assert exit_info.value.code == 2
    parsed: list[object] = []
    real_fetch = jars.fetch
    jars.fetch = parsed.append  # type: ignore[assignment]
    try:
        assert jars.main(["fetch"]) == 0
    finally:
        jars.fetch = real_fetch  # type: ignore[assignment]
    assert parsed == [[]]


def test_replay_sizes_micro_batches_and_driver_memory_from_the_log() -> None:
    gib = 1 << 30
    # A small log, or one of unknown size: one micro-batch in the default heap.
    assert replay_sizing(5_000, None, 16 * gib) == (0, {})
    assert replay_sizing(None, None, 16 * gib) == (0, {})
    # A big log: micro-batches of the size that fits the default heap.
    assert replay_sizing(892_368, None, 16 * gib) == (REPLAY_BATCH_EVENTS, {})
    # Asked for: as asked, the heap grown with the largest micro-batch, at most half the machine.
    assert replay_sizing(892_368, 300_000, 16 * gib) == (300_000, {"spark.driver.memory": "3072m"})
    assert replay_sizing(892_368, 0, 64 * gib) == (0, {"spark.driver.memory": "9138m"})
    assert replay_sizing(892_368, 0, 8 * gib) == (0, {"spark.driver.memory": "4096m"})
    assert replay_sizing(892_368, 7, 8 * gib) == (7, {})

