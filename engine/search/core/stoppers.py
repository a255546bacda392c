"""When the search over the compiled core stops (lc0's src/search/classic/stoppers/): node
(visits, or playouts with NodesAsPlayouts), time, depth and mate limits, the KLD gain and smart
pruning, and the root filter that smart pruning's hint sets. As lc0's stoppers: they read the
search's statistics (one :class:`RootSummary` of the root, compiled, and the counters) and
return a decision and a hint, nothing else; the one with a memory of its own, the KLD gain's
(:class:`KldGain`), is its run's, as lc0 makes its stoppers anew for each ``go``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numba import njit

from engine.search.limit import Limit
from engine.search.params import SearchParams

from .calls import direct
from .layout import Layout
from .tree import NONE, child, prior
from .view import NodeView

ROOT_SUMMARY = Layout("root summary", "BEST FIRST_N SECOND_N MOVES LOST WON MATE")
"""The root as the stoppers read it (:func:`_summary`): the best edge, the two largest visit
counts, the moves searched, the moves proven lost, a move proven won, the plies to the mate
the best move proves (-1: none)."""
BEST, FIRST_N, SECOND_N, MOVES, LOST, WON, MATE = ROOT_SUMMARY.indices(
    "BEST FIRST_N SECOND_N MOVES LOST WON MATE"
)

SMART_PRUNING_TOLERANCE_MS = 200
SMART_PRUNING_TOLERANCE_NODES = 300
"""lc0's SmartPruningStopper tolerances (stoppers.cc)."""


@njit(cache=True)
def _better(a_group, a1, a2, a3, b_group, b1, b2, b3):
    if a_group != b_group:
        return a_group > b_group
    if a1 != b1:
        return a1 > b1
    if a2 != b2:
        return a2 > b2
    return a3 > b3


@njit(cache=True)
def _rank_key(tree, node, f, j, draw_score):
    """lc0's best-child key of edge ``j`` (first edge ``f``): group (4 a proven win, 2 unproven,
    0 a proven loss), then shorter wins, more visits, higher Q, higher prior; longer losses."""
    c = child(tree, node, j)
    n = tree.nodes.n[c] if c >= 0 else 0
    proven = c >= 0 and n > 0 and tree.nodes.kind[c] != NONE
    if proven and tree.nodes.t_wl[c] > 0:
        return 4, -tree.nodes.t_m[c], 0.0, 0.0
    if proven and tree.nodes.t_wl[c] < 0:
        return 0, tree.nodes.t_m[c], 0.0, 0.0
    q = tree.nodes.wl[c] + draw_score * tree.nodes.d[c] if n > 0 else 0.0
    return 2, np.float64(n), q, prior(tree.edges.prior[f + j])


@njit(cache=True)
def rank_edges(tree, node, draw_score, mask, use_mask, out):
    """The best ``len(out)`` (allowed) edges of ``node``, best first by lc0's
    GetBestChildrenNoTemperature, ties in edge order, into ``out`` (int64); returns how many.
    The one ranking of children: the stoppers' best move (``out`` of one: a single pass),
    bestmove, the PV, MultiPV and VerboseMoveStats."""
    f = tree.nodes.first[node]
    room = len(out)
    count = 0
    for j in range(tree.nodes.nedges[node]):
        if use_mask and mask[j] == 0:
            continue
        # int64 edges and first edge: one compilation of _rank_key.
        g, k1, k2, k3 = _rank_key(tree, node, np.int64(f), np.int64(j), draw_score)
        at = count  # insertion into the best so far: stable; root nodes have at most 218 edges
        while at > 0:
            o = out[at - 1]
            og, o1, o2, o3 = _rank_key(tree, node, np.int64(f), np.int64(o), draw_score)
            if not _better(g, k1, k2, k3, og, o1, o2, o3):
                break
            if at < room:
                out[at] = o
            at -= 1
        if at < room:
            out[at] = j
            count = min(count + 1, room)
    return count


