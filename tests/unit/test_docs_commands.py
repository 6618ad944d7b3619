"""The commands the docs tell a user to type: each `isrflow` command of a fenced block in README.md and docs/ is
whole (no `...` standing for flags) and parses as the CLI parses it, so a required flag cannot hide."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from streaming.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def isrflow_commands(markdown: str) -> list[list[str]]:
    """The arguments of each `isrflow` command (or `.venv/bin/isrflow`, `/opt/isrflow/bin/isrflow`) of the fenced
    blocks, its `\\` continuations joined, its comment cut."""
    commands = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", markdown, flags=re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            if re.match(r"\s*(\S*/)?isrflow\s", line):
                commands.append(shlex.split(line, comments=True)[1:])
    return commands


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_docs_commands_are_whole_and_parse(page: Path) -> None:
    for arguments in isrflow_commands(page.read_text(encoding="utf-8")):
        assert "..." not in arguments, arguments
        build_parser().parse_args(arguments)


def test_the_live_kraft_example_shows_the_bridge_and_run() -> None:
    commands = isrflow_commands((ROOT / "docs" / "kraft.md").read_text(encoding="utf-8"))
    run = next(c for c in commands if c[0] == "run")
    assert {"--decisions-topic", "--audit-table", "--checkpoint-dir", "--rules"} <= set(run)
    assert any(c[0] == "bridge" and "--metadata-dir" in c for c in commands)


def test_a_command_missing_a_required_flag_does_not_parse() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--bootstrap-servers", "b", "--events-topic", "t", "--rules", "kraft"])
