"""The expand and backup phases, compiled: lc0's policy softmax with PolicyTemperature, the new
edges, the backup of values up the tree (DoBackupUpdate) and certainty propagation
(MakeTerminal, AdjustForTerminal); and taking visits out of flight (collisions, abandoned
batches).

``counters`` int64 [:data:`COUNTERS`].
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .atomic import fetch_add, store
from .calls import UNCOUNTED
from .layout import Layout
from .lc0_order import has_ties, lc0_sort
from .params import STICKY
from .tree import (
    NONE,
    PENDING,
    PROVEN,
    TABLEBASE,
    child,
    compress_priors,
    expand,
    lock_values,
    prior,
    unlock_values,
)

COUNTERS = Layout("counters", "PLAYOUTS DEPTH_SUM MAX_DEPTH TB_HITS")
"""A search's counts: its playouts, their depth sum, the deepest, its tablebase hits."""
PLAYOUTS, DEPTH_SUM, MAX_DEPTH, TB_HITS = COUNTERS.indices("PLAYOUTS DEPTH_SUM MAX_DEPTH TB_HITS")


@njit(cache=True)
def clear_loss_prior(tree, node):
    """lc0's Node::MakeTerminal of a loss (for the side that moved into ``node``): the move's
    prior becomes 0 (lc0's 16-bit 0, 2^-31), so its U no longer competes with moves that do
    not lose, and the parent's visited policy (FPU reduction) no longer counts it."""
    parent = tree.nodes.parent[node]
    if parent < 0:
        return
    e = tree.nodes.pedge[node]
    if tree.nodes.n[node] > 0:
        tree.nodes.vpol[parent] += prior(np.uint16(0)) - prior(tree.edges.prior[e])
    tree.edges.prior[e] = 0


@njit(cache=True)
def prove(tree, node):
    """Certainty propagation: make ``node`` terminal when a child wins for its side to move or
    every child is proven. Returns whether it did. The root stays searchable."""
    if tree.nodes.parent[node] < 0 or tree.nodes.kind[node] != NONE or tree.nodes.nedges[node] == 0:
        return False
    best_wl, best_d, best_m, all_proven, from_tb = -2.0, 0.0, 0.0, True, False
    for j in range(tree.nodes.nedges[node]):
        c = child(tree, node, j)
        if c < 0 or tree.nodes.kind[c] == NONE:
            all_proven = False
            continue
        from_tb = from_tb or tree.nodes.kind[c] == TABLEBASE
        wl, m = tree.nodes.t_wl[c], tree.nodes.t_m[c]
        if wl > 0.0:  # the side to move at node wins by this move: the shortest such win
            if best_wl < 1.0 or m < best_m:
                best_wl, best_d, best_m = 1.0, 0.0, m
        elif best_wl < 1.0 and (wl > best_wl or (wl == best_wl and m > best_m)):
            best_wl, best_d, best_m = wl, tree.nodes.t_d[c], m
    if best_wl < 1.0 and not all_proven:
        return False
    if best_wl > 0.0:  # proven lost for the side that moved into it
        clear_loss_prior(tree, node)
    tree.nodes.t_wl[node] = -best_wl
    tree.nodes.t_d[node] = best_d
    tree.nodes.t_m[node] = best_m + 1.0
    # A result resting on a table is a tablebase result, not a mate distance. The kind last:
    # a gather that sees it reads the proven value.
    store(tree.nodes.kind, node, TABLEBASE if from_tb else PROVEN)
    return True


@njit(cache=True)
def backup(tree, params, counters, node, k, v, d, m, depth):
    """Add ``k`` visits of value v (node's view), d, m to ``node`` and its ancestors; m grows
    by one a ply upwards and v changes sign. Through a proven node its exact value goes up
    instead; a node this backup proves gets its proven value at once, and each ancestor has
    the same correction applied to the visits that came through it. Under the values' lock (a
    gather's out-of-order backups run beside other gathers); the visits in flight leave
    atomically (gathers add theirs meanwhile)."""
    lock_values(tree)
    _backup(tree, params, counters, node, k, v, d, m, depth)
    unlock_values(tree)


