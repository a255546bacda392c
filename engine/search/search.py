"""lc0's classic search: the tree, the board, the NN cache and the phases are compiled (numba,
engine/search/core/); Python keeps the loop, the network calls, the reports, the Syzygy probes
and the threads.

One step (lc0's ExecuteOneIteration), in :meth:`Search._iteration`: stoppers → gather
(compiled: select, new leaves, planes) → Syzygy probes of the candidates it flagged →
evaluate (worker thread) → expand and back up (compiled).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import chess
import numpy as np
from numba import njit

from engine import tablebase as tb
from engine.backend import Network, NetworkOutput
from engine.board import game_rows, move_from_chess, to_board
from engine.board.make import make_move
from engine.board.moves import MAX_MOVES, to_chess_move
from engine.board.position import FIELDS
from engine.encoding.formats import format_rules
from engine.encoding.rows import FILL_FEN_ONLY
from engine.search.core import backup as cbackup
from engine.search.core import cache as ccache
from engine.search.core import gather as cgather
from engine.search.core import stoppers as cstop
from engine.search.core import tree as ctree
from engine.search.core.calls import direct
from engine.search.core.params import CACHE_HISTORY, pack
from engine.search.core.view import NodeView
from engine.search.limit import Limit
from engine.search.params import SearchParams
from engine.search.ranking import best_children, temperature_choice
from engine.search.report import make_infos, verbose_stats
from engine.search.result import (
    INFO_INTERVAL_S,
    WAIT_SLICE_S,
    SearchResult,
    SearchStats,
    ThinkingInfo,
)
from engine.search.state import NNCache, SearchState
from engine.search.timeline import Timeline
from engine.tablebase import Tablebase

gather_minibatch = direct(cgather.gather)
expand_and_backup = direct(cbackup.expand_and_backup)
"""The loop's compiled calls of every minibatch, without numba's per-call dispatch."""

HISTORY_ROOM = 1024
"""Plies of path the history buffer holds beyond the game (grown when a search goes deeper)."""
NETWORK_STALL_S = 60.0
"""A network call not back after this long has hung: the search stops and says so."""
_ALL_MOVES = np.zeros(0, np.uint8)
"""The empty root filter: every root move may get visits."""


class Search:
    """Owns the tree, the NN cache, the evaluation workers and the stop signals; one ``run`` at
    a time (see the module docstring)."""

    def __init__(
        self,
        network: Network,
        params: SearchParams,
        cache: NNCache | None = None,
        tablebase: Tablebase | None = None,
    ) -> None:
        self.network = network
        # The cache may be shared: the controller keeps it across trees and networks' searches.
        self._cache = cache if cache is not None else NNCache(params.nn_cache_size)
        self.state = SearchState(network, params, self._cache)
        self.tablebase = tablebase
        self._fmt = format_rules(network.input_format).input_format
        self._game = np.zeros((0, FIELDS), np.uint64)
        self._hist = self._game
        self._attributes = network.attributes()
        workers = self._attributes.concurrency
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nn-eval")
        self._wake = threading.Event()
        self._stop_flag = np.zeros(1, np.uint8)
        self._ponderhit_limit: Limit | None = None
        self._pad_key: tuple[int, int] | None = None
        self._pad = np.zeros(1, np.int64)
        self._packed_for: SearchParams | None = None
        self._packed_value = np.zeros(0)
        self._walk_consts = (np.zeros(5, np.int64), np.zeros(2))
        self._ram_limited = False
        self._failure: BaseException | None = None
        """The exception of a network call that failed in the current run (it stops the run)."""
        self._lock = threading.Lock()
        self._batches: list[cgather.Batch] = []
        self._sequence = 0
        self.timeline: Timeline | None = None
        """Set by a caller (bin/bench --trace) to record each batch's phase times."""
        self.state.cached_q = self._cached_q
        start = chess.Board()
        self._set_game(start, game_rows(start))

    # ----------------------------------------------------------------------------- owner API
    @property
    def params(self) -> SearchParams:
        return self.state.params

    @params.setter
    def params(self, params: SearchParams) -> None:
        self.state.params = params
        self._cache.resize(params.nn_cache_size)

    @property
    def cache(self) -> NNCache:
        return self._cache

    @property
    def root(self) -> NodeView:
        return self.state.root

    def set_position(self, board: chess.Board) -> bool:
        """Search from ``board`` (its move stack is the game); keeps the subtree when the game
        continues the previous one, and returns whether it did. A stop asked for before this
        is forgotten; one asked for after it ends the next ``run`` at once, even if that
        ``run`` has not begun yet."""
        state = self.state
        state.stop.clear()
        self._stop_flag[0] = 0
        old = state.root_board
        new_stack, old_stack = board.move_stack, old.move_stack
        rows = game_rows(board)
        node = -1
        if (
            len(new_stack) >= len(old_stack)
            and board.root() == old.root()
            and board.chess960 == old.chess960
            and new_stack[: len(old_stack)] == old_stack
        ):
            node = _follow(state.tree, board, rows, len(old_stack))
        reused = (
            node >= 0
            and int(state.tree.nodes["n"][node]) > 0
            and int(state.tree.nodes["kind"][node]) == ctree.NONE
        )
        if reused:
            state.tree = ctree.keep_subtree(state.tree, node) if node != 0 else state.tree
        else:
            state.tree = ctree.emptied(state.tree)
        self._set_game(board, rows)
        state.changed()
        return reused

    def clear(self) -> None:
        """Forget the tree and the NN cache (ucinewgame)."""
        self.state.tree = ctree.emptied(self.state.tree)
        self._cache.clear()
        self.state.changed()

    def stop(self) -> None:
        self.state.stop.set()
        self._stop_flag[0] = 1
        self._wake.set()

    def ponderhit(self, limit: Limit) -> None:
        """Turn a ponder search into a normal one with ``limit`` counted from now."""
        with self._lock:
            self._ponderhit_limit = limit

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    def stats(self) -> SearchStats:
        return self.state.stats()

    # ----------------------------------------------------------------------------- the loop
    def run(
        self,
        limit: Limit,
        on_info: Callable[[list[ThinkingInfo]], None] | None = None,
        on_verbose: Callable[[list[str]], None] | None = None,
        verbose: bool = False,
        live_stats: bool = False,
    ) -> SearchResult:
        state = self.state
        with self._lock:
            self._ponderhit_limit = None
        state.new_search(limit)
        root_moves = list(state.root_board.legal_moves)
        if not root_moves:
            return SearchResult(None, None, int(state.tree.nodes["n"][0]), 0, 0.0)
        self._filter_root_by_tablebase()
        if state.searchmoves:
            self._expand_root()
            moves = state.root.moves or ()
            state.mask = np.array([m in state.searchmoves for m in moves], bool)
            if not state.mask.any():
                state.mask = None
        self._ram_limited = False
        self._failure = None
        self._loop(on_info, on_verbose, live_stats)
        state.changed()
        if self._failure is not None and on_verbose is not None:
            exc = self._failure
            on_verbose(
                [
                    f"error: network evaluation failed: {type(exc).__name__}: {exc}; the search "
                    f"stopped at {int(state.tree.nodes['n'][0])} nodes"
                ]
            )
        if self._ram_limited and on_verbose is not None:
            mb = (ctree.memory_bytes(state.tree) + ccache.memory_in_use(self._cache.arrays)) / 1e6
            on_verbose(
                [
                    f"RamLimitMb: search stopped at {int(state.tree.nodes['n'][0])} nodes "
                    f"(tree and NN cache about {mb:.1f} MB)"
                ]
            )
        infos = make_infos(state) if state.tree.nodes["n"][0] > 0 else []
        if on_info is not None and infos:
            on_info(infos)
        if verbose and on_verbose is not None and state.root.expanded:
            on_verbose(verbose_stats(state))
        best, ponder = self._choose_move(root_moves)
        return SearchResult(
            best,
            ponder,
            int(state.tree.nodes["n"][0]),
            state.total_playouts,
            (time.monotonic() - state.start) * 1000.0,
            tuple(infos),
        )

    def _loop(self, on_info, on_verbose, live_stats: bool) -> None:
        state = self.state
        pending: list[tuple[Future, cgather.Batch, int, float]] = []
        """Batches in flight, oldest first: (evaluation, batch, sequence number, submitted at)."""
        attributes = self._attributes
        batch_size = state.params.batch_size(attributes.max_batch, attributes.preferred_batch)
        self._ensure_batches(state.params.threads, max(batch_size, state.params.max_prefetch))
        free = list(self._batches)
        self._walk_consts = (
            self._walk_info(),
            np.array([state.draw_score(0), state.draw_score(1)], np.float64),
        )
        last_info, last_best = 0.0, None
        try:
            while not state.stop.is_set():
                self._maybe_ponderhit()
                if not self._iteration(pending, free, batch_size):
                    break
                now = time.monotonic()
                if (
                    on_info is not None
                    and state.tree.nodes["n"][0] > 0
                    and now - last_info >= INFO_INTERVAL_S / 4
                ):
                    state.changed()
                    best = self._current_best()
                    if now - last_info >= INFO_INTERVAL_S or best != last_best:
                        on_info(make_infos(state))
                        if live_stats and on_verbose is not None:
                            on_verbose(verbose_stats(state))
                        last_info, last_best = now, best
        finally:
            for _future, batch, _seq, _at in pending:
                self._abandon(batch)
            state.changed()

    def _iteration(self, pending: list, free: list, batch_size: int) -> bool:
        state = self.state
        state.changed()
        summary = self._summary()
        progress = cstop.Progress(
            state.elapsed_ms(),
            state.total_playouts,
            state.cum_depth,
            state.batches,
            state.first_eval_time,
        )
        reached, remaining, state.first_eval_time = cstop.limit_reached(
            state.limit, state.params, summary, progress
        )
        if reached and summary.visits >= state.params.max_tree_nodes:
            self._ram_limited = True
        if reached and not state.limit.until_stop:
            return False
        progressed = False
        in_flight = state.params.threads
        timeline = self.timeline
        if not reached and len(pending) < in_flight and free:
            batch = free.pop()
            start = Timeline.now() if timeline is not None else 0.0
            n, ooo = self._gather(batch, batch_size, remaining, summary.best)
            if n:
                self._sequence += 1
                if timeline is not None:
                    timeline.add(self._sequence, "gather", start, Timeline.now(), n)
                future = self._evaluate(batch, n, self._sequence)
                pending.append((future, batch, self._sequence, time.monotonic()))
            else:
                free.append(batch)
            progressed = n > 0 or ooo > 0
        if pending and (len(pending) >= in_flight or not progressed or reached):
            if self._wait(pending[0][0], pending[0][3]):
                future, batch, seq, _ = pending.pop(0)
                start = Timeline.now() if timeline is not None else 0.0
                try:
                    out = future.result()
                except Exception as exc:  # the network failed: keep the tree whole and stop
                    self._abandon(batch)
                    free.append(batch)
                    self._failure = exc
                    return False
                self._process(batch, out)
                if timeline is not None:
                    timeline.add(seq, "backup", start, Timeline.now())
                free.append(batch)
            elif self._failure is not None:
                return False
        elif not pending and not progressed:
            if not state.limit.until_stop:
                return False
            state.stop.wait(WAIT_SLICE_S)
        return True

    # ----------------------------------------------------------------------------- phases
    def _gather(
        self,
        batch: cgather.Batch,
        batch_size: int,
        remaining: float = math.inf,
        best: int = -1,
    ) -> tuple[int, int]:
        """Gather a minibatch into ``batch``; returns (requests, out-of-order backups).
        ``remaining``: the playouts the stoppers expect to remain (smart pruning's hint);
        ``best``: the root's best edge on this tree (-1: none), both from this step's summary."""
        state = self.state
        p = state.params
        max_ooo = max(1, int(p.max_out_of_order_evals_factor * batch_size))
        state.tree = ctree.reserve(
            state.tree, 2 * batch_size + max_ooo + p.max_prefetch + 64, (max_ooo + 2) * MAX_MOVES
        )
        collisions_left = p.collision_visit_limit(min(int(state.tree.nodes["n"][0]), remaining))
        nodes_left = state.limit.nodes if state.limit.nodes is not None else -1
        pad = self._pad_table(batch_size)
        info, draw_scores = self._walk_consts
        root_filter = self._root_filter(remaining, best)
        walk = cgather.Walk(self._hist, info, draw_scores, root_filter, self._stop_flag)
        self._run_gather(
            batch,
            walk,
            batch_size,
            max_ooo,
            collisions_left,
            p.max_collision_events,
            nodes_left,
            pad,
        )
        requests = int(batch.meta[cgather.REQUESTS])
        ooo = int(batch.meta[cgather.OUT_OF_ORDER_DONE])
        if batch.meta[cgather.NO_ROOM]:
            self._grow_history()
        if self.tablebase is not None and requests:
            requests, hits = self._probe(batch, requests)
            ooo += hits
        return requests, ooo

    def _run_gather(self, batch: cgather.Batch, walk: cgather.Walk, *limits) -> None:
        """The compiled gather into ``batch``; ``limits``: batch size, out-of-order budget,
        collisions left, collision events, nodes left (-1: none), prefetch table (int64)."""
        state = self.state
        gather_minibatch(
            state.tree, self._packed, state.counters, self._cache.arrays, batch, walk, *limits
        )

    def _pad_table(self, batch_size: int) -> np.ndarray:
        """Prefetch target by request count: MaxPrefetch (lc0), but no further than the rows
        the backend computes anyway (its padded size), so prefetching costs no network time."""
        key = (batch_size, self.state.params.max_prefetch)
        if self._pad_key != key:
            padded = self._attributes.padded_size
            top = self.state.params.max_prefetch
            self._pad = np.array(
                [
                    top if padded is None or n == 0 else min(top, padded(n))
                    for n in range(batch_size + 1)
                ],
                np.int64,
            )
            self._pad_key = key
        return self._pad

    def _evaluate(self, batch: cgather.Batch, n: int, seq: int) -> Future:
        planes = batch.planes[:n]
        timeline = self.timeline
        if timeline is None:
            future = self._executor.submit(self.network.evaluate, planes)
        else:
            future = self._executor.submit(_timed_evaluate, self.network, planes, timeline, seq)
        future.add_done_callback(lambda _: self._wake.set())
        return future

    def _process(self, batch: cgather.Batch, out: NetworkOutput) -> None:
        state = self.state
        n = int(batch.meta[cgather.REQUESTS])
        if state.stop.is_set():
            self._abandon(batch)
            return
        state.tree = ctree.reserve(state.tree, 0, int(batch.req["count"][:n].sum()))
        expand_and_backup(
            state.tree,
            self._packed,
            state.counters,
            self._cache.arrays,
            batch.req,
            batch.moves,
            batch.indices,
            # Contiguous float32 whatever the backend returns: the call skips numba's dispatch,
            # so its argument types must never change (engine/search/core/calls.py).
            np.ascontiguousarray(out.policy, np.float32),
            np.ascontiguousarray(out.q, np.float32),
            np.ascontiguousarray(out.d, np.float32),
            np.ascontiguousarray(out.m, np.float32),
            n,
        )
        state.batches += 1

    def _abandon(self, batch: cgather.Batch) -> None:
        """Drop an unfinished batch: its visits out of flight."""
        _abandon(self.state.tree, batch.req, int(batch.meta[cgather.REQUESTS]))

    def _probe(self, batch: cgather.Batch, n: int) -> tuple[int, int]:
        """Syzygy probes of the candidates the gather flagged: a hit is a terminal backed up
        at once and leaves the batch."""
        state = self.state
        hits = 0
        r = 0
        while r < n:
            if not batch.req["tb"][r] or batch.req["node"][r] < 0:
                r += 1
                continue
            depth = int(batch.req["depth"][r])
            board = to_board(batch.rows[r])
            wdl = self.tablebase.probe_wdl(board) if self.tablebase is not None else None
            if wdl is None:
                r += 1
                continue
            state.counters[cbackup.TB_HITS] += 1
            wl = -1.0 if wdl == tb.WIN else (1.0 if wdl == tb.LOSS else 0.0)
            _tablebase_terminal(
                state.tree, self._packed, state.counters, int(batch.req["node"][r]), wl, depth
            )
            _drop_request(batch, r, n)
            n -= 1
            hits += 1
        batch.meta[cgather.REQUESTS] = n
        return n, hits

    # ----------------------------------------------------------------------------- helpers
    @property
    def _packed(self) -> np.ndarray:
        params = self.state.params
        if self._packed_for is not params:
            self._packed_value = pack(params, bool(self.network.has_mlh))
            self._packed_for = params
        return self._packed_value

    def _walk_info(self) -> np.ndarray:
        state = self.state
        pieces = self.tablebase.max_pieces if self.tablebase is not None else 0
        return np.array(
            [len(self._game), self._fmt, FILL_FEN_ONLY, pieces, int(state.root_in_tablebase)],
            np.int64,
        )

    def _summary(self) -> cstop.RootSummary:
        state = self.state
        return cstop.summarize(state.tree, state.draw_score(0), state.mask)

    def _root_filter(self, remaining: float, best: int) -> np.ndarray:
        """Root moves that may get visits (searchmoves, and lc0's pruning in selection: a move
        whose visits cannot reach the best move's in the playouts expected to remain); empty
        when every move may."""
        state = self.state
        tree = state.tree
        if (
            remaining != math.inf
            and int(tree.nodes["nedges"][0]) > 0
            and int(tree.nodes["n"][0]) > 0
        ):
            if best >= 0:
                out = np.zeros(int(tree.nodes["nedges"][0]), np.uint8)
                cstop.root_filter(tree, best, remaining, *self._mask_args(), out)
                return out
        if state.mask is None:
            return _ALL_MOVES
        return state.mask.astype(np.uint8)

    def _mask_args(self) -> tuple[np.ndarray, bool]:
        mask = self.state.mask
        return (np.zeros(0, np.uint8), False) if mask is None else (mask.astype(np.uint8), True)

    def _set_game(self, board: chess.Board, rows: np.ndarray) -> None:
        """The game up to the root: ``board`` and its rows (engine.board.game_rows)."""
        self.state.root_board = board.copy()
        self._game = rows
        g = len(rows)
        self._hist = np.zeros((g + HISTORY_ROOM, FIELDS), np.uint64)
        self._hist[:g] = rows
        _revert_stale_twofolds(self.state.tree, self._hist, g)

    def _grow_history(self) -> None:
        g = len(self._game)
        bigger = np.zeros((2 * len(self._hist), FIELDS), np.uint64)
        bigger[:g] = self._game
        self._hist = bigger

    def _ensure_batches(self, count: int, size: int) -> None:
        if len(self._batches) != count or self._batches[0].req.shape[0] < size:
            self._batches = [cgather.new_batch(size) for _ in range(count)]

    def _expand_root(self) -> None:
        """Evaluate the root at once (searchmoves need its moves)."""
        state = self.state
        if state.tree.nodes["nedges"][0] > 0:
            return
        self._ensure_batches(state.params.threads, max(1, state.params.max_prefetch))
        batch = self._batches[0]
        walk = cgather.Walk(
            self._hist,
            self._walk_info(),
            np.zeros(2, np.float64),
            np.zeros(0, np.uint8),
            self._stop_flag,
        )
        self._run_gather(batch, walk, 1, 1, 1, 1, -1, np.zeros(2, np.int64))
        n = int(batch.meta[cgather.REQUESTS])
        if n:
            try:
                out = self.network.evaluate(batch.planes[:n])
            except Exception:
                self._abandon(batch)  # the root's visit out of flight: the tree stays usable
                raise
            self._process(batch, out)
        state.changed()

    def _wait(self, future: Future, submitted: float) -> bool:
        """Wait for ``future``; False on a stop, the time limit, or a network call that has not
        returned in NETWORK_STALL_S (then ``_failure`` says so, and the stalled worker is left
        behind: the next search's calls go to a new one)."""
        state = self.state
        while not future.done():
            if state.stop.is_set() or cstop.time_up(state.limit, state.elapsed_ms()):
                return False
            stalled = time.monotonic() - submitted
            if stalled > NETWORK_STALL_S:
                self._failure = TimeoutError(f"no answer from the network in {stalled:.0f} s")
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = ThreadPoolExecutor(
                    max_workers=self._attributes.concurrency, thread_name_prefix="nn-eval"
                )
                return False
            self._wake.wait(WAIT_SLICE_S)
            self._wake.clear()
        return True

    def _maybe_ponderhit(self) -> None:
        with self._lock:
            limit, self._ponderhit_limit = self._ponderhit_limit, None
        if limit is not None:
            state = self.state
            state.limit = limit
            state.start = limit.started_at if limit.started_at is not None else time.monotonic()
            state.first_eval_time = None

    def _filter_root_by_tablebase(self) -> None:
        state = self.state
        if self.tablebase is None:
            return
        probe = self.tablebase.root_moves(state.root_board.copy(), state.params.syzygy_fast_play)
        if probe is None:
            return
        state.root_in_tablebase = True
        state.counters[cbackup.TB_HITS] += 1
        allowed = set(probe.moves)
        state.searchmoves = (state.searchmoves & allowed) or allowed

    def _cached_root_moves(self) -> list[int]:
        """The root's legal moves by decreasing prior, if the NN cache has the root."""
        row = len(self._game) - 1
        moves = np.zeros(MAX_MOVES, np.int32)
        priors = np.zeros(MAX_MOVES, np.uint16)
        slot = _cached_slot(self._hist, row, -1, self._packed, self._cache.arrays)
        count = 0 if slot < 0 else ccache.read_moves(self._cache.arrays, slot, moves, priors)
        return moves[:count].tolist()

    def _cached_q(self, move: chess.Move | None) -> float | None:
        """The network's q of the root, or after the root ``move``, from the NN cache."""
        row = len(self._game) - 1
        board = self.state.root_board
        word = -1 if move is None else move_from_chess(self._hist[row], board, move)
        slot = _cached_slot(self._hist, row, word, self._packed, self._cache.arrays)
        return None if slot < 0 else float(self._cache.arrays.entries["q"][slot])

    def _current_best(self) -> int | None:
        best = self._summary().best
        return best if best >= 0 and int(self.state.tree.nodes["n"][0]) > 0 else None

    def _choose_move(self, root_moves: list[chess.Move]) -> tuple[chess.Move, chess.Move | None]:
        """Most visited root move (lc0's ranking), or one drawn with Temperature; a ponder move."""
        state = self.state
        state.changed()
        root = state.root
        if not root.expanded or root.n == 0:
            # Stopped before the root's evaluation came back: the network's favourite if the
            # NN cache has the root (moves sorted by prior), else the first legal move.
            known = [to_chess_move(m, state.root_board.chess960) for m in self._cached_root_moves()]
            legal = [
                m for m in (known or root_moves) if not state.searchmoves or m in state.searchmoves
            ]
            return (legal or root_moves)[0], None
        i = temperature_choice(state)
        if i is None:
            i = best_children(state, root, 1)[0]
        moves, children = root.moves, root.children
        ponder = None
        child = children[i]
        if child is not None and child.expanded and child.n > 0:
            pb = best_children(state, child, 1, 1)
            child_moves = child.moves
            if pb:
                ponder = child_moves[pb[0]]
        return moves[i], ponder


