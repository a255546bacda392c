"""The phases of one minibatch (lc0's ``SearchWorker``): gather it from the tree (compiled),
probe its tablebase candidates, hand it to the network, expand and back up what comes back
(compiled), or drop it unfinished.

A :class:`SearchWorker` lives for one ``go`` (its batch size and the selection's constants are
fixed at the start); the tree, the NN cache, the batch buffers and the evaluation threads are
its owner's (:class:`engine.search.search.Search`), which outlive it. The loop that decides
when each phase runs is :class:`engine.search.run.SearchRun`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import TYPE_CHECKING

import numpy as np

from engine import tablebase as tb
from engine.backend import Network, NetworkOutput
from engine.board import to_board
from engine.board.moves import MAX_MOVES
from engine.encoding.rows import expand_batch
from engine.search.core import backup as cbackup
from engine.search.core import cache as ccache
from engine.search.core import gather as cgather
from engine.search.core import minibatch as cminibatch
from engine.search.core import split as csplit
from engine.search.core import steps
from engine.search.core import stoppers as cstop
from engine.search.core import tree as ctree
from engine.search.core.calls import direct
from engine.search.params import SearchParams
from engine.search.timeline import Timeline

if TYPE_CHECKING:
    from engine.search.search import Search

gather_minibatch = direct(cminibatch.gather)
gather_shared = direct(cminibatch.gather_shared)
expand_and_backup = direct(cbackup.expand_and_backup)
expand_planes = direct(expand_batch)
encode_planes = direct(cgather.encode_requests)
sort_policies = direct(cbackup.sort_policies)
"""The compiled calls of every minibatch, without numba's per-call dispatch."""

CHUNK = 32
"""Rows of a batch encoded or sorted at a time: the batch's worker and the waiting search
thread take chunks in turn (:class:`Chunks`)."""

ORDER_WAIT_S = 30.0
"""How long a batch's call waits for the previous batch's to be queued: past it (a previous
batch whose worker never ran), it goes first rather than never."""

_ALL_MOVES = np.zeros(0, np.uint8)
"""The empty root filter: every root move may get visits."""
_UNSHARED = np.zeros(1, np.int64)
"""Walk.shared, which only the shared rounds read (each gatherer's walk there holds the crew's
control words: engine/search/core/split.py)."""