@njit(cache=True)
def pv_moves(tree, first, draw_scores, out):
    """The principal variation from the root's edge ``first``: the move words of that edge and
    then of the best child (:func:`rank_edges`, ``draw_scores[depth % 2]``) of each node below
    that is expanded and visited, into ``out`` (int64); returns how many, ``len(out)`` where it
    may go on. One call a report, where a ranking a ply cost an info line about 100 µs."""
    top = np.empty(1, np.int64)
    no_mask = np.zeros(0, np.uint8)
    out[0] = tree.edges.move[tree.nodes.first[0] + first]
    count = 1
    node = child(tree, np.int64(0), np.int64(first))
    while count < len(out) and node >= 0 and tree.nodes.nedges[node] > 0:
        if tree.nodes.n[node] == 0:
            break
        if rank_edges(tree, np.int64(node), draw_scores[count % 2], no_mask, False, top) == 0:
            break
        out[count] = tree.edges.move[tree.nodes.first[node] + top[0]]
        node = child(tree, np.int64(node), np.int64(top[0]))
        count += 1
    return count


@njit(cache=True)
def _summary(tree, draw_score, mask, use_mask, out):
    """The root's summary into ``out`` int64 [:data:`ROOT_SUMMARY`]."""
    top = np.empty(1, np.int64)
    best = top[0] if rank_edges(tree, np.int64(0), draw_score, mask, use_mask, top) else -1
    first_n, second_n, moves, lost, won = 0, 0, 0, 0, 0
    for j in range(tree.nodes.nedges[0]):
        if use_mask and mask[j] == 0:
            continue
        moves += 1
        c = child(tree, np.int64(0), np.int64(j))
        n = tree.nodes.n[c] if c >= 0 else 0
        if n > first_n:
            first_n, second_n = n, first_n
        elif n > second_n:
            second_n = n
        if c >= 0 and n > 0 and tree.nodes.kind[c] != NONE:
            lost += tree.nodes.t_wl[c] < 0.0
            won = won or tree.nodes.t_wl[c] > 0.0
    mate = -1
    if best >= 0:
        c = child(tree, np.int64(0), np.int64(best))
        if c >= 0 and tree.nodes.kind[c] != NONE and tree.nodes.t_wl[c] > 0:
            mate = int(round(tree.nodes.t_m[c]))
    out[BEST], out[FIRST_N], out[SECOND_N], out[MOVES] = best, first_n, second_n, moves
    out[LOST], out[WON], out[MATE] = lost, won, mate


@njit(cache=True)
def root_filter(tree, best, remaining, mask, use_mask, out):
    """Root moves worth visits: allowed by ``mask`` and able to reach the best move's visits
    in the ``remaining`` playouts (lc0's pruning in selection); the best always stays."""
    c = child(tree, np.int64(0), np.int64(best))
    best_n = tree.nodes.n[c] if c >= 0 else 0
    for j in range(tree.nodes.nedges[0]):
        c = child(tree, np.int64(0), np.int64(j))
        n = tree.nodes.n[c] if c >= 0 else 0
        out[j] = (j == best or remaining >= best_n - n) and (not use_mask or mask[j] != 0)


class RootSummary(NamedTuple):
    """What the stoppers read of the root (see :func:`summarize`). A named tuple: one is made
    every minibatch."""

    expanded: bool
    visits: int
    best: int
    """Edge of the best move by lc0's ranking (-1: none)."""
    first_visits: int
    """Visits of the most visited move; second_visits: of the runner-up."""
    second_visits: int
    moves: int
    lost: int
    won: bool
    mate_plies: int


_NO_MASK = np.zeros(0, np.uint8)
_summary_direct = direct(_summary)


def summarize(tree, draw_score: float, mask: np.ndarray | None) -> RootSummary:
    """The root's summary; ``mask`` (bool or uint8 [root edges]): the moves allowed."""
    out = ROOT_SUMMARY.new()
    use = mask is not None
    m = _NO_MASK if mask is None else mask.view(np.uint8)
    expanded = int(tree.nodes["nedges"][0]) > 0
    if expanded:
        _summary_direct(tree, float(draw_score), m, use, out)
    # By the layout's constants, not ROOT_SUMMARY.read: this runs before every minibatch (and
    # one tolist, not an int() a slot).
    values = out.tolist()
    return RootSummary(
        expanded,
        int(tree.nodes["n"][0]),
        values[BEST] if expanded else -1,
        values[FIRST_N],
        values[SECOND_N],
        values[MOVES],
        values[LOST],
        bool(values[WON]),
        values[MATE],
    )


