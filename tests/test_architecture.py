"""The import contracts of pyproject.toml ([tool.importlinter]) hold: the arrows point one way
(engine.uci -> engine.controller -> engine.search -> engine.backend <- backend_xla), the protocol
and the engine know no backend, backends see only the protocol, no package has cycles, and the
runtime imports no benchmark code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _lint_imports(config: Path | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess:
    """import-linter on pyproject.toml's contracts, or on those of ``config``."""
    pytest.importorskip("importlinter", reason="import-linter is in the test extra: pip install -e '.[test]'")
    named = f"config_filename={str(config)!r}, " if config is not None else ""
    return subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
                           f"sys.exit(lint_imports({named}no_cache=True, no_logo=True))"],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def test_import_contracts_are_kept():
    proc = _lint_imports()
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_a_broken_contract_is_caught(tmp_path):
    """The checker itself sees a forbidden arrow: a configuration that forbids what the engine
    really imports (the search imports the protocol) must fail."""
    config = tmp_path / "contracts.ini"
    config.write_text("[importlinter]\nroot_packages =\n    engine\n\n"
                      "[importlinter:contract:probe]\nname = probe\ntype = forbidden\n"
                      "source_modules =\n    engine.search\nforbidden_modules =\n    engine.backend\n")
    proc = _lint_imports(config)
    assert proc.returncode != 0 and "BROKEN" in proc.stdout, proc.stdout[-2000:]


def test_benchmark_code_is_outside_the_installed_packages():
    """The no-benchmarks contract covers the installed packages whole (setuptools' include is
    its source list, no hand-kept module list), and the benchmark package lives in bin/, which
    is not installed."""
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    installed = {p.rstrip("*") for p in config["tool"]["setuptools"]["packages"]["find"]["include"]}
    contract = next(c for c in config["tool"]["importlinter"]["contracts"]
                    if c.get("forbidden_modules") == ["xlazero_perf"])
    assert set(contract["source_modules"]) == installed == set(config["tool"]["importlinter"]["root_packages"])
    assert (REPO / "bin" / "xlazero_perf" / "__init__.py").is_file()
    assert not any((REPO / package / "perf").exists() for package in installed)


def test_an_import_of_the_benchmark_package_is_caught(tmp_path):
    """The contract forbids a package that is not installed (bin/xlazero_perf): the checker
    sees such an import as an external one, and breaks the contract on it."""
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "__init__.py").write_text("import xlazero_perf.timing\n")
    config = tmp_path / "contracts.ini"
    config.write_text("[importlinter]\nroot_packages =\n    probe\ninclude_external_packages = True\n\n"
                      "[importlinter:contract:probe]\nname = probe\ntype = forbidden\n"
                      "source_modules =\n    probe\nforbidden_modules =\n    xlazero_perf\n")
    proc = _lint_imports(config, cwd=tmp_path)
    assert proc.returncode != 0 and "BROKEN" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
