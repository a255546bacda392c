"""A network's batch sizes ("buckets"), stage 5 of a load (:func:`backend_xla.load_network`): which are
compiled, which one a batch runs at, and the thread that compiles more while batches run split
over the ready ones."""

from __future__ import annotations

import atexit
import queue
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import runtime
from .devices import Params
from .exec_cache import ExecutableCache, entry_key

ProgressCallback = Callable[[int, int, int], None]
"""progress(batch_size_just_compiled, number_ready, number_total)."""

COMPILE_AT_LOAD, COMPILE_ON_DEMAND, COMPILE_ALL_IN_BACKGROUND = 0, 1, 2
"""Values of the ``background_compile`` option (backend_xla.options): every size at load; at load
the size the search's minibatch needs, a larger one when a batch first outgrows every compiled
size (in a background thread); that size at load and all the others at once in the background."""

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


def batch_sizes(values: Mapping[str, Any], minibatch: int | None = None) -> list[int]:
    """The batch sizes to compile, ascending: explicit buckets, or lc0's max_batch/steps rule
    plus, below its smallest size, the search's ``minibatch`` and twice it, exactly: on a CPU a
    padded row costs as much as a real one, and lc0's CPU backends take a minibatch as it
    comes. (Rounded up to 8, the CPU minibatch of 7 cost a padding row and the prefetched
    position the search put in it: Maia-1100 searched 12-20 % fewer nodes a second;
    docs/engine.md, "Minibatch size and fidelity to lc0".)"""
    if values["batch_buckets"]:
        return list(values["batch_buckets"])
    max_batch, steps = values["max_batch"], values["steps"]
    sizes = {max(1, max_batch * (i + 1) // steps) for i in range(steps)}
    if minibatch:
        sizes |= {b for b in (minibatch, 2 * minibatch) if b < min(sizes)}
    return sorted(sizes)


COMPILE_THREAD_NAME = "xlazero-compile"


class Buckets:
    """The compiled programs of ``sizes`` (ascending), made by ``make(size)``; ``mode``: the
    ``background_compile`` option. ``ready_sizes`` tells which are compiled, ``compiling``
    whether the thread is at work; ``warmup()`` compiles every size."""

    def __init__(self, sizes: list[int], mode: int, make: Callable[[int], Any]) -> None:
        self.sizes = sizes
        self.mode = mode
        self._make = make
        self.compiled: dict[int, Any] = {}
        """Size -> program (read it with :meth:`executable` while the thread may add one)."""
        self.compile_seconds: dict[int, float] = {}
        self._largest_ready = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._queue: list[int] = []
        """Sizes the background thread is to compile, in order (the thread runs while any is)."""
        self._compiling_size: int | None = None
        self._error: BaseException | None = None
        self._closing = threading.Event()

    def start(self, rows: int) -> int:
        """Compile the size that holds ``rows`` (the search's minibatch) and run it once, then
        the others as ``mode`` says; returns that size."""
        size = self.fitting(rows)
        self._compile(size)
        self._first_run(size)
        if self.mode == COMPILE_AT_LOAD:
            self._compile_rest()
        else:
            # A compile still running while the interpreter finalizes aborts the process
            # ("terminate called ..."): stop between sizes and wait for the current one.
            atexit.register(_close_at_exit, weakref.ref(self))
            if self.mode == COMPILE_ALL_IN_BACKGROUND:
                self._request(self.sizes)
        return size

    def _compile(self, batch_size: int) -> None:
        start = time.perf_counter()
        executable = self._make(batch_size)
        with self._lock:
            self.compiled[batch_size] = executable
            self._largest_ready = max(self._largest_ready, batch_size)
            self.compile_seconds[batch_size] = time.perf_counter() - start

    def _first_run(self, batch_size: int) -> None:
        """Run each copy of a size once on zeros, unless loading it from the cache did: a
        program's first run sets up its buffers and threads (about 50 ms on the CPU), which
        would otherwise fall into the first search."""
        executable = self.compiled[batch_size]
        if executable.first_run_done:
            return
        for copy in range(executable.copies):
            executable.zero_run(copy)
        executable.first_run_done = True

    def fitting(self, n: int) -> int:
        """The smallest size that holds ``n`` rows (the largest when none does)."""
        return next((size for size in self.sizes if size >= n), self.sizes[-1])

    def pick(self, n: int) -> int:
        """The smallest ready size that holds ``n`` rows (the largest ready when none does)."""
        ready = self.ready_sizes
        return next((size for size in ready if size >= n), ready[-1])

    def executable(self, size: int):
        with self._lock:
            return self.compiled[size]

    def prepare(self, rows: int) -> None:
        """Before a batch of ``rows``: raise what the background thread failed with; when no
        ready size holds the batch, have the thread compile the one that does, while this batch
        (and those after it, until it is ready) runs split."""
        if self._error is not None:
            raise self._error
        if rows > self._largest_ready:
            self._request([self.fitting(rows)], first=True)

    def _request(self, sizes: list[int], first: bool = False) -> None:
        """Have the background thread compile ``sizes`` (those not ready or being compiled);
        ``first``: before the sizes already queued. Starts the thread if none runs."""
        with self._lock:
            if self._closing.is_set() or self._error is not None:
                return
            new = [s for s in sizes if s not in self.compiled and s != self._compiling_size]
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
                done = size in self.compiled
            try:
                if not done:
                    self._compile(size)
            except BaseException as exc:  # reported by warmup()/prepare(), never lost
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

    @property
    def ready_sizes(self) -> list[int]:
        with self._lock:
            return sorted(self.compiled)

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

    def warmup(self, progress: ProgressCallback | None = None) -> None:
        """Compile every size now (waiting for the background thread), reporting progress."""
        self._join()
        if self._error is not None:
            raise self._error
        self._compile_rest(progress)

    def close(self) -> None:
        """Stop background compilation (waiting for the size being compiled)."""
        self._closing.set()
        self._join()

    def state(self) -> str:
        """Which sizes are compiled, and when the others will be (for the start-up report)."""
        ready = ",".join(map(str, self.ready_sizes))
        if len(self.ready_sizes) == len(self.sizes):
            return f"compiled: {ready}"
        if self.mode == COMPILE_ALL_IN_BACKGROUND:
            return f"compiled now: {ready}; the rest in the background"
        return f"compiled now: {ready}; a larger one when a batch first needs it, in the background"


def _close_at_exit(ref: weakref.ref) -> None:
    buckets = ref()
    if buckets is not None:
        buckets.close()


def device_calls(option: int | str, devices: list) -> int:
    """Network calls that run at once (backend option ``device_calls``): auto, on an accelerator
    :data:`CONCURRENT_CALLS` even on one device (one call's host work, its dispatch and copies,
    then overlaps the other's kernels: on an H100 a BT4 call was 13.9 ms of kernels in 17.5 ms,
    docs/history/gpu-sessions.md §7); on a CPU one call a device, since a call keeps its core busy."""
    if option != "auto":
        return int(option)
    if devices[0].platform == "cpu":
        return min(len(devices), CONCURRENT_CALLS)
    return CONCURRENT_CALLS


@dataclass(frozen=True)
class Compiled:
    """Stage 5's value: the batch sizes and the programs that make and keep their executables."""

    sizes: list[int]
    preferred_batch: int
    """The search's minibatch on this platform (within the largest size)."""
    concurrency: int
    """Calls worth running at once (:func:`device_calls`): an unsplit batch runs on one device."""
    free_devices: queue.SimpleQueue[int]
    """The devices no call is using (one call each)."""
    executables: ExecutableCache | None
    """The engine's cache of whole programs (None: ``cache_dir=none``, or not a file)."""
    programs: ProgramMaker
    buckets: Buckets
    load_size: int
    """The size compiled at load: the smallest that holds the search's minibatch."""


def compile_sizes(
    converter, params: Params, devices: list, options: Mapping[str, Any], digest: str | None
) -> Compiled:
    """Stage 5 of a load (:func:`backend_xla.load_network`): the batch sizes, the size the search's
    minibatch needs compiled (or loaded from the cache of executables) now, the others as
    ``background_compile`` says."""
    minibatch = preferred_minibatch(devices[0].platform)
    sizes = batch_sizes(options, minibatch)
    preferred = min(sizes[-1], minibatch)
    executables = runtime.executable_cache() if digest else None
    concurrency = device_calls(options["device_calls"], devices)
    copies = min(len(devices), concurrency)  # an unsplit program on each device a call may use
    free: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(copies):
        free.put(i)
    programs = ProgramMaker(converter, params, devices, options, copies, executables, digest)
    buckets = Buckets(sizes, options["background_compile"], programs)
    load_size = buckets.start(preferred)
    return Compiled(sizes, preferred, concurrency, free, executables, programs, buckets, load_size)


@dataclass(frozen=True)
class ProgramMaker:
    """Makes the program of one batch size: compiled, or loaded from the engine's cache."""

    converter: Any
    params: Params
    devices: list
    options: Mapping[str, Any]
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
        return entry_key(self.network_digest, self.options, parts, self.devices)
