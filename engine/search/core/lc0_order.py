"""lc0's order of a node's edges where their priors tie: its move generator's order, then its
``Node::SortEdges`` (``std::sort`` by the 16-bit prior: libstdc++'s introsort, not stable), at
the reference binary's commit (``src/chess/board.cc``, ``src/search/classic/node.cc``). Moves
whose priors compress to the same 16 bits are visited in this order, so a search that orders
them otherwise takes other paths (lc0's random backend ties often: its logits are multiples
of 3/10000; a real network's small priors tie too).

lc0 generates the moves in the side to move's frame (ranks mirrored for black) square by square
(a1 to h8): a king's steps by destination, then castling queen-side, king-side; a rook's or
queen's straight steps, then a bishop's or queen's diagonal ones, each by destination; a pawn's
push, double push, then its captures to the lower file and to the higher (promotions queen,
rook, bishop, knight); a knight's by destination. Legality filters that list in place.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.board.moves import CASTLE, EN_PASSANT, KIND_MASK
from engine.board.position import KINGS, PAWNS, TURN

_THRESHOLD = 16
"""libstdc++'s _S_threshold: introsort leaves runs this short to its final insertion sort."""
_PROMOTION = np.array([0, 0, 3, 2, 1, 0, 0, 0], np.int64)
"""A promotion's place in lc0's kPromotions (queen, rook, bishop, knight), by python-chess piece
type (knight 2 ... queen 5)."""


@njit(cache=True, inline="always")
def generation_rank(pos, move):
    """The place of ``move`` (a move word of position row ``pos``) in lc0's generated list:
    distinct for the legal moves of one position, increasing in lc0's order."""
    black = pos[TURN] != 0
    frm, to = np.int64(move & 63), np.int64((move >> 6) & 63)
    piece = np.uint64(1) << np.uint64(frm)
    if black:
        frm, to = frm ^ 56, to ^ 56
    df, dr = (to & 7) - (frm & 7), (to >> 3) - (frm >> 3)
    within: int
    if move & CASTLE:
        within = 64 if df < 0 else 65
    elif pos[PAWNS] & piece:
        kind = (move & KIND_MASK) >> 12
        promo = int(_PROMOTION[kind]) if (move & KIND_MASK) != EN_PASSANT else 0
        if df == 0:
            within = promo if dr == 1 else 1
        else:
            within = (10 if df < 0 else 20) + promo
    elif pos[KINGS] & piece or df == 0 or dr == 0 or abs(df) != abs(dr):
        within = int(to)  # a king's step, a straight step, a knight's jump: by destination
    else:
        within = 64 + int(to)  # diagonal: after the straight steps of a queen
    return frm * 256 + within


@njit(cache=True)
def has_ties(priors, count):
    """Whether two of the first ``count`` priors (sorted, decreasing) are equal."""
    for j in range(1, count):
        if priors[j] == priors[j - 1]:
            return True
    return False


@njit(cache=True)
def lc0_sort(pos, moves, priors, count, keys, scratch):
    """Reorder ``moves`` and ``priors`` [:count] (int32 move words, uint16) as lc0 orders a
    node's edges: its generated order, then its std::sort by decreasing prior. ``keys`` and
    ``scratch``: int64 [>= max(count, 48)]."""
    # Into lc0's generated order: each move's rank above its word and prior in one key (the
    # ranks of legal moves are distinct), placed by counting the keys below it (no branch).
    for j in range(count):
        rank = generation_rank(pos, moves[j])
        keys[j] = (rank << 32) | (np.int64(moves[j] & 0xFFFF) << 16) | np.int64(priors[j])
    for j in range(count):
        key = keys[j]
        place = 0
        for i in range(count):  # equal keys (not legal moves: tests) in index order
            place += (keys[i] < key) | ((keys[i] == key) & (i < j))
        scratch[place] = key
    for j in range(count):
        moves[j] = (scratch[j] >> 16) & 0xFFFF
        priors[j] = scratch[j] & 0xFFFF
    depth = 0
    n = count
    while n > 1:
        n >>= 1
        depth += 1
    _introsort(moves, priors, keys, 0, count, 2 * depth)  # 2 * floor(log2(count))
    _final_insertion_sort(moves, priors, 0, count)


