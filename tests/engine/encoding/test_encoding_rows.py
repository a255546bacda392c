"""The compiled encoder (engine.encoding.rows) against the python-chess reference encoder
(nets/training/reference/) and lc0's planes:
every input format and history fill, on the shared lc0 positions and on long random games
(standard and Chess960) with repetitions, castling changes and rule50 counts."""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

from conftest import board_of, lc0_planes_batch
from engine.board import game_rows
from engine.encoding import SUPPORTED_INPUT_FORMATS
from engine.encoding.rows import (
    FILL_CODES,
    canonical_transform,
    encode_batch_into,
    encode_boards,
    encode_boards_with_transforms,
    encode_into,
    encode_packed,
    encode_window,
    is_repetition,
    take_window,
    window_suffices,
)
from engine.encoding.formats import HistoryFill
from nets.training.reference import encode_batch, transform_of
from nets.training.reference.history import GameHistory
from test_encoding import describe_plane_mismatch
from test_encoding_formats import V2_FORMATS, ZOO_FORMATS, zoo_records

FORMATS = sorted(SUPPORTED_INPUT_FORMATS)
FILLS = [h.value for h in HistoryFill]
CANONICAL_FORMATS = [f for f in FORMATS if f >= 3]

SEED = 29
RANDOM_ROOTS = (
    chess.STARTING_FEN,
    chess.STARTING_FEN,
    "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 9",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  # root en passant
    "r3k3/8/8/8/8/8/8/4K2R b Kq - 30 70",  # rule50 > 0 at the root, castling
    "8/8/4k3/8/2p5/8/1P1K4/8 w - - 0 40",
    "4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1",  # pawnless: every canonical transform
    "8/1r6/8/3k4/8/4N3/2K5/8 b - - 10 60",
    "3K4/8/2n5/8/8/1r6/8/4k3 w - - 0 1",  # our king on d8: flip and mirror
)
CHESS960_STARTS = (0, 300, 517, 959)


class Games:
    """Games as concatenated rows plus, for each position, the index of its game's root
    and its own (the layout of encode_batch_into), and python-chess boards of each position."""

    def __init__(self, boards_per_game: list[list[chess.Board]]) -> None:
        rows, roots, lasts, self.boards = [], [], [], []
        offset = 0
        for boards in boards_per_game:
            game = game_rows(boards[-1])
            assert len(game) == len(boards[-1].move_stack) + 1
            for board in boards:
                roots.append(offset)
                lasts.append(offset + len(board.move_stack))
                self.boards.append(board)
            rows.append(game)
            offset += len(game)
        self.rows = np.concatenate(rows)
        self.roots = np.array(roots, np.int64)
        self.lasts = np.array(lasts, np.int64)

    def encode(self, fmt: int, fill: str) -> tuple[np.ndarray, np.ndarray]:
        n = len(self.boards)
        out = np.full((n, 112, 8, 8), np.nan, np.float32)  # every plane must be written
        transforms = np.full(n, -1, np.int32)
        encode_batch_into(self.rows, self.roots, self.lasts, fmt,
                          FILL_CODES[HistoryFill(fill)], out, transforms)
        return out, transforms


def random_game(rng: random.Random, root: chess.Board, plies: int) -> list[chess.Board]:
    """Every position of a seeded random game; now and then the move made two plies ago is
    retracted so that positions repeat."""
    board = root.copy()
    boards = [board.copy()]
    for _ in range(plies):
        if board.is_game_over(claim_draw=False):
            break
        moves = list(board.legal_moves)
        move = rng.choice(moves)
        if len(board.move_stack) >= 2 and rng.random() < 0.3:
            back = board.move_stack[-2]
            undo = chess.Move(back.to_square, back.from_square)
            if undo in moves and not board.is_zeroing(undo):
                move = undo
        board.push(move)
        boards.append(board.copy())
    return boards


@pytest.fixture(scope="module")
def shared_games(shared_positions) -> Games:
    return Games([[board_of(r)] for r in shared_positions])


@pytest.fixture(scope="module")
def random_games() -> Games:
    rng = random.Random(SEED)
    games = [random_game(rng, chess.Board(fen), 120) for fen in RANDOM_ROOTS]
    games += [random_game(rng, chess.Board.from_chess960_pos(n), 120) for n in CHESS960_STARTS]
    # Every other position of each game (the short prefixes, with history fill, all kept).
    return Games([[b for k, b in enumerate(game) if k < 8 or k % 2] for game in games])


