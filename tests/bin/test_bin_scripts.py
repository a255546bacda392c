"""Every Python script in bin/ bootstraps through bin/_venv.py and runs by its path from anywhere."""

from __future__ import annotations

import ast
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import REPO_ROOT

BIN = REPO_ROOT / "bin"


def python_scripts() -> list[Path]:
    """Executable files in bin/ whose shebang names python (bin/xlazero is bash)."""
    scripts = []
    for path in sorted(BIN.iterdir()):
        if not path.is_file() or not os.access(path, os.X_OK):
            continue
        with path.open("rb") as f:
            first = f.readline()
        if first.startswith(b"#!") and b"python" in first:
            scripts.append(path)
    return scripts


SCRIPTS = python_scripts()


def test_scripts_found():
    assert len(SCRIPTS) >= 10, SCRIPTS
    assert not any(p.name == "xlazero" for p in SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_imports_venv_bootstrap(script):
    """Each script imports _venv at module level (so run by path it finds .venv and the repo)."""
    tree = ast.parse(script.read_text(), str(script))
    top_imports = [alias.name for node in tree.body if isinstance(node, ast.Import)
                   for alias in node.names]
    assert "_venv" in top_imports, f"{script.name}: add `import _venv` before third-party imports"


def test_help_from_another_directory():
    """`bin/<script> --help` started by its path from / exits 0 with usage text (in parallel)."""

    # Drop an activated venv from PATH, so `#!/usr/bin/env python3` may well find a python
    # without the dependencies, as a GUI's would: _venv must re-exec under .venv.
    venv = os.environ.get("VIRTUAL_ENV")
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if not (venv and d.startswith(venv)) and ".venv" not in Path(d).parts)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"} | {"PATH": path}

    def run(script: Path) -> tuple[Path, subprocess.CompletedProcess]:
        return script, subprocess.run([str(script), "--help"], cwd="/", env=env,
                                      capture_output=True, text=True, timeout=60)

    with ThreadPoolExecutor(max_workers=len(SCRIPTS)) as pool:
        results = list(pool.map(run, SCRIPTS))
    failures = [f"{s.name}: rc={r.returncode}\n{r.stderr[-2000:]}" for s, r in results
                if r.returncode != 0 or "usage" not in r.stdout.lower()]
    assert not failures, "\n\n".join(failures)


def test_backendbench_labels_rows_with_the_backend_opts_data_type():
    net = BIN.parent / "nets" / "untrained.onnx"
    out = subprocess.run([str(BIN / "backendbench"), str(net), "--batch-sizes", "2", "--repeats", "1",
                          "--no-onnxruntime", "--backend-opts", "data_type=bf16,cache_dir=none"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [ln.split() for ln in out.stdout.splitlines() if ln.strip() and ln.split()[0] in ("f32", "bf16")]
    assert rows and all(r[0] == "bf16" for r in rows), out.stdout
