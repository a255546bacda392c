"""Legal moves of a position row, each with its lc0 policy index, in one compiled pass.

The generator is fully legal, never "generate then test": it finds the checkers and the pieces
pinned to the king first, so that a pinned piece keeps only the targets on its line with the
king, every piece move out of a single check must capture the checker or block its line, and a
double check leaves king moves only. King steps are tested against the opponent's attacks with
the king lifted off the board (it must not step back along a slider's line). En passant, the
one move that removes two pieces from a rank, gets a full test of the king after the capture.
Castling follows python-chess's rules, which hold for Chess960 too: the squares the king and
rook cross are empty but for themselves, and the king's path is not attacked.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .bitboards import (
    ALL,
    BETWEEN,
    KING_ATTACKS,
    KNIGHT_ATTACKS,
    LINE,
    NO_SQUARE,
    ONE,
    PAWN_ATTACKS,
    RANK_1,
    RANK_8,
    ZERO,
    attackers_to,
    bishop_attacks,
    bit,
    lsb,
    popcount,
    rook_attacks,
)
from .moves import CASTLE, EN_PASSANT, encode, policy_index
from .position import BISHOPS, CASTLING, EP, KINGS, KNIGHTS, PAWNS, QUEENS, ROOKS, TURN

_RANK_3 = np.uint64(0xFF << 16)
_RANK_6 = np.uint64(0xFF << 40)
_PROMOTIONS = (5, 4, 3, 2)  # queen, rook, bishop, knight (python-chess piece types)


@njit(cache=True)
def _add(moves, indices, n, move, frame_row):
    moves[n] = move
    indices[n] = policy_index(move, frame_row)
    return n + 1


@njit(cache=True)
def _add_pawn(moves, indices, n, frm, to, frame_row):
    if to >= 56 or to < 8:
        for p in _PROMOTIONS:
            n = _add(moves, indices, n, encode(frm, to, p, 0), frame_row)
        return n
    return _add(moves, indices, n, encode(frm, to, 0, 0), frame_row)


@njit(cache=True)
def in_check(pos):
    us = np.int64(pos[TURN])
    them = 1 - us
    theirs = pos[them]
    occ = pos[0] | pos[1]
    ksq = lsb(pos[KINGS] & pos[us])
    return (
        attackers_to(
            ksq,
            occ,
            pos[PAWNS] & theirs,
            pos[KNIGHTS] & theirs,
            (pos[BISHOPS] | pos[QUEENS]) & theirs,
            (pos[ROOKS] | pos[QUEENS]) & theirs,
            pos[KINGS] & theirs,
            them,
        )
        != ZERO
    )


@njit(cache=True)
def legal_moves(pos, transform, moves, indices):
    """Write the legal moves of ``pos`` into ``moves`` (int32 [>= MAX_MOVES]) and their policy
    indices under ``transform`` into ``indices``; return how many there are."""
    return _generate(pos, transform, moves, indices, False)


@njit(cache=True)
def has_legal_move(pos, moves, indices):
    """Whether ``pos`` has a legal move (not mate nor stalemate): the generator stopped at its
    first group of moves that has one, usually the king's or the knights'. ``moves`` and
    ``indices`` are scratch as for :func:`legal_moves`."""
    return _generate(pos, np.int64(0), moves, indices, True) > 0


@njit(cache=True, inline="always")
def _generate(pos, transform, moves, indices, first_only):
    """:func:`legal_moves`; with ``first_only``, it may stop once it has found some."""
    us = np.int64(pos[TURN])
    them = 1 - us
    frame_row = us * 8 + transform
    ours, theirs = pos[us], pos[them]
    occ = ours | theirs
    t_pawns, t_knights, t_diag, t_orth, t_king = _their_pieces(pos, theirs)
    king_bb = pos[KINGS] & ours
    ksq = lsb(king_bb)
    n = 0
    checkers = attackers_to(ksq, occ, t_pawns, t_knights, t_diag, t_orth, t_king, them)
    pinned = _pinned(ksq, occ, ours, t_diag, t_orth)
    targets = _king_targets(
        ksq, occ ^ king_bb, ours, them, t_pawns, t_knights, t_diag, t_orth, t_king
    )
    while targets != ZERO:
        n = _add(moves, indices, n, encode(ksq, lsb(targets), 0, 0), frame_row)
        targets &= targets - ONE
    n_checkers = popcount(checkers)
    if n_checkers >= 2 or (first_only and n):
        return n
    allowed = ALL
    if n_checkers == 1:
        allowed = checkers | BETWEEN[ksq, lsb(checkers)]
    allowed &= ~ours

    # Knights (a pinned knight never moves), then sliders (a queen diagonal and straight).
    bb = pos[KNIGHTS] & ours & ~pinned
    while bb != ZERO:
        frm = lsb(bb)
        bb &= bb - ONE
        targets = KNIGHT_ATTACKS[frm] & allowed
        while targets != ZERO:
            n = _add(moves, indices, n, encode(frm, lsb(targets), 0, 0), frame_row)
            targets &= targets - ONE
    for orth in range(2):
        bb = ((pos[ROOKS] if orth else pos[BISHOPS]) | pos[QUEENS]) & ours
        while bb != ZERO:
            frm = lsb(bb)
            bb &= bb - ONE
            targets = (rook_attacks(frm, occ) if orth else bishop_attacks(frm, occ)) & allowed
            if pinned & bit(frm) != ZERO:
                targets &= LINE[ksq, frm]
            while targets != ZERO:
                n = _add(moves, indices, n, encode(frm, lsb(targets), 0, 0), frame_row)
                targets &= targets - ONE
    if first_only and n:
        return n

    # Pawns: captures, then single and double pushes, then en passant.
    pawns = pos[PAWNS] & ours
    bb = pawns
    while bb != ZERO:
        frm = lsb(bb)
        bb &= bb - ONE
        targets = PAWN_ATTACKS[us, frm] & theirs & allowed
        if pinned & bit(frm) != ZERO:
            targets &= LINE[ksq, frm]
        while targets != ZERO:
            n = _add_pawn(moves, indices, n, frm, lsb(targets), frame_row)
            targets &= targets - ONE
    single, double, step = _pawn_pushes(pawns, us, ksq, occ, allowed, pinned)
    for distance in range(1, 3):
        targets = single if distance == 1 else double
        while targets != ZERO:
            to = lsb(targets)
            targets &= targets - ONE
            n = _add_pawn(moves, indices, n, to - step * distance, to, frame_row)
    ep = np.int64(pos[EP])
    capturers = _en_passant_capturers(
        ep, step, pawns, us, ksq, occ, t_pawns, t_knights, t_diag, t_orth, t_king
    )
    while capturers != ZERO:
        # En passant is the move word's kind 1 (16-bit words, engine/board/moves.py).
        n = _add(moves, indices, n, encode(lsb(capturers), ep, 0, EN_PASSANT), frame_row)
        capturers &= capturers - ONE
    if n_checkers == 0:
        n = _castling(pos, us, ksq, occ, moves, indices, n, frame_row)
    return n


@njit(cache=True, inline="always")
def _their_pieces(pos, theirs):
    """Their pawns, knights, diagonal sliders, straight sliders and king (``theirs``: their
    pieces), the bitboards the attack tests take."""
    t_pawns = pos[PAWNS] & theirs
    t_knights = pos[KNIGHTS] & theirs
    t_diag = (pos[BISHOPS] | pos[QUEENS]) & theirs
    t_orth = (pos[ROOKS] | pos[QUEENS]) & theirs
    t_king = pos[KINGS] & theirs
    return t_pawns, t_knights, t_diag, t_orth, t_king


@njit(cache=True, inline="always")
def _pinned(ksq, occ, ours, t_diag, t_orth):
    """Our pieces pinned to our king on ``ksq``: each alone between it and a slider of theirs."""
    pinned = ZERO
    snipers = (rook_attacks(ksq, ZERO) & t_orth) | (bishop_attacks(ksq, ZERO) & t_diag)
    while snipers != ZERO:
        between = BETWEEN[ksq, lsb(snipers)] & occ
        if between & ours != ZERO and popcount(between) == 1:
            pinned |= between
        snipers &= snipers - ONE
    return pinned


@njit(cache=True, inline="always")
def _king_targets(ksq, lifted, ours, them, t_pawns, t_knights, t_diag, t_orth, t_king):
    """The squares our king on ``ksq`` may step to: each tested against their attacks with the
    king lifted off the board (``lifted``: it must not step back along a slider's line)."""
    safe = ZERO
    targets = KING_ATTACKS[ksq] & ~ours
    while targets != ZERO:
        to = lsb(targets)
        targets &= targets - ONE
        if attackers_to(to, lifted, t_pawns, t_knights, t_diag, t_orth, t_king, them) == ZERO:
            safe |= bit(to)
    return safe


@njit(cache=True, inline="always")
def _pawn_pushes(pawns, us, ksq, occ, allowed, pinned):
    """The target squares of our pawns' single and double pushes onto ``allowed`` squares, a
    pinned pawn's only where it keeps its line with the king, and the step of a push (8 or -8
    squares: a pawn pushed to ``to`` comes from ``to - step * distance``)."""
    if us == 0:
        single = (pawns << np.uint64(8)) & ~occ
        double = ((single & _RANK_3) << np.uint64(8)) & ~occ
        step = 8
    else:
        single = (pawns >> np.uint64(8)) & ~occ
        double = ((single & _RANK_6) >> np.uint64(8)) & ~occ
        step = -8
    single &= allowed
    double &= allowed
    pinned_pawns = pawns & pinned
    while pinned_pawns != ZERO:
        frm = lsb(pinned_pawns)
        pinned_pawns &= pinned_pawns - ONE
        line = LINE[ksq, frm]
        single &= ~bit(frm + step) | line
        if 0 <= frm + 2 * step < 64:
            double &= ~bit(frm + 2 * step) | line
    return single, double, step


@njit(cache=True, inline="always")
def _en_passant_capturers(
    ep, step, pawns, us, ksq, occ, t_pawns, t_knights, t_diag, t_orth, t_king
):
    """Our pawns that may capture en passant onto ``ep`` (NO_SQUARE: none), the one move that
    removes two pieces from a rank: each gets a full test of our king after the capture."""
    legal = ZERO
    if ep != NO_SQUARE and t_pawns & bit(ep - step) != ZERO and occ & bit(ep) == ZERO:
        captured = ep - step
        capturers = PAWN_ATTACKS[1 - us, ep] & pawns
        while capturers != ZERO:
            frm = lsb(capturers)
            capturers &= capturers - ONE
            after = (occ ^ bit(frm) ^ bit(captured)) | bit(ep)
            t_left = t_pawns & ~bit(captured)
            if attackers_to(ksq, after, t_left, t_knights, t_diag, t_orth, t_king, 1 - us) == ZERO:
                legal |= bit(frm)
    return legal


@njit(cache=True)
def _castling(pos, us, ksq, occ, moves, indices, n, frame_row):
    them = 1 - us
    theirs = pos[them]
    t_pawns = pos[PAWNS] & theirs
    t_knights = pos[KNIGHTS] & theirs
    t_diag = (pos[BISHOPS] | pos[QUEENS]) & theirs
    t_orth = (pos[ROOKS] | pos[QUEENS]) & theirs
    t_king = pos[KINGS] & theirs
    backrank = RANK_1 if us == 0 else RANK_8
    king_bb = bit(ksq)
    if king_bb & backrank == ZERO:
        return n
    base = 0 if us == 0 else 56
    rooks = pos[CASTLING] & backrank & pos[ROOKS] & pos[us]
    while rooks != ZERO:
        rook = lsb(rooks)
        rooks &= rooks - ONE
        a_side = rook < ksq
        king_to = base + (2 if a_side else 6)
        rook_to = base + (3 if a_side else 5)
        king_path = BETWEEN[ksq, king_to]
        crossed = king_path | BETWEEN[rook, rook_to] | bit(king_to) | bit(rook_to)
        if (occ ^ king_bb ^ bit(rook)) & crossed != ZERO:
            continue
        safe = True
        path = king_path | king_bb
        while path != ZERO and safe:
            sq = lsb(path)
            path &= path - ONE
            safe = (
                attackers_to(sq, occ ^ king_bb, t_pawns, t_knights, t_diag, t_orth, t_king, them)
                == ZERO
            )
        if safe:
            # The rook's own square counts as empty, as the king will stand where it may be.
            after = occ ^ king_bb ^ bit(rook) ^ bit(rook_to)
            safe = (
                attackers_to(king_to, after, t_pawns, t_knights, t_diag, t_orth, t_king, them)
                == ZERO
            )
        if safe:
            n = _add(moves, indices, n, encode(ksq, rook, 0, CASTLE), frame_row)
    return n
