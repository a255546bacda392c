"""PUCT selection as lc0's classic search (search.cc: ComputeCpuct, GetFpu, PickNodesToExtendTask).

cpuct(N) = CPuct + CPuctFactor * ln((N + CPuctBase) / CPuctBase)
U_i      = cpuct(N) * sqrt(max(N - 1, 1)) * P_i / (1 + N_i + n_in_flight_i)
Q_i      = WL_i + draw_score * D_i          for visited children (N_i > 0)
         = fpu                              otherwise
fpu      = -Q_parent - FpuValue * sqrt(sum of P over visited children)     (reduction)
         = FpuValue                                                       (absolute)
S_i      = Q_i + U_i + M_i   (M_i: moves-left utility, networks with that head)
"""

from __future__ import annotations

import heapq
import math
from collections.abc import MutableSequence, Sequence

import numpy as np

from engine.search.node import Node
from engine.search.params import SearchParams


def compute_cpuct(params: SearchParams, n: int, at_root: bool) -> float:
    """cpuct for a node with ``n`` completed visits."""
    init, base, factor = params.cpuct_params(at_root)
    return init + (factor * math.log((n + base) / base) if factor else 0.0)


def compute_fpu(params: SearchParams, node: Node, at_root: bool, draw_score: float) -> float:
    """First-play urgency: the value assumed for the node's unvisited children."""
    if params.fpu_absolute_at_root if at_root else params.fpu_absolute:
        return params.fpu_value_at_root if at_root else params.fpu_value
    value = params.fpu_value_at_root if at_root else params.fpu_value
    # lc0: -node->GetQ(-draw_score) - value * sqrt(visited_policy)
    return -(node.wl - draw_score * node.d) - value * math.sqrt(node.visited_policy)


def moves_left_utility(params: SearchParams, node: Node, q: np.ndarray) -> np.ndarray | None:
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


def child_scores(
    params: SearchParams,
    node: Node,
    at_root: bool,
    draw_score: float,
    use_mlh: bool,
    limit: int | None = None,
) -> tuple[list[float], list[float], float]:
    """(Q+M per child, P * puct_mult per child, puct_mult) of an expanded node, for its first
    ``limit`` children (default: all).

    The PUCT score is ``qm + pu / (1 + cn + cnif)``. Plain lists: see :mod:`.node`.
    """
    cpuct = compute_cpuct(params, node.n, at_root)
    puct_mult = cpuct * math.sqrt(max(node.n - 1, 1))
    fpu = compute_fpu(params, node, at_root, draw_score)
    visits, values, priors = node.cn, node.cq, node.p
    if limit is not None and limit < len(visits):
        visits, values, priors = visits[:limit], values[:limit], priors[:limit]
    if draw_score:
        q = [wl + draw_score * d if n > 0 else fpu for n, wl, d in zip(visits, values, node.cd)]
    else:  # the common case, without a multiplication by zero per child
        q = [wl if n > 0 else fpu for n, wl in zip(visits, values)]
    if use_mlh:
        mu = moves_left_utility(params, node, np.array(q))
        if mu is not None:
            q = (np.array(q) + mu).tolist()
    return q, [puct_mult * prior for prior in priors], puct_mult


def selection_width(node: Node, visits: int) -> int:
    """How many of ``node``'s first children selection must score to hand out ``visits``.

    Children from ``node.touched`` on have no visits, none in flight, and decreasing priors,
    so the first of them has the best score among them (ties go to the lowest index), and
    each visit handed out can reach at most one of them; one more is needed as the
    runner-up that bounds multi-visit picking."""
    return min(len(node.cn), node.touched + visits + 1)


def assign_visits(
    qm: Sequence[float],
    pu: Sequence[float],
    cn: Sequence[int],
    cnif: MutableSequence[int],
    visits: int,
    mask: Sequence[bool] | None = None,
) -> dict[int, int]:
    """Share ``visits`` among children as lc0's multi-visit picking does.

    The best child takes as many visits as it can before its score falls below the second best's;
    ``cnif`` (visits in flight) is increased in place by what each child receives. ``mask`` (root
    searchmoves) excludes children. Returns child index -> visits, in the order first given.
    Ties go to the lowest index (as numpy's argmax). Pure Python: nodes have ~30 children and
    the loop runs once per child that gets visits, where numpy's per-call cost dominates.
    """
    score = [q + u / (1.0 + n + f) for q, u, n, f in zip(qm, pu, cn, cnif)]
    if visits == 1 and mask is None:  # the most common call (about half): just the argmax
        best = score.index(max(score))
        cnif[best] += 1
        return {best: 1}
    if mask is not None:
        score = [s if allowed else -math.inf for s, allowed in zip(score, mask)]
    out: dict[int, int] = {}
    k = len(score)
    # A heap of (-score, index): its top is numpy's argmax (the lowest index among equal
    # scores) and the second best is one of the top's two children, so each step costs
    # O(log k) instead of two scans of every child (the root takes hundreds of steps a batch).
    heap = [(-s, i) for i, s in enumerate(score)]
    heapq.heapify(heap)
    while visits > 0:
        best = heap[0][1]
        take = 1
        if visits > 1 and k > 1:
            # Second-best score, counting a tie with the best.
            neg_second = heap[1][0] if k == 2 or heap[1][0] <= heap[2][0] else heap[2][0]
            second = -neg_second
            qb, pb = qm[best], pu[best]
            denom = 1.0 + cn[best] + cnif[best]
            if second <= qb:
                take = visits  # U only shrinks towards Q, which already beats the second best
            else:
                # Largest t with qb + pb / (denom + t - 1) >= second: the t-th visit still wins.
                take = int(pb / (second - qb) - denom) + 1
            take = max(1, min(take, visits))
        elif visits > 1:
            take = visits
        out[best] = out.get(best, 0) + take
        cnif[best] += take
        visits -= take
        if visits:
            heapq.heapreplace(heap, (-(qm[best] + pu[best] / (1.0 + cn[best] + cnif[best])), best))
    return out
