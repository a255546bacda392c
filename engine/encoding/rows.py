"""lc0's 112 input planes from the compiled board's rows (numba), for the search's hot path:
the engine's one encoder (engine.encoding's functions on python-chess boards are its edge).

The planes of docs/encoding.md (the python-chess reference nets/training/reference/planes.py,
which the tests compare with, spells out the same rules), computed from a
game's position rows (:mod:`engine.board.position`): ``rows[0]`` is the game's root (the FEN
position), ``rows[last]`` the position to encode, every row in between one ply apart.
Everything compiled is ``@njit(cache=True, nogil=True)``, and what the search calls allocates
nothing:

* :func:`encode_packed` writes one position's planes as lc0 packs them (a mask of squares and
  a value a plane) and returns the canonical transform chosen; :func:`expand_into` and
  :func:`expand_batch` make float32 ``[112, 8, 8]`` planes of them, and :func:`encode_into`
  does both;
* :func:`encode_batch_into` does it for many positions of concatenated games in one call;
* :func:`canonical_transform` is lc0's ChooseTransform of one row (what the policy indices of
  a leaf need before its planes exist);
* :func:`is_repetition` is lc0's repetition flag (engine/board/repetition.py, the rule the
  search's draw rules use too).

Format rules are derived from the format number inside (as lc0 does, with comparisons) and
the history fill is a small integer (``FILL_NO``, ``FILL_FEN_ONLY``, ``FILL_ALWAYS``).
Inputs are validated at the Python edge: :func:`encode_boards` (python-chess boards, for
tests and tools) raises lc0's errors (:func:`check_board`); :func:`transform_of`,
:func:`legal_moves_and_indices` and :func:`policy_indices` read python-chess boards too.
"""

from __future__ import annotations

from collections.abc import Sequence

import chess
import numpy as np
from numba import njit

from engine.backend import INPUT_PLANES
from engine.board import MAX_MOVES, from_chess_position, game_rows, legal_moves, to_chess_move
from engine.board.bitboards import ONE, ZERO, bit, msb
from engine.board.position import (
    BISHOPS,
    BLACK,
    CASTLING,
    EP,
    KINGS,
    KNIGHTS,
    PAWNS,
    QUEENS,
    ROOKS,
    RULE50,
    TURN,
    WHITE,
    unhashed_row,
)
from engine.board.repetition import repetitions

from .formats import HistoryFill, format_rules, parse_history_fill

FILL_NO, FILL_FEN_ONLY, FILL_ALWAYS = 0, 1, 2
FILL_CODES = {
    HistoryFill.NO: FILL_NO,
    HistoryFill.FEN_ONLY: FILL_FEN_ONLY,
    HistoryFill.ALWAYS: FILL_ALWAYS,
}
"""HistoryFill -> the integer the compiled functions take."""

HISTORY_STEPS = 8
PLANES_PER_STEP = 13
AUX_BASE = HISTORY_STEPS * PLANES_PER_STEP  # 104
NO_SQUARE = np.uint64(64)
ALL_SQUARES = np.uint64(0xFFFFFFFFFFFFFFFF)

# Format numbers (see .formats): rules follow from comparisons, as in lc0.
_CASTLING_PLANE, _CANONICAL, _HECTOPLIES = 2, 3, 4
_V2, _ARMAGEDDON, _V2_ARMAGEDDON = 5, 132, 133

_STARTPOS = unhashed_row(chess.Board())
"""The standard start position's row (history fill ``fen_only`` compares the root to it, by
:func:`same_board`'s fields, which leave the hash out)."""
_KEY_FIELDS = TURN + 1
"""Fields WHITE..TURN: pieces, castling rights, en-passant marker and side to move."""

