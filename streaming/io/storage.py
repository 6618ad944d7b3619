"""Where a pipeline's checkpoints and tables live, local or not, and the driver's own small files there.

A location is a local `Path` or a `Uri` of a Hadoop file system: `s3a://`, `abfss://`, `gs://`, `hdfs://`
(`file:` URIs are local paths). Spark and Delta read and write both kinds themselves; `Storage` is for the
few files isrflow's driver reads and writes beside them (pairing markers, the sequencer's state, a
checkpoint's offsets and metadata). Local paths stay on pathlib (no JVM, no cost). URIs go through Hadoop's
FileSystem in the Spark session's JVM, so every scheme Spark is configured for works, with Spark's own
connector jars, credentials and settings.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

# A scheme of two or more characters followed by ':/' (so a Windows drive letter is not a scheme).
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")
# Hadoop's capability of output streams whose data becomes visible only on close() (S3A: one PUT or a
# completed multipart upload), so a crash mid-write leaves no object at all.
_ABORTABLE_STREAM = "fs.capability.outputstream.abortable"
# A Delta table's committed versions in its _delta_log: commit files and checkpoints, named by a 20-digit version.
_DELTA_VERSION = re.compile(r"^\d{20}\.(json|checkpoint(\..+)?\.parquet)$")


@dataclass(frozen=True)
class Uri:
    """A location on a non-local Hadoop file system, such as s3a://bucket/isrflow/audit."""

    text: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", self.text.rstrip("/"))

    def __truediv__(self, name: str) -> Uri:
        return Uri(f"{self.text}/{name}")

    def __str__(self) -> str:
        return self.text

    @property
    def scheme(self) -> str:
        return urlsplit(self.text).scheme.lower()

    @property
    def name(self) -> str:
        return PurePosixPath(urlsplit(self.text).path).name

    @property
    def parent(self) -> Uri:
        parts = urlsplit(self.text)
        authority = f"//{parts.netloc}" if parts.netloc or "://" in self.text else ""
        return Uri(f"{parts.scheme}:{authority}{PurePosixPath(parts.path or '/').parent}")


Location = Path | Uri


def location(text: str | Location, absolute: bool = True) -> Location:
    """A location given by a user: a URI of a Hadoop file system as it is; a `file:` URI or a plain path as a
    local path (made absolute unless `absolute` is false)."""
    if isinstance(text, Uri):
        return text
    if isinstance(text, str) and _SCHEME.match(text) and not text.lower().startswith("file:"):
        return Uri(text)
    is_file_uri = isinstance(text, str) and text.lower().startswith("file:")
    path = Path(unquote(urlsplit(str(text)).path)) if is_file_uri else Path(text)
    return path.resolve() if absolute else path


def is_remote(*locations: Location) -> bool:
    return any(isinstance(loc, Uri) for loc in locations)


class StorageError(RuntimeError):
    """A URI without a Spark session to reach it, or a file system that refused an operation."""