@njit(cache=True, inline="always")
def _backup(tree, params, counters, node, k, v, d, m, depth):
    counters[PLAYOUTS] += k
    counters[DEPTH_SUM] += depth * k
    counters[MAX_DEPTH] = max(counters[MAX_DEPTH], depth)
    sticky = params[STICKY] != 0.0
    became_terminal = tree.nodes.kind[node] != NONE and tree.nodes.parent[node] >= 0
    fix_n, dv, dd, dm = 0, 0.0, 0.0, 0.0
    while node >= 0:
        parent = tree.nodes.parent[node]
        terminal = tree.nodes.kind[node] != NONE
        if terminal and parent >= 0:
            v, d, m = tree.nodes.t_wl[node], tree.nodes.t_d[node], tree.nodes.t_m[node]
        n = tree.nodes.n[node] + k
        f = k / n
        tree.nodes.wl[node] += f * (v - tree.nodes.wl[node])
        tree.nodes.d[node] += f * (d - tree.nodes.d[node])
        tree.nodes.m[node] += f * (m - tree.nodes.m[node])
        tree.nodes.n[node] = n
        if fix_n and not terminal:
            tree.nodes.wl[node] += fix_n * dv / n
            tree.nodes.d[node] += fix_n * dd / n
            tree.nodes.m[node] += fix_n * dm / n
        if parent >= 0:
            if n == k:
                tree.nodes.vpol[parent] += prior(tree.edges.prior[tree.nodes.pedge[node]])
            fetch_add(tree.nodes.nif, node, -k)
            if became_terminal and sticky:
                became_terminal = prove(tree, parent)
                if became_terminal:
                    fix_n = tree.nodes.n[parent]
                    # In the child's view, as v here: the next step turns both to the
                    # parent's, whose ancestors take the correction (lc0's MaybeSetBounds).
                    dv = tree.nodes.wl[parent] - tree.nodes.t_wl[parent]
                    dd = tree.nodes.t_d[parent] - tree.nodes.d[parent]
                    dm = tree.nodes.t_m[parent] - tree.nodes.m[parent]
                    tree.nodes.wl[parent] = tree.nodes.t_wl[parent]
                    tree.nodes.d[parent] = tree.nodes.t_d[parent]
                    tree.nodes.m[parent] = tree.nodes.t_m[parent]
            else:
                became_terminal = False
        v = -v
        dv = -dv
        m += 1.0
        node = parent


@njit(cache=True)
def cancel(tree, node, k):
    """Take ``k`` visits out of flight along the path from ``node`` to the root (atomically:
    gathers on other threads add theirs meanwhile)."""
    while tree.nodes.parent[node] >= 0:
        fetch_add(tree.nodes.nif, node, -k)
        node = tree.nodes.parent[node]


@njit(cache=True)
def order_descending(values, count, order):
    """``order[:count]``: indices of ``values[:count]`` by decreasing value, ties in index order
    (a stable insertion sort: a node has a few dozen children, and numpy's stable argsort
    costs seconds of compilation)."""
    for j in range(count):
        v = values[j]
        k = j
        while k > 0 and values[order[k - 1]] < v:
            order[k] = order[k - 1]
            k -= 1
        order[k] = j


@njit(cache=True)
def fast_softmax(probs, count, inv_temperature):
    """lc0's policy softmax (NetworkAsBackendComputation::SoftmaxPolicy) in place over
    ``probs[:count]`` (float32, each logit less the largest): FastExp(x * 1/T) in float32
    (utils/fastmath.h: 2^(N+f) ~ 2^N * (1 + f * (0.6602339 + 0.33976606 * f)), off the exact
    exp by up to ~0.2 %), summed in order, then scaled by 1 / total."""
    bits = probs.view(np.int32)
    f32 = np.float32
    total = f32(0.0)
    for j in range(count):
        a = f32(f32(probs[j] * inv_temperature) * f32(1.442695040))
        if a < f32(-126.0):
            probs[j] = f32(0.0)
            continue
        e = np.int32(a - f32(1.0)) if a < f32(0.0) else np.int32(a)
        frac = f32(a - f32(e))
        probs[j] = f32(1.0) + frac * (f32(0.6602339) + f32(0.33976606) * frac)
        bits[j] = np.int32(np.int64(bits[j]) + (np.int64(e) << 23))
        total = f32(total + probs[j])
    scale = f32(1.0) / total if total > f32(0.0) else f32(1.0)
    for j in range(count):
        probs[j] = f32(probs[j] * scale)


