"""What the controller checks in an admin request before it touches a partition: a partition assignment's shape,
and the topic configs the rules read."""

from __future__ import annotations

from collections.abc import Mapping

from statemachine.errors import Error, Rejection

UNCLEAN_CONFIG = "unclean.leader.election.enable"
MIN_ISR_CONFIG = "min.insync.replicas"


def checked_assignment(assignment: Mapping[str, tuple[int, ...]], first_id: int, replication_factor: int | None,
                        id_error: Error) -> list[tuple[int, ...]]:
    """Partition ids must continue from `first_id` without gaps; replica lists must be non-empty, distinct,
    non-negative, and all of one size."""
    ids = sorted(int(k) for k in assignment)
    if ids != list(range(first_id, first_id + len(ids))):
        raise Rejection(id_error, f"partition ids {ids} must be consecutive from {first_id}")
    lists = [tuple(assignment[str(i)]) for i in ids]
    for i, replicas in zip(ids, lists, strict=True):
        if not replicas or len(set(replicas)) != len(replicas) or any(r < 0 for r in replicas):
            raise Rejection(Error.INVALID_REPLICA_ASSIGNMENT,
                            f"partition {i}: replicas {list(replicas)} must be non-empty, distinct and >= 0")
    sizes = {len(r) for r in lists} | ({replication_factor} if replication_factor else set())
    if len(sizes) > 1:
        raise Rejection(Error.INVALID_REPLICA_ASSIGNMENT, f"inconsistent replication factors {sorted(sizes)}")
    return lists


def check_configs(configs: Mapping[str, str | None]) -> None:
    value = configs.get(UNCLEAN_CONFIG)
    if value is not None and value.lower() not in ("true", "false"):
        raise Rejection(Error.INVALID_REQUEST, f"{UNCLEAN_CONFIG} must be true or false, got '{value}'")
    value = configs.get(MIN_ISR_CONFIG)
    if value is not None and not (value.isascii() and value.isdigit() and 1 <= int(value) <= 2**31 - 1):
        raise Rejection(Error.INVALID_REQUEST, f"{MIN_ISR_CONFIG} must be an integer >= 1, got '{value}'")
