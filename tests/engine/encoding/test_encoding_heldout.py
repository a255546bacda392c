"""Held-out checks on positions NOT in ../shared: seeded random games with repetitions,
castling and en passant, checked against a slow square-by-square reference encoder and
against symmetries that have an independent truth (python-chess)."""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

from engine.encoding import (
    POLICY_MOVES,
    SUPPORTED_INPUT_FORMATS,
    encode_batch,
    encode_planes,
    policy_indices,
    transform_of,
)

SEED = 20240611
GAMES = 60
ROOT_FENS = (
    chess.STARTING_FEN,
    "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 9",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
    "4k3/8/8/8/3p4/8/4P3/4K3 w - - 12 50",
    "r3k3/8/8/8/8/8/8/4K2R b Kq - 30 70",
    "8/8/4k3/8/2p5/8/1P1K4/8 w - - 0 40",
)
NON_CANONICAL_FORMATS = (1, 2)


def random_game(rng: random.Random, root_fen: str, plies: int) -> chess.Board:
    """A seeded random game; now and then it retracts the move made two plies ago so that
    positions repeat (lc0's repetition planes get exercised)."""
    board = chess.Board(root_fen)
    for _ in range(plies):
        if board.is_game_over():
            break
        moves = list(board.legal_moves)
        move = rng.choice(moves)
        if len(board.move_stack) >= 2 and rng.random() < 0.35:
            back = board.move_stack[-2]
            undo = chess.Move(back.to_square, back.from_square)
            if undo in moves and not board.is_zeroing(undo):
                move = undo
        board.push(move)
    return board


@pytest.fixture(scope="module")
def heldout_boards() -> list[chess.Board]:
    rng = random.Random(SEED)
    boards = []
    for g in range(GAMES):
        root = ROOT_FENS[g % len(ROOT_FENS)]
        boards.append(random_game(rng, root, rng.randint(0, 40)))
    # The short ones keep history fill, en passant on the root and castling in play.
    return boards


# ---------------------------------------------------------------- slow reference encoder
def _game_positions(board: chess.Board) -> list[chess.Board]:
    """Every position of the game from the root, each a fresh python-chess board."""
    replay = board.root()
    positions = [replay.copy(stack=False)]
    for move in board.move_stack:
        replay.push(move)
        positions.append(replay.copy(stack=False))
    return positions


def _lc0_ep_marker(positions: list[chess.Board], k: int, board: chess.Board) -> int | None:
    """lc0's en-passant marker: the FEN's square at the root; later, only after a double
    push with an enemy pawn on an adjacent file of the same rank."""
    pos = positions[k]
    if k == 0:
        return pos.ep_square
    move = board.move_stack[k - 1]
    mover = positions[k - 1].piece_at(move.from_square)
    if mover.piece_type != chess.PAWN or abs(move.to_square - move.from_square) != 16:
        return None
    rank, file = chess.square_rank(move.to_square), chess.square_file(move.to_square)
    for f in (file - 1, file + 1):
        if 0 <= f < 8:
            piece = pos.piece_at(chess.square(f, rank))
            if piece == chess.Piece(chess.PAWN, pos.turn):
                return (move.to_square + move.from_square) // 2
    return None


def _key(positions, k, board):
    pos = positions[k]
    return (pos.board_fen(), pos.turn, pos.castling_rights, _lc0_ep_marker(positions, k, board))


def _is_repetition(positions, k, board) -> bool:
    """Same position (lc0's equality) earlier with the same side to move, since the last
    zeroing move; lc0 only looks when the rule50 count is at least 4."""
    hm = positions[k].halfmove_clock
    if hm < 4:
        return False
    key = _key(positions, k, board)
    return any(
        _key(positions, e, board) == key for e in range(k - 2, max(0, k - hm) - 1, -2)
    )


