"""What the search reports: info lines (as lc0's SendUciInfo) and the VerboseMoveStats lines
(as lc0's GetVerboseStats). Plain values; the UCI layer formats them."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import chess
import numpy as np

from engine.board.moves import to_chess_move
from engine.search.core import stoppers as cstop
from engine.search.core.params import pack
from engine.search.core.view import NodeView, puct_terms
from engine.search.memory import held_bytes
from engine.search.ranking import best_children
from engine.search.result import SearchResult, ThinkingInfo

if TYPE_CHECKING:
    from engine.search.go import Go, Tally
    from engine.search.limit import Limit
    from engine.search.state import SearchState

WDL_MU_FALLBACK = 0.996
"""lc0: report centipawns instead of WDL mu when |WL| + D exceeds this."""

WDL_MAX_S = 1.4
"""lc0's WDLMaxS default (bounds the WDL scale)."""


def wdl_mu(wl: float, d: float) -> float:
    """lc0's WDLRescale (no contempt): the logistic model's mu of a WDL, 0 when too extreme."""
    w = (1.0 + wl - d) / 2.0
    l = (1.0 - wl - d) / 2.0
    eps = 1e-4
    if not (eps < w < 1 - eps and eps < d < 1 - eps and eps < l < 1 - eps):
        return 0.0
    a = math.log(1.0 / l - 1.0)
    b = math.log(1.0 / w - 1.0)
    return (a - b) / (a + b)


def score_cp(
    score_type: str, wl: float, d: float, q: float, has_wdl: bool, mu: float | None = None
) -> int:
    """Centipawn score by lc0's ScoreType (default WDL_mu: 100*mu when reasonable; ``mu``:
    lc0's, from :func:`reported_wdl`, else the exact one of ``wl`` and ``d``)."""
    if score_type == "centipawn_with_drawscore":
        s = 90 * math.tan(1.5637541897 * q)
    elif score_type == "centipawn":
        s = 90 * math.tan(1.5637541897 * wl)
    elif score_type == "centipawn_2019":
        s = 295 * wl / (1 - 0.976953126 * wl**14)
    elif score_type == "centipawn_2018":
        s = 290.680623072 * math.tan(1.548090806 * wl)
    elif score_type == "win_percentage":
        s = wl * 5000 + 5000
    elif score_type == "Q":
        s = q * 10000
    elif score_type == "W-L":
        s = wl * 10000
    else:  # WDL_mu
        mu = wdl_mu(wl, d) if mu is None else mu
        cp = 45 * math.tan(1.56728071628 * wl)
        use_mu = (
            has_wdl
            and mu != 0.0
            and abs(wl) + d < WDL_MU_FALLBACK
            and (abs(mu) < 1.0 or abs(cp) < abs(100 * mu))
        )
        s = 100 * mu if use_mu else cp
    # lc0 assigns the float to ThinkingInfo's int score: truncated toward zero (201.9 is 201).
    return int(s)


