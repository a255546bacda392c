"""Read-only Python views of the array tree, for what runs once per report rather than per
node: info lines, VerboseMoveStats, best-move choice, smart pruning and the fidelity tools.

A :class:`NodeView` shows one node with the attributes the reports read (n, wl, d, m, moves,
p, cn, cnif, cq, cd, cm, children, terminal, visited_policy), each child's statistics read in
one compiled call when first asked for. :func:`puct_terms` reads a node's PUCT terms through the
compiled selection's own :func:`~engine.search.core.gather.child_scores`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import chess
import numpy as np
from numba import njit

from engine.board.moves import to_chess_move

from .gather import child_scores
from .params import USE_MLH
from .tree import KIND_NAMES, NONE, PENDING, Tree, child, prior


@dataclass(frozen=True)
class TerminalView:
    """Proven outcome of a node, from the view of the player who moved into it."""

    wl: float
    d: float
    m: float
    kind: str


@njit(cache=True)
def _edge_stats(tree, node, out):
    """out float64 [9, k]: move, prior, child, n, nif, wl, d, m, kind of each edge."""
    f = tree.nodes.first[node]
    for j in range(tree.nodes.nedges[node]):
        c = child(tree, node, j)
        out[0, j] = tree.edges.move[f + j]
        out[1, j] = prior(tree.edges.prior[f + j])
        out[2, j] = c
        if c >= 0:
            out[3, j] = tree.nodes.n[c]
            out[4, j] = tree.nodes.nif[c]
            out[5, j] = tree.nodes.wl[c]
            out[6, j] = tree.nodes.d[c]
            out[7, j] = tree.nodes.m[c]
            out[8, j] = tree.nodes.kind[c]
        else:
            for row in range(3, 9):
                out[row, j] = 0.0


@njit(cache=True)
def _puct_terms(tree, params, node, at_root, draw_score, out):
    """out float64 [3, k]: each edge's Q (the FPU when unvisited), Q + M and
    P * cpuct * sqrt(N - 1), as the compiled selection computes them; returns cpuct * sqrt(N - 1)."""
    k = np.int64(tree.nodes.nedges[node])  # int64 as the selection passes it: one compilation
    plain = params.copy()
    plain[USE_MLH] = 0.0  # Q without the moves-left utility
    child_scores(tree, plain, node, at_root, draw_score, k, out[0], out[2])
    return child_scores(tree, params, node, at_root, draw_score, k, out[1], out[2])


class PuctTerms(NamedTuple):
    """A node's PUCT terms by edge: the score of edge i is ``qm[i] + pu[i] / (1 + N_i + nif_i)``."""

    q: np.ndarray
    """Q: W-L + DrawScore * D of a visited child, the FPU of an unvisited one."""
    qm: np.ndarray
    """Q + M (M: the moves-left utility, networks with that head)."""
    pu: np.ndarray
    """P * cpuct(N) * sqrt(max(N - 1, 1))."""
    puct_mult: float
    """cpuct(N) * sqrt(max(N - 1, 1))."""


def puct_terms(
    tree: Tree, params: np.ndarray, node: int, at_root: bool, draw_score: float
) -> PuctTerms:
    """The PUCT terms of ``node``'s edges by the compiled selection (core/gather.py
    ``child_scores``), for the reports; ``params``: the packed parameters (core/params.py)."""
    out = np.zeros((3, int(tree.nodes["nedges"][node])), np.float64)
    mult = _puct_terms(tree, params, int(node), bool(at_root), float(draw_score), out)
    return PuctTerms(out[0], out[1], out[2], float(mult))


