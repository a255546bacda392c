"""The memory the tree grows into, made ready ahead of the search by a background thread.

The tree's arrays and the NN cache's ring of moves are allocated whole and used from the front
(``core/tree.py``, ``core/cache.py``); a page is
backed by memory only when the search first writes to it. On a virtual machine that first write
can cost far more than zeroing the page: on the project's 2-core cloud machine a fresh 2 MB page
(numpy asks for huge pages) took 6 ms where a reused one took 0.2 ms. The search thread took
those stalls every 2 MB of edges, about every 23 batches of 256 rows in Kiwipete, while the
device waited (``bin/perf/bench --trace``: 130-230 ms of a 1.7 s search), and every 2 MB of
the NN cache's ring (8 bytes a legal move of each new position).

:class:`PagesAhead` keeps the next :data:`WINDOW` bytes past each array's used part populated
with ``madvise(MADV_POPULATE_WRITE)`` (Linux 5.14+): the kernel backs the pages without writing
to them, so it cannot race with the search writing the part in use. Elsewhere it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

WINDOW = 2 << 20
"""Bytes kept ready past the used part of each array: one huge page, made ready once the search
is within half of it (dozens of batches ahead); more would hold memory that RamLimitMb does not
count."""
FIRST_USE = WINDOW // 2
"""Bytes of an array in use before anything past them is made ready. A search that stays short
of them (a short ``go``, a test's search) never reaches the pages made ready, and on the 2-core
cloud machine each fresh huge page costs the kernel 4-6 ms: the first windows of the tree's and
the cache's arrays took more system time than the rest of 164 short searches
(tests/engine/test_option_effects.py: 5.5 s of system time, 1.0 s without them). A search
that passes FIRST_USE is still half a window from the next page, as at every later step."""
MADV_POPULATE_WRITE = 23


def _madvise():
    """libc's ``madvise``, or None where there is no such call to make."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    call = libc.madvise
    call.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    call.restype = ctypes.c_int
    return call


class PagesAhead:
    """Populates, in one background thread, the next :data:`WINDOW` bytes of the arrays that
    :meth:`ahead` is shown once :data:`FIRST_USE` of them are in use; stops trying after the
    first refusal (an older kernel)."""

    def __init__(self) -> None:
        self._madvise = _madvise()
        self._ready: dict[int, int] = {}  # array address -> bytes from its start made ready
        self._quiet: dict[tuple[int, int], int] = {}
        """(id, bytes) of an array -> the elements in use below which :meth:`ahead` has
        nothing to do: the check a batch makes without the lock or ``array.ctypes`` (which
        builds an object: a few microseconds, four times a batch)."""
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None

    def ahead(self, array: np.ndarray, used: int) -> None:
        """``array``'s first ``used`` elements are in use: make the next WINDOW bytes ready
        (nothing below FIRST_USE bytes). Cheap when they already are (called once a batch)."""
        if self._madvise is None:
            return
        used_bytes = used * array.itemsize
        if used_bytes < FIRST_USE:
            return
        quiet = (id(array), array.nbytes)
        if used < self._quiet.get(quiet, 0):
            return
        start = array.ctypes.data
        end = array.nbytes
        with self._lock:
            ready = self._ready.get(start, used_bytes)
            if ready >= min(end, used_bytes + WINDOW // 2):
                if len(self._quiet) >= 16:
                    self._quiet.clear()  # arrays the tree and the cache have replaced since
                # Nothing to do until the part in use passes half a window below what is ready.
                self._quiet[quiet] = (ready - WINDOW // 2) // array.itemsize + 1
                return
            upto = min(end, max(ready, used_bytes) + WINDOW)
            if start not in self._ready and len(self._ready) >= 16:
                self._ready.clear()  # arrays the tree and the cache have replaced since
            self._ready[start] = upto
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="pages")
            executor = self._executor
        try:
            executor.submit(self._populate, array, max(ready, used_bytes), upto)
        except RuntimeError:  # closed meanwhile (the search's owner went): nothing to make ready
            pass

    def _populate(self, array: np.ndarray, begin: int, end: int) -> None:
        # Whole pages only: the kernel refuses an address that does not start one.
        page = 4096
        first = -(-(array.ctypes.data + begin) // page) * page
        last = (array.ctypes.data + end) // page * page
        if last <= first or self._madvise is None:
            return
        if self._madvise(first, last - first, MADV_POPULATE_WRITE) != 0:
            self._madvise = None  # not supported here: the search writes the pages itself

    def close(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
            self._madvise = None  # and no new thread after the close
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
