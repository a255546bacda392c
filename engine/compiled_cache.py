"""Where numba caches the compiled search: one directory per version of the compiled sources.

numba checks a cached function against its own file's time stamp only, so a function keeps
its cached machine code, callees inlined, after a callee in another file changed (a constant
of engine/board/moves.py, say, inside engine/board/make.py's ``find_move``). A ``git pull`` that
touches only the callee's file then runs stale code. Keying the cache directory by a hash of
every compiled source rules that out: a changed source starts a new, empty cache.

The directory is numba's documented override, ``NUMBA_CACHE_DIR``: under the one the user set,
else under the user's cache directory (``$XDG_CACHE_HOME`` or ``~/.cache``), so a read-only
install caches too. Other versions' directories unused for a week are removed (not sooner:
another checkout may be using one right now).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import time
from pathlib import Path

_ENGINE = Path(__file__).resolve().parent
COMPILED_SOURCES = ("board", "encoding/rows.py", "search/core", "search/search.py")
"""Files and folders (relative to engine/) whose functions numba compiles."""
STALE_AFTER_S = 7 * 24 * 3600


def sources_hash() -> str:
    digest = hashlib.sha1()
    for entry in COMPILED_SOURCES:
        path = _ENGINE / entry
        for file in sorted(path.glob("*.py")) if path.is_dir() else [path]:
            digest.update(file.relative_to(_ENGINE).as_posix().encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def configure() -> Path:
    """Point numba's cache at this version's directory (before any compiled module loads);
    returns it."""
    base = os.environ.get("XLAZERO_NUMBA_CACHE_BASE")
    if base is None:
        user = os.environ.get("NUMBA_CACHE_DIR")
        cache_home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        base = str(Path(user) if user else cache_home / "xlazero" / "numba")
        os.environ["XLAZERO_NUMBA_CACHE_BASE"] = base  # child processes keep the same base
    here = Path(base) / sources_hash()
    os.environ["NUMBA_CACHE_DIR"] = str(here)
    if "numba" in sys.modules:
        sys.modules["numba"].config.CACHE_DIR = str(here)
    try:
        for old in Path(base).iterdir():
            unused = time.time() - old.stat().st_mtime > STALE_AFTER_S
            if old.is_dir() and old.name != here.name and len(old.name) == 16 and unused:
                shutil.rmtree(old, ignore_errors=True)
    except OSError:
        pass  # no base yet, or not ours to clean: numba creates what it needs
    return here
