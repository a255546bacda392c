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


def past_the_limit(search) -> int:
    """The most visits a ``go nodes`` search may end past its limit: lc0's VisitsStopper is
    asked between iterations, so the iteration that reaches the limit is finished; each
    thread's last minibatch and its out-of-order backups (``search``: an
    engine.search.Search)."""
    params, attributes = search.resources.params, search.resources.attributes
    size = params.batch_size(attributes.max_batch, attributes.preferred_batch)
    out_of_order = max(1, int(params.max_out_of_order_evals_factor * size))
    return params.threads * (size + out_of_order)


def ended_at_limit(nodes: int, limit: int, search) -> bool:
    """Whether a search of ``go nodes limit`` ended as lc0's does: at the limit or past it by
    no more than its last iterations (:func:`past_the_limit`)."""
    return limit <= nodes <= limit + past_the_limit(search)


def run_settled(search, limit):
    """``search.run(limit)`` as the controller runs it (``search``: an engine.search.Search):
    the result from the tree as the run ended (the root's visits then are its nodes), then the
    batches left on the network backed up (lc0's, after the bestmove): each of their visits in
    flight at the root becomes one visit, and every visit is accounted for."""
    result = search.run(limit, settle=False)
    search.state.changed()
    root = search.root
    # The root's own visits in flight are not counted (a path's start): its children's are.
    ended = root.n
    late = int(sum(root.cnif)) if root.expanded else int(root.pending)
    assert ended == result.nodes, (ended, result.nodes)
    search.settle()
    search.state.changed()
    check_consistent(search.state.tree)
    assert int(search.state.tree.nodes["n"][0]) == ended + late, (ended, late, int(search.state.tree.nodes["n"][0]))
    return result