def wdl_permille(wl: float, d: float) -> tuple[int, int, int]:
    """W, D, L in per mille summing to 1000 (lc0's rounding)."""
    w = max(0, int(round(500.0 * (1.0 + wl - d))))
    l = max(0, int(round(500.0 * (1.0 - wl - d))))
    dd = 1000 - w - l
    if dd < 0:
        w = min(1000, max(0, w + dd // 2))
        l = 1000 - w
        dd = 0
    return w, dd, l


def reported_wdl(state: SearchState, wl: float, d: float) -> tuple[float, float, float | None]:
    """(W - L, D, mu) of a root move (``wl`` in the view of the side to move at the root) as
    lc0's info line reports them: with ScoreType WDL_mu or a contempt side, the WDL rescaling
    taken back (WDLEvalObjectivity of it; engine/search/contempt.py) in lc0's arithmetic;
    otherwise as they are (mu None)."""
    rescale = state.wdl_rescale
    if state.params.score_type != "WDL_mu" and rescale.diff == 0.0:
        return wl, d, None
    return rescale.reported(wl, d)


def make_infos(state: SearchState, go: Go, tally: Tally) -> list[ThinkingInfo]:
    """One ThinkingInfo per principal variation (MultiPV) of the run of ``go`` that has done
    ``tally``."""
    root = state.root
    p = state.params
    st = state.stats(go, tally)
    common: dict[str, Any] = dict(
        depth=st.average_depth,
        seldepth=st.max_depth,
        time_ms=int(st.elapsed_ms),
        nodes=st.nodes,
        nps=st.nps,
        eps=st.eps,
        hashfull=st.hashfull,
        tbhits=st.tb_hits,
    )
    draw_score = state.draw_score(0)
    default_wl, default_d = -root.wl, root.d
    infos = []
    edges = best_children(state, root, p.multipv, mask=go.mask)
    if not edges and root.n > 0:
        q = default_wl + draw_score * default_d
        wl, d, mu = reported_wdl(state, default_wl, default_d)
        infos.append(
            ThinkingInfo(
                **common,
                score_cp=score_cp(p.score_type, wl, d, q, state.network.has_wdl, mu),
                mate=None,
                wdl=wdl_permille(wl, d),
                multipv=None,
                pv=(),
            )
        )
    for rank, i in enumerate(edges, 1):
        visited = root.cn[i] > 0
        wl = float(root.cq[i]) if visited else default_wl
        d = float(root.cd[i]) if visited else default_d
        q = wl + draw_score * d
        wl, d, mu = reported_wdl(state, wl, d)
        child = root.child(i)
        mate = None
        if (
            visited
            and child is not None
            and child.terminal is not None
            and wl != 0.0
            and child.terminal.kind != "tablebase"
        ):
            mate = int(math.copysign(round(child.terminal.m) // 2 + 1, wl))
        moves_left = None
        if state.network.has_mlh:
            m = float(root.cm[i]) if visited else 1.0 + root.m
            moves_left = int((1.0 + m) / 2.0)
        info = dict(common)
        if p.per_pv_counters:
            info["nodes"] = int(root.cn[i])
        infos.append(
            ThinkingInfo(
                **info,
                score_cp=None
                if mate is not None
                else score_cp(p.score_type, wl, d, q, state.network.has_wdl, mu),
                mate=mate,
                wdl=wdl_permille(wl, d),
                multipv=rank if p.multipv > 1 else None,
                pv=tuple(principal_variation(state, i)),
                moves_left=moves_left,
            )
        )
    return infos


def principal_variation(state: SearchState, first: int) -> list[chess.Move]:
    """Root move ``first`` followed by the best child at each level (compiled:
    :func:`engine.search.core.stoppers.pv_moves`)."""
    draw_scores = np.array([state.draw_score(0), state.draw_score(1)], np.float64)
    size = 64
    while True:
        words = np.empty(size, np.int64)
        count = cstop.pv_moves(state.tree, np.int64(first), draw_scores, words)
        if count < size:
            break
        size *= 4  # a PV deeper than the buffer: again with room for it
    chess960 = state.root_board.chess960
    return [to_chess_move(w, chess960) for w in words[:count].tolist()]


def verbose_stats(state: SearchState, path: tuple[chess.Move, ...] = ()) -> list[str]:
    """lc0's VerboseMoveStats lines (GetVerboseStats) for the root, or with ``path`` a root
    move for the node after it (lc0's "Opponent moves after" lines): worst move first, best
    last, then the node line. Empty for a root not yet expanded, or a move with no node."""
    from engine import encoding

    root = state.root
    node: NodeView = root
    board = state.root_board
    if not path:
        if not root.expanded:
            return []
    else:
        i = root.moves.index(path[0]) if path[0] in root.moves else -1
        child = root.child(i) if i >= 0 else None
        if child is None:
            return []
        node = child
        board = board.copy(stack=False)
        board.push(path[0])
    at_root = not path
    draw_score = state.draw_score(len(path))
    lines = []
    moves = node.moves if node.expanded else ()
    if moves:
        packed = pack(state.params, bool(state.network.has_mlh))
        terms = puct_terms(state.tree, packed, node.id, at_root, draw_score)  # the selection's
        cn, cnif = node.cn, node.cnif
        q = terms.q
        u = terms.pu / (1.0 + np.asarray(cn, dtype=np.float64) + np.asarray(cnif))
        s = terms.qm + u
        indices = encoding.policy_indices(board, 1)
        p = node.p
        for i in sorted(range(len(moves)), key=lambda i: (cn[i], q[i] + u[i])):
            move = moves[i]
            head = _head(board.uci(move), indices.get(move, -1), int(cn[i]), int(cnif[i]), p[i])
            child = node.child(i)
            if child is not None and child.n > 0:
                stats = _stats(state, child.wl, child.d, child.m, draw_score)
            else:
                stats = f"(WL:  -.-----) (D: -.---) (M:  -.-) (Q: {q[i]:8.5f}) "  # the FPU
            tail = f"(U: {u[i]:6.5f}) (S: {s[i]:8.5f}) "
            lines.append(head + stats + tail + _value(state, child, (*path, move), 1.0, draw_score))
    # lc0 prints each move's index left-aligned (its stream set to std::left) and the node
    # line's, a fresh stream's, right-aligned: "node  (  20)".
    head = _head("node ", len(moves), node.n, sum(node.cnif), node.visited_policy, ">")
    lines.append(
        head
        + _stats(state, -node.wl, node.d, node.m, draw_score)
        + _value(state, node, path, -1.0, draw_score)
    )
    return lines


def _head(label: str, index: int, n: int, nif: int, prior: float, align: str = "<") -> str:
    pct = f"{prior * 100:5.1f}" if prior >= 0.99995 else f"{prior * 100:5.2f}"
    return f"{label:<5} ({index:{align}4}) N: {n:7d} (+{nif:2d}) (P: {pct}%) "


def _stats(state: SearchState, wl: float, d: float, m: float, draw_score: float) -> str:
    """WL, D, M and Q of a root move (or of the root, ``wl`` in the root's mover's view) as
    lc0 prints them: WL and D with the WDL rescaling taken back (lc0 does so at any setting)."""
    wl, d, _ = state.wdl_rescale.reported(wl, d)
    q = wl + draw_score * d
    return f"(WL: {wl:8.5f}) (D: {d:5.3f}) (M: {m:4.1f}) (Q: {q:8.5f}) "


def _value(
    state: SearchState,
    node: NodeView | None,
    path: tuple[chess.Move, ...],
    sign: float,
    draw_score: float,
) -> str:
    """(V: …): the network's own value of the position after the root's moves ``path`` (from
    the cache), its terminal value, or -.----."""
    v = None
    if node is not None and node.terminal is not None:
        t = node.terminal
        v = t.wl + sign * draw_score * t.d
    elif node is not None:
        q = state.network_q(path)
        if q is not None:
            v = -q
    text = f"(V: {sign * v:7.4f}) " if v is not None else "(V:  -.----) "
    if node is not None and node.terminal is not None:
        text += "(T) "
    return text


def stop_reason(state: SearchState, limit: Limit, result: SearchResult) -> str | None:
    """Why the run to ``limit`` that gave ``result`` stopped, as lc0's stoppers log it
    (stoppers.cc), read after the run from what it left (the root, its visits, its time):
    the first of the stoppers' checks (core/stoppers.py ``limit_reached``, then the time)
    that holds. None for a run until stop (the stop command says why) and where no stopper's
    limit holds (the run failed: it said so)."""
    if limit.until_stop or result.nodes == 0:
        return None
    p, nodes = state.params, result.nodes
    if result.kld_stopped:
        return "Stopping search: KLDGain per node too small."
    if p.nodes_as_playouts and limit.nodes is not None and result.playouts >= limit.nodes:
        return f"Stopped search: Reached playouts limit: {result.playouts}>={limit.nodes}"
    for cap in (None if p.nodes_as_playouts else limit.nodes, p.max_tree_nodes):
        if cap is not None and nodes >= cap:
            return f"Stopped search: Reached visits limit: {nodes}>={cap}"
    if p.ram_limit_bytes > 0:
        held = held_bytes(state.tree, state.cache.arrays)
        if held >= p.ram_limit_bytes:
            limit_mb = p.ram_limit_bytes // 1_000_000
            return f"Stopped search: Reached RAM limit: {held // 1_000_000}MB>={limit_mb}MB"
    info = result.infos[0] if result.infos else None
    if limit.depth is not None and info is not None and info.depth >= limit.depth:
        return "Stopped search: Reached depth."
    if limit.mate is not None and info is not None and info.mate is not None:
        if 0 < info.mate <= limit.mate:
            return "Stopped search: Found mate."
    if limit.budget_ms is not None and result.time_ms >= limit.budget_ms:
        return "Stopping search: Ran out of time."
    return _pruned(state, limit) if p.smart_pruning_factor > 0.0 else None


def _pruned(state: SearchState, limit: Limit) -> str | None:
    """lc0's SmartPruningStopper's words for the root the run left (its immediate stops; else
    the visits of the two best moves: the playouts it expected to remain are the run's own)."""
    mask = None
    if limit.searchmoves:
        allowed = np.array([m in limit.searchmoves for m in state.root.moves or ()], bool)
        mask = allowed if allowed.any() else None
    root = cstop.summarize(state.tree, state.draw_score(0), mask)
    if not root.expanded:
        return None
    if root.moves <= 1:
        return "Only one possible move. Moving immediately."
    if root.moves <= root.lost + 1:
        return "At most one non losing move, stopping search."
    if root.won:
        return "Terminal win found, stopping search."
    if limit.nodes is None and limit.budget_ms is None:
        return None  # nothing to prune against: no stopper of lc0's holds
    first, second = root.first_visits, root.second_visits
    return (
        f"Best move has {first} visits, second best -- {second}. Difference is "
        f"{first - second}, so stopping the search (smart pruning)."
    )
