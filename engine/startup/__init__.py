"""A process's set-up, in one place: what the engine process, the tests and the tools configure
before the search's compiled modules load and before jax starts, the engine's command line, and
the collector's policy.

Importing ``engine`` or ``backend_xla`` changes nothing global (``os.environ``, numba's or JAX's
configuration: tests/engine/test_startup.py checks it in a fresh interpreter); :func:`configure`
does, once a process:

- numba's cache folder, one per version of the compiled sources (``NUMBA_CACHE_DIR``,
  :mod:`engine.compiled_cache`): before any compiled module loads, since numba picks a function's
  cache folder when the function is decorated;
- numba's lowering registries left to the first compile (:mod:`engine.numba_registries`);
- XLA's host devices, one per usable core (``XLA_FLAGS``,
  :func:`backend_xla.devices.configure_host_devices`): before jax starts;
- for the engine process only (``clean=True``), other versions' numba caches unused for a week
  removed.

Who calls it: ``engine.uci`` when run as the program (``python -m engine.uci``, ``bin/xlazero``),
``engine.__main__`` (``python -m engine``, the installed ``xlazero`` script), tests/conftest.py,
and bin/_venv.py, the bootstrap of every tool in bin/ (numba's cache at once, XLA's devices when
the tool first imports jax). Code that imports the search without it still runs, with numba's
default cache folder (the compiled board warns: ``compiled_cache.warn_if_not_configured``) and
one XLA CPU device.

The rest of the start-up:

- the command line (:mod:`engine.startup.cmdline`): flags, lc0's short ones and the
  configuration file, read into option values that engine.uci's ``main`` starts the session
  with;
- the collector (:mod:`engine.startup.collector`): nothing at start-up; the engine freezes what
  its load made once a network is loaded (the controller calls it), the tests between modules
  (tests/conftest.py);
- the engine's bytecode (:func:`write_bytecode`), written by ``--warm-up``.

:func:`engine.hooks.hooks` says whether each hook into a dependency's private internals took
effect in this process (tests/test_private_hooks.py asserts each on the versions pyproject.toml
pins).
"""

from __future__ import annotations

import threading
from pathlib import Path

_lock = threading.Lock()
_configured: dict[str, object] = {}


def configure(
    *, host_devices: bool = True, defer_registries: bool = True, clean: bool = False
) -> Path:
    """Configure this process (see the module docstring); returns numba's cache folder. Calling it
    again changes nothing, except that a step a former call left out (``host_devices``,
    ``defer_registries``, ``clean``) is then done. ``defer_registries`` imports numba (about a
    second on a loaded 2-core machine): the tools' bootstrap, bin/_venv.py, leaves it out."""
    from engine import compiled_cache

    with _lock:
        if "numba_cache" not in _configured:
            _configured["numba_cache"] = compiled_cache.configure()
        if defer_registries and "deferred" not in _configured:
            from engine.numba_registries import defer_until_a_compile

            _configured["deferred"] = defer_until_a_compile()
        if host_devices and "host_devices" not in _configured:
            from backend_xla.devices import configure_host_devices

            _configured["host_devices"] = configure_host_devices()
        if clean and "cleaned" not in _configured:
            _configured["cleaned"] = compiled_cache.remove_stale()
        folder = _configured["numba_cache"]
    assert isinstance(folder, Path)
    return folder


def is_configured() -> bool:
    """Whether :func:`configure` ran in this process."""
    return "numba_cache" in _configured


BYTECODE_PACKAGES = ("engine", "backend_xla")
PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent


def write_bytecode(root: Path = PROJECT_ROOT) -> bool:
    """Compile the engine's own modules to bytecode (``__pycache__``), which later starts read
    instead of compiling the sources: 0.05 s of a warm start. Python writes it itself on the
    first import unless told not to (``PYTHONDONTWRITEBYTECODE``, ``-B``), as some setups do;
    an install that is not writable just goes without. Returns whether every module compiled."""
    import compileall

    ok = True
    for package in BYTECODE_PACKAGES:
        folder = root / package
        if folder.is_dir():
            ok = bool(compileall.compile_dir(folder, quiet=2, workers=1)) and ok
    return ok
