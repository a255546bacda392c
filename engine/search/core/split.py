"""Selection shared among gatherers (lc0's task workers in PickNodesToExtendTask): a round of a
gather is split into disjoint subtrees, which the search thread and helper threads descend at
once, each with its own scratch, history rows and counters (a :data:`Crew`).

Multi-visit selection decides a node's visits before it descends into any child, so the top
of the tree can be assigned first and the subtrees below handed out: :func:`split` shares a
round's visits down from the root until no subtree holds more than its share, and lists the
subtrees largest first. Each gatherer takes the next subtree until none is left
(:func:`_take_tasks`), and each request it makes the batch's next row. It reads and writes its own subtrees'
nodes only; what would reach above them (backups of terminals and cache hits, visits taken
out of flight) it defers, and the one shared count it changes, the tree's nodes, it takes
atomically, as it does the batch's rows. Then the search thread fills the rows the gatherers
took and left unused (a leaf found terminal) and applies what was deferred, in the subtrees'
order (:func:`_merge`).

The result is the serial round's: a node's assignment reads its own and its children's
statistics, which only its own subtree changes, and the serial descent is depth first, so no
backup it makes is read by a later assignment of the same round. Only the nodes' numbers and
the requests' order differ, so the backups after the network's answer add the same values in
another order (the last bits of a node's mean may differ, as with lc0's threads).

The threads meet through ``crew.control`` (engine/search/core/atomic.py): the search thread
posts a round as ``gen << 32 | round`` (``gen``: the gather's number; 0: no gather, the
helpers leave) and waits until each helper has stored that word as done.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from engine.board.make import make_move
from engine.board.moves import MAX_MOVES
from engine.board.position import FIELDS

from .atomic import fetch_add, load, relax, store
from .backup import MAX_DEPTH, backup, cancel, order_descending
from .calls import UNCOUNTED
from .gather import (
    BACK_UP,
    CACHE_HIT,
    COLLISION,
    COLLISIONS,
    DEFERRED,
    DEFERRED_OPS,
    EDGE_ROOM,
    EVENTS,
    GAME_LEN,
    GIVEN_CHILD,
    GIVEN_K,
    HOLE,
    NO_ROOM,
    NODE_ROOM,
    OUT_OF_ORDER_DONE,
    RANK,
    REQUESTS,
    ROW_BLOCK,
    ROW_END,
    ROW_NEXT,
    ROWS,
    STACK,
    Batch,
    Walk,
    descend,
    expand_cached,
    move_request,
    share_visits,
)
from .tree import LINE_BYTES, NONE, child, new_node, records

I = np.int64
F = np.float64

MAX_TASKS = 256
WIDTH = -(-MAX_MOVES // 8) * 8
"""A gatherer's selection scratch rows: MAX_MOVES rounded up to whole cache lines."""
LINE = 16
assert LINE > ROW_END
"""int64s in a row of a gatherer's counters and counts: two cache lines, so that gatherers
updating theirs at once do not share one."""
MIN_TASK_VISITS = 8
"""A subtree with fewer visits is not split further (lc0's MinimumWorkSizeForPicking)."""
MIN_SHARED_VISITS = 32
"""A round of fewer visits is selected by the search thread alone: the split and the meeting
of the threads would cost more than they save."""

NODE, VISITS, DEPTH, BY, OPS_START, OPS_END, KEY, MADE, PLACE = range(9)
"""Columns of ``crew.tasks``: the subtree's node, its visits, its depth below the root, the
gatherer that took it, the range of that gatherer's deferred changes it made, its key in the
serial descent's order (a byte a level: the serial descent takes a node's children in the
reverse of the order they were given visits), the requests it made, and its place in that
order."""
SPLIT_LEVELS = 6
"""Levels below the root a round may be split to (the keys' bytes, exact in a float64)."""
ROUND, CURSOR, TASKS, WANT, FREE_NODES, FREE_EDGES, DONE = range(8, 15)
"""``crew.control`` (also ``Walk.shared``): ROWS (the batch's next row, which each new request
takes) in a cache line of its own, then the round posted, the next task to take (by position in ``crew.order``), how
many tasks, the round's visits, the nodes and edges the tree had room for at its start; then
from DONE each gatherer's last round done."""

