"""Position encoding for lc0 networks: input planes for every lc0 input format and the
1858-move policy map (see docs/encoding.md), on python-chess boards.

The Python edge of the compiled encoder the search runs (rows.py, with the board's move
generator and policy tables, engine/board/): one implementation of each rule. A plain
python-chess reference, which the tests compare with, is nets/training/reference/."""

from __future__ import annotations

import chess
import numpy as np

from engine.backend import INPUT_PLANES, POLICY_MOVES, POLICY_SIZE

from .formats import SUPPORTED_INPUT_FORMATS, HistoryFill, format_rules
from .rows import encode_boards, legal_moves_and_indices, policy_indices, transform_of

encode_batch = encode_boards
"""float32 [N, 112, 8, 8]: lc0's input planes of each board (history from its move stack)."""


def encode_planes(
    board: chess.Board, input_format: int = 1, history_fill: str = "fen_only"
) -> np.ndarray:
    """float32 [112, 8, 8]: lc0's input planes of ``board`` (history from its move stack)."""
    return encode_boards([board], input_format, history_fill)[0]


__all__ = [
    "INPUT_PLANES",
    "POLICY_MOVES",
    "POLICY_SIZE",
    "SUPPORTED_INPUT_FORMATS",
    "HistoryFill",
    "encode_batch",
    "encode_planes",
    "format_rules",
    "legal_moves_and_indices",
    "policy_indices",
    "transform_of",
]
