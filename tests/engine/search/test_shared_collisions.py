"""lc0's shared collisions (search.cc: ``CollectCollisions``, ``CancelSharedCollisions``): a
minibatch's collision visits stay in flight on the paths above their nodes from the end of its
gather until the next backup, whoever's, so that the gathers meanwhile (another thread's, the
prefetch) see those paths busy; then every batch's come out of flight at once."""

from __future__ import annotations

import chess
import numpy as np

from engine.backends.random import RandomNetwork
from engine.search import Limit, Search, from_options
from engine.search import threads as search_threads
from engine.search.core import gather as cgather
from engine.search.core import tree as ctree
from tree_checks import check_consistent


def _path_length(parents: np.ndarray, node: int) -> int:
    """Nodes from ``node`` up to the root, the root left out (its visits are never in flight)."""
    length = 0
    while node >= 0 and parents[node] >= 0:
        length += 1
        node = int(parents[node])
    return length


def _in_flight(tree, batch) -> tuple[int, int]:
    """(the visits in flight the batch's requests hold: one on each node of each path, the
    leaf's included; its collisions': ``k`` on each node above each collision's node)."""
    parents = tree.nodes["parent"]
    requests = int(batch.meta[cgather.REQUESTS]) - int(batch.meta[cgather.PREFETCHED])
    held = sum(_path_length(parents, int(batch.req["node"][r])) for r in range(requests))
    collided = sum(
        int(batch.coll["k"][c]) * _path_length(parents, int(parents[batch.coll["node"][c]]))
        for c in range(int(batch.meta[cgather.COLLISIONS]))
    )
    return held, collided


def test_a_minibatchs_collisions_stay_in_flight_until_the_backup(monkeypatch):
    """One thread: when its gather ends, the tree's visits in flight are exactly its requests'
    and its collisions' (these on the paths above their nodes), and at its next gather's start,
    after its backup, none are left."""
    seen: list[tuple[int, int, int, int]] = []
    real_gather = search_threads.run_gather

    def gather(call) -> None:
        shared, batch = call[0], call[1]
        count = int(shared.tree.count[ctree.NODES])
        before = int(shared.tree.nodes["nif"][:count].sum())
        real_gather(call)
        count = int(shared.tree.count[ctree.NODES])
        held, collided = _in_flight(shared.tree, batch)
        seen.append((before, int(shared.tree.nodes["nif"][:count].sum()), held, collided))

    monkeypatch.setattr(search_threads, "run_gather", gather)
    params = from_options({"Threads": 1, "MinibatchSize": 32, "SmartPruningFactor": 0.0})
    search = Search(RandomNetwork(), params)
    try:
        search.set_position(chess.Board())
        search.run(Limit(nodes=3000))
        check_consistent(search.state.tree)
    finally:
        search.close()
    assert len(seen) > 20
    assert all(before == 0 for before, *_ in seen), "visits in flight at a gather's start"
    assert all(after == held + collided for _, after, held, collided in seen), seen[:5]
    assert sum(collided > 0 for *_, collided in seen) > len(seen) // 2