# Bitboard constants of the transforms (lc0's ChooseTransform; see .transforms).
_LEFT_HALF = np.uint64(0x0F0F0F0F0F0F0F0F)
_TOP_HALF = np.uint64(0xFFFFFFFF00000000)
_ABOVE_DIAGONAL = np.uint64(0xE0C08000)
_ON_DIAGONAL = np.uint64(0x10204080)
_K1 = np.uint64(0x5555555555555555)
_K2 = np.uint64(0x3333333333333333)
_K4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_B1 = np.uint64(0x00FF00FF00FF00FF)
_B2 = np.uint64(0x0000FFFF0000FFFF)
_A1 = np.uint64(0xF0F0F0F00F0F0F0F)
_A2 = np.uint64(0xCCCC0000CCCC0000)
_A3 = np.uint64(0xAA00AA00AA00AA00)
_S1, _S2, _S4, _S8 = np.uint64(1), np.uint64(2), np.uint64(4), np.uint64(8)
_S9, _S16, _S18 = np.uint64(9), np.uint64(16), np.uint64(18)
_S32, _S36 = np.uint64(32), np.uint64(36)
_RANK_1 = np.uint64(0xFF)
_RANK_8 = np.uint64(0xFF << 56)


@njit(cache=True, nogil=True)
def flip_files(bb):
    """Files a <-> h (bits reversed in each byte)."""
    bb = ((bb >> _S1) & _K1) | ((bb & _K1) << _S1)
    bb = ((bb >> _S2) & _K2) | ((bb & _K2) << _S2)
    return ((bb >> _S4) & _K4) | ((bb & _K4) << _S4)


@njit(cache=True, nogil=True)
def mirror_ranks(bb):
    """Ranks 1 <-> 8 (bytes reversed)."""
    bb = ((bb >> _S8) & _B1) | ((bb & _B1) << _S8)
    bb = ((bb >> _S16) & _B2) | ((bb & _B2) << _S16)
    return (bb >> _S32) | (bb << _S32)


@njit(cache=True, nogil=True)
def transpose(bb):
    """Reflection across the a8-h1 anti-diagonal (python-chess's flip_anti_diagonal)."""
    t = bb ^ (bb << _S36)
    bb = bb ^ ((t ^ (bb >> _S36)) & _A1)
    t = (bb ^ (bb << _S18)) & _A2
    bb = bb ^ t ^ (t >> _S18)
    t = (bb ^ (bb << _S9)) & _A3
    return bb ^ t ^ (t >> _S9)


@njit(cache=True, nogil=True)
def apply_transform(bb, transform):
    """``bb`` under lc0's ``transform`` (bits: 1 flip files, 2 mirror ranks, 4 transpose)."""
    if transform & 1:
        bb = flip_files(bb)
    if transform & 2:
        bb = mirror_ranks(bb)
    if transform & 4:
        bb = transpose(bb)
    return bb


@njit(cache=True, nogil=True)
def _compare_transposing(bb, black, initial):
    """-1, 0, 1 as ``bb`` in the side to move's frame after ``initial`` is <, ==, > its
    transpose."""
    if black:
        bb = mirror_ranks(bb)
    bb = apply_transform(bb, initial & 3)
    alternative = transpose(bb)
    if bb < alternative:
        return -1
    if bb > alternative:
        return 1
    return 0


@njit(cache=True, nogil=True)
def canonical_transform(pos, fmt):
    """lc0's ChooseTransform for the position row ``pos`` in input format ``fmt`` (0 for the
    non-canonical formats 1 and 2): equal to the reference nets/training/reference/planes.py ``transform_of``."""
    if fmt < _CANONICAL or pos[CASTLING] != ZERO:
        return 0  # castling is not symmetric under any transform
    us = np.int64(pos[TURN])
    black = us != 0
    ours = pos[us]
    our_king = pos[KINGS] & ours
    if black:
        our_king = mirror_ranks(our_king)
    transform = 0
    if our_king & _LEFT_HALF:
        transform |= 1
        our_king = flip_files(our_king)
    if pos[PAWNS] != ZERO:
        return transform  # pawns: only the file flip keeps the position equivalent
    if our_king & _TOP_HALF:
        transform |= 2
        our_king = mirror_ranks(our_king)
    if our_king & _ABOVE_DIAGONAL:
        return transform | 4
    if our_king & _ON_DIAGONAL:
        # Tie-breaks in lc0's order: everything, ours, K, Q, R, N, B (both colours).
        for k in range(7):
            if k == 0:
                bb = pos[WHITE] | pos[BLACK]
            elif k == 1:
                bb = ours
            elif k == 2:
                bb = pos[KINGS]
            elif k == 3:
                bb = pos[QUEENS]
            elif k == 4:
                bb = pos[ROOKS]
            elif k == 5:
                bb = pos[KNIGHTS]
            else:
                bb = pos[BISHOPS]
            outcome = _compare_transposing(bb, black, transform)
            if outcome < 0:
                return transform
            if outcome > 0:
                return transform | 4
    return transform


