"""Position encoding for lc0 networks: input planes for every lc0 input format and the
1858-move policy map (see docs/encoding.md)."""

from __future__ import annotations

import chess

from engine.backend import INPUT_PLANES, POLICY_SIZE

from .formats import SUPPORTED_INPUT_FORMATS, HistoryFill, format_rules
from .legal_moves import legal_moves_and_indices as _legal_moves_and_indices
from .planes import encode_batch, encode_planes, transform_of
from .policy import POLICY_INDEX, POLICY_MOVES, move_index


def legal_moves_and_indices(
    board: chess.Board, input_format: int = 1
) -> tuple[list[chess.Move], list[int]]:
    """The legal moves of ``board`` (python-chess's order) and their indices in 0..1857 under
    the same canonical transform as the board's planes in ``input_format``; one pass."""
    return _legal_moves_and_indices(board, transform_of(board, input_format))


def policy_indices(board: chess.Board, input_format: int = 1) -> dict[chess.Move, int]:
    """Every legal move of ``board`` -> its index in 0..1857 under the same canonical
    transform as the board's planes in ``input_format``."""
    moves, indices = legal_moves_and_indices(board, input_format)
    return dict(zip(moves, indices))


__all__ = [
    "INPUT_PLANES",
    "POLICY_INDEX",
    "POLICY_MOVES",
    "POLICY_SIZE",
    "SUPPORTED_INPUT_FORMATS",
    "HistoryFill",
    "encode_batch",
    "encode_planes",
    "format_rules",
    "legal_moves_and_indices",
    "move_index",
    "policy_indices",
    "transform_of",
]
