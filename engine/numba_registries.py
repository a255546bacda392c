"""numba's lowering registries, imported only when numba compiles something.

Before it loads or compiles a function, numba imports and installs every implementation it
knows (``CPUContext.load_additional_registries``: arrays, strings, dicts, random numbers, …,
and ``numba.np.arraymath``, which imports ``scipy.linalg`` to see whether compiled code may call
BLAS). A function read from numba's cache needs none of it: its machine code is there, linked
with its callees. On a warm start that import is a sixth of a second of the GIL, an eighth of
the time to ``readyok`` (issue 41). :func:`defer_until_a_compile` therefore lets a cache load
(numba's ``Cache.load_overload``) initialise only numba's runtime (NRT, which the loaded code
calls), without refreshing numba's context, and leaves the registries to the first refresh,
which every compile makes before it types anything (``CompilerBase.__init__``): a cold start
compiles as before, and once something has compiled, loads refresh as numba always does.

The BLAS check runs with ``scipy.linalg`` hidden: the engine's compiled code never calls BLAS
(``np.dot``), and importing scipy.linalg costs a tenth of a second. A ``None`` in
``sys.modules`` makes that one import fail at once; it is removed right after, so a later
``import scipy.linalg`` (by jax.scipy, say) works as usual.

Where numba's internals differ from what this expects (another numba version), nothing is
changed and numba behaves as it always does; :func:`deferral_in_place` says which (the engine's
start-up, engine/startup/, calls :func:`defer_until_a_compile`; tests/test_private_hooks.py
asserts that it takes effect on the pinned numba).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

_lock = threading.Lock()
_state = {"patched": False, "full": False}


def defer_until_a_compile() -> bool:
    """Make cache loads skip numba's lowering registries (until something compiles); returns
    whether the deferral is in place (False: this numba is not the one it expects)."""
    import numba  # noqa: F401  (the public import first: it sets numba's configuration up)

    try:
        from numba.core import caching, cpu
        from numba.core.runtime import rtsys
    except ImportError:
        return False
    with _lock:
        if _state["patched"]:
            return True
        registries = getattr(cpu.CPUContext, "load_additional_registries", None)
        load = getattr(caching.Cache, "load_overload", None)
        needed = ("_load_overload", "_guard_against_spurious_io_errors")
        if registries is None or load is None or not all(hasattr(caching.Cache, n) for n in needed):
            return False

        def load_additional_registries(self: Any) -> None:
            if _state["full"]:
                registries(self)
                return
            _state["full"] = True
            _with_scipy_linalg_hidden(lambda: registries(self))

        def load_overload(self: Any, sig: Any, target_context: Any) -> Any:
            if _state["full"]:
                return load(self, sig, target_context)  # refreshes the context, as always
            rtsys.initialize(target_context)  # the runtime the loaded machine code calls
            with self._guard_against_spurious_io_errors():
                return self._load_overload(sig, target_context)

        cpu.CPUContext.load_additional_registries = load_additional_registries
        caching.Cache.load_overload = load_overload
        _state["patched"] = True
    return True


def deferral_in_place() -> bool:
    """Whether :func:`defer_until_a_compile` took effect in this process (numba's internals were
    the ones it expects, and its replacements are installed)."""
    return _state["patched"]


def registries_loaded() -> bool:
    """Whether numba has installed its lowering registries in this process (it compiled)."""
    return _state["full"] or not _state["patched"]


def _with_scipy_linalg_hidden(action: Callable[[], None]) -> None:
    """Run ``action`` with ``import scipy.linalg`` failing at once (unless already imported)."""
    hidden = next((name for name in ("scipy", "scipy.linalg") if name not in sys.modules), None)
    if hidden is not None:
        sys.modules[hidden] = None  # type: ignore[assignment]
    try:
        action()
    finally:
        if hidden is not None and sys.modules.get(hidden, ...) is None:
            del sys.modules[hidden]
