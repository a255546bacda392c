"""The import contracts of pyproject.toml ([tool.importlinter]) hold: the arrows point one way
(engine.uci -> engine.controller -> engine.search -> engine.backend <- backend_xla), the protocol
and the engine know no backend, backends see only the protocol, and no package has cycles."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_import_contracts_are_kept():
    pytest.importorskip("importlinter", reason="import-linter is in the test extra: pip install -e '.[test]'")
    proc = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
                           "sys.exit(lint_imports(no_cache=True, no_logo=True))"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_a_broken_contract_is_caught(tmp_path):
    """The checker itself sees a forbidden arrow: a configuration that forbids what the engine
    really imports (the search imports the protocol) must fail."""
    pytest.importorskip("importlinter", reason="import-linter is in the test extra: pip install -e '.[test]'")
    config = tmp_path / "contracts.ini"
    config.write_text("[importlinter]\nroot_packages =\n    engine\n\n"
                      "[importlinter:contract:probe]\nname = probe\ntype = forbidden\n"
                      "source_modules =\n    engine.search\nforbidden_modules =\n    engine.backend\n")
    proc = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
                           f"sys.exit(lint_imports(config_filename={str(config)!r}, no_cache=True, no_logo=True))"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "BROKEN" in proc.stdout, proc.stdout[-2000:]


def test_every_runtime_module_is_under_the_no_benchmarks_contract():
    """A new backend_xla module must join the contract that keeps benchmark code out of the
    runtime (pyproject.toml), or that contract would silently not cover it."""
    import pkgutil
    import tomllib

    import backend_xla

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(c for c in config["tool"]["importlinter"]["contracts"]
                    if c.get("forbidden_modules") == ["backend_xla.perf"])
    modules = {f"backend_xla.{m.name}" for m in pkgutil.iter_modules(backend_xla.__path__)}
    assert modules - {"backend_xla.perf"} == set(contract["source_modules"]) - {"engine"}