@njit(cache=True, **UNCOUNTED)  # called a row at a time: its 8 arrays uncounted
def softmax_sorted(pos, logits, indices, count, temperature, moves, out_moves, out_priors,
                   scratch):  # fmt: skip
    """Priors of ``count`` legal moves of position row ``pos`` (lc0's softmax of their logits
    at ``temperature``, :func:`fast_softmax`), written with the moves in decreasing order of
    their 16-bit prior; equal priors in lc0's order (its generator's, then its std::sort:
    :mod:`engine.search.core.lc0_order`). ``scratch``: the (int64, int64, float32) [>= count]
    arrays of :func:`sort_policies`."""
    keys, order, probs = scratch
    top = np.float32(-np.inf)
    for j in range(count):
        probs[j] = logits[indices[j]]
        top = max(top, probs[j])
    for j in range(count):
        probs[j] = np.float32(probs[j] - top)
    fast_softmax(probs, count, np.float32(1.0 / np.float32(temperature)))
    compress_priors(probs, out_priors, count)  # lc0: float, then 16 bits
    # Sorted as one int64 key a move, the complement of its prior above its index: ascending
    # keys are decreasing priors with ties in index order. The keys are distinct, so a key's
    # place is the number of keys below it: count x count comparisons without a branch, which
    # the compiler vectorises (an insertion sort's unpredictable exits cost ~3x more).
    for j in range(count):
        keys[j] = (np.int64(65535 - np.int64(out_priors[j])) << 16) | j
    for j in range(count):
        key = keys[j]
        place = 0
        for i in range(count):
            place += keys[i] < key
        order[place] = key
    for j in range(count):
        key = order[j]
        out_moves[j] = moves[key & 65535]
        out_priors[j] = np.uint16(65535 - (key >> 16))
    if has_ties(out_priors, count):  # rare with a real network's priors: the slow way then
        lc0_sort(pos, out_moves, out_priors, count, keys, order)


@njit(cache=True, nogil=True)
def sort_policies(req, rows, moves, indices, policy, start, n, temperature, out_moves, out_priors):
    """For each evaluated request ``start`` to ``n - 1`` of a batch (positions ``rows``), its
    moves by decreasing
    prior and the priors (:func:`softmax_sorted`) into ``out_moves`` int32 / ``out_priors``
    uint16 [B, MAX_MOVES]. Reads the batch and the network's policy only: the evaluation thread
    runs it beside the search's, and the search thread takes rows too while it waits."""
    width = moves.shape[1]
    scratch = (np.empty(width, np.int64), np.empty(width, np.int64), np.empty(width, np.float32))
    _sort_rows(req, rows, moves, indices, policy, start, n, temperature, out_moves, out_priors,
               scratch)  # fmt: skip


@njit(cache=True, **UNCOUNTED)  # a row's eight views a call, uncounted
def _sort_rows(req, rows, moves, indices, policy, start, n, temperature, out_moves, out_priors,
               scratch):  # fmt: skip
    """:func:`sort_policies`' rows, given its scratch."""
    for r in range(start, n):
        softmax_sorted(
            rows[r],
            policy[r],
            indices[r],
            req.count[r],
            temperature,
            moves[r],
            out_moves[r],
            out_priors[r],
            scratch,
        )


@njit(cache=True, nogil=True)
def expand_and_backup_rows(tree, params, counters, req, moves, priors, q, d, m, order, n):
    """Expand and back up the ``n`` evaluated requests of a batch (node -1: a prefetched
    position, in the NN cache only) with their moves and priors as :func:`sort_policies` wrote
    them, rows in ``order``. The evaluation has put every result into the NN cache
    (:func:`engine.search.core.cache.insert_rows`, outside the nodes lock). Room for the edges
    has been reserved. Gathers on other threads may run at once: each node is this batch's
    (pending) until its edges are in, and the values change under the values' lock."""
    for i in range(n):
        r = order[i]
        k = req.count[r]
        node = req.node[r]
        if node < 0:
            continue
        expand(tree, np.int64(node), moves[r], priors[r], np.int64(k))
        # No longer pending once its edges are in: a gather on another thread that finds it
        # not pending finds them (core/gather.py's _claim).
        tree.nodes.status[node] &= ~PENDING
        backup(
            tree,
            params,
            counters,
            np.int64(node),
            np.int64(1),
            -np.float64(q[r]),
            np.float64(d[r]),
            np.float64(m[r]),
            np.int64(req.depth[r]),
        )
