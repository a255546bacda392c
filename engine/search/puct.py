"""PUCT's formulas as lc0's classic search (search.cc: ComputeCpuct, GetFpu, GetMUtility), for
the reports (VerboseMoveStats); the compiled selection (core/gather.py) computes the same.

cpuct(N) = CPuct + CPuctFactor * ln((N + CPuctBase) / CPuctBase)
U_i      = cpuct(N) * sqrt(max(N - 1, 1)) * P_i / (1 + N_i + n_in_flight_i)
Q_i      = WL_i + draw_score * D_i          for visited children (N_i > 0)
         = fpu                              otherwise
fpu      = -Q_parent - FpuValue * sqrt(sum of P over visited children)     (reduction)
         = FpuValue                                                       (absolute)
S_i      = Q_i + U_i + M_i   (M_i: moves-left utility, networks with that head)
"""

from __future__ import annotations

import math

import numpy as np

from engine.search.core.view import NodeView
from engine.search.params import SearchParams


def compute_cpuct(params: SearchParams, n: int, at_root: bool) -> float:
    """cpuct for a node with ``n`` completed visits."""
    init, base, factor = params.cpuct_params(at_root)
    return init + (factor * math.log((n + base) / base) if factor else 0.0)


def compute_fpu(params: SearchParams, node: NodeView, at_root: bool, draw_score: float) -> float:
    """First-play urgency: the value assumed for the node's unvisited children."""
    if params.fpu_absolute_at_root if at_root else params.fpu_absolute:
        return params.fpu_value_at_root if at_root else params.fpu_value
    value = params.fpu_value_at_root if at_root else params.fpu_value
    # lc0: -node->GetQ(-draw_score) - value * sqrt(visited_policy)
    return -(node.wl - draw_score * node.d) - value * math.sqrt(node.visited_policy)


def moves_left_utility(params: SearchParams, node: NodeView, q: np.ndarray) -> np.ndarray | None:
    """lc0's MEvaluator.GetMUtility for the first ``len(q)`` children (None when it does not
    apply at this node).

    Applies when |Q| of the node exceeds MovesLeftThreshold; favours shorter wins and longer losses.
    Unvisited children get 0.
    """
    thr = params.moves_left_threshold
    if abs(node.wl) <= thr:
        return None
    k = len(q)
    m = np.clip(
        params.moves_left_slope * (np.asarray(node.cm[:k]) - node.m),
        -params.moves_left_max_effect,
        params.moves_left_max_effect,
    )
    m = m * np.sign(-q)
    aq = np.abs(q)
    if 0.0 < thr < 1.0:
        aq = np.maximum(0.0, aq - thr) / (1.0 - thr)
    m = m * (
        params.moves_left_constant_factor
        + params.moves_left_scaled_factor * aq
        + params.moves_left_quadratic_factor * aq * aq
    )
    return np.where(np.asarray(node.cn[:k]) > 0, m, 0.0)
