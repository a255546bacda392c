"""Reference (python-chess), not the engine's runtime: see nets/training/reference/__init__.py.

lc0's input planes (src/neural/encoder.cc) for every supported input format.

Layout of the 112 planes, each 8x8 (rank, file) in the side to move's frame (ranks flipped
when black is to move):
  13t + 0..5   our P N B R Q K in history step t (t = 0 now, 1 one ply ago, ... 7)
  13t + 6..11  their P N B R Q K
  13t + 12     all ones if that position is a repetition
  104..107     format 1: all ones if we / we / they / they can castle queen / king / queen / king
  104, 105     formats >= 2: squares of the rooks (both colours) with queen- / king-side rights
  108          format 1, 2: all ones if black is to move; canonical formats: en-passant marker
  109          rule50 plies (formats 1-3) or plies / 100 (hectoplies formats 4, 5, 132, 133)
  110          zero, or all ones when black is to move (armageddon formats 132, 133)
  111          all ones
Canonical formats (>= 3) then transform planes 0..108 (see :mod:`.transforms`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import chess
import numpy as np

from engine.backend import INPUT_PLANES

from engine.encoding.formats import FormatRules, HistoryFill, format_rules, parse_history_fill
from .history import GameHistory
from .transforms import NO_TRANSFORM, choose_transform, mirror_ranks, transform_planes

HISTORY_STEPS = 8
PLANES_PER_STEP = 13
AUX_BASE = HISTORY_STEPS * PLANES_PER_STEP  # 104
RULE50_PLANE = AUX_BASE + 5  # 109
ALL_ONES = (1 << 64) - 1
_RANK_1 = 0xFF
_RANK_8 = 0xFF << 56
_EMPTY_STEP = [0] * PLANES_PER_STEP


@dataclass(frozen=True)
class EncodedMasks:
    """One position as lc0's InputPlanes: 112 uint64 masks in ABSOLUTE coordinates (the frame
    flip for black happens later, vectorised), the rule50 plane's value, whether black is to
    move, and the canonical transform chosen (0 for non-canonical formats)."""

    masks: list[int]
    rule50_value: float
    black_to_move: bool
    transform: int


def _castling_rooks(board: chess.Board) -> tuple[int, int, int, int]:
    """(white queen-side, white king-side, black queen-side, black king-side) rook squares
    with castling rights, as bitboards (0 when the right is absent)."""
    if not board.castling_rights:
        return 0, 0, 0, 0  # the common case; skips python-chess's rights validation
    rights = board.clean_castling_rights()
    if rights != board.castling_rights:
        raise ValueError(
            f"castling rights of {board.fen()!r}: expected a rook on each castling square "
            f"(lc0 cannot encode rights without their rook), got rights on "
            f"{[chess.square_name(s) for s in chess.scan_forward(board.castling_rights)]}"
        )
    out = []
    for color, back_rank in ((chess.WHITE, _RANK_1), (chess.BLACK, _RANK_8)):
        king = board.king(color)
        own = rights & back_rank
        if not own or king is None:
            out += [0, 0]
            continue
        king_bit = 1 << king
        queenside = own & (king_bit - 1)  # rooks on files left of the king
        out += [queenside, own & ~queenside]
    return out[0], out[1], out[2], out[3]


def _check_ep_rank(board: chess.Board, history: GameHistory) -> None:
    ep = history.at(0).ep_square
    if ep is not None and chess.square_rank(ep) not in (2, 5):
        raise ValueError(
            f"en-passant square of the root position: expected rank 3 or 6, got "
            f"{chess.square_name(ep)} (lc0 rejects this FEN)"
        )


def position_masks(board: chess.Board, rules: FormatRules, fill: HistoryFill) -> EncodedMasks:
    """Masks of ``board`` following lc0's EncodePositionNoTransform + ChooseTransform."""
    history = GameHistory(board)
    _check_ep_rank(board, history)
    last = history.last
    current = history.at(last)
    us = current.turn
    black = us == chess.BLACK

    masks: list[int] = []
    castling_now = current.castling_rights
    stop_early = rules.canonical
    history_idx = last
    i = 0
    while i < HISTORY_STEPS:
        is_fill = history_idx < 0
        index = 0 if is_fill else history_idx
        pos = history.at(index)
        # Canonical formats: a castling change or an en-passant position can't be repeated,
        # so older history is irrelevant (lc0 stops there; the current position is always sent).
        if stop_early and pos.castling_rights != castling_now:
            break
        if stop_early and history_idx != last and history.ep_marker(index) is not None:
            break
        if is_fill and fill is HistoryFill.NO:
            break
        if is_fill and fill is HistoryFill.FEN_ONLY and history.root_is_startpos():
            break
        repeated = (not is_fill) and history.is_repetition(index)
        if rules.repeats_only and not repeated and i > 0:
            # v2 writes older slots only for repetitions. lc0 itself loops forever once it
            # runs past the root here with rule50 > 0 (those positions are absent from its
            # reference); nothing older can be a repetition, so we stop.
            if pos.halfmove_clock == 0 or is_fill:
                break
            history_idx -= 1
            continue
        masks += _step_masks(pos, us, repeated)
        if is_fill:
            _undo_root_double_push(masks, history, us)
        if stop_early and pos.halfmove_clock == 0:
            break
        i += 1
        history_idx -= 1
    masks += _EMPTY_STEP * (HISTORY_STEPS - len(masks) // PLANES_PER_STEP)

    rights = _castling_rooks(board)
    white_rooks = (rights[0], rights[1])
    black_rooks = (rights[2], rights[3])
    ours, theirs = (black_rooks, white_rooks) if black else (white_rooks, black_rooks)
    if rules.castling_as_rooks:
        masks += [rights[0] | rights[2], rights[1] | rights[3], 0, 0]
    else:
        masks += [
            ALL_ONES if ours[0] else 0,
            ALL_ONES if ours[1] else 0,
            ALL_ONES if theirs[0] else 0,
            ALL_ONES if theirs[1] else 0,
        ]
    if rules.canonical:
        marker = history.ep_marker(last)
        if marker is None:
            masks.append(0)
        else:  # lc0 keeps the marker on the back rank of the side that pushed
            masks.append(1 << (marker & 7 | (0 if chess.square_rank(marker) == 2 else 56)))
    else:
        masks.append(ALL_ONES if black else 0)
    masks.append(ALL_ONES)  # 109: rule50, its value is set on the dense plane
    masks.append(ALL_ONES if rules.armageddon and black else 0)
    masks.append(ALL_ONES)

    hm = current.halfmove_clock
    rule50_value = hm / 100.0 if rules.hectoplies else float(hm)
    transform = NO_TRANSFORM
    if rules.canonical:
        current_pieces = masks[:12]
        castling = masks[AUX_BASE] | masks[AUX_BASE + 1]
        if black:
            current_pieces = [mirror_ranks(m) for m in current_pieces]
            castling = mirror_ranks(castling)
        transform = choose_transform(current_pieces, castling)
    return EncodedMasks(masks, rule50_value, black, transform)


def _step_masks(pos, us: bool, repeated: bool) -> list[int]:
    """13 masks of one history step: our six piece types, theirs, the repetition plane."""
    ours, theirs = (pos.occupied_w, pos.occupied_b) if us else (pos.occupied_b, pos.occupied_w)
    p, n, b, r, q, k = pos.pawns, pos.knights, pos.bishops, pos.rooks, pos.queens, pos.kings
    # Spelled out: this runs 8 times per encoded position.
    return [
        p & ours,
        n & ours,
        b & ours,
        r & ours,
        q & ours,
        k & ours,
        p & theirs,
        n & theirs,
        b & theirs,
        r & theirs,
        q & theirs,
        k & theirs,
        ALL_ONES if repeated else 0,
    ]


def _undo_root_double_push(masks: list[int], history: GameHistory, us: bool) -> None:
    """History fill of a root with an en-passant square shows the pushed pawn back home."""
    ep = history.at(0).ep_square
    if ep is None:
        return
    white_pushed = chess.square_rank(ep) == 2
    landed, home = (ep + 8, ep - 8) if white_pushed else (ep - 8, ep + 8)
    plane = len(masks) - PLANES_PER_STEP + (0 if white_pushed == us else 6)
    masks[plane] = (masks[plane] & ~(1 << landed)) | (1 << home)


def encode_masks(
    boards: Sequence[chess.Board], input_format: int = 1, history_fill: str = "fen_only"
) -> list[EncodedMasks]:
    rules = format_rules(input_format)
    fill = parse_history_fill(history_fill)
    return [position_masks(b, rules, fill) for b in boards]


def masks_to_planes(encoded: Sequence[EncodedMasks]) -> np.ndarray:
    """float32 planes [N, 112, 8, 8] from encoded masks (frame flip, transform, rule50)."""
    n = len(encoded)
    # Little-endian uint64: byte r of a mask is rank r, bit f of that byte is file f.
    # fromiter over a chain: no intermediate list of n * 112 Python ints (2x faster).
    flat = np.fromiter(
        itertools.chain.from_iterable(e.masks for e in encoded), dtype="<u8", count=n * INPUT_PLANES
    ).reshape(n, INPUT_PLANES)
    black = [k for k, e in enumerate(encoded) if e.black_to_move]
    if black:
        flat[black] = flat[black].byteswap()  # rank r <-> rank 7 - r: one byte per rank
    # Bit f of byte r is square (r, f): unpacking the bytes little-endian gives the 8x8 planes.
    # (unpackbits then one cast: ~7x faster than a table lookup per byte.)
    bits = np.unpackbits(flat.view(np.uint8), bitorder="little")
    planes = bits.reshape(n, INPUT_PLANES, 8, 8).astype(np.float32)
    planes[:, RULE50_PLANE] = np.array([e.rule50_value for e in encoded], np.float32)[:, None, None]
    for t in {e.transform for e in encoded} - {NO_TRANSFORM}:
        rows = [k for k, e in enumerate(encoded) if e.transform == t]
        planes[rows] = transform_planes(planes[rows], t)
    return planes


def encode_batch(
    boards: Sequence[chess.Board], input_format: int = 1, history_fill: str = "fen_only"
) -> np.ndarray:
    """float32 [N, 112, 8, 8]: lc0's input planes of each board (history from its move stack)."""
    if len(boards) == 0:
        format_rules(input_format)
        return np.zeros((0, INPUT_PLANES, 8, 8), np.float32)
    return masks_to_planes(encode_masks(boards, input_format, history_fill))


def encode_planes(
    board: chess.Board, input_format: int = 1, history_fill: str = "fen_only"
) -> np.ndarray:
    """float32 [112, 8, 8]: lc0's input planes of ``board`` (see the module docstring)."""
    return encode_batch([board], input_format, history_fill)[0]


def transform_of(board: chess.Board, input_format: int = 1) -> int:
    """Canonical transform lc0 applies to ``board`` (0 for non-canonical formats).

    It depends on the current position only (pieces and castling rights), so this skips the
    history walk of :func:`position_masks`."""
    rules = format_rules(input_format)
    if not rules.canonical:
        return NO_TRANSFORM
    us = board.turn
    ours, theirs = board.occupied_co[us], board.occupied_co[not us]
    pieces = (board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings)
    masks = [p & ours for p in pieces] + [p & theirs for p in pieces]
    castling = board.castling_rights
    if us == chess.BLACK:
        masks = [mirror_ranks(m) for m in masks]
    return choose_transform(masks, castling)
