"""A loaded lc0 network: converted once, compiled per batch size, evaluated by padding."""

from __future__ import annotations

import os
import queue
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.backend import INPUT_PLANES, POLICY_SIZE, BackendAttributes, NetworkOutput

from . import runtime
from .buckets import Buckets, ProgressCallback
from .errors import NetworkError
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
from .network_file import (
    OUTPUT_POLICY,
    Heads,
    check_model,
    conversion_options,
    convert,
    convert_file,
    external_data,
    is_model,
    read_model,
)
from .options import batch_sizes, parse_options
from .packed import BOARD, pack_planes, packed_words

if TYPE_CHECKING:
    import onnx  # imported where a file is read: a warm start from the caches never needs it

    from .onnx_to_jax import Converter


CPU_MINIBATCH = 7
"""Minibatch the search gathers on a CPU: lc0's CPU backends suggest 7 (blas, eigen, onednn),
and its search keeps 2 such batches in flight, as ours does. Small batches keep PUCT close to
one-visit-at-a-time selection in small trees (docs/engine.md, "Fidelity")."""

CONCURRENT_CALLS = 2
"""Unsplit batches that may run at once, each on its own device (so at most this many copies of
each unsplit program are compiled): the search keeps two batches in flight, as lc0's two search
threads do. More host devices only split the larger batches."""

ACCELERATOR_MINIBATCH = 256
"""Minibatch on a GPU or another accelerator: lc0's default for its GPU backends, wide enough
to keep the device busy."""


def preferred_minibatch(platform: str) -> int:
    """The minibatch size the search should gather for a device of ``platform`` (JAX's name)."""
    return CPU_MINIBATCH if platform == "cpu" else ACCELERATOR_MINIBATCH


