"""The tree's board: the game and the path to the node being visited, tree reuse between moves,
draw rules at a node, and lc0's NN-cache key.

These functions own ``root`` and ``root_board`` of the :class:`SearchState` and the board
walked along the tree (``board``, ``pushed``, ``keys``).
"""

from __future__ import annotations

import chess

from engine.search.node import Node
from engine.search.state import SearchState


def set_position(state: SearchState, board: chess.Board) -> bool:
    """Search from ``board`` (its move stack is the game history). Reuses the subtree when the
    position continues the previous one; returns whether it did."""
    old = state.root_board
    new_stack, old_stack = board.move_stack, old.move_stack
    reused = False
    if (
        len(new_stack) >= len(old_stack)
        and board.root() == old.root()
        and board.chess960 == old.chess960
        and new_stack[: len(old_stack)] == old_stack
    ):
        node: Node | None = state.root
        for move in new_stack[len(old_stack) :]:
            assert node is not None  # the loop breaks when it becomes None
            if not node.expanded or node.terminal is not None:
                node = None
                break
            try:
                i = node.moves.index(move)
            except ValueError:
                node = None
                break
            node = node.children[i]
            if node is None:
                break
        if node is not None and node.n > 0 and node.terminal is None:
            node.detach()
            state.root = node
            reused = True
    if not reused:
        state.root = Node()
    state.root_board = board.copy()
    reset_board(state)
    if reused:
        revert_stale_twofolds(state)
    else:
        state.twofold = []
    return reused


def clear(state: SearchState) -> None:
    """Forget the tree and the NN cache (ucinewgame)."""
    state.root = Node()
    state.cache.clear()
    state.twofold = []


def reset_board(state: SearchState) -> None:
    state.board = state.root_board.copy()
    state.pushed = []
    start = state.board.root()
    keys = [start._transposition_key()]
    for move in state.board.move_stack:
        start.push(move)
        keys.append(start._transposition_key())
    state.keys = keys  # position keys of the game, then of the path pushed on _board
    state.root_ply = len(state.board.move_stack)


def revert_stale_twofolds(state: SearchState) -> None:
    """A two-fold draw whose first occurrence is now before the root is no longer a draw:
    remove its visits from its ancestors and let it be evaluated again (as lc0 does)."""
    keep = []
    for node, first_ply in state.twofold:
        if node.terminal is None or node.terminal.kind != "twofold":
            continue
        anc = node
        while anc.parent is not None:
            anc = anc.parent
        if anc is not state.root:
            continue  # not in the reused tree any more
        if first_ply >= state.root_ply:
            keep.append((node, first_ply))
            continue
        remove_visits(state, node)
        node.terminal = None
    state.twofold = keep


def remove_visits(state: SearchState, node: Node) -> None:
    n, wl, d, m = node.n, node.wl, node.d, node.m
    anc, sign, depth = node.parent, -1.0, 1
    while anc is not None and n > 0:
        left = anc.n - n
        if left <= 0:
            anc.n, anc.wl, anc.d, anc.m = 0, 0.0, 0.0, 0.0
        else:
            anc.wl = (anc.wl * anc.n - sign * wl * n) / left
            anc.d = (anc.d * anc.n - d * n) / left
            anc.m = (anc.m * anc.n - (m + depth) * n) / left
            anc.n = left
        if anc.parent is not None:
            p, i = anc.parent, anc.index
            p.cn[i], p.cq[i], p.cd[i], p.cm[i] = anc.n, anc.wl, anc.d, anc.m
        sign, depth, anc = -sign, depth + 1, anc.parent
    parent = node.parent
    if parent is not None:
        parent.cn[node.index] = 0
        parent.visited_policy -= parent.p[node.index]
    node.n, node.wl, node.d, node.m = 0, 0.0, 0.0, 0.0


def sync(state: SearchState, node: Node, depth: int) -> None:
    """Make ``state.board`` the position of ``node``, ``depth`` plies below the root (pop/push
    only below the common ancestor).

    Walks up from ``node`` only until it meets the pushed path (consecutive leaves of a
    gather are usually close in the tree), instead of building the whole root path.
    """
    pushed = state.pushed
    down = []  # nodes to push, deepest first
    n = node
    while depth > len(pushed):
        down.append(n)
        n = n.parent  # type: ignore[assignment]  # depth > 0: n is below the root
        depth -= 1
    while depth > 0 and pushed[depth - 1] is not n:
        down.append(n)
        n = n.parent  # type: ignore[assignment]  # depth > 0: n is below the root
        depth -= 1
    board, keys = state.board, state.keys
    for _ in range(len(pushed) - depth):
        board.pop()
        pushed.pop()
        keys.pop()
    for n in reversed(down):
        board.push(n.parent.moves[n.index])  # type: ignore[union-attr]  # n is below the root
        pushed.append(n)
        keys.append(board._transposition_key())


def draw_kind(state: SearchState, depth: int) -> str | None:
    """Draw by rule at the synced board (legal moves exist): lc0's order of checks."""
    board = state.board
    if board.halfmove_clock >= 100:
        return "rule50"
    # python-chess's test is slow; any pawn, rook or queen already rules it out.
    if not (board.pawns | board.rooks | board.queens) and board.is_insufficient_material():
        return "material"
    keys = state.keys
    last = len(keys) - 1
    key = keys[last]
    reps, first = 0, -1
    for j in range(last - 2, max(last - board.halfmove_clock, 0) - 1, -2):
        if keys[j] == key:
            reps += 1
            if first < 0:
                first = j
    if reps >= 2:
        return "threefold"
    # lc0: a single repetition is a draw when the cycle lies inside the tree (root included).
    if reps == 1 and state.params.two_fold_draws and depth >= 4 and last - first <= depth:
        state.twofold_first = first
        return "twofold"
    return None


def cache_key(state: SearchState, depth: int) -> object:
    """lc0's cache key: the position (with repetition count) and rule50, plus CacheHistoryLength
    earlier positions."""
    keys = state.keys
    h = state.params.cache_history_length
    last = len(keys) - 1
    if h == 0:
        return (keys[last], state.board.halfmove_clock)
    return (tuple(keys[max(0, last - h) :]), state.board.halfmove_clock)
