"""The expand and backup phases: evaluated leaves get their policy (lc0's softmax with
PolicyTemperature) and their values go up the tree, with certainty propagation."""

from __future__ import annotations

import itertools
from array import array

import numpy as np

from engine.search.cache import CachedEval
from engine.search.node import Node, Terminal
from engine.search.state import STOP_CHECK_EVERY, Batch, Request, SearchState


def make_entries(state: SearchState, requests: list[Request], out) -> list[CachedEval]:
    """The NN cache entries of evaluated requests: softmax of each position's legal-move
    logits with PolicyTemperature, moves sorted by prior (stable: equal priors keep the
    generation order), for a whole batch at once.

    Every step is one numpy call over the batch except the normalising sum, which stays
    one ``np.sum`` per position: its pairwise rounding then equals the per-position
    softmax's exactly (``np.add.reduceat`` sums sequentially and differs in the last bit).
    """
    moves_list = [r.moves for r in requests]
    idx_list = [r.indices for r in requests]
    n = len(idx_list)
    lens = [len(i) for i in idx_list]
    rows = np.repeat(np.arange(n), lens)
    cols = np.fromiter(itertools.chain.from_iterable(idx_list), np.intp, len(rows))
    starts = np.zeros(n, np.intp)
    np.cumsum(lens[:-1], out=starts[1:])
    x = out.policy[rows, cols].astype(np.float64)
    x = np.exp((x - np.maximum.reduceat(x, starts)[rows]) / state.params.policy_softmax_temp)
    bounds = list(zip(starts.tolist(), (starts + lens).tolist()))
    x /= np.array([x[b:e].sum() for b, e in bounds])[rows]
    order = np.lexsort((-x, rows))  # by position, then decreasing prior; stable
    priors = x[order].astype(np.float32)
    local = (order - starts[rows]).tolist()
    qs, ds, ms = out.q[:n].tolist(), out.d[:n].tolist(), out.m[:n].tolist()
    entries = []
    for k, (b, e) in enumerate(bounds):
        moves = moves_list[k]
        entries.append(
            CachedEval(
                tuple([moves[j] for j in local[b:e]]),
                array("f", priors[b:e].tobytes()),
                qs[k],
                ds[k],
                ms[k],
            )
        )
    return entries


def process(state: SearchState, batch: Batch, out) -> None:
    """Expand and back up the nodes of an evaluated batch."""
    requests = batch.requests
    entries = make_entries(state, requests, out)
    for j, (req, entry) in enumerate(zip(requests, entries)):
        state.cache.put(req.key, entry)
        if j % STOP_CHECK_EVERY == 0 and state.stop.is_set():
            # The bestmove is waiting: cache the rest (the next search reads it) but leave
            # the tree as it is.
            for rest, rest_entry in zip(requests[j:], entries[j:]):
                state.cache.put(rest.key, rest_entry)
            abandon(state, Batch(requests[j:]))
            break
        node = req.node
        if node is None:
            continue  # prefetched: cached only
        node.pending = False
        node.expand(entry.moves, entry.priors)
        backup(state, node, 1, -entry.q, entry.d, entry.m, req.depth)
    state.batches += 1


def abandon(state: SearchState, batch: Batch) -> None:
    """Drop an unfinished batch: take its visits out of flight."""
    for req in batch.requests:
        if req.node is not None:
            req.node.pending = False
            cancel(state, req.node, 1)


def backup(
    state: SearchState, node: Node, k: int, v: float, d: float, m: float, depth: int
) -> None:
    """Add k visits of value v (node's view), d, m to node and its ancestors; m grows by one per
    ply upwards and v changes sign.

    Through a proven node the exact value goes up instead of v (lc0). When this backup proves
    a node (certainty propagation), its statistics become its proven value at once, and
    each ancestor above it that is not proven itself has the same correction applied to the
    visits that came through it (lc0's MakeTerminal and AdjustForTerminal): a move found to
    lose shows Q = -1 at the root now, not after many more visits.
    """
    state.total_playouts += k
    state.cum_depth += depth * k
    state.max_depth = max(state.max_depth, depth)
    became_terminal = node.terminal is not None and node.parent is not None
    fix_n, dv, dd, dm = 0, 0.0, 0.0, 0.0  # visits to correct above a newly proven node
    while node is not None:
        parent = node.parent
        t = node.terminal
        if t is not None and parent is not None:
            v, d, m = t.wl, t.d, t.m
        n = node.n + k
        f = k / n
        node.wl += f * (v - node.wl)
        node.d += f * (d - node.d)
        node.m += f * (m - node.m)
        node.n = n
        if fix_n and t is None:
            node.wl += fix_n * dv / n
            node.d += fix_n * dd / n
            node.m += fix_n * dm / n
        if parent is not None:
            i = node.index
            if n == k:
                parent.visited_policy += parent.p[i]
            parent.cn[i] = n
            parent.cq[i] = node.wl
            parent.cd[i] = node.d
            parent.cm[i] = node.m
            parent.cnif[i] -= k
            if became_terminal and state.params.sticky_endgames:
                became_terminal = prove(state, parent)
                if became_terminal:
                    pt = parent.terminal
                    assert pt is not None  # prove() made the parent terminal
                    fix_n = parent.n
                    dv, dd, dm = pt.wl - parent.wl, pt.d - parent.d, pt.m - parent.m
                    parent.wl, parent.d, parent.m = pt.wl, pt.d, pt.m
        v = -v
        dv = -dv
        m += 1.0
        node = parent  # type: ignore[assignment]  # None (above the root) ends the walk


def prove(state: SearchState, node: Node) -> bool:
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
    # A result resting on a table is a tablebase result, not a mate distance (lc0 reports no
    # mate score for it).
    from_tb = any(
        c is not None and c.terminal is not None and c.terminal.kind == "tablebase"
        for c in node.children
    )
    node.terminal = Terminal(-best_wl, best_d, best_m + 1.0, "tablebase" if from_tb else "proven")
    return True


def cancel(state: SearchState, node: Node, k: int) -> None:
    """Take k visits out of flight along the path to the root (collisions, abandoned batches)."""
    while node.parent is not None:
        node.parent.cnif[node.index] -= k
        node = node.parent


def check_in_flight(state: SearchState) -> None:
    root = state.root
    if root.expanded and any(root.cnif):
        root.cnif[:] = [0] * len(root.cnif)  # defensive: never leave phantom visits behind