class SearchWorker:
    """Gathers, evaluates and backs up the minibatches of one search (``batch_size`` leaves at
    most) over its owner's tree."""

    def __init__(self, owner: Search, params: SearchParams, batch_size: int) -> None:
        self.owner, self.state, self.params = owner, owner.state, params
        self.batch_size = batch_size
        self._walk_consts = (np.zeros(5, np.int64), np.zeros(2))

    def prepare(self) -> list[cgather.Batch]:
        """The batch buffers (``Threads`` of them) and the selection's constants for this run;
        returns the buffers, all free."""
        state, owner, p = self.state, self.owner, self.params
        rows = max(self.batch_size, p.max_prefetch)
        owner.ensure_batches(p.threads, rows, csplit.spare_rows(p.task_workers + 1))
        self._walk_consts = (
            owner.walk_info(),
            np.array([state.draw_score(0), state.draw_score(1)], np.float64),
        )
        return list(owner.batches)

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
        owner.pages.ahead(state.tree.nodes, int(state.tree.count[ctree.NODES]))
        owner.pages.ahead(state.tree.edges, int(state.tree.count[ctree.EDGES]))
        ring, written = owner.cache.arrays.ring, int(owner.cache.arrays.meta[ccache.WRITE])
        owner.pages.ahead(ring, min(written, len(ring)))
        collisions_left = p.collision_visit_limit(min(int(state.tree.nodes["n"][0]), remaining))
        nodes_left = state.limit.nodes if state.limit.nodes is not None else -1
        pad = owner.pad_table(size, p.max_prefetch)
        info, draw_scores = self._walk_consts
        root_filter = self.root_filter(remaining, best)
        walk = cgather.Walk(
            owner.hist, info, draw_scores, root_filter, owner.stop_flag, owner.on_device, _UNSHARED
        )
        self._run_gather(
            batch, walk, size, max_ooo, collisions_left, p.max_collision_events, nodes_left, pad
        )
        requests = int(batch.meta[cgather.REQUESTS])
        ooo = int(batch.meta[cgather.OUT_OF_ORDER_DONE])
        if batch.meta[cgather.NO_ROOM]:
            owner.grow_history()
        if owner.tablebase is not None and requests:
            requests, hits = self.probe(batch, requests)
            ooo += hits
        return requests, ooo

    def _run_gather(self, batch: cgather.Batch, walk: cgather.Walk, *limits) -> None:
        """The compiled gather into ``batch``; ``limits``: batch size, out-of-order budget,
        collisions left, collision events, nodes left (-1: none), prefetch table (int64)."""
        state, owner = self.state, self.owner
        tree, packed, cache = state.tree, owner.packed, owner.cache.arrays
        gatherers = owner.gatherers_for(self.params.task_workers, len(batch.req))
        if not gatherers.helpers or limits[0] < csplit.MIN_SHARED_VISITS:
            gather_minibatch(tree, packed, state.counters, cache, batch, walk, *limits)
            return
        gen = gatherers.start(tree, packed, cache, batch, walk)
        crew = gatherers.crew
        gather_shared(tree, packed, state.counters, cache, batch, walk, *limits, crew, gen)

    def evaluate(self, batch: cgather.Batch, n: int, seq: int) -> Future:
        """The batch's first ``n`` positions handed to an evaluation thread; the future wakes
        the owner when done."""
        owner = self.owner
        packed, timeline = owner.attributes.packed_input, owner.timeline
        with owner.device_lock:
            owner.on_device[0] += 1
        temperature = self.params.policy_softmax_temp
        queued = threading.Event()
        after, owner.last_submission = owner.last_submission, queued

        def share(chunks: Chunks | None) -> None:
            if chunks is None:
                owner.shared_work.pop(seq, None)
            else:
                owner.shared_work[seq] = chunks
                owner.wake.set()

        future = owner.executor.submit(
            run_network, owner.network, packed, batch, self._walk_consts[0], n, temperature,
            owner.device, timeline, seq, (after, queued), share,
        )  # fmt: skip
        future.add_done_callback(lambda _: _answered(owner))
        return future

    def process(self, batch: cgather.Batch, out: NetworkOutput) -> None:
        """Expand the batch's leaves with the network's answer and back their values up (or
        drop the batch when the search was stopped meanwhile)."""
        state, owner = self.state, self.owner
        n = int(batch.meta[cgather.REQUESTS])
        if state.stop.is_set():
            self.abandon(batch)
            return
        state.tree = ctree.reserve(state.tree, 0, int(batch.req["count"][:n].sum()))
        expand_and_backup(
            state.tree,
            owner.packed,
            state.counters,
            owner.cache.arrays,
            batch.req,
            batch.sorted_moves,
            batch.priors,
            # Read-only contiguous float32 whatever the backend returns (XLA's CPU buffers are
            # read-only, a numpy backend's are not): the call skips numba's dispatch, so its
            # argument types must never change (engine/search/core/calls.py).
            network_heads(out.q),
            network_heads(out.d),
            network_heads(out.m),
            batch.order,
            n,
        )
        state.batches += 1

    def abandon(self, batch: cgather.Batch) -> None:
        """Drop an unfinished batch: its visits out of flight."""
        steps.abandon(self.state.tree, batch.req, int(batch.meta[cgather.REQUESTS]))

    def probe(self, batch: cgather.Batch, n: int) -> tuple[int, int]:
        """Syzygy probes of the candidates the gather flagged: a hit is a terminal backed up
        at once and leaves the batch. Returns (requests left, hits)."""
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

    def root_filter(self, remaining: float, best: int) -> np.ndarray:
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

    def expand_root(self) -> None:
        """Evaluate the root at once (searchmoves need its moves); a network failure is raised
        with the tree left usable."""
        state, owner = self.state, self.owner
        if state.tree.nodes["nedges"][0] > 0:
            return
        owner.ensure_batches(self.params.threads, max(1, self.params.max_prefetch))
        batch = owner.batches[0]
        no_filter = np.zeros(0, np.uint8)
        walk = cgather.Walk(
            owner.hist,
            owner.walk_info(),
            np.zeros(2, np.float64),
            no_filter,
            owner.stop_flag,
            owner.on_device,
            _UNSHARED,
        )
        self._run_gather(batch, walk, 1, 1, 1, 1, -1, np.zeros(2, np.int64))
        n = int(batch.meta[cgather.REQUESTS])
        if n:
            try:
                packed, temperature = owner.attributes.packed_input, self.params.policy_softmax_temp
                out = run_network(owner.network, packed, batch, walk.info, n, temperature)
            except Exception:
                self.abandon(batch)  # the root's visit out of flight: the tree stays usable
                raise
            self.process(batch, out)
        state.changed()


def network_heads(values: np.ndarray) -> np.ndarray:
    """A head's values as the compiled backup takes them: contiguous float32, read-only (a view
    when they already are; numba types a read-only array apart from a writable one)."""
    out = np.ascontiguousarray(values, np.float32).view()
    out.flags.writeable = False
    return out


