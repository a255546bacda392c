"""Small compiled steps of the search loop that are not a phase of their own: the NN-cache slot
of a position the owner asks about, dropping a batch's visits, a Syzygy hit backed up as a
terminal, a request taken out of a batch, and two-fold draws made stale by a new root."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.board.make import make_move
from engine.board.repetition import repetitions

from .backup import backup, cancel, clear_loss_prior
from .cache import lookup
from .gather import cache_key, move_request
from .params import CACHE_HISTORY
from .tree import NONE, PENDING, TABLEBASE, TWOFOLD, prior


@njit(cache=True)
def cached_slot(hist, row, word, params, cache):
    """The NN-cache slot of ``hist[row]`` (or of the position after move ``word`` there: its
    row is written into ``hist[row + 1]``), or -1."""
    if word >= 0:
        make_move(hist[row], np.int64(word), hist[row + 1])
        row += 1
    reps, _ = repetitions(hist, row)
    key = cache_key(hist, row, reps, np.int64(params[CACHE_HISTORY]))
    return lookup(cache, key)


@njit(cache=True)
def abandon(tree, req, n):
    for r in range(n):
        node = req.node[r]
        if node >= 0:
            tree.nodes.status[node] &= ~PENDING
            cancel(tree, np.int64(node), np.int64(1))


@njit(cache=True)
def tablebase_terminal(tree, params, counters, node, wl, depth):
    parent = tree.nodes.parent[node]
    m = max(0.0, tree.nodes.m[parent] - 1.0) if parent >= 0 else 0.0
    tree.nodes.status[node] &= ~PENDING
    if wl < 0.0:
        clear_loss_prior(tree, node)  # lc0's MakeTerminal of a loss
    tree.nodes.kind[node] = TABLEBASE
    tree.nodes.t_wl[node] = wl
    tree.nodes.t_d[node] = 1.0 - abs(wl)
    tree.nodes.t_m[node] = m
    backup(
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
def drop_request(batch, r, n):
    """Request ``r`` of ``n`` taken out of the batch: the last moves into its row, and the order
    of the rows' backups keeps the others'."""
    out = 0
    for i in range(n):
        row = batch.order[i]
        if row != r:
            batch.order[out] = r if row == n - 1 else row
            out += 1
    batch.order[n - 1] = n - 1
    if r != n - 1:
        move_request(batch, n - 1, r)


@njit(cache=True)
def revert_stale_twofolds(tree, hist, game_len):
    """A two-fold draw whose first occurrence is now before the root is no longer a draw:
    take its visits out of its ancestors and let it be evaluated again (as lc0)."""
    count = tree.count[0]
    depth = np.zeros(count, np.int64)
    for i in range(1, count):  # parents are created before their children
        p = tree.nodes.parent[i]
        depth[i] = depth[p] + 1 if p >= 0 else 0
        if tree.nodes.kind[i] != TWOFOLD or p < 0:
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
        tree.nodes.vpol[p] -= prior(tree.edges.prior[tree.nodes.pedge[i]])
        tree.nodes.n[i], tree.nodes.wl[i], tree.nodes.d[i], tree.nodes.m[i] = 0, 0.0, 0.0, 0.0
        tree.nodes.kind[i] = NONE
