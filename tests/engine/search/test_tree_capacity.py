"""The tree's room (issue 42): under RamLimitMb a search reserves, at once, room for as many
nodes and edges as the limit could hold, so it never doubles (holding its old and new arrays
together) on the way to the limit."""

from __future__ import annotations

import chess

from engine.backends.random import RandomNetwork
from engine.search import Limit, Search, from_options
from engine.search.core.tree import BYTES_PER_EDGE, BYTES_PER_NODE, NODE_CAPACITY


def test_a_capped_search_reserves_its_whole_tree_before_it_grows():
    params = from_options({"SmartPruningFactor": 0.0, "RamLimitMb": 1000})
    search = Search(RandomNetwork(), params)
    search.set_position(chess.Board())
    search.run(Limit(nodes=500))
    tree = search.state.tree
    assert len(tree.nodes) >= params.ram_limit_bytes // BYTES_PER_NODE
    assert len(tree.edges) >= params.ram_limit_bytes // BYTES_PER_EDGE
    assert int(tree.count[0]) < 2_000  # the room is address space, the tree is what it is


def test_an_uncapped_search_keeps_the_default_room():
    search = Search(RandomNetwork(), from_options({"SmartPruningFactor": 0.0}))
    search.set_position(chess.Board())
    search.run(Limit(nodes=500))
    assert len(search.state.tree.nodes) == NODE_CAPACITY
