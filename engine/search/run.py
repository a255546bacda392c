"""One ``go``: lc0's classic ``Search`` with its constant parameters, over the tree, the NN cache
and the evaluation workers that its owner (:class:`engine.search.search.Search`, lc0's
``NodeTree`` and backend) keeps between searches.

One step (lc0's ExecuteOneIteration), :meth:`SearchRun.step`: stoppers → gather (compiled:
select, new leaves, planes) → Syzygy probes of the candidates it flagged → evaluate (a worker
thread; up to ``Threads`` batches in flight, so the next is gathered while one is on the
device) → expand and back up (compiled). What a step computes for a later phase (the stoppers'
hint, the root's best move) is passed to it as an argument.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING

import numpy as np

from engine import tablebase as tb
from engine.backend import Network, NetworkOutput
from engine.board import to_board
from engine.board.moves import MAX_MOVES
from engine.search.answer import choose_move
from engine.search.core import backup as cbackup
from engine.search.core import cache as ccache
from engine.search.core import gather as cgather
from engine.search.core import steps
from engine.search.core import stoppers as cstop
from engine.search.core import tree as ctree
from engine.search.core.calls import direct
from engine.search.limit import Limit
from engine.search.params import DEFAULT_MAX_TREE_NODES, SearchParams
from engine.search.report import make_infos, verbose_stats
from engine.search.result import INFO_INTERVAL_S, WAIT_SLICE_S, SearchResult, ThinkingInfo
from engine.search.timeline import Timeline

if TYPE_CHECKING:
    from engine.search.search import Search

gather_minibatch = direct(cgather.gather)
expand_and_backup = direct(cbackup.expand_and_backup)
"""The loop's compiled calls of every minibatch, without numba's per-call dispatch."""

EDGES_PER_NODE = 40
"""Edges a node of the tree has on average, with room to spare (about 30 in middlegames)."""
NETWORK_STALL_S = 60.0
"""A network call not back after this long has hung: the search stops and says so."""
_ALL_MOVES = np.zeros(0, np.uint8)
"""The empty root filter: every root move may get visits."""

InFlight = tuple[Future, cgather.Batch, int, float]
"""A batch on the device: (its evaluation, the batch, its sequence number, submitted at)."""


class SearchRun:
    """One search from the owner's root to ``limit``: its parameters and batch size are fixed at
    its start (a ``ponderhit`` replaces the limit only); the callbacks get its info lines."""

    def __init__(
        self,
        owner: Search,
        limit: Limit,
        on_info: Callable[[list[ThinkingInfo]], None] | None = None,
        on_verbose: Callable[[list[str]], None] | None = None,
        verbose: bool = False,
        live_stats: bool = False,
    ) -> None:
        self.owner = owner
        self.state = owner.state
        self.params: SearchParams = owner.params
        self.limit = limit
        self.on_info, self.on_verbose = on_info, on_verbose
        self.verbose, self.live_stats = verbose, live_stats
        attributes = owner.attributes
        self.batch_size = self.params.batch_size(attributes.max_batch, attributes.preferred_batch)
        self.failure: BaseException | None = None
        """The exception of a network call that failed (it ended the run)."""
        self.ram_limited = False
        self._walk_consts = (np.zeros(5, np.int64), np.zeros(2))

    # ----------------------------------------------------------------------------- the run
    def execute(self) -> SearchResult:
        """Search, then report and answer (bestmove, ponder move, info lines)."""
        state = self.state
        state.new_search(self.limit)
        root_moves = list(state.root_board.legal_moves)
        if not root_moves:
            return SearchResult(None, None, int(state.tree.nodes["n"][0]), 0, 0.0)
        self._reserve_to_the_cap()
        self._filter_root_by_tablebase()
        if state.searchmoves:
            self._expand_root()
            moves = state.root.moves or ()
            state.mask = np.array([m in state.searchmoves for m in moves], bool)
            if not state.mask.any():
                state.mask = None
        self._loop()
        state.changed()
        self._report_the_end()
        infos = make_infos(state) if state.tree.nodes["n"][0] > 0 else []
        if self.on_info is not None and infos:
            self.on_info(infos)
        if self.verbose and self.on_verbose is not None and state.root.expanded:
            self.on_verbose(verbose_stats(state))
        best, ponder = choose_move(state, root_moves, self.owner.cached_root_moves)
        return SearchResult(
            best,
            ponder,
            int(state.tree.nodes["n"][0]),
            state.total_playouts,
            (time.monotonic() - state.start) * 1000.0,
            tuple(infos),
        )

    def _reserve_to_the_cap(self) -> None:
        """Under RamLimitMb, room for the whole capped tree at once, in address space only (pages
        become resident as the tree grows into them): a tree that doubles while searching holds
        its old and new arrays at once, which could take RSS past the limit."""
        cap = self.params.max_tree_nodes
        if cap >= DEFAULT_MAX_TREE_NODES:
            return
        state = self.state
        tree = state.tree
        nodes = cap + 2 * self.batch_size + 1024 - int(tree.count[ctree.NODES])
        edges = (cap + 1024) * EDGES_PER_NODE - int(tree.count[ctree.EDGES])
        state.tree = ctree.reserve(tree, max(0, nodes), max(0, edges))

    def _report_the_end(self) -> None:
        """Why the search stopped early, when it did: a failed network."""
        state, say = self.state, self.on_verbose
        if say is None:
            return
        nodes = int(state.tree.nodes["n"][0])
        if self.failure is not None:
            exc = self.failure
            say(
                [
                    f"error: network evaluation failed: {type(exc).__name__}: {exc}; the search "
                    f"stopped at {nodes} nodes"
                ]
            )

    def _say_tree_limit(self) -> None:
        """The tree stopped growing: RamLimitMb's cap, or the int32 indices' (2**31 nodes)."""
        if self.on_verbose is None:
            return
        state = self.state
        nodes = int(state.tree.nodes["n"][0])
        mb = (ctree.memory_bytes(state.tree) + ccache.memory_in_use(self.owner.cache.arrays)) / 1e6
        cap = (
            "RamLimitMb"
            if self.params.max_tree_nodes < DEFAULT_MAX_TREE_NODES
            else "the tree's index limit (2**31 nodes)"
        )
        self.on_verbose(
            [f"{cap}: search stopped at {nodes} nodes (tree and NN cache about {mb:.1f} MB)"]
        )

    def _loop(self) -> None:
        state = self.state
        pending: list[InFlight] = []
        free = self.prepare()
        last_info, last_best = 0.0, None
        try:
            while not state.stop.is_set():
                self._maybe_ponderhit()
                if not self.step(pending, free):
                    break
                now = time.monotonic()
                if (
                    self.on_info is not None
                    and state.tree.nodes["n"][0] > 0
                    and now - last_info >= INFO_INTERVAL_S / 4
                ):
                    state.changed()
                    best = self._current_best()
                    if now - last_info >= INFO_INTERVAL_S or best != last_best:
                        self.on_info(make_infos(state))
                        if self.live_stats and self.on_verbose is not None:
                            self.on_verbose(verbose_stats(state))
                        last_info, last_best = now, best
        finally:
            for _future, batch, _seq, _at in pending:
                self._abandon(batch)
            state.changed()

    def prepare(self) -> list[cgather.Batch]:
        """The batch buffers (``Threads`` of them) and the selection's constants for this run;
        returns the buffers, all free."""
        state, owner, p = self.state, self.owner, self.params
        owner.ensure_batches(p.threads, max(self.batch_size, p.max_prefetch))
        self._walk_consts = (
            owner.walk_info(),
            np.array([state.draw_score(0), state.draw_score(1)], np.float64),
        )
        return list(owner.batches)

    def step(self, pending: list[InFlight], free: list[cgather.Batch]) -> bool:
        """One iteration: stoppers, gather a batch if one may go in flight, back up the oldest
        when it must; False when the search is over."""
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
            state.limit, self.params, summary, progress
        )
        if reached and summary.visits >= self.params.max_tree_nodes and not self.ram_limited:
            self.ram_limited = True
            self._say_tree_limit()  # now: under go infinite the search goes on answering
        if reached and not state.limit.until_stop:
            return False
        progressed = False
        in_flight = self.params.threads
        if not reached and len(pending) < in_flight and free:
            progressed = self._gather_one(pending, free, remaining, summary.best)
        if pending and (len(pending) >= in_flight or not progressed or reached):
            if self._wait(pending[0][0], pending[0][3]):
                return self._back_up_oldest(pending, free)
            if self.failure is not None:
                return False
        elif not pending and not progressed:
            if not state.limit.until_stop:
                return False
            state.stop.wait(WAIT_SLICE_S)
        return True

    def _gather_one(
        self, pending: list[InFlight], free: list[cgather.Batch], remaining: float, best: int
    ) -> bool:
        """Gather a batch and put it in flight; whether anything was gathered or backed up."""
        owner, timeline = self.owner, self.owner.timeline
        batch = free.pop()
        start = Timeline.now() if timeline is not None else 0.0
        n, ooo = self.gather(batch, remaining, best)
        if n:
            seq = owner.next_sequence()
            if timeline is not None:
                timeline.add(seq, "gather", start, Timeline.now(), n)
            pending.append((self._evaluate(batch, n, seq), batch, seq, time.monotonic()))
        else:
            free.append(batch)
        return n > 0 or ooo > 0

    def _back_up_oldest(self, pending: list[InFlight], free: list[cgather.Batch]) -> bool:
        """Back up the oldest batch in flight (evaluated); False when its network call failed."""
        timeline = self.owner.timeline
        future, batch, seq, _ = pending.pop(0)
        start = Timeline.now() if timeline is not None else 0.0
        free.append(batch)
        try:
            out = future.result()
        except Exception as exc:  # the network failed: keep the tree whole and stop
            self._abandon(batch)
            self.failure = exc
            return False
        self._process(batch, out)
        if timeline is not None:
            timeline.add(seq, "backup", start, Timeline.now())
        return True

    # ----------------------------------------------------------------------------- phases
    def gather(
        self, batch: cgather.Batch, remaining: float = math.inf, best: int = -1
    ) -> tuple[int, int]:
        """Gather a minibatch into ``batch``; returns (requests, out-of-order backups).
        ``remaining``: the playouts the stoppers expect to remain (smart pruning's hint);
        ``best``: the root's best edge on this tree (-1: none), both from this step's summary."""
        state, owner, p = self.state, self.owner, self.params
        size = self.batch_size
        max_ooo = max(1, int(p.max_out_of_order_evals_factor * size))
        state.tree = ctree.reserve(
            state.tree, 2 * size + max_ooo + p.max_prefetch + 64, (max_ooo + 2) * MAX_MOVES
        )
        collisions_left = p.collision_visit_limit(min(int(state.tree.nodes["n"][0]), remaining))
        nodes_left = state.limit.nodes if state.limit.nodes is not None else -1
        pad = owner.pad_table(size, p.max_prefetch)
        info, draw_scores = self._walk_consts
        root_filter = self._root_filter(remaining, best)
        walk = cgather.Walk(owner.hist, info, draw_scores, root_filter, owner.stop_flag)
        self._run_gather(
            batch, walk, size, max_ooo, collisions_left, p.max_collision_events, nodes_left, pad
        )
        requests = int(batch.meta[cgather.REQUESTS])
        ooo = int(batch.meta[cgather.OUT_OF_ORDER_DONE])
        if batch.meta[cgather.NO_ROOM]:
            owner.grow_history()
        if owner.tablebase is not None and requests:
            requests, hits = self._probe(batch, requests)
            ooo += hits
        return requests, ooo

    def _run_gather(self, batch: cgather.Batch, walk: cgather.Walk, *limits) -> None:
        """The compiled gather into ``batch``; ``limits``: batch size, out-of-order budget,
        collisions left, collision events, nodes left (-1: none), prefetch table (int64)."""
        state, owner = self.state, self.owner
        gather_minibatch(
            state.tree, owner.packed, state.counters, owner.cache.arrays, batch, walk, *limits
        )

    def _evaluate(self, batch: cgather.Batch, n: int, seq: int) -> Future:
        owner = self.owner
        planes, timeline = batch.planes[:n], owner.timeline
        if timeline is None:
            future = owner.executor.submit(owner.network.evaluate, planes)
        else:
            future = owner.executor.submit(_timed_evaluate, owner.network, planes, timeline, seq)
        future.add_done_callback(lambda _: owner.wake.set())
        return future

    def _process(self, batch: cgather.Batch, out: NetworkOutput) -> None:
        state, owner = self.state, self.owner
        n = int(batch.meta[cgather.REQUESTS])
        if state.stop.is_set():
            self._abandon(batch)
            return
        state.tree = ctree.reserve(state.tree, 0, int(batch.req["count"][:n].sum()))
        expand_and_backup(
            state.tree,
            owner.packed,
            state.counters,
            owner.cache.arrays,
            batch.req,
            batch.moves,
            batch.indices,
            # Read-only contiguous float32 whatever the backend returns (XLA's CPU buffers are
            # read-only, a numpy backend's are not): the call skips numba's dispatch, so its
            # argument types must never change (engine/search/core/calls.py).
            network_heads(out.policy),
            network_heads(out.q),
            network_heads(out.d),
            network_heads(out.m),
            n,
        )
        state.batches += 1

    def _abandon(self, batch: cgather.Batch) -> None:
        """Drop an unfinished batch: its visits out of flight."""
        steps.abandon(self.state.tree, batch.req, int(batch.meta[cgather.REQUESTS]))

    def _probe(self, batch: cgather.Batch, n: int) -> tuple[int, int]:
        """Syzygy probes of the candidates the gather flagged: a hit is a terminal backed up
        at once and leaves the batch."""
        state, owner = self.state, self.owner
        hits = 0
        r = 0
        while r < n:
            if not batch.req["tb"][r] or batch.req["node"][r] < 0:
                r += 1
                continue
            depth = int(batch.req["depth"][r])
            board = to_board(batch.rows[r])
            wdl = owner.tablebase.probe_wdl(board) if owner.tablebase is not None else None
            if wdl is None:
                r += 1
                continue
            state.counters[cbackup.TB_HITS] += 1
            wl = -1.0 if wdl == tb.WIN else (1.0 if wdl == tb.LOSS else 0.0)
            node = int(batch.req["node"][r])
            steps.tablebase_terminal(state.tree, owner.packed, state.counters, node, wl, depth)
            steps.drop_request(batch, r, n)
            n -= 1
            hits += 1
        batch.meta[cgather.REQUESTS] = n
        return n, hits

    # ----------------------------------------------------------------------------- helpers
    def _summary(self) -> cstop.RootSummary:
        state = self.state
        return cstop.summarize(state.tree, state.draw_score(0), state.mask)

    def _root_filter(self, remaining: float, best: int) -> np.ndarray:
        """Root moves that may get visits (searchmoves, and lc0's pruning in selection: a move
        whose visits cannot reach the best move's in the playouts expected to remain); empty
        when every move may."""
        state = self.state
        tree, mask = state.tree, state.mask
        edges = int(tree.nodes["nedges"][0])
        if remaining != math.inf and edges > 0 and int(tree.nodes["n"][0]) > 0 and best >= 0:
            out = np.zeros(edges, np.uint8)
            flags = np.zeros(0, np.uint8) if mask is None else mask.astype(np.uint8)
            cstop.root_filter(tree, best, remaining, flags, mask is not None, out)
            return out
        return _ALL_MOVES if mask is None else mask.astype(np.uint8)

    def _expand_root(self) -> None:
        """Evaluate the root at once (searchmoves need its moves)."""
        state, owner = self.state, self.owner
        if state.tree.nodes["nedges"][0] > 0:
            return
        owner.ensure_batches(self.params.threads, max(1, self.params.max_prefetch))
        batch = owner.batches[0]
        no_filter = np.zeros(0, np.uint8)
        walk = cgather.Walk(
            owner.hist, owner.walk_info(), np.zeros(2, np.float64), no_filter, owner.stop_flag
        )
        self._run_gather(batch, walk, 1, 1, 1, 1, -1, np.zeros(2, np.int64))
        n = int(batch.meta[cgather.REQUESTS])
        if n:
            try:
                out = owner.network.evaluate(batch.planes[:n])
            except Exception:
                self._abandon(batch)  # the root's visit out of flight: the tree stays usable
                raise
            self._process(batch, out)
        state.changed()

    def _wait(self, future: Future, submitted: float) -> bool:
        """Wait for ``future``; False on a stop, the time limit, or a network call that has not
        returned in NETWORK_STALL_S (then ``failure`` says so, and the stalled worker is left
        behind: the next search's calls go to a new one)."""
        state, owner = self.state, self.owner
        while not future.done():
            if state.stop.is_set() or cstop.time_up(state.limit, state.elapsed_ms()):
                return False
            stalled = time.monotonic() - submitted
            if stalled > NETWORK_STALL_S:
                self.failure = TimeoutError(f"no answer from the network in {stalled:.0f} s")
                owner.renew_executor()
                return False
            owner.wake.wait(WAIT_SLICE_S)
            owner.wake.clear()
        return True

    def _maybe_ponderhit(self) -> None:
        limit = self.owner.take_ponderhit()
        if limit is not None:
            state = self.state
            state.limit = limit
            state.start = limit.started_at if limit.started_at is not None else time.monotonic()
            state.first_eval_time = None

    def _filter_root_by_tablebase(self) -> None:
        state, tablebase = self.state, self.owner.tablebase
        if tablebase is None:
            return
        probe = tablebase.root_moves(state.root_board.copy(), self.params.syzygy_fast_play)
        if probe is None:
            return
        state.root_in_tablebase = True
        state.counters[cbackup.TB_HITS] += 1
        allowed = set(probe.moves)
        state.searchmoves = (state.searchmoves & allowed) or allowed

    def _current_best(self) -> int | None:
        best = self._summary().best
        return best if best >= 0 and int(self.state.tree.nodes["n"][0]) > 0 else None


def network_heads(values: np.ndarray) -> np.ndarray:
    """A head's values as the compiled backup takes them: contiguous float32, read-only (a view
    when they already are; numba types a read-only array apart from a writable one)."""
    out = np.ascontiguousarray(values, np.float32).view()
    out.flags.writeable = False
    return out


def _timed_evaluate(
    network: Network, planes: np.ndarray, timeline: Timeline, seq: int
) -> NetworkOutput:
    start = Timeline.now()
    out = network.evaluate(planes)
    timeline.add(seq, "device", start, Timeline.now())
    return out
