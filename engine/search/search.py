"""lc0-style classic MCTS: gather a minibatch (select), encode, evaluate, expand, back up.

One search thread drives the tree; network evaluations run on a worker thread so that one batch is
evaluated while the next is gathered (two batches in flight; XLA releases the GIL). Cache hits and
terminal positions are backed up out of order while gathering. The search never prints: it reports
through callbacks (``on_info``, ``on_verbose``) that the UCI layer formats.

``Search`` is assembled from one part per phase:

- tree.py      the board along the tree, tree reuse, draw rules, cache keys
- gather.py    selection (PUCT, multi-visit, collisions) and new leaves  (select, encode)
- backup.py    policy softmax, expansion, backup, certainty propagation (expand, backup)
- stoppers.py  limits and smart pruning
- this file    the main loop with its evaluation pipeline, and choosing the move
"""

from __future__ import annotations

import contextlib
import math
import gc
import random
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterator

import chess
import numpy as np

from engine import encoding
from engine.backend import Network
from engine.encoding.planes import masks_to_planes
from engine.search.backup import BackupMixin
from engine.search.cache import NNCache
from engine.search.gather import Batch, GatherMixin
from engine.search.node import Node
from engine.search.params import SearchParams
from engine.search.report import (SearchStats, ThinkingInfo, best_children, make_infos,
                                  verbose_stats)
from engine.search.stoppers import Limits, StopperMixin
from engine.search.tree import TreeMixin
from engine.tablebase import Tablebase

PIPELINE_DEPTH = 2
"""Batches in flight: one evaluating while the next is gathered."""

INFO_INTERVAL_S = 1.0
"""An info line at least this often."""

