"""The search tree: nodes with their edges' statistics stored as arrays at the parent.

lc0 keeps each child's N, WL, D, M in the child node and walks edges one by one. Here a node stores
its children's statistics in plain Python lists (one entry per legal move) next to each other, so
that scoring the ~30 children of a node is one list comprehension; each child node mirrors its
own entry as scalars. Lists, not numpy arrays: for this many children the fixed cost of each numpy
call (~1 us) is larger than the loop itself, and backups write single entries, which is slow on
arrays (a numpy scalar per access).

Perspective (as lc0's Node): a node's ``wl`` is W-L from the view of the player who made the move
*into* the node, so a parent maximises its children's ``wl``. ``m`` is the expected number of plies
left from the node.
"""

from __future__ import annotations

from array import array

import chess


class Terminal:
    """Proven outcome of a node, from the view of the player who moved into it."""

    __slots__ = ("wl", "d", "m", "kind")

    def __init__(self, wl: float, d: float, m: float, kind: str) -> None:
        self.wl = wl
        self.d = d
        self.m = m
        # "mate", "stalemate", "rule50", "material", "threefold", "twofold", "proven",
        # "tablebase" (a table's WDL, or proven from one: not a mate distance)
        self.kind = kind


_NO_PRIORS: array = array("f")
_NO_INTS: list[int] = []
_NO_FLOATS: list[float] = []
_NO_CHILDREN: list[Node | None] = []


class Node:
    """A position in the tree.

    Own statistics (scalars): n (completed visits), wl, d, m (running averages).
    After expansion, per edge i (k = number of legal moves, sorted by prior):
      moves[i]  chess.Move            p[i]    prior (softmax of policy logits, PolicyTemperature;
                                              float32, an array.array: 4 bytes a move)
      cn[i]     child completed visits cnif[i] child visits in flight   (lists of int)
      cq[i]     child wl               cd[i]   child d          cm[i]  child m   (lists of float)
      children[i] Node or None (not yet visited)
    (all empty before expansion)
    ``touched``: one past the highest edge that has ever had a visit or a visit in flight. The
    edges from there on have none, so (sorted by prior) the first of them scores best among
    them: selection scores only the edges before ``touched`` and the few after it.
    """

    __slots__ = (
        "parent",
        "index",
        "n",
        "wl",
        "d",
        "m",
        "terminal",
        "pending",
        "moves",
        "p",
        "cn",
        "cnif",
        "cq",
        "cd",
        "cm",
        "children",
        "visited_policy",
        "touched",
    )

    def __init__(self, parent: Node | None = None, index: int = 0) -> None:
        self.parent = parent
        self.index = index
        self.n = 0
        self.wl = 0.0
        self.d = 0.0
        self.m = 0.0
        self.terminal: Terminal | None = None
        self.pending = False  # queued for a network evaluation not yet backed up
        # Before expansion the edge fields hold shared empty sequences (as cheap as None):
        # writing an edge of an unexpanded node fails as it would on None (IndexError).
        self.moves: tuple[chess.Move, ...] = ()
        self.p: array = _NO_PRIORS
        self.cn: list[int] = _NO_INTS
        self.cnif: list[int] = _NO_INTS
        self.cq: list[float] = _NO_FLOATS
        self.cd: list[float] = _NO_FLOATS
        self.cm: list[float] = _NO_FLOATS
        self.children: list[Node | None] = _NO_CHILDREN
        self.visited_policy = 0.0
        self.touched = 0

    @property
    def expanded(self) -> bool:
        return bool(self.moves)  # expand() always gets moves: no legal move makes a terminal

    def expand(self, moves: tuple[chess.Move, ...], priors: array) -> None:
        """Create the edges; ``moves`` sorted by decreasing prior (lc0's SortEdges)."""
        k = len(moves)
        self.moves = moves
        self.p = priors
        self.cn = [0] * k
        self.cnif = [0] * k
        self.cq = [0.0] * k
        self.cd = [0.0] * k
        self.cm = [0.0] * k
        self.children = [None] * k

    def child(self, i: int) -> Node:
        """The child behind edge i, created on first use."""
        node = self.children[i]
        if node is None:
            node = Node(self, i)
            self.children[i] = node
        return node

    def move_path(self) -> list[chess.Move]:
        """Moves from the root of the tree to this node."""
        moves = []
        node = self
        while node.parent is not None:
            moves.append(node.parent.moves[node.index])
            node = node.parent
        moves.reverse()
        return moves

    def detach(self) -> None:
        """Make this node a root (tree reuse): forget the parent."""
        self.parent = None
        self.index = 0

    def count_nodes(self) -> int:
        """Nodes in this subtree (iterative; for memory accounting and tests)."""
        total, stack = 0, [self]
        while stack:
            node = stack.pop()
            total += 1
            if node.children:
                stack.extend(c for c in node.children if c is not None)
        return total
