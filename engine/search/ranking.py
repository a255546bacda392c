"""Ranking the children of a node: lc0's best-child order (which move is best, the PV, the
smart-pruning leader) and the root move drawn with Temperature."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import numpy as np

from engine.search.core.stoppers import rank_edges
from engine.search.core.view import NodeView

if TYPE_CHECKING:
    from engine.search.state import SearchState


def best_children(
    state: SearchState,
    node: NodeView,
    count: int,
    depth: int = 0,
    mask: np.ndarray | None = None,
) -> list[int]:
    """Edge indices of ``node`` by lc0's GetBestChildrenNoTemperature (the compiled
    :func:`engine.search.core.stoppers.rank_edges`): terminal wins first (shortest), then most
    visits, then higher Q, then higher prior; terminal losses last (longest first). ``mask``:
    the edges that may be ranked (a run's root moves, :class:`engine.search.go.Go`; None: all)."""
    if node.n == 0 or not node.expanded:
        return []
    out = np.zeros(max(0, min(count, node.edge_count)), np.int64)
    flags = np.zeros(0, np.uint8) if mask is None else mask.astype(np.uint8)
    ranked = rank_edges(
        state.tree, np.int64(node.id), state.draw_score(depth), flags, mask is not None, out
    )
    return [int(i) for i in out[:ranked]]


def temperature_choice(state: SearchState, mask: np.ndarray | None = None) -> int | None:
    """A root edge drawn with Temperature (lc0's GetBestChildWithTemperature: visits plus
    TempVisitOffset to the power 1/temperature, among the moves within TempValueCutoff of the
    best Q), or None when the temperature is 0 at this move (then the best child plays).
    Temperature decays over TempDecayMoves after TempDecayDelayMoves, never below
    TempEndgame, and is TempEndgame from TempCutoffMove on."""
    p = state.params
    temperature = p.temperature
    moves_played = state.root_ply // 2
    if p.temp_cutoff_move and moves_played + 1 >= p.temp_cutoff_move:
        temperature = p.temp_endgame
    elif temperature and p.temp_decay_moves:
        if moves_played >= p.temp_decay_delay_moves + p.temp_decay_moves:
            temperature = 0.0
        elif moves_played >= p.temp_decay_delay_moves:
            temperature *= (
                p.temp_decay_delay_moves + p.temp_decay_moves - moves_played
            ) / p.temp_decay_moves
        temperature = max(temperature, p.temp_endgame)
    if temperature <= 0.0:
        return None
    root = state.root
    n = np.array(root.cn, dtype=np.float64)
    cq = np.array(root.cq)
    allowed = n > 0
    if mask is not None:
        allowed &= mask
    if not allowed.any():
        return None
    q = np.where(allowed, cq, -np.inf)
    max_eval = q.max()
    # TempValueCutoff is in win percentage: drop moves much worse than the best.
    allowed &= cq >= max_eval - p.temp_value_cutoff / 50.0
    n = n + p.temp_visit_offset
    allowed &= n > 0
    if not allowed.any():
        return None
    max_n = n[allowed].max()
    w = np.where(allowed, np.power(np.maximum(n, 0) / max_n, 1.0 / temperature), 0.0)
    return int(random.choices(range(len(w)), weights=w.tolist())[0])