@njit(cache=True, nogil=True)
def same_board(a, b):
    """lc0's ChessBoard equality of two rows (pieces, castling rights, en-passant marker) and
    the side to move, field by field."""
    for f in range(_KEY_FIELDS):
        if a[f] != b[f]:
            return False
    return True


@njit(cache=True, nogil=True)
def is_repetition(rows, index):
    """Whether lc0 counts ``rows[index]`` as a repetition (its repetitions >= 1), by the one
    repetition rule (:func:`engine.board.repetition.repetitions`); the root never repeats."""
    return repetitions(rows, index)[0] > 0


@njit(cache=True, nogil=True)
def _put(masks, values, plane, bb, black, transform, value):
    """Plane ``plane`` holds ``value`` on the squares of absolute bitboard ``bb`` (frame of
    the side to move, then the canonical transform): its mask and its value."""
    if bb == ZERO:
        return
    if black:
        bb = mirror_ranks(bb)
    masks[plane] = apply_transform(bb, transform)
    values[plane] = value


@njit(cache=True, nogil=True)
def _fill(masks, values, plane, value):
    """Plane ``plane`` holds ``value`` on every square."""
    masks[plane] = ALL_SQUARES
    values[plane] = value


@njit(cache=True, nogil=True)
def _castling_rooks(pos):
    """Rook squares with castling rights: white queen-side, white king-side, black queen-side,
    black king-side (0 where absent); queen-side = files left of that colour's king."""
    rights = pos[CASTLING]
    wq = wk = bq = bk = ZERO
    if rights == ZERO:
        return wq, wk, bq, bk
    for colour in range(2):
        own = rights & (_RANK_1 if colour == 0 else _RANK_8)
        king = pos[KINGS] & pos[colour]
        if own == ZERO or king == ZERO:
            continue
        queenside = own & (bit(msb(king)) - ONE)
        if colour == 0:
            wq, wk = queenside, own & ~queenside
        else:
            bq, bk = queenside, own & ~queenside
    return wq, wk, bq, bk


@njit(cache=True, nogil=True)
def encode_packed(rows, last, fmt, fill, masks, values):
    """Write lc0's 112 planes of ``rows[last]`` (history ``rows[:last + 1]``, ``rows[0]`` the
    game's root) in input format ``fmt`` with history fill ``fill`` (FILL_*) as lc0 packs
    them (its InputPlane): ``masks`` uint64 [112], the squares of each plane (bit 8 * rank +
    file), and ``values`` float32 [112], the value on those squares; returns the canonical
    transform applied (0 for formats 1, 2). :func:`expand_into` makes the float planes.

    lc0's EncodePositionForNN: see the reference nets/training/reference/planes.py ``position_masks``, which this
    follows step by step."""
    return _encode(rows, last, fmt, fill, np.int64(-1), masks, values)


@njit(cache=True, nogil=True)
def window_suffices(fmt):
    """Whether :func:`take_window`'s last HISTORY_STEPS rows are all that the planes of format
    ``fmt`` read (v2's formats look further back, for repetitions)."""
    return fmt != _V2 and fmt != _V2_ARMAGEDDON


@njit(cache=True, nogil=True)
def take_window(rows, last, window):
    """Copy what :func:`encode_window` needs of ``rows[last]``'s history into ``window``
    uint64 [HISTORY_STEPS, FIELDS]: the last HISTORY_STEPS rows (all of them from the game's
    root when there are fewer); returns (``rows[last]``'s index in the window, a bit d set when
    ``rows[last - d]`` repeats an earlier position). For formats where :func:`window_suffices`."""
    first = max(last - (HISTORY_STEPS - 1), 0)
    reps = 0
    for i in range(first, last + 1):
        for f in range(rows.shape[1]):  # element by element: no array views to count
            window[i - first, f] = rows[i, f]
        if is_repetition(rows, i):
            reps |= 1 << (last - i)
    return last - first, reps