class Storage:
    """Small-file I/O at a location: pathlib for local paths, Hadoop's FileSystem through `spark` for URIs.

    `write` publishes a whole file or nothing: locally a temp file renamed over the target (atomic);
    on a file system whose output streams are abortable (S3A) the object written straight under its name,
    which becomes visible only complete, on close (S3 has no atomic rename: a rename is a copy and a
    delete); elsewhere (HDFS, ABFS, GCS) a temp file renamed to the target, atomic on HDFS and ABFS, a
    single-object copy on GCS."""

    def __init__(self, spark: Any | None = None) -> None:
        self._spark = spark
        self._conf: Any = None

    # -- Hadoop (URIs) -----------------------------------------------------------------------------------
    def _fs(self, uri: Uri) -> tuple[Any, Any]:
        if self._spark is None:
            raise StorageError(f"{uri}: a URI is reached through a Spark session, and there is none here")
        jvm = self._spark.sparkContext._jvm
        if self._conf is None:
            self._conf = self._spark.sparkContext._jsc.hadoopConfiguration()
        path = jvm.org.apache.hadoop.fs.Path(uri.text)
        return path.getFileSystem(self._conf), path

    def _hadoop(self, uri: Uri, action: Callable[[Any, Any], Any]) -> Any:
        from py4j.protocol import Py4JJavaError

        try:
            return action(*self._fs(uri))
        except Py4JJavaError as exc:
            name = exc.java_exception.getClass().getName()
            if name == "java.io.FileNotFoundException":
                raise FileNotFoundError(str(uri)) from None
            hint = (f": put the connector of {uri.scheme}:// on Spark's classpath (docs/deploy.md, \"Storage\")"
                    if name.endswith("UnsupportedFileSystemException") else "")
            raise StorageError(f"{uri}: {name}: {exc.java_exception.getMessage()}{hint}") from exc

    # -- the operations ------------------------------------------------------------------------------------
    def read_bytes(self, loc: Location) -> bytes:
        """The file's bytes; FileNotFoundError when there is none."""
        if isinstance(loc, Path):
            return loc.read_bytes()

        def read(fs: Any, path: Any) -> bytes:
            stream = fs.open(path)
            try:
                return bytes(self._spark.sparkContext._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
            finally:
                stream.close()

        return self._hadoop(loc, read)

    def read_text(self, loc: Location) -> str:
        return self.read_bytes(loc).decode("utf-8")

    def exists(self, loc: Location) -> bool:
        if isinstance(loc, Path):
            return loc.exists()
        return bool(self._hadoop(loc, lambda fs, path: fs.exists(path)))

    def names(self, directory: Location) -> list[str]:
        """The names of the directory's entries (none when it does not exist)."""
        if isinstance(directory, Path):
            return [p.name for p in directory.iterdir()] if directory.is_dir() else []
        try:
            statuses = self._hadoop(directory, lambda fs, path: fs.listStatus(path))
        except FileNotFoundError:
            return []
        return [status.getPath().getName() for status in statuses]

    def is_delta_table(self, table: Location) -> bool:
        """Whether a Delta table at `table` has a committed version: a process killed inside the table's first
        commit leaves a `_delta_log` folder with none, which Delta cannot read (DELTA_SCHEMA_NOT_SET)."""
        return any(_DELTA_VERSION.match(name) for name in self.names(table / "_delta_log"))

    def delete(self, loc: Location) -> None:
        """Remove a file if it is there."""
        if isinstance(loc, Path):
            loc.unlink(missing_ok=True)
        else:
            self._hadoop(loc, lambda fs, path: fs.delete(path, False))

    def write(self, loc: Location, data: bytes, before_publish: Callable[[], None] | None = None) -> None:
        """Write `data` as the whole file `loc` (parents created), replacing it. `before_publish` runs once
        the bytes are written but not yet visible under `loc` (the crash tests stop there)."""
        publish_hook = before_publish or (lambda: None)
        if isinstance(loc, Path):
            loc.parent.mkdir(parents=True, exist_ok=True)
            tmp = loc.with_name(loc.name + ".tmp")
            tmp.write_bytes(data)
            publish_hook()
            os.replace(tmp, loc)
            return

        def write(fs: Any, path: Any) -> None:
            if fs.hasPathCapability(path, _ABORTABLE_STREAM):
                stream = fs.create(path, True)
                stream.write(bytearray(data))
                publish_hook()
                stream.close()  # the object appears here, whole
                return
            tmp = self._spark.sparkContext._jvm.org.apache.hadoop.fs.Path(loc.text + ".tmp")
            stream = fs.create(tmp, True)
            try:
                stream.write(bytearray(data))
            finally:
                stream.close()
            publish_hook()
            fs.delete(path, False)  # FileSystem.rename never replaces an existing file
            if not fs.rename(tmp, path):
                raise StorageError(f"{loc}: could not rename {tmp} to it")

        self._hadoop(loc, write)
