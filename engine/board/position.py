"""The compiled board's position: one row of 16 uint64 words, and its Zobrist hash.

A game is a 2-D array ``[plies, FIELDS]`` of such rows (history for the encoder and the
repetition rules comes for free), and moves are applied copy-make: ``make_move`` writes the
next row from the previous one. Layout (all squares absolute, a1 = 0):

  WHITE, BLACK                 occupancy by colour
  PAWNS .. KINGS               occupancy by piece type (python-chess's order, field = type + 1)
  CASTLING                     the rooks that keep a castling right (python-chess's rights mask,
                               cleaned: standard chess and Chess960 alike)
  EP                           lc0's en-passant marker, or NO_SQUARE (64): set after a double
                               push only when an enemy pawn stands beside the pushed pawn (lc0's
                               rule, also what repetitions compare); a FEN's square is kept
  TURN                         0 white, 1 black to move
  RULE50                       plies since the last capture or pawn move
  PLY                          game ply: 2 * (fullmove number - 1) + TURN
  HASH                         Zobrist hash of pieces, side, castling rights and EP marker
  FLAGS                        bit 0: Chess960 (how castling is written in UCI)

python-chess stays at the edges: :func:`from_board` and :func:`to_board` convert, for input
parsing and tests.
"""

from __future__ import annotations

import chess
import numpy as np
from numba import njit

from .bitboards import NO_SQUARE, ONE, ZERO, lsb

WHITE, BLACK = 0, 1
PAWNS, KNIGHTS, BISHOPS, ROOKS, QUEENS, KINGS = 2, 3, 4, 5, 6, 7
CASTLING, EP, TURN, RULE50, PLY, HASH, FLAGS = 8, 9, 10, 11, 12, 13, 14
FIELDS = 16
FLAG_CHESS960 = 1

_rng = np.random.default_rng(0x7A0B)  # fixed: hashes are stable across runs and processes
ZOBRIST_PIECE = _rng.integers(0, 2**64, size=(2, 8, 64), dtype=np.uint64)
"""ZOBRIST_PIECE[colour, field, square] for the piece fields PAWNS..KINGS."""
ZOBRIST_CASTLING = _rng.integers(0, 2**64, size=64, dtype=np.uint64)
ZOBRIST_EP = _rng.integers(0, 2**64, size=8, dtype=np.uint64)
ZOBRIST_BLACK = _rng.integers(0, 2**64, dtype=np.uint64)


@njit(cache=True)
def castling_hash(rights):
    h = ZERO
    while rights != ZERO:
        h ^= ZOBRIST_CASTLING[lsb(rights)]
        rights &= rights - ONE
    return h


@njit(cache=True)
def compute_hash(pos):
    """The Zobrist hash of a position row from scratch (make_move keeps it incrementally)."""
    h = ZERO
    for colour in range(2):
        for field in range(PAWNS, KINGS + 1):
            bb = pos[colour] & pos[field]
            while bb != ZERO:
                h ^= ZOBRIST_PIECE[colour, field, lsb(bb)]
                bb &= bb - ONE
    h ^= castling_hash(pos[CASTLING])
    if pos[EP] != NO_SQUARE:
        h ^= ZOBRIST_EP[pos[EP] & np.uint64(7)]
    if pos[TURN] != ZERO:
        h ^= ZOBRIST_BLACK
    return h


def from_chess_position(board: chess.Board) -> np.ndarray:
    """The row of ``board``'s current position (its move stack is not read)."""
    pos = unhashed_row(board)
    pos[HASH] = compute_hash(pos)
    return pos


def unhashed_row(board: chess.Board) -> np.ndarray:
    """:func:`from_chess_position` without the hash (0): no compiled code runs, so a module can
    build a constant row at import without starting numba (a tenth of a second of a start)."""
    pos = np.zeros(FIELDS, np.uint64)
    pos[WHITE] = board.occupied_co[chess.WHITE]
    pos[BLACK] = board.occupied_co[chess.BLACK]
    for piece_type in chess.PIECE_TYPES:
        pos[piece_type + 1] = board.pieces_mask(piece_type, chess.WHITE) | board.pieces_mask(
            piece_type, chess.BLACK
        )
    pos[CASTLING] = board.clean_castling_rights()
    pos[EP] = NO_SQUARE if board.ep_square is None else board.ep_square
    pos[TURN] = 0 if board.turn == chess.WHITE else 1
    pos[RULE50] = board.halfmove_clock
    pos[PLY] = 2 * (board.fullmove_number - 1) + int(pos[TURN])
    pos[FLAGS] = FLAG_CHESS960 if board.chess960 else 0
    return pos


def to_board(pos: np.ndarray) -> chess.Board:
    """A python-chess board of one row (no move stack): for tests and the UCI edge."""
    board = chess.Board(None, chess960=bool(int(pos[FLAGS]) & FLAG_CHESS960))
    for colour, field_colour in ((chess.WHITE, WHITE), (chess.BLACK, BLACK)):
        for piece_type in chess.PIECE_TYPES:
            for sq in chess.scan_forward(int(pos[piece_type + 1]) & int(pos[field_colour])):
                board.set_piece_at(sq, chess.Piece(piece_type, colour))
    board.turn = chess.WHITE if int(pos[TURN]) == 0 else chess.BLACK
    board.castling_rights = int(pos[CASTLING])
    board.ep_square = None if int(pos[EP]) == NO_SQUARE else int(pos[EP])
    board.halfmove_clock = int(pos[RULE50])
    board.fullmove_number = int(pos[PLY]) // 2 + 1
    return board
