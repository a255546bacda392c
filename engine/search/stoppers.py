"""When a search stops: node, time, depth and mate limits and lc0's smart pruning
(lc0's src/search/classic/stoppers/), read from the search's state."""

from __future__ import annotations

import math

import numpy as np

from engine.search.ranking import best_children
from engine.search.state import SearchState

SMART_PRUNING_TOLERANCE_MS = 200
SMART_PRUNING_TOLERANCE_NODES = 300
"""lc0's SmartPruningStopper tolerances (stoppers.cc)."""


def time_up(state: SearchState) -> bool:
    t = state.limit.budget_ms
    return t is not None and not state.limit.until_stop and state.elapsed_ms() >= t


def limit_reached(state: SearchState) -> bool:
    lim = state.params
    limit = state.limit
    # Playouts the stoppers expect to remain (lc0's StoppersHints), for the collision budget:
    # the nodes left when smart pruning is on, divided by its factor once it is measuring.
    state.remaining_hint = math.inf
    if limit.nodes is not None and lim.smart_pruning_factor > 0.0:
        state.remaining_hint = max(limit.nodes - state.root.n, 0)
    if limit.nodes is not None and state.root.n >= limit.nodes:
        return True
    if state.root.n >= lim.max_tree_nodes:
        return True
    if time_up(state):
        return True
    if limit.depth is not None and state.root.n > 1 and avg_depth(state) >= limit.depth:
        return True
    if limit.mate is not None:
        mate = mate_found(state)
        if mate is not None and 0 < mate <= limit.mate:
            return True
    if not limit.until_stop and smart_prune(state):
        return True
    return False


def avg_depth(state: SearchState) -> float:
    return state.cum_depth / max(state.total_playouts, 1)


def mate_found(state: SearchState) -> int | None:
    if not state.root.expanded:
        return None
    best = best_children(state, state.root, 1)
    if not best:
        return None
    child = state.root.children[best[0]]
    if child is None or child.terminal is None or child.terminal.wl <= 0:
        return None
    return int(round(child.terminal.m)) // 2 + 1


def root_outcomes(state: SearchState) -> tuple[int, int, bool]:
    """(moves searched, root moves proven lost, a root move proven won), over the searchmoves."""
    root = state.root
    moves = lost = 0
    won = False
    for i, child in enumerate(root.children):
        if state.mask is not None and not state.mask[i]:
            continue
        moves += 1
        t = child.terminal if child is not None and root.cn[i] > 0 else None
        if t is not None:
            lost += t.wl < 0.0
            won = won or t.wl > 0.0
    return moves, lost, won


def smart_prune(state: SearchState) -> bool:
    """lc0's SmartPruningStopper, in its order: one legal move, at most one move that does not
    lose, a proven win; then, from SMART_PRUNING_TOLERANCE_MS after the first evaluation and
    SmartPruningMinimumBatches batches on, stop when the second-best move cannot catch up
    with the best in the playouts left (nodes left under ``go nodes``, time left times the
    measured rate under a clock; each divided by SmartPruningFactor)."""
    p = state.params
    root = state.root
    if p.smart_pruning_factor <= 0.0 or not root.expanded:
        return False
    moves, lost, won = root_outcomes(state)
    if moves <= 1 or moves <= lost + 1 or won:
        return True
    elapsed = state.elapsed_ms()
    if state.first_eval_time is None:
        if state.total_playouts > 0:
            state.first_eval_time = elapsed
        return False
    if elapsed < state.first_eval_time + SMART_PRUNING_TOLERANCE_MS:
        return False
    remaining = math.inf
    if state.limit.nodes is not None:
        remaining = (state.limit.nodes - root.n) / p.smart_pruning_factor
    if state.limit.budget_ms is not None:
        nodes = state.total_playouts + SMART_PRUNING_TOLERANCE_NODES
        nps = 1000.0 * nodes / max(elapsed - state.first_eval_time, 1e-3) + 1
        remaining = min(
            remaining, (state.limit.budget_ms - elapsed) / 1000.0 * nps / p.smart_pruning_factor
        )
    if math.isinf(remaining):
        return False
    state.remaining_hint = remaining
    if state.batches < p.smart_pruning_minimum_batches:
        return False
    cn = np.asarray(root.cn) if state.mask is None else np.where(state.mask, root.cn, 0)
    top2 = np.partition(cn, len(cn) - 2)[-2:]
    return remaining < top2[1] - top2[0]
