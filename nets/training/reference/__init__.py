"""A plain reference of lc0's input encoder and policy map over python-chess boards: **not the
engine's runtime** (the engine encodes with the compiled ``engine/encoding/rows.py`` and maps moves
with ``engine/board/moves.py``; ``engine.encoding`` is their Python edge).

Written from lc0's encoder.cc independently of the compiled code, it is the truth the tests
compare the compiled encoder and move generator with (with python-chess and lc0's own planes in
``../shared``), and the training data's format: positions stored as lc0's 112 uint64 masks
(:func:`.planes.encode_masks`, :func:`.planes.masks_to_planes`, ``nets/training/records.py``).

- :mod:`.planes`: the 112 planes of every input format (history walk, castling, en passant);
- :mod:`.history`: a game's positions read from a python-chess board, lc0's repetition flag;
- :mod:`.transforms`: lc0's canonical transforms on python ints;
- :mod:`.policy`: a legal move's index in lc0's 1858-move policy.
"""

from __future__ import annotations

import chess

from .planes import encode_batch, encode_planes, transform_of
from .policy import POLICY_INDEX, move_index, policy_indices_for


def legal_moves_and_indices(
    board: chess.Board, input_format: int = 1
) -> tuple[list[chess.Move], list[int]]:
    """python-chess's legal moves of ``board`` (its order) and their policy indices under the
    canonical transform of the board's planes in ``input_format``."""
    transform = transform_of(board, input_format)
    moves = list(board.legal_moves)
    return moves, [move_index(board, m, transform) for m in moves]


def policy_indices(board: chess.Board, input_format: int = 1) -> dict[chess.Move, int]:
    """Every legal move of ``board`` -> its policy index (see :func:`legal_moves_and_indices`)."""
    return policy_indices_for(board, transform_of(board, input_format))


__all__ = [
    "POLICY_INDEX",
    "encode_batch",
    "encode_planes",
    "legal_moves_and_indices",
    "move_index",
    "policy_indices",
    "policy_indices_for",
    "transform_of",
]
