"""lc0's 1858-move policy table, generated here, and the mapping of legal moves onto it.

The table lists, for every from-square a1..h8 (in the side to move's frame), the queen-like
and knight destinations in increasing square order; then the promotions of a pawn on the 7th
rank (to the left capture, push, right capture) to queen, rook and bishop. A knight
promotion uses the plain move's index (its table entry has no suffix); castling is written
king-takes-rook (e1h1 / e1a1), as lc0 encodes it.
"""

from __future__ import annotations

import chess

from engine.backend import POLICY_SIZE

from .transforms import transform_square

_QUEEN_DIRECTIONS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1))
_KNIGHT_JUMPS = ((1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2))
_PROMOTION_SUFFIXES = ("q", "r", "b")
"""Promotions with their own entries, in lc0's order; a knight promotion has none."""
_PROMOTION_RANK = 6
"""0-based rank a promoting pawn stands on, in the side to move's frame."""


def _destinations(square: int) -> list[int]:
    """Squares reachable from ``square`` by a queen or a knight on an empty board."""
    rank, file = divmod(square, 8)
    targets: set[int] = set()
    for dr, df in _QUEEN_DIRECTIONS:
        r, f = rank + dr, file + df
        while 0 <= r < 8 and 0 <= f < 8:
            targets.add(r * 8 + f)
            r, f = r + dr, f + df
    for dr, df in _KNIGHT_JUMPS:
        r, f = rank + dr, file + df
        if 0 <= r < 8 and 0 <= f < 8:
            targets.add(r * 8 + f)
    return sorted(targets)


def _generate_policy_moves() -> tuple[str, ...]:
    names = chess.SQUARE_NAMES
    moves = [names[src] + names[dst] for src in range(64) for dst in _destinations(src)]
    for file in range(8):
        src = _PROMOTION_RANK * 8 + file
        for dst_file in (file - 1, file, file + 1):
            if 0 <= dst_file < 8:
                dst = (_PROMOTION_RANK + 1) * 8 + dst_file
                moves.extend(names[src] + names[dst] + s for s in _PROMOTION_SUFFIXES)
    if len(moves) != POLICY_SIZE:  # a broken generator must never reach a network
        raise AssertionError(f"policy table: expected {POLICY_SIZE} moves, got {len(moves)}")
    return tuple(moves)


POLICY_MOVES: tuple[str, ...] = _generate_policy_moves()
"""Index -> UCI move in the side to move's frame (lc0's policy head layout)."""

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
