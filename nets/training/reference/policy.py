"""Reference (python-chess), not the engine's runtime: see nets/training/reference/__init__.py.

The mapping of legal moves onto lc0's 1858-move policy table (engine.backend.POLICY_MOVES).

Castling is written king-takes-rook (e1h1 / e1a1) and a knight promotion takes the plain
move's index, as lc0 encodes them.
"""

from __future__ import annotations

import chess

from engine.backend import POLICY_MOVES

from .transforms import transform_square

POLICY_INDEX: dict[str, int] = {uci: i for i, uci in enumerate(POLICY_MOVES)}
"""UCI move (side to move's frame, king-takes-rook castling) -> policy index."""

_PLAIN_INDEX: list[int] = [-1] * (64 * 64)
"""from * 64 + to -> index of the plain move (also used for knight promotions), -1 if none."""
_PROMO_INDEX: dict[tuple[int, int, int], int] = {}
"""(from, to, python-chess piece type) -> index of a queen/rook/bishop promotion."""
_SUFFIX_PIECE = {"q": chess.QUEEN, "r": chess.ROOK, "b": chess.BISHOP}
for _i, _uci in enumerate(POLICY_MOVES):
    _m = chess.Move.from_uci(_uci)
    if len(_uci) == 4:
        _PLAIN_INDEX[_m.from_square * 64 + _m.to_square] = _i
    else:
        _PROMO_INDEX[(_m.from_square, _m.to_square, _SUFFIX_PIECE[_uci[4]])] = _i


def move_index(board: chess.Board, move: chess.Move, transform: int = 0) -> int:
    """Policy index of the legal ``move`` on ``board`` under canonical ``transform`` (bits:
    1 flip files, 2 mirror ranks, 4 transpose) -- the transform the planes were given."""
    src, dst = move.from_square, move.to_square
    if board.is_castling(move):
        # lc0 writes castling as the king capturing its own rook.
        rook_file = _castling_rook_file(board, move)
        dst = (src & ~7) | rook_file
    if board.turn == chess.BLACK:
        src, dst = src ^ 56, dst ^ 56
    if transform:
        # Planes-consistent mapping (as lc0 <= 0.31): the move's squares get exactly the
        # transform applied to the planes. lc0 >= 0.32 maps moves on transposed boards
        # inconsistently with its own planes; we deliberately do not reproduce that defect.
        src, dst = transform_square(src, transform), transform_square(dst, transform)
    promo = move.promotion
    if promo is not None and promo != chess.KNIGHT:
        return _PROMO_INDEX[(src, dst, promo)]
    index = _PLAIN_INDEX[src * 64 + dst]
    if index < 0:
        raise ValueError(f"move {move.uci()} has no policy index (from {src} to {dst})")
    return index


def _castling_rook_file(board: chess.Board, move: chess.Move) -> int:
    """File of the rook the king castles with (works for chess960 king-takes-rook moves)."""
    if board.chess960 or board.piece_type_at(move.to_square) == chess.ROOK:
        return chess.square_file(move.to_square)
    return 7 if chess.square_file(move.to_square) > chess.square_file(move.from_square) else 0


def policy_indices_for(board: chess.Board, transform: int = 0) -> dict[chess.Move, int]:
    """Every legal move of ``board`` -> its policy index under ``transform``."""
    return {move: move_index(board, move, transform) for move in board.legal_moves}