class NodeView:
    """One node of an array tree, as the reports read it (see the module docstring)."""

    def __init__(self, tree: Tree, node: int, chess960: bool = False) -> None:
        self._tree = tree
        self.id = node
        self._chess960 = chess960
        self._stats: np.ndarray | None = None
        self._children: list[NodeView | None] | None = None
        self._moves: tuple[chess.Move, ...] | None = None
        self._lists: dict[int, list] = {}

    # Own statistics.
    @property
    def n(self) -> int:
        return int(self._tree.nodes["n"][self.id])

    @property
    def wl(self) -> float:
        return float(self._tree.nodes["wl"][self.id])

    @property
    def d(self) -> float:
        return float(self._tree.nodes["d"][self.id])

    @property
    def m(self) -> float:
        return float(self._tree.nodes["m"][self.id])

    @property
    def parent(self) -> NodeView | None:
        p = int(self._tree.nodes["parent"][self.id])
        return None if p < 0 else NodeView(self._tree, p, self._chess960)

    @property
    def visited_policy(self) -> float:
        return float(self._tree.nodes["vpol"][self.id])

    @property
    def pending(self) -> bool:
        return bool(self._tree.nodes["status"][self.id] & PENDING)

    @property
    def expanded(self) -> bool:
        return int(self._tree.nodes["nedges"][self.id]) > 0

    @property
    def terminal(self) -> TerminalView | None:
        t, i = self._tree, self.id
        if int(t.nodes["kind"][i]) == NONE:
            return None
        return TerminalView(
            float(t.nodes["t_wl"][i]),
            float(t.nodes["t_d"][i]),
            float(t.nodes["t_m"][i]),
            KIND_NAMES[int(t.nodes["kind"][i])],
        )

    # Edges.
    def _edges(self) -> np.ndarray:
        if self._stats is None:
            k = int(self._tree.nodes["nedges"][self.id])
            self._stats = np.zeros((9, k), np.float64)
            if k:
                _edge_stats(self._tree, self.id, self._stats)
        return self._stats

    def _column(self, row: int, integer: bool) -> list:
        cached = self._lists.get(row)
        if cached is None:
            values = self._edges()[row]
            cached = (values.astype(np.int64) if integer else values).tolist()
            self._lists[row] = cached
        return cached

    @property
    def move_words(self) -> list[int]:
        return self._column(0, True)

    @property
    def moves(self) -> tuple[chess.Move, ...]:
        """The legal moves by decreasing prior; empty until the node is expanded."""
        if self._moves is None:
            self._moves = tuple(to_chess_move(m, self._chess960) for m in self.move_words)
        return self._moves

    def move(self, i: int) -> chess.Move:
        """Edge ``i``'s move (one converted, where :attr:`moves` converts them all)."""
        if self._moves is not None:
            return self._moves[i]
        return to_chess_move(self.move_words[i], self._chess960)

    @property
    def edge_count(self) -> int:
        """The node's edges (its legal moves once expanded; 0 before)."""
        return int(self._tree.nodes["nedges"][self.id])

    @property
    def p(self) -> list[float]:
        return self._column(1, False)

    @property
    def cn(self) -> list[int]:
        return self._column(3, True)

    @property
    def cnif(self) -> list[int]:
        return self._column(4, True)

    @property
    def cq(self) -> list[float]:
        return self._column(5, False)

    @property
    def cd(self) -> list[float]:
        return self._column(6, False)

    @property
    def cm(self) -> list[float]:
        return self._column(7, False)

    @property
    def children(self) -> list[NodeView | None]:
        """A view per edge, None where no child was made yet; empty until expanded."""
        if self._children is None:
            self._children = [
                None if c < 0 else NodeView(self._tree, c, self._chess960)
                for c in self._column(2, True)
            ]
        return self._children

    def child(self, i: int) -> NodeView | None:
        """Edge ``i``'s child (None where none was made yet), without a view for every edge."""
        if self._children is not None:
            return self._children[i]
        c = self._column(2, True)[i]
        return None if c < 0 else NodeView(self._tree, c, self._chess960)

    def count_nodes(self) -> int:
        """Nodes in the tree (the root's subtree is the whole tree)."""
        return int(self._tree.count[0])