@njit(cache=True, nogil=True)
def encode_window(window, last, reps, fmt, fill, masks, values):
    """:func:`encode_packed` from what :func:`take_window` kept (the same planes): the
    search thread takes the window, an evaluation thread encodes it."""
    return _encode(window, last, fmt, fill, np.int64(reps), masks, values)


@njit(cache=True, nogil=True, inline="always")
def _encode(rows, last, fmt, fill, reps, masks, values):
    """:func:`encode_packed`; ``reps``: bit d set when ``rows[last - d]`` repeats, or -1 to
    find out from ``rows``."""
    cur = rows[last]
    black = np.int64(cur[TURN]) != 0
    transform = canonical_transform(cur, fmt)
    masks[:] = ZERO
    values[:] = np.float32(0.0)
    _history_planes(rows, last, fmt, fill, masks, values, transform, reps)
    _aux_planes(cur, fmt, black, transform, masks, values)
    return transform


@njit(cache=True, nogil=True)
def expand_into(masks, values, out):
    """The float32 planes ``out`` [112, 8, 8] of one position's packed planes (masks uint64
    [112], values float32 [112]): ``values[p]`` on the squares of ``masks[p]``, else 0."""
    flat = out.reshape(masks.shape[0], 64)
    zero = np.float32(0.0)
    for p in range(masks.shape[0]):
        mask, value = masks[p], values[p]
        for s in range(64):  # branch-free: the compiler vectorises it
            flat[p, s] = value if (mask >> np.uint64(s)) & ONE else zero


@njit(cache=True, nogil=True)
def expand_batch(masks, values, out, start, n):
    """:func:`expand_into` for positions ``start`` to ``n - 1`` of masks [N, 112] and values
    [N, 112] into out [N, 112, 8, 8] (the evaluation thread's part of a search's batch)."""
    for r in range(start, n):
        expand_into(masks[r], values[r], out[r])


@njit(cache=True, nogil=True)
def encode_into(rows, last, fmt, fill, out):
    """:func:`encode_packed` as float32 planes ``out`` [112, 8, 8]; returns the canonical
    transform applied."""
    masks = np.empty(out.shape[0], np.uint64)
    values = np.empty(out.shape[0], np.float32)
    transform = encode_packed(rows, last, fmt, fill, masks, values)
    expand_into(masks, values, out)
    return transform


@njit(cache=True, nogil=True, inline="always")
def _history_planes(rows, last, fmt, fill, masks, values, transform, reps):
    """The 8 history slots' planes (13 each) of ``rows[last]``, newest first: where lc0 stops
    (canonical formats at a castling change, an en-passant position or a zeroing move; the
    history fill; v2's slots for repetitions only) and each slot's repetition flag."""
    canonical = fmt >= _CANONICAL
    repeats_only = fmt == _V2 or fmt == _V2_ARMAGEDDON
    us = np.int64(rows[last][TURN])
    castling_now = rows[last][CASTLING]
    root = rows[0]
    root_ep = root[EP]
    one = np.float32(1.0)
    history_idx = last
    i = 0
    while i < HISTORY_STEPS:
        is_fill = history_idx < 0
        index = 0 if is_fill else history_idx
        pos = rows[index]
        # Canonical formats: a castling change or an en-passant position can't be repeated,
        # so older history is irrelevant (lc0 stops there; the current position is always sent).
        if canonical and pos[CASTLING] != castling_now:
            break
        if canonical and history_idx != last and pos[EP] != NO_SQUARE:
            break
        if is_fill:
            if fill == FILL_NO:
                break
            if fill == FILL_FEN_ONLY and same_board(root, _STARTPOS):
                break
        if is_fill:
            repeated = False
        elif reps < 0:
            repeated = is_repetition(rows, index)
        else:
            repeated = (reps >> (last - index)) & 1 != 0
        if repeats_only and not repeated and i > 0:
            # v2 writes older slots only for repetitions; nothing before the root repeats.
            if pos[RULE50] == ZERO or is_fill:
                break
            history_idx -= 1
            continue
        base = PLANES_PER_STEP * i
        _piece_planes(pos, us, is_fill, root_ep, base, transform, masks, values)
        if repeated:
            _fill(masks, values, base + 12, one)
        if canonical and pos[RULE50] == ZERO:
            break
        i += 1
        history_idx -= 1


