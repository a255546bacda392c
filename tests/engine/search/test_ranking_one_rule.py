"""One ranking of children (issue 40): the compiled rank_edges, which bestmove, the PV, MultiPV
and VerboseMoveStats read through ranking.best_children, orders edges as lc0's
GetBestChildrenNoTemperature, and given room for fewer (the stoppers' best move: room for one)
returns the first of that order; checked against a Python sort of lc0's key on every expanded
node of real search trees."""

from __future__ import annotations

import chess
import numpy as np

from engine.backends.random import RandomNetwork
from engine.search import Limit, Search, from_options
from engine.search.core.stoppers import rank_edges
from engine.search.core.view import NodeView


def _lc0_order(view: NodeView, draw_score: float) -> list[int]:
    keys = []
    for i in range(len(view.moves)):
        n, child = view.cn[i], view.children[i]
        t = child.terminal if (child is not None and n > 0) else None
        if t is not None and t.wl > 0:
            key = (4, -t.m, 0.0, 0.0)
        elif t is not None and t.wl < 0:
            key = (0, t.m, 0.0, 0.0)
        else:
            q = view.cq[i] + draw_score * view.cd[i] if n > 0 else 0.0
            key = (2, n, q, view.p[i])
        keys.append((key, i))
    keys.sort(key=lambda kv: kv[0], reverse=True)  # stable: ties in edge order
    return [i for _, i in keys]


def test_rank_edges_is_lc0s_order_and_fewer_places_its_first():
    fens = ["6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", chess.STARTING_FEN]  # a mate in one, an opening
    checked = 0
    for fen in fens:
        search = Search(RandomNetwork(), from_options({"SmartPruningFactor": 0.0}))
        search.set_position(chess.Board(fen))
        search.run(Limit(nodes=3000))
        tree = search.state.tree
        no_mask = np.zeros(0, np.uint8)
        for node in range(int(tree.count[0])):
            k = int(tree.nodes["nedges"][node])
            if k == 0 or tree.nodes["n"][node] < 2:
                continue
            for ds in (0.0, -0.3):
                out = np.zeros(k, np.int64)
                count = rank_edges(tree, np.int64(node), ds, no_mask, False, out)
                expected = _lc0_order(NodeView(tree, node), ds)
                assert count == k and out.tolist() == expected
                for room in sorted({1, 2, k // 2, k - 1} - {0}):
                    top = np.full(room, -1, np.int64)
                    got = rank_edges(tree, np.int64(node), ds, no_mask, False, top)
                    assert got == min(room, k) and top[:got].tolist() == expected[:room]
                checked += 1
    assert checked > 100


def test_a_mate_is_ranked_first_and_a_mask_keeps_only_allowed_moves():
    search = Search(RandomNetwork(), from_options({"SmartPruningFactor": 0.0}))
    board = chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    search.set_position(board)
    result = search.run(Limit(nodes=2000))
    assert result.bestmove == chess.Move.from_uci("a1a8")
    tree, root = search.state.tree, search.root
    k = len(root.moves)
    mask = np.array([m.uci() != "a1a8" for m in root.moves], np.uint8)
    out = np.zeros(k, np.int64)
    count = rank_edges(tree, np.int64(0), 0.0, mask, True, out)
    assert count == k - 1 and root.moves[int(out[0])].uci() != "a1a8"
    assert sorted(out[:count].tolist()) == [i for i in range(k) if mask[i]]


def test_the_compiled_pv_follows_the_best_child_at_each_level():
    """report.principal_variation (one compiled call, core/stoppers.py's pv_moves) is the walk
    down :func:`_lc0_order` from each root move to the first child not expanded or not visited,
    the draw score's sign alternating with the depth (DrawScore set, Black to move at the root:
    the draw score decides ties of visits; the sign taken the other way round fails this)."""
    from engine.search.report import principal_variation

    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 3 3")
    search = Search(RandomNetwork(), from_options({"SmartPruningFactor": 0.0, "DrawScore": 0.4}))
    search.set_position(board)
    search.run(Limit(nodes=4000))
    state = search.state
    root = state.root
    walked = 0
    for first in range(len(root.moves)):
        expected = [root.move(first)]
        node, depth = root.child(first), 1
        while node is not None and node.expanded and node.n > 0:
            best = _lc0_order(node, state.draw_score(depth))[0]
            expected.append(node.move(best))
            node, depth = node.child(best), depth + 1
        assert principal_variation(state, first) == expected
        walked += len(expected) - 1
    assert walked > 2 * len(root.moves)  # the walks went below the root's children
