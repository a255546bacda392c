"""A network's batch sizes ("buckets"): which are compiled, which one a batch runs at, and the
thread that compiles more while batches run split over the ready ones."""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

ProgressCallback = Callable[[int, int, int], None]
"""progress(batch_size_just_compiled, number_ready, number_total)."""

COMPILE_AT_LOAD, COMPILE_ON_DEMAND, COMPILE_ALL_IN_BACKGROUND = 0, 1, 2
"""Values of the ``background_compile`` option (backend_xla.options): every size at load; at load
the size the search's minibatch needs, a larger one when a batch first outgrows every compiled
size (in a background thread); that size at load and all the others at once in the background."""

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
