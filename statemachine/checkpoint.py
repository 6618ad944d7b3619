"""The controller's checkpoint format (Controller.snapshot / restore): versioned JSON by field name, and the check
that bytes are one this version reads."""

from __future__ import annotations

import json
from typing import Any

SNAPSHOT_FORMAT = "isrflow.controller"
SNAPSHOT_VERSION = 1


class SnapshotError(ValueError):
    """Bytes that are not a controller snapshot this version can read."""


def read_snapshot(snapshot: bytes) -> dict[str, Any]:
    try:
        body = json.loads(snapshot)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SnapshotError(f"not a JSON controller snapshot (corrupt or truncated): {e}") from e
    if not isinstance(body, dict) or body.get("format") != SNAPSHOT_FORMAT:
        raise SnapshotError(f"not an {SNAPSHOT_FORMAT} snapshot")
    if body.get("version") != SNAPSHOT_VERSION:
        raise SnapshotError(f"snapshot version {body.get('version')}; this isrflow reads version {SNAPSHOT_VERSION}")
    missing = {"full", "cluster", "partitions", "removed"} - body.keys()
    if missing:
        raise SnapshotError(f"snapshot lacks {sorted(missing)} (corrupt)")
    return body
