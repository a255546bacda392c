"""The tree's invariants after a search, for the tests: every visit accounted for."""

from __future__ import annotations

import numpy as np

from engine.search.core import tree as ctree


def check_consistent(tree: ctree.Tree) -> None:
    """Nothing in flight or waiting for the network, every child linked under its parent, and
    each expanded node's visits its own evaluation plus one for each of its children's."""
    count = int(tree.count[ctree.NODES])
    nodes = tree.nodes[:count]
    assert (nodes["nif"] == 0).all(), "visits left in flight"
    assert not (nodes["status"] & ctree.PENDING).any(), "a node left waiting for the network"
    children = np.arange(1, count)
    parents = nodes["parent"][1:]
    assert (parents >= 0).all() and (parents < children).all()
    slots = nodes["kids"][parents] + nodes["pedge"][1:] - nodes["first"][parents]
    assert (nodes["kids"][parents] >= 0).all(), "a parent without its children's block"
    assert (tree.kids[slots] == children).all(), "a lost child link"
    below = np.zeros(count, np.int64)
    np.add.at(below, parents, nodes["n"][1:])
    inner = (nodes["nedges"] > 0) & (nodes["kind"] == ctree.NONE) & (nodes["n"] > 0)
    # An expanded node's visits: its own evaluation, then one child each.
    bad = np.nonzero(nodes["n"][inner] != below[inner] + 1)[0]
    assert bad.size == 0, f"a visit lost or counted twice at {bad.size} nodes"
