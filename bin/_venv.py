"""Bootstrap shared by the Python scripts in bin/: ``import _venv`` before any third-party import.

GUIs and users run these scripts by path (``/path/to/xlazero/bin/match``), from any working
directory, with whatever ``python3`` is first on PATH; the project's dependencies (jax, onnx,
numpy, chess) live in ``<repo>/.venv``, made by the README's install command. So, on import:

* if ``<repo>/.venv/bin/python`` exists and this interpreter is not that venv, re-execute the
  calling script under it with the same arguments (compared by ``sys.prefix``: a venv's python
  is a symlink to the base interpreter, so comparing executables is unreliable);
* otherwise (already in the venv, or no venv: e.g. installed into another environment) go on;
* either way, put the repo root first on ``sys.path`` so ``engine`` and ``backend_xla`` import
  without installation.

The scripts in bin/perf/, bin/check/ and bin/dev/ import the ``_venv.py`` of their own folder,
which loads this file and puts bin/ on ``sys.path`` too (for ``xlazero_perf``).

Then it sets the process up as the engine does (:func:`engine.startup.configure`): numba's cache
folder at once (a few milliseconds), XLA's CPU devices (one per core) when the script first
imports jax (a finder on ``sys.meta_path``, gone once it ran: the set-up imports numpy and
backend_xla, 0.17 s of CPU that a tool without jax, such as bin/match, never needed); numba's
registries stay numba's (deferring them imports numba, about a second, which most tools never
use). Before that it imports only the standard library: a user's ``XLA_FLAGS`` survive the
re-exec.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
VENV_PYTHON = VENV / "bin" / "python"

# Set for the re-executed process only (popped at once, so children don't inherit it): guards
# against an endless re-exec should .venv/bin/python not be a venv interpreter after all.
_MARKER = "_XLAZERO_VENV_REEXEC"


def _in_venv() -> bool:
    try:
        return Path(sys.prefix).resolve() == VENV.resolve()
    except OSError:
        return False


def _reexec() -> None:
    if os.environ.pop(_MARKER, None) is not None:  # already re-executed once: don't loop
        return
    script = sys.argv[0] if sys.argv else ""
    if not script or not os.path.isfile(script):  # python -c / interactive: nothing to re-run
        return
    if not VENV_PYTHON.exists() or _in_venv():
        return
    os.environ[_MARKER] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), script, *sys.argv[1:]])


_reexec()

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


class _DevicesBeforeJax:
    """Configures XLA's host devices as jax is first imported, then leaves ``sys.meta_path``."""

    @classmethod
    def find_spec(cls, name: str, path: object = None, target: object = None) -> None:
        if name == "jax":
            sys.meta_path.remove(cls)
            from engine.startup import configure

            configure(defer_registries=False)  # jax is not in sys.modules yet
        return None  # the import goes on as usual


def _set_up() -> None:
    from engine.startup import configure

    configure(host_devices=False, defer_registries=False)
    if "jax" not in sys.modules:
        sys.meta_path.insert(0, _DevicesBeforeJax)


_set_up()