def root_edge_visits(tree) -> np.ndarray:
    """The visits of every root edge, in edge order, searchmoves or not (lc0's
    ``IterationStats::edge_n``), uint32: the reports' edge statistics (core/view.py)."""
    return np.array(NodeView(tree, 0).cn, np.uint32)


def kld_gain(prev: np.ndarray, prev_nodes: float, new: np.ndarray, new_nodes: float) -> float:
    """lc0's KldGainStopper sum, in its order and its doubles: the KL divergence of the root's
    previous visit distribution (``prev`` edge visits of ``prev_nodes`` child visits) from its
    new one, over the edges visited before. A share that fell to 0 gives lc0's inf."""
    gain = 0.0
    for o, n in zip(prev.tolist(), new.tolist(), strict=True):
        o_p = o / prev_nodes
        n_p = n / new_nodes
        if o != 0:
            gain += o_p * math.log(o_p / n_p) if n_p != 0.0 else math.inf
    return gain


class KldGain:
    """lc0's KldGainStopper (MinimumKLDGainPerNode, KLDGainAverageInterval) over one run: once
    the root's child visits (the root's visits less its own) have grown by the interval since
    the last look, the KL divergence gain of their distribution per node since then
    (:func:`kld_gain`) is compared with the minimum, and the search stops below it; the first
    look only records the distribution. ``edge_visits``: the root's edge visits now
    (:func:`root_edge_visits`), read only at a look."""

    def __init__(self, min_gain: float, interval: int, edge_visits: Callable[[], np.ndarray]):
        self.min_gain = float(np.float32(min_gain))  # lc0: the option's float, held as a double
        self.interval = int(interval)
        self.edge_visits = edge_visits
        self.prev_visits: np.ndarray | None = None
        self.prev_child_nodes = 0.0
        self.stopped = False
        """It ended the search (lc0 logs "Stopping search: KLDGain per node too small.")."""

    def should_stop(self, total_nodes: int) -> bool:
        """lc0's ShouldStop at ``total_nodes`` root visits (lc0's ``stats.total_nodes``)."""
        new_child_nodes = total_nodes - 1.0
        if new_child_nodes < self.prev_child_nodes + self.interval:
            return False
        new_visits = self.edge_visits()
        prev = self.prev_visits
        if prev is not None and len(prev) == len(new_visits):
            gain = kld_gain(prev, self.prev_child_nodes, new_visits, new_child_nodes)
            if gain / (new_child_nodes - self.prev_child_nodes) < self.min_gain:
                self.stopped = True
                return True
        self.prev_visits, self.prev_child_nodes = new_visits, new_child_nodes
        return False


def kld_stopper(
    limit: Limit, params: SearchParams, edge_visits: Callable[[], np.ndarray]
) -> KldGain | None:
    """A run's KLD gain stopper, where lc0 adds one (PopulateIntrinsicStoppers): a minimum
    above 0 (as a float) and a ``go`` that is not infinite, ponder or mate."""
    if not np.float32(params.minimum_kld_gain_per_node) > 0.0:
        return None
    if limit.until_stop or limit.mate is not None:
        return None
    return KldGain(params.minimum_kld_gain_per_node, params.kld_gain_average_interval, edge_visits)


class Progress(NamedTuple):
    """The search's counters as the stoppers read them (made every minibatch)."""

    elapsed_ms: float
    playouts: int
    depth_sum: int
    batches: int
    first_eval_ms: float | None
    memory_bytes: int = 0
    """What the tree and the NN cache hold (only read under RamLimitMb)."""


def time_up(limit: Limit, elapsed_ms: float, root_visits: int) -> bool:
    """Whether the time is up: the budget, or before the root's first evaluation the ceiling
    (lc0's MaybeTriggerStop never stops an unexpanded root; this one stops before the flag,
    MoveOverheadMs before it)."""
    t = limit.budget_ms
    if root_visits == 0 and limit.ceiling_ms is not None and t is not None:
        t = max(t, limit.ceiling_ms)
    return t is not None and not limit.until_stop and elapsed_ms >= t


