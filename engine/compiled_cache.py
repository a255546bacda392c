"""Where numba caches the compiled search: one directory per version of the compiled sources.

numba checks a cached function against its own file's time stamp only, so a function keeps
its cached machine code, callees inlined, after a callee in another file changed (a constant
of engine/board/moves.py, say, inside engine/board/make.py's ``find_move``). A ``git pull`` that
touches only the callee's file then runs stale code. Keying the cache directory by a hash of
every compiled source rules that out: a changed source starts a new, empty cache.

The directory is numba's documented override, ``NUMBA_CACHE_DIR``: under the one the user set,
else under the user's cache directory (``$XDG_CACHE_HOME`` or ``~/.cache``), so a read-only
install caches too. :func:`configure` (run by the process's set-up, engine/startup/) only sets
that variable; it writes nothing. The engine process calls :func:`remove_stale` when it starts: other versions'
directories unused for a week are removed (not sooner: another checkout may be using one right
now).

tests/engine/test_compiled_cache.py checks that every file with compiled functions, and every
module whose names their bodies read, is in :data:`COMPILED_SOURCES`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import time
from pathlib import Path

_ENGINE = Path(__file__).resolve().parent
COMPILED_SOURCES = (
    "backends/random.py",
    "backends/random_lc0.py",
    "board",
    "encoding/rows.py",
    "search/core",
)
"""Files and folders (relative to engine/) whose functions numba compiles, with the modules
whose constants those functions read (numba compiles a global's value in)."""
STALE_AFTER_S = 7 * 24 * 3600


def source_files(root: Path = _ENGINE) -> list[Path]:
    """The files :data:`COMPILED_SOURCES` names under ``root`` (an engine/ folder), in hash order."""
    files: list[Path] = []
    for entry in COMPILED_SOURCES:
        path = root / entry
        files.extend(sorted(path.glob("*.py")) if path.is_dir() else [path])
    return files


GENERATION = b"2: compiled in one process"
"""Part of every version: caches written by the warm-up of two processes (before generation 2)
hold a search 0.6 times as fast (engine/search/warmup.py), so they are not used again."""


def sources_hash(root: Path = _ENGINE) -> str:
    """The version of the compiled sources under ``root`` (an engine/ folder)."""
    digest = hashlib.sha1(GENERATION)
    for file in source_files(root):
        digest.update(file.relative_to(root).as_posix().encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def _base() -> Path:
    """The folder holding one cache directory a version (the same for child processes)."""
    base = os.environ.get("XLAZERO_NUMBA_CACHE_BASE")
    if base is None:
        user = os.environ.get("NUMBA_CACHE_DIR")
        cache_home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        base = str(Path(user) if user else cache_home / "xlazero" / "numba")
        os.environ["XLAZERO_NUMBA_CACHE_BASE"] = base  # child processes keep the same base
    return Path(base)


def configure() -> Path:
    """Point numba's cache at this version's directory (before any compiled module loads);
    returns it. Sets environment variables only: it creates and removes nothing (numba creates
    the directory when it first writes there)."""
    here = _base() / sources_hash()
    os.environ["NUMBA_CACHE_DIR"] = str(here)
    if "numba" in sys.modules:
        sys.modules["numba"].config.CACHE_DIR = str(here)
    return here


def warn_if_not_configured() -> None:
    """Warn (and change nothing) where the compiled modules load in a process that was not set
    up (:func:`engine.startup.configure`): numba then caches them beside the sources, keyed by
    their files' time stamps only, so a stale callee can run (this module's docstring)."""
    if Path(os.environ.get("NUMBA_CACHE_DIR", "")).name != sources_hash():
        import warnings

        warnings.warn(
            "xlazero's compiled modules were imported before engine.startup.configure(): "
            "numba caches them beside the sources, where a changed callee in another file "
            "is not seen; call configure() first (the engine, the tests and bin/ do)",
            stacklevel=3,
        )


def remove_stale() -> list[Path]:
    """Remove other versions' cache directories unused for :data:`STALE_AFTER_S`; returns them.
    For the engine process's start, not for ``import engine``."""
    here = configure()
    removed: list[Path] = []
    try:
        for old in here.parent.iterdir():
            unused = time.time() - old.stat().st_mtime > STALE_AFTER_S
            if old.is_dir() and old.name != here.name and len(old.name) == 16 and unused:
                shutil.rmtree(old, ignore_errors=True)
                removed.append(old)
    except OSError:
        pass  # no base yet, or not ours to clean: numba creates what it needs
    return removed
