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
from collections.abc import Callable

import numpy as np

from engine import tablebase as tb
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
from engine.search.evaluation import Heads, Job
from engine.search.go import Go, Tally
from engine.search.params import SearchParams
from engine.search.resources import Resources

gather_minibatch = direct(cminibatch.gather)
store_results = direct(cminibatch.store_results)
expand_and_backup = direct(cminibatch.expand_and_backup)
release_collisions = direct(cminibatch.release_collisions)
"""The compiled calls of every minibatch, without numba's per-call dispatch."""

_ALL_MOVES = np.zeros(0, np.uint8)
"""The empty root filter: every root move may get visits."""

GatherCall = tuple[cminibatch.Shared, cgather.Batch, cgather.Walk, np.ndarray, np.ndarray]
"""The compiled gather's arguments: the shared arrays, the batch, the walk, the limits and the
prefetch table."""


def run_gather(call: GatherCall) -> None:
    """The compiled gather (lc0's GatherMinibatch), without the nodes lock: gathers on other
    threads may run at once (core/tree.py's claims, core/gather.py's atomics), never a backup
    or the tree's growth (engine/search/threads.py)."""
    gather_minibatch(*call)


BackupCall = tuple[cminibatch.Shared, cgather.Batch, np.ndarray, np.ndarray, np.ndarray]
"""The compiled backup's arguments: the shared arrays, the batch and the heads q, d, m."""


def run_backup(call: BackupCall) -> None:
    """The compiled expansion and backup of a batch, without the nodes lock: gathers and
    backups on other threads may run at once (core/backup.py)."""
    expand_and_backup(*call)


