"""lc0-style classic MCTS: gather a minibatch (select), encode, evaluate, expand, back up.

One search thread drives the tree; network evaluations run on worker threads so that one batch is
evaluated while the next is gathered (``Threads`` batches in flight, as lc0 has one per search
thread; XLA releases the GIL), and several are evaluated at once where the backend has a device
for each. Cache hits and terminal positions are backed up out of order while gathering. The search never prints: it reports
through callbacks (``on_info``, ``on_verbose``) that the UCI layer formats.

The phases are plain functions over one explicit :class:`SearchState` (state.py):

- tree.py      the board along the tree, tree reuse, draw rules, cache keys
- puct.py      the selection formulas (cpuct, FPU, moves-left utility, multi-visit assignment)
- gather.py    selection (PUCT, multi-visit, collisions) and new leaves  (select, encode)
- backup.py    policy softmax, expansion, backup, certainty propagation (expand, backup)
- stoppers.py  limits and smart pruning
- ranking.py   best-child order and the Temperature draw
- report.py    info lines, verbose move statistics

``Search`` (this file) owns a state, the evaluation worker and the stop signals; its
``_iteration`` names the phases of one step in one place, as lc0's ExecuteOneIteration does.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import chess

from engine.backend import Network
from engine.search import backup, gather, stoppers, tree
from engine.search.cache import NNCache
from engine.search.limit import Limit
from engine.search.node import Node
from engine.search.params import SearchParams
from engine.search.ranking import best_children, temperature_choice
from engine.search.report import ThinkingInfo, make_infos, verbose_stats
from engine.search.state import Batch, SearchState, SearchStats
from engine.tablebase import Tablebase

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
    second's tree), so the pause belongs to whoever runs a search through to its answer, not
    to :meth:`Search.run`: the controller holds it from ``go`` until its ``bestmove`` has been
    sent; ``engine.fidelity`` and ``bin/bench`` around their searches.
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


class Search:
    """Owns the search state (tree, NN cache), the evaluation worker and the stop signals; one
    ``run`` at a time."""

    def __init__(
        self,
        network: Network,
        params: SearchParams,
        cache: NNCache | None = None,
        tablebase: Tablebase | None = None,
    ) -> None:
        self.network = network
        self.state = SearchState(
            network,
            params,
            cache if cache is not None else NNCache(params.nn_cache_size),
            tablebase,
        )
        tree.reset_board(self.state)
        # The batches in flight are evaluated at once where the backend runs calls concurrently
        # (one per device: both cores of a CPU busy), else one after the other.
        workers = self.state.attributes.concurrency
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nn-eval")
        # Set by stop() and by each finished evaluation: the search thread sleeps on it, so a
        # stop wakes it at once instead of at the next polling slice.
        self._wake = threading.Event()
        self._ponderhit_limit: Limit | None = None
        self._lock = threading.Lock()

    # The parts of the state its owner sets or reads between searches.
    @property
    def params(self) -> SearchParams:
        return self.state.params

    @params.setter
    def params(self, params: SearchParams) -> None:
        self.state.params = params

    @property
    def tablebase(self) -> Tablebase | None:
        return self.state.tablebase

    @tablebase.setter
    def tablebase(self, tablebase: Tablebase | None) -> None:
        self.state.tablebase = tablebase

    @property
    def cache(self) -> NNCache:
        return self.state.cache

    @property
    def root(self) -> Node:
        return self.state.root

    def set_position(self, board: chess.Board) -> bool:
        """Search from ``board`` (its move stack is the game history); reuses the subtree when
        the position continues the previous one, and returns whether it did."""
        return tree.set_position(self.state, board)

    def clear(self) -> None:
        """Forget the tree and the NN cache (ucinewgame)."""
        tree.clear(self.state)

    # ----------------------------------------------------------------------------- control
    def stop(self) -> None:
        """Ask the running search to stop; run() returns within a few milliseconds."""
        self.state.stop.set()
        self._wake.set()

    def ponderhit(self, limit: Limit) -> None:
        """Turn a ponder search into a normal one with ``limit`` (its clock from its
        ``started_at``, the ponderhit's arrival)."""
        with self._lock:
            self._ponderhit_limit = limit

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    def stats(self) -> SearchStats:
        """The running search's counters as one record."""
        return self.state.stats()

    # ----------------------------------------------------------------------------- main loop
    def run(
        self,
        limit: Limit,
        on_info: Callable[[list[ThinkingInfo]], None] | None = None,
        on_verbose: Callable[[list[str]], None] | None = None,
        verbose: bool = False,
        live_stats: bool = False,
    ) -> SearchResult:
        """Search until a limit is reached or stop(); in infinite mode (go infinite / ponder) keep
        going (or idle) until stop() or ponderhit. Returns the best move by lc0's rules. The
        caller pauses the garbage collector around it (:func:`collector_paused`)."""
        state = self.state
        state.stop.clear()
        with self._lock:
            self._ponderhit_limit = None
        state.new_search(limit)
        start = state.start
        root_moves = list(state.board.legal_moves)
        if not root_moves:
            return SearchResult(None, None, state.root.n, 0, 0.0)
        self._filter_root_by_tablebase()
        if state.searchmoves:
            gather.ensure_root_expanded(state)
        self._loop(on_info, on_verbose, live_stats)
        infos = make_infos(state) if state.root.n > 0 else []
        if on_info is not None and infos:
            on_info(infos)
        if verbose and on_verbose is not None and state.root.expanded:
            on_verbose(verbose_stats(state))
        best, ponder = self._choose_move(root_moves)
        return SearchResult(
            best,
            ponder,
            state.root.n,
            state.total_playouts,
            (time.monotonic() - start) * 1000.0,
            tuple(infos),
        )

    def _loop(
        self,
        on_info: Callable[[list[ThinkingInfo]], None] | None,
        on_verbose: Callable[[list[str]], None] | None,
        live_stats: bool,
    ) -> None:
        """Run iterations until a limit (or, in infinite mode, until stop), with info lines."""
        state = self.state
        pending: list[tuple[Future, Batch]] = []
        last_info = 0.0
        last_best = None
        attributes = state.attributes
        batch_size = state.params.batch_size(attributes.max_batch, attributes.preferred_batch)
        try:
            while not state.stop.is_set():
                self._maybe_ponderhit()
                if not self._iteration(pending, batch_size):
                    break
                now = time.monotonic()
                if (
                    on_info is not None
                    and state.root.n > 0
                    and now - last_info >= INFO_INTERVAL_S / 4
                ):
                    best = self._current_best()
                    if now - last_info >= INFO_INTERVAL_S or best != last_best:
                        on_info(make_infos(state))
                        if live_stats and on_verbose is not None:
                            on_verbose(verbose_stats(state))
                        last_info, last_best = now, best
        finally:
            for _future, batch in pending:
                backup.abandon(state, batch)
            backup.check_in_flight(state)

    def _iteration(self, pending: list[tuple[Future, Batch]], batch_size: int) -> bool:
        """One step of the search (lc0's ExecuteOneIteration): check the stoppers, gather a
        minibatch (select; cache hits and terminals are backed up at once), start its
        evaluation (encode, evaluate), and, with ``Threads`` batches in flight or nothing left
        to gather, expand and back up the oldest one. Returns False when the search is over."""
        state = self.state
        reached = stoppers.limit_reached(state)
        if reached and not state.limit.until_stop:
            return False
        progressed = False
        in_flight = state.params.threads  # lc0: one minibatch per search thread
        if not reached and len(pending) < in_flight:
            batch = gather.gather(state, batch_size)
            if batch.requests:
                pending.append((self._encode_and_evaluate(batch), batch))
            progressed = bool(batch.requests) or batch.out_of_order > 0
        if pending and (len(pending) >= in_flight or not progressed or reached):
            if self._wait(pending[0][0]):
                future, batch = pending.pop(0)
                backup.process(state, batch, future.result())
        elif not pending and not progressed:
            if not state.limit.until_stop:
                return False  # nothing left to search (every line proven)
            state.stop.wait(WAIT_SLICE_S)
        return True

    def _filter_root_by_tablebase(self) -> None:
        """lc0: a root the tables cover searches only the moves that keep its best outcome (by
        DTZ unless SyzygyFastPlay), and the tree below it is then not probed."""
        state = self.state
        if state.tablebase is None:
            return
        probe = state.tablebase.root_moves(state.root_board.copy(), state.params.syzygy_fast_play)
        if probe is None:
            return
        state.root_in_tablebase = True
        state.tb_hits += 1
        allowed = set(probe.moves)
        state.searchmoves = (state.searchmoves & allowed) or allowed

    def _encode_and_evaluate(self, batch: Batch) -> Future:
        """Encode a gathered batch (its leaves' plane masks, decoded once for the batch) and
        start its evaluation on the worker thread; the result wakes the search thread."""
        future = self._executor.submit(self.network.evaluate, gather.encode(batch))
        future.add_done_callback(lambda _: self._wake.set())
        return future

    def _wait(self, future: Future) -> bool:
        """Wait for a batch result until it is ready (True) or stop / the deadline (False)."""
        while not future.done():
            if self.state.stop.is_set() or stoppers.time_up(self.state):
                return False
            self._wake.wait(WAIT_SLICE_S)  # the slice bounds how late a deadline is noticed
            self._wake.clear()
        return True  # result() re-raises an evaluation error in the caller

    def _maybe_ponderhit(self) -> None:
        with self._lock:
            limit, self._ponderhit_limit = self._ponderhit_limit, None
        if limit is not None:
            state = self.state
            state.limit = limit
            state.start = limit.started_at if limit.started_at is not None else time.monotonic()
            state.first_eval_time = None

    # ----------------------------------------------------------------------------- results
    def _current_best(self):
        root = self.state.root
        if not root.expanded or root.n == 0:
            return None
        best = best_children(self.state, root, 1)
        return best[0] if best else None

    def _choose_move(self, root_moves: list[chess.Move]) -> tuple[chess.Move, chess.Move | None]:
        """Most visited root move (lc0's ranking), or one drawn with Temperature; and a ponder move."""
        state = self.state
        root = state.root
        if not root.expanded or root.n == 0:
            # Stopped before the root's evaluation came back: the network's favourite if the NN
            # cache has the root (moves sorted by prior), else the first legal move.
            tree.sync(state, root, 0)
            hit = state.cache.get(tree.cache_key(state, 0))
            legal = [
                m
                for m in (hit.moves if hit is not None else root_moves)
                if not state.searchmoves or m in state.searchmoves
            ]
            return (legal or root_moves)[0], None
        i = temperature_choice(state)
        if i is None:
            i = best_children(state, root, 1)[0]
        move = root.moves[i]
        ponder = None
        child = root.children[i]
        if child is not None and child.expanded and child.n > 0:
            pb = best_children(state, child, 1)
            if pb:
                ponder = child.moves[pb[0]]
        return move, ponder
