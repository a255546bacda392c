"""Prototype: legal-move masks over lc0's 1858-move policy for a batch of positions, in one XLA
program (feasibility study for a compiled search core; nothing in the runtime imports this).

Positions are arrays, always from the side to move's view as lc0 sees it: a black-to-move board
is flipped vertically (square ``s`` -> ``s ^ 56``) and the colours swapped, so "our" pawns always
move up the board (+8) and our back rank is rank 1. Square ``s = rank * 8 + file`` (a1 = 0).

:func:`encode_boards` returns, for a batch of ``B`` python-chess boards:

* ``pieces``   int8 [B, 64]: 0 empty, 1..6 ours P N B R Q K, 7..12 theirs P N B R Q K;
* ``castling`` bool [B, 4]:  ours king-side, ours queen-side, theirs king-side, theirs
  queen-side (python-chess's cleaned rights: king and rook on their start squares);
* ``ep_file``  int8 [B]:     file (0..7) of an en-passant target square on our rank 6 with
  their pawn on rank 5 behind it, -1 for none.

:func:`legal_policy_mask` (jitted) maps those arrays to bool [B, 1858]: which policy moves are
legal, with the same indices as ``engine.encoding.legal_moves_and_indices(board, 1)`` (input
format 1, no canonical transform): castling is the king taking its own rook (e1h1, e1a1), a
knight promotion takes the plain move's index, queen/rook/bishop promotions their own.

Algorithm. JAX runs with x64 disabled, so a bitboard is two uint32 halves (:class:`Bitboards`,
[B] arrays each). Per position (elementwise on [B], ray fills of 7 one-step shifts):

* their sliders' rays in the 8 directions, our king removed from the occupancy, give the
  squares they attack (king steps, castling);
* our king's rays outwards met by their sliders' rays coming the other way give the checking
  sliders, the squares between (where a check is blocked) and our pieces pinned to the king,
  per line; knight and pawn checkers by one step from the king;
* en passant (at most two captures) is made on the occupancy, and the king must then not be
  attacked (the horizontal pin of both pawns leaving the rank included); castling from rights,
  empty path, not in check, king's path not attacked.

Per candidate move ([B, 1858], no gathers: each move's from, to and between squares are
constant bitboard halves built at import from ``POLICY_MOVES``, tested with ``&``): one of our
pieces that can make the move geometrically is on its from-square, the squares between are
empty, the destination is not ours, pawn rules (pushes to empty squares, captures of their
pieces; a pawn's move to the last rank exists only as promotions); then legality: king steps to
unattacked squares, other pieces only outside double check, onto a blocking/capturing square in
single check, along their own pin line when pinned.

Only standard chess (not chess960); positions with one king per side.

Cost (bin/movegen-bench): the compiled program is ~25 XLA CPU kernels. At small batches their
dispatch (a few us each, more when threads hop between busy cores) is most of the time, not the
arithmetic; at large batches the [B, 1858] candidate stage dominates.
"""

from __future__ import annotations

import random
from typing import NamedTuple

import chess
import jax
import jax.numpy as jnp
import numpy as np

from engine.backend import POLICY_MOVES

POLICY_SIZE = len(POLICY_MOVES)  # 1858

EMPTY = 0
PAWN, KNIGHT, BISHOP, ROOK, QUEEN, KING = 1, 2, 3, 4, 5, 6
THEIRS = 6
"""Offset of their pieces: their pawn is PAWN + THEIRS = 7 ... their king 12."""
NO_EP = -1

# Board geometry, our view.
RANK_5, RANK_6 = 4, 5  # 0-based ranks: en passant capturers stand on rank 5, land on rank 6
KING_START = 4  # e1
ROOK_START_KINGSIDE, ROOK_START_QUEENSIDE = 7, 0  # h1, a1
CASTLE_EMPTY_KINGSIDE = (5, 6)  # f1 g1
CASTLE_EMPTY_QUEENSIDE = (1, 2, 3)  # b1 c1 d1
CASTLE_SAFE_KINGSIDE = (5, 6)  # the king crosses f1 to g1
CASTLE_SAFE_QUEENSIDE = (2, 3)  # the king crosses d1 to c1 (b1 may be attacked)

