"""Where the project's Java jars live once fetched (`.cache/jars/<set>-<fingerprint>/`, git-ignored), whether a set is
complete, and the Spark conf that puts the connectors (Kafka source/sink, Delta) on the classpath.
Fetching them with Maven is `streaming.infra.jars`.

The connectors come from the first of: jars given explicitly (`--jars` or ISRFLOW_SPARK_JARS), the checkout's
cache when `make jars` filled it, or Spark's own resolution of their Maven coordinates (`spark.jars.packages`),
which is what an installed wheel uses.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
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
JARS_ENV = "ISRFLOW_SPARK_JARS"
IVY_ENV = "ISRFLOW_IVY_DIR"

# The connectors of tools/maven/spark-connectors/pom.xml as Maven coordinates (a unit test keeps them equal).
SPARK_PACKAGES = (
    "org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.3",
    "io.delta:delta-spark_4.1_2.13:4.4.0",
    "com.fasterxml.jackson.datatype:jackson-datatype-jdk8:2.20.0",
)
# The pom's dependencyManagement pin: spark-sql-kafka asks for a token provider of its own version, which
# Maven Central lacks, and Ivy cannot be told to prefer an older revision. So it is excluded from the
# resolution above and resolved alone (`pinned_jar`).
TOKEN_PROVIDER = "org.apache.spark:spark-token-provider-kafka-0-10_2.13:4.1.1"
# What pyspark already ships (the pom route drops the same jars after the fetch), the pom's RoaringBitmap
# exclusion, and the token provider.
SPARK_PACKAGE_EXCLUDES = (
    "com.fasterxml.jackson.core:jackson-annotations", "com.fasterxml.jackson.core:jackson-core",
    "com.fasterxml.jackson.core:jackson-databind", "com.github.luben:zstd-jni", "com.google.code.findbugs:jsr305",
    "commons-logging:commons-logging", "commons-pool:commons-pool", "io.airlift:aircompressor",
    "org.apache.hadoop:hadoop-client-api", "org.apache.hadoop:hadoop-client-runtime",
    "org.apache.logging.log4j:log4j-api", "org.apache.logging.log4j:log4j-core",
    "org.apache.logging.log4j:log4j-slf4j2-impl", "org.apache.parquet:parquet-column",
    "org.apache.parquet:parquet-common", "org.apache.parquet:parquet-encoding",
    "org.apache.parquet:parquet-format-structures", "org.apache.parquet:parquet-hadoop",
    "org.apache.parquet:parquet-jackson", "org.locationtech.jts:jts-core", "org.lz4:lz4-java",
    "org.scala-lang.modules:scala-parallel-collections_2.13", "org.slf4j:slf4j-api", "org.xerial.snappy:snappy-java",
    "org.roaringbitmap:RoaringBitmap", "org.roaringbitmap:shims",
    "org.apache.spark:spark-token-provider-kafka-0-10_2.13",
)


class JarsError(RuntimeError):
    """Maven is missing, a download failed, or the jars were never fetched."""


@dataclass(frozen=True)
class JarSet:
    name: str
    pom: Path
    drop_pyspark_bundled: bool
    # Whether its Kafka logs through log4j 2 (Kafka 4.x) rather than reload4j (Kafka 3.x).
    log4j2: bool = False

    @property
    def dest(self) -> Path:
        # One folder per set of inputs: worktrees sharing the cache with another pom keep their own jars.
        return JARS_DIR / f"{self.name}-{fingerprint(self)[:12]}"


KAFKA_BROKER = JarSet("kafka-broker", MAVEN_DIR / "kafka-broker" / "pom.xml", drop_pyspark_bundled=False,
                      log4j2=True)
# Kafka 3.9.1 with ZooKeeper 3.8.4 and reload4j: ZooKeeper-mode clusters, and KRaft clusters of the 3.x line.
KAFKA_39 = JarSet("kafka-3.9", MAVEN_DIR / "kafka-3.9" / "pom.xml", drop_pyspark_bundled=False)
# Older Kafka releases with the ZooKeeper server each depends on: ZooKeeper-mode clusters of those releases
# (streaming.infra.zkcluster.RELEASES), fetched on first use.
KAFKA_27 = JarSet("kafka-2.7", MAVEN_DIR / "kafka-2.7" / "pom.xml", drop_pyspark_bundled=False)
KAFKA_28 = JarSet("kafka-2.8", MAVEN_DIR / "kafka-2.8" / "pom.xml", drop_pyspark_bundled=False)
KAFKA_30 = JarSet("kafka-3.0", MAVEN_DIR / "kafka-3.0" / "pom.xml", drop_pyspark_bundled=False)
KAFKA_35 = JarSet("kafka-3.5", MAVEN_DIR / "kafka-3.5" / "pom.xml", drop_pyspark_bundled=False)
SPARK = JarSet("spark", MAVEN_DIR / "spark-connectors" / "pom.xml", drop_pyspark_bundled=True)
# Hadoop's S3A connector and its AWS SDK bundle (~645 MB): fetched on demand only (`make jars-s3a`, or the
# s3a:// storage test), never by `make jars`. Users add it with --packages (docs/deploy.md, "Storage").
S3A = JarSet("s3a", MAVEN_DIR / "s3a" / "pom.xml", drop_pyspark_bundled=True)
JAR_SETS = (KAFKA_BROKER, KAFKA_39, SPARK)
# Kafka 4.4.0 (metadata.version up to 4.4-IV2): fetched on first use (a KraftCluster of that release), not by
# `make jars`.
KAFKA_44 = JarSet("kafka-4.4", MAVEN_DIR / "kafka-4.4" / "pom.xml", drop_pyspark_bundled=False, log4j2=True)


def kraft_release(release: str) -> JarSet:
    """Another KRaft release's jars (tools/maven/kafka-<release>/pom.xml), fetched on first use: Kafka 3.x logs
    through reload4j, 4.x through log4j2."""
    return JarSet(f"kafka-{release}", MAVEN_DIR / f"kafka-{release}" / "pom.xml", drop_pyspark_bundled=False,
                  log4j2=not release.startswith("3."))


KAFKA_37, KAFKA_38, KAFKA_40, KAFKA_42, KAFKA_43 = (kraft_release(r) for r in ("3.7", "3.8", "4.0", "4.2", "4.3"))
ON_DEMAND_JAR_SETS = (S3A, KAFKA_27, KAFKA_28, KAFKA_30, KAFKA_35, KAFKA_44, KAFKA_37, KAFKA_38, KAFKA_40,
                      KAFKA_42, KAFKA_43)
# The jar set of each KRaft release a KraftCluster runs (its `release`), oldest first.
KRAFT_RELEASES = {"3.7": KAFKA_37, "3.8": KAFKA_38, "3.9": KAFKA_39, "4.0": KAFKA_40, "4.1": KAFKA_BROKER,
                  "4.2": KAFKA_42, "4.3": KAFKA_43, "4.4": KAFKA_44}


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


def in_checkout() -> bool:
    """True when running from the repository (editable install), where `make jars` fills the cache."""
    return SPARK.pom.is_file()


@dataclass(frozen=True)
class JarSource:
    """Where the connectors come from, and the Spark conf that puts them on driver and executor classpaths."""

    name: str
    conf: dict[str, str]

    def describe(self) -> str:
        parts = [*self.conf.get("spark.jars.packages", "").split(","), *self.conf.get("spark.jars", "").split(",")]
        return f"{self.name}:\n  " + "\n  ".join(p for p in parts if p)

    def submit_args(self) -> list[str]:
        """The same jars as spark-submit flags: under spark-submit they must be given before the driver starts."""
        flags = {"spark.jars.packages": "--packages", "spark.jars.excludes": "--exclude-packages",
                 "spark.jars": "--jars"}
        return [arg for key, value in self.conf.items()
                for arg in ((flags[key], value) if key in flags else ("--conf", f"{key}={value}"))]


def spark_jar_source(jars: Sequence[str] | None = None) -> JarSource:
    """The connectors from `jars`, else ISRFLOW_SPARK_JARS, else the checkout's cache, else their coordinates."""
    explicit = [j for j in (jars or []) if j]
    if explicit:
        return JarSource("--jars", {"spark.jars": ",".join(explicit)})
    if os.environ.get(JARS_ENV, "").strip():
        return JarSource(JARS_ENV, {"spark.jars": os.environ[JARS_ENV].strip()})
    if in_checkout() and is_fetched(SPARK):
        return JarSource(f"cache {SPARK.dest}", {"spark.jars": ",".join(str(p) for p in spark_jars())})
    # Spark resolves them with Ivy at start-up into spark.jars.ivy, then ships them to executors.
    ivy = ivy_dir()
    return JarSource(f"Maven coordinates (spark.jars.packages, Ivy cache {ivy})", {
        "spark.jars.packages": ",".join(SPARK_PACKAGES),
        "spark.jars.excludes": ",".join(SPARK_PACKAGE_EXCLUDES),
        "spark.jars.ivy": str(ivy),
        "spark.jars": str(pinned_jar(TOKEN_PROVIDER, ivy)),
    })


