"""make test's other Pythons (tools/other_pythons.py): the versions it looks for are those requires-python admits,
which the README names, and a machine without them is told so, not failed."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "other_pythons.py"


def other_pythons() -> ModuleType:
    spec = importlib.util.spec_from_file_location("other_pythons", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_versions_looked_for_are_the_supported_ones_the_readme_names() -> None:
    mine = f"{sys.version_info.major}.{sys.version_info.minor}"
    looked_for = other_pythons().admitted_versions()
    assert mine not in looked_for
    assert sorted([*looked_for, mine]) == ["3.11", "3.12", "3.13"]
    assert "**Supported Pythons: 3.11, 3.12 and 3.13**" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_a_machine_without_the_other_pythons_is_told_which_were_not_found(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                            env={"PATH": str(tmp_path), "PYENV_ROOT": str(tmp_path)})
    assert result.returncode == 0
    looked_for = " ".join(other_pythons().admitted_versions())
    assert result.stdout.strip() == f"other Pythons: passed none; failed none; not found {looked_for}"
