"""lc0-style classic MCTS: gather a minibatch (select), encode, evaluate, expand, back up.

One search thread drives the tree; network evaluations run on a worker thread so that one batch is
evaluated while the next is gathered (two batches in flight; XLA releases the GIL). Cache hits and
terminal positions are backed up out of order while gathering. The search never prints: it reports
through callbacks (``on_info``, ``on_verbose``) that the UCI layer formats.
"""

from __future__ import annotations

import gc
import itertools
import math
import random
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import chess
import numpy as np

from engine import encoding
from engine.backend import Network
from engine.encoding.planes import EncodedMasks, masks_to_planes, position_masks
from engine.search.cache import CachedEval, NNCache
from engine.search.node import Node, Terminal
from engine.search.params import SearchParams
from engine.search.report import ThinkingInfo, best_children, make_infos, verbose_stats
from engine.search.select import assign_visits, child_scores

PIPELINE_DEPTH = 2
"""Batches in flight: one evaluating while the next is gathered."""

INFO_INTERVAL_S = 1.0
"""An info line at least this often."""

WAIT_SLICE_S = 0.005
"""Granularity of waiting for a batch, so that stop and deadlines are noticed within it."""

STOP_CHECK_EVERY = 8
"""Nodes handled between checks of stop / the deadline while gathering."""

SMART_PRUNING_TOLERANCE_MS = 200
SMART_PRUNING_TOLERANCE_NODES = 300
"""lc0's SmartPruningStopper tolerances (stoppers.cc)."""


@dataclass
class Limits:
    """When to stop: any limit reached. time_ms counts from ``started_at`` (time.monotonic() of the
    `go` command's arrival, as lc0 counts; None: the search start) or from ponderhit."""

    nodes: int | None = None
    time_ms: float | None = None
    started_at: float | None = None
    depth: int | None = None
    mate: int | None = None
    infinite: bool = False
    searchmoves: tuple[chess.Move, ...] = ()


@dataclass(frozen=True)
class SearchResult:
    """Outcome of one search: best move (None when the root has no legal move) and the ponder move."""

    bestmove: chess.Move | None
    ponder: chess.Move | None
    nodes: int
    playouts: int
    time_ms: float
    infos: tuple[ThinkingInfo, ...] = ()


@dataclass
class _Request:
    node: Node
    key: object
    moves: list[chess.Move]
    indices: list[int]
    depth: int


@dataclass
class _Batch:
    requests: list[_Request] = field(default_factory=list)
    # Planes are encoded as bitboard masks per leaf and turned into dense planes once per batch.
    masks: list[EncodedMasks] = field(default_factory=list)
    collisions: list[tuple[Node, int]] = field(default_factory=list)
    collision_events: int = 0
    collision_visits: int = 0
    out_of_order: int = 0