def assert_planes_equal(boards, got, expected, what: str) -> None:
    for k in range(len(boards)):
        if not np.array_equal(got[k], expected[k]):
            planes = sorted({int(p) for p in np.nonzero(got[k] != expected[k])[0]})
            board = boards[k]
            pytest.fail(f"{what}: position {k} {board.root().fen()} moves "
                        f"{[m.uci() for m in board.move_stack]}: expected the Python encoder's "
                        f"planes, got differences in planes {planes}")


@pytest.mark.parametrize("games_fixture", ["shared_games", "random_games"])
def test_planes_equal_python_encoder_every_format_and_fill(games_fixture, request):
    games: Games = request.getfixturevalue(games_fixture)
    for fmt in FORMATS:
        expected_transforms = [transform_of(b, fmt) for b in games.boards]
        for fill in FILLS:
            got, transforms = games.encode(fmt, fill)
            expected = encode_batch(games.boards, fmt, fill)
            assert_planes_equal(games.boards, got, expected, f"format {fmt}, fill {fill}")
            assert transforms.tolist() == expected_transforms, (fmt, fill)


CRAFTED = (
    # (root FEN, moves, whether the last position is a repetition for lc0)
    # lc0's marker after f7f5 (a white pawn beside): the knights' return is no repetition...
    (chess.STARTING_FEN, "e2e4 d7d5 e4e5 f7f5 g1f3 g8f6 f3g1 f6g8", False),
    # ... but the next return is.
    (chess.STARTING_FEN, "e2e4 d7d5 e4e5 f7f5 g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 f6g8", True),
    # No pawn beside after e7e5: no marker, so the return repeats the position after e7e5.
    (chess.STARTING_FEN, "e2e4 e7e5 g1f3 g8f6 f3g1 f6g8", True),
    # The FEN's en-passant square is kept at the root, so the root is not repeated.
    ("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3", "g1f3 g8f6 f3g1 f6g8",
     False),
    ("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq - 0 3", "g1f3 g8f6 f3g1 f6g8",
     True),
    # A castling right lost on the way: same pieces, no repetition.
    ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "h1g1 h8g8 g1h1 g8h8", False),
    ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "h1g1 h8g8 g1h1 g8h8 h1g1 h8g8 g1h1 g8h8", True),
)


@pytest.mark.parametrize("fen, moves, repeated", CRAFTED)
def test_crafted_repetitions_en_passant_markers_and_castling(fen, moves, repeated):
    board = chess.Board(fen)
    boards = [board.copy()]
    for uci in moves.split():
        board.push_uci(uci)
        boards.append(board.copy())
    games = Games([boards])
    assert is_repetition(games.rows, len(games.rows) - 1) == repeated
    for fmt in FORMATS:
        for fill in FILLS:
            got, _ = games.encode(fmt, fill)
            assert_planes_equal(boards, got, encode_batch(boards, fmt, fill), f"{fmt} {fill}")
            assert got[-1, 12, 0, 0] == repeated


def test_random_games_exercise_the_rules(random_games):
    """The random games reach what the rules are about: repetitions, castling changes,
    zeroing moves, long rule50 counts, en-passant markers, every canonical transform."""
    planes, transforms = random_games.encode(1, "fen_only")
    repetitions = int(planes[:, 12, 0, 0].sum() + planes[:, 25, 0, 0].sum())
    assert len(random_games.boards) >= 400
    assert repetitions >= 20
    rights = {len(set(GameHistory(b).at(i).castling_rights for i in range(len(b.move_stack) + 1)))
              for b in random_games.boards}
    assert max(rights) >= 3
    assert max(b.halfmove_clock for b in random_games.boards) >= 30
    assert sum(b.ep_square is not None for b in random_games.boards) >= 5
    assert any(b.chess960 and b.move_stack for b in random_games.boards)
    assert set(random_games.encode(3, "no")[1].tolist()) == set(range(8))


def test_planes_equal_lc0_format_1(maia1100_ref):
    boards = [board_of(r) for r in maia1100_ref]
    got = encode_boards(boards, 1)
    expected = lc0_planes_batch(maia1100_ref)
    for record, g, e in zip(maia1100_ref, got, expected):
        assert np.array_equal(g, e), "format 1: " + describe_plane_mismatch(record, g, e)


@pytest.mark.parametrize("fmt", sorted(ZOO_FORMATS))
def test_planes_and_transforms_equal_lc0(fmt):
    records = zoo_records(fmt)
    if fmt not in V2_FORMATS:
        assert len(records) == 301
    boards = [board_of(r) for r in records]
    got, transforms = encode_boards_with_transforms(boards, fmt)
    expected = lc0_planes_batch(records)
    for k, record in enumerate(records):
        assert record["input_format"] == fmt
        assert np.array_equal(got[k], expected[k]), f"format {fmt}: " + describe_plane_mismatch(
            record, got[k], expected[k])
        assert transforms[k] == record.get("transform", 0), (fmt, record["index"])