class XlaNetwork:
    """An lc0 network compiled with XLA for a set of batch sizes ("buckets").

    ``evaluate(planes)`` takes float32 [N, 112, 8, 8] for any N >= 1: it pads to the smallest
    ready bucket that fits (padding rows are zeros) and splits batches larger than the biggest.
    At load it compiles ``load_size``, the smallest bucket that holds the search's minibatch
    (``preferred_batch``); what else depends on ``background_compile``
    (:data:`backend_xla.buckets.COMPILE_AT_LOAD` and the values beside it). By default a larger
    bucket is compiled only when ``evaluate`` first gets a batch larger than every ready one, in a
    background thread, while that batch runs split over the ready buckets: the search at its
    default minibatch never asks for one, and a warm start leaves nothing to compile after it
    (issue 41). ``ready_sizes`` tells which buckets are compiled, ``compiling`` whether the thread
    is at work; ``warmup()`` compiles every bucket (:class:`backend_xla.buckets.Buckets`, the
    ``buckets`` attribute, keeps them).
    """

    def __init__(self, path: str | os.PathLike | onnx.ModelProto, options: str = "") -> None:
        self.options = parse_options(options)
        is_file = not is_model(path)
        self.source = str(path) if is_file else ""
        cache_dir = runtime.cache_path(self.options["cache_dir"])
        self._network_digest: str | None = None
        if cache_dir is not None and is_file:
            try:
                self._network_digest = file_digest(path)
            except OSError:
                pass  # reported by the reading below
        self.networks = (
            NetworkCache(Path(cache_dir) / NETWORK_SUBDIR)
            if cache_dir is not None and self._network_digest is not None
            else None
        )
        """Converted networks (None: ``cache_dir=none``, or not a file): a warm start reads the
        parameters from there and never opens the file as ONNX."""
        entry = net_key = read = None
        if self.networks is not None and self._network_digest is not None:
            net_key = network_key(self._network_digest, conversion_options(self.options))
            entry = self.networks.load(net_key)
        if entry is None:
            read = self._read(path)
        self.name = Path(self.source).name
        self.devices = runtime.setup(self.options)
        self.device = self.devices[0]
        if entry is not None and entry["platform"] != self.device.platform:
            entry = None  # converted for another platform's convolution: convert again
            read = self._read(path)
        if entry is not None:
            self._use_converted(entry, path)
        else:
            assert read is not None
            self._convert(*read, net_key)
        self.packed_input = bool(self.converter.packed_input)
        """Whether the programs take lc0's packed planes (:meth:`evaluate_packed`)."""
        self._compile_at_load()

    def _read(self, path) -> tuple[Any, Path | None, Heads]:
        """(model, directory for external data, heads), checked; sets the source."""
        model, self.source, base_dir = read_model(path, self.options)
        return model, base_dir, check_model(model, self.source, self.options)

    def _set_heads(self, heads: Heads) -> None:
        self.has_wdl, self.has_mlh, self.input_format = heads

    def _use_converted(self, entry: dict[str, Any], path) -> None:
        """Take the network from the cache of converted networks (its file read only if
        something needs more than the parameters)."""
        self._set_heads(Heads(entry["has_wdl"], entry["has_mlh"], entry["input_format"]))
        outputs, options, platform = entry["outputs"], self.options, self.device.platform
        self.converter: CachedConverter | Converter = CachedConverter(
            entry, self.source, lambda: convert_file(path, outputs, options, platform)
        )

    def _convert(self, model, base_dir: Path | None, heads: Heads, net_key: str | None) -> None:
        """Convert ``model``, and keep it converted where it is a file without external data."""
        self._set_heads(heads)
        platform = self.device.platform
        self.converter = convert(
            model, self.source, base_dir, heads.outputs, self.options, platform
        )
        if self.networks is not None and net_key is not None and not external_data(model):
            entry = network_entry(
                self.converter, platform, self.has_wdl, self.has_mlh, self.input_format
            )
            self.networks.store(net_key, entry)

    def _compile_at_load(self) -> None:
        minibatch = preferred_minibatch(self.device.platform)
        self.sizes = batch_sizes(self.options, minibatch)
        self.max_batch = self.sizes[-1]
        self.preferred_batch = min(self.max_batch, minibatch)
        self.params = runtime.upload(self.converter, self.devices)
        self.executables = runtime.executable_cache() if self._network_digest else None
        """The engine's cache of whole programs (None: ``cache_dir=none``); only for files."""
        self.concurrency = min(len(self.devices), CONCURRENT_CALLS)
        """Calls of ``evaluate`` worth running at once: an unsplit batch runs on one device."""
        self._free_devices: queue.SimpleQueue[int] = queue.SimpleQueue()
        for i in range(self.concurrency):
            self._free_devices.put(i)
        self.programs = ProgramMaker(
            self.converter,
            self.params,
            self.devices,
            self.options,
            self.concurrency,
            self.executables,
            self._network_digest,
        )
        self.mode = self.options["background_compile"]
        self.buckets = Buckets(self.sizes, self.mode, self.programs)
        self.load_size = self.buckets.start(self.preferred_batch)
        """The bucket compiled at load: the smallest that holds the search's minibatch."""

    @property
    def ready_sizes(self) -> list[int]:
        return self.buckets.ready_sizes

    @property
    def compiling(self) -> bool:
        """Whether the background thread is compiling (or about to)."""
        return self.buckets.compiling

    def prepare(self, rows: int) -> None:
        """Have the batch size that holds ``rows`` compiled in the background, if none ready
        does (the engine's hook for a minibatch set above the one compiled at load)."""
        self.buckets.prepare(min(max(rows, 1), self.max_batch))

    def warmup(self, progress: ProgressCallback | None = None) -> None:
        """Compile every batch size now (waiting for the background thread), reporting progress."""
        self.buckets.warmup(progress)

    def close(self) -> None:
        """Stop background compilation (waiting for the size being compiled)."""
        self.buckets.close()

    # -- evaluation --------------------------------------------------------------------------
    def attributes(self) -> BackendAttributes:
        """The engine's view of this network (engine.backend's contract)."""
        return BackendAttributes(
            name=self.name,
            description=tuple(self.describe()),
            max_batch=self.max_batch,
            preferred_batch=self.preferred_batch,
            padded_size=self.padded_size,
            concurrency=self.concurrency,
            packed_input=self.packed_input,
            prepare=self.prepare,
        )

    def describe(self) -> list[str]:
        """What runs where, for the engine's start-up ``info string`` (:func:`describe`)."""
        return describe(self)

    def padded_size(self, n: int) -> int:
        """Rows computed for a batch of ``n``: the compiled size it is padded to (the search fills
        the padding with positions for the NN cache, which then cost nothing extra)."""
        return max(n, self.buckets.pick(n))

    def evaluate(self, planes: np.ndarray) -> NetworkOutput:
        """planes float32 [N, 112, 8, 8] -> NetworkOutput with N rows."""
        planes = np.asarray(planes)
        if planes.ndim != 4 or planes.shape[1:] != (INPUT_PLANES, BOARD, BOARD) or not len(planes):
            raise NetworkError(
                f"{self.source}: evaluate: expected planes [N>=1, {INPUT_PLANES}, "
                f"{BOARD}, {BOARD}], got shape {list(planes.shape)}"
            )
        if self.packed_input:
            return self.evaluate_packed(*pack_planes(planes))
        return self._evaluate([planes.astype(np.float32, copy=False)])

    def evaluate_packed(self, masks: np.ndarray, values: np.ndarray) -> NetworkOutput:
        """lc0's packed planes -> NetworkOutput with N rows: masks uint64 [N, 112] (bit s: square
        s), values float32 [N, 112]. Only a network loaded with ``packed_input`` takes them:
        the device expands them, so a batch crosses to it in a twentieth of the bytes."""
        if not self.packed_input:
            raise NetworkError(
                f"{self.source}: evaluate_packed: expected a network loaded with packed_input "
                f"on, got packed_input=off (call evaluate with the planes)"
            )
        return self._evaluate(list(packed_words(masks, values, self.source)))

    def _evaluate(self, inputs: list[np.ndarray]) -> NetworkOutput:
        total = len(inputs[0])
        self.buckets.prepare(total)
        parts = []
        start = 0
        while start < total:
            size = self.buckets.pick(total - start)
            chunk = [x[start : start + size] for x in inputs]
            parts.append(self._run(size, chunk))
            start += len(chunk[0])
        outs = parts[0] if len(parts) == 1 else [np.concatenate(col) for col in zip(*parts)]
        return self._heads(outs)

    def _run(self, size: int, chunk: list[np.ndarray]) -> list[np.ndarray]:
        n = len(chunk[0])
        executable = self.buckets.executable(size)
        rows = executable.rows  # >= size: a split batch is rounded up to a multiple of devices
        inputs = []
        for x, (_, dtype) in zip(chunk, executable.inputs):
            if n < rows:
                x = np.concatenate([x, np.zeros((rows - n,) + x.shape[1:], x.dtype)])
            inputs.append(x.astype(dtype, copy=False))
        # A program with copies takes a device no other call is using (one core each on a CPU),
        # until its results are read back (np.asarray waits for the device).
        copy = self._free_devices.get() if executable.copies > 1 else None
        try:
            results = executable(*inputs, copy=copy or 0)
            if self.device.platform != "cpu":
                # Every head's copy back starts at once: one wait instead of one per head
                # (Maia-1900 on an H100, batch 256: 2.4 against 2.9 ms a call).
                for r in results:
                    r.copy_to_host_async()
            # Views of the device's buffers where it allows (a CPU's): no copy of the logits.
            return [np.asarray(r)[:n].astype(np.float32, copy=False) for r in results]
        finally:
            if copy is not None:
                self._free_devices.put(copy)

    def _heads(self, outs: list[np.ndarray]) -> NetworkOutput:
        policy = outs[0].reshape(len(outs[0]), -1)
        if policy.shape[1] != POLICY_SIZE:
            raise NetworkError(
                f"{self.source}: {OUTPUT_POLICY}: expected {POLICY_SIZE} logits, "
                f"got {policy.shape[1]}"
            )
        value = outs[1].reshape(len(policy), -1)
        if self.has_wdl:
            q, d = value[:, 0] - value[:, 2], value[:, 1]
        else:
            q, d = value[:, 0], np.zeros(len(policy), np.float32)
        m = outs[2].reshape(-1) if self.has_mlh else np.zeros(len(policy), np.float32)
        return NetworkOutput(
            policy=policy, q=q.astype(np.float32), d=d.astype(np.float32), m=m.astype(np.float32)
        )