Crew = namedtuple(
    "Crew",
    "control tasks order serial keys hist counters stack pick_values pick_order coll meta deferred",
)
"""The gatherers of a minibatch (the search thread is gatherer 0). control int64 [DONE + G];
tasks int64 [MAX_TASKS, 9]; order int64 [MAX_TASKS] (the tasks largest first, as they are
taken; then scratch), serial int64 [MAX_TASKS] (the tasks in the serial order, last first)
and keys float64 [MAX_TASKS] (scratch); and a row of each per
gatherer: hist uint64 [G, H, FIELDS] (the game's rows, then its path's, as ``Walk.hist``);
counters int64 [G, LINE] (the first 4 used); stack, pick_values, pick_order, coll, meta and deferred as
:class:`~engine.search.core.gather.Batch`'s."""


def spare_rows(gatherers: int) -> int:
    """Rows a batch needs beyond its size for ``gatherers``: each may leave the rest of its
    last block of rows unused (0 for one)."""
    return gatherers * ROW_BLOCK if gatherers > 1 else 0


def new_crew(gatherers: int, rows: int, history: int) -> Crew:
    """Buffers for ``gatherers`` threads gathering batches of ``rows`` rows over a history of
    ``history`` rows (1: the search thread alone, which needs none)."""
    g = gatherers
    one = g == 1  # the search thread alone: no rows needed
    return Crew(
        records(DONE + g, np.dtype(np.int64)),
        np.zeros((MAX_TASKS, 9), np.int64),
        np.zeros(MAX_TASKS, np.int64),
        np.zeros(MAX_TASKS, np.int64),
        np.zeros(MAX_TASKS, np.float64),
        _lines((g, 0 if one else history, FIELDS), np.uint64),
        _lines((g, LINE), np.int64),
        _lines((g, 3, 0 if one else STACK), np.int64),
        _lines((g, 5, 0 if one else WIDTH), np.float64),
        _lines((g, 4, 0 if one else WIDTH), np.int64),
        _lines((g, 0 if one else 4 * rows + 64 + rows % 2 * 4), COLLISION),
        _lines((g, LINE), np.int64),
        _lines((g, 0 if one else rows + 8), DEFERRED),
    )


