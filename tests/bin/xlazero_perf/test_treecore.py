"""The array tree prototype (xlazero_perf.treecore) against a plain-Python PUCT descent written
here, and against the bookkeeping every backed-up tree must satisfy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from xlazero_perf import treecore as tc

WIDTH = 48
CAPACITY = 20_000


def _host(tree: tc.Tree) -> dict[str, np.ndarray]:
    return {name: np.asarray(getattr(tree, name)) for name in tc.Tree._fields}


def reference_path(t: dict[str, np.ndarray], extra: dict[int, int]) -> list[int]:
    """One descent by the PUCT rule the module documents, in float64 Python; ``extra``: the
    virtual visits of this minibatch's earlier descents."""
    def in_flight(i: int) -> int:
        return int(t["in_flight"][i]) + extra.get(i, 0)

    node, path = 0, [0]
    while t["first_child"][node] >= 0:
        first, count = int(t["first_child"][node]), int(t["num_children"][node])
        kids = range(first, first + count)
        parent_n = int(t["visits"][node]) + in_flight(node)
        cpuct = tc.CPUCT + tc.CPUCT_FACTOR * math.log((parent_n + tc.CPUCT_BASE) / tc.CPUCT_BASE)
        parent_q = -float(t["value"][node]) / max(int(t["visits"][node]), 1)
        fpu = parent_q - tc.FPU_REDUCTION * math.sqrt(
            sum(float(t["prior"][c]) for c in kids if t["visits"][c] > 0))
        sqrt_n = math.sqrt(max(parent_n - 1, 1))

        def score(c: int) -> float:
            n = int(t["visits"][c])
            q = float(t["value"][c]) / n if n > 0 else fpu
            return q + cpuct * float(t["prior"][c]) * sqrt_n / (1 + n + in_flight(c))

        node = max(kids, key=score)  # the first of equal scores, as argmax
        path.append(node)
    return path


def _grow(minibatches: int, batch: int, seed: int = 0):
    """Yield (tree before select, paths, depths, collided, values) for each minibatch while
    growing a tree with fake evaluations; the tree after the last is returned by StopIteration."""
    rng = np.random.default_rng(seed)
    tree = tc.empty_tree(CAPACITY, WIDTH)
    for _ in range(minibatches):
        before = _host(tree)
        tree, paths, depths, collided = tc.select(tree, batch, WIDTH)
        priors, counts, values = tc.fake_evaluations(rng, batch, WIDTH, mean_children=20)
        yield before, np.asarray(paths), np.asarray(depths), np.asarray(collided), values
        tree = tc.expand_and_backup(tree, paths, depths, collided, priors, counts, values, WIDTH)
        assert int(tree.size) <= CAPACITY, "the prototype does not check its capacity: raise it"
    return tree


@pytest.mark.parametrize("batch", [1, 7, 32])
def test_descents_equal_a_python_puct_descent(batch):
    descents = 0
    for before, paths, depths, collided, _ in _grow(25, batch):
        extra: dict[int, int] = {}
        for b in range(batch):
            want = reference_path(before, extra)
            got = paths[b, :depths[b] + 1].tolist()
            assert got == want, (b, got, want)
            assert (paths[b, depths[b] + 1:] == -1).all()
            leaf = want[-1]
            assert bool(collided[b]) == (int(before["in_flight"][leaf]) + extra.get(leaf, 0) > 0)
            for node in want:
                extra[node] = extra.get(node, 0) + 1
            descents += 1
    assert descents == 25 * batch


def test_backed_up_tree_keeps_its_books():
    """After every minibatch is backed up: nothing in flight; each expanded node's visits are
    its own evaluation plus its children's; its value is its own evaluation's (the mover's
    view: minus the network's value at the leaf) minus its children's; unexpanded nodes are
    unvisited; children blocks follow one another and point back to their parent."""
    own: dict[int, float] = {}
    gen = _grow(40, 7, seed=1)
    new_descents = 0
    try:
        while True:
            before, paths, depths, collided, values = next(gen)
            for b in range(len(values)):
                if not collided[b]:
                    own[int(paths[b, depths[b]])] = -float(values[b])
                    new_descents += 1
    except StopIteration as done:
        t = _host(done.value)
    assert (t["in_flight"] == 0).all()
    assert t["visits"][0] == new_descents
    size = int(t["size"])
    expected_next = 1
    for node in range(size):
        first, count = int(t["first_child"][node]), int(t["num_children"][node])
        if first < 0:
            assert t["visits"][node] == 0 and node not in own
            continue
        kids = np.arange(first, first + count)
        assert (t["parent"][kids] == node).all()
        assert t["visits"][node] == 1 + t["visits"][kids].sum()
        assert t["value"][node] == pytest.approx(own[node] - t["value"][kids].sum(), abs=1e-4)
        assert np.all(np.diff(t["prior"][kids]) <= 0)
        expected_next = max(expected_next, first + count)
    assert expected_next == size


def test_a_minibatch_on_a_bare_root_collides_after_its_first_descent():
    tree = tc.empty_tree(64, WIDTH)
    tree, paths, depths, collided = tc.select(tree, 4, WIDTH)
    assert np.asarray(depths).tolist() == [0, 0, 0, 0]
    assert np.asarray(collided).tolist() == [False, True, True, True]
    assert int(tree.in_flight[0]) == 4
