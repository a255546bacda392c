"""A loaded lc0 network: converted once, compiled per batch size, evaluated by padding."""

from __future__ import annotations

import atexit
import os
import queue
import sys
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.backend import INPUT_PLANES, POLICY_SIZE, BackendAttributes, NetworkOutput

from . import runtime
from .errors import NetworkError
from .exec_cache import (
    NETWORK_SUBDIR,
    CachedConverter,
    NetworkCache,
    entry_key,
    file_digest,
    network_entry,
    network_key,
)
from .options import batch_sizes, parse_options

if TYPE_CHECKING:
    import onnx  # imported where a file is read: a warm start from the caches never needs it

OUTPUT_POLICY = "/output/policy"
OUTPUT_WDL = "/output/wdl"
OUTPUT_VALUE = "/output/value"
OUTPUT_MLH = "/output/mlh"
INPUT_FORMAT_KEY = "lc0_input_format"
BOARD = 8

ProgressCallback = Callable[[int, int, int], None]
"""progress(batch_size_just_compiled, number_ready, number_total)."""


def _is_model(path) -> bool:
    """Whether ``path`` is an onnx.ModelProto (without importing onnx for a path)."""
    onnx_module = sys.modules.get("onnx")
    return onnx_module is not None and isinstance(path, onnx_module.ModelProto)


def _external_data(model) -> bool:
    """Whether an ONNX model keeps weights in other files (which the file's digest, the key of
    the converted network, does not cover: such a network is not kept converted)."""
    import onnx

    return any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)


def _read_model(path: str | os.PathLike | onnx.ModelProto, options: dict):
    """(model, source name, directory for external data); ``options``: the parsed backend
    options (an lc0 weight file's heads are chosen by policy_head and value_head)."""
    from .onnx_io import load_model

    if _is_model(path):
        assert not isinstance(path, (str, os.PathLike))
        return path, f"<ONNX model {path.graph.name or 'unnamed'}>", None
    p = Path(path)
    if p.name.endswith(".pb.gz") or p.suffix == ".pb":
        try:
            from .lc0 import load_lc0_onnx
        except ImportError as exc:
            raise NetworkError(
                f"{p}: lc0 weight files need backend_xla.lc0, which is not "
                f"available ({exc}); convert it to ONNX with lc0 leela2onnx"
            ) from exc
        model = load_lc0_onnx(
            str(p), policy_head=options["policy_head"], value_head=options["value_head"]
        )
        return model, str(p), p.parent
    return load_model(p), str(p), p.parent


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


COMPILE_AT_LOAD, COMPILE_ON_DEMAND, COMPILE_ALL_IN_BACKGROUND = 0, 1, 2
"""Values of the ``background_compile`` option (backend_xla.options): every size at load; at load
the size the search's minibatch needs, a larger one when a batch first outgrows every compiled
size (in a background thread); that size at load and all the others at once in the background."""

COMPILE_THREAD_NAME = "xlazero-compile"
UNKEYED_OPTIONS = ("background_compile", "cache_dir", "hlo_proto_dump_dir")
"""Backend options that do not change a compiled program (left out of its cache key)."""


def preferred_minibatch(platform: str) -> int:
    """The minibatch size the search should gather for a device of ``platform`` (JAX's name)."""
    return CPU_MINIBATCH if platform == "cpu" else ACCELERATOR_MINIBATCH


