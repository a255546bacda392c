"""The search over the compiled core against the Python search, which lc0's own root statistics
validate (test_search_fidelity.py): with the same deterministic network and options, both must
build the same tree, visit for visit."""

from __future__ import annotations

import threading
import time

import chess
import numpy as np
import pytest

from engine.backends.random import RandomNetwork
from engine.search import Limit, from_options
from engine.search.core import cache as ccache
from engine.search.core import tree as ctree
from engine.search.core.search import CoreSearch
from engine.search.search import Search

POSITIONS = [
    chess.STARTING_FEN,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "r2q1rk1/pP1p2pp/Q4n2/bbp1p3/Np6/1B3NBn/pPPP1PPP/R3K2R b KQ - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1",  # mate in one: terminals, certainty propagation
    "8/8/8/4k3/8/8/8/4K2R w K - 0 1",  # few pieces: draws by material after captures
]


def game_with_repetitions() -> chess.Board:
    """Knights out and back twice: repetitions in the history and in the tree."""
    board = chess.Board()
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"]:
        board.push_uci(uci)
    return board


def visits(search) -> dict[str, int]:
    root = search.root
    return {m.uci(): int(n) for m, n in zip(root.moves, root.cn) if n} if root.expanded else {}


def run_both(board: chess.Board, nodes: int, **options) -> tuple[dict, dict, int, int]:
    net = RandomNetwork()
    params = from_options({"SmartPruningFactor": 0.0, **options})
    out = []
    for cls in (Search, CoreSearch):
        search = cls(net, params)
        try:
            search.set_position(board)
            result = search.run(Limit(nodes=nodes))
            out.append((visits(search), result.nodes, result.bestmove))
        finally:
            search.close()
    (py, py_nodes, py_best), (core, core_nodes, core_best) = out
    assert core_best == py_best
    return py, core, py_nodes, core_nodes


@pytest.mark.parametrize("minibatch", [7, 32])
@pytest.mark.parametrize("fen", POSITIONS)
def test_same_tree_as_the_python_search(fen, minibatch):
    py, core, py_nodes, core_nodes = run_both(chess.Board(fen), 1500, MinibatchSize=minibatch)
    assert core_nodes == py_nodes
    assert core == py


def test_same_tree_with_repetitions_in_the_game():
    py, core, _, _ = run_both(game_with_repetitions(), 2000, MinibatchSize=7)
    assert core == py


def test_tree_reuse_keeps_the_same_subtree():
    """Search, play the best move and a reply, search again: both searches reuse the subtree
    and continue it alike (go nodes counts the reused visits)."""
    net = RandomNetwork()
    params = from_options({"SmartPruningFactor": 0.0, "MinibatchSize": 7})
    results = []
    for cls in (Search, CoreSearch):
        search = cls(net, params)
        board = chess.Board()
        search.set_position(board)
        first = search.run(Limit(nodes=3000))
        board.push(first.bestmove)
        board.push(first.ponder)
        reused = search.set_position(board)
        kept = search.root.n
        second = search.run(Limit(nodes=kept + 1000))
        results.append((reused, kept, visits(search), second.bestmove))
        search.close()
    assert results[0][0] and results[1][0]
    assert results[1] == results[0]


def test_stop_ends_an_infinite_search_at_once():
    search = CoreSearch(RandomNetwork(), from_options({}))
    search.set_position(chess.Board())
    out = {}
    thread = threading.Thread(target=lambda: out.setdefault("r", search.run(Limit(infinite=True))))
    thread.start()
    time.sleep(0.3)
    stopped = time.monotonic()
    search.stop()
    thread.join(5)
    assert not thread.is_alive() and time.monotonic() - stopped < 0.5
    result = out["r"]
    assert result.bestmove in chess.Board().legal_moves and result.nodes > 100
    search.close()


def test_searchmoves_limit_the_root():
    search = CoreSearch(RandomNetwork(), from_options({"SmartPruningFactor": 0.0}))
    search.set_position(chess.Board())
    allowed = (chess.Move.from_uci("a2a3"), chess.Move.from_uci("h2h3"))
    result = search.run(Limit(nodes=400, searchmoves=allowed))
    assert result.bestmove in allowed
    assert set(visits(search)) <= {m.uci() for m in allowed}
    search.close()


def test_keep_subtree_copies_the_statistics():
    search = CoreSearch(RandomNetwork(), from_options({"SmartPruningFactor": 0.0}))
    search.set_position(chess.Board())
    search.run(Limit(nodes=2000))
    tree = search.state.tree
    root = search.root
    i = int(np.argmax(root.cn))
    child = root.children[i]
    before = (child.n, child.wl, child.cn, child.cq, child.moves)
    kept = ctree.keep_subtree(tree, child.id)
    view = type(root)(kept, 0)
    assert (view.n, view.wl, view.cn, view.cq, view.moves) == before
    assert int(kept.count[0]) < int(tree.count[0])
    search.close()


def test_nn_cache_finds_evicts_and_bounds_its_entries():
    cache = ccache.new_cache(64)
    moves = np.arange(30, dtype=np.int32)
    priors = np.linspace(1, 0, 30).astype(np.float32)
    for key in range(1, 200):
        ccache.insert(cache, np.uint64(key), 0.5, 0.25, 7.0, moves, priors, 30)
    live = [k for k in range(1, 200) if ccache.lookup(cache, np.uint64(k)) >= 0]
    assert 0 < len(live) <= 64 and 199 in live  # the newest is always there
    slot = ccache.lookup(cache, np.uint64(199))
    got_m = np.empty(256, np.int32)
    got_p = np.empty(256, np.float32)
    assert ccache.read_moves(cache, slot, got_m, got_p) == 30
    assert (got_m[:30] == moves).all() and (got_p[:30] == priors).all()
    assert ccache.lookup(cache, np.uint64(1)) == -1  # overwritten long ago
    disabled = ccache.new_cache(0)
    ccache.insert(disabled, np.uint64(5), 0.0, 0.0, 0.0, moves, priors, 30)
    assert ccache.lookup(disabled, np.uint64(5)) == -1


def test_verbose_move_stats_show_the_same_network_values():
    """VerboseMoveStats' (V: …) column reads the network's value from the NN cache: the same
    values for the root and each visited move as the Python search's."""
    net = RandomNetwork()
    params = from_options({"SmartPruningFactor": 0.0, "MinibatchSize": 7})
    columns = []
    for cls in (Search, CoreSearch):
        lines: list[str] = []
        search = cls(net, params)
        search.set_position(chess.Board())
        search.run(Limit(nodes=300), on_verbose=lines.extend, verbose=True)
        search.close()
        columns.append([line.split("(V:")[1].split(")")[0].strip() for line in lines])
    values = [v for v in columns[1] if v != "-.----"]
    assert len(values) > 5  # the root and its visited moves have one
    assert columns[1] == columns[0]