def ivy_dir() -> Path:
    """Ivy's cache for spark.jars.packages: ISRFLOW_IVY_DIR, or ~/.ivy2 as Spark would use."""
    return Path(os.environ.get(IVY_ENV) or Path.home() / ".ivy2").resolve()


def pinned_jar(coordinate: str, ivy: Path) -> Path:
    """One jar resolved by Spark's Ivy on its own (no other revision competing), into `ivy`/jars."""
    group, artifact, version = coordinate.split(":")
    jar = ivy / "jars" / f"{group}_{artifact}-{version}.jar"
    if jar.is_file():
        return jar
    spark_submit = pyspark_jars_dir().parent / "bin" / "spark-submit"
    # spark-submit resolves --packages before it runs its application: this file, which does nothing as a script.
    result = subprocess.run([str(spark_submit), "--packages", coordinate, "--conf", f"spark.jars.ivy={ivy}",
                             "--conf", "spark.ui.enabled=false", __file__],
                            capture_output=True, text=True, check=False)
    if not jar.is_file():
        raise JarsError(f"could not resolve {coordinate} into {ivy}:\n{result.stderr[-2000:]}")
    return jar


def spark_jar_conf(jars: Sequence[str] | None = None) -> dict[str, str]:
    return spark_jar_source(jars).conf