WAIT_SLICE_S = 0.005
"""Granularity of waiting for a batch, so that stop and deadlines are noticed within it."""


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector; nested uses resume it when the outermost ends.

    The tree is many long-lived container objects that the collector would traverse again and
    again while it grows (~10% of the search thread's time at 4,000 nodes, more for bigger
    trees). A search creates no cyclic garbage of its own, so the pause loses nothing; but
    resuming makes the next allocation traverse everything allocated meanwhile (20-30 ms for a
    second's tree), so the UCI layer holds the pause until its ``bestmove`` has been sent.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass(frozen=True)
class SearchResult:
    """Outcome of one search: best move (None when the root has no legal move) and the ponder move."""

    bestmove: chess.Move | None
    ponder: chess.Move | None
    nodes: int
    playouts: int
    time_ms: float
    infos: tuple[ThinkingInfo, ...] = ()


class Search(TreeMixin, GatherMixin, BackupMixin, StopperMixin):
    """Owns the tree, the NN cache and the evaluation worker; one ``run`` at a time."""

    def __init__(self, network: Network, params: SearchParams, cache: NNCache | None = None,
                 tablebase: Tablebase | None = None) -> None:
        self.network = network
        self.params = params
        self.tablebase = tablebase
        self.cache = cache if cache is not None else NNCache(params.nn_cache_size)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nn-eval")
        self._rules = encoding.format_rules(network.input_format)
        self._fill = encoding.HistoryFill.FEN_ONLY  # encode_planes' default, as lc0
        self._stop = threading.Event()
        # Set by stop() and by each finished evaluation: the search thread sleeps on it, so a
        # stop wakes it at once instead of at the next polling slice.
        self._wake = threading.Event()
        self._ponderhit_limits: Limits | None = None
        self._lock = threading.Lock()
        self._twofold: list[tuple[Node, int]] = []
        self.root = Node()
        self.root_board = chess.Board()
        self._reset_board_state()
        self._reset_counters(Limits())

    def _reset_counters(self, limits: Limits) -> None:
        self._start = limits.started_at if limits.started_at is not None else time.monotonic()
        self._limits = limits
        self._total_playouts = 0
        self._cum_depth = 0
        self._max_depth = 0
        self._batches = 0
        self._first_eval_time: float | None = None
        self._initial_visits = self.root.n
        self._searchmoves = set(limits.searchmoves)
        self._root_in_tablebase = False
        self._tb_hits = 0
        self._mask = None
        self._twofold_first = 0
        self._remaining_hint = math.inf
        self._root_filter: list[bool] | None = None

    # ----------------------------------------------------------------------------- control
    def stop(self) -> None:
        """Ask the running search to stop; run() returns within a few milliseconds."""
        self._stop.set()
        self._wake.set()

    def ponderhit(self, limits: Limits) -> None:
        """Turn a ponder search into a normal one with ``limits`` counted from now."""
        with self._lock:
            self._ponderhit_limits = limits

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    # ----------------------------------------------------------------------------- main loop
    def run(self, limits: Limits, on_info: Callable[[list[ThinkingInfo]], None] | None = None,
            on_verbose: Callable[[list[str]], None] | None = None,
            verbose: bool = False, live_stats: bool = False) -> SearchResult:
        """Search until a limit is reached or stop(); in infinite mode (go infinite / ponder) keep
        going (or idle) until stop() or ponderhit. Returns the best move by lc0's rules."""
        self._stop.clear()
        with self._lock:
            self._ponderhit_limits = None
        self._reset_counters(limits)
        start = self._start
        root_moves = list(self._board.legal_moves)
        if not root_moves:
            return SearchResult(None, None, self.root.n, 0, 0.0)
        self._filter_root_by_tablebase()
        if self._searchmoves:
            self._ensure_root_expanded()
        with collector_paused():
            self._loop(on_info, on_verbose, live_stats)
            infos = self._infos() if self.root.n > 0 else []
            if on_info is not None and infos:
                on_info(infos)
            if verbose and on_verbose is not None and self.root.expanded:
                on_verbose(verbose_stats(self))
            best, ponder = self._choose_move(root_moves)
        return SearchResult(best, ponder, self.root.n, self._total_playouts,
                            (time.monotonic() - start) * 1000.0, tuple(infos))

    def _loop(self, on_info: Callable[[list[ThinkingInfo]], None] | None,
              on_verbose: Callable[[list[str]], None] | None, live_stats: bool) -> None:
        """Gather, evaluate (on the worker, two batches in flight) and process until a limit."""
        pending: list[tuple[Future, Batch]] = []
        last_info = 0.0
        last_best = None
        batch_size = self.params.batch_size(self.network.max_batch,
                                            getattr(self.network, "preferred_batch", None))
        try:
            while not self._stop.is_set():
                self._maybe_ponderhit()
                reached = self._limit_reached()
                if reached and not self._limits.infinite:
                    break
                progressed = False
                if not reached and len(pending) < PIPELINE_DEPTH:
                    batch = self._gather(batch_size)  # select (cache hits backed up at once)
                    if batch.requests:
                        pending.append((self._encode_and_evaluate(batch), batch))
                    progressed = bool(batch.requests) or batch.out_of_order > 0
                if pending and (len(pending) >= PIPELINE_DEPTH or not progressed or reached):
                    if self._wait(pending[0][0]):
                        future, batch = pending.pop(0)
                        self._process(batch, future.result())  # expand and back up
                elif not pending and not progressed:
                    if not self._limits.infinite:
                        break  # nothing left to search (every line proven)
                    self._stop.wait(WAIT_SLICE_S)
                now = time.monotonic()
                if on_info is not None and self.root.n > 0 and now - last_info >= INFO_INTERVAL_S / 4:
                    best = self._current_best()
                    if now - last_info >= INFO_INTERVAL_S or best != last_best:
                        on_info(self._infos())
                        if live_stats and on_verbose is not None:
                            on_verbose(verbose_stats(self))
                        last_info, last_best = now, best
        finally:
            for future, batch in pending:
                self._abandon(batch)
            self._check_in_flight()

    def _filter_root_by_tablebase(self) -> None:
        """lc0: a root the tables cover searches only the moves that keep its best outcome (by
        DTZ unless SyzygyFastPlay), and the tree below it is then not probed."""
        if self.tablebase is None:
            return
        probe = self.tablebase.root_moves(self.root_board.copy(), self.params.syzygy_fast_play)
        if probe is None:
            return
        self._root_in_tablebase = True
        self._tb_hits += 1
        allowed = set(probe.moves)
        self._searchmoves = (self._searchmoves & allowed) or allowed

    def _encode_and_evaluate(self, batch: Batch) -> Future:
        """Encode a gathered batch (its leaves' plane masks, decoded once for the batch) and
        start its evaluation on the worker thread; the result wakes the search thread."""
        planes = masks_to_planes(batch.masks)
        future = self._executor.submit(self.network.evaluate, planes)
        future.add_done_callback(lambda _: self._wake.set())
        return future

    def _wait(self, future: Future) -> bool:
        """Wait for a batch result until it is ready (True) or stop / the deadline (False)."""
        while not future.done():
            if self._stop.is_set() or self._time_up():
                return False
            self._wake.wait(WAIT_SLICE_S)  # the slice bounds how late a deadline is noticed
            self._wake.clear()
        return True  # result() re-raises an evaluation error in the caller

    def _maybe_ponderhit(self) -> None:
        with self._lock:
            limits, self._ponderhit_limits = self._ponderhit_limits, None
        if limits is not None:
            self._limits = limits
            self._start = limits.started_at if limits.started_at is not None else time.monotonic()
            self._first_eval_time = None

    # ----------------------------------------------------------------------------- results
    def _current_best(self):
        if not self.root.expanded or self.root.n == 0:
            return None
        best = best_children(self, self.root, 1)
        return best[0] if best else None

    def stats(self) -> SearchStats:
        """The running search's counters as one record (what reports and stoppers read)."""
        return SearchStats(elapsed_ms=self.elapsed_ms(),
                           nodes=self._total_playouts + self._initial_visits,
                           playouts=self._total_playouts, depth_sum=self._cum_depth,
                           max_depth=self._max_depth, tb_hits=self._tb_hits,
                           hashfull=self.cache.hashfull())

    def _infos(self) -> list[ThinkingInfo]:
        return make_infos(self)

    def _choose_move(self, root_moves: list[chess.Move]) -> tuple[chess.Move, chess.Move | None]:
        """Most visited root move (lc0's ranking), or one drawn with Temperature; and a ponder move."""
        root = self.root
        if not root.expanded or root.n == 0:
            # Stopped before the root's evaluation came back: the network's favourite if the NN
            # cache has the root (moves sorted by prior), else the first legal move.
            self._sync(root, 0)
            hit = self.cache.get(self._cache_key(0))
            legal = [m for m in (hit.moves if hit is not None else root_moves)
                     if not self._searchmoves or m in self._searchmoves]
            return (legal or root_moves)[0], None
        i = self._temperature_choice()
        if i is None:
            best = best_children(self, root, 1)
            i = best[0]
        move = root.moves[i]
        ponder = None
        child = root.children[i]
        if child is not None and child.expanded and child.n > 0:
            pb = best_children(self, child, 1)
            if pb:
                ponder = child.moves[pb[0]]
        return move, ponder

    def _temperature_choice(self) -> int | None:
        p = self.params
        temperature = p.temperature
        moves_played = self._root_ply // 2
        if p.temp_cutoff_move and moves_played + 1 >= p.temp_cutoff_move:
            temperature = p.temp_endgame
        elif temperature and p.temp_decay_moves:
            if moves_played >= p.temp_decay_delay_moves + p.temp_decay_moves:
                temperature = 0.0
            elif moves_played >= p.temp_decay_delay_moves:
                temperature *= (p.temp_decay_delay_moves + p.temp_decay_moves - moves_played) / p.temp_decay_moves
            temperature = max(temperature, p.temp_endgame)
        if temperature <= 0.0:
            return None
        root = self.root
        n = np.array(root.cn, dtype=np.float64)
        cq = np.array(root.cq)
        allowed = n > 0
        if self._mask is not None:
            allowed &= self._mask
        if not allowed.any():
            return None
        q = np.where(allowed, cq, -np.inf)
        max_eval = q.max()
        # TempValueCutoff is in win percentage: drop moves much worse than the best.
        allowed &= cq >= max_eval - p.temp_value_cutoff / 50.0
        n = n + p.temp_visit_offset
        allowed &= n > 0
        if not allowed.any():
            return None
        max_n = n[allowed].max()
        w = np.where(allowed, np.power(np.maximum(n, 0) / max_n, 1.0 / temperature), 0.0)
        return int(random.choices(range(len(w)), weights=w)[0])