def alone() -> None:
    """``exclusive`` of a gather with no other thread: nothing to wait for."""


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
        self._histories: dict[int, np.ndarray] = {}
        self._max_ooo = max(1, int(params.max_out_of_order_evals_factor * batch_size))
        """lc0's out-of-order backups a gather may make (MaxOutOfOrderEvalsFactor x the size)."""
        p, size = params, batch_size
        self._room = (
            p.threads * (2 * size + self._max_ooo + p.max_prefetch + 64),
            p.threads * (self._max_ooo + 2 + max(size, p.max_prefetch)) * MAX_MOVES,
        )
        """What every thread's gather or backup at once can add at most (nodes, edges): a
        gather's new nodes and out-of-order expansions, a batch's edges."""
        self._gather_calls: dict[int, GatherCall] = {}
        """Each batch buffer's gather arguments for this run (its NN cache and parameters),
        kept while the tree's arrays, the root filter and the walk's history stay (making them
        anew was a tenth of a batch's Python); emptied by :meth:`prepare`."""
        self._mask_filter: tuple[np.ndarray | None, np.ndarray] = (None, _ALL_MOVES)
        """searchmoves' mask (the run's ``go.mask``) and its root filter, made once."""

    def prepare(self) -> list[cgather.Batch]:
        """The batch buffers (``Threads`` of them) and the selection's constants for this run;
        returns the buffers, all free."""
        state, res, p = self.state, self.res, self.params
        # Twice MaxPrefetch: lc0's prefetch may spend past its budget (core/gather.py's
        # PREFETCH_LC0), and lc0 sends every row it spends.
        rows = max(self.batch_size, 2 * p.max_prefetch)
        res.ensure_batches(p.threads, rows)
        self._gather_calls.clear()
        self._walk_consts = (
            res.walk_info(self.go.root_in_tablebase),
            np.array([state.draw_score(0), state.draw_score(1)], np.float64),
        )
        return list(res.batches)

    def gather(
        self, batch: cgather.Batch, remaining: float = math.inf, best: int = -1
    ) -> tuple[int, int]:
        """Gather a minibatch into ``batch`` on this thread alone; returns (requests,
        out-of-order backups). ``remaining``: the playouts the stoppers expect to remain (smart
        pruning's hint); ``best``: the root's best edge on this tree (-1: none), both from this
        step's summary."""
        run_gather(self.begin_gather(batch, remaining, best))
        return self.end_gather(batch)

    def begin_gather(
        self,
        batch: cgather.Batch,
        remaining: float = math.inf,
        best: int = -1,
        exclusive: Callable[[], None] = alone,
        keep_collisions: bool = False,
    ) -> GatherCall:
        """A gather's first part (under the nodes lock): room in the tree for every thread's
        gather at once (grown after ``exclusive``, which returns once no gather runs), and the
        compiled gather's arguments (:func:`run_gather`), which may run beside other threads'."""
        state, res = self.state, self.res
        self.make_room(exclusive)
        tree = state.tree
        pages_ahead(res, tree)
        root_filter = self.root_filter(remaining, best)
        call = self._gather_calls.get(id(batch))
        hist = self._history_of(batch)
        if call is None or not still_holds(call, tree, batch, root_filter, hist, keep_collisions):
            call = self._gather_calls[id(batch)] = self._gather_call(
                batch, root_filter, keep_collisions
            )
        limits = call[3]
        limits[cminibatch.COLLISIONS_LEFT] = self.params.collision_visit_limit(
            min(int(tree.nodes["n"][0]), remaining)
        )
        return call

    def _gather_call(
        self, batch: cgather.Batch, root_filter: np.ndarray, keep_collisions: bool
    ) -> GatherCall:
        """The compiled gather's arguments for ``batch`` (its collision budget still to set)."""
        res, p, size = self.res, self.params, self.batch_size
        info, draw_scores = self._walk_consts
        walk = cgather.Walk(
            self._history_of(batch),
            info,
            draw_scores,
            root_filter,
            res.stop_flag,
            res.evaluator.on_device,
        )
        limits = cminibatch.GATHER_LIMITS.pack(
            BATCH_SIZE=size,
            MAX_OOO=self._max_ooo,
            COLLISIONS_LEFT=0,
            KEEP_COLLISIONS=int(keep_collisions),
        )
        return self._shared(), batch, walk, limits, res.pad_table(size, p.max_prefetch)

    def end_gather(
        self, batch: cgather.Batch, exclusive: Callable[[], None] = alone
    ) -> tuple[int, int]:
        """A gather's last part (under the nodes lock): the history grown if it ran short, and
        the Syzygy probes of its candidates (after ``exclusive``: a hit is backed up at once).
        Returns (requests, out-of-order backups)."""
        res = self.res
        requests = int(batch.meta[cgather.REQUESTS])
        ooo = int(batch.meta[cgather.OUT_OF_ORDER_DONE])
        if batch.meta[cgather.NO_ROOM]:
            res.grow_history()
        if res.tablebase is not None and requests:
            exclusive()
            requests, hits = self.probe(batch, requests)
            ooo += hits
        return requests, ooo

    def small_tree(self) -> bool:
        """Whether the tree's collision budget (lc0's, scaled by its size) is below a minibatch:
        a second thread's gather would meet only the first's leaves (a 2,000-node search took
        13-50 ms with two threads each gathering, 11-12 with one)."""
        n = int(self.state.tree.nodes["n"][0])
        return self.params.collision_visit_limit(n) < self.batch_size

    def make_room(self, exclusive: Callable[[], None]) -> None:
        """Room in the tree for every thread's gather or backup at once: what each can add at
        most (a gather's new nodes and out-of-order expansions, a batch's edges), for each
        thread; grown after ``exclusive`` (no gather or backup runs) when short."""
        nodes, edges = self._room
        if not ctree.has_room(self.state.tree, nodes, edges):
            exclusive()
            self.state.tree = ctree.reserve(self.state.tree, nodes, edges)

    def _history_of(self, batch: cgather.Batch) -> np.ndarray:
        """The rows a gather into ``batch`` walks with: the game's, then its path's, which it
        writes (so one copy a batch, made anew when the resources' history grows)."""
        hist = self._histories.get(id(batch))
        if hist is None or hist.shape != self.res.hist.shape:
            hist = self._histories[id(batch)] = self.res.hist.copy()
        return hist

    def _shared(self) -> cminibatch.Shared:
        """The arrays every minibatch shares, as the compiled entry points take them (the tree's
        as they are now: it grows by replacing them)."""
        res = self.res
        return cminibatch.Shared(self.state.tree, res.packed, self.tally.counters, res.cache.arrays)

    def evaluate(self, batch: cgather.Batch, n: int, seq: int) -> Heads:
        """The network's values for the batch's first ``n`` positions, on the calling thread
        (no lock needed: it touches only the batch); their moves sorted by prior into it and
        the results stored in the NN cache."""
        temperature = self.params.policy_softmax_temp
        heads = self.res.evaluator.evaluate(Job(batch, n, seq, temperature))
        self.store(batch, heads)
        return heads

    def store(self, batch: cgather.Batch, heads: Heads) -> None:
        """The batch's results into the NN cache, outside the nodes lock: the gathers read the
        cache meanwhile (core/cache.py's seqlock), one evaluation writes at a time."""
        cache = self.res.cache
        with cache.lock:
            store_results(cache.arrays, batch, *heads)

    def process(self, batch: cgather.Batch, heads: Heads) -> None:
        """Expand the batch's leaves with the network's values and back them up, on this thread
        alone; one more batch in the run's tally."""
        self.back_up_alone(batch, heads)
        self.tally.batches += 1

    def back_up_alone(self, batch: cgather.Batch, heads: Heads) -> None:
        """:meth:`process` without the tally (a batch the run left on the network, backed up
        once it settles: threads.py's LateBatches)."""
        self.make_room(alone)
        run_backup(self.begin_backup(batch, heads))

    def begin_backup(self, batch: cgather.Batch, heads: Heads) -> BackupCall:
        """A backup's first part (under the nodes lock, the tree's room made: :meth:`make_room`):
        the compiled backup's arguments (:func:`run_backup`, which may run beside other threads'
        gathers and backups). A batch gathered is backed up, a stop or not (lc0's)."""
        n = int(batch.meta[cgather.REQUESTS])
        # lc0's network_evaluations_ (eps): the batch's requests less the prefetched (node -1).
        self.tally.evaluations += n - int(batch.meta[cgather.PREFETCHED])
        return self._shared(), batch, *heads

    def release_collisions(self, batch: cgather.Batch) -> None:
        """The collisions a gather kept in flight (``keep_collisions``) out of flight."""
        release_collisions(self.state.tree, batch)

    def abandon(self, batch: cgather.Batch) -> None:
        """Drop an unfinished batch: its visits out of flight."""
        steps.abandon(self.state.tree, batch.req, int(batch.meta[cgather.REQUESTS]))

    def probe(self, batch: cgather.Batch, n: int) -> tuple[int, int]:
        """Syzygy probes of the candidates the gather flagged (:func:`probe_candidates`)."""
        return probe_candidates(self.state.tree, self.res, self.tally.counters, batch, n)

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
        if mask is None:
            return _ALL_MOVES
        if self._mask_filter[0] is not mask:  # one array a run: the kept gather calls' key
            self._mask_filter = (mask, mask.astype(np.uint8))
        return self._mask_filter[1]

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
            BATCH_SIZE=1, MAX_OOO=1, COLLISIONS_LEFT=1, KEEP_COLLISIONS=0
        )
        run_gather((self._shared(), batch, walk, limits, np.zeros(2, np.int64)))
        n = int(batch.meta[cgather.REQUESTS])
        if n:
            try:
                temperature = self.params.policy_softmax_temp
                heads = res.evaluator.evaluate(Job(batch, n, 0, temperature))
                self.store(batch, heads)
            except Exception:
                self.abandon(batch)  # the root's visit out of flight: the tree stays usable
                raise
            self.process(batch, heads)
        state.changed()


