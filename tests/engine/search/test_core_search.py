"""The search (its compiled core) against a plain reference of lc0's PUCT search
(reference_mcts.py) visit for visit, and its parts against independent truths: python-chess
for the positions along the tree, the network itself for the reported values."""

from __future__ import annotations

import threading
import time

import chess
import numpy as np
import pytest

from engine.backends.random import RandomNetwork
from engine.encoding import encode_batch
from engine.search.core.view import NodeView
from engine.search.report import verbose_stats
from engine.search import Limit, Search, from_options
from engine.search.core import cache as ccache
from engine.search.core import tree as ctree

from reference_mcts import search as reference_search

QUIET = [
    chess.STARTING_FEN,
    "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
    "r2q1rk1/pp2bppp/2n1pn2/3p4/3P4/2NBPN2/PP3PPP/R2Q1RK1 b - - 0 10",
]


def visits(search) -> dict[str, int]:
    root = search.root
    return {m.uci(): int(n) for m, n in zip(root.moves, root.cn) if n} if root.expanded else {}


def tree_visits(view, ref) -> list[tuple[str, int, int]]:
    """(path, core visits, reference visits) of every node either tree has, depth first."""
    out = []
    stack = [("", view, ref)]
    while stack:
        path, v, r = stack.pop()
        out.append((path, v.n if v is not None else 0, r.n if r is not None else 0))
        moves = dict(zip(v.moves, v.children)) if v is not None and v.expanded else {}
        ref_moves = dict(zip(r.moves, r.children)) if r is not None and r.moves else {}
        for move in set(moves) | set(ref_moves):
            stack.append((f"{path} {move.uci()}", moves.get(move), ref_moves.get(move)))
    return sorted(out)


@pytest.mark.parametrize("fen", QUIET)
def test_same_tree_as_the_reference_search_at_minibatch_one(fen):
    """Every node's visits equal the reference's after 800 visits (MinibatchSize=1 and one
    batch in flight, where lc0's search is one PUCT descent a visit); the values of the
    root's children too. No prefetch: a prefetched position enters the NN cache with the
    history of the path that prefetched it, which the reference does not model."""
    net = RandomNetwork()
    params = from_options(
        {"SmartPruningFactor": 0.0, "MinibatchSize": 1, "Threads": 1, "MaxPrefetch": 0}
    )
    board = chess.Board(fen)
    search = Search(net, params)
    try:
        search.set_position(board)
        result = search.run(Limit(nodes=800))
        ref = reference_search(board, net, params, 800)
        assert result.nodes == ref.n == 800
        got = tree_visits(search.root, ref)
        assert [(p, a) for p, a, _ in got] == [(p, b) for p, _, b in got]
        ref_q = {m.uci(): c.wl for m, c in zip(ref.moves, ref.children) if c is not None and c.n}
        core_q = {
            m.uci(): q for m, q, n in zip(search.root.moves, search.root.cq, search.root.cn) if n
        }
        assert core_q.keys() == ref_q.keys()
        for move, q in ref_q.items():
            assert core_q[move] == pytest.approx(q, abs=1e-6)
    finally:
        search.close()


def test_every_node_has_the_legal_moves_of_its_position():
    """Each expanded node of a 3,000-node tree, reached from a game with castling rights and
    history, has exactly python-chess's legal moves of the position its path leads to."""
    board = chess.Board("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")
    board.push_uci("a2a4")  # en passant for b4 at the root
    search = Search(RandomNetwork(), from_options({"SmartPruningFactor": 0.0}))
    try:
        search.set_position(board)
        search.run(Limit(nodes=3000))
        checked = 0
        stack = [(search.root, board.copy())]
        while stack:
            node, position = stack.pop()
            if not node.expanded:
                continue
            assert set(node.moves) == set(position.legal_moves), position.fen()
            # One edge at a time (the reports' PV) as all at once, from a view that has none yet.
            fresh = NodeView(search.state.tree, node.id, position.chess960)
            assert fresh.edge_count == len(node.moves)
            assert [fresh.move(i) for i in range(fresh.edge_count)] == list(node.moves)
            ids = [None if c is None else c.id for c in node.children]
            assert [getattr(fresh.child(i), "id", None) for i in range(len(ids))] == ids
            checked += 1
            for move, child in zip(node.moves, node.children):
                if child is not None and child.expanded:
                    after = position.copy(stack=False)
                    after.push(move)
                    stack.append((child, after))
        assert checked > 100
    finally:
        search.close()


def test_stop_ends_an_infinite_search_at_once():
    search = Search(RandomNetwork(), from_options({}))
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
    search = Search(RandomNetwork(), from_options({"SmartPruningFactor": 0.0}))
    search.set_position(chess.Board())
    allowed = (chess.Move.from_uci("a2a3"), chess.Move.from_uci("h2h3"))
    result = search.run(Limit(nodes=400, searchmoves=allowed))
    assert result.bestmove in allowed
    assert set(visits(search)) <= {m.uci() for m in allowed}
    search.close()


