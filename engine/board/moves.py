"""Moves of the compiled board as 16-bit words, and their lc0 policy indices.

A move word is ``from | to << 6 | kind << 12 | castle << 15``: squares absolute; ``kind`` the
promotion as a python-chess piece type (2-5), 1 for en passant (a pawn is never a promotion, so
the two share the field and a word fits the tree's 16-bit edges), 0 for any other move.
Castling is written as lc0
writes it, the king taking its own rook (e1h1), in standard chess and Chess960 alike; UCI
output turns it into e1g1 unless the game is Chess960 (:func:`to_chess_move`).

The policy index of a move is looked up in the side to move's frame (ranks mirrored for black)
under the canonical transform of the position's planes: ``FRAME`` maps squares, ``PLAIN_INDEX``
and ``PROMO_INDEX`` map ``from * 64 + to`` in that frame to lc0's 1858 entries (a knight
promotion takes the plain move's entry, as in lc0).
"""

from __future__ import annotations

import chess
import numpy as np
from numba import njit

from engine.backend import POLICY_MOVES

CASTLE = 1 << 15
EN_PASSANT = 1 << 12
"""The ``kind`` field's en-passant value: test it with :func:`is_en_passant`, not ``&`` (a
bishop or queen promotion sets the same bit)."""
KIND_MASK = 7 << 12
MAX_MOVES = 256
"""Room for the legal moves of any position (218 at most)."""


def transform_square(square: int, transform: int) -> int:
    """Square under lc0's canonical ``transform`` (bits: 1 flip files, 2 mirror ranks,
    4 transpose across the a8-h1 diagonal; applied in that order)."""
    if transform & 1:
        square ^= 7
    if transform & 2:
        square ^= 56
    if transform & 4:
        square = 63 - (((square & 7) << 3) | (square >> 3))
    return square


def _square(name: str) -> int:
    return (ord(name[0]) - ord("a")) + 8 * (int(name[1]) - 1)


def _policy_tables() -> tuple[np.ndarray, np.ndarray]:
    plain = np.full(4096, -1, np.int32)
    promo = np.full((3, 4096), -1, np.int32)  # queen, rook, bishop
    for i, uci in enumerate(POLICY_MOVES):
        s = _square(uci[:2]) * 64 + _square(uci[2:4])
        if len(uci) == 4:
            plain[s] = i
        else:
            promo["qrb".index(uci[4]), s] = i
    return plain, promo


PLAIN_INDEX, PROMO_INDEX = _policy_tables()
FRAME = np.array(
    [
        [transform_square(s ^ (56 * turn), t) for s in range(64)]
        for turn in range(2)
        for t in range(8)
    ],
    dtype=np.int64,
)
"""FRAME[turn * 8 + transform, square]: the square in the policy's frame."""


@njit(cache=True)
def encode(frm, to, promotion, flags):
    return np.int32(frm | (to << 6) | (promotion << 12) | flags)


@njit(cache=True)
def from_square(move):
    return np.int64(move & 63)


@njit(cache=True)
def to_square(move):
    return np.int64((move >> 6) & 63)


@njit(cache=True)
def promotion(move):
    """The promotion's piece type, 0 for none."""
    kind = np.int64((move >> 12) & 7)
    return kind if kind > 1 else np.int64(0)


@njit(cache=True)
def is_en_passant(move):
    return (move & KIND_MASK) == EN_PASSANT


@njit(cache=True)
def policy_index(move, frame_row):
    """lc0's policy index of ``move`` with squares mapped by ``FRAME[frame_row]``."""
    s = FRAME[frame_row, move & 63] * 64 + FRAME[frame_row, (move >> 6) & 63]
    promo = (move >> 12) & 7
    if promo == chess.QUEEN:
        return PROMO_INDEX[0, s]
    if promo == chess.ROOK:
        return PROMO_INDEX[1, s]
    if promo == chess.BISHOP:
        return PROMO_INDEX[2, s]
    return PLAIN_INDEX[s]


def to_chess_move(move: int, chess960: bool = False) -> chess.Move:
    """The python-chess move (UCI form: e1g1 castling unless ``chess960``)."""
    move = int(move)
    frm, to, kind = move & 63, (move >> 6) & 63, (move >> 12) & 7
    if move & CASTLE and not chess960:
        to = (to & 56) | (2 if to < frm else 6)
    return chess.Move(frm, to, kind if kind > 1 else None)


def describe(move: int) -> str:
    """Readable form for errors and tests: king-takes-rook UCI with the flags."""
    move = int(move)
    ep = (move & KIND_MASK) == EN_PASSANT
    promo = 0 if ep else (move >> 12) & 7
    text = chess.Move(move & 63, (move >> 6) & 63, promo or None).uci()
    return text + ("(castle)" if move & CASTLE else "") + ("(ep)" if ep else "")
