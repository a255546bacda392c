"""Legal moves of a position together with their policy indices, in one pass.

The search needs, for every position it expands, the legal moves (to build its children) and
their lc0 policy indices (to read the network's logits). ``board.legal_moves`` plus
:func:`.policy.move_index` per move costs about 40 us per move in python-chess (a generator
chain, a ``Move`` object and a legality test for every move). Here:

* the moves of a position that is not in check are generated directly from python-chess's
  bitboard tables: a piece that is not pinned needs no legality test at all, a pinned one
  keeps the targets on its line with the king, and a king step is tested against the
  opponent's attacks (python-chess's own ``_is_safe`` rules, spelled out);
* ``Move`` objects are shared, preallocated ones (moves are immutable values; nothing in the
  engine mutates them), so a move costs a list lookup instead of a constructor call;
* a precomputed table per (side to move, canonical transform) maps ``from * 64 + to`` to the
  policy index, so mapping a move is one more list lookup.

The order of the moves is exactly python-chess's ``generate_legal_moves`` order (children with
equal priors keep that order after the search's stable sort by prior). Positions in check,
castling moves, en-passant captures and boards that are not a plain ``chess.Board`` take
python-chess's own code (rare, and they need its full legality rules).
"""

from __future__ import annotations

import chess
from chess import (
    BB_DIAG_ATTACKS,
    BB_DIAG_MASKS,
    BB_FILE_ATTACKS,
    BB_FILE_MASKS,
    BB_KING_ATTACKS,
    BB_KNIGHT_ATTACKS,
    BB_PAWN_ATTACKS,
    BB_RANK_ATTACKS,
    BB_RANK_MASKS,
    BB_RAYS,
)

from .policy import _PLAIN_INDEX, _PROMO_INDEX, move_index
from .transforms import transform_square

_BACK_RANKS = chess.BB_RANK_1 | chess.BB_RANK_8
_RANKS_3_4 = chess.BB_RANK_3 | chess.BB_RANK_4
_RANKS_5_6 = chess.BB_RANK_5 | chess.BB_RANK_6

