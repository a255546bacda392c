"""Loading a network: one pass through named stages, each a function of the stage before, each in
its own module, so that a load enters each module once.

    the options' text  -> options     read-only, every key filled in (options.parse_pairs, once)
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

The caches wrap stages and never call back here: a cached converter converts the file (stages
1-3 again, :func:`reconvert`) only when asked for more than its parameters.
"""

from __future__ import annotations

import os
from functools import partial
from typing import TYPE_CHECKING, Any

from engine.backend import split_options

from . import runtime
from .buckets import compile_sizes
from .devices import upload
from .exec_cache import lookup
from .network import XlaNetwork
from .network_file import read
from .onnx_to_jax import convert
from .options import parse_pairs

if TYPE_CHECKING:
    import onnx


def load(path: str | os.PathLike | onnx.ModelProto, text: str = "") -> XlaNetwork:
    """The network at ``path`` (an ONNX file, an lc0 weight file, or an onnx.ModelProto) for the
    backend options ``text`` (lc0's --backend-opts syntax)."""
    options = parse_pairs(split_options(text))
    devices, cache_dir = runtime.setup(options)
    platform = devices[0].platform
    cached = lookup(path, options, platform, cache_dir, partial(reconvert, path, options, platform))
    converter: Any
    if cached.converter is not None and cached.heads is not None:
        converter, heads, name = cached.converter, cached.heads, str(path)
    else:
        model = read(path, options)
        converter = convert(model, options, platform)
        heads, name = model.heads, model.name
        if not model.external:  # the file's digest, the cache's key, misses the other files
            cached.keep(converter, platform, heads)
    params = upload(converter, devices)
    compiled = compile_sizes(converter, params, devices, options, cached.digest)
    return XlaNetwork(
        options, name, heads, devices, converter, params, compiled, cached.networks, cached.digest
    )


def reconvert(path, options, platform: str):
    """Stages 1-3 for a network first loaded from the cache of converted networks, once something
    needs more than its parameters."""
    return convert(read(path, options), options, platform)
