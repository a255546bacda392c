"""perft: the number of leaf positions of the legal-move tree to a depth (the move generator's
standard correctness check and speed measure; the last ply is counted, not played)."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.board.make import make_move
from engine.board.movegen import legal_moves
from engine.board.moves import MAX_MOVES
from engine.board.position import FIELDS


@njit(cache=True, nogil=True)
def perft(pos, depth, bulk=True):
    """Leaves of the legal-move tree of ``pos`` at ``depth`` plies (iterative, copy-make).
    ``bulk``: the last ply's moves are counted, not played (the usual perft speed figure);
    otherwise every leaf is played too."""
    if depth <= 0:
        return 1
    rows = np.empty((depth + 1, FIELDS), np.uint64)
    moves = np.empty((depth, MAX_MOVES), np.int32)
    indices = np.empty((depth, MAX_MOVES), np.int32)
    count = np.zeros(depth, np.int64)
    cursor = np.zeros(depth, np.int64)
    rows[0] = pos
    count[0] = legal_moves(rows[0], np.int64(0), moves[0], indices[0])
    if depth == 1 and bulk:
        return count[0]
    total = 0
    ply = 0
    while ply >= 0:
        if cursor[ply] == count[ply]:
            ply -= 1
            continue
        make_move(rows[ply], np.int64(moves[ply, cursor[ply]]), rows[ply + 1])
        cursor[ply] += 1
        if ply + 1 == depth:
            total += 1  # played, not bulk-counted
        elif ply + 2 == depth and bulk:
            total += legal_moves(rows[ply + 1], np.int64(0), moves[ply + 1], indices[ply + 1])
        else:
            ply += 1
            count[ply] = legal_moves(rows[ply], np.int64(0), moves[ply], indices[ply])
            cursor[ply] = 0
    return total
