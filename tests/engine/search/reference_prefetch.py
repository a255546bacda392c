"""A plain reference of lc0's PrefetchIntoCache (search/classic/search.cc) over the compiled
search's tree and python-chess boards: the positions lc0 would send with a minibatch that is
short of MaxPrefetch, in the order it sends them. Written from lc0's code, float32 as lc0's:
children in the order of ``-(U + Q)`` (an unvisited child at the FPU), each given the budget it
may take before the next overtakes it (``GetQ(-fpu)`` for an unvisited one, lc0's own), the last
child the budget of the one before it; a leaf costs a slot whether it is cached or not, and one
not cached is sent even when it is already in the batch or has no legal move."""

from __future__ import annotations

import math

import chess
import numpy as np

from engine.board.moves import to_chess_move
from engine.search.core import tree as ctree
from engine.search.params import SearchParams

from reference_mcts import cache_key, lc0_cpuct

f32 = np.float32


def prefetch(tree, params: SearchParams, board: chess.Board, budget: int, cached: set) -> list:
    """The positions (chess.Board copies) lc0 prefetches from the root of ``tree`` (at
    ``board``) with ``budget`` slots; ``cached``: the NN cache's keys (reference_mcts.cache_key)."""
    sent: list[chess.Board] = []
    _visit(tree, params, 0, board, budget, cached, sent)
    return sent


def _visit(tree, params, node: int, board: chess.Board, budget: int, cached: set, sent) -> int:
    if budget <= 0:
        return 0
    nodes = tree.nodes
    if node == 0 and int(nodes["n"][0]) == 0:
        return 0  # the root being evaluated (its visit in flight is not counted in ``nif``)
    if node < 0 or int(nodes["n"][node]) + int(nodes["nif"][node]) == 0:
        if cache_key(board) not in cached:
            sent.append(board.copy())
        return 1
    if int(nodes["n"][node]) == 0 or int(nodes["kind"][node]) != ctree.NONE:
        return 0
    at_root = node == 0
    init, base, factor = params.cpuct_params(at_root)
    n = int(nodes["n"][node])
    puct_mult = f32(f32(lc0_cpuct(n, init, base, factor)) * math.sqrt(max(n - 1, 1)))
    value = params.fpu_value_at_root if at_root else params.fpu_value
    fpu = f32(-float(nodes["wl"][node]) - value * math.sqrt(float(nodes["vpol"][node])))
    first, kids = int(nodes["first"][node]), int(nodes["kids"][node])
    scored = []
    for j in range(int(nodes["nedges"][node])):
        p = f32(ctree.prior(int(tree.edges["prior"][first + j])))
        if p == 0.0:
            continue
        child = int(tree.kids[kids + j]) if kids >= 0 else -1
        started = int(nodes["n"][child]) + int(nodes["nif"][child]) if child >= 0 else 0
        visited = child >= 0 and int(nodes["n"][child]) > 0
        q = f32(nodes["wl"][child]) if visited else fpu
        u = f32(puct_mult * p / f32(1 + started))
        scored.append((f32(-(u + q)), j, child, p, started, visited))
    scored.sort(key=lambda s: s[0])  # stable: no two scores tie in these tests' trees
    spent = 0
    to_spend = budget
    for i, (_score, j, child, p, started, visited) in enumerate(scored):
        if budget <= 0:
            break
        if i != len(scored) - 1:
            next_score = -scored[i + 1][0]
            q = f32(nodes["wl"][child]) if visited else f32(-fpu)
            if next_score > q:
                to_spend = min(budget, int(f32(f32(p * puct_mult / (next_score - q)) - started)) + 1)
            else:
                to_spend = budget
        board.push(to_chess_move(int(tree.edges["move"][first + j])))
        used = _visit(tree, params, child, board, to_spend, cached, sent)
        board.pop()
        budget -= used
        spent += used
    return spent