# Shared move objects, index from * 64 + to (absolute squares).
_PLAIN = [chess.Move(s // 64, s % 64) for s in range(4096)]
_PROMOS = {
    p: [chess.Move(s // 64, s % 64, p) for s in range(4096)]
    for p in (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)
}
_QUEEN, _ROOK, _BISHOP, _KNIGHT = (
    _PROMOS[p] for p in (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)
)

_tables: dict[tuple[bool, int], tuple[list[int], list[int], list[int], list[int]]] = {}


def _index_tables(turn: bool, transform: int) -> tuple[list[int], list[int], list[int], list[int]]:
    """(plain, queen, rook, bishop promotion) policy index by absolute ``from * 64 + to`` for the
    side to move ``turn`` under ``transform``; -1 where the table has no such move. A knight
    promotion uses the plain index (as in :func:`.policy.move_index`). Built on first use."""
    key = (turn, transform)
    tables = _tables.get(key)
    if tables is None:
        flip = 0 if turn == chess.WHITE else 56
        frame = [transform_square(s ^ flip, transform) for s in range(64)]
        plain, queen, rook, bishop = ([-1] * 4096 for _ in range(4))
        for s in range(4096):
            src, dst = frame[s // 64], frame[s % 64]
            plain[s] = _PLAIN_INDEX[src * 64 + dst]
            queen[s] = _PROMO_INDEX.get((src, dst, chess.QUEEN), -1)
            rook[s] = _PROMO_INDEX.get((src, dst, chess.ROOK), -1)
            bishop[s] = _PROMO_INDEX.get((src, dst, chess.BISHOP), -1)
        tables = _tables[key] = (plain, queen, rook, bishop)
    return tables


def _slow(board: chess.Board, transform: int) -> tuple[list[chess.Move], list[int]]:
    """python-chess's legal moves; the indices from the tables, but for castling moves and
    variant boards (which take :func:`.policy.move_index`)."""
    moves = list(board.generate_legal_moves())
    if type(board) is not chess.Board:
        return moves, [move_index(board, m, transform) for m in moves]
    plain, iq, ir, ib = _index_tables(board.turn, transform)
    promoted = {chess.QUEEN: iq, chess.ROOK: ir, chess.BISHOP: ib, chess.KNIGHT: plain}
    kings = board.kings
    idx = []
    for m in moves:
        s = m.from_square * 64 + m.to_square
        if m.promotion is not None:
            idx.append(promoted[m.promotion][s])
        elif (1 << m.from_square) & kings and board.is_castling(m):
            idx.append(move_index(board, m, transform))
        else:
            idx.append(plain[s])
    return moves, idx


def legal_moves_and_indices(
    board: chess.Board, transform: int = 0
) -> tuple[list[chess.Move], list[int]]:
    """Legal moves of ``board`` in python-chess's order and the policy index of each under
    canonical ``transform`` (the transform of the board's planes)."""
    if type(board) is not chess.Board:
        return _slow(board, transform)  # variants: python-chess's rules
    turn = board.turn
    occ_co = board.occupied_co
    ours, theirs = occ_co[turn], occ_co[not turn]
    kings = board.kings
    king_mask = kings & ours
    if not king_mask or king_mask & (king_mask - 1):
        return _slow(board, transform)
    king = king_mask.bit_length() - 1
    if board.attackers_mask(not turn, king):
        return _slow(board, transform)  # evasions
    blockers = board._slider_blockers(king)  # our pieces pinned to the king
    plain, iq, ir, ib = _index_tables(turn, transform)
    occupied = ours | theirs
    pawns = board.pawns
    knights, bishops, rooks, queens = board.knights, board.bishops, board.rooks, board.queens
    moves: list[chess.Move] = []
    idx: list[int] = []
    add_move, add_idx = moves.append, idx.append

    # Pieces, by decreasing from-square then to-square (python-chess's scan_reversed order).
    bb = ours & ~pawns
    while bb:
        sq = bb.bit_length() - 1
        bit = 1 << sq
        bb ^= bit
        if bit & knights:
            targets = BB_KNIGHT_ATTACKS[sq]
        elif bit & kings:
            targets = BB_KING_ATTACKS[sq]
        else:
            targets = 0
            if bit & (bishops | queens):
                targets = BB_DIAG_ATTACKS[sq][BB_DIAG_MASKS[sq] & occupied]
            if bit & (rooks | queens):
                targets |= (
                    BB_RANK_ATTACKS[sq][BB_RANK_MASKS[sq] & occupied]
                    | BB_FILE_ATTACKS[sq][BB_FILE_MASKS[sq] & occupied]
                )
        targets &= ~ours
        if bit & blockers:
            targets &= BB_RAYS[sq][king]  # a pinned piece stays on its line with the king
        base = sq * 64
        if sq == king:
            while targets:
                to = targets.bit_length() - 1
                targets ^= 1 << to
                if not board.attackers_mask(not turn, to):
                    add_move(_PLAIN[base + to])
                    add_idx(plain[base + to])
        else:
            while targets:
                to = targets.bit_length() - 1
                targets ^= 1 << to
                add_move(_PLAIN[base + to])
                add_idx(plain[base + to])

    # Castling (python-chess checks the king's path itself; lc0 encodes king-takes-rook). Its
    # generator is slow, so first a necessary condition (also in chess960): the squares between
    # the king and a rook with castling rights are empty.
    rights = board.castling_rights & ours & _BACK_RANKS
    while rights:
        rook = rights.bit_length() - 1
        rights ^= 1 << rook
        if not chess.between(king, rook) & occupied:
            for move in board.generate_castling_moves():
                add_move(move)
                add_idx(move_index(board, move, transform))
            break

    mine = pawns & ours
    if not mine:
        return moves, idx
    attacks = BB_PAWN_ATTACKS[turn]
    # Pawn captures.
    bb = mine
    while bb:
        sq = bb.bit_length() - 1
        bit = 1 << sq
        bb ^= bit
        targets = attacks[sq] & theirs
        if bit & blockers:
            targets &= BB_RAYS[sq][king]
        base = sq * 64
        while targets:
            to = targets.bit_length() - 1
            targets ^= 1 << to
            s = base + to
            if (1 << to) & _BACK_RANKS:
                moves += (_QUEEN[s], _ROOK[s], _BISHOP[s], _KNIGHT[s])
                idx += (iq[s], ir[s], ib[s], plain[s])  # knight: the plain move's index
            else:
                add_move(_PLAIN[s])
                add_idx(plain[s])
    # Pushes: single then double, by decreasing target square.
    if turn == chess.WHITE:
        single = mine << 8 & ~occupied
        double = single << 8 & ~occupied & _RANKS_3_4
        step = -8
    else:
        single = mine >> 8 & ~occupied
        double = single >> 8 & ~occupied & _RANKS_5_6
        step = 8
    for targets, back in ((single, step), (double, 2 * step)):
        while targets:
            to = targets.bit_length() - 1
            targets ^= 1 << to
            sq = to + back
            if (1 << sq) & blockers and not BB_RAYS[sq][king] & (1 << to):
                continue
            s = sq * 64 + to
            if (1 << to) & _BACK_RANKS:
                moves += (_QUEEN[s], _ROOK[s], _BISHOP[s], _KNIGHT[s])
                idx += (iq[s], ir[s], ib[s], plain[s])
            else:
                add_move(_PLAIN[s])
                add_idx(plain[s])
    # En passant (python-chess's full test: the capture may expose the king along the rank).
    if board.ep_square is not None:
        for move in board.generate_pseudo_legal_ep():
            if board._is_safe(king, blockers, move):
                add_move(move)
                add_idx(move_index(board, move, transform))
    return moves, idx