class XlaNetwork:
    """An lc0 network compiled with XLA for a set of batch sizes ("buckets").

    ``evaluate(planes)`` takes float32 [N, 112, 8, 8] for any N >= 1: it pads to the smallest
    ready bucket that fits (padding rows are zeros) and splits batches larger than the biggest.
    At load it compiles ``load_size``, the smallest bucket that holds the search's minibatch
    (``preferred_batch``); what else depends on ``background_compile`` (:data:`COMPILE_AT_LOAD`
    and the values beside it). By default a larger bucket is compiled only when ``evaluate`` first
    gets a batch larger than every ready one, in a background thread, while that batch runs split
    over the ready buckets: the search at its default minibatch never asks for one, and a warm
    start leaves nothing to compile after it (issue 41). ``ready_sizes`` tells which buckets are
    compiled, ``compiling`` whether the thread is at work; ``warmup()`` compiles every bucket.
    """

    def __init__(self, path: str | os.PathLike | onnx.ModelProto, options: str = "") -> None:
        self.options = parse_options(options)
        is_file = not _is_model(path)
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
        entry, net_key = None, None
        if self.networks is not None and self._network_digest is not None:
            net_key = network_key(self._network_digest, self._conversion_options())
            entry = self.networks.load(net_key)
        model = base_dir = None
        if entry is None:
            model, self.source, base_dir = _read_model(path, self.options)
            self._check_model(model)
        self.name = Path(self.source).name
        self.devices = runtime.setup(self.options)
        self.device = self.devices[0]
        if entry is not None and entry["platform"] != self.device.platform:
            entry = None  # converted for another platform's convolution: convert again
            model, self.source, base_dir = _read_model(path, self.options)
            self._check_model(model)
        if entry is not None:
            self.has_wdl, self.has_mlh = entry["has_wdl"], entry["has_mlh"]
            self.input_format = entry["input_format"]
            outputs = entry["outputs"]
            self.converter = CachedConverter(
                entry, self.source, lambda: self._convert_file(path, outputs)
            )
        else:
            assert model is not None
            self.converter = self._convert(model, base_dir, self._wanted)
            if self.networks is not None and net_key is not None and not _external_data(model):
                self.networks.store(
                    net_key,
                    network_entry(
                        self.converter,
                        self.device.platform,
                        self.has_wdl,
                        self.has_mlh,
                        self.input_format,
                    ),
                )
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
        self._compiled: dict[int, Any] = {}
        self._largest_ready = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._queue: list[int] = []
        """Sizes the background thread is to compile, in order (the thread runs while any is)."""
        self._compiling_size: int | None = None
        self._error: BaseException | None = None
        self._closing = threading.Event()
        self.compile_seconds: dict[int, float] = {}
        self.mode = self.options["background_compile"]
        self.load_size = self._fitting(self.preferred_batch)
        """The bucket compiled at load: the smallest that holds the search's minibatch."""
        self._compile(self.load_size)
        self._first_run(self.load_size)
        if self.mode == COMPILE_AT_LOAD:
            self._compile_rest()
        else:
            # A compile still running while the interpreter finalizes aborts the process
            # ("terminate called ..."): stop between sizes and wait for the current one.
            atexit.register(_close_at_exit, weakref.ref(self))
            if self.mode == COMPILE_ALL_IN_BACKGROUND:
                self._request(self.sizes)

    def _conversion_options(self) -> dict[str, Any]:
        return {k: v for k, v in self.options.items() if k not in UNKEYED_OPTIONS}

    def _check_model(self, model) -> None:
        """Check the graph's input and outputs; set has_wdl, has_mlh, input_format."""
        from .onnx_io import INPUT_NAME

        graph_inputs = {i.name for i in model.graph.input}
        if INPUT_NAME not in graph_inputs:
            raise NetworkError(
                f"{self.source}: expected input {INPUT_NAME!r}, got {sorted(graph_inputs)}"
            )
        outputs = [o.name for o in model.graph.output]
        if OUTPUT_POLICY not in outputs or not ({OUTPUT_WDL, OUTPUT_VALUE} & set(outputs)):
            raise NetworkError(
                f"{self.source}: expected outputs {OUTPUT_POLICY!r} and "
                f"{OUTPUT_WDL!r} or {OUTPUT_VALUE!r}, got {outputs}"
            )
        self.has_wdl = OUTPUT_WDL in outputs
        self.has_mlh = OUTPUT_MLH in outputs
        self._wanted = [OUTPUT_POLICY, OUTPUT_WDL if self.has_wdl else OUTPUT_VALUE]
        self._wanted += [OUTPUT_MLH] if self.has_mlh else []
        meta = {p.key: p.value for p in model.metadata_props}
        fmt = meta.get(INPUT_FORMAT_KEY) or self.options["input_format"] or 1
        try:
            self.input_format = int(fmt)
        except ValueError:
            raise NetworkError(
                f"{self.source}: metadata {INPUT_FORMAT_KEY}: expected an integer, got {fmt!r}"
            ) from None

    def _convert_file(self, path, outputs: list[str]):
        """The converter of the file (for a network loaded from :class:`NetworkCache`)."""
        model, _, base_dir = _read_model(path, self.options)
        return self._convert(model, base_dir, outputs)

    def _convert(self, model, base_dir, outputs: list[str]):
        """The converter of ``model`` for this network's options and device."""
        from .onnx_io import parse_dtype
        from .onnx_to_jax import Converter

        data_type = self.options["data_type"]
        conv_method = self.options["conv_method"]
        if conv_method == "auto" and self.device.platform != "cpu":
            # auto's Winograd in 8-row chunks suits a CPU core's cache (docs/performance.md
            # §6); an accelerator's own convolution takes the whole batch at once.
            conv_method = "lax"
        return Converter(
            model,
            self.source,
            outputs=outputs,
            base_dir=base_dir,
            float_override=parse_dtype(data_type) if data_type else None,
            io_dtype=parse_dtype(self.options["io_datatype"]),
            max_inline_constant_size=self.options["max_inline_constant_size"],
            layout=self.options["layout"],
            conv_method=conv_method,
        )

    # -- compilation -------------------------------------------------------------------------
    def _compile(self, batch_size: int) -> None:
        start = time.perf_counter()
        executable = runtime.compile_function(
            self.converter,
            batch_size,
            self.params,
            self.options["split_min_rows"],
            self.options["hlo_proto_dump_dir"],
            copies=self.concurrency,
            cache=self.executables,
            cache_key=self._cache_key(batch_size),
        )
        with self._lock:
            self._compiled[batch_size] = executable
            self._largest_ready = max(self._largest_ready, batch_size)
            self.compile_seconds[batch_size] = time.perf_counter() - start

    def _cache_key(self, batch_size: int) -> str | None:
        if self.executables is None or self._network_digest is None:
            return None
        parts = (batch_size, self.concurrency, self.options["split_min_rows"])
        return entry_key(self._network_digest, self._conversion_options(), parts, self.devices)

    def _first_run(self, batch_size: int) -> None:
        """Run each copy of a size once on zeros, unless loading it from the cache did: a
        program's first run sets up its buffers and threads (about 50 ms on the CPU), which
        would otherwise fall into the first search."""
        executable = self._compiled[batch_size]
        if executable.first_run_done:
            return
        for copy in range(executable.copies):
            executable.zero_run(copy)
        executable.first_run_done = True

    def _fitting(self, n: int) -> int:
        """The smallest bucket that holds ``n`` rows (the largest when none does)."""
        return next((size for size in self.sizes if size >= n), self.sizes[-1])

    def _request(self, sizes: list[int], first: bool = False) -> None:
        """Have the background thread compile ``sizes`` (those not ready or being compiled);
        ``first``: before the sizes already queued. Starts the thread if none runs."""
        with self._lock:
            if self._closing.is_set() or self._error is not None:
                return
            new = [s for s in sizes if s not in self._compiled and s != self._compiling_size]
            if not new:
                return
            rest = [s for s in self._queue if s not in new]
            self._queue = new + rest if first else rest + new
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._background, daemon=True, name=COMPILE_THREAD_NAME
                )
                self._thread.start()

    def _background(self) -> None:
        """The background thread: compile the queued sizes one by one, then end."""
        while True:
            with self._lock:
                self._compiling_size = None
                if not self._queue or self._closing.is_set():
                    self._thread = None
                    return
                size = self._compiling_size = self._queue.pop(0)
                done = size in self._compiled
            try:
                if not done:
                    self._compile(size)
            except BaseException as exc:  # reported by warmup()/evaluate(), never lost
                with self._lock:
                    self._error = exc
                    self._queue.clear()
                    self._compiling_size = None
                    self._thread = None
                return

    @property
    def compiling(self) -> bool:
        """Whether the background thread is compiling (or about to)."""
        with self._lock:
            return self._thread is not None

    def _join(self) -> None:
        """Wait for the background thread to finish what it was asked (or, closing, the size it
        is compiling)."""
        while True:
            with self._lock:
                thread = self._thread
            if thread is None:
                return
            thread.join()

    def _compile_rest(self, progress: ProgressCallback | None = None) -> None:
        """Compile every size not ready yet, here (reporting progress)."""
        for size in self.sizes:
            if self._closing.is_set():
                return
            if size not in self.ready_sizes:
                self._compile(size)
            if progress:
                progress(size, len(self.ready_sizes), len(self.sizes))

    def close(self) -> None:
        """Stop background compilation (waiting for the size being compiled)."""
        self._closing.set()
        self._join()

    @property
    def ready_sizes(self) -> list[int]:
        with self._lock:
            return sorted(self._compiled)

    def warmup(self, progress: ProgressCallback | None = None) -> None:
        """Compile every batch size now (waiting for the background thread), reporting progress."""
        self._join()
        if self._error is not None:
            raise self._error
        self._compile_rest(progress)

    # -- evaluation --------------------------------------------------------------------------
    def _pick(self, n: int) -> int:
        ready = self.ready_sizes
        for size in ready:
            if size >= n:
                return size
        return ready[-1]

    def attributes(self) -> BackendAttributes:
        """The engine's view of this network (engine.backend's contract)."""
        return BackendAttributes(
            name=self.name,
            description=tuple(self.describe()),
            max_batch=self.max_batch,
            preferred_batch=self.preferred_batch,
            padded_size=self.padded_size,
            concurrency=self.concurrency,
        )

    def describe(self) -> list[str]:
        """What runs where, for the engine's start-up ``info string``: platform, devices, data
        type, compiled batch sizes; then a warning for each request unusual on this platform."""
        platform = self.device.platform
        names = ", ".join(str(d) for d in self.devices)
        rows = self.options["split_min_rows"] * len(self.devices)
        split = (
            f"batches of {rows}+ rows split over them, smaller ones whole on one device "
            f"({self.concurrency} at once)"
            if len(self.devices) > 1
            else "one device"
        )
        dtype = (
            self.options["data_type"] or "the network's own (f32 unless the file says otherwise)"
        )
        lines = [
            f"backend xla: platform {platform}, {len(self.devices)} device(s) [{names}], "
            f"{split}; data type {dtype}; batch sizes {','.join(map(str, self.sizes))} "
            f"({self._compile_state()}); search minibatch {self.preferred_batch}"
        ]
        if platform == "cpu":
            if isinstance(self.options["device"], int):
                lines.append(
                    f"warning: device={self.options['device']} on the CPU pins one host "
                    "device (one core) and turns the batch split over the cores off"
                )
            if self.options["data_type"] in ("bf16", "f16"):
                lines.append(
                    f"warning: data_type={self.options['data_type']} on the CPU is slower "
                    "than f32 (no native half-precision math) and less exact "
                    "(docs/backend.md); it suits GPUs"
                )
        return lines

    def _compile_state(self) -> str:
        ready = ",".join(map(str, self.ready_sizes))
        if len(self.ready_sizes) == len(self.sizes):
            return f"compiled: {ready}"
        if self.mode == COMPILE_ALL_IN_BACKGROUND:
            return f"compiled now: {ready}; the rest in the background"
        return f"compiled now: {ready}; a larger one when a batch first needs it, in the background"

    def padded_size(self, n: int) -> int:
        """Rows computed for a batch of ``n``: the compiled size it is padded to (the search fills
        the padding with positions for the NN cache, which then cost nothing extra)."""
        return max(n, self._pick(n))

    def evaluate(self, planes: np.ndarray) -> NetworkOutput:
        """planes float32 [N, 112, 8, 8] -> NetworkOutput with N rows."""
        planes = np.asarray(planes)
        if planes.ndim != 4 or planes.shape[1:] != (INPUT_PLANES, BOARD, BOARD) or not len(planes):
            raise NetworkError(
                f"{self.source}: evaluate: expected planes [N>=1, {INPUT_PLANES}, "
                f"{BOARD}, {BOARD}], got shape {list(planes.shape)}"
            )
        if self._error is not None:
            raise self._error
        if len(planes) > self._largest_ready:
            # A batch no compiled size holds: compile the one that does, in the background,
            # while this batch (and those after it, until it is ready) runs split.
            self._request([self._fitting(len(planes))], first=True)
        planes = planes.astype(np.float32, copy=False)
        parts = []
        start = 0
        while start < len(planes):
            size = self._pick(len(planes) - start)
            chunk = planes[start : start + size]
            parts.append(self._run(size, chunk))
            start += len(chunk)
        outs = parts[0] if len(parts) == 1 else [np.concatenate(col) for col in zip(*parts)]
        return self._heads(outs)

    def _run(self, size: int, chunk: np.ndarray) -> list[np.ndarray]:
        n = len(chunk)
        with self._lock:
            executable = self._compiled[size]
        rows = executable.rows  # >= size: a split batch is rounded up to a multiple of devices
        if n < rows:
            chunk = np.concatenate([chunk, np.zeros((rows - n,) + chunk.shape[1:], chunk.dtype)])
        chunk = chunk.astype(executable.input_dtype, copy=False)
        # A program with copies takes a device no other call is using (one core each on a CPU),
        # until its results are read back (np.asarray waits for the device).
        copy = self._free_devices.get() if executable.copies > 1 else None
        try:
            results = executable(chunk, copy=copy or 0)
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


def _close_at_exit(ref: weakref.ref) -> None:
    net = ref()
    if net is not None:
        net.close()
