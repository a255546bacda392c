"""Every Python script in bin/ and its subfolders bootstraps through bin/_venv.py and runs by its
path from anywhere."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT

BIN = REPO_ROOT / "bin"
SUBFOLDERS = ("perf", "check", "dev")  # benchmarks, checks and soak, developer tools


def python_scripts() -> list[Path]:
    """Executable files in bin/ and its subfolders whose shebang names python (bin/xlazero is
    bash)."""
    scripts = []
    folders = (BIN, *(BIN / s for s in SUBFOLDERS))
    for path in sorted(p for folder in folders for p in folder.iterdir()):
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


def test_scripts_in_each_subfolder_with_one_venv_loader():
    """Each subfolder's _venv.py (found first, as the script's own folder is) is the same file."""
    loaders = {(BIN / s / "_venv.py").read_text() for s in SUBFOLDERS}
    assert len(loaders) == 1
    assert all(any(p.parent == BIN / s for p in SCRIPTS) for s in SUBFOLDERS)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_imports_venv_bootstrap(script):
    """Each script imports _venv at module level (so run by path it finds .venv and the repo)."""
    tree = ast.parse(script.read_text(), str(script))
    top_imports = [alias.name for node in tree.body if isinstance(node, ast.Import)
                   for alias in node.names]
    assert "_venv" in top_imports, f"{script.name}: add `import _venv` before third-party imports"


HELP_ALL = """
import contextlib, io, json, os, runpy, sys
out = {}
sys.path.insert(0, "")  # the script's folder, set below
for script in sys.argv[1:]:
    sys.path[0] = os.path.dirname(script)  # as when a script runs by its path: its folder first
    sys.modules.pop("_venv", None)  # bin/_venv.py, or the one of the script's subfolder
    text, code = io.StringIO(), None
    sys.argv = [script, "--help"]
    try:
        with contextlib.redirect_stdout(text):
            runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
    out[script] = [code, text.getvalue()]
print(json.dumps(out))
"""


def _env_without_venv() -> dict[str, str]:
    """The environment without an activated venv on PATH, so `#!/usr/bin/env python3` may well
    find a python without the dependencies, as a GUI's would: _venv must re-exec under .venv."""
    venv = os.environ.get("VIRTUAL_ENV")
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if not (venv and d.startswith(venv)) and ".venv" not in Path(d).parts)
    return {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"} | {"PATH": path}


def test_help_from_another_directory():
    """`bin/<script> --help` started by its path from / exits 0 with usage text."""
    script = BIN / "perf" / "threads"
    run = subprocess.run([str(script), "--help"], cwd="/", env=_env_without_venv(),
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "usage" in run.stdout.lower(), run.stderr[-2000:]


def test_every_script_prints_its_help():
    """Every script's `--help` exits 0 with usage text: all of them in one interpreter (started
    from /), each run as __main__, so a broken import or argument parser shows at the cost of
    one start-up instead of one per script (each imports jax)."""
    run = subprocess.run([sys.executable, "-c", HELP_ALL, *map(str, SCRIPTS)], cwd="/",
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    results = json.loads(run.stdout)
    failures = [f"{Path(s).name}: exit {code!r}" for s, (code, text) in results.items()
                if code not in (0, None) or "usage" not in text.lower()]
    assert not failures and len(results) == len(SCRIPTS), failures


def test_backendbench_times_the_engines_call_and_the_program_itself():
    """The engine's call (packed planes), the float planes' and the compiled program's rows,
    labelled with the data type the backend options name (--call-path once raised a TypeError
    on a packed network: the program takes mask words and values, not float planes)."""
    net = BIN.parent / "nets" / "untrained.onnx"
    out = subprocess.run([str(BIN / "perf" / "backendbench"), str(net), "--batch-sizes", "2", "--repeats", "1",
                          "--no-onnxruntime", "--call-path", "--float-planes", "--backend-opts",
                          "data_type=bf16,cache_dir=none,packed_input=on"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [ln.split() for ln in out.stdout.splitlines() if ln.strip() and ln.split()[0] in ("f32", "bf16")]
    assert [r[2] for r in rows] == ["defaults", "evaluate(float", "program(numpy)", "program(on"], out.stdout
    assert all(r[0] == "bf16" and float(r[-1]) > 0 for r in rows), out.stdout
