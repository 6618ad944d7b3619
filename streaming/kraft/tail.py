"""A long-lived decoder of metadata log files: tools/java/MetadataTail.java, compiled on first use against a Kafka
release's jars (the broker's, Kafka 4.1, unless told) into `.cache/java/` (one folder per hash of the source and
the jar set, so an edit of either recompiles) and kept running as one JVM. It decodes a segment from a byte
position, or a snapshot whole, with Kafka's own classes and prints DumpLogSegments' lines, which `parse_lines`
reads: a poll of a live log costs the bytes appended since the last one, not a JVM start and the whole log.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path
from types import TracebackType
from typing import Self

from streaming.engine.connectors import CACHE, KAFKA_BROKER, ROOT, JarSet, java_executable, require

SOURCE = ROOT / "tools" / "java" / "MetadataTail.java"
MAIN_CLASS = "MetadataTail"
# Kafka 4.4 moved the record classes the source imports (FileRecords, Record, ...) into an `internal` package.
RECORD_PACKAGE = "org.apache.kafka.common.record."
INTERNAL_RECORD_PACKAGE = "org.apache.kafka.common.record.internal."
# Bytes of batches one read decodes at most: a large log read at start goes through in parts, not as one answer
# of millions of lines.
READ_LIMIT = 8 << 20


class DecoderError(RuntimeError):
    """The decoder could not read a file, or its JVM died."""


def source_for(jars: list[Path]) -> str:
    """MetadataTail's source for a release's jars: its record imports from where that release's clients keep
    them."""
    source = SOURCE.read_text(encoding="utf-8")
    clients = [j for j in jars if j.name.startswith("kafka-clients-")]
    with zipfile.ZipFile(clients[0]) as jar:
        moved = f"{INTERNAL_RECORD_PACKAGE.replace('.', '/')}FileRecords.class" in jar.namelist()
    return source.replace(f"import {RECORD_PACKAGE}", f"import {INTERNAL_RECORD_PACKAGE}") if moved else source


def classes_dir(jar_set: JarSet = KAFKA_BROKER) -> Path:
    """MetadataTail compiled against `jar_set` (compiled now if this source and jar set never were)."""
    jars = require(jar_set)
    key = hashlib.sha256(SOURCE.read_bytes() + "\n".join(p.name for p in jars).encode()
                         + str(jar_set.dest).encode()).hexdigest()[:16]
    dest = CACHE / "java" / f"{MAIN_CLASS}-{key}"
    if (dest / f"{MAIN_CLASS}.class").is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    # Compiled aside, then renamed: a concurrent first use never sees half a folder.
    work = Path(tempfile.mkdtemp(prefix=f".{MAIN_CLASS}-", dir=dest.parent))
    try:
        javac = str(Path(java_executable()).with_name("javac"))
        source = work / "src" / SOURCE.name
        source.parent.mkdir()
        source.write_text(source_for(jars), encoding="utf-8")
        done = subprocess.run([javac, "-d", str(work), "-cp", os.pathsep.join(map(str, jars)), str(source)],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise DecoderError(f"javac {SOURCE.name} failed ({done.returncode}):\n{done.stderr[-2000:]}")
        shutil.rmtree(source.parent)
        try:
            work.rename(dest)
        except OSError:  # another process compiled it first
            if not (dest / f"{MAIN_CLASS}.class").is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dest


class Closing:
    """`with` closes it."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class MetadataTail(Closing):
    """One decoder JVM: `read(path, position)` returns DumpLogSegments' lines for the whole batches of `path` from
    byte `position` on (up to `limit` bytes of them), and the position after the last of them, with the classes
    of `jar_set`'s Kafka (which reads every record version up to its release's). `close()` stops the JVM (by its
    pid); the JVM also ends by itself when this process dies, as its stdin closes."""

    def __init__(self, java: str | None = None, read_limit: int = READ_LIMIT,
                 jar_set: JarSet = KAFKA_BROKER) -> None:
        self.read_limit = read_limit
        self.jar_set = jar_set
        classpath = os.pathsep.join(map(str, [classes_dir(jar_set), *require(jar_set)]))
        # Lives as long as the JVM (closed by `close`): its errors, for the message when it dies.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self.process = subprocess.Popen(
            [java or java_executable(), "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
             "-Dlog4j2.level=ERROR", "-cp", classpath, MAIN_CLASS],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True, encoding="utf-8")

    @property
    def pid(self) -> int:
        return self.process.pid

    def read(self, path: Path, position: int = 0, limit: int | None = None) -> tuple[list[str], int]:
        """The lines of the whole batches of `path` from byte `position` on (until `limit`, else `read_limit`,
        bytes are read), and the byte position after them."""
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(f"{position} {limit or self.read_limit} {Path(path).resolve()}\n")
            stdin.flush()
        except BrokenPipeError:
            raise DecoderError(f"the decoder JVM has ended:\n{self._stderr_tail()}") from None
        lines: list[str] = []
        for line in stdout:
            line = line.rstrip("\n")
            if line.startswith("#end "):
                return lines, int(line[5:])
            if line.startswith("#error "):
                raise DecoderError(f"{path}: {line[7:]}")
            lines.append(line)
        raise DecoderError(f"the decoder JVM has ended while reading {path}:\n{self._stderr_tail()}")

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read()[-2000:].decode(errors="replace")

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            try:
                self.process.stdin.close()  # the JVM's read loop ends
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._stderr.close()
