"""Loading a network: one pass through named stages, each a function of the stage before.

    the options' text  -> options     read-only, every key filled in (options.parse_options, once)
    where it runs      -> devices     the JAX devices a batch is split over (runtime.setup)
    1. read            -> Source      the file's converted network from the cache, else its
                                      model (ONNX, or an lc0 weight file as lc0's leela2onnx
                                      would write it)
    2. lc0's graph     -> Heads       lc0's input and outputs checked, the input format
    3. the function    -> converter   the network as a JAX function (a Converter; from the cache
                                      a CachedConverter, which converts the file only when asked
                                      for more than the parameters)
    4. placed          -> Params      its parameters on the devices, once for every batch size
    5. compiled        -> Buckets     its executables by batch size: the search's minibatch's now,
                                      the others when a batch needs them

The caches wrap stages and never call back here: the cache of converted networks stands in for
stages 1-3 on a warm start (written by stage 3), the cache of executables for stage 5.
"""

from __future__ import annotations

import os
import queue
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import runtime
from .buckets import Buckets
from .exec_cache import (
    NETWORK_SUBDIR,
    CachedConverter,
    ExecutableCache,
    NetworkCache,
    entry_key,
    file_digest,
    network_entry,
    network_key,
)
from .network import CONCURRENT_CALLS, XlaNetwork, preferred_minibatch
from .network_file import (
    Heads,
    check_model,
    conversion_options,
    convert,
    convert_file,
    external_data,
    is_model,
    read_model,
)
from .options import BackendOptions, batch_sizes, parse_options

if TYPE_CHECKING:
    import onnx


def load(path: str | os.PathLike | onnx.ModelProto, text: str = "") -> XlaNetwork:
    """The network at ``path`` (an ONNX file, an lc0 weight file, or an onnx.ModelProto) for the
    backend options ``text`` (lc0's --backend-opts syntax)."""
    options = parse_options(text)
    devices = runtime.setup(options)
    platform = devices[0].platform
    source = read(path, options, platform)
    heads = lc0_graph(source, options)
    converter = jax_function(source, heads, options, platform)
    params = runtime.upload(converter, devices)
    compiled = compile_sizes(converter, params, devices, options, source.digest)
    return XlaNetwork(
        options, source.name, heads, devices, converter, params, compiled, source.networks,
        source.digest,
    )  # fmt: skip


@dataclass(frozen=True)
class Source:
    """What stage 1 read: the cache's converted network (``entry``) or the model."""

    path: str | os.PathLike | None
    """The file (None: an in-memory model)."""
    name: str
    """The network's name in messages (its file's path)."""
    digest: str | None
    """The file's sha256 where the caches are on (their keys), else None."""
    networks: NetworkCache | None
    """The cache of converted networks (None: ``cache_dir=none``, or not a file)."""
    key: str | None
    entry: dict[str, Any] | None
    model: Any = None
    base_dir: Path | None = None
    """The folder of an ONNX file's external data."""


def read(path, options: BackendOptions, platform: str) -> Source:
    """Stage 1: the converted network the cache keeps for this file, options and platform, or
    else the file read as ONNX."""
    if is_model(path):
        model, name, base_dir = read_model(path, options)
        return Source(None, name, None, None, None, None, model, base_dir)
    digest = None
    cache_dir = runtime.cache_path(options["cache_dir"])
    if cache_dir is not None:
        try:
            digest = file_digest(path)
        except OSError:
            pass  # reported by the reading below
    networks = key = entry = None
    if cache_dir is not None and digest is not None:
        networks = NetworkCache(Path(cache_dir) / NETWORK_SUBDIR)
        key = network_key(digest, conversion_options(options))
        entry = networks.load(key)
    if entry is not None and entry["platform"] == platform:
        return Source(path, str(path), digest, networks, key, entry)
    # None, or converted for another platform's convolution: convert again
    model, name, base_dir = read_model(path, options)
    return Source(path, name, digest, networks, key, None, model, base_dir)


def lc0_graph(source: Source, options: BackendOptions) -> Heads:
    """Stage 2: the heads, after checking that the model's input and outputs are lc0's."""
    if source.entry is not None:
        entry = source.entry
        return Heads(entry["has_wdl"], entry["has_mlh"], entry["input_format"])
    return check_model(source.model, source.name, options)


def jax_function(source: Source, heads: Heads, options: BackendOptions, platform: str):
    """Stage 3: the network as a JAX function; a file's conversion is kept in the cache of
    converted networks (not one whose weights lie in other files, which the digest misses)."""
    if source.entry is not None:
        path, outputs = source.path, source.entry["outputs"]
        return CachedConverter(
            source.entry, source.name, lambda: convert_file(path, outputs, options, platform)
        )
    converter = convert(
        source.model, source.name, source.base_dir, heads.outputs, options, platform
    )
    if source.networks is not None and source.key is not None and not external_data(source.model):
        source.networks.store(source.key, network_entry(converter, platform, *heads))
    return converter


@dataclass(frozen=True)
class Compiled:
    """Stage 5's value: the batch sizes and the programs that make and keep their executables."""

    sizes: list[int]
    preferred_batch: int
    """The search's minibatch on this platform (within the largest size)."""
    concurrency: int
    """Calls worth running at once: an unsplit batch runs on one device."""
    free_devices: queue.SimpleQueue[int]
    """The devices no call is using (one call each)."""
    executables: ExecutableCache | None
    """The engine's cache of whole programs (None: ``cache_dir=none``, or not a file)."""
    programs: ProgramMaker
    buckets: Buckets
    load_size: int
    """The size compiled at load: the smallest that holds the search's minibatch."""


def compile_sizes(
    converter, params: runtime.Params, devices: list, options: BackendOptions, digest: str | None
) -> Compiled:
    """Stage 5: the batch sizes, the size the search's minibatch needs compiled (or loaded from
    the cache of executables) now, the others as ``background_compile`` says."""
    minibatch = preferred_minibatch(devices[0].platform)
    sizes = batch_sizes(options, minibatch)
    preferred = min(sizes[-1], minibatch)
    executables = runtime.executable_cache() if digest else None
    concurrency = min(len(devices), CONCURRENT_CALLS)
    free: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(concurrency):
        free.put(i)
    programs = ProgramMaker(converter, params, devices, options, concurrency, executables, digest)
    buckets = Buckets(sizes, options["background_compile"], programs)
    load_size = buckets.start(preferred)
    return Compiled(sizes, preferred, concurrency, free, executables, programs, buckets, load_size)


@dataclass(frozen=True)
class ProgramMaker:
    """Makes the program of one batch size: compiled, or loaded from the engine's cache."""

    converter: Any
    params: runtime.Params
    devices: list
    options: BackendOptions
    copies: int
    cache: ExecutableCache | None
    """The engine's cache of programs (:func:`backend_xla.runtime.executable_cache`), or None."""
    network_digest: str | None

    def __call__(self, batch_size: int) -> runtime.Executable:
        return runtime.compile_function(
            self.converter,
            batch_size,
            self.params,
            self.options["split_min_rows"],
            self.options["hlo_proto_dump_dir"],
            copies=self.copies,
            cache=self.cache,
            cache_key=self.cache_key(batch_size),
        )

    def cache_key(self, batch_size: int) -> str | None:
        if self.cache is None or self.network_digest is None:
            return None
        parts = (batch_size, self.copies, self.options["split_min_rows"])
        return entry_key(self.network_digest, conversion_options(self.options), parts, self.devices)
