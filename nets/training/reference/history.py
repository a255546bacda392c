"""Reference (python-chess), not the engine's runtime: see nets/training/reference/__init__.py.

Game history as lc0 sees it, read from a python-chess board without copying it.

lc0 plays a game given as ``position fen F moves ...``: position 0 is the root (F), position
``k`` follows the k-th move. python-chess keeps the state before each move on ``Board._stack``
(one ``_BoardState`` per move of ``move_stack``), so positions 0..L-1 are read from there and
position L is the board itself. Every bitboard here is in absolute coordinates (a1 = bit 0).
"""

from __future__ import annotations

from typing import Any

import chess


def _board_key(state: Any) -> tuple:
    """What lc0's ChessBoard equality compares, but for the en-passant marker (see same_board):
    pieces, side to move and castling rights of a python-chess ``_BoardState``."""
    return (
        state.occupied_w,
        state.occupied_b,
        state.pawns,
        state.knights,
        state.bishops,
        state.rooks,
        state.queens,
        state.kings,
        state.turn,
        state.castling_rights,
    )


_STARTPOS_KEY = _board_key(chess._BoardState(chess.Board()))
_FILE_A = 0x0101010101010101
_FILE_H = 0x8080808080808080


class GameHistory:
    """Positions 0..L of ``board``'s game (read-only view; ``len`` is L + 1).

    Each position exposes python-chess's state attributes: pawns, knights, bishops, rooks,
    queens, kings, occupied_w, occupied_b, turn, castling_rights, ep_square, halfmove_clock.
    """

    __slots__ = ("_stack", "_current", "last", "_markers")

    def __init__(self, board: chess.Board) -> None:
        self._stack = board._stack  # python-chess's per-move states (see module docstring)
        # python-chess's own snapshot type (private, stable since 1.0): the current position
        # then looks exactly like the stacked ones.
        self._current = chess._BoardState(board)
        self.last = len(self._stack)
        """Index of the current position."""
        self._markers: dict[int, int | None] = {}

    def __len__(self) -> int:
        return self.last + 1

    def at(self, index: int) -> Any:
        return self._current if index == self.last else self._stack[index]

    def ep_marker(self, index: int) -> int | None:
        """lc0's en-passant marker of position ``index``: the en-passant square or None.

        lc0 keeps a FEN's en-passant square as given; after a double pawn push it sets the
        marker only when an enemy pawn stands beside the pushed pawn, even if that pawn could
        not legally capture (python-chess records the square after every double push).
        """
        marker = self._markers.get(index, -1)
        if marker != -1:
            return marker
        state = self.at(index)
        ep = state.ep_square
        if ep is not None and index > 0:
            pushed = ep + 8 if state.turn == chess.BLACK else ep - 8
            bit = 1 << pushed
            beside = ((bit << 1) & ~_FILE_A) | ((bit >> 1) & ~_FILE_H)
            enemy = state.occupied_w if state.turn == chess.WHITE else state.occupied_b
            if not beside & state.pawns & enemy:
                ep = None
        self._markers[index] = ep
        return ep

    def same_board(self, i: int, j: int) -> bool:
        """lc0's ChessBoard equality: pieces, castling rights and en-passant marker."""
        return _board_key(self.at(i)) == _board_key(self.at(j)) and self.ep_marker(
            i
        ) == self.ep_marker(j)

    def is_repetition(self, index: int) -> bool:
        """Whether lc0 counts position ``index`` as a repetition (its repetitions >= 1).

        lc0 (PositionHistory::ComputeLastMoveRepetitions) looks back two plies at a time while
        the rule50 counters say no zeroing move lies in between; the root never repeats.
        """
        if self.at(index).halfmove_clock < 4:
            return False
        occupied = self.at(index).occupied
        k = index - 2
        while k >= 0:
            earlier = self.at(k)
            if earlier.occupied == occupied and self.same_board(k, index):
                return True
            if earlier.halfmove_clock < 2:
                return False
            k -= 2
        return False

    def root_is_startpos(self) -> bool:
        """lc0's ``GetBoard() == kStartposBoard`` for the root (rule50/move number ignored)."""
        root = self.at(0)
        return _board_key(root) == _STARTPOS_KEY and root.ep_square is None
