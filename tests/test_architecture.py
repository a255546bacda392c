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
    (tmp_path / "probe" / "__init__.py").write_text("import xlazero_perf.uci_pipe\n")
    config = tmp_path / "contracts.ini"
    config.write_text("[importlinter]\nroot_packages =\n    probe\ninclude_external_packages = True\n\n"
                      "[importlinter:contract:probe]\nname = probe\ntype = forbidden\n"
                      "source_modules =\n    probe\nforbidden_modules =\n    xlazero_perf\n")
    proc = _lint_imports(config, cwd=tmp_path)
    assert proc.returncode != 0 and "BROKEN" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]


MAX_CLASS_LINES, MAX_FUNCTION_LINES = 250, 80
"""Issue 40's sizes: a class or function past them is doing two jobs."""


def _oversized(path: Path, root: Path = REPO) -> list[str]:
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            limit = MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else MAX_FUNCTION_LINES
            if lines > limit:
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}: {lines} lines")
    return found


def test_no_class_or_function_past_its_size():
    files = [p for pkg in ("engine", "backend_xla") for p in (REPO / pkg).rglob("*.py")]
    files += [REPO / "bin" / "perf" / "bench"]
    found = [line for path in sorted(files) for line in _oversized(path)]
    assert not found, (
        f"expected classes of at most {MAX_CLASS_LINES} lines and functions of at most "
        f"{MAX_FUNCTION_LINES}, got:\n" + "\n".join(found)
    )


def test_the_size_check_names_a_long_function_and_passes_a_short_one(tmp_path):
    body = "    x = 1\n"
    (tmp_path / "long.py").write_text("def long():\n" + body * MAX_FUNCTION_LINES)
    (tmp_path / "short.py").write_text("def short():\n" + body * (MAX_FUNCTION_LINES - 1))
    assert _oversized(tmp_path / "long.py", tmp_path) == [
        f"long.py:1 long: {MAX_FUNCTION_LINES + 1} lines"
    ]
    assert _oversized(tmp_path / "short.py", tmp_path) == []
