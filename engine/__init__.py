"""xlazero engine: UCI loop, search, encoding and time management."""

import sys as _sys

from engine.compiled_cache import configure as _configure_compiled_cache

__version__ = "0.1.0"

_configure_compiled_cache()  # sets NUMBA_CACHE_DIR only; nothing on disk changes at import


def _import_numba_without_scipy() -> None:
    """Import numba with scipy kept out: numba's import loads scipy.linalg (a third of a second,
    a quarter of a warm start) only to see whether compiled code may call BLAS (``np.dot``),
    which the engine's compiled code never does (engine/compiled_cache.py's sources). A ``None`` in ``sys.modules`` is Python's way
    to make an import fail at once; it is removed right after, so later imports of scipy (by
    jax.scipy, say) work as usual. Where scipy is already loaded, numba finds it as always."""
    if "numba" in _sys.modules or "scipy" in _sys.modules:
        return
    _sys.modules["scipy"] = None  # type: ignore[assignment]
    try:
        import numba  # noqa: F401

        # The module that checks, which numba imports at its first compile or cache load.
        import numba.np.arraymath  # noqa: F401
    except ImportError:
        pass  # another numba layout: it checks as it always does
    finally:
        if _sys.modules.get("scipy", ...) is None:
            del _sys.modules["scipy"]


_import_numba_without_scipy()
