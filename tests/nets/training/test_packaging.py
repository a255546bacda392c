"""Training is a tool of the repository, not of the engine: the installed packages neither hold
nor import it, and it reaches the engine only through public names.

The truth is setuptools' own package finder with pyproject's settings, and Python's parser.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from conftest import REPO_ROOT

RUNTIME = ("engine", "backend_xla")


def _imports(root: Path):
    """(file, module, imported name or None) of every import statement under ``root``."""
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield path, alias.name, None
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    yield path, node.module, alias.name


def test_the_installed_packages_leave_nets_out():
    from setuptools import find_packages

    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = find_packages(str(REPO_ROOT), include=config["include"], exclude=config.get("exclude", ()))
    assert "engine" in packages and "backend_xla" in packages
    outside = [p for p in packages if p.split(".")[0] not in RUNTIME]
    assert outside == [], f"expected only {RUNTIME} installed, got also {outside}"


def test_the_engine_does_not_import_nets():
    found = [f"{path.relative_to(REPO_ROOT)}: {module}" for top in RUNTIME
             for path, module, _ in _imports(REPO_ROOT / top) if module.split(".")[0] == "nets"]
    assert found == [], f"expected no import of nets from {RUNTIME}, got {found}"


def test_training_uses_public_names_of_the_engine_only():
    private = [f"{path.relative_to(REPO_ROOT)}: {module} {name or ''}"
               for path, module, name in _imports(REPO_ROOT / "nets")
               if module.split(".")[0] in RUNTIME
               and any(part.startswith("_") for part in [*module.split("."), name or ""])]
    assert private == [], f"expected public names of {RUNTIME} only, got {private}"