def pages_ahead(res: Resources, tree: ctree.Tree) -> None:
    """The pages past the parts of the tree's arrays and the NN cache's ring in use made ready
    (engine/search/pages.py), before a gather that may write into them."""
    used = tree.count.tolist()
    for array, slot in (
        (tree.nodes, ctree.NODES),
        (tree.edges, ctree.EDGES),
        (tree.kids, ctree.KIDS),
    ):
        res.pages.ahead(array, used[slot])
    ring, written = res.cache.arrays.ring, int(res.cache.arrays.meta[ccache.WRITE])
    res.pages.ahead(ring, min(written, len(ring)))


def still_holds(
    call: GatherCall,
    tree: ctree.Tree,
    batch: cgather.Batch,
    root_filter: np.ndarray,
    hist: np.ndarray,
    keep_collisions: bool,
) -> bool:
    """Whether a kept gather ``call`` is the one to make now: the same tree arrays (a tree
    that grew has new ones), batch buffer, root filter, history rows and collisions' rule."""
    return (
        call[0].tree is tree
        and call[1] is batch
        and call[2].root_filter is root_filter
        and call[2].hist is hist
        and call[3][cminibatch.KEEP_COLLISIONS] == keep_collisions
    )


def probe_candidates(
    tree: ctree.Tree, res: Resources, counters: np.ndarray, batch: cgather.Batch, n: int
) -> tuple[int, int]:
    """Syzygy probes of the candidates a gather flagged in ``batch`` (``n`` requests): a hit is
    a terminal backed up at once and leaves the batch. Returns (requests left, hits)."""
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
        counters[cbackup.TB_HITS] += 1
        wl = -1.0 if wdl == tb.WIN else (1.0 if wdl == tb.LOSS else 0.0)
        node = int(batch.req["node"][r])
        steps.tablebase_terminal(tree, res.packed, counters, node, wl, depth)
        steps.drop_request(batch, r, n)
        n -= 1
        hits += 1
    batch.meta[cgather.REQUESTS] = n
    return n, hits
