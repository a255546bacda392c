"""What the search holds in memory, and RamLimitMb's side of it: the bytes the tree and the NN
cache hold (counted from their arrays, not estimated from the visits), the room reserved for a
limited tree, and the line that says the tree stopped growing."""

from __future__ import annotations

from engine.search.core import cache as ccache
from engine.search.core import tree as ctree
from engine.search.params import SearchParams

MAX_EDGES = 2**31 - 1
"""The edge array's own cap (int32 indices)."""


def held_bytes(tree: ctree.Tree, cache: ccache.Cache) -> int:
    """What the tree and the NN cache hold now (the arrays in use, not their capacity)."""
    return ctree.memory_bytes(tree) + ccache.memory_in_use(cache)


def reserve_for_limit(tree: ctree.Tree, params: SearchParams) -> ctree.Tree:
    """Under RamLimitMb, the tree with room for as many nodes and edges as the limit could hold,
    in address space only (pages become resident as the tree grows into them): a tree that
    doubles while searching holds its old and new arrays at once, which could take RSS past
    the limit. Without the room (a small address space), the tree as it is."""
    limit = params.ram_limit_bytes
    if limit <= 0:
        return tree
    nodes = min(limit // ctree.BYTES_PER_NODE, params.max_tree_nodes)
    edges = min(limit // ctree.BYTES_PER_EDGE, MAX_EDGES)
    try:
        return ctree.reserve(
            tree, max(0, nodes - int(tree.count[ctree.NODES])),
            max(0, edges - int(tree.count[ctree.EDGES])),
        )  # fmt: skip
    except MemoryError:
        return tree  # it grows by doubling, as without a limit


def full_message(nodes: int, params: SearchParams, held: int) -> str:
    """The tree stopped growing: RamLimitMb's limit, or the int32 indices' (2**31 nodes)."""
    held_mb = f"tree and NN cache about {held / 1e6:.1f} MB"
    if nodes >= params.max_tree_nodes:
        return f"the tree's index limit (2**31 nodes): search stopped at {nodes} nodes ({held_mb})"
    limit = params.ram_limit_bytes // 1_000_000
    return f"RamLimitMb: search stopped at {nodes} nodes ({held_mb}, the limit {limit} MB)"