def _timed_evaluate(
    network: Network, planes: np.ndarray, timeline: Timeline, seq: int
) -> NetworkOutput:
    start = Timeline.now()
    out = network.evaluate(planes)
    timeline.add(seq, "device", start, Timeline.now())
    return out


def _follow(tree: ctree.Tree, board: chess.Board, rows: np.ndarray, from_ply: int) -> int:
    """The node the game's moves after ``from_ply`` lead to from the root, or -1 (``rows``:
    the game's rows)."""
    replay = board.root()
    node = 0
    for ply, move in enumerate(board.move_stack):
        if ply >= from_ply:
            k = int(tree.nodes["nedges"][node])
            if k == 0 or int(tree.nodes["kind"][node]) != ctree.NONE:
                return -1
            word = move_from_chess(rows[ply], replay, move)
            f = int(tree.nodes["first"][node])
            hit = np.nonzero(tree.edges["move"][f : f + k] == word)[0]
            if hit.size == 0:
                return -1
            node = int(tree.edges["child"][f + int(hit[0])])
            if node < 0:
                return -1
        replay.push(move)
    return node


# Small compiled helpers of the loop.


@njit(cache=True)
def _cached_slot(hist, row, word, params, cache):
    """The NN-cache slot of ``hist[row]`` (or of the position after move ``word`` there: its
    row is written into ``hist[row + 1]``), or -1."""
    if word >= 0:
        make_move(hist[row], np.int64(word), hist[row + 1])
        row += 1
    reps, _ = cgather._repetitions(hist, row)
    key = cgather.cache_key(hist, row, reps, np.int64(params[CACHE_HISTORY]))
    return ccache.lookup(cache, key)