@pytest.mark.parametrize("games_fixture", ["shared_games", "random_games"])
def test_canonical_transform_equals_transform_of(games_fixture, request):
    games: Games = request.getfixturevalue(games_fixture)
    for fmt in FORMATS:
        got = [canonical_transform(games.rows[last], fmt) for last in games.lasts]
        expected = [transform_of(b, fmt) for b in games.boards]
        assert got == expected, fmt


def test_repetition_flag_equals_python_history(random_games):
    seen = 0
    for root, last, board in zip(random_games.roots, random_games.lasts, random_games.boards):
        history = GameHistory(board)
        game = random_games.rows[root:last + 1]
        for index in range(len(game)):
            expected = history.is_repetition(index)
            assert is_repetition(game, index) == expected, (board.fen(), index)
            seen += expected
    assert seen >= 100


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_history_window_encodes_as_the_whole_history(random_games, fmt):
    """The search keeps the last 8 rows of a leaf and their repetition bits; the evaluation
    thread's planes from them equal those from the whole game (the v2 formats, which read
    further back for repetitions, are encoded from the whole game by the search instead)."""
    if not window_suffices(fmt):
        assert fmt in V2_FORMATS
        return
    window = np.zeros((8, random_games.rows.shape[1]), np.uint64)
    masks, values = np.zeros((2, 112), np.uint64), np.zeros((2, 112), np.float32)
    repeated = 0
    for root, last, board in zip(random_games.roots, random_games.lasts, random_games.boards):
        game = random_games.rows[root:last + 1]
        for fill in FILLS:
            code = FILL_CODES[HistoryFill(fill)]
            index, reps = take_window(game, len(game) - 1, window)
            encode_packed(game, len(game) - 1, fmt, code, masks[0], values[0])
            # The search's own types (a request's int8 window index and uint8 repetitions):
            # the machine code the search runs, loaded from the warm-up's cache.
            encode_window(window, np.int8(index), np.uint8(reps), fmt, code, masks[1], values[1])
            assert np.array_equal(masks[0], masks[1]) and np.array_equal(values[0], values[1]), (
                fmt, fill, board.fen(), [m.uci() for m in board.move_stack])
        repeated += reps != 0
    assert repeated >= 20


def test_encode_into_writes_one_slice_of_a_batch():
    board = chess.Board("4k3/8/8/8/8/8/8/R3K2R b KQ - 7 40")
    rows = game_rows(board)
    batch = np.full((3, 112, 8, 8), 5.0, np.float32)
    assert encode_into(rows, len(rows) - 1, 4, FILL_CODES[HistoryFill.FEN_ONLY], batch[1]) == 0
    assert (batch[0] == 5).all() and (batch[2] == 5).all()
    assert np.array_equal(batch[1], encode_batch([board], 4)[0])
    assert batch[1, 109, 0, 0] == np.float32(0.07)


def test_errors_equal_the_python_encoder():
    start = chess.Board()
    for args in ((start, 7, "fen_only"), (start, True, "fen_only"), (start, 1, "sometimes")):
        with pytest.raises(ValueError) as expected:
            encode_batch([args[0]], args[1], args[2])
        with pytest.raises(ValueError) as got:
            encode_boards([args[0]], args[1], args[2])
        assert str(got.value) == str(expected.value)
    for fen in ("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e4 0 1",  # ep off rank 3/6
                "4k3/8/8/8/8/8/8/4K3 w K - 0 1"):  # a right without its rook
        board = chess.Board(fen)
        with pytest.raises(ValueError) as expected:
            encode_batch([board], 3)
        with pytest.raises(ValueError) as got:
            encode_boards([board], 3)
        assert str(got.value) == str(expected.value)
        assert "expected" in str(got.value)
    # A root whose right lost its rook only later: refused at the root (see check_root_castling).
    board = chess.Board("4k3/8/8/8/8/6N1/8/4K3 w K - 0 1")
    for uci in ("g3h1", "e8e7", "h1g3"):
        board.push_uci(uci)
    assert not board.castling_rights and encode_batch([board], 3).shape == (1, 112, 8, 8)
    with pytest.raises(ValueError, match="root.*expected a rook"):
        encode_boards([board], 3)
    assert encode_boards([], 5, "sometimes").shape == (0, 112, 8, 8)  # as encode_batch
