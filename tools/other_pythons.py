"""`make test`'s unit tests under every other Python that pyproject.toml's `requires-python` admits.

.venv (make install) is one Python; users install on any the range admits. For each other minor version this finds
on the machine (`python3.X` on PATH, else a pyenv install of it), a venv `.venv-3.X` (git-ignored) gets the project
with its unit-test tools (`pip install -e '.[unit]'`), again only when pyproject.toml changes, and runs
`pytest -q tests/unit` there. It prints which versions ran and which were not found, and exits non-zero when a
version's install or tests fail. Run by .venv's Python: `python tools/other_pythons.py`.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"


def admitted_versions() -> list[str]:
    """The minor versions `requires-python` admits, other than this interpreter's, oldest first."""
    spec = SpecifierSet(tomllib.loads(PYPROJECT.read_text())["project"]["requires-python"])
    mine = f"{sys.version_info.major}.{sys.version_info.minor}"
    return [v for v in (f"3.{minor}" for minor in range(100)) if v != mine and Version(f"{v}.0") in spec]


def find_python(version: str) -> str | None:
    """An interpreter of `version` that runs: on PATH (a pyenv shim of a version not selected fails), else pyenv's
    newest install of it."""
    pyenv_root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    installs = sorted(glob.glob(f"{pyenv_root}/versions/{version}.*/bin/python{version}"),
                      key=lambda p: Version(Path(p).parents[1].name))
    for candidate in [shutil.which(f"python{version}"), *reversed(installs)]:
        if candidate and subprocess.run([candidate, "-c", ""], capture_output=True).returncode == 0:
            return candidate
    return None


def installed(python: str, venv: Path) -> float:
    """Seconds spent making `venv` hold the project for `python` (0 when it already does for this pyproject.toml)."""
    stamp = venv / ".installed-stamp"
    if stamp.exists() and stamp.stat().st_mtime >= PYPROJECT.stat().st_mtime:
        return 0.0
    started = time.monotonic()
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    # --no-compile: byte-compiling every installed module (pyspark's, great-expectations') was about a third of the
    # install's time; the tests compile only what they import.
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-compile", "-e", ".[unit]"], cwd=ROOT,
                   check=True)
    stamp.touch()
    return time.monotonic() - started


def main() -> int:
    ran: list[str] = []
    missing: list[str] = []
    failed: list[str] = []
    for version in admitted_versions():
        python = find_python(version)
        if python is None:
            missing.append(version)
            continue
        venv = ROOT / f".venv-{version}"
        try:
            install = installed(python, venv)
        except subprocess.CalledProcessError:
            failed.append(f"{version} (install)")
            continue
        print(f"== Python {version} ({python}): unit tests in {venv.name}"
              + (f", installed in {install:.0f} s" if install else ""), flush=True)
        started = time.monotonic()
        tests = subprocess.run([str(venv / "bin" / "pytest"), "-q", "-p", "no:cacheprovider", "tests/unit"],
                               cwd=ROOT)
        print(f"== Python {version}: tests/unit in {time.monotonic() - started:.0f} s", flush=True)
        (ran if tests.returncode == 0 else failed).append(version)
    print(f"other Pythons: passed {' '.join(ran) or 'none'}; failed {' '.join(failed) or 'none'}; "
          f"not found {' '.join(missing) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