@njit(cache=True, nogil=True, inline="always")
def _piece_planes(pos, us, is_fill, root_ep, base, transform, masks, values):
    """One history slot's 12 piece planes from ``base``: ours P N B R Q K, then theirs (``us``
    the side to move of the position encoded); a history fill of a root with an en-passant
    square has the pushed pawn back home."""
    them = 1 - us
    black = us != 0
    one = np.float32(1.0)
    ours, theirs = pos[us], pos[them]
    for f in range(6):
        pieces = pos[PAWNS + f]
        mine, other = pieces & ours, pieces & theirs
        if f == 0 and is_fill and root_ep != NO_SQUARE:
            rank = root_ep >> np.uint64(3)
            if rank == np.uint64(2) or rank == np.uint64(5):
                white_pushed = rank == np.uint64(2)
                if white_pushed:
                    landed, home = root_ep + np.uint64(8), root_ep - np.uint64(8)
                else:
                    landed, home = root_ep - np.uint64(8), root_ep + np.uint64(8)
                if white_pushed == (not black):
                    mine = (mine & ~bit(landed)) | bit(home)
                else:
                    other = (other & ~bit(landed)) | bit(home)
        _put(masks, values, base + f, mine, black, transform, one)
        _put(masks, values, base + 6 + f, other, black, transform, one)


@njit(cache=True, nogil=True, inline="always")
def _aux_planes(cur, fmt, black, transform, masks, values):
    """The 8 auxiliary planes of the position row ``cur`` by input format: castling (rook
    squares, or four flags ours first), en-passant marker or side to move, rule-50 counter,
    Armageddon side, and the all-ones plane."""
    one = np.float32(1.0)
    wq, wk, bq, bk = _castling_rooks(cur)
    if fmt >= _CASTLING_PLANE:
        _put(masks, values, AUX_BASE, wq | bq, black, transform, one)
        _put(masks, values, AUX_BASE + 1, wk | bk, black, transform, one)
    else:
        if black:
            wq, wk, bq, bk = bq, bk, wq, wk  # ours first
        if wq != ZERO:
            _fill(masks, values, AUX_BASE, one)
        if wk != ZERO:
            _fill(masks, values, AUX_BASE + 1, one)
        if bq != ZERO:
            _fill(masks, values, AUX_BASE + 2, one)
        if bk != ZERO:
            _fill(masks, values, AUX_BASE + 3, one)
    if fmt >= _CANONICAL:
        marker = cur[EP]
        if marker != NO_SQUARE:  # lc0 keeps the marker on the back rank of the side that pushed
            rank_base = ZERO if (marker >> np.uint64(3)) == np.uint64(2) else np.uint64(56)
            square = bit((marker & np.uint64(7)) | rank_base)
            _put(masks, values, AUX_BASE + 4, square, black, transform, one)
    elif black:
        _fill(masks, values, AUX_BASE + 4, one)
    rule50 = np.float64(cur[RULE50])
    _fill(masks, values, AUX_BASE + 5, np.float32(rule50 / 100.0 if fmt >= _HECTOPLIES else rule50))
    if (fmt == _ARMAGEDDON or fmt == _V2_ARMAGEDDON) and black:
        _fill(masks, values, AUX_BASE + 6, one)
    _fill(masks, values, AUX_BASE + 7, one)


@njit(cache=True, nogil=True)
def encode_batch_into(rows, roots, lasts, fmt, fill, out, transforms):
    """Many positions in one call: position k is ``rows[lasts[k]]`` of the game whose root is
    ``rows[roots[k]]`` (games concatenated in ``rows``); planes into ``out[k]``, transforms
    into ``transforms[k]``."""
    for k in range(len(lasts)):
        root = roots[k]
        transforms[k] = encode_into(rows[root:], lasts[k] - root, fmt, fill, out[k])