# (rank step, file step) of the eight ray directions; a line id per direction, the same for a
# direction and its opposite: 0 horizontal, 1 vertical, 2 diagonal (a1-h8), 3 anti-diagonal.
ORTHOGONAL = ((0, 1), (0, -1), (1, 0), (-1, 0))
DIAGONAL = ((1, 1), (-1, -1), (1, -1), (-1, 1))
DIRECTIONS = ORTHOGONAL + DIAGONAL
NO_LINE = -1
LINE_HORIZONTAL, LINE_VERTICAL, LINE_DIAGONAL, LINE_ANTI = 0, 1, 2, 3
KNIGHT_STEPS = ((1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2))
KING_STEPS = DIRECTIONS


def line_of(dr: int, df: int) -> int:
    """Line id of a step (any length) along a rank, file or diagonal; NO_LINE otherwise."""
    if dr == 0 and df != 0:
        return LINE_HORIZONTAL
    if df == 0 and dr != 0:
        return LINE_VERTICAL
    if dr == df and dr != 0:
        return LINE_DIAGONAL
    if dr == -df and dr != 0:
        return LINE_ANTI
    return NO_LINE


def _policy_tables() -> dict[str, np.ndarray]:
    """Per policy move (index 0..1857): from/to square, which of our piece types can make it
    geometrically, its pawn kind, its line, and the squares strictly between from and to."""
    n = POLICY_SIZE
    t = {
        "from": np.zeros(n, np.int32),
        "to": np.zeros(n, np.int32),
        "line": np.full(n, NO_LINE, np.int32),
        "knight": np.zeros(n, bool),
        "bishop": np.zeros(n, bool),
        "rook": np.zeros(n, bool),
        "king": np.zeros(n, bool),
        "pawn_push": np.zeros(n, bool),
        "pawn_double": np.zeros(n, bool),
        "pawn_capture": np.zeros(n, bool),
        "between": np.zeros((64, n), bool),
    }
    for i, uci in enumerate(POLICY_MOVES):
        move = chess.Move.from_uci(uci)
        src, dst = move.from_square, move.to_square
        r0, f0, r1, f1 = src // 8, src % 8, dst // 8, dst % 8
        dr, df = r1 - r0, f1 - f0
        t["from"][i], t["to"][i] = src, dst
        line = line_of(dr, df)
        t["line"][i] = line
        # A pawn on rank 2..7 steps one rank up (to rank 8 only as a promotion: a plain index
        # there is the knight promotion); a double push starts on rank 2.
        pawn_rank = 1 <= r0 <= 6
        t["pawn_push"][i] = pawn_rank and dr == 1 and df == 0
        t["pawn_capture"][i] = pawn_rank and dr == 1 and abs(df) == 1
        if move.promotion is not None:
            continue  # q/r/b promotions: pawns only
        t["pawn_double"][i] = r0 == 1 and dr == 2 and df == 0
        t["knight"][i] = sorted((abs(dr), abs(df))) == [1, 2]
        t["king"][i] = max(abs(dr), abs(df)) == 1
        t["bishop"][i] = line in (LINE_DIAGONAL, LINE_ANTI)
        t["rook"][i] = line in (LINE_HORIZONTAL, LINE_VERTICAL)
        if line != NO_LINE:
            steps = max(abs(dr), abs(df))
            for k in range(1, steps):
                t["between"][src + k * (dr // steps) * 8 + k * (df // steps), i] = True
    return t


_T = _policy_tables()
POLICY_INDEX = {uci: i for i, uci in enumerate(POLICY_MOVES)}
CASTLE_KINGSIDE_INDEX = POLICY_INDEX["e1h1"]  # king takes its own rook
CASTLE_QUEENSIDE_INDEX = POLICY_INDEX["e1a1"]


# ----------------------------------------------------------------------------------------------
# Encoding (python side)

RANDOM_GAME_PLIES = 150


def random_game_positions(
    rng: random.Random, max_plies: int = RANDOM_GAME_PLIES
) -> list[chess.Board]:
    """Every position of one game of random legal moves drawn with ``rng`` (up to ``max_plies``
    plies; the position after the last ply included): test and benchmark positions that mix
    openings, middle games and endings, checks, promotions and en passant."""
    board = chess.Board()
    boards = []
    for _ in range(max_plies):
        boards.append(board.copy(stack=False))
        moves = list(board.legal_moves)
        if not moves:
            return boards
        board.push(rng.choice(moves))
    boards.append(board.copy(stack=False))
    return boards


def encode_boards(boards: list[chess.Board]) -> dict[str, np.ndarray]:
    """A batch of standard-chess boards as arrays from the side to move's view (see the module
    docstring for the shapes)."""
    n = len(boards)
    masks = np.empty((n, 12), np.uint64)
    castling = np.zeros((n, 4), bool)
    ep_file = np.full(n, NO_EP, np.int8)
    black = np.zeros(n, bool)
    for b, board in enumerate(boards):
        turn = board.turn
        ours, theirs = board.occupied_co[turn], board.occupied_co[not turn]
        kinds = (board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings)
        masks[b] = [k & ours for k in kinds] + [k & theirs for k in kinds]
        castling[b] = (
            board.has_kingside_castling_rights(turn),
            board.has_queenside_castling_rights(turn),
            board.has_kingside_castling_rights(not turn),
            board.has_queenside_castling_rights(not turn),
        )
        black[b] = turn == chess.BLACK
        ep = board.ep_square
        if ep is not None:
            behind = ep - 8 if turn == chess.WHITE else ep + 8  # their pawn that double-pushed
            rank_ok = chess.square_rank(ep) == (5 if turn == chess.WHITE else 2)
            if (
                rank_ok
                and not board.occupied & chess.BB_SQUARES[ep]
                and board.pawns & theirs & chess.BB_SQUARES[behind]
            ):
                ep_file[b] = chess.square_file(ep)
    # Bit i of each little-endian uint64 is square i.
    planes = np.unpackbits(masks.view(np.uint8).reshape(n, 12, 8), axis=2, bitorder="little")
    planes = planes.reshape(n, 12, 8, 8)  # [B, piece, rank, file]
    planes[black] = planes[black, :, ::-1, :]  # lc0's vertical flip for black to move
    codes = np.arange(1, 13, dtype=np.int8)[None, :, None, None]
    pieces = (planes.astype(np.int8) * codes).sum(axis=1, dtype=np.int8).reshape(n, 64)
    return {"pieces": pieces, "castling": castling, "ep_file": ep_file}


def pad_batch(arrays: dict[str, np.ndarray], size: int) -> dict[str, np.ndarray]:
    """``arrays`` padded to ``size`` positions with empty boards (their mask rows are all
    False), so that one compiled batch size serves a shorter last batch."""
    n = len(arrays["pieces"])
    extra = size - n
    if extra <= 0:
        return arrays
    return {
        k: np.concatenate(
            [v, np.full((extra,) + v.shape[1:], NO_EP if k == "ep_file" else 0, v.dtype)]
        )
        for k, v in arrays.items()
    }


# ----------------------------------------------------------------------------------------------
# Bitboards as two uint32 halves (JAX has no uint64 with x64 disabled)


class Bitboards(NamedTuple):
    """A batch of bitboards: bit ``s`` of ``lo`` is square ``s`` (a1..h4), bit ``s - 32`` of
    ``hi`` square ``s`` (a5..h8); uint32 [B] each (or [B, 1858], one per move). On [B, 8, 8]
    boolean boards instead, every shift (a pad) became an XLA kernel of its own (~300 kernels)
    and the whole thing ran ~3x slower."""

    lo: jax.Array
    hi: jax.Array

    def __and__(self, other: Bitboards) -> Bitboards:
        return Bitboards(self.lo & other.lo, self.hi & other.hi)

    def __or__(self, other: Bitboards) -> Bitboards:
        return Bitboards(self.lo | other.lo, self.hi | other.hi)

    def __invert__(self) -> Bitboards:
        return Bitboards(~self.lo, ~self.hi)

    def any(self) -> jax.Array:
        """bool [B]: any square set."""
        return (self.lo | self.hi) != 0

    def count(self) -> jax.Array:  # type: ignore[override]  # popcount, not tuple.count
        """int32 [B]: number of squares set."""
        count = jax.lax.population_count(self.lo) + jax.lax.population_count(self.hi)
        return count.astype(jnp.int32)


def constant(bb: int) -> Bitboards:
    """A python-int bitboard, the same for every position."""
    return Bitboards(jnp.uint32(bb & 0xFFFFFFFF), jnp.uint32(bb >> 32))


def pack(flags: jax.Array, count: int) -> list[Bitboards]:
    """uint32 [B, 64] with bit k set where square is on board k -> ``count`` Bitboards, in one
    reduction (one XLA kernel; distinct bits: their sum is their OR)."""
    on = (flags[:, None, :] >> jnp.arange(count, dtype=jnp.uint32)[None, :, None]) & 1
    bits = on.reshape(on.shape[:2] + (2, 32)) << jnp.arange(32, dtype=jnp.uint32)
    halves = bits.sum(axis=3, dtype=jnp.uint32)  # [B, count, 2]
    return [Bitboards(halves[:, k, 0], halves[:, k, 1]) for k in range(count)]


def single(square: jax.Array) -> Bitboards:
    """int32 [B] square -> the bitboard of that square."""
    one = jnp.uint32(1)
    low = (square & 31).astype(jnp.uint32)
    return Bitboards(
        jnp.where(square < 32, one << low, 0).astype(jnp.uint32),
        jnp.where(square >= 32, one << low, 0).astype(jnp.uint32),
    )


def only_where(condition: jax.Array, x: Bitboards) -> Bitboards:
    """``x`` where bool [B] ``condition``, the empty board elsewhere."""
    zero = jnp.uint32(0)
    return Bitboards(jnp.where(condition, x.lo, zero), jnp.where(condition, x.hi, zero))


def _file_mask(files) -> int:
    return sum(chess.BB_FILES[f] for f in files)


def shift(x: Bitboards, dr: int, df: int) -> Bitboards:
    """Every piece moved ``dr`` ranks up and ``df`` files right; off-board squares dropped."""
    k = 8 * dr + df  # |k| <= 17 < 32: bits cross from one half to the other, never further
    if k > 0:
        lo, hi = x.lo << k, (x.hi << k) | (x.lo >> (32 - k))
    else:
        k = -k
        lo, hi = (x.lo >> k) | (x.hi << (32 - k)), x.hi >> k
    if df > 0:  # what left the h-file wrapped onto the a-file side
        return Bitboards(lo, hi) & constant(~_file_mask(range(df)) & chess.BB_ALL)
    if df < 0:
        return Bitboards(lo, hi) & constant(~_file_mask(range(8 + df, 8)) & chess.BB_ALL)
    return Bitboards(lo, hi)


def ray_fill(src: Bitboards, d: tuple[int, int], empty: Bitboards) -> Bitboards:
    """Squares reached from ``src`` stepping along ``d`` through ``empty`` squares: everything up
    to and including the first non-empty square (source squares themselves excluded)."""
    x = shift(src, *d)
    reached = x
    for _ in range(6):
        x = shift(x & empty, *d)
        reached = reached | x
    return reached


def opposite(d: tuple[int, int]) -> tuple[int, int]:
    return (-d[0], -d[1])


def their_sliders(p: dict[str, Bitboards], d: tuple[int, int]) -> Bitboards:
    """Their pieces that slide along direction ``d`` (rooks and queens, or bishops and queens)."""
    return p["their_rook_queen"] if d in ORTHOGONAL else p["their_bishop_queen"]


def slider_rays(p: dict[str, Bitboards]) -> dict[tuple[int, int], Bitboards]:
    """Direction -> squares their sliders reach moving that way, our king removed from the
    occupancy (it cannot hide behind itself when it steps away from a slider)."""
    empty = ~p["occupied"] | p["our_king"]
    return {d: ray_fill(their_sliders(p, d), d, empty) for d in DIRECTIONS}


def their_attacks(p: dict[str, Bitboards], rays: dict[tuple[int, int], Bitboards]) -> Bitboards:
    """Squares they attack (their pawns capture downwards), our king removed from the
    occupancy: where our king may not step."""
    attacked = shift(p["their_pawn"], -1, 1) | shift(p["their_pawn"], -1, -1)
    for step in KNIGHT_STEPS:
        attacked = attacked | shift(p["their_knight"], *step)
    for step in KING_STEPS:
        attacked = attacked | shift(p["their_king"], *step)
    for ray in rays.values():
        attacked = attacked | ray
    return attacked


def king_rays(p: dict[str, Bitboards]) -> dict[tuple[int, int], Bitboards]:
    """Direction -> squares from our king that way up to and including the first piece."""
    return {d: ray_fill(p["our_king"], d, ~p["occupied"]) for d in DIRECTIONS}


def checks_and_pins(
    p: dict[str, Bitboards],
    rays: dict[tuple[int, int], Bitboards],
    outward: dict[tuple[int, int], Bitboards],
):
    """Checkers, blocking squares and pins, from the rays cast outwards from our king
    (``outward``, :func:`king_rays`) met by their sliders' rays coming the other way (``rays``,
    :func:`slider_rays`).

    Returns (checker squares, block squares: a checker or an empty square between a checking
    slider and our king, and a list of the pieces pinned along each line id)."""
    king, empty = p["our_king"], ~p["occupied"]
    checkers = between = constant(0)
    pinned = [constant(0) for _ in range(4)]
    for d in DIRECTIONS:
        out = outward[d]
        back = rays[opposite(d)]  # from their sliders towards the king, up to the first piece
        checkers = checkers | (out & their_sliders(p, d))
        # Both rays only meet on this line; on empty squares only if nothing separates a
        # slider from the king (a check), on our piece if it alone separates them (a pin).
        between = between | (out & back & empty)
        pinned[line_of(*d)] = pinned[line_of(*d)] | (out & back & p["ours"])
    for step in KNIGHT_STEPS:
        checkers = checkers | (shift(king, *step) & p["their_knight"])
    checkers = checkers | ((shift(king, 1, 1) | shift(king, 1, -1)) & p["their_pawn"])
    return checkers, checkers | between, pinned


def slider_check(p: dict[str, Bitboards], occupied: Bitboards) -> jax.Array:
    """bool [B]: one of their sliders attacks our king given ``occupied``."""
    hit = constant(0)
    for d in DIRECTIONS:
        hit = hit | (ray_fill(p["our_king"], d, ~occupied) & their_sliders(p, d))
    return hit.any()


_THEIR = {code: code + THEIRS for code in (PAWN, KNIGHT, BISHOP, ROOK, QUEEN, KING)}
PIECE_BOARDS = {
    "our_king": (KING,),
    "their_pawn": (_THEIR[PAWN],),
    "their_knight": (_THEIR[KNIGHT],),
    "their_king": (_THEIR[KING],),
    "their_rook_queen": (_THEIR[ROOK], _THEIR[QUEEN]),
    "their_bishop_queen": (_THEIR[BISHOP], _THEIR[QUEEN]),
    "occupied": tuple(range(PAWN, KING + THEIRS + 1)),
    "ours": tuple(range(PAWN, KING + 1)),
    "theirs": tuple(range(PAWN + THEIRS, KING + THEIRS + 1)),
    "our_pawn": (PAWN,),
    "our_knight": (KNIGHT,),
    "our_bishop_queen": (BISHOP, QUEEN),
    "our_rook_queen": (ROOK, QUEEN),
    "our_rook": (ROOK,),
}
"""Board name -> the piece codes on it."""
_CODE_FLAGS = np.array(
    [
        sum(1 << k for k, codes in enumerate(PIECE_BOARDS.values()) if code in codes)
        for code in range(KING + THEIRS + 1)
    ],
    np.uint32,
)
"""Piece code -> bit k set if the piece is on board k of PIECE_BOARDS."""


def piece_boards(pieces: jax.Array) -> dict[str, Bitboards]:
    """Named bitboards (PIECE_BOARDS) of the pieces."""
    flags = jnp.asarray(_CODE_FLAGS)[pieces]  # [B, 64]
    return dict(zip(PIECE_BOARDS, pack(flags, len(PIECE_BOARDS))))


# ----------------------------------------------------------------------------------------------
# The mask


def _words(squares: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """bool [64, 1858] squares of each move -> uint32 [1858] low and high bitboard halves."""
    bits = squares.astype(np.uint64).T
    words = (bits << np.arange(64, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)
    return (words & 0xFFFFFFFF).astype(np.uint32), (words >> 32).astype(np.uint32)


def _one_hot(squares: np.ndarray) -> np.ndarray:
    table = np.zeros((64, POLICY_SIZE), bool)
    table[squares, np.arange(POLICY_SIZE)] = True
    return table


# Per move, as bitboard halves: its from-square, its to-square, the squares strictly between.
_FROM_WORDS = _words(_one_hot(_T["from"]))
_TO_WORDS = _words(_one_hot(_T["to"]))
_BETWEEN_WORDS = _words(_T["between"])
_PAWN_FROM_LEFT = _T["to"] % 8 - _T["from"] % 8 == 1  # a capture towards the h-file
_IS_CASTLE_KINGSIDE = np.arange(POLICY_SIZE) == CASTLE_KINGSIDE_INDEX
_IS_CASTLE_QUEENSIDE = np.arange(POLICY_SIZE) == CASTLE_QUEENSIDE_INDEX


def materialise(tree):
    """The [B]-shaped leaves of ``tree`` (uint32, int32 or bool), computed once per position.

    Left alone, XLA fuses the whole per-position computation into the per-square and per-move
    loops that read it and redoes it 64 or 1858 times a position (``optimization_barrier`` does
    not stop that on CPU). XLA does not fuse a reduction into its consumers, so the values are
    passed through one: each word is split into its 16-bit halves and summed back."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    words = jnp.stack([leaf.astype(jnp.uint32) for leaf in leaves], axis=1)  # [B, K]
    halves = jnp.stack([words & jnp.uint32(0xFFFF), words & jnp.uint32(0xFFFF0000)], axis=2)
    words = halves.sum(axis=2, dtype=jnp.uint32)
    return jax.tree_util.tree_unflatten(
        treedef, [words[:, i].astype(leaf.dtype) for i, leaf in enumerate(leaves)]
    )


def _en_passant(p, checkers, ep_file) -> tuple[jax.Array, jax.Array]:
    """bool [B] each: the en-passant capture by a pawn on the file left / right of the target
    would be legal if our pawn stands there. The capture is made on the occupancy, then our
    king must not be attacked: covers the horizontal pin of both pawns leaving the rank, pins
    of the capturer, and checks (only a checking pawn can be removed by the capture)."""
    has_ep = ep_file >= 0
    f = jnp.where(has_ep, ep_file, 0)
    captured = single(RANK_5 * 8 + f)
    landing = single(RANK_6 * 8 + f)
    # Checkers other than sliders (tested below on the new occupancy) and the captured pawn.
    sliders = p["their_rook_queen"] | p["their_bishop_queen"]
    other_check = (checkers & ~sliders & ~captured).any()
    legal = []
    for df in (-1, 1):
        capturer_file = f + df
        on_board = has_ep & (capturer_file >= 0) & (capturer_file < 8)
        capturer = single(RANK_5 * 8 + jnp.clip(capturer_file, 0, 7))
        after = (p["occupied"] & ~capturer & ~captured) | landing
        # Our pawn on the capturer square is checked per move.
        legal.append(on_board & ~slider_check(p, after) & ~other_check)
    return legal[0], legal[1]


def _castling(p, attacked, in_check, castling) -> tuple[jax.Array, jax.Array]:
    """bool [B] each: king-side and queen-side castling legal (rights, king and rook on their
    squares, path empty, not in check, the king's path not attacked)."""
    king_home = (p["our_king"] & constant(chess.BB_SQUARES[KING_START])).any()

    def side(right, rook_square, must_be_empty, must_be_safe):
        rook_home = (p["our_rook"] & constant(chess.BB_SQUARES[rook_square])).any()
        empty = sum(chess.BB_SQUARES[s] for s in must_be_empty)
        safe = sum(chess.BB_SQUARES[s] for s in must_be_safe)
        return (
            right
            & king_home
            & rook_home
            & ~in_check
            & ~(p["occupied"] & constant(empty)).any()
            & ~(attacked & constant(safe)).any()
        )

    return (
        side(castling[:, 0], ROOK_START_KINGSIDE, CASTLE_EMPTY_KINGSIDE, CASTLE_SAFE_KINGSIDE),
        side(castling[:, 1], ROOK_START_QUEENSIDE, CASTLE_EMPTY_QUEENSIDE, CASTLE_SAFE_QUEENSIDE),
    )


def meets(boards: Bitboards, words: tuple[np.ndarray, np.ndarray]) -> jax.Array:
    """bool [B, 1858]: each position's ``boards`` ([B], or [B, 1858] one per move) has a square
    in common with each move's squares ``words`` (from, to or between). Plain vectorisable bit
    tests, no gathers."""
    lo, hi = words
    if boards.lo.ndim == 1:
        boards = Bitboards(boards.lo[:, None], boards.hi[:, None])
    return ((boards.lo & lo) | (boards.hi & hi)) != 0


def by_line(pinned: list[Bitboards]) -> Bitboards:
    """[B, 1858]: for each move, the pieces pinned along the move's own line (none for knight
    moves)."""
    line = _T["line"]
    lo = jnp.zeros(pinned[0].lo.shape + (POLICY_SIZE,), jnp.uint32)
    hi = lo
    for i, board in enumerate(pinned):
        lo = jnp.where(line == i, board.lo[:, None], lo)
        hi = jnp.where(line == i, board.hi[:, None], hi)
    return Bitboards(lo, hi)


@jax.jit
def legal_policy_mask(arrays: dict[str, jax.Array]) -> jax.Array:
    """bool [B, 1858]: the legal moves of each position (arrays from :func:`encode_boards`)."""
    pieces = jnp.asarray(arrays["pieces"]).astype(jnp.int32)
    ep_file = jnp.asarray(arrays["ep_file"]).astype(jnp.int32)

    # Per position: attacks, checks, pins, en passant and castling. (Materialising the rays as
    # well makes 32 more XLA kernels for no gain: the per-position work is cheap, the kernel
    # count is what costs at small batches.)
    p = piece_boards(pieces)
    rays = slider_rays(p)
    attacked = their_attacks(p, rays)
    checkers, block, pinned = checks_and_pins(p, rays, king_rays(p))
    n_checkers = checkers.count()
    ep_left, ep_right = _en_passant(p, checkers, ep_file)
    kingside, queenside = _castling(p, attacked, n_checkers > 0, jnp.asarray(arrays["castling"]))
    ep_target = only_where(ep_file >= 0, single(RANK_6 * 8 + jnp.maximum(ep_file, 0)))
    pinned_any = pinned[0] | pinned[1] | pinned[2] | pinned[3]
    (
        attacked,
        block,
        pinned,
        pinned_any,
        ep_target,
        n_checkers,
        ep_left,
        ep_right,
        kingside,
        queenside,
    ) = materialise(
        (
            attacked,
            block,
            pinned,
            pinned_any,
            ep_target,
            n_checkers,
            ep_left,
            ep_right,
            kingside,
            queenside,
        )
    )

    # Per candidate move [B, 1858], bit tests of its squares against those bitboards.
    def moves_from(board):
        return meets(board, _FROM_WORDS)

    def moves_to(board):
        return meets(board, _TO_WORDS)

    # Pseudo-legality: the right piece, a clear path, a destination that is not ours.
    path_clear = ~meets(p["occupied"], _BETWEEN_WORDS)
    to_empty, to_theirs = ~moves_to(p["occupied"]), moves_to(p["theirs"])
    king_move = _T["king"] & moves_from(p["our_king"])
    piece_ok = (
        (_T["knight"] & moves_from(p["our_knight"]))
        | (_T["bishop"] & moves_from(p["our_bishop_queen"]))
        | (_T["rook"] & moves_from(p["our_rook_queen"]))
    ) & path_clear
    pawn = moves_from(p["our_pawn"])
    pawn_ok = pawn & (
        (to_empty & path_clear & (_T["pawn_push"] | _T["pawn_double"]))
        | (to_theirs & _T["pawn_capture"])
    )

    # Legality: the king steps to unattacked squares; others stay on their pin line, and in
    # check capture or block the single checker.
    pin_ok = ~moves_from(pinned_any) | meets(by_line(pinned), _FROM_WORDS)
    checks = n_checkers[:, None]
    check_ok = (checks == 0) | ((checks == 1) & moves_to(block))
    legal = (king_move & (to_empty | to_theirs) & ~moves_to(attacked)) | (
        ((piece_ok & (to_empty | to_theirs)) | pawn_ok) & pin_ok & check_ok
    )

    # En passant (its own legality, above) and castling (king takes rook: e1h1, e1a1).
    en_passant = (
        pawn
        & _T["pawn_capture"]
        & moves_to(ep_target)
        & jnp.where(_PAWN_FROM_LEFT, ep_left[:, None], ep_right[:, None])
    )
    castle = (_IS_CASTLE_KINGSIDE & kingside[:, None]) | (_IS_CASTLE_QUEENSIDE & queenside[:, None])
    return legal | en_passant | castle
