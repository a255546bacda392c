"""The move a finished search answers: lc0's best child (or one drawn with Temperature) and the
ponder move, or, when the root was never evaluated, the network's favourite from the NN cache."""

from __future__ import annotations

from collections.abc import Callable

import chess

from engine.board.moves import to_chess_move
from engine.search.go import Go
from engine.search.ranking import best_children, temperature_choice
from engine.search.state import SearchState


def choose_move(
    state: SearchState,
    go: Go,
    root_moves: list[chess.Move],
    cached_root_moves: Callable[[], list[int]],
) -> tuple[chess.Move, chess.Move | None]:
    """(bestmove, ponder move or None) of the run of ``go`` over ``state``; ``root_moves``: the root's
    legal moves (not empty); ``cached_root_moves()``: the root's move words by decreasing prior
    if the NN cache has the root, else []."""
    state.changed()
    root = state.root
    if not root.expanded or root.n == 0:
        # Stopped before the root's evaluation came back: the network's favourite if the
        # NN cache has the root (moves sorted by prior), else the first legal move.
        known = [to_chess_move(m, state.root_board.chess960) for m in cached_root_moves()]
        legal = [m for m in (known or root_moves) if not go.searchmoves or m in go.searchmoves]
        return (legal or root_moves)[0], None
    i = temperature_choice(state, go.mask)
    if i is None:
        i = best_children(state, root, 1, mask=go.mask)[0]
    ponder = None
    child = root.child(i)
    if child is not None and child.expanded and child.n > 0:
        reply = best_children(state, child, 1, 1)
        if reply:
            ponder = child.move(reply[0])
    return root.moves[i], ponder