def _lines(shape: tuple[int, ...], dtype: type | np.dtype) -> np.ndarray:
    """Zeros whose rows (the first axis: one a gatherer) each start a cache line, so that
    gatherers updating their own at once share none."""
    dt = np.dtype(dtype)
    row = int(np.prod(shape[1:], dtype=np.int64)) * dt.itemsize
    assert row % LINE_BYTES == 0, (shape, dt)
    return records(shape[0] * row // dt.itemsize, dt).reshape(shape)


@njit(cache=True)
def shared_round(tree, params, counters, cache, batch, walk, want, crew, gen, number):
    """Round ``number`` of the gather ``gen`` over the crew (the search thread's part): split,
    posted, its share taken, the helpers waited for, merged."""
    n = split(tree, params, batch, walk, want, crew)
    control = crew.control
    control[CURSOR], control[TASKS], control[WANT] = 0, n, want
    control[ROWS] = batch.meta[REQUESTS]
    control[FREE_NODES] = tree.nodes.parent.shape[0] - tree.count[0]
    control[FREE_EDGES] = tree.edges.move.shape[0] - tree.count[1]
    crew.meta[:, :] = 0
    crew.counters[:, :] = 0
    word = (gen << 32) | number
    store(control, ROUND, word)
    _take_tasks(tree, params, cache, batch, walk, crew, I(0))
    for g in range(1, crew.meta.shape[0]):
        while load(control, DONE + g) != word:
            relax()
    _merge(tree, params, counters, cache, batch, crew, n)


@njit(cache=True, nogil=True)
def helper(tree, params, cache, batch, walk, crew, g, gen):
    """Gatherer ``g``'s thread for the gather ``gen``: each round posted, its share of the
    subtrees; returns when the gather is over."""
    control = crew.control
    seen = 0
    while True:
        word = load(control, ROUND)
        if word >> 32 != gen:
            return
        if word != seen and word & 0xFFFFFFFF != 0:
            seen = word
            _take_tasks(tree, params, cache, batch, walk, crew, I(g))
            store(control, DONE + g, word)
        else:
            relax()


@njit(cache=True)
def copy_game(walk, crew):
    """The game's rows into each helper's history rows."""
    game = walk.info[GAME_LEN]
    for g in range(1, crew.hist.shape[0]):
        for row in range(game):  # loops: a slice assignment costs seconds of compilation
            for f in range(FIELDS):
                crew.hist[g, row, f] = walk.hist[row, f]


@njit(cache=True, **UNCOUNTED)
def _splittable(tree, walk, node, depth):
    """Whether ``node``'s visits may be shared among its children now: it has children and is
    not terminal, and its children's rows fit the history buffer."""
    if tree.nodes.nedges[node] == 0:
        return False
    if node != 0 and tree.nodes.kind[node] != NONE:
        return False
    return depth < SPLIT_LEVELS and walk.info[GAME_LEN] + depth < walk.hist.shape[0]


@njit(cache=True, **UNCOUNTED)
def split(tree, params, batch, walk, visits, crew):
    """Share ``visits`` from the root into subtrees of at most ``visits / (2 * gatherers)``
    visits (or :data:`MIN_TASK_VISITS`, or unsplittable) as the serial selection assigns them;
    list them largest first in ``crew.order``, each with its rows of the batch. Returns how
    many tasks."""
    tasks = crew.tasks
    tasks[0, NODE], tasks[0, VISITS], tasks[0, DEPTH], tasks[0, KEY] = 0, visits, 0, 0
    n = 1
    most = max(MIN_TASK_VISITS, visits // (2 * crew.meta.shape[0]))
    cap = tree.nodes.parent.shape[0]
    order = batch.pick_order
    while True:
        best, top = -1, most
        for i in range(n):
            k = tasks[i, VISITS]
            if k > top and _splittable(tree, walk, tasks[i, NODE], tasks[i, DEPTH]):
                best, top = i, k
        if best < 0:
            break
        node, k, depth = tasks[best, NODE], tasks[best, VISITS], tasks[best, DEPTH]
        key, shift = tasks[best, KEY], 8 * (SPLIT_LEVELS - 1 - depth)
        if n + tree.nodes.nedges[node] > MAX_TASKS:
            break
        given = share_visits(tree, params, batch, walk, node, k, depth)
        tasks[best, VISITS] = 0
        f = tree.nodes.first[node]
        for g in range(given):
            j, cnt = order[GIVEN_CHILD, g], order[GIVEN_K, g]
            c = child(tree, node, j)
            if c < 0:
                if tree.count[0] >= cap:
                    cancel(tree, I(node), I(cnt))
                    batch.meta[NO_ROOM] = 1
                    continue
                c = new_node(tree, node, f + j)
            tree.nodes.nif[c] += cnt
            slot = best if tasks[best, VISITS] == 0 else n
            tasks[slot, NODE], tasks[slot, VISITS], tasks[slot, DEPTH] = c, cnt, depth + 1
            tasks[slot, KEY] = key | ((given - 1 - g) << shift)
            if slot == n:
                n += 1
    for i in range(n):
        crew.keys[i] = tasks[i, KEY]
    order_descending(crew.keys, I(n), crew.serial)
    for pos in range(n):
        tasks[crew.serial[pos], PLACE] = n - 1 - pos
        tasks[crew.serial[pos], MADE] = 0
    for i in range(n):
        crew.keys[i] = tasks[i, VISITS]
    order_descending(crew.keys, I(n), crew.order)
    return n


@njit(cache=True, **UNCOUNTED)
def _take_tasks(tree, params, cache, batch, walk, crew, g):
    """Gatherer ``g`` descends the round's next subtree until none is left, with its own
    scratch, deferring what reaches above the subtree."""
    control, tasks = crew.control, crew.tasks
    n, want = control[TASKS], control[WANT]
    free_nodes, free_edges = control[FREE_NODES], control[FREE_EDGES]
    hist = walk.hist if g == 0 else crew.hist[g]
    own = Walk(hist, walk.info, walk.draw_scores, walk.root_filter, walk.stop, walk.on_device,
               control)  # fmt: skip
    meta = crew.meta[g]
    sub = Batch(
        batch.req, batch.rows, batch.window, batch.moves, batch.indices, batch.masks,
        batch.values, batch.planes, batch.sorted_moves, batch.priors, crew.coll[g], meta,
        crew.stack[g], batch.frames, batch.frame_meta, crew.pick_values[g], crew.pick_order[g],
        batch.order,
    )  # fmt: skip
    ops = crew.deferred[g]
    while True:
        pos = fetch_add(control, CURSOR, 1)
        if pos >= n:
            for r in range(meta[ROW_NEXT], meta[ROW_END]):
                batch.req.node[r] = HOLE  # the rest of its block
            return
        i = crew.order[pos]
        k = tasks[i, VISITS]
        if k <= 0:
            continue
        meta[NODE_ROOM] = k if free_nodes >= want else (free_nodes * k) // want
        edges = (free_edges * k) // want
        meta[EDGE_ROOM] = edges - edges % MAX_MOVES
        tasks[i, OPS_START] = meta[DEFERRED_OPS]
        meta[REQUESTS], meta[RANK] = 0, tasks[i, PLACE] << 16
        node, depth = tasks[i, NODE], tasks[i, DEPTH]
        _path_rows(tree, own, crew.stack[g, 0], node, depth)
        descend(tree, params, crew.counters[g], cache, sub, own, ops, I(node), I(k), I(depth))
        tasks[i, BY], tasks[i, OPS_END], tasks[i, MADE] = g, meta[DEFERRED_OPS], meta[REQUESTS]


@njit(cache=True, **UNCOUNTED)
def _path_rows(tree, walk, moves, node, depth):
    """The rows of ``node``'s ancestors below the root into ``walk.hist`` (``moves``: room
    for ``depth`` moves)."""
    base = walk.info[GAME_LEN] - 1
    a = tree.nodes.parent[node]
    for level in range(depth - 1, 0, -1):
        moves[level] = tree.edges.move[tree.nodes.pedge[a]]
        a = tree.nodes.parent[a]
    for level in range(1, depth):
        make_move(walk.hist[base + level - 1], I(moves[level]), walk.hist[base + level])


@njit(cache=True)
def _merge(tree, params, counters, cache, batch, crew, n):
    """The round into the batch: the rows taken and left unused filled with the last ones, the
    gatherers' collisions and counts added, what they deferred applied in the subtrees' order
    (a cache hit's moves read into the batch's first free row)."""
    tasks = crew.tasks
    req, holes = batch.req, 0
    first = lo = batch.meta[REQUESTS]
    hi = crew.control[ROWS] - 1
    for r in range(lo, hi + 1):
        holes += req.node[r] == HOLE
    batch.meta[REQUESTS] = hi + 1 - holes
    while True:
        while lo <= hi and req.node[lo] != HOLE:
            lo += 1
        while hi > lo and req.node[hi] == HOLE:
            hi -= 1
        if lo >= hi:
            break
        move_request(batch, hi, lo)
        lo, hi = lo + 1, hi - 1
    # The rows' order for the backups: the serial descent's (each request's rank: its
    # subtree's place, then its place in the subtree's requests).
    starts, row = crew.order, first  # the order of taking is done with
    for place in range(n):
        i = crew.serial[n - 1 - place]
        starts[place] = row
        row += tasks[i, MADE] if tasks[i, VISITS] > 0 else 0
    for r in range(first, batch.meta[REQUESTS]):
        rank = req.rank[r]
        batch.order[starts[rank >> 16] + (rank & 0xFFFF)] = r
    for g in range(crew.meta.shape[0]):
        meta = crew.meta[g]
        c0 = batch.meta[COLLISIONS]
        for c in range(meta[COLLISIONS]):
            batch.coll[c0 + c] = crew.coll[g, c]
        batch.meta[COLLISIONS] = c0 + meta[COLLISIONS]
        batch.meta[EVENTS] += meta[EVENTS]
        batch.meta[OUT_OF_ORDER_DONE] += meta[OUT_OF_ORDER_DONE]
        batch.meta[NO_ROOM] |= meta[NO_ROOM]
        counters[MAX_DEPTH] = max(counters[MAX_DEPTH], crew.counters[g, MAX_DEPTH])
    for place in range(n):
        i = crew.serial[n - 1 - place]
        if tasks[i, VISITS] > 0:
            _apply(tree, params, counters, cache, batch, crew.deferred[tasks[i, BY]],
                   tasks[i, OPS_START], tasks[i, OPS_END])  # fmt: skip


@njit(cache=True)
def _apply(tree, params, counters, cache, batch, ops, start, end):
    for i in range(start, end):
        node, k, depth, what = I(ops.node[i]), I(ops.k[i]), I(ops.depth[i]), ops.what[i]
        if what == BACK_UP:
            backup(tree, params, counters, node, k, F(ops.wl[i]), F(ops.d[i]), F(ops.m[i]), depth)
        elif what == CACHE_HIT:  # the batch's first free row as room
            r = batch.meta[REQUESTS]
            expand_cached(tree, params, counters, cache, node, depth, I(ops.slot[i]),
                          batch.moves[r], batch.priors[r])  # fmt: skip
        else:
            cancel(tree, node, k)