@njit(cache=True)
def _abandon(tree, req, n):
    for r in range(n):
        node = req.node[r]
        if node >= 0:
            tree.nodes.status[node] &= ~ctree.PENDING
            cbackup.cancel(tree, np.int64(node), np.int64(1))


@njit(cache=True)
def _tablebase_terminal(tree, params, counters, node, wl, depth):
    parent = tree.nodes.parent[node]
    m = max(0.0, tree.nodes.m[parent] - 1.0) if parent >= 0 else 0.0
    tree.nodes.status[node] &= ~ctree.PENDING
    tree.nodes.kind[node] = ctree.TABLEBASE
    tree.nodes.t_wl[node] = wl
    tree.nodes.t_d[node] = 1.0 - abs(wl)
    tree.nodes.t_m[node] = m
    cbackup.backup(
        tree,
        params,
        counters,
        np.int64(node),
        np.int64(1),
        np.float64(wl),
        np.float64(1.0 - abs(wl)),
        np.float64(m),
        np.int64(depth),
    )


@njit(cache=True)
def _drop_request(batch, r, n):
    last = n - 1
    if r != last:
        batch.req[r] = batch.req[last]
        for f in range(batch.rows.shape[1]):
            batch.rows[r, f] = batch.rows[last, f]
        for j in range(batch.moves.shape[1]):
            batch.moves[r, j] = batch.moves[last, j]
            batch.indices[r, j] = batch.indices[last, j]
        for p in range(112):
            for y in range(8):
                for x in range(8):
                    batch.planes[r, p, y, x] = batch.planes[last, p, y, x]


