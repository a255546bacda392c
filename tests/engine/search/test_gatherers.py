"""Gathering a minibatch on several threads (``TaskWorkers``, engine/search/core/split.py): a
shared round selects what the search thread alone selects, and the tree stays consistent.

Truth: the same search with one gatherer (the serial selection, itself checked visit for visit
against lc0 and a Python reference in test_core_search.py and test_search_fidelity.py), and
the tree's own invariants (every visit of an expanded node went to one child, nothing left in
flight)."""

from __future__ import annotations

import chess
import numpy as np
import pytest

from engine.backends.random import RandomNetwork
from engine.search import Limit, Search, from_options
from engine.search.core import gather as cgather
from engine.search.core import split as csplit
from engine.search.core import tree as ctree
from engine.search.run import SearchRun
from tree_checks import check_consistent

FENS = (
    chess.STARTING_FEN,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",  # Kiwipete
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",  # few pieces: mates and draws near
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",  # a mate in one among quiet moves
)
OPTIONS = {"SmartPruningFactor": 0.0, "MinibatchSize": 128}

pytestmark = pytest.mark.slow  # the gathering with helpers compiles apart: ~25 s of CPU (docs/performance.md)


@pytest.fixture(scope="module")
def network():
    return RandomNetwork()


def _searched(network, fen: str, nodes: int, helpers: int) -> Search:
    search = Search(network, from_options(OPTIONS | {"TaskWorkers": helpers}))
    search.set_position(chess.Board(fen))
    search.run(Limit(nodes=nodes))
    return search


def _one_gather(search: Search, helpers: int) -> tuple[list[int], np.ndarray]:
    """One minibatch gathered over the search's tree by ``helpers`` + 1 gatherers: the NN-cache
    keys it requests (sorted), and its counts (requests, out-of-order backups, collision
    events)."""
    search.params = from_options(OPTIONS | {"TaskWorkers": helpers})
    run = SearchRun(search.resources, Limit(nodes=10**9))
    batch = run.worker.prepare()[0]
    n, _ = run.worker.gather(batch)
    keys = sorted(int(k) for k in batch.req["key"][:n])
    counts = batch.meta[[cgather.REQUESTS, cgather.OUT_OF_ORDER_DONE, cgather.EVENTS]].copy()
    run.worker.abandon(batch)
    return keys, counts


@pytest.mark.parametrize("fen", FENS[:3])
@pytest.mark.parametrize("helpers", [1, 3])
def test_a_shared_gather_requests_what_one_gatherer_requests(network, fen, helpers):
    # Two searches grown alike (one gatherer: deterministic), then one minibatch from each.
    alone, shared = (_searched(network, fen, 6000, 0) for _ in range(2))
    try:
        keys, counts = _one_gather(alone, 0)
        shared_keys, shared_counts = _one_gather(shared, helpers)
        assert counts[0] >= csplit.MIN_SHARED_VISITS  # a round big enough to be shared
        assert shared_keys == keys
        assert shared_counts.tolist() == counts.tolist()
    finally:
        alone.close()
        shared.close()


def _by_path(tree: ctree.Tree) -> dict[tuple[int, ...], tuple[int, float, float, int]]:
    """Each node's visits, W-L, D and kind by its moves from the root (node numbers differ)."""
    nodes, edges = tree.nodes, tree.edges
    out, stack = {}, [(0, ())]
    while stack:
        node, path = stack.pop()
        out[path] = (int(nodes["n"][node]), float(nodes["wl"][node]), float(nodes["d"][node]),
                     int(nodes["kind"][node]))  # fmt: skip
        first = int(nodes["first"][node])
        for j in range(int(nodes["nedges"][node])):
            child = int(ctree.child(tree, node, j))
            if child >= 0:
                stack.append((child, (*path, int(edges["move"][first + j]))))
    return out


@pytest.mark.parametrize("fen", FENS)
def test_searches_with_task_workers_are_the_same_search(network, fen):
    alone, shared = (_searched(network, fen, 20_000, helpers) for helpers in (0, 2))
    try:
        check_consistent(shared.state.tree)
        check_consistent(alone.state.tree)  # the invariants hold for one gatherer too
        # The same selection, and the backups in the same order (batch.order): every node's
        # visits and values the same to the last bit.
        ours, theirs = _by_path(shared.state.tree), _by_path(alone.state.tree)
        assert len(ours) == len(theirs) == int(alone.state.tree.count[ctree.NODES])
        assert ours == theirs
    finally:
        alone.close()
        shared.close()
