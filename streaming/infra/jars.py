"""Java dependencies, fetched from Maven Central with Maven and cached under `.cache/` (git-ignored).

Each set is resolved from a pom under `tools/maven/` and copied flat into `.cache/jars/<set>-<fingerprint>/`:
- `kafka-broker`: the KRaft Kafka broker and its log4j2 backend, run by `streaming.infra.localkafka`.
- `kafka-3.9`: Kafka 3.9.1 with ZooKeeper 3.8.4 and reload4j: ZooKeeper-mode clusters and 3.x KRaft clusters.
- `kafka-2.8`: Kafka 2.8.2 with ZooKeeper 3.5.9 and reload4j: ZooKeeper-mode clusters of the 2.x generation
  (on demand: fetched by the first `ZkCluster(kafka_version="2.8.2")`, not by `make jars`).
- `kafka-4.4`: Kafka 4.4.0 and its log4j2 backend (slf4j 2), fetched on first use by `fetched`.
- `spark`: Spark's Kafka connector and Delta Lake, minus every jar pyspark already ships (scala, jackson,
  hadoop, slf4j, ...), so the session's classpath holds one copy of each library; passed as `spark.jars`.

`python -m streaming.infra.jars fetch` is idempotent: a marker per set records the inputs it was built from, so a
second run does nothing. After that, nothing here touches the network.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from streaming.engine.connectors import (
    JAR_SETS,
    JARS_DIR,
    KAFKA_BROKER,
    M2_REPO,
    MARKER,
    MAVEN_SETTINGS,
    ON_DEMAND_JAR_SETS,
    JarsError,
    JarSet,
    fingerprint,
    is_fetched,
    jars_in,
    pyspark_jars_dir,
    require,
)


def _bundled_by_pyspark(artifact_id: str, pyspark_jar_names: list[str]) -> bool:
    # pyspark's jars are named <artifactId>-<version>[-<qualifier>].jar; the pattern keeps `log4j` from
    # matching `log4j-1.2-api-2.24.3.jar`.
    pattern = re.compile(rf"{re.escape(artifact_id)}-\d[\w.]*(?:-[\w.]+)?\.jar")
    return any(pattern.fullmatch(name) for name in pyspark_jar_names)


def _run_maven(jar_set: JarSet, out_dir: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsError("Maven (`mvn`) is not on PATH; install it (Debian/Ubuntu: apt-get install maven).")
    cmd = [
        mvn, "-B", "-q", "-Dstyle.color=never",
        "-s", str(MAVEN_SETTINGS), "-f", str(jar_set.pom), f"-Dmaven.repo.local={M2_REPO}",
        "dependency:copy-dependencies", "-DincludeScope=runtime",
        # Repository layout keeps groupId/artifactId/version in the path, so filtering needs no name parsing.
        "-Dmdep.useRepositoryLayout=true", f"-DoutputDirectory={out_dir}",
    ]  # fmt: skip
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise JarsError(
            f"Maven could not fetch the {jar_set.name} jars (exit {result.returncode}) from {jar_set.pom}:\n"
            f"{result.stdout}{result.stderr}"
        )


def fetch_set(jar_set: JarSet) -> None:
    """Resolve one set into `.cache/jars/<name>-<fingerprint>/` unless it is already there for the same inputs."""
    if is_fetched(jar_set):
        print(f"{jar_set.name}: cached, {len(jars_in(jar_set.dest))} jars in {jar_set.dest}")
        return
    print(f"{jar_set.name}: resolving {jar_set.pom} from Maven Central into {M2_REPO} ...")
    JARS_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=JARS_DIR, prefix=f".{jar_set.name}-") as tmp:
        resolved, flat = Path(tmp) / "resolved", Path(tmp) / "flat"
        _run_maven(jar_set, resolved)
        flat.mkdir()
        pyspark_jar_names = [p.name for p in pyspark_jars_dir().glob("*.jar")] if jar_set.drop_pyspark_bundled else []
        dropped = []
        for jar in sorted(resolved.rglob("*.jar")):
            artifact_id = jar.parent.parent.name  # <group dirs>/<artifactId>/<version>/<file>.jar
            if _bundled_by_pyspark(artifact_id, pyspark_jar_names):
                dropped.append(jar.name)
            else:
                shutil.copy2(jar, flat / jar.name)
        (flat / MARKER).write_text(fingerprint(jar_set) + "\n")
        # Swap in whole, marker included, so an interrupted fetch never looks complete.
        shutil.rmtree(jar_set.dest, ignore_errors=True)
        flat.rename(jar_set.dest)
    print(f"{jar_set.name}: {len(jars_in(jar_set.dest))} jars in {jar_set.dest}")
    if dropped:
        print(f"{jar_set.name}: left out {len(dropped)} jars pyspark already ships: {', '.join(dropped)}")


_BY_NAME = {s.name: s for s in (*JAR_SETS, *ON_DEMAND_JAR_SETS)}


def fetch(names: list[str] | None = None) -> None:
    """Fetch the named sets, by default every set but the on-demand ones (the `make jars` step)."""
    for name in names or [s.name for s in JAR_SETS]:
        fetch_set(_BY_NAME[name])


def fetched(jar_set: JarSet) -> JarSet:
    """`jar_set`, fetched first if it is not in the cache yet (a release's jars on first use)."""
    if not is_fetched(jar_set):
        fetch_set(jar_set)
    return jar_set


def kafka_broker_classpath(jar_set: JarSet = KAFKA_BROKER) -> str:
    """The `java -cp` value that runs a Kafka broker and its tools: Kafka 4.1 by default, or `KAFKA_39`."""
    return os.pathsep.join(str(p) for p in require(jar_set))




def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m streaming.infra.jars", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("fetch", help="download (once) and cache the Kafka broker and Spark connector jars")
    known = list(_BY_NAME)
    # No argparse `choices` here: Python 3.11 checks an empty `nargs="*"` default against them and fails.
    p.add_argument("sets", nargs="*", metavar="SET",
                   help=f"the sets to fetch, of {', '.join(known)} (default: {', '.join(s.name for s in JAR_SETS)}; "
                        f"{', '.join(s.name for s in ON_DEMAND_JAR_SETS)} only when named)")
    args = parser.parse_args(argv)
    unknown = [name for name in args.sets if name not in known]
    if unknown:
        parser.error(f"unknown jar set(s) {', '.join(unknown)}; known: {', '.join(known)}")
    try:
        fetch(args.sets)
    except JarsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