def nodes_left(
    limit: Limit, params: SearchParams, root: RootSummary, progress: Progress
) -> int | None:
    """What ``go nodes`` has left (None: no node limit): the root's visits to reach it (lc0's
    VisitsStopper, a reused tree's visits counted), or with NodesAsPlayouts this search's
    playouts (lc0's PlayoutsStopper)."""
    if limit.nodes is None:
        return None
    return limit.nodes - (progress.playouts if params.nodes_as_playouts else root.visits)


def limit_reached(
    limit: Limit,
    params: SearchParams,
    root: RootSummary,
    progress: Progress,
    kld: KldGain | None = None,
) -> tuple[bool, float, float | None]:
    """(stop?, playouts expected to remain (lc0's StoppersHints; inf: unknown), the time of
    the first evaluation as smart pruning now knows it). ``kld``: the run's KLD gain stopper
    (:func:`kld_stopper`), asked in lc0's order: after the limits, before smart pruning."""
    hint = math.inf
    first_eval = progress.first_eval_ms
    left = nodes_left(limit, params, root, progress)
    if left is not None and params.smart_pruning_factor > 0.0:
        # A float always: the compiled root filter takes it, and an int would compile it twice.
        hint = float(max(left, 0))
    if left is not None and left <= 0:
        return True, hint, first_eval
    if root.visits >= params.max_tree_nodes or time_up(limit, progress.elapsed_ms, root.visits):
        return True, hint, first_eval
    if 0 < params.ram_limit_bytes <= progress.memory_bytes:
        return True, hint, first_eval
    if (
        limit.depth is not None
        and root.visits > 1
        and progress.depth_sum / max(progress.playouts, 1) >= limit.depth
    ):
        return True, hint, first_eval
    if limit.mate is not None and root.mate_plies >= 0:
        mate = root.mate_plies // 2 + 1
        if 0 < mate <= limit.mate:
            return True, hint, first_eval
    if limit.until_stop:
        return False, hint, first_eval
    if kld is not None and kld.should_stop(root.visits):
        return True, hint, first_eval
    return _smart_prune(limit, params, root, progress, hint, left)


def _smart_prune(
    limit: Limit,
    params: SearchParams,
    root: RootSummary,
    progress: Progress,
    hint: float,
    left: int | None,
) -> tuple[bool, float, float | None]:
    """lc0's SmartPruningStopper, in its order: one legal move, at most one move that does not
    lose, a proven win; then, from SMART_PRUNING_TOLERANCE_MS after the first evaluation and
    SmartPruningMinimumBatches batches on, stop when the second-best move cannot catch up
    with the best in the playouts left (each divided by SmartPruningFactor)."""
    first_eval = progress.first_eval_ms
    if params.smart_pruning_factor <= 0.0 or not root.expanded:
        return False, hint, first_eval
    if root.moves <= 1 or root.moves <= root.lost + 1 or root.won:
        return True, hint, first_eval
    elapsed = progress.elapsed_ms
    if first_eval is None:
        return False, hint, (elapsed if progress.playouts > 0 else None)
    if elapsed < first_eval + SMART_PRUNING_TOLERANCE_MS:
        return False, hint, first_eval
    remaining = math.inf
    if left is not None:
        remaining = left / params.smart_pruning_factor
    if limit.budget_ms is not None:
        nps_limit = np.float32(params.nps_limit)
        if nps_limit > 0.0:  # lc0's hint: NodesPerSecondLimit is the nodes/s to count on
            nps = float(nps_limit)
        else:
            nodes = progress.playouts + SMART_PRUNING_TOLERANCE_NODES
            nps = 1000.0 * nodes / max(elapsed - first_eval, 1e-3) + 1
        remaining = min(
            remaining, (limit.budget_ms - elapsed) / 1000.0 * nps / params.smart_pruning_factor
        )
    if math.isinf(remaining):
        return False, hint, first_eval
    if progress.batches < params.smart_pruning_minimum_batches:
        return False, remaining, first_eval
    return remaining < root.first_visits - root.second_visits, remaining, first_eval
