"""JAX runtime glue: plugin registration, compilation cache, parameter upload, compilation (on one
device, or split over several as :mod:`backend_xla.devices` decides)."""

from __future__ import annotations

import os

import threading
from pathlib import Path
from typing import Any

import numpy as np

from . import devices as device_split
from .errors import NetworkError, OptionError
from .options import SPLIT_MIN_ROWS, default_cache_dir

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

    if directory == "default" and os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        path = os.environ["JAX_COMPILATION_CACHE_DIR"]  # JAX's own setting wins over ours
    else:
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


def setup(options: dict[str, Any]) -> list:
    """Apply the process-wide options; return the JAX devices one batch is split over
    (:func:`backend_xla.devices.select`)."""
    with _setup_lock:
        if options["plugin_path"]:
            _register_plugin(options["plugin_path"])
        _enable_cache(options["cache_dir"])
        return device_split.select(options)


class Params:
    """The large initializers, uploaded once: ``split``, replicated over the split devices (one
    copy each, ONNX filter layout) and ``single``, for programs that run on the first device
    (conv filters HWIO, see ``Converter._conv_weights_to_hwio``; the other parameters are the
    first device's copy of ``split``, not uploaded twice)."""

    def __init__(self, converter, devices: list) -> None:
        import jax

        self.devices = devices
        single = converter.params_for(hwio_filters=True)
        if len(devices) == 1:
            self.single = {k: jax.device_put(v, devices[0]) for k, v in single.items()}
            self.split = None
            return
        replicated = device_split.replicated(devices)
        self.split = {k: jax.device_put(v, replicated)
                      for k, v in converter.params_for(hwio_filters=False).items()}
        self.single = {k: jax.device_put(single[k], devices[0]) if k in converter.hwio_weights
                       else next(s.data for s in v.addressable_shards if s.device == devices[0])
                       for k, v in self.split.items()}


def upload(converter, devices) -> Params:
    """Put the large initializers on the device(s) once; every batch size shares them."""
    return Params(converter, list(devices) if isinstance(devices, (list, tuple)) else [devices])


def lower(converter, batch_size: int, params: dict[str, Any], hwio_filters: bool = False):
    """The jitted function lowered for ``batch_size`` (gives HLO text / proto)."""
    import jax

    fn, specs = converter.function(batch_size, hwio_filters)
    shapes = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in specs]
    param_shapes = {k: jax.ShapeDtypeStruct(v.shape, v.dtype) for k, v in params.items()}
    try:
        return jax.jit(fn).lower(param_shapes, *shapes)
    except NetworkError:
        raise
    except Exception as exc:
        raise NetworkError(f"{converter.source}: lowering for batch size {batch_size} failed: "
                           f"{type(exc).__name__}: {exc}") from exc


def _lower_split(converter, rows: int, params: Params):
    """``fn`` under ``shard_map``: each device converts/runs the graph on its ``rows / n`` rows.

    The graph is converted for the per-device batch (its Shape/Reshape constants see that), the
    parameters are replicated (``PartitionSpec()``) and every input and output is split on axis 0;
    the devices do not communicate.
    """
    import jax

    n = len(params.devices)
    fn, _ = converter.function(rows // n)
    specs = converter.input_specs(rows)
    sharded = device_split.shard_batch(fn, params.devices, len(specs), n_replicated=1)
    split = device_split.batch_sharding(params.devices)
    shapes = [jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=split) for s in specs]
    param_shapes = {k: jax.ShapeDtypeStruct(v.shape, v.dtype, sharding=v.sharding)
                    for k, v in params.split.items()}
    try:
        return jax.jit(sharded).lower(param_shapes, *shapes), split
    except NetworkError:
        raise
    except Exception as exc:
        raise NetworkError(f"{converter.source}: lowering for batch size {rows} split over {n} "
                           f"devices failed: {type(exc).__name__}: {exc}") from exc


class Executable:
    """One compiled batch size. ``rows``: the batch it takes (``batch_size`` rounded up to a
    multiple of the device count when split); ``devices``: how many devices share it."""

    def __init__(self, compiled, params: dict[str, Any], rows: int, devices: int,
                 input_sharding=None) -> None:
        self.compiled, self.params, self.rows, self.devices = compiled, params, rows, devices
        self.input_sharding = input_sharding

    def __call__(self, *inputs: np.ndarray):
        if self.input_sharding is not None:
            import jax

            inputs = tuple(jax.device_put(x, self.input_sharding) for x in inputs)
        return self.compiled(self.params, *inputs)


def compile_function(converter, batch_size: int, params: Params,
                     min_rows_per_device: int = SPLIT_MIN_ROWS) -> Executable:
    """Compile the network for ``batch_size``; split over the devices of ``params`` when
    :func:`backend_xla.devices.split_rows` says so, else on the first device alone."""
    import jax

    n = len(params.devices)
    rows = device_split.split_rows(batch_size, n, min_rows_per_device)
    split = rows is not None
    with jax.default_device(params.devices[0]):
        if split:
            lowered, sharding = _lower_split(converter, rows, params)
        else:
            rows, sharding = batch_size, None
            lowered = lower(converter, batch_size, params.single, hwio_filters=True)
        try:
            compiled = lowered.compile()
        except Exception as exc:
            raise NetworkError(f"{converter.source}: compiling batch size {batch_size} failed: "
                               f"{type(exc).__name__}: {exc}") from exc
    return Executable(compiled, params.split if split else params.single, rows,
                      n if split else 1, sharding)
