"""lc0's Dirichlet noise on the root's priors (``DirichletNoiseEpsilon``, ``DirichletNoiseAlpha``;
search.cc's ApplyDirichletNoise): when a search expands the root, each of its priors becomes
``p * (1 - epsilon) + epsilon * eta / total``, ``eta`` a Gamma(alpha, 1) draw a move and
``total`` their sum, in lc0's float32 steps; the root's edges are then sorted by their new
priors (lc0's SortEdges). A root expanded before (a reused tree) keeps its priors, as in lc0,
which adds the noise only where it extends the root. The NN cache keeps the network's priors.
A training aid (exploration at the root), off by default; draws differ from run to run, as
lc0's."""

from __future__ import annotations

import numpy as np

from engine.search.core import tree as ctree
from engine.search.state import SearchState

F32 = np.float32
_rng = np.random.default_rng()


def add_dirichlet_noise(state: SearchState, epsilon: float, alpha: float) -> None:
    """Mix Dirichlet noise into the root's priors (expanded, with no child yet: just evaluated)
    and sort its edges by the new priors."""
    _mix(state.tree, 0, epsilon, alpha)
    state.changed()  # the reports' views of the root


def _mix(tree: ctree.Tree, node: int, epsilon: float, alpha: float) -> None:
    count = int(tree.nodes["nedges"][node])
    if count == 0 or epsilon <= 0.0:
        return
    first = int(tree.nodes["first"][node])
    edges = tree.edges[first : first + count]
    priors = np.array([ctree.prior(int(v)) for v in edges["prior"]], F32)
    eta = _rng.gamma(alpha, 1.0, count).astype(F32)
    total = F32(0.0)
    for x in eta:  # lc0 sums the draws one by one, in float32
        total = F32(total + x)
    if total < np.finfo(F32).tiny:
        return
    eps = F32(epsilon)
    mixed = (priors * (F32(1.0) - eps) + eps * eta / total).astype(F32)
    compressed = np.empty(count, np.uint16)
    ctree.compress_priors(mixed, compressed, count)
    order = np.argsort(-compressed.astype(np.int32), kind="stable")
    moves = edges["move"][order].copy()
    edges["move"] = moves
    edges["prior"] = compressed[order]
