"""A loaded lc0 network: converted once, compiled per batch size, evaluated by padding."""

from __future__ import annotations

import functools
import queue
from pathlib import Path
from typing import Any

import numpy as np

from engine.backend import (
    GATHER_WIDTHS,
    INPUT_PLANES,
    POLICY_SIZE,
    BackendAttributes,
    NetworkOutput,
)

from .buckets import Buckets, ProgressCallback
from .devices import Params
from .errors import NetworkError
from .exec_cache import ExecutableCache, NetworkCache
from .network_file import OUTPUT_POLICY, Heads
from .options import BackendOptions
from .packed import BOARD, pack_planes, packed_words


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

    def __init__(
        self,
        options: BackendOptions,
        source: str,
        heads: Heads,
        devices: list,
        converter: Any,
        params: Params,
        compiled: Any,
        networks: NetworkCache | None = None,
        digest: str | None = None,
    ) -> None:
        """The stages' values (:func:`backend_xla.load_network`, which makes networks):
        ``compiled`` is its :class:`backend_xla.buckets.Compiled`."""
        self.options = options
        self.source = source
        self.name = Path(source).name
        self.has_wdl, self.has_mlh, self.input_format = heads
        self.devices = devices
        self.device = devices[0]
        self.converter = converter
        self.packed_input = bool(converter.packed_input)
        """Whether the programs take lc0's packed planes (:meth:`evaluate_packed`)."""
        gather = options["policy_gather"]
        self.policy_gather = gather == "on" or (gather == "auto" and self.device.platform != "cpu")
        """Whether the search is told to pass the legal moves' policy indices (``legal``): any
        call may, this says whether the engine's calls do (BackendAttributes.policy_gather)."""
        self.params = params
        self.sizes: list[int] = compiled.sizes
        self.max_batch = self.sizes[-1]
        self.preferred_batch: int = compiled.preferred_batch
        self.concurrency: int = compiled.concurrency
        """Calls of ``evaluate`` worth running at once: an unsplit batch runs on one device."""
        self._free_devices: queue.SimpleQueue[int] = compiled.free_devices
        self.executables: ExecutableCache | None = compiled.executables
        """The engine's cache of whole programs (None: ``cache_dir=none``); only for files."""
        self.programs = compiled.programs
        self.buckets: Buckets = compiled.buckets
        self.mode = options["background_compile"]
        self.load_size: int = compiled.load_size
        """The bucket compiled at load: the smallest that holds the search's minibatch."""
        self.networks = networks
        """Converted networks (None: ``cache_dir=none``, or not a file): a warm start reads the
        parameters from there and never opens the file as ONNX."""
        self.digest = digest
        """The file's sha256 where the caches are on (their keys)."""
        if self.policy_gather:
            self._prepare_gathers(self.load_size)

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
            policy_gather=self.policy_gather,
            prepare=self.prepare,
        )

    def _prepare_gathers(self, size: int) -> None:
        """Compile (or read from JAX's cache) the gather at each width the search passes for the
        batch size compiled at load, so that the first search does not (issue 41's rule: full
        speed from the first move)."""
        executable = self.buckets.executable(size)
        policy = executable(*executable.zero_inputs())[0]
        for width in GATHER_WIDTHS:
            gather_policy()(
                policy, np.zeros((executable.rows, width), np.int16)
            ).block_until_ready()

    def describe(self) -> list[str]:
        """What runs where, for the engine's start-up ``info string`` (:func:`describe`)."""
        return describe(self)

    def padded_size(self, n: int) -> int:
        """Rows computed for a batch of ``n``: the compiled size it is padded to (the search fills
        the padding with positions for the NN cache, which then cost nothing extra)."""
        return max(n, self.buckets.pick(n))

    def evaluate(self, planes: np.ndarray, legal: np.ndarray | None = None) -> NetworkOutput:
        """planes float32 [N, 112, 8, 8] -> NetworkOutput with N rows. ``legal``: int [N, K], the
        policy indices whose logits to return (each position's legal moves; an index outside
        0..1857 reads the nearest end), gathered on the device: policy [N, K]."""
        planes = np.asarray(planes)
        if planes.ndim != 4 or planes.shape[1:] != (INPUT_PLANES, BOARD, BOARD) or not len(planes):
            raise NetworkError(
                f"{self.source}: evaluate: expected planes [N>=1, {INPUT_PLANES}, "
                f"{BOARD}, {BOARD}], got shape {list(planes.shape)}"
            )
        if self.packed_input:
            return self.evaluate_packed(*pack_planes(planes), legal=legal)
        return self._evaluate([planes.astype(np.float32, copy=False)], legal)

    def evaluate_packed(
        self, masks: np.ndarray, values: np.ndarray, legal: np.ndarray | None = None
    ) -> NetworkOutput:
        """lc0's packed planes -> NetworkOutput with N rows: masks uint64 [N, 112] (bit s: square
        s), values float32 [N, 112]; ``legal`` as for :meth:`evaluate`. Only a network loaded
        with ``packed_input`` takes them: the device expands them, so a batch crosses to it in a
        twentieth of the bytes."""
        if not self.packed_input:
            raise NetworkError(
                f"{self.source}: evaluate_packed: expected a network loaded with packed_input "
                f"on, got packed_input=off (call evaluate with the planes)"
            )
        return self._evaluate(list(packed_words(masks, values, self.source)), legal)

    def _evaluate(self, inputs: list[np.ndarray], legal: np.ndarray | None) -> NetworkOutput:
        total = len(inputs[0])
        if legal is not None:
            legal = policy_indices(legal, total, self.source)
        self.buckets.prepare(total)
        parts = []
        start = 0
        while start < total:
            size = self.buckets.pick(total - start)
            chunk = [x[start : start + size] for x in inputs]
            rows = None if legal is None else legal[start : start + size]
            parts.append(self._run(size, chunk, rows))
            start += len(chunk[0])
        outs = parts[0] if len(parts) == 1 else [np.concatenate(col) for col in zip(*parts)]
        return self._heads(outs, gathered=legal is not None)

    def _run(
        self, size: int, chunk: list[np.ndarray], legal: np.ndarray | None
    ) -> list[np.ndarray]:
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
            if legal is not None:
                if n < rows:
                    legal = np.concatenate(
                        [legal, np.zeros((rows - n, legal.shape[1]), legal.dtype)]
                    )
                results = [gather_policy()(results[0], legal), *results[1:]]
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

    def _heads(self, outs: list[np.ndarray], gathered: bool) -> NetworkOutput:
        policy = outs[0].reshape(len(outs[0]), -1)
        if policy.shape[1] != POLICY_SIZE and not gathered:
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


def policy_indices(legal: Any, n: int, source: str) -> np.ndarray:
    """``legal`` as the gather takes it, int16 [n, K] (half the bytes to the device; the
    indices clipped to the policy), or a NetworkError."""
    legal = np.asarray(legal)
    if legal.ndim != 2 or len(legal) != n or not legal.shape[1] or legal.dtype.kind not in "iu":
        raise NetworkError(
            f"{source}: evaluate: expected legal policy indices, integers [{n}, K>=1], got "
            f"{legal.dtype} {list(legal.shape)}"
        )
    return np.clip(legal, 0, POLICY_SIZE - 1).astype(np.int16)


@functools.cache
def gather_policy():
    """``gather(policy, legal)``: the logits of ``legal``'s indices in each row, on the device
    that holds the policy (jitted once; XLA compiles it for each shape)."""
    import jax
    import jax.numpy as jnp

    def gather(policy, legal):
        flat = policy.reshape(policy.shape[0], -1)
        return jnp.take_along_axis(flat, legal, axis=1, mode="clip")

    return jax.jit(gather)


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
        else "one device" + (f" ({net.concurrency} calls at once)" if net.concurrency > 1 else "")
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
