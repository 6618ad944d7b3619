"""Where the project's Java jars live once fetched (`.cache/jars/<set>/`, git-ignored), whether a set is
complete, and the Spark conf that puts the connectors (Kafka source/sink, Delta) on the classpath.
Fetching them with Maven is `streaming.infra.jars`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache"
M2_REPO = CACHE / "m2"
JARS_DIR = CACHE / "jars"
MAVEN_DIR = ROOT / "tools" / "maven"
# Routes every repository, including ones upstream poms declare, to Maven Central.
MAVEN_SETTINGS = MAVEN_DIR / "settings.xml"
MARKER = ".fetched"


class JarsError(RuntimeError):
    """Maven is missing, a download failed, or the jars were never fetched."""


@dataclass(frozen=True)
class JarSet:
    name: str
    pom: Path
    drop_pyspark_bundled: bool

    @property
    def dest(self) -> Path:
        return JARS_DIR / self.name


KAFKA_BROKER = JarSet("kafka-broker", MAVEN_DIR / "kafka-broker" / "pom.xml", drop_pyspark_bundled=False)
SPARK = JarSet("spark", MAVEN_DIR / "spark-connectors" / "pom.xml", drop_pyspark_bundled=True)
JAR_SETS = (KAFKA_BROKER, SPARK)


def pyspark_jars_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "jars"


def fingerprint(jar_set: JarSet) -> str:
    digest = hashlib.sha256(jar_set.pom.read_bytes() + MAVEN_SETTINGS.read_bytes())
    if jar_set.drop_pyspark_bundled:
        # What gets dropped depends on the pyspark install, so a pyspark upgrade re-runs the fetch.
        digest.update("\n".join(sorted(p.name for p in pyspark_jars_dir().glob("*.jar"))).encode())
    return digest.hexdigest()


def is_fetched(jar_set: JarSet) -> bool:
    marker = jar_set.dest / MARKER
    return marker.is_file() and marker.read_text().strip() == fingerprint(jar_set)



def java_executable() -> str:
    """The `java` that runs Kafka's classes: JAVA_HOME's, else the one on PATH (Kafka 4 needs Java 17+)."""
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not java:
        raise JarsError("java is not on PATH (and JAVA_HOME is unset); Kafka needs Java 17+.")
    return java


def jars_in(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.jar"))


def require(jar_set: JarSet) -> list[Path]:
    if not is_fetched(jar_set):  # also catches a pom edited since the last fetch
        raise JarsError(
            f"The {jar_set.name} jars in {jar_set.dest} are missing or older than {jar_set.pom.name}; "
            "run `make jars` (or `.venv/bin/python -m streaming.infra.jars fetch`)."
        )
    return jars_in(jar_set.dest)



def spark_jars() -> list[Path]:
    """Spark's Kafka connector and Delta jars, without what pyspark already ships."""
    return require(SPARK)


def spark_jar_conf() -> dict[str, str]:
    """Spark conf that puts the connectors on the driver and executor classpaths (no network at runtime)."""
    return {"spark.jars": ",".join(str(p) for p in spark_jars())}
