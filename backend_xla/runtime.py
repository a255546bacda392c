"""JAX runtime glue: plugin registration, compilation cache, device choice, compilation."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

from .errors import NetworkError, OptionError
from .options import default_cache_dir

_setup_lock = threading.Lock()
_plugins: set[str] = set()
_cache_dir: str | None = None


def _register_plugin(path: str) -> None:
    if path in _plugins:
        return
    if not Path(path).is_file():
        raise OptionError(f"backend option plugin_path: expected an existing .so file, got {path!r}")
    from jax._src import xla_bridge

    try:
        xla_bridge.register_plugin(Path(path).stem, library_path=path)
    except Exception as exc:
        raise OptionError(f"backend option plugin_path: cannot register {path!r}: {exc}") from exc
    _plugins.add(path)


def _enable_cache(directory: str) -> None:
    """Turn on JAX's persistent compilation cache (once per process; later calls keep the first)."""
    global _cache_dir
    if _cache_dir is not None or directory == "none":
        return
    import jax

    path = default_cache_dir() if directory == "default" else directory
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # an unwritable cache only costs time; never fail loading a network for it
    jax.config.update("jax_compilation_cache_dir", path)
    # Cache every executable: ours compile in well under JAX's default 1 s threshold.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    _cache_dir = path


def setup(options: dict[str, Any]):
    """Apply the process-wide options and return the JAX device to run on."""
    with _setup_lock:
        if options["plugin_path"]:
            _register_plugin(options["plugin_path"])
        _enable_cache(options["cache_dir"])
        import jax

        devices = jax.devices()
        index = options["device"]
        if index >= len(devices):
            raise OptionError(f"backend option device: expected an index below {len(devices)} "
                              f"({devices}), got {index}")
        return devices[index]


def upload(params: dict[str, np.ndarray], device) -> dict[str, Any]:
    """Put the large initializers on the device once; every batch size shares them."""
    import jax

    return {k: jax.device_put(v, device) for k, v in params.items()}


def lower(converter, batch_size: int, params: dict[str, Any]):
    """The jitted function lowered for ``batch_size`` (gives HLO text / proto)."""
    import jax

    fn, specs = converter.function(batch_size)
    shapes = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in specs]
    param_shapes = {k: jax.ShapeDtypeStruct(v.shape, v.dtype) for k, v in params.items()}
    try:
        return jax.jit(fn).lower(param_shapes, *shapes)
    except NetworkError:
        raise
    except Exception as exc:
        raise NetworkError(f"{converter.source}: lowering for batch size {batch_size} failed: "
                           f"{type(exc).__name__}: {exc}") from exc


def compile_function(converter, batch_size: int, params: dict[str, Any], device):
    """Compile the network for ``batch_size`` on ``device``; returns ``f(params, planes)``."""
    import jax

    with jax.default_device(device):
        lowered = lower(converter, batch_size, params)
        try:
            return lowered.compile()
        except Exception as exc:
            raise NetworkError(f"{converter.source}: compiling batch size {batch_size} failed: "
                               f"{type(exc).__name__}: {exc}") from exc
