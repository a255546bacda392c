"""Playing a move: the next position row from the previous one (copy-make), hash kept
incrementally, and a game's rows from a python-chess board's move stack."""

from __future__ import annotations

import chess
import numpy as np
from numba import njit

from .bitboards import NO_SQUARE, ONE, PAWN_ATTACKS, RANK_1, RANK_8, ZERO, bit
from .movegen import legal_moves
from .moves import CASTLE, EN_PASSANT, KIND_MASK, MAX_MOVES
from .position import (
    CASTLING,
    EP,
    FIELDS,
    HASH,
    KINGS,
    PAWNS,
    PLY,
    ROOKS,
    RULE50,
    TURN,
    ZOBRIST_BLACK,
    ZOBRIST_EP,
    ZOBRIST_PIECE,
    castling_hash,
    from_chess_position,
)


@njit(cache=True)
def _piece_field(pos, square_bb):
    for field in range(PAWNS, KINGS + 1):
        if pos[field] & square_bb != ZERO:
            return field
    return 0


@njit(cache=True)
def _toggle(out, colour, field, square):
    """Put or lift a piece; returns the hash change."""
    b = bit(square)
    out[colour] ^= b
    out[field] ^= b
    return ZOBRIST_PIECE[colour, field, square]


@njit(cache=True)
def make_move(pos, move, out):
    """Write into ``out`` the row after the legal ``move`` (a move word) in ``pos``."""
    for f in range(FIELDS):
        out[f] = pos[f]
    us = np.int64(pos[TURN])
    them = 1 - us
    frm, to = np.int64(move & 63), np.int64((move >> 6) & 63)
    kind = np.int64((move >> 12) & 7)
    promo = kind if kind > 1 else np.int64(0)
    h = pos[HASH] ^ ZOBRIST_BLACK
    if pos[EP] != NO_SQUARE:
        h ^= ZOBRIST_EP[pos[EP] & np.uint64(7)]
    out[EP] = NO_SQUARE
    out[RULE50] = pos[RULE50] + ONE
    out[PLY] = pos[PLY] + ONE
    out[TURN] = np.uint64(them)
    rights = pos[CASTLING]
    backrank = RANK_1 if us == 0 else RANK_8
    field = _piece_field(pos, bit(frm))

    if move & CASTLE:
        base = 0 if us == 0 else 56
        king_to = base + (2 if to < frm else 6)
        rook_to = base + (3 if to < frm else 5)
        h ^= _toggle(out, us, KINGS, frm)
        h ^= _toggle(out, us, ROOKS, to)
        h ^= _toggle(out, us, KINGS, king_to)
        h ^= _toggle(out, us, ROOKS, rook_to)
        rights &= ~backrank
    else:
        if (move & KIND_MASK) == EN_PASSANT:
            h ^= _toggle(out, them, PAWNS, to - 8 if us == 0 else to + 8)
        elif pos[them] & bit(to) != ZERO:
            h ^= _toggle(out, them, _piece_field(pos, bit(to)), to)
            out[RULE50] = ZERO
        h ^= _toggle(out, us, field, frm)
        h ^= _toggle(out, us, field if promo == 0 else promo + 1, to)
        if field == PAWNS:
            out[RULE50] = ZERO
            if to - frm == 16 or frm - to == 16:
                # lc0's marker: only when an enemy pawn stands beside the pushed pawn.
                passed = (frm + to) // 2
                if PAWN_ATTACKS[us, passed] & pos[PAWNS] & pos[them] != ZERO:
                    out[EP] = np.uint64(passed)
                    h ^= ZOBRIST_EP[passed & 7]
        elif field == KINGS:
            rights &= ~backrank
        rights &= ~(bit(frm) | bit(to))
    if rights != pos[CASTLING]:
        h ^= castling_hash(pos[CASTLING]) ^ castling_hash(rights)
        out[CASTLING] = rights
    out[HASH] = h


@njit(cache=True)
def find_move(pos, frm, to, promo):
    """The legal move word from ``frm`` to ``to`` (castling given as king takes rook) with
    ``promo`` (0 or a piece type), or -1."""
    moves = np.empty(MAX_MOVES, np.int32)
    indices = np.empty(MAX_MOVES, np.int32)
    n = legal_moves(pos, np.int64(0), moves, indices)
    for i in range(n):
        m = moves[i]
        kind = (m >> 12) & 7
        if (m & 63) == frm and ((m >> 6) & 63) == to and (kind if kind > 1 else 0) == promo:
            return m
    return -1


def move_from_chess(pos: np.ndarray, board: chess.Board, move: chess.Move) -> int:
    """The move word of python-chess's ``move`` legal on ``board`` (whose row is ``pos``);
    ValueError naming the move if it is not legal there."""
    to = move.to_square
    ours = board.occupied_co[board.turn]
    if board.is_castling(move) and not board.rooks & ours & chess.BB_SQUARES[to]:
        # e1g1 / e1c1: lc0 writes the king taking the rook that keeps the right on that side.
        king = move.from_square
        side = [
            s
            for s in chess.scan_forward(int(pos[CASTLING]) & ours & board.rooks)
            if (s > king) == (to > king)
        ]
        if side:
            to = side[0]
    found = find_move(pos, move.from_square, to, move.promotion or 0)
    if found < 0:
        raise ValueError(f"move {move.uci()}: expected a legal move in {board.fen()}, got none")
    return int(found)


def game_rows(board: chess.Board) -> np.ndarray:
    """The rows of ``board``'s game: [len(move_stack) + 1, FIELDS], the root first (a FEN's
    en-passant square kept as given), every later row made by :func:`make_move`."""
    root = board.root()
    rows = np.empty((len(board.move_stack) + 1, FIELDS), np.uint64)
    rows[0] = from_chess_position(root)
    for k, move in enumerate(board.move_stack):
        make_move(rows[k], move_from_chess(rows[k], root, move), rows[k + 1])
        root.push(move)
    return rows
