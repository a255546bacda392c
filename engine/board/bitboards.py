"""Bitboard primitives for the compiled board: bit scans, attack tables and sliding attacks.

Bit i of a uint64 bitboard is square i (a1 = 0, h1 = 7, a8 = 56). Every function here is
``@njit``-compiled and takes or returns ``np.uint64`` bitboards and ``int64`` squares.

numba types ``uint64 op int64`` as float64, so every constant that meets a bitboard is an
``np.uint64`` (``ONE``, ``ZERO``, ``ALL``) and shifts take unsigned amounts.

Sliding attacks use the classical ray method: for each of the eight directions a table of the
squares a slider sees on an empty board; the first blocker on the ray (the lowest set bit for
directions that increase the square index, the highest for the others, one ``tzcnt`` /
``lzcnt`` instruction) cuts the ray off behind it. The tables are 8 x 64 words (4 KB), small
enough to live as compile-time constants in numba's disk cache; magic bitboards would need
~800 KB of tables for a few ns less per lookup, which perft shows we do not need.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros
from numba.extending import intrinsic

ZERO = np.uint64(0)
ONE = np.uint64(1)
ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
RANK_1 = np.uint64(0xFF)
RANK_8 = np.uint64(0xFF << 56)
FILE_A = np.uint64(0x0101010101010101)
FILE_H = np.uint64(0x8080808080808080)
NO_SQUARE = 64

# Directions: (rank step, file step); the first four increase the square index.
_DIRECTIONS = ((1, 0), (0, 1), (1, 1), (1, -1), (-1, 0), (0, -1), (-1, -1), (-1, 1))
_KNIGHT = ((1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2))
_KING = tuple(d for d in _DIRECTIONS)


def _walk(square: int, dr: int, df: int, repeat: bool) -> int:
    r, f = divmod(square, 8)
    out = 0
    while True:
        r, f = r + dr, f + df
        if not (0 <= r < 8 and 0 <= f < 8):
            return out
        out |= 1 << (8 * r + f)
        if not repeat:
            return out


def _table(steps, repeat: bool) -> np.ndarray:
    return np.array(
        [sum(_walk(s, dr, df, repeat) for dr, df in steps) for s in range(64)], dtype=np.uint64
    )


RAYS = np.array(
    [[_walk(s, dr, df, True) for s in range(64)] for dr, df in _DIRECTIONS], dtype=np.uint64
)
"""RAYS[d, s]: squares seen from s in direction d on an empty board (d < 4: increasing)."""
KNIGHT_ATTACKS = _table(_KNIGHT, False)
KING_ATTACKS = _table(_KING, False)
PAWN_ATTACKS = np.array([_table(((1, -1), (1, 1)), False), _table(((-1, -1), (-1, 1)), False)])
"""PAWN_ATTACKS[colour, s]: squares a pawn of that colour (0 white, 1 black) on s attacks."""


def _between_and_line() -> tuple[np.ndarray, np.ndarray]:
    between = np.zeros((64, 64), np.uint64)
    line = np.zeros((64, 64), np.uint64)
    for a in range(64):
        for d in range(len(_DIRECTIONS)):
            ray = int(RAYS[d, a])
            back = int(RAYS[(d + 4) % 8, a])
            b = ray
            while b:
                sq = (b & -b).bit_length() - 1
                b &= b - 1
                between[a, sq] = ray & int(RAYS[(d + 4) % 8, sq])
                line[a, sq] = ray | back | (1 << a)
    return between, line


BETWEEN, LINE = _between_and_line()
"""BETWEEN[a, b]: squares strictly between a and b on a line (0 if none); LINE[a, b]: the whole
line through a and b, edge to edge (0 if they share none)."""


@intrinsic
def _ctpop(typingctx, x):
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        fn = builder.module.declare_intrinsic("llvm.ctpop", [args[0].type])
        return builder.call(fn, [args[0]])

    return sig, codegen


@njit(cache=True)
def popcount(bb):
    return np.int64(_ctpop(np.uint64(bb)))


@njit(cache=True)
def lsb(bb):
    """Lowest set square of a non-empty bitboard."""
    return np.int64(trailing_zeros(np.uint64(bb)))


@njit(cache=True)
def msb(bb):
    """Highest set square of a non-empty bitboard."""
    return np.int64(63 - leading_zeros(np.uint64(bb)))


@njit(cache=True)
def bit(square):
    return ONE << np.uint64(square)


@njit(cache=True)
def _ray(d, square, occupied):
    ray = RAYS[d, square]
    blockers = ray & occupied
    if blockers == ZERO:
        return ray
    first = lsb(blockers) if d < 4 else msb(blockers)
    return ray ^ RAYS[d, first]


@njit(cache=True)
def rook_attacks(square, occupied):
    return (
        _ray(0, square, occupied)
        | _ray(1, square, occupied)
        | _ray(4, square, occupied)
        | _ray(5, square, occupied)
    )


@njit(cache=True)
def bishop_attacks(square, occupied):
    return (
        _ray(2, square, occupied)
        | _ray(3, square, occupied)
        | _ray(6, square, occupied)
        | _ray(7, square, occupied)
    )


@njit(cache=True)
def attackers_to(square, occupied, pawns, knights, bishops_queens, rooks_queens, kings, colour):
    """Pieces of ``colour`` (the piece bitboards given are that colour's) attacking ``square``
    through ``occupied``."""
    att = PAWN_ATTACKS[1 - colour, square] & pawns
    att |= KNIGHT_ATTACKS[square] & knights
    att |= KING_ATTACKS[square] & kings
    if bishops_queens != ZERO:
        att |= bishop_attacks(square, occupied) & bishops_queens
    if rooks_queens != ZERO:
        att |= rook_attacks(square, occupied) & rooks_queens
    return att