def check_board(board: chess.Board) -> None:
    """At the Python edge, the errors lc0 gives ``board``'s game: a root en-passant square off
    ranks 3/6, castling rights without their rook."""
    ep = board.root().ep_square if board.move_stack else board.ep_square
    if ep is not None and chess.square_rank(ep) not in (2, 5):
        raise ValueError(
            f"en-passant square of the root position: expected rank 3 or 6, got "
            f"{chess.square_name(ep)} (lc0 rejects this FEN)"
        )
    if board.castling_rights and board.clean_castling_rights() != board.castling_rights:
        raise ValueError(
            f"castling rights of {board.fen()!r}: expected a rook on each castling square "
            f"(lc0 cannot encode rights without their rook), got rights on "
            f"{[chess.square_name(s) for s in chess.scan_forward(board.castling_rights)]}"
        )


def check_root_castling(board: chess.Board, rows: np.ndarray) -> None:
    """The castling error of :func:`check_board` for the game's root (``rows`` its game rows).

    The rows keep python-chess's cleaned rights, which differ from the root's own where a
    right has no rook; lc0 compares the uncleaned rights in the history, so such a root is
    refused here rather than encoded differently."""
    raw = board.root().castling_rights if board.move_stack else board.castling_rights
    if raw != int(rows[0, CASTLING]):
        raise ValueError(
            f"castling rights of the game's root {board.root().fen()!r}: expected a rook on "
            f"each castling square (lc0 cannot encode rights without their rook), got rights "
            f"on {[chess.square_name(s) for s in chess.scan_forward(raw)]}"
        )


def transform_of(board: chess.Board, input_format: int = 1) -> int:
    """lc0's canonical transform of ``board``'s planes in ``input_format`` (0 for the
    non-canonical formats 1 and 2), by :func:`canonical_transform`."""
    fmt = format_rules(input_format).input_format
    return int(canonical_transform(from_chess_position(board), fmt))


def legal_moves_and_indices(
    board: chess.Board, input_format: int = 1
) -> tuple[list[chess.Move], list[int]]:
    """The legal moves of ``board`` (the compiled generator's order, as the search's children
    before their sort by prior) and their indices in 0..1857 under the canonical transform of
    the board's planes in ``input_format``: the search's own move generator
    (engine/board/movegen.py), on a python-chess board."""
    fmt = format_rules(input_format).input_format
    pos = from_chess_position(board)
    words = np.zeros(MAX_MOVES, np.int32)
    indices = np.zeros(MAX_MOVES, np.int32)
    n = int(legal_moves(pos, np.int64(canonical_transform(pos, fmt)), words, indices))
    moves = [to_chess_move(w, board.chess960) for w in words[:n]]
    return moves, indices[:n].tolist()


def policy_indices(board: chess.Board, input_format: int = 1) -> dict[chess.Move, int]:
    """Every legal move of ``board`` -> its index in 0..1857 under the canonical transform of
    the board's planes in ``input_format`` (:func:`legal_moves_and_indices`)."""
    moves, indices = legal_moves_and_indices(board, input_format)
    return dict(zip(moves, indices))


def encode_boards(
    boards: Sequence[chess.Board], input_format: int = 1, history_fill: str = "fen_only"
) -> np.ndarray:
    """float32 [N, 112, 8, 8]: lc0's planes of each board (history from its move stack),
    through the compiled encoder (``engine.encoding.encode_batch``)."""
    planes, _ = encode_boards_with_transforms(boards, input_format, history_fill)
    return planes


def encode_boards_with_transforms(
    boards: Sequence[chess.Board], input_format: int = 1, history_fill: str = "fen_only"
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`encode_boards` and the canonical transform of each board (int32 [N])."""
    fmt = format_rules(input_format).input_format
    if len(boards) == 0:  # as encode_batch: no history_fill check without boards
        return np.zeros((0, INPUT_PLANES, 8, 8), np.float32), np.zeros(0, np.int32)
    fill = FILL_CODES[parse_history_fill(history_fill)]
    games = []
    for board in boards:
        check_board(board)
        rows = game_rows(board)
        check_root_castling(board, rows)
        games.append(rows)
    n = len(games)
    out = np.empty((n, INPUT_PLANES, 8, 8), np.float32)
    transforms = np.zeros(n, np.int32)
    lengths = np.array([len(g) for g in games], np.int64)
    roots = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    encode_batch_into(np.concatenate(games), roots, roots + lengths - 1, fmt, fill, out, transforms)
    return out, transforms