@njit(cache=True)
def _revert_stale_twofolds(tree, hist, game_len):
    """A two-fold draw whose first occurrence is now before the root is no longer a draw:
    take its visits out of its ancestors and let it be evaluated again (as lc0)."""
    count = tree.count[0]
    depth = np.zeros(count, np.int64)
    for i in range(1, count):  # parents are created before their children
        p = tree.nodes.parent[i]
        depth[i] = depth[p] + 1 if p >= 0 else 0
        if tree.nodes.kind[i] != ctree.TWOFOLD or p < 0:
            continue
        first = game_len - 1 + depth[i] - np.int64(tree.nodes.t_m[i])
        if first >= game_len - 1:
            continue
        n, wl, d, m = tree.nodes.n[i], tree.nodes.wl[i], tree.nodes.d[i], tree.nodes.m[i]
        anc, sign, up = p, -1.0, 1
        while anc >= 0 and n > 0:
            left = tree.nodes.n[anc] - n
            if left <= 0:
                tree.nodes.n[anc], tree.nodes.wl[anc], tree.nodes.d[anc], tree.nodes.m[anc] = (
                    0,
                    0.0,
                    0.0,
                    0.0,
                )
            else:
                tree.nodes.wl[anc] = (tree.nodes.wl[anc] * tree.nodes.n[anc] - sign * wl * n) / left
                tree.nodes.d[anc] = (tree.nodes.d[anc] * tree.nodes.n[anc] - d * n) / left
                tree.nodes.m[anc] = (tree.nodes.m[anc] * tree.nodes.n[anc] - (m + up) * n) / left
                tree.nodes.n[anc] = left
            sign, up, anc = -sign, up + 1, tree.nodes.parent[anc]
        tree.nodes.vpol[p] -= ctree.prior(tree.edges.prior[tree.nodes.pedge[i]])
        tree.nodes.n[i], tree.nodes.wl[i], tree.nodes.d[i], tree.nodes.m[i] = 0, 0.0, 0.0, 0.0
        tree.nodes.kind[i] = ctree.NONE
