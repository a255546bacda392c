"""Whether each hook into a dependency's private internals took effect in this process.

The engine reaches into numba, JAX and XLA where their public interfaces do not say what it needs
(each hook's module says why); pyproject.toml bounds those libraries to the versions it is tested
with, and tests/test_private_hooks.py asserts that every hook takes effect on them. Where another
version changed the internals, a hook leaves the library's own behaviour (slower, never wrong)
and says so here; the engine reports it as an ``info string warning`` when it loads a network
(engine/loading.py). This module reads the hooks' modules where they are loaded and imports
nothing itself.
"""

from __future__ import annotations

import sys


def hooks() -> dict[str, bool | None]:
    """Each hook into a dependency's private internals, and whether it took effect in this
    process: True, False (it found other internals and left the dependency's own behaviour), or
    None (not used yet in this process, e.g. nothing compiled)."""
    report: dict[str, bool | None] = {}
    registries = sys.modules.get("engine.numba_registries")
    report["numba.registries_deferred"] = (
        registries.deferral_in_place() if registries is not None else None
    )
    calls = sys.modules.get("engine.search.core.calls")
    report["numba.uncounted"] = calls.STATUS["uncounted"] if calls is not None else None
    report["numba.direct_calls"] = calls.direct_calls_took_effect() if calls is not None else None
    warmup = sys.modules.get("engine.search.warmup")
    report["numba.index_named"] = (
        warmup.INDEX_FOUND["numba_index_named"] if warmup is not None else None
    )
    runtime = sys.modules.get("backend_xla.runtime")
    for name in ("jax_cache_bypass", "xla_threads_pinned", "xla_codegen_threads_named"):
        report[f"jax.{name}"] = runtime.HOOKS[name] if runtime is not None else None
    report["jax.executables_serialized"] = (
        runtime.HOOKS["executables_serialized"] if runtime is not None else None
    )
    return report


def not_in_effect() -> list[str]:
    """The hooks that did not take effect in this process (:func:`hooks` False)."""
    return [name for name, took in hooks().items() if took is False]
