"""lc0's repetition rule on a game's position rows (PositionHistory::ComputeLastMoveRepetitions):
the one implementation, for the search's draw rules and NN-cache key (core/gather.py) and the
input planes' repetition flag (engine/encoding/rows.py).

A position repeats an earlier one with the same pieces, side to move, castling rights and
en-passant marker (the fields the row's Zobrist ``HASH`` covers), an even number of plies back,
with no zeroing move in between (within the position's rule50 count of plies).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .position import HASH, RULE50


@njit(cache=True, nogil=True)
def repetitions(hist, row):
    """(earlier occurrences of ``hist[row]`` within its rule50 window, the latest one's row, -1
    when none); ``hist`` uint64 [rows, FIELDS], one ply apart."""
    pos = hist[row]
    reps, first = 0, -1
    lowest = max(row - np.int64(pos[RULE50]), 0)
    j = row - 2
    while j >= lowest:
        if hist[j, HASH] == pos[HASH]:
            reps += 1
            if first < 0:
                first = j
        j -= 2
    return reps, first
