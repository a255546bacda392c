"""xlazero engine: UCI loop, search, encoding and time management."""

from engine.compiled_cache import configure as _configure_compiled_cache

__version__ = "0.1.0"

_configure_compiled_cache()  # sets NUMBA_CACHE_DIR only; nothing on disk changes at import
