"""numba's cache is keyed by every compiled source (engine/compiled_cache.py), and the process's
set-up (engine/startup/) writes nothing to disk (issue 40: a guarded boundary)."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from conftest import REPO_ROOT

from engine import compiled_cache
from engine.compiled_cache import COMPILED_SOURCES, STALE_AFTER_S, source_files, sources_hash

ENGINE = REPO_ROOT / "engine"
PACKAGES = ("engine", "backend_xla")
"""The installed packages (pyproject.toml): numba's cache directory holds whatever any of them
compiles with ``cache=True``."""


def _is_compile_decorator(node: ast.expr) -> bool:
    """``@njit``, ``@njit(...)``, ``@jit``, ``@numba.njit(...)``, ``@numba.jit`` and the like."""
    if isinstance(node, ast.Call):
        node = node.func
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return name in ("njit", "jit", "generated_jit", "vectorize", "guvectorize", "cfunc")


def _compiled_functions(tree: ast.Module) -> list[ast.FunctionDef]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and any(map(_is_compile_decorator, node.decorator_list))
    ]


def _python_files(package: str) -> list[Path]:
    return sorted((REPO_ROOT / package).rglob("*.py"))


def _covered() -> set[Path]:
    return {p.resolve() for p in source_files(ENGINE)}


def _module_file(importer: Path, node: ast.ImportFrom) -> Path | None:
    """The file of the module an ``from X import ...`` names, when it is one of engine's."""
    if node.level:
        base = importer.parent
        for _ in range(node.level - 1):
            base = base.parent
        parts = node.module.split(".") if node.module else []
    else:
        if not node.module or not node.module.startswith("engine"):
            return None
        base = REPO_ROOT
        parts = node.module.split(".")
    target = base.joinpath(*parts)
    if target.with_suffix(".py").is_file():
        return target.with_suffix(".py").resolve()
    if (target / "__init__.py").is_file():
        return (target / "__init__.py").resolve()
    return None


def test_every_file_with_compiled_functions_is_in_the_cache_key():
    covered = _covered()
    compiled = [
        path
        for package in PACKAGES
        for path in _python_files(package)
        if _compiled_functions(ast.parse(path.read_text()))
    ]
    assert any(p.name == "random.py" for p in compiled)  # the scan sees them
    outside = [p for p in compiled if not p.is_relative_to(ENGINE)]
    assert not outside, f"compiled functions outside engine/ are in no cache key: {outside}"
    missing = [str(p.relative_to(REPO_ROOT)) for p in compiled if p.resolve() not in covered]
    assert not missing, f"add to COMPILED_SOURCES (engine/compiled_cache.py): {missing}"


def test_every_module_whose_names_compiled_code_reads_is_in_the_cache_key():
    """numba compiles a global's value (a constant, an array, a callee) into the function that
    reads it: the module it comes from is part of the compiled source."""
    covered = _covered()
    missing: set[str] = set()
    for package in PACKAGES:
        for path in _python_files(package):
            tree = ast.parse(path.read_text())
            functions = _compiled_functions(tree)
            if not functions:
                continue
            read = {
                n.id
                for f in functions
                for n in ast.walk(f)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            }
            for node in tree.body:
                if not isinstance(node, ast.ImportFrom):
                    continue
                for alias in node.names:
                    if (alias.asname or alias.name) not in read:
                        continue
                    source = _module_file(path, node)
                    if source is not None and (source.parent / f"{alias.name}.py").is_file():
                        source = (source.parent / f"{alias.name}.py").resolve()  # a submodule
                    if source is not None and source not in covered:
                        user = path.relative_to(REPO_ROOT)
                        missing.add(f"{source.relative_to(REPO_ROOT)} ({alias.name}, in {user})")
    assert not missing, f"add to COMPILED_SOURCES (engine/compiled_cache.py): {sorted(missing)}"


def test_the_cache_key_lists_only_existing_sources():
    for entry in COMPILED_SOURCES:
        assert (ENGINE / entry).exists(), entry


def test_changing_any_compiled_source_changes_the_key(tmp_path):
    copy = tmp_path / "engine"
    shutil.copytree(ENGINE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    key = sources_hash(copy)
    assert key == sources_hash()
    files = source_files(copy)
    assert any(p.name == "random.py" for p in files)
    for path in files:
        original = path.read_bytes()
        path.write_bytes(original + b"\n")
        assert sources_hash(copy) != key, path.relative_to(copy)
        path.write_bytes(original)
    assert sources_hash(copy) == key


def _tree(root: Path) -> dict[str, float]:
    return {str(p.relative_to(root)): p.stat().st_mtime for p in root.rglob("*")}


def _stale_version(base: Path) -> Path:
    stale = base / "0123456789abcdef"
    (stale / "engine").mkdir(parents=True)
    (stale / "engine" / "x.nbi").write_bytes(b"")
    old = time.time() - STALE_AFTER_S - 3600
    for p in (stale / "engine" / "x.nbi", stale / "engine", stale):
        os.utime(p, (old, old))
    return stale


def test_the_set_up_writes_nothing_to_disk(tmp_path):
    stale = _stale_version(tmp_path / "xlazero" / "numba")
    before = _tree(tmp_path)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("NUMBA_CACHE_DIR", "XLAZERO_NUMBA_CACHE_BASE")
    }
    env.update(XDG_CACHE_HOME=str(tmp_path), PYTHONPATH=str(REPO_ROOT), PYTHONDONTWRITEBYTECODE="1")
    code = (
        "import os; from engine.startup import configure; configure(host_devices=False); "
        "print(os.environ['NUMBA_CACHE_DIR'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(tmp_path / "xlazero" / "numba" / sources_hash())
    assert stale.is_dir()
    assert _tree(tmp_path) == before


def test_remove_stale_removes_only_old_other_versions(tmp_path, monkeypatch):
    base = tmp_path / "numba"
    stale = _stale_version(base)
    young = base / "fedcba9876543210"
    young.mkdir()
    other = base / "not-a-version"
    other.mkdir()
    old = time.time() - STALE_AFTER_S - 3600
    os.utime(other, (old, old))
    monkeypatch.setenv("XLAZERO_NUMBA_CACHE_BASE", str(base))
    monkeypatch.setenv("NUMBA_CACHE_DIR", os.environ.get("NUMBA_CACHE_DIR", ""))
    if "numba" in sys.modules:
        monkeypatch.setattr(
            sys.modules["numba"].config, "CACHE_DIR", sys.modules["numba"].config.CACHE_DIR
        )
    here = base / sources_hash()
    here.mkdir()
    os.utime(here, (old, old))
    assert compiled_cache.remove_stale() == [stale]
    assert not stale.exists()
    assert young.is_dir() and other.is_dir() and here.is_dir()
    assert compiled_cache.remove_stale() == []
