"""lc0's 1858-move policy table and the maps from its policy heads' raw outputs onto it.

All generated from the geometry of the moves (no tables copied):

* the 1858 moves themselves come from ``engine.backend`` (one table for encoder and heads);
* convolution policy: 80 planes x 64 from-squares; planes 0-55 are queen moves (direction N, NE,
  E, SE, S, SW, W, NW, each distance 1-7), 56-63 knight moves (clockwise from (+1,+2)), 64-72
  the promotions (towards file -1, 0, +1; as rook, bishop, queen);
* attention policy: 64 x 64 from/to logits then 3 x 64 promotion logits laid out as
  [from file 8][to file 8][queen, rook, bishop].
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from engine.backend import POLICY_MOVES, POLICY_SIZE

CONV_POLICY_PLANES = 80
ATTN_POLICY_SIZE = 67 * 64
_QUEEN_DIRECTIONS = ((0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1))
_KNIGHT_JUMPS = ((1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2))
_PROMOTION_PIECES = ("q", "r", "b")  # order of the attention map's promotion logits
_CONV_PROMOTION_ORDER = ("r", "b", "q")  # order of the convolution underpromotion planes
_FILES = "abcdefgh"


def policy_moves() -> tuple[str, ...]:
    """The 1858 moves in lc0's policy order, UCI-like in the side-to-move frame.

    The engine's encoder owns the table (it maps legal moves onto it); the heads here only
    need its order to lay out their gather maps, so they share that one definition.
    """
    return POLICY_MOVES


def _parse(move: str) -> tuple[int, int, str]:
    src = _FILES.index(move[0]) + 8 * (int(move[1]) - 1)
    dst = _FILES.index(move[2]) + 8 * (int(move[3]) - 1)
    return src, dst, move[4:]


@lru_cache(maxsize=1)
def conv_policy_map() -> np.ndarray:
    """int32 [1858]: index into the flattened [80, 8, 8] convolution policy output."""
    table = np.empty(POLICY_SIZE, np.int32)
    for i, move in enumerate(policy_moves()):
        src, dst, promo = _parse(move)
        df, dr = dst % 8 - src % 8, dst // 8 - src // 8
        if promo:
            plane = 64 + 3 * (df + 1) + _CONV_PROMOTION_ORDER.index(promo)
        elif (df, dr) in _KNIGHT_JUMPS:
            plane = 56 + _KNIGHT_JUMPS.index((df, dr))
        else:
            dist = max(abs(df), abs(dr))
            direction = _QUEEN_DIRECTIONS.index((df // dist, dr // dist))
            plane = direction * 7 + dist - 1
        table[i] = plane * 64 + src
    return table


@lru_cache(maxsize=1)
def attention_policy_map() -> np.ndarray:
    """int32 [1858]: index into the flattened [67 * 64] attention policy output."""
    table = np.empty(POLICY_SIZE, np.int32)
    for i, move in enumerate(policy_moves()):
        src, dst, promo = _parse(move)
        if promo:
            table[i] = 64 * 64 + (src % 8) * 24 + (dst % 8) * 3 + _PROMOTION_PIECES.index(promo)
        else:
            table[i] = src * 64 + dst
    return table