@njit(cache=True, inline="always")
def _swap(moves, priors, a, b):
    moves[a], moves[b] = moves[b], moves[a]
    priors[a], priors[b] = priors[b], priors[a]


@njit(cache=True)
def _introsort(moves, priors, stack, first, last, depth):
    """libstdc++'s __introsort_loop with lc0's comparison (a before b: a higher prior), its
    recursion as ``stack`` (numba's recursive calls from compiled callers crashed): a lower
    part a level, three int64 each, 2 log2(218) + 1 levels at most."""
    stack[0], stack[1], stack[2] = first, last, depth
    top = 1
    while top > 0:
        top -= 1
        first, last, depth = stack[3 * top], stack[3 * top + 1], stack[3 * top + 2]
        while last - first > _THRESHOLD:
            if depth == 0:
                _heap_sort(moves, priors, first, last)
                break
            depth -= 1
            mid = first + (last - first) // 2
            _median_to_first(moves, priors, first, first + 1, mid, last - 1)
            lo, hi = first + 1, last
            while True:  # __unguarded_partition around priors[first]
                while priors[lo] > priors[first]:
                    lo += 1
                hi -= 1
                while priors[first] > priors[hi]:
                    hi -= 1
                if not lo < hi:
                    break
                _swap(moves, priors, lo, hi)
                lo += 1
            # The upper part first, as the recursion: the lower ones wait, one a level.
            stack[3 * top], stack[3 * top + 1], stack[3 * top + 2] = first, lo, depth
            top += 1
            first = lo


@njit(cache=True)
def _median_to_first(moves, priors, result, a, b, c):
    """libstdc++'s __move_median_to_first."""
    if priors[a] > priors[b]:
        if priors[b] > priors[c]:
            _swap(moves, priors, result, b)
        elif priors[a] > priors[c]:
            _swap(moves, priors, result, c)
        else:
            _swap(moves, priors, result, a)
    elif priors[a] > priors[c]:
        _swap(moves, priors, result, a)
    elif priors[b] > priors[c]:
        _swap(moves, priors, result, c)
    else:
        _swap(moves, priors, result, b)


@njit(cache=True)
def _final_insertion_sort(moves, priors, first, last):
    """libstdc++'s __final_insertion_sort (insertion sorts keep equal priors in order)."""
    if last - first > _THRESHOLD:
        _insertion_sort(moves, priors, first, first + _THRESHOLD)
        for i in range(first + _THRESHOLD, last):
            _linear_insert(moves, priors, i, first)
    else:
        _insertion_sort(moves, priors, first, last)


@njit(cache=True)
def _insertion_sort(moves, priors, first, last):
    for i in range(first + 1, last):
        _linear_insert(moves, priors, i, first)


@njit(cache=True, inline="always")
def _linear_insert(moves, priors, i, first):
    """Move element ``i`` down past the elements with a lower prior (never below ``first``:
    libstdc++ moves an element above the first one to the front in one step, the same)."""
    j = i
    while j > first and priors[j] > priors[j - 1]:
        _swap(moves, priors, j, j - 1)
        j -= 1


@njit(cache=True)
def _heap_sort(moves, priors, first, last):
    """libstdc++'s __partial_sort(first, last, last): make_heap, then sort_heap (a max-heap of
    the comparison, i.e. the lowest prior on top)."""
    n = last - first
    for parent in range((n - 2) // 2, -1, -1):
        _sift(moves, priors, first, parent, n)
    for end in range(n - 1, 0, -1):
        _swap(moves, priors, first, first + end)
        _sift(moves, priors, first, 0, end)


@njit(cache=True)
def _sift(moves, priors, first, hole, n):
    """Restore the heap below ``hole`` (libstdc++'s __adjust_heap: the hole goes down to a leaf
    along the larger children, then the value climbs back)."""
    top = hole
    child = hole
    while child < (n - 1) // 2:
        child = 2 * (child + 1)
        if priors[first + child] > priors[first + child - 1]:  # comp(right, left): take left
            child -= 1
        _swap(moves, priors, first + hole, first + child)
        hole = child
    if (n & 1) == 0 and child == (n - 2) // 2:
        child = 2 * (child + 1)
        _swap(moves, priors, first + hole, first + child - 1)
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and priors[first + parent] > priors[first + hole]:
        _swap(moves, priors, first + hole, first + parent)
        hole = parent
        parent = (hole - 1) // 2