class Search:
    """Owns the tree, the NN cache and the evaluation worker; one ``run`` at a time."""

    def __init__(self, network: Network, params: SearchParams, cache: NNCache | None = None) -> None:
        self.network = network
        self.params = params
        self.cache = cache if cache is not None else NNCache(params.nn_cache_size)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nn-eval")
        self._rules = encoding.format_rules(network.input_format)
        self._fill = encoding.HistoryFill.FEN_ONLY  # encode_planes' default, as lc0
        self._stop = threading.Event()
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
        self._mask = None
        self._twofold_first = 0

    # ----------------------------------------------------------------------------- position / tree
    def set_position(self, board: chess.Board) -> bool:
        """Search from ``board`` (its move stack is the game history). Reuses the subtree when the
        position continues the previous one; returns whether it did."""
        old = self.root_board
        new_stack, old_stack = board.move_stack, old.move_stack
        reused = False
        if (len(new_stack) >= len(old_stack) and board.root() == old.root()
                and board.chess960 == old.chess960 and new_stack[:len(old_stack)] == old_stack):
            node = self.root
            for move in new_stack[len(old_stack):]:
                if not node.expanded or node.terminal is not None:
                    node = None
                    break
                try:
                    i = node.moves.index(move)
                except ValueError:
                    node = None
                    break
                node = node.children[i]
                if node is None:
                    break
            if node is not None and node.n > 0 and node.terminal is None:
                node.detach()
                self.root = node
                reused = True
        if not reused:
            self.root = Node()
        self.root_board = board.copy()
        self._reset_board_state()
        if reused:
            self._revert_stale_twofolds()
        else:
            self._twofold = []
        return reused

    def clear(self) -> None:
        """Forget the tree and the NN cache (ucinewgame)."""
        self.root = Node()
        self.cache.clear()
        self._twofold = []

    def _reset_board_state(self) -> None:
        self._board = self.root_board.copy()
        self._pushed: list[Node] = []
        start = self._board.root()
        keys = [start._transposition_key()]
        for move in self._board.move_stack:
            start.push(move)
            keys.append(start._transposition_key())
        self._keys = keys  # position keys of the game, then of the path pushed on _board
        self._root_ply = len(self._board.move_stack)

    def _revert_stale_twofolds(self) -> None:
        """A two-fold draw whose first occurrence is now before the root is no longer a draw:
        remove its visits from its ancestors and let it be evaluated again (as lc0 does)."""
        keep = []
        for node, first_ply in self._twofold:
            if node.terminal is None or node.terminal.kind != "twofold":
                continue
            anc = node
            while anc.parent is not None:
                anc = anc.parent
            if anc is not self.root:
                continue  # not in the reused tree any more
            if first_ply >= self._root_ply:
                keep.append((node, first_ply))
                continue
            self._remove_visits(node)
            node.terminal = None
        self._twofold = keep

    def _remove_visits(self, node: Node) -> None:
        n, wl, d, m = node.n, node.wl, node.d, node.m
        anc, sign, depth = node.parent, -1.0, 1
        while anc is not None and n > 0:
            left = anc.n - n
            if left <= 0:
                anc.n, anc.wl, anc.d, anc.m = 0, 0.0, 0.0, 0.0
            else:
                anc.wl = (anc.wl * anc.n - sign * wl * n) / left
                anc.d = (anc.d * anc.n - d * n) / left
                anc.m = (anc.m * anc.n - (m + depth) * n) / left
                anc.n = left
            if anc.parent is not None:
                p, i = anc.parent, anc.index
                p.cn[i], p.cq[i], p.cd[i], p.cm[i] = anc.n, anc.wl, anc.d, anc.m
            sign, depth, anc = -sign, depth + 1, anc.parent
        parent = node.parent
        if parent is not None:
            parent.cn[node.index] = 0
            parent.visited_policy -= float(parent.p[node.index])
        node.n, node.wl, node.d, node.m = 0, 0.0, 0.0, 0.0

    # ----------------------------------------------------------------------------- control
    def stop(self) -> None:
        """Ask the running search to stop; run() returns within a few milliseconds."""
        self._stop.set()

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
        if self._searchmoves:
            self._ensure_root_expanded()
        pending: list[tuple[Future, _Batch]] = []
        last_info = 0.0
        last_best = None
        batch_size = self.params.batch_size(self.network.max_batch)
        # The tree is many long-lived container objects that Python's cyclic garbage collector
        # would traverse again and again while it grows (~10% of the search thread's time at
        # 4,000 nodes, more for bigger trees). The search loop creates no cyclic garbage
        # (gc.collect() after a search finds 0 objects), so reference counting frees all of it
        # and the collector can pause until the search ends.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            while not self._stop.is_set():
                self._maybe_ponderhit()
                reached = self._limit_reached()
                if reached and not self._limits.infinite:
                    break
                progressed = False
                if not reached and len(pending) < PIPELINE_DEPTH:
                    batch = self._gather(batch_size)
                    if batch.requests:
                        planes = masks_to_planes(batch.masks)
                        pending.append((self._executor.submit(self.network.evaluate, planes), batch))
                    progressed = bool(batch.requests) or batch.out_of_order > 0
                if pending and (len(pending) >= PIPELINE_DEPTH or not progressed or reached):
                    if self._wait(pending[0][0]):
                        future, batch = pending.pop(0)
                        self._process(batch, future.result())
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
            if gc_was_enabled:
                gc.enable()
            for future, batch in pending:
                self._abandon(batch)
            self._check_in_flight()
        infos = self._infos() if self.root.n > 0 else []
        if on_info is not None and infos:
            on_info(infos)
        if verbose and on_verbose is not None and self.root.expanded:
            on_verbose(verbose_stats(self))
        best, ponder = self._choose_move(root_moves)
        return SearchResult(best, ponder, self.root.n, self._total_playouts,
                            (time.monotonic() - start) * 1000.0, tuple(infos))

    def _wait(self, future: Future) -> bool:
        """Wait for a batch result until it is ready (True) or stop / the deadline (False)."""
        while True:
            try:
                future.result(timeout=WAIT_SLICE_S)
                return True
            except TimeoutError:
                pass
            except Exception:
                return True  # result() re-raises in the caller
            if self._stop.is_set() or self._time_up():
                return False

    def _maybe_ponderhit(self) -> None:
        with self._lock:
            limits, self._ponderhit_limits = self._ponderhit_limits, None
        if limits is not None:
            self._limits = limits
            self._start = limits.started_at if limits.started_at is not None else time.monotonic()
            self._first_eval_time = None

    # ----------------------------------------------------------------------------- stopping
    def elapsed_ms(self) -> float:
        return (time.monotonic() - self._start) * 1000.0

    def _time_up(self) -> bool:
        t = self._limits.time_ms
        return t is not None and not self._limits.infinite and self.elapsed_ms() >= t

    def _limit_reached(self) -> bool:
        lim = self.params
        limits = self._limits
        if limits.nodes is not None and self.root.n >= limits.nodes:
            return True
        if self.root.n >= lim.max_tree_nodes:
            return True
        if self._time_up():
            return True
        if limits.depth is not None and self.root.n > 1 and self._avg_depth() >= limits.depth:
            return True
        if limits.mate is not None:
            mate = self._mate_found()
            if mate is not None and 0 < mate <= limits.mate:
                return True
        if not limits.infinite and self._smart_prune():
            return True
        return False

    def _avg_depth(self) -> float:
        return self._cum_depth / max(self._total_playouts, 1)

    def _mate_found(self) -> int | None:
        if not self.root.expanded:
            return None
        best = best_children(self, self.root, 1)
        if not best:
            return None
        child = self.root.children[best[0]]
        if child is None or child.terminal is None or child.terminal.wl <= 0:
            return None
        return int(round(child.terminal.m)) // 2 + 1

    def _smart_prune(self) -> bool:
        """lc0's SmartPruningStopper: stop when the best move cannot be caught in the time left."""
        factor = self.params.smart_pruning_factor
        root = self.root
        if factor <= 0.0 or not root.expanded:
            return False
        k = len(root.moves) if self._mask is None else int(self._mask.sum())
        if k == 1 and (self._limits.time_ms is not None or self._limits.nodes is not None):
            return True
        if self._total_playouts > 0 and self._first_eval_time is None:
            self._first_eval_time = self.elapsed_ms()
            return False
        if self._first_eval_time is None:
            return False
        elapsed = self.elapsed_ms()
        remaining = math.inf
        if self._limits.nodes is not None:
            remaining = (self._limits.nodes - root.n) / factor
        if self._limits.time_ms is not None:
            if elapsed < self._first_eval_time + SMART_PRUNING_TOLERANCE_MS:
                return False
            nodes = self._total_playouts + SMART_PRUNING_TOLERANCE_NODES
            nps = 1000.0 * nodes / max(elapsed - self._first_eval_time, 1e-3) + 1
            remaining = min(remaining, (self._limits.time_ms - elapsed) / 1000.0 * nps / factor)
        if math.isinf(remaining):
            return False
        cn = np.asarray(root.cn) if self._mask is None else np.where(self._mask, root.cn, 0)
        if len(cn) < 2:
            return False
        top2 = np.partition(cn, len(cn) - 2)[-2:]
        return remaining < top2[1] - top2[0]

    # ----------------------------------------------------------------------------- gather (select)
    def _ensure_root_expanded(self) -> None:
        """Expand the root synchronously (needed for the searchmoves mask)."""
        root = self.root
        if not root.expanded:
            self._sync(root, 0)
            key = self._cache_key(0)
            hit = self.cache.get(key)
            if hit is None:
                hit = self._evaluate_now(key)
            root.expand(hit.moves, hit.priors)
            self._backup(root, 1, -hit.q, hit.d, hit.m, 0)
        if self._searchmoves:
            self._mask = np.array([m in self._searchmoves for m in root.moves])
            if not self._mask.any():
                self._mask = None

    def _evaluate_now(self, key: object) -> CachedEval:
        moves, idx = encoding.legal_moves_and_indices(self._board, self.network.input_format)
        planes = masks_to_planes([position_masks(self._board, self._rules, self._fill)])
        out = self.network.evaluate(planes)
        entry = self._make_entries([moves], [idx], out)[0]
        self.cache.put(key, entry)
        return entry

    def _gather(self, batch_size: int) -> _Batch:
        """Collect up to ``batch_size`` positions to evaluate (lc0's GatherMinibatch)."""
        batch = _Batch()
        p = self.params
        max_ooo = max(1, int(p.max_out_of_order_evals_factor * batch_size))
        while len(batch.requests) < batch_size:
            want = batch_size - len(batch.requests)
            if self._limits.nodes is not None:
                want = min(want, self._limits.nodes - self.root.n - self._visits_in_flight(batch))
            if want <= 0:
                break
            before = (len(batch.requests), batch.out_of_order)
            self._select(want, batch)
            if (len(batch.requests), batch.out_of_order) == before:
                break
            if (batch.collision_events >= p.max_collision_events
                    or batch.collision_visits >= p.max_collision_visits
                    or batch.out_of_order >= max_ooo or self._stop.is_set()):
                break
        for node, k in batch.collisions:
            self._cancel(node, k)
        return batch

    def _visits_in_flight(self, batch: _Batch) -> int:
        """Evaluations not yet backed up: the root's children visits in flight (+1 for a pending root)."""
        root = self.root
        if root.expanded:
            return sum(root.cnif)
        return 1 if root.pending else 0

    def _select(self, visits: int, batch: _Batch) -> None:
        """Distribute ``visits`` from the root down the tree by PUCT (multi-visit picking)."""
        p = self.params
        use_mlh = self.network.has_mlh
        root_black = self.root_board.turn == chess.BLACK
        stack: list[tuple[Node, int, int]] = [(self.root, visits, 0)]
        leaves = 0
        while stack:
            node, k, depth = stack.pop()
            leaves += 1
            if leaves % STOP_CHECK_EVERY == 0 and (self._stop.is_set() or self._time_up()):
                # Give back the visits not handed out yet, so the tree keeps no phantom in-flight.
                self._cancel(node, k)
                for rest, rk, _ in stack:
                    self._cancel(rest, rk)
                return
            if node.terminal is not None and node is not self.root:
                t = node.terminal
                self._backup(node, k, t.wl, t.d, t.m, depth)
                batch.out_of_order += 1
                continue
            if not node.expanded:
                self._leaf(node, k, depth, batch)
                continue
            at_root = node is self.root
            # lc0's GetDrawScore: DrawScore at even depth for white at the root, negated otherwise.
            draw_score = p.draw_score if ((depth % 2 == 1) == root_black) else -p.draw_score
            qm, pu, _ = child_scores(p, node, at_root, draw_score, use_mlh)
            mask = self._mask if at_root else None
            for i, cnt in assign_visits(qm, pu, node.cn, node.cnif, k, mask).items():
                stack.append((node.child(i), cnt, depth + 1))

    def _leaf(self, node: Node, k: int, depth: int, batch: _Batch) -> None:
        """An unexpanded node received k visits: collision, terminal, cache hit or a new request."""
        if node.pending:
            batch.collisions.append((node, k))
            batch.collision_events += 1
            batch.collision_visits += k
            return
        self._sync(node, depth)
        board = self._board
        key = self._cache_key(depth)
        hit = self.cache.get(key)
        moves = None
        if hit is None:
            moves, idx = encoding.legal_moves_and_indices(board, self.network.input_format)
            if not moves:
                wl = 1.0 if board.is_check() else 0.0
                node.terminal = Terminal(wl, 1.0 - abs(wl), 0.0, "mate" if wl else "stalemate")
                self._backup(node, k, node.terminal.wl, node.terminal.d, 0.0, depth)
                batch.out_of_order += 1
                return
        if depth > 0:
            draw = self._draw_kind(depth)
            if draw is not None:
                # lc0 uses the cycle length as moves left of a two-fold draw.
                m = float(len(self._keys) - 1 - self._twofold_first) if draw == "twofold" else 0.0
                node.terminal = Terminal(0.0, 1.0, m, draw)
                if draw == "twofold":
                    self._twofold.append((node, self._twofold_first))
                self._backup(node, k, 0.0, 1.0, m, depth)
                batch.out_of_order += 1
                return
        self._max_depth = max(self._max_depth, depth)
        if hit is not None and self.params.out_of_order_eval:
            node.expand(hit.moves, hit.priors)
            self._backup(node, 1, -hit.q, hit.d, hit.m, depth)
            batch.out_of_order += 1
        else:
            if moves is None:
                moves, idx = encoding.legal_moves_and_indices(board, self.network.input_format)
            batch.requests.append(_Request(node, key, moves, idx, depth))
            batch.masks.append(position_masks(board, self._rules, self._fill))
            node.pending = True
        if k > 1:
            batch.collisions.append((node, k - 1))
            batch.collision_events += 1
            batch.collision_visits += k - 1

    def _sync(self, node: Node, depth: int) -> None:
        """Make ``self._board`` the position of ``node``, ``depth`` plies below the root (pop/push
        only below the common ancestor).

        Walks up from ``node`` only until it meets the pushed path (consecutive leaves of a
        gather are usually close in the tree), instead of building the whole root path.
        """
        pushed = self._pushed
        down = []  # nodes to push, deepest first
        n = node
        while depth > len(pushed):
            down.append(n)
            n = n.parent
            depth -= 1
        while depth > 0 and pushed[depth - 1] is not n:
            down.append(n)
            n = n.parent
            depth -= 1
        board, keys = self._board, self._keys
        for _ in range(len(pushed) - depth):
            board.pop()
            pushed.pop()
            keys.pop()
        for n in reversed(down):
            board.push(n.parent.moves[n.index])
            pushed.append(n)
            keys.append(board._transposition_key())

    def _draw_kind(self, depth: int) -> str | None:
        """Draw by rule at the synced board (legal moves exist): lc0's order of checks."""
        board = self._board
        if board.halfmove_clock >= 100:
            return "rule50"
        if board.is_insufficient_material():
            return "material"
        keys = self._keys
        last = len(keys) - 1
        key = keys[last]
        reps, first = 0, None
        for j in range(last - 2, max(last - board.halfmove_clock, 0) - 1, -2):
            if keys[j] == key:
                reps += 1
                if first is None:
                    first = j
        if reps >= 2:
            return "threefold"
        # lc0: a single repetition is a draw when the cycle lies inside the tree (root included).
        if reps == 1 and self.params.two_fold_draws and depth >= 4 and last - first <= depth:
            self._twofold_first = first
            return "twofold"
        return None

    def _cache_key(self, depth: int) -> object:
        """lc0's cache key: the position (with repetition count) and rule50, plus CacheHistoryLength
        earlier positions."""
        keys = self._keys
        h = self.params.cache_history_length
        last = len(keys) - 1
        if h == 0:
            return (keys[last], self._board.halfmove_clock)
        return (tuple(keys[max(0, last - h):]), self._board.halfmove_clock)

    # ----------------------------------------------------------------------------- evaluate / expand
    def _make_entries(self, moves_list: list[list[chess.Move]], idx_list: list[list[int]],
                      out) -> list[CachedEval]:
        """Softmax of each position's legal-move logits with PolicyTemperature, moves sorted by
        prior (stable: equal priors keep the generation order), for a whole batch at once.

        Every step is one numpy call over the batch except the normalising sum, which stays
        one ``np.sum`` per position: its pairwise rounding then equals the per-position
        softmax's exactly (``np.add.reduceat`` sums sequentially and differs in the last bit).
        """
        n = len(idx_list)
        lens = [len(i) for i in idx_list]
        rows = np.repeat(np.arange(n), lens)
        cols = np.fromiter(itertools.chain.from_iterable(idx_list), np.intp, len(rows))
        starts = np.zeros(n, np.intp)
        np.cumsum(lens[:-1], out=starts[1:])
        x = out.policy[rows, cols].astype(np.float64)
        x = np.exp((x - np.maximum.reduceat(x, starts)[rows]) / self.params.policy_softmax_temp)
        bounds = list(zip(starts.tolist(), (starts + lens).tolist()))
        x /= np.array([x[b:e].sum() for b, e in bounds])[rows]
        order = np.lexsort((-x, rows))  # by position, then decreasing prior; stable
        priors = x[order].astype(np.float32)
        local = (order - starts[rows]).tolist()
        qs, ds, ms = out.q[:n].tolist(), out.d[:n].tolist(), out.m[:n].tolist()
        entries = []
        for k, (b, e) in enumerate(bounds):
            moves = moves_list[k]
            entries.append(CachedEval(tuple([moves[j] for j in local[b:e]]), priors[b:e],
                                      qs[k], ds[k], ms[k]))
        return entries

    def _process(self, batch: _Batch, out) -> None:
        """Expand and back up the nodes of an evaluated batch."""
        requests = batch.requests
        entries = self._make_entries([r.moves for r in requests], [r.indices for r in requests], out)
        for req, entry in zip(requests, entries):
            self.cache.put(req.key, entry)
            node = req.node
            node.pending = False
            node.expand(entry.moves, entry.priors)
            self._backup(node, 1, -entry.q, entry.d, entry.m, req.depth)
        self._batches += 1

    def _abandon(self, batch: _Batch) -> None:
        """Drop an unfinished batch: take its visits out of flight."""
        for req in batch.requests:
            req.node.pending = False
            self._cancel(req.node, 1)

    # ----------------------------------------------------------------------------- backup
    def _backup(self, node: Node, k: int, v: float, d: float, m: float, depth: int) -> None:
        """Add k visits of value v (node's view), d, m to node and its ancestors; m grows by one per
        ply upwards and v changes sign."""
        self._total_playouts += k
        self._cum_depth += depth * k
        self._max_depth = max(self._max_depth, depth)
        became_terminal = node.terminal is not None and node.parent is not None
        while node is not None:
            n = node.n + k
            f = k / n
            node.wl += f * (v - node.wl)
            node.d += f * (d - node.d)
            node.m += f * (m - node.m)
            node.n = n
            parent = node.parent
            if parent is not None:
                i = node.index
                if n == k:
                    parent.visited_policy += float(parent.p[i])
                parent.cn[i] = n
                parent.cq[i] = node.wl
                parent.cd[i] = node.d
                parent.cm[i] = node.m
                parent.cnif[i] -= k
                if became_terminal and self.params.sticky_endgames:
                    became_terminal = self._prove(parent)
            v = -v
            m += 1.0
            node = parent

    def _prove(self, node: Node) -> bool:
        """Certainty propagation: mark ``node`` terminal when a child wins for its side to move or
        every child is proven. Returns whether it became terminal. The root stays searchable."""
        if node.parent is None or node.terminal is not None or not node.expanded:
            return False
        best_wl, best_d, best_m, all_proven = -2.0, 0.0, 0.0, True
        for child in node.children:
            t = child.terminal if child is not None else None
            if t is None:
                all_proven = False
                continue
            if t.wl > 0.0:  # the side to move at node wins by this move: shortest such win
                if best_wl < 1.0 or t.m < best_m:
                    best_wl, best_d, best_m = 1.0, 0.0, t.m
            elif best_wl < 1.0 and (t.wl > best_wl or (t.wl == best_wl and t.m > best_m)):
                best_wl, best_d, best_m = t.wl, t.d, t.m
        if best_wl < 1.0 and not all_proven:
            return False
        node.terminal = Terminal(-best_wl, best_d, best_m + 1.0, "proven")
        return True

    def _cancel(self, node: Node, k: int) -> None:
        """Take k visits out of flight along the path to the root (collisions, abandoned batches)."""
        while node.parent is not None:
            node.parent.cnif[node.index] -= k
            node = node.parent

    def _check_in_flight(self) -> None:
        root = self.root
        if root.expanded and any(root.cnif):
            root.cnif[:] = [0] * len(root.cnif)  # defensive: never leave phantom visits behind

    # ----------------------------------------------------------------------------- results
    def _current_best(self):
        if not self.root.expanded or self.root.n == 0:
            return None
        best = best_children(self, self.root, 1)
        return best[0] if best else None

    def _infos(self) -> list[ThinkingInfo]:
        return make_infos(self)

    def _choose_move(self, root_moves: list[chess.Move]) -> tuple[chess.Move, chess.Move | None]:
        """Most visited root move (lc0's ranking), or one drawn with Temperature; and a ponder move."""
        root = self.root
        if not root.expanded or root.n == 0:
            legal = [m for m in root_moves if not self._searchmoves or m in self._searchmoves]
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