def _answered(owner: Search) -> None:
    """An evaluation finished (or was cancelled): one minibatch fewer on the device; wake the
    loop."""
    with owner.device_lock:
        owner.on_device[0] -= 1
    owner.wake.set()


def run_network(
    network: Network,
    packed: bool,
    batch: cgather.Batch,
    info: np.ndarray,
    n: int,
    temperature: float,
    device: Executor | None = None,
    timeline: Timeline | None = None,
    seq: int = 0,
    order: tuple[threading.Event | None, threading.Event] | None = None,
    share: Callable[[Chunks | None], None] | None = None,
) -> NetworkOutput:
    """The network's answer for the batch's first ``n`` positions, on a host thread beside the
    search's: their packed planes encoded from the histories the gather kept (``info``: the
    gather's Walk.info, for the input format), as they are for a network that takes them, else
    expanded into the batch's float planes; the network call on ``device`` (the device's queue,
    an executor; None: here); then each position's moves sorted by prior into the batch (lc0's
    softmax at PolicyTemperature ``temperature``). ``timeline``: the network call's start and
    end. ``order``: (set when the previous batch's call is queued, or None; to set once this
    one's is): the planes of several batches are prepared at once, their calls queue in the
    order the batches went. ``share``: told of the batch's encoding, then of its sort, as
    :class:`Chunks` the search thread may take rows of while it waits, and of None after each."""
    after, queued = order if order is not None else (None, None)
    try:
        fmt, fill = int(info[cgather.FORMAT]), int(info[cgather.FILL])

        def encode(start: int, end: int) -> None:
            encode_planes(batch.req, batch.window, fmt, fill, batch.masks, batch.values, start,
                          end)  # fmt: skip
            if not packed:
                expand_planes(batch.masks, batch.values, batch.planes, start, end)

        _shared(Chunks(n, encode), share)
        if device is None:
            out = _call_network(network, packed, batch, n, timeline, seq)
        else:
            if after is not None:
                after.wait(ORDER_WAIT_S)
            call = device.submit(_call_network, network, packed, batch, n, timeline, seq)
            if queued is not None:
                queued.set()
            out = call.result()
    finally:
        if queued is not None:
            queued.set()  # a failed batch does not hold up the next
    policy = network_heads(out.policy)

    def sort(start: int, end: int) -> None:
        sort_policies(batch.req, batch.moves, batch.indices, policy, start, end,
                      float(temperature), batch.sorted_moves, batch.priors)  # fmt: skip

    _shared(Chunks(n, sort), share)
    return out


def _shared(chunks: Chunks, share: Callable[[Chunks | None], None] | None) -> None:
    """``chunks`` done here, offered to the search thread meanwhile through ``share``."""
    if share is not None:
        share(chunks)
    try:
        chunks.finish()
    finally:
        if share is not None:
            share(None)


class Chunks:
    """Rows ``0 .. n - 1`` of a batch's work (``work(start, end)``, a compiled call without the
    GIL) in chunks of :data:`CHUNK` that whoever runs :meth:`run` takes in turn: the batch's
    worker, and the search thread while it would otherwise wait (the planes' encoding and the
    policies' sort are on the path from a gather to the next device call and from the device's
    answer to the backup: with two batches in flight that path decides when the device is fed).
    """

    def __init__(self, n: int, work: Callable[[int, int], None]) -> None:
        self.n, self.work = n, work
        self._next = self._done = 0
        self._lock = threading.Lock()
        self._finished = threading.Event()
        if n <= 0:
            self._finished.set()

    def run(self) -> None:
        """Do chunks until none is left to take (others may still be doing theirs)."""
        while True:
            with self._lock:
                start = self._next
                end = self._next = min(self.n, start + CHUNK)
            if start >= self.n:
                return
            try:
                self.work(start, end)
            finally:
                with self._lock:
                    self._done += end - start
                    if self._done >= self.n:
                        self._finished.set()

    @property
    def open(self) -> bool:
        """Whether chunks are left to take."""
        return self._next < self.n

    def finish(self) -> None:
        """Do chunks, then wait for those others took."""
        self.run()
        self._finished.wait()


def _call_network(
    network: Network, packed: bool, batch: cgather.Batch, n: int, timeline: Timeline | None,
    seq: int,
) -> NetworkOutput:  # fmt: skip
    start = Timeline.now() if timeline is not None else 0.0
    if packed:
        out = network.evaluate_packed(batch.masks[:n], batch.values[:n])  # type: ignore[attr-defined]  # declared by packed_input
    else:
        out = network.evaluate(batch.planes[:n])
    if timeline is not None:
        timeline.add(seq, "device", start, Timeline.now())
    return out
