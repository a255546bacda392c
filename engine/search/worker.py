"""The phases of one minibatch (lc0's ``SearchWorker``): gather it from the tree (compiled),
probe its tablebase candidates, hand it to the network, expand and back up what comes back
(compiled), or drop it unfinished.

A :class:`SearchWorker` lives for one ``go`` (its :class:`engine.search.go.Go`, batch size and
the selection's constants are fixed at the start; it adds to the run's ``Tally``); the tree, the
NN cache, the batch buffers and the evaluator are the resources'
(:class:`engine.search.resources.Resources`), which outlive it. The batch's evaluation, on a
thread beside the search's, is :class:`engine.search.evaluation.Evaluator`'s. The loop that decides
when each phase runs is :class:`engine.search.run.SearchRun`.
"""

from __future__ import annotations

import math

import numpy as np

from engine import tablebase as tb
from engine.backend import NetworkOutput
from engine.board import to_board
from engine.board.moves import MAX_MOVES
from engine.search.core import backup as cbackup
from engine.search.core import cache as ccache
from engine.search.core import gather as cgather
from engine.search.core import minibatch as cminibatch
from engine.search.core import steps
from engine.search.core import stoppers as cstop
from engine.search.core import tree as ctree
from engine.search.core.calls import direct
from engine.search.evaluation import Job, network_heads
from engine.search.go import Go, Tally
from engine.search.params import SearchParams
from engine.search.resources import Resources

gather_minibatch = direct(cminibatch.gather)
store_results = direct(cminibatch.store_results)
expand_and_backup = direct(cminibatch.expand_and_backup)
"""The compiled calls of every minibatch, without numba's per-call dispatch."""

_ALL_MOVES = np.zeros(0, np.uint8)
"""The empty root filter: every root move may get visits."""


