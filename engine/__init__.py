"""xlazero engine: UCI loop, search, encoding and time management."""

from engine.compiled_cache import configure as _configure_compiled_cache

__version__ = "0.1.0"

_configure_compiled_cache()  # sets NUMBA_CACHE_DIR only; nothing on disk changes at import


def _prepare_numba() -> None:
    """Import numba so that a start whose search is in numba's cache loads no more of it than
    that needs (engine/numba_registries.py)."""
    from engine.numba_registries import defer_until_a_compile

    defer_until_a_compile()


_prepare_numba()
