"""lc0's 1858-move policy table: index -> move, as every lc0 policy head lays it out.

It belongs to the protocol between search and backends: the encoder maps legal moves onto it
and a backend maps its raw policy outputs onto it, so both read this one table.

The table lists, for every from-square a1..h8 (in the side to move's frame), the queen-like
and knight destinations in increasing square order; then the promotions of a pawn on the 7th
rank (to the left capture, push, right capture) to queen, rook and bishop. A knight
promotion uses the plain move's index (its table entry has no suffix); castling is written
king-takes-rook (e1h1 / e1a1), as lc0 encodes it.
"""

from __future__ import annotations

import chess

POLICY_SIZE = 1858
"""Number of entries in lc0's policy head (its 1858-move table)."""

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
