"""Locations given to `run` (streaming.io.storage): URIs of Hadoop file systems kept as they are, `file:` URIs
and plain paths as local paths; the layout builds table and checkpoint locations of either kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from streaming.io.layout import Checkpoints, Lake
from streaming.io.storage import Storage, StorageError, Uri, is_remote, location


@pytest.mark.parametrize("text", ["s3a://bucket/lake/audit", "abfss://c@acct.dfs.core.windows.net/lake/audit",
                                  "gs://bucket/lake/audit", "hdfs://namenode:8020/lake/audit", "hdfs:/lake/audit"])
def test_uris_stay_uris(text: str) -> None:
    loc = location(text + "/")
    assert loc == Uri(text) and str(loc) == text and is_remote(loc)
    assert loc.name == "audit"
    assert str(loc.parent) == text.removesuffix("/audit")
    assert str(loc / "_delta_log") == text + "/_delta_log"


def test_file_uris_and_paths_are_local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert location(f"file:{tmp_path}/a") == tmp_path / "a"
    assert location(f"file://{tmp_path}/a%20b") == tmp_path / "a b"
    assert location("ckpt") == tmp_path / "ckpt"
    assert location(Path("ckpt")) == tmp_path / "ckpt"
    assert not is_remote(location("ckpt"), location(f"file:{tmp_path}"))


def test_the_layout_places_tables_and_checkpoints_under_a_uri() -> None:
    lake = Lake.beside(Uri("s3a://b/isrflow/lake/audit"))
    assert str(lake.decisions) == "s3a://b/isrflow/lake/decisions"
    assert str(lake.quality) == "s3a://b/isrflow/lake/quality"
    assert str(Lake.beside(Uri("s3a://b/a/audit"), Uri("s3a://b/other")).bronze) == "s3a://b/other/bronze"
    assert str(Checkpoints(Uri("gs://b/ckpt")).sequencer_state) == "gs://b/ckpt/sequencer-state"
    assert Uri("s3a://bucket/").parent == Uri("s3a://bucket")  # the root has no parent above it


def test_local_storage_publishes_whole_files(tmp_path: Path) -> None:
    storage = Storage()
    target = tmp_path / "state" / "0.whole.json"
    seen: list[list[str]] = []
    storage.write(target, b"{}", before_publish=lambda: seen.append(sorted(storage.names(target.parent))))
    assert seen == [["0.whole.json.tmp"]]  # before publishing, only the temp file is there
    assert storage.read_text(target) == "{}" and storage.names(target.parent) == ["0.whole.json"]
    storage.delete(target)
    storage.delete(target)  # gone already: fine
    assert storage.names(target.parent) == [] and storage.names(tmp_path / "missing") == []
    with pytest.raises(FileNotFoundError):
        storage.read_bytes(target)


def test_a_uri_without_a_session_is_refused() -> None:
    with pytest.raises(StorageError, match="reached through a Spark session"):
        Storage().exists(Uri("s3a://b/x"))


def test_a_delta_log_without_a_committed_version_is_no_table(tmp_path: Path) -> None:
    storage = Storage()
    table = tmp_path / "t"
    assert not storage.is_delta_table(table)
    (table / "_delta_log" / "_staged_commits").mkdir(parents=True)  # a first commit cut short
    assert not storage.is_delta_table(table)
    (table / "_delta_log" / "00000000000000000000.json").write_text("{}")
    assert storage.is_delta_table(table)