def test_keep_subtree_copies_the_statistics():
    search = Search(RandomNetwork(), from_options({"SmartPruningFactor": 0.0}))
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


def _tree_as_values(tree, node=0):
    """A subtree as plain values, children in edge order: what a copy must give alike."""
    nodes = tree.nodes
    first, k = int(nodes["first"][node]), int(nodes["nedges"][node])
    edges = [(int(tree.edges["move"][first + j]), int(tree.edges["prior"][first + j]))
             for j in range(k)] if k > 0 else []  # fmt: skip
    kids = [ctree.child(tree, node, j) for j in range(k)] if k > 0 else []
    own = tuple(nodes[f][node].item() for f in ("n", "nif", "wl", "d", "m", "kind", "vpol"))
    return own, edges, [None if c < 0 else _tree_as_values(tree, c) for c in kids]


def test_keep_subtree_into_a_used_trees_arrays_gives_what_fresh_arrays_give():
    search = Search(RandomNetwork(), from_options({"SmartPruningFactor": 0.0}))
    search.set_position(chess.Board())
    search.run(Limit(nodes=3000))
    tree = search.state.tree
    i = int(np.argmax(search.root.cn))
    child = search.root.children[i].id
    fresh = ctree.keep_subtree(tree, child)
    # Arrays full of another search's nodes: the copy must leave nothing of them in its tree.
    other = Search(RandomNetwork(seed=7), from_options({"SmartPruningFactor": 0.0}))
    other.set_position(
        chess.Board("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")
    )
    other.run(Limit(nodes=6000))
    used = other.state.tree
    kept = ctree.keep_subtree(tree, child, into=used)
    assert kept.nodes is used.nodes and kept.edges is used.edges
    assert [int(c) for c in kept.count[:3]] == [int(c) for c in fresh.count[:3]]
    assert _tree_as_values(kept) == _tree_as_values(fresh) == _tree_as_values(tree, child)
    # The source itself, or arrays too small for twice the subtree, are never written over.
    assert ctree.keep_subtree(tree, child, into=tree).nodes is not tree.nodes
    small = ctree.new_tree(16, 64)
    assert ctree.keep_subtree(tree, child, into=small).nodes is not small.nodes
    search.close()
    other.close()


def test_nn_cache_finds_evicts_and_bounds_its_entries():
    cache = ccache.new_cache(64)
    moves = np.arange(30, dtype=np.int32)
    priors = np.array([ctree.compress_prior(p) for p in np.linspace(1, 0, 30)], np.uint16)
    # float32 values and an int32 count, as the search inserts a network's outputs: the machine
    # code the search runs, from the warm-up's cache
    f, count = np.float32, np.int32(30)
    for key in range(1, 200):
        ccache.insert(cache, np.uint64(key), f(0.5), f(0.25), f(7.0), moves, priors, count)
    live = [k for k in range(1, 200) if ccache.lookup(cache, np.uint64(k)) >= 0]
    assert 0 < len(live) <= 64 and 199 in live  # the newest is always there
    slot = ccache.lookup(cache, np.uint64(199))
    got_m = np.empty(256, np.int32)
    got_p = np.empty(256, np.uint16)
    assert ccache.read_moves(cache, slot, got_m, got_p) == 30
    assert (got_m[:30] == moves).all() and (got_p[:30] == priors).all()
    assert ccache.lookup(cache, np.uint64(1)) == -1  # overwritten long ago
    disabled = ccache.new_cache(0)
    ccache.insert(disabled, np.uint64(5), f(0.0), f(0.0), f(0.0), moves, priors, count)
    assert ccache.lookup(disabled, np.uint64(5)) == -1


def _scan_every_probe(cache, key: int) -> int:
    """The NN cache's lookup without its early end: every probe of the key's set read."""
    slots = len(cache.entries)
    ring = len(cache.ring)
    home = ((key >> 32) * slots) >> 32  # the key's high half scaled to the table
    for p in range(ccache.PROBES):
        s = (home + p) % slots
        entry = cache.entries[s]
        live = entry["start"] >= cache.meta[ccache.WRITE] - ring
        if int(entry["key"]) == key and live:
            return s
    return -1


def test_nn_cache_lookup_ends_at_a_never_filled_slot_and_finds_what_a_full_scan_finds():
    """Keys crowded onto few homes (so sets overlap and fill), entries of every size (so the
    ring makes some stale and their slots are taken again): each lookup, which stops at the
    first slot never filled, answers as a scan of all PROBES slots does."""
    rng = np.random.default_rng(65)
    cache = ccache.new_cache(48)
    slots = len(cache.entries)
    moves = np.arange(256, dtype=np.int32)
    priors = np.zeros(256, np.uint16)
    f = np.float32
    inserted: list[int] = []
    for step in range(600):
        # One of six neighbouring homes (the high half), one of 40 keys there (the low half).
        high = ((int(rng.integers(0, 6)) << 32) + slots - 1) // slots
        key = (high << 32) | int(rng.integers(1, 40))
        count = np.int32(rng.integers(1, 120))
        ccache.insert(cache, np.uint64(key), f(0.1), f(0.2), f(3.0), moves, priors, count)
        inserted.append(key)
        for probe in set(inserted[-30:]) | {key + 1000}:
            assert ccache.lookup(cache, np.uint64(probe)) == _scan_every_probe(cache, probe), step
    assert any(ccache.lookup(cache, np.uint64(k)) >= 0 for k in inserted[-5:])


