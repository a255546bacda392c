"""XLA backend: lc0 ONNX networks converted to JAX/HLO, compiled and evaluated with XLA.

A load (:func:`load_network`) is one pass through named stages, each a function of the stage
before, each in its own module and each entered once:

    the options' text  -> options     read-only, every key filled in: read once against the
                                      table of options.OPTIONS (engine.backend.read_options)
    where it runs      -> devices     the JAX devices a batch is split over, the cache folder
                                      (runtime.setup)
    the cache          -> Cached      the file's converted network, which stands in for stages
                                      1-3 on a warm start (exec_cache.lookup)
    1-2. read          -> Model       the file's ONNX model (an lc0 weight file as lc0's
                                      leela2onnx would write it), its input and outputs checked
                                      as lc0's, its heads and input format (network_file.read)
    3. the function    -> Converter   the network as a JAX function (onnx_to_jax.convert), kept
                                      in the cache (Cached.keep)
    4. placed          -> Params      its parameters on the devices, once for every batch size
                                      (devices.upload)
    5. compiled        -> Compiled    its executables by batch size: the search's minibatch's now,
                                      the others when a batch needs them (buckets.compile_sizes)
    the network        -> XlaNetwork  evaluates batches (network.XlaNetwork)

The caches wrap stages and never call back: a cached converter converts the file (stages 1-3
again, :func:`_reconvert`) only when asked for more than its parameters.

Importing this package is cheap (JAX and the stages' modules are imported only when a network is
loaded) and registers the backend with the engine under the name "xla".

Importing it changes nothing global (no environment variable, no JAX setting). One XLA CPU
device per usable core, so that a batch can be split over the cores (XLA's CPU convolution runs on
one thread; docs/performance.md), is the process's set-up
(:func:`backend_xla.devices.configure_host_devices`, called by :func:`engine.startup.configure`
before jax starts, as the engine, the tests and the tools do); without it the network runs on
the devices jax has.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from engine.backend import register_backend

from .errors import NetworkError, OptionError, UnsupportedOpError

if TYPE_CHECKING:
    import onnx

    from .network import XlaNetwork

__all__ = ["NetworkError", "OptionError", "UnsupportedOpError", "load_network"]


def load_network(path: str | os.PathLike | onnx.ModelProto, options: str = "") -> XlaNetwork:
    """Load, convert and compile an lc0 network (ONNX file, lc0 .pb.gz or an onnx.ModelProto).

    ``options`` uses lc0's --backend-opts syntax ("key=value,key=value"); see
    :mod:`backend_xla.options` for the keys; the stages of a load: this module's docstring.
    """
    from functools import partial

    from engine.backend.options import read_options

    from . import runtime
    from .buckets import compile_sizes
    from .devices import upload
    from .exec_cache import lookup
    from .network import XlaNetwork
    from .network_file import read
    from .onnx_to_jax import convert
    from .options import BACKEND, OPTIONS

    parsed = read_options(options, OPTIONS, BACKEND)
    devices, cache_dir = runtime.setup(parsed)
    platform = devices[0].platform
    cached = lookup(path, parsed, platform, cache_dir, partial(_reconvert, path, parsed, platform))
    converter: Any
    if cached.converter is not None and cached.heads is not None:
        converter, heads, name = cached.converter, cached.heads, str(path)
    else:
        model = read(path, parsed)
        converter = convert(model, parsed, platform)
        heads, name = model.heads, model.name
        if not model.external:  # the file's digest, the cache's key, misses the other files
            cached.keep(converter, platform, heads)
    params = upload(converter, devices)
    compiled = compile_sizes(converter, params, devices, parsed, cached.digest)
    return XlaNetwork(
        parsed, name, heads, devices, converter, params, compiled, cached.networks, cached.digest
    )


def _reconvert(path, options, platform: str):
    """Stages 1-3 for a network first loaded from the cache of converted networks, once something
    needs more than its parameters."""
    from .network_file import read
    from .onnx_to_jax import convert

    return convert(read(path, options), options, platform)


def _import_jax() -> None:
    """What every load needs first: jax (a third of a second to import; see engine/uci.py's
    start-up for why the entry point imports it before the search's warm-up starts)."""
    import jax  # noqa: F401


register_backend("xla", load_network, prepare=_import_jax)