class SearchWorker:
    """Gathers, evaluates and backs up the minibatches of one search (``batch_size`` leaves at
    most) over the resources' tree."""

    def __init__(
        self, res: Resources, params: SearchParams, batch_size: int, go: Go, tally: Tally
    ) -> None:
        self.res, self.state, self.params = res, res.state, params
        self.batch_size = batch_size
        self.go, self.tally = go, tally
        self._walk_consts = (np.zeros(5, np.int64), np.zeros(2))

    def prepare(self) -> list[cgather.Batch]:
        """The batch buffers (``Threads`` of them) and the selection's constants for this run;
        returns the buffers, all free."""
        state, res, p = self.state, self.res, self.params
        rows = max(self.batch_size, p.max_prefetch)
        res.ensure_batches(p.threads, rows)
        self._walk_consts = (
            res.walk_info(self.go.root_in_tablebase),
            np.array([state.draw_score(0), state.draw_score(1)], np.float64),
        )
        return list(res.batches)

    def gather(
        self, batch: cgather.Batch, remaining: float = math.inf, best: int = -1
    ) -> tuple[int, int]:
        """Gather a minibatch into ``batch``; returns (requests, out-of-order backups).
        ``remaining``: the playouts the stoppers expect to remain (smart pruning's hint);
        ``best``: the root's best edge on this tree (-1: none), both from this step's summary."""
        state, res, p = self.state, self.res, self.params
        size = self.batch_size
        max_ooo = max(1, int(p.max_out_of_order_evals_factor * size))
        state.tree = ctree.reserve(
            state.tree, 2 * size + max_ooo + p.max_prefetch + 64, (max_ooo + 2) * MAX_MOVES
        )
        res.pages.ahead(state.tree.nodes, int(state.tree.count[ctree.NODES]))
        res.pages.ahead(state.tree.edges, int(state.tree.count[ctree.EDGES]))
        res.pages.ahead(state.tree.kids, int(state.tree.count[ctree.KIDS]))
        ring, written = res.cache.arrays.ring, int(res.cache.arrays.meta[ccache.WRITE])
        res.pages.ahead(ring, min(written, len(ring)))
        collisions_left = p.collision_visit_limit(min(int(state.tree.nodes["n"][0]), remaining))
        nodes_left = self.go.limit.nodes if self.go.limit.nodes is not None else -1
        pad = res.pad_table(size, p.max_prefetch)
        info, draw_scores = self._walk_consts
        root_filter = self.root_filter(remaining, best)
        walk = cgather.Walk(
            res.hist,
            info,
            draw_scores,
            root_filter,
            res.stop_flag,
            res.evaluator.on_device,
        )
        limits = cminibatch.GATHER_LIMITS.pack(
            BATCH_SIZE=size,
            MAX_OOO=max_ooo,
            COLLISIONS_LEFT=collisions_left,
            MAX_EVENTS=p.max_collision_events,
            NODES_LEFT=nodes_left,
        )
        self._run_gather(batch, walk, limits, pad)
        requests = int(batch.meta[cgather.REQUESTS])
        ooo = int(batch.meta[cgather.OUT_OF_ORDER_DONE])
        if batch.meta[cgather.NO_ROOM]:
            res.grow_history()
        if res.tablebase is not None and requests:
            requests, hits = self.probe(batch, requests)
            ooo += hits
        return requests, ooo

    def _run_gather(
        self, batch: cgather.Batch, walk: cgather.Walk, limits: np.ndarray, pad: np.ndarray
    ) -> None:
        """The compiled gather into ``batch``; ``limits``: int64 [cminibatch.GATHER_LIMITS],
        ``pad``: the prefetch table (int64)."""
        gather_minibatch(self._shared(), batch, walk, limits, pad)

    def _shared(self) -> cminibatch.Shared:
        """The arrays every minibatch shares, as the compiled entry points take them (the tree's
        as they are now: it grows by replacing them)."""
        res = self.res
        return cminibatch.Shared(self.state.tree, res.packed, self.tally.counters, res.cache.arrays)

    def evaluate(self, batch: cgather.Batch, n: int, seq: int) -> NetworkOutput:
        """The network's answer for the batch's first ``n`` positions, on the calling thread
        (no lock needed: it touches only the batch); their moves sorted by prior into it."""
        temperature = self.params.policy_softmax_temp
        out = self.res.evaluator.evaluate(Job.of(batch, n, seq, self._walk_consts[0], temperature))
        self.store(batch, out)
        return out

    def store(self, batch: cgather.Batch, out: NetworkOutput) -> None:
        """The batch's results into the NN cache, outside the nodes lock: the gathers read the
        cache meanwhile (core/cache.py's seqlock), one evaluation writes at a time."""
        q, d, m = network_heads(out.q), network_heads(out.d), network_heads(out.m)
        cache = self.res.cache
        with cache.lock:
            store_results(cache.arrays, batch, q, d, m)

    def process(self, batch: cgather.Batch, out: NetworkOutput) -> None:
        """Expand the batch's leaves with the network's answer and back their values up (or
        drop the batch when the search was stopped meanwhile)."""
        state = self.state
        n = int(batch.meta[cgather.REQUESTS])
        if state.stop.is_set():
            self.abandon(batch)
            return
        state.tree = ctree.reserve(state.tree, 0, int(batch.req["count"][:n].sum()))
        # lc0's network_evaluations_ (eps): the batch's requests less the prefetched (node -1).
        self.tally.evaluations += int(np.count_nonzero(batch.req["node"][:n] >= 0))
        shared = self._shared()
        # The heads read-only contiguous float32 whatever the backend returns (XLA's CPU buffers
        # are read-only, a numpy backend's are not): the call skips numba's dispatch, so its
        # argument types must never change (engine/search/core/calls.py).
        q, d, m = network_heads(out.q), network_heads(out.d), network_heads(out.m)
        expand_and_backup(shared, batch, q, d, m)
        self.tally.batches += 1

    def abandon(self, batch: cgather.Batch) -> None:
        """Drop an unfinished batch: its visits out of flight."""
        steps.abandon(self.state.tree, batch.req, int(batch.meta[cgather.REQUESTS]))

    def probe(self, batch: cgather.Batch, n: int) -> tuple[int, int]:
        """Syzygy probes of the candidates the gather flagged: a hit is a terminal backed up
        at once and leaves the batch. Returns (requests left, hits)."""
        state, res = self.state, self.res
        hits = 0
        r = 0
        while r < n:
            if not batch.req["tb"][r] or batch.req["node"][r] < 0:
                r += 1
                continue
            depth = int(batch.req["depth"][r])
            board = to_board(batch.rows[r])
            wdl = res.tablebase.probe_wdl(board) if res.tablebase is not None else None
            if wdl is None:
                r += 1
                continue
            counters = self.tally.counters
            counters[cbackup.TB_HITS] += 1
            wl = -1.0 if wdl == tb.WIN else (1.0 if wdl == tb.LOSS else 0.0)
            node = int(batch.req["node"][r])
            steps.tablebase_terminal(state.tree, res.packed, counters, node, wl, depth)
            steps.drop_request(batch, r, n)
            n -= 1
            hits += 1
        batch.meta[cgather.REQUESTS] = n
        return n, hits

    def root_filter(self, remaining: float, best: int) -> np.ndarray:
        """Root moves that may get visits (searchmoves, and lc0's pruning in selection: a move
        whose visits cannot reach the best move's in the playouts expected to remain); empty
        when every move may."""
        tree, mask = self.state.tree, self.go.mask
        edges = int(tree.nodes["nedges"][0])
        if remaining != math.inf and edges > 0 and int(tree.nodes["n"][0]) > 0 and best >= 0:
            out = np.zeros(edges, np.uint8)
            flags = np.zeros(0, np.uint8) if mask is None else mask.astype(np.uint8)
            cstop.root_filter(tree, best, remaining, flags, mask is not None, out)
            return out
        return _ALL_MOVES if mask is None else mask.astype(np.uint8)

    def expand_root(self) -> None:
        """Evaluate the root at once (searchmoves need its moves); a network failure is raised
        with the tree left usable."""
        state, res = self.state, self.res
        if state.tree.nodes["nedges"][0] > 0:
            return
        res.ensure_batches(self.params.threads, max(1, self.params.max_prefetch))
        batch = res.batches[0]
        no_filter = np.zeros(0, np.uint8)
        walk = cgather.Walk(
            res.hist,
            res.walk_info(self.go.root_in_tablebase),
            np.zeros(2, np.float64),
            no_filter,
            res.stop_flag,
            res.evaluator.on_device,
        )
        limits = cminibatch.GATHER_LIMITS.pack(
            BATCH_SIZE=1, MAX_OOO=1, COLLISIONS_LEFT=1, MAX_EVENTS=1, NODES_LEFT=-1
        )
        self._run_gather(batch, walk, limits, np.zeros(2, np.int64))
        n = int(batch.meta[cgather.REQUESTS])
        if n:
            try:
                temperature = self.params.policy_softmax_temp
                out = res.evaluator.evaluate(Job.of(batch, n, 0, walk.info, temperature))
                self.store(batch, out)
            except Exception:
                self.abandon(batch)  # the root's visit out of flight: the tree stays usable
                raise
            self.process(batch, out)
        state.changed()
