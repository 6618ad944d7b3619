"""The differential campaign's smoke run inside `make test`: one short seeded script on a real KRaft cluster of the
newest release isrflow knows (Kafka 4.4; 3 controllers, the active one killed with kill -9; 4 brokers on 2 racks
with 2 log dirs each, ELR on), replayed from the controller's copy of the log; every partition history and every
decision must equal the controller's. `make kraft-campaign` runs the long campaign over the releases
(docs/kraft.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kraft_campaign import KRAFT_EXTRA, VERSIONS, run, script, summary

pytestmark = pytest.mark.kraft_cluster


def test_a_seed_always_gives_the_same_script_and_different_seeds_differ() -> None:
    assert script(7, 25) == script(7, 25)
    assert script(7, 25) != script(8, 25)
    kinds = {op.kind for seed in range(1, 6) for op in script(seed, 30)}
    assert {"kill", "terminate", "restart", "reassign", "cancel", "preferred", "unclean", "config",
            "create_partitions", "create_topic", "delete_topic", "elr", "kill_controller",
            "restart_controller"} <= kinds


def test_a_kraft_run_with_several_log_dirs_draws_moves_and_requests_naming_several_topics() -> None:
    scripts = [script(seed, 30, VERSIONS["4.4"], extra=KRAFT_EXTRA, log_dirs=3) for seed in range(1, 6)]
    assert {"fail_dir", "move_dir", *KRAFT_EXTRA} <= {op.kind for ops in scripts for op in ops}
    for ops in scripts:
        failed: dict[int, int] = {}
        for op in ops:
            if op.kind == "fail_dir":
                failed[op.args[0]] = op.args[1]
            elif op.kind == "move_dir":  # (broker, topic, partition, log dir): never to the dir that failed under it
                assert 0 <= op.args[3] < 3 and op.args[3] != failed.get(op.args[0])
            elif op.kind == "elect_many":
                assert len(op.args[1]) >= 2
    assert not any(op.kind == "move_dir" for seed in range(1, 6) for op in script(seed, 30, extra=KRAFT_EXTRA))


def test_smoke_run_reproduces_every_partition_history(tmp_path: Path) -> None:
    results = run(seed=3, ops=12, work=tmp_path, version=VERSIONS["4.4"], log_dirs=2)
    print(summary(results))
    [result] = results
    assert result.partitions > 0 and result.states > 0
    assert result.agrees, summary(results)