def reference_format1(board: chess.Board) -> np.ndarray:
    """Format 1, lc0's default history fill, written square by square."""
    planes = np.zeros((112, 8, 8), np.float32)
    us = board.turn
    positions = _game_positions(board)

    def put(plane: int, square: int) -> None:
        sq = square ^ 56 if us == chess.BLACK else square
        planes[plane, sq // 8, sq % 8] = 1.0

    root = positions[0]
    fill_allowed = not (root.board_fen() == chess.Board().board_fen() and root.turn
                        and root.castling_rights == chess.BB_CORNERS and root.ep_square is None)
    for t in range(8):
        k = len(positions) - 1 - t
        if k < 0 and not fill_allowed:
            break
        pos = positions[max(k, 0)].copy()
        if k < 0 and pos.ep_square is not None:
            # The root's double push undone: pawn back on its starting square.
            forward = 8 if chess.square_rank(pos.ep_square) == 2 else -8
            pawn = pos.remove_piece_at(pos.ep_square + forward)
            pos.set_piece_at(pos.ep_square - forward, pawn)
        for square in chess.SQUARES:
            piece = pos.piece_at(square)
            if piece is not None:
                side = 0 if piece.color == us else 6
                put(13 * t + side + piece.piece_type - 1, square)
        if k > 0 and _is_repetition(positions, k, board):
            planes[13 * t + 12] = 1.0
    for plane, color, side in ((104, us, "q"), (105, us, "k"), (106, not us, "q"),
                               (107, not us, "k")):
        has = (board.has_queenside_castling_rights if side == "q"
               else board.has_kingside_castling_rights)(color)
        planes[plane] = float(has)
    planes[108] = float(us == chess.BLACK)
    planes[109] = float(board.halfmove_clock)
    planes[111] = 1.0
    return planes


# ---------------------------------------------------------------- tests
def test_format1_equals_square_by_square_reference(heldout_boards):
    repeated = 0
    for n, board in enumerate(heldout_boards):
        got = encode_planes(board, 1)
        expected = reference_format1(board)
        bad = sorted({int(p) for p in np.nonzero(got != expected)[0]})
        assert not bad, f"held-out game {n} {board.root().fen()} {board.move_stack}: " \
                        f"expected the reference planes, got differences in planes {bad}"
        repeated += int(got[12::13][:8].any())
    assert repeated >= 5, "the held-out games should exercise repetition planes"


def _mirrored_game(board: chess.Board) -> chess.Board:
    mirrored = board.root().mirror()
    for move in board.move_stack:
        mirrored.push(chess.Move(chess.square_mirror(move.from_square),
                                 chess.square_mirror(move.to_square), move.promotion))
    return mirrored


@pytest.mark.parametrize("fmt", sorted(SUPPORTED_INPUT_FORMATS))
def test_colour_mirrored_games_encode_identically(fmt, heldout_boards):
    # Planes are in the side to move's frame, so swapping colours changes only the planes
    # that say who is to move. (History fill "always": lc0's default skips the fill for the
    # standard start position only, which has no colour-mirrored twin.)
    side_planes = {1: [108], 2: [108], 132: [110], 133: [110]}.get(fmt, [])
    keep = [p for p in range(112) if p not in side_planes]
    originals = encode_batch(heldout_boards, fmt, history_fill="always")
    mirrors = encode_batch([_mirrored_game(b) for b in heldout_boards], fmt, "always")
    for n, (a, b) in enumerate(zip(originals, mirrors)):
        assert np.array_equal(a[keep], b[keep]), (fmt, n)
        for p in side_planes:
            assert a[p].all() != b[p].all(), (fmt, n, p)


@pytest.mark.parametrize("fmt", sorted(SUPPORTED_INPUT_FORMATS))
def test_policy_indices_are_unique_and_consistent_with_the_planes(fmt, heldout_boards):
    for board in heldout_boards:
        indices = policy_indices(board, fmt)
        assert set(indices) == set(board.legal_moves)
        assert len(set(indices.values())) == len(indices)
        planes = encode_planes(board, fmt)
        for move, index in indices.items():
            uci = POLICY_MOVES[index]
            src, dst = chess.parse_square(uci[:2]), chess.parse_square(uci[2:4])
            piece = board.piece_type_at(move.from_square)
            # The table move starts where the planes show the moving piece ...
            assert planes[piece - 1, src // 8, src % 8] == 1, (fmt, board.fen(), move)
            # ... and ends on a captured piece exactly when the planes show one there.
            victim = board.piece_type_at(move.to_square)
            if victim is not None and not board.is_castling(move):
                assert planes[6 + victim - 1, dst // 8, dst % 8] == 1, (fmt, board.fen(), move)
            if move.promotion in (chess.QUEEN, chess.ROOK, chess.BISHOP):
                assert uci[4] == chess.piece_symbol(move.promotion)
            else:
                assert len(uci) == 4


SYMMETRIES = (
    chess.flip_horizontal,
    chess.flip_vertical,
    chess.flip_diagonal,
    chess.flip_anti_diagonal,
    lambda bb: chess.flip_vertical(chess.flip_horizontal(bb)),
    lambda bb: chess.flip_horizontal(chess.flip_diagonal(bb)),
    lambda bb: chess.flip_vertical(chess.flip_diagonal(bb)),
)


def _random_pawnless(rng: random.Random) -> chess.Board:
    while True:
        board = chess.Board(None)
        squares = rng.sample(chess.SQUARES, 2 + rng.randint(1, 4))
        board.set_piece_at(squares[0], chess.Piece(chess.KING, chess.WHITE))
        board.set_piece_at(squares[1], chess.Piece(chess.KING, chess.BLACK))
        for sq in squares[2:]:
            kind = rng.choice([chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN])
            board.set_piece_at(sq, chess.Piece(kind, rng.random() < 0.5))
        board.turn = rng.random() < 0.5
        if board.is_valid():
            return board


@pytest.mark.parametrize("fmt", (3, 4, 5, 132, 133))
def test_canonical_planes_do_not_depend_on_board_symmetry(fmt):
    # A pawnless position without castling is the same game under all 8 symmetries of the
    # board; the canonical transform must bring every one of them to identical planes, and
    # map corresponding moves to the same policy index.
    rng = random.Random(SEED + fmt)
    for _ in range(25):
        board = _random_pawnless(rng)
        base = encode_planes(board, fmt)
        base_policy = policy_indices(board, fmt)
        for sym in SYMMETRIES:
            other = board.transform(sym)
            assert np.array_equal(encode_planes(other, fmt), base), (fmt, board.fen())
            other_policy = policy_indices(other, fmt)
            for move, index in base_policy.items():
                image = chess.Move(chess.lsb(sym(chess.BB_SQUARES[move.from_square])),
                                   chess.lsb(sym(chess.BB_SQUARES[move.to_square])))
                assert other_policy[image] == index, (fmt, board.fen(), move)


@pytest.mark.parametrize("fmt", NON_CANONICAL_FORMATS)
def test_non_canonical_formats_never_transform(fmt):
    assert transform_of(_random_pawnless(random.Random(SEED)), fmt) == 0


def test_encoding_leaves_the_board_untouched(heldout_boards):
    board = heldout_boards[7]
    before = (board.fen(), list(board.move_stack))
    for fmt in sorted(SUPPORTED_INPUT_FORMATS):
        encode_planes(board, fmt)
        policy_indices(board, fmt)
    assert (board.fen(), list(board.move_stack)) == before


def _game(fen: str, ucis: str) -> chess.Board:
    board = chess.Board(fen)
    for uci in ucis.split():
        board.push_uci(uci)
    return board


def test_double_push_without_an_adjacent_enemy_pawn_repeats():
    # After 1.e4 no black pawn stands beside e4, so lc0 sets no en-passant marker and the
    # position after 1.e4 Nf6 2.Nf3 Ng8 3.Ng1 repeats it (python-chess records ep_square=e3).
    board = _game(chess.STARTING_FEN, "e2e4 g8f6 g1f3 f6g8 f3g1")
    planes = encode_planes(board, 1)
    assert planes[12].all()  # now: a repetition of step 4 (the first occurrence)
    assert not any(planes[t * 13 + 12].any() for t in range(1, 8))
    assert np.array_equal(planes, reference_format1(board))


def test_double_push_beside_an_enemy_pawn_does_not_repeat():
    # After ...d5 a white pawn on e5 stands beside it: lc0 marks en passant, so the same
    # pieces two moves later (marker gone) are a different position.
    board = _game(chess.STARTING_FEN, "e2e4 g8f6 e4e5 d7d5 g1f3 b8c6 f3g1 c6b8")
    planes = encode_planes(board, 1)
    assert not planes[12].any()
    assert np.array_equal(planes, reference_format1(board))
    # ...and the canonical formats cut the history at that en-passant position.
    canonical = encode_planes(board, 3)
    assert canonical[3 * 13 : 4 * 13].any() and not canonical[4 * 13 : 104].any()
