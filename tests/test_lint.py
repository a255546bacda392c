"""Style and types, as pyproject.toml configures them ([tool.ruff], [tool.mypy]): ruff's lint
rules and its format, and mypy, are clean on engine/, backend_xla/ and the Python files of bin/.
Each check shows the tool's own report when it fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ["engine", "backend_xla"]


BIN_SUBFOLDERS = ("perf", "check", "dev")  # benchmarks, checks and soak, developer tools


def bin_python_files(folder: Path = REPO / "bin") -> list[str]:
    """bin/'s Python, relative to the repository: its packages (the benchmark code), its modules
    (``*.py``) and the scripts, which have no suffix, by a first line that names python; the
    same for its subfolders of scripts (BIN_SUBFOLDERS)."""
    found = []
    for path in sorted(folder.iterdir()):
        if path.is_dir() and (path / "__init__.py").is_file():
            found.append(str(path.relative_to(REPO)))
        if path.is_dir() and path.name in BIN_SUBFOLDERS:
            found += bin_python_files(path)
        if not path.is_file():
            continue
        with path.open("rb") as f:
            first = f.readline()
        if path.suffix == ".py" or (first.startswith(b"#!") and b"python" in first):
            found.append(str(path.relative_to(REPO)))
    return found


def _run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


def _checked() -> list[str]:
    return PACKAGES + bin_python_files()


@pytest.fixture(autouse=True)
def _tools():
    pytest.importorskip("ruff", reason="ruff is in the test extra: pip install -e '.[test]'")
    pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")


def test_bin_scripts_are_found_and_the_shell_launcher_is_not():
    files = bin_python_files()
    assert {"bin/match", "bin/_venv.py", "bin/xlazero_perf", "bin/perf/_venv.py"} <= set(files)
    assert {"bin/perf/bench", "bin/check/soak", "bin/dev/train-net"} <= set(files)
    assert "bin/xlazero" not in files  # a bash script (and excluded in [tool.ruff])
    assert "bin/dev/suite-ab" not in files  # the same


def test_ruff_lint_is_clean():
    """The checked files, and what a bare ``ruff check .`` at the root takes (bash scripts
    excluded in [tool.ruff])."""
    proc = _run("ruff", "check", "--no-cache", ".", *_checked())
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


def test_ruff_format_is_clean():
    proc = _run("ruff", "format", "--check", "--no-cache", *_checked())
    assert proc.returncode == 0, (
        "run `ruff format` (pyproject.toml's settings):\n" + proc.stdout[-6000:] + proc.stderr
    )


def test_mypy_is_clean():
    """mypy names a module after its file, so a subfolder's copy of _venv.py is checked apart
    from bin/_venv.py; one copy stands for all (tests/bin/test_bin_scripts.py checks that they
    are the same file)."""
    files = _checked()
    copies = sorted(f for f in files if f.endswith("/_venv.py") and f != "bin/_venv.py")
    for group in [[f for f in files if f not in copies], *([c] for c in copies[:1])]:
        proc = _run("mypy", *group)
        assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


def test_the_checkers_catch_what_they_are_for(tmp_path):
    """With the project's settings, an unused import, unformatted code and a type error each
    fail their check: a clean result above means something."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\n\ndef f(x: int) -> str:\n    return x  \n")
    config = ("--config", str(REPO / "pyproject.toml"))
    lint = _run("ruff", "check", "--no-cache", *config, str(bad), cwd=tmp_path)
    assert lint.returncode != 0 and "F401" in lint.stdout, lint.stdout + lint.stderr
    fmt = _run("ruff", "format", "--check", "--no-cache", *config, str(bad), cwd=tmp_path)
    assert fmt.returncode != 0, fmt.stdout + fmt.stderr
    types = _run("mypy", "--config-file", str(REPO / "pyproject.toml"), str(bad), cwd=tmp_path)
    assert types.returncode != 0 and "[return-value]" in types.stdout, types.stdout
