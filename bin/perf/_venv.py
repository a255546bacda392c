"""``import _venv`` for the scripts in this subfolder of bin/ (a script's own folder is first on
sys.path): loads bin/_venv.py (re-execute under the project's .venv, repo root on sys.path) and
puts bin/ on sys.path too, for ``xlazero_perf``. The same file in each subfolder."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BIN = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("_bin_venv", BIN / "_venv.py")
assert _spec is not None and _spec.loader is not None
_bootstrap = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bootstrap)
# bin/_venv.py's names, for the scripts that use them
ROOT: Path = _bootstrap.ROOT
VENV: Path = _bootstrap.VENV
VENV_PYTHON: Path = _bootstrap.VENV_PYTHON

if str(BIN) not in sys.path:
    sys.path.insert(1, str(BIN))