def test_verbose_move_stats_show_the_network_values():
    """VerboseMoveStats' (V: …) column is the network's value of the position after each
    visited move (from the mover's view), read from the NN cache: the same as evaluating the
    position directly."""
    net = RandomNetwork()
    board = chess.Board()
    search = Search(net, from_options({"SmartPruningFactor": 0.0, "MinibatchSize": 7}))
    lines: list[str] = []
    search.set_position(board)
    search.run(Limit(nodes=300), on_verbose=lines.extend, verbose=True)
    checked = 0
    for line in lines:
        move = line.split()[0]
        value = line.split("(V:")[1].split(")")[0].strip()
        if move == "node" or value == "-.----":
            continue
        after = board.copy()
        after.push_uci(move)
        q = float(net.evaluate(encode_batch([after])).q[0])
        assert float(value) == pytest.approx(-q, abs=6e-5), move
        checked += 1
    assert checked > 5
    # One node down (lc0's "Opponent moves after" lines): the position after two moves.
    best = chess.Move.from_uci(lines[-2].split()[0])
    replies = verbose_stats(search.state, (best,))
    assert replies[-1].startswith("node ") and len(replies) == 1 + after_count(board, best)
    checked = 0
    for line in replies[:-1]:
        value = line.split("(V:")[1].split(")")[0].strip()
        if value == "-.----":
            continue
        after = board.copy()
        after.push(best)
        after.push_uci(line.split()[0])
        q = float(net.evaluate(encode_batch([after])).q[0])
        assert float(value) == pytest.approx(-q, abs=6e-5), line
        checked += 1
    assert checked > 3
    search.close()


def after_count(board: chess.Board, move: chess.Move) -> int:
    after = board.copy()
    after.push(move)
    return after.legal_moves.count()


class StridedOutputs(RandomNetwork):
    """The random network's outputs as non-contiguous views (as a backend may return them)."""

    def evaluate(self, planes):
        out = super().evaluate(planes)
        spread = lambda a: np.repeat(a, 2, axis=0)[::2]  # noqa: E731  (same values, strided)
        return type(out)(spread(out.policy), spread(out.q), spread(out.d), spread(out.m))


def test_backend_outputs_in_any_memory_layout_give_the_same_search():
    """The expansion is called straight at its machine code (engine/search/core/calls.py), so
    the search hands it contiguous arrays whatever the backend returns: strided outputs give
    the tree contiguous ones give."""
    trees = []
    for net in (RandomNetwork(), StridedOutputs()):
        search = Search(net, from_options({"SmartPruningFactor": 0.0, "Threads": 1}))
        search.set_position(chess.Board())
        search.run(Limit(nodes=500))
        trees.append(tree_visits(search.root, None))
        search.close()
    assert trees[0] == trees[1]
    assert not StridedOutputs().evaluate(np.zeros((3, 112, 8, 8), np.float32)).q.flags.c_contiguous


def test_priors_take_lc0s_16_bits_exactly_as_its_definition_says():
    """lc0's Edge::SetP/GetP, done here by bit operations, against the definition worked out
    with frexp/ldexp: the float32's exponent less 96 in 5 bits, its mantissa rounded to 11
    bits, 0 below 2^-31; and GetP gives back exactly 2^(e - 31) * (1 + m / 2048)."""
    import math

    rng = np.random.default_rng(5)
    p = np.concatenate(
        [
            rng.random(20_000),
            10.0 ** rng.uniform(-12, 0, 20_000),
            [0.0, 1.0, 2.0**-31, 2.0**-32, 0.5, 1 - 2.0**-24],
        ]
    ).astype(np.float32)
    got = np.empty(len(p), np.uint16)
    ctree.compress_priors(p, got, np.int32(len(p)))  # the search's types: numba's cached code
    for x, v in zip(p.tolist(), got.tolist()):
        if x <= 0.0:
            assert v == 0
            continue
        m, e = math.frexp(x)
        expected = ((e + 126 - 96) << 11) + int((2.0 * m - 1.0) * 2048.0 + 0.5)
        assert v == min(max(expected, 0), 65535), (x, v, expected)
    for v in range(0, 1 << 16, 7):
        assert ctree.prior(np.uint16(v)) == math.ldexp(1.0 + (v & 2047) / 2048.0, (v >> 11) - 31)
