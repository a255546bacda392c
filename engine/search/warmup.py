"""Compiling (or loading from numba's cache) every compiled function of the search before the
first ``go``: a small search on an instant network that takes every path once (selection,
leaves, prefetch, expansion, backup, root filter, tree reuse, searchmoves, the reports).

A fresh install compiles them (tens of seconds on a small CPU), all in this process. (A helper
process compiling the functions a search calls last, in parallel, saved 5 of 22 s once, but left
the search 0.6 times as fast ever after: what this process then found in numba's cache, the
helper's work, its own functions called instead of inlining; searching alone, medians of 5
alternated runs, 158k nodes/s against 265k, bin/perf/bench --backend=random --minibatch-size=256.) Later starts load
everything from the cache.
"""

from __future__ import annotations

import threading

import chess
import numba
import numpy as np

from engine.backend import POLICY_SIZE, BackendAttributes, NetworkOutput
from engine.search.limit import Limit
from engine.search.params import from_options

_done = threading.Event()
_lock = threading.Lock()


class _Instant:
    """A network that answers at once: flat policy, a fixed value."""

    input_format = 1
    has_wdl = True
    has_mlh = True

    def attributes(self) -> BackendAttributes:
        return BackendAttributes(
            name="warm-up",
            description=(),
            max_batch=64,
            preferred_batch=7,
            padded_size=lambda n: -(-n // 7) * 7,
            concurrency=1,
            packed_input=False,
            policy_gather=False,
            prepare=None,
        )

    def evaluate(self, planes: np.ndarray, legal: np.ndarray | None = None) -> NetworkOutput:
        n = len(planes)
        return NetworkOutput(
            policy=np.zeros((n, POLICY_SIZE) if legal is None else legal.shape, np.float32),
            q=np.full(n, 0.1, np.float32),
            d=np.full(n, 0.3, np.float32),
            m=np.full(n, 30.0, np.float32),
        )


def compile_the_rest() -> None:
    """Compile, with the argument types the search passes, the functions the warm-up's search
    does not reach (smart pruning's root filter) and those it calls last (a no-op where they are
    compiled or in numba's cache)."""
    from engine.board.position import FIELDS
    from engine.encoding.rows import expand_batch
    from engine.search.core import (
        backup,
        gather,
        minibatch,
        params,
        rescale,
        steps,
        stoppers,
        tree,
        view,
    )
    from engine.search.evaluation import network_heads
    from engine.search.params import from_options
    from engine.search.state import NNCache

    packed = params.pack(from_options({}), True)
    t = tree.new_tree()
    cache = NNCache(64).arrays
    batch = gather.new_batch(8)
    counters = backup.COUNTERS.new()
    stoppers._summary(t, 0.0, np.zeros(0, np.uint8), False, stoppers.ROOT_SUMMARY.new())
    rows = np.zeros((2, FIELDS), np.uint64)
    f32 = network_heads(np.zeros(1, np.float32))
    policy = network_heads(np.zeros((1, POLICY_SIZE), np.float32))
    minibatch.sort(batch, policy, batch.indices, 0, 0, 1.0)
    minibatch.finite_values(f32, 0, policy)
    minibatch.most_moves(batch, 0)  # a gathered policy's width: a network may never ask it
    minibatch.store_results(cache, batch, f32, f32, f32)
    minibatch.expand_and_backup(minibatch.Shared(t, packed, counters, cache), batch, f32, f32, f32)
    tree.keep_subtree(t, 0)
    view._edge_stats(t, 0, np.zeros((9, 0)))
    view._puct_terms(t, packed, 0, True, 0.0, np.zeros((3, 0)))
    stoppers.rank_edges(t, 0, 0.0, np.zeros(0, np.uint8), False, np.zeros(1, np.int64))
    # Smart pruning's root filter (the warm-up's search runs without smart pruning), compiled
    # without a run: it reads a root's edges, which a fresh tree has not.
    flags = numba.typeof(np.zeros(1, np.uint8))
    stoppers.root_filter.compile(
        (numba.typeof(t), numba.int64, numba.float64, flags, numba.boolean, flags)
    )
    # The PV of an info line (the warm-up's search sends none), compiled without a root move.
    words = numba.typeof(np.zeros(1, np.int64))
    stoppers.pv_moves.compile(
        (numba.typeof(t), numba.int64, numba.typeof(np.zeros(2, np.float64)), words)
    )
    steps.abandon(t, batch.req, 0)
    steps.drop_request(batch, 0, 0)
    steps.tablebase_terminal(t, packed, counters, 0, 0.0, 0)
    steps.cached_slot(rows, 0, -1, packed, cache)
    expand_batch(batch.masks, batch.values, batch.planes, 0, 0)
    # Contempt's rescaling of a batch's values (the warm-up's search has none).
    values = np.zeros(1, np.float32)
    rescale.rescale_rows(
        values, values, batch.req["depth"][:0], 0, 1.0, 0.0, 1.0, 1.0, values, values
    )


ENTRY = "minibatch.gather"
"""The compiled entry point whose index in numba's cache says the warm-up's functions are
there."""

INDEX_FOUND: dict[str, bool | None] = {"numba_index_named": None}
"""Whether :func:`cache_is_warm`'s look for numba's index file, by the name numba gives it
(``<module>.<function>-<line>.pyXY.nbi``: numba's own, not documented), found the entry once the
warm-up had made it ready (None: no warm-up yet in this process; False: this numba names its
files otherwise, or its cache is not writable, and every start compiles the rest again).
tests/test_private_hooks.py asserts it on the pinned numba."""


def cache_is_warm(entry: str = ENTRY) -> bool:
    """Whether numba's cache holds ``entry`` (a quick look for its index)."""
    from engine.compiled_cache import configure

    folder = configure()
    return folder.is_dir() and any(folder.rglob(f"{entry}-*.nbi"))


def is_done() -> bool:
    """Whether this process has made the search's compiled functions ready."""
    return _done.is_set()


def warm_up() -> None:
    """Make every compiled function of the search ready (once a process; thread-safe)."""
    if _done.is_set():
        return
    with _lock:
        if _done.is_set():
            return
        cold = not cache_is_warm()
        _warm_up_search()
        if cold:  # from a warm cache they load when first called (22 ms more at every start)
            compile_the_rest()
        INDEX_FOUND["numba_index_named"] = True if not cold else cache_is_warm()
        _done.set()


def _warm_up_search() -> None:
    """A small search that takes every path once."""
    from engine.search.search import Search  # the compiled modules load here

    board = chess.Board()
    for uci in ("g1f3", "g8f6", "f3g1", "f6g8"):
        board.push_uci(uci)
    search = Search(_Instant(), from_options({"SmartPruningFactor": 0.0}))
    try:
        search.set_position(board)
        search.run(Limit(nodes=200), on_info=lambda infos: None)
        result = search.run(Limit(nodes=220, searchmoves=(chess.Move.from_uci("e2e4"),)))
        assert result.bestmove is not None
        board.push(result.bestmove)
        search.set_position(board)  # tree reuse
        search.run(Limit(nodes=50))
    finally:
        search.close()
