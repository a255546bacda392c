"""Reference (python-chess), not the engine's runtime: see nets/training/reference/__init__.py.

lc0's canonical board transforms (flip files, mirror ranks, transpose) on uint64 bitboards.

Bit i of a bitboard is square i (a1 = 0, h1 = 7, a8 = 56), rank = i // 8, file = i % 8.
A transform is a bit set applied in this order: flip files, then mirror ranks, then transpose.
"""

from __future__ import annotations

import chess
import numpy as np

NO_TRANSFORM = 0
FLIP_FILES = 1
"""Files a<->h (lc0's FlipTransform, ReverseBitsInBytes)."""
MIRROR_RANKS = 2
"""Ranks 1<->8 (lc0's MirrorTransform, ReverseBytesInBytes)."""
TRANSPOSE = 4
"""Reflect across the a8-h1 anti-diagonal, square (rank r, file f) -> (7 - f, 7 - r)
(lc0's TransposeTransform: it keeps the bottom-right quadrant, where the first two transforms
put our king, in place). Checked against lc0's reference planes, which pin down the diagonal."""

_LEFT_HALF = 0x0F0F0F0F0F0F0F0F
"""Files a-d: a king there makes lc0 flip files."""
_TOP_HALF = 0xFFFFFFFF00000000
"""Ranks 5-8: a king there makes lc0 mirror ranks (pawnless boards only)."""
_ABOVE_DIAGONAL = 0xE0C08000
"""Bottom-right quadrant squares above its h1-e4 diagonal: a king there gets transposed."""
_ON_DIAGONAL = 0x10204080
"""Diagonal squares of the bottom-right quadrant, where lc0 breaks the tie by comparing."""


def flip_files(bb: int) -> int:
    return chess.flip_horizontal(bb)


def mirror_ranks(bb: int) -> int:
    return chess.flip_vertical(bb)


def transpose(bb: int) -> int:
    return chess.flip_anti_diagonal(bb)


def apply_transform(bb: int, transform: int) -> int:
    """Bitboard ``bb`` under ``transform`` (flip, then mirror, then transpose)."""
    if transform & FLIP_FILES:
        bb = flip_files(bb)
    if transform & MIRROR_RANKS:
        bb = mirror_ranks(bb)
    if transform & TRANSPOSE:
        bb = transpose(bb)
    return bb


def transform_square(square: int, transform: int) -> int:
    """Square index under ``transform`` (same convention as :func:`apply_transform`)."""
    if transform & FLIP_FILES:
        square ^= 7
    if transform & MIRROR_RANKS:
        square ^= 56
    if transform & TRANSPOSE:
        square = 63 - (((square & 7) << 3) | (square >> 3))
    return square


def _compare_transposing(bb: int, initial: int) -> int:
    """-1, 0, 1 as ``bb`` (after ``initial`` flip/mirror) is <, ==, > its transpose."""
    bb = apply_transform(bb, initial & (FLIP_FILES | MIRROR_RANKS))
    alternative = transpose(bb)
    return (bb > alternative) - (bb < alternative)


def choose_transform(masks: list[int], castling_masks: int) -> int:
    """lc0's ChooseTransform from the current position's 12 piece masks (side to move's frame,
    order P N B R Q K ours then theirs) and the castling planes' union."""
    if castling_masks:
        return NO_TRANSFORM  # castling is not symmetric under any transform
    our_king = masks[5]
    transform = NO_TRANSFORM
    if our_king & _LEFT_HALF:
        transform |= FLIP_FILES
        our_king = flip_files(our_king)
    if masks[0] | masks[6]:
        return transform  # pawns: only the file flip keeps the position equivalent
    if our_king & _TOP_HALF:
        transform |= MIRROR_RANKS
        our_king = mirror_ranks(our_king)
    if our_king & _ABOVE_DIAGONAL:
        return transform | TRANSPOSE
    if our_king & _ON_DIAGONAL:
        ours = masks[0] | masks[1] | masks[2] | masks[3] | masks[4] | masks[5]
        theirs = masks[6] | masks[7] | masks[8] | masks[9] | masks[10] | masks[11]
        # Tie-breaks in lc0's order: everything, ours, K, Q, R, N, B.
        for bb in (
            ours | theirs,
            ours,
            masks[5] | masks[11],
            masks[4] | masks[10],
            masks[3] | masks[9],
            masks[1] | masks[7],
            masks[2] | masks[8],
        ):
            outcome = _compare_transposing(bb, transform)
            if outcome < 0:
                return transform
            if outcome > 0:
                return transform | TRANSPOSE
    return transform


def transform_planes(planes: np.ndarray, transform: int) -> np.ndarray:
    """Dense planes [..., 8, 8] (rank, file) under ``transform``; returns a new view/array."""
    if transform & FLIP_FILES:
        planes = planes[..., :, ::-1]
    if transform & MIRROR_RANKS:
        planes = planes[..., ::-1, :]
    if transform & TRANSPOSE:
        planes = np.swapaxes(planes, -1, -2)[..., ::-1, ::-1]
    return planes