def describe(net: XlaNetwork) -> list[str]:
    """What runs where, for the engine's start-up ``info string``: platform, devices, data
    type, compiled batch sizes; then a warning for each request unusual on this platform."""
    platform = net.device.platform
    names = ", ".join(str(d) for d in net.devices)
    rows = net.options["split_min_rows"] * len(net.devices)
    split = (
        f"batches of {rows}+ rows split over them, smaller ones whole on one device "
        f"({net.concurrency} at once)"
        if len(net.devices) > 1
        else "one device"
    )
    dtype = net.options["data_type"] or "the network's own (f32 unless the file says otherwise)"
    lines = [
        f"backend xla: platform {platform}, {len(net.devices)} device(s) [{names}], "
        f"{split}; data type {dtype}; batch sizes {','.join(map(str, net.sizes))} "
        f"({net.buckets.state()}); search minibatch {net.preferred_batch}"
    ]
    if platform == "cpu":
        if isinstance(net.options["device"], int):
            lines.append(
                f"warning: device={net.options['device']} on the CPU pins one host "
                "device (one core) and turns the batch split over the cores off"
            )
        if net.options["data_type"] in ("bf16", "f16"):
            lines.append(
                f"warning: data_type={net.options['data_type']} on the CPU is slower "
                "than f32 (no native half-precision math) and less exact "
                "(docs/backend.md); it suits GPUs"
            )
    return lines


@dataclass(frozen=True)
class ProgramMaker:
    """Makes the program of one batch size: compiled, or loaded from the engine's cache."""

    converter: Any
    params: runtime.Params
    devices: list
    options: dict[str, Any]
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
