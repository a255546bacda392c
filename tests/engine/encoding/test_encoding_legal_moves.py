"""engine.encoding's legal moves with policy indices (the search's compiled generator, on
python-chess boards) against python-chess's legal moves (the same moves) and the reference
mapping ``move_index`` (nets/training/reference/policy.py: the same indices)."""

from __future__ import annotations

import random

import chess
import pytest

from conftest import need_shared, read_jsonl
from engine.encoding import legal_moves_and_indices, policy_indices, transform_of
from nets.training.reference import move_index
from nets.training.reference import transform_of as reference_transform_of

# Positions aimed at the generator's special cases (each comment says which).
TRICKY_FENS = (
    "4k3/8/8/K2pP2r/8/8/8/8 w - d6 0 1",          # en passant would expose the king on the rank
    "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 1",          # plain en passant
    "4k3/4r3/8/8/8/8/4B3/4K3 w - - 0 1",          # bishop pinned on a file: no moves
    "4k3/8/8/7b/8/8/4R3/3K4 w - - 0 1",           # rook pinned on a diagonal: no moves
    "4k3/8/8/8/8/2b5/3Q4/4K3 w - - 0 1",          # queen pinned on a diagonal: slides along it
    "4k3/8/8/8/8/8/3P4/2K4r w - - 0 1",           # pawn not pinned (rook on the rank beside)
    "4k3/8/8/b7/8/8/3P4/4K3 w - - 0 1",           # pawn pinned diagonally: cannot push
    "4k3/8/8/8/8/8/4P3/4K2r w - - 0 1",           # king steps along a rank attacked by a rook
    "3rk3/2P5/8/8/8/8/8/4K3 w - - 0 1",           # promotions, by push and by capture
    "4k3/8/8/8/8/8/1p6/R3K3 b Q - 0 1",           # black promotion capture onto a castling rook
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",       # both castlings
    "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1",
    "r3k2r/8/8/8/8/8/5q2/R3K2R w KQkq - 0 1",     # castling through an attacked square
    "4k3/8/8/8/8/8/8/4K2R w K - 0 1",
    "4k3/8/8/8/1b6/8/8/4K3 w - - 0 1",            # bishop checks the king: evasions
    "4k3/8/8/8/8/5n2/8/4K2R w K - 0 1",           # knight check, castling right
    "8/8/8/2k5/3Pp3/8/8/4K3 b - d3 0 1",          # en passant capture of a checking pawn
    "7k/5Q2/8/8/8/8/8/K7 b - - 0 1",              # stalemate
    "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1",             # mate
)


def random_boards(count: int, seed: int, fen: str = chess.STARTING_FEN) -> list[chess.Board]:
    """Positions of seeded random games from ``fen`` (with their move stacks), some in check."""
    rng = random.Random(seed)
    boards = []
    while len(boards) < count:
        board = chess.Board(fen)
        for _ in range(rng.randint(0, 160)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        boards.append(board)
    return boards


def check_board(board: chess.Board, input_format: int = 1) -> None:
    moves, indices = legal_moves_and_indices(board, input_format)
    expected = list(board.generate_legal_moves())
    assert set(moves) == set(expected) and len(moves) == len(expected), (
        f"{board.fen()}: expected python-chess's moves {expected}, got {moves}"
    )
    transform = reference_transform_of(board, input_format)
    assert transform_of(board, input_format) == transform
    expected_idx = [move_index(board, m, transform) for m in moves]
    assert indices == expected_idx, f"{board.fen()} format {input_format}: policy indices differ"


@pytest.mark.parametrize("fen", TRICKY_FENS)
def test_tricky_positions(fen):
    check_board(chess.Board(fen))
    check_board(chess.Board(fen).mirror())


def test_random_games_classical_and_canonical_formats():
    # Pawnless games too, so that the canonical formats' transforms other than the file flip
    # get checked (the compiled generator under each of the 8: tests/engine/board/).
    boards = random_boards(600, seed=11) + random_boards(100, seed=12, fen="1r2k1n1/8/8/8/8/8/8/1Q2KB1R w - - 0 1")
    transforms, in_check = set(), 0
    for board in boards:
        for fmt in (1, 3):
            check_board(board, fmt)
        transforms.add(transform_of(board, 3))
        in_check += board.is_check()
    assert len(transforms) >= 6 and in_check > 20  # the evasion path was exercised too


def test_chess960_castling():
    # Rooks on b1 and g1: python-chess writes both castlings king-takes-rook (e1b1, e1g1).
    board = chess.Board("4k3/8/8/8/8/8/8/1R2K1R1 w GB - 0 1", chess960=True)
    check_board(board)
    castlings = [m.uci() for m in legal_moves_and_indices(board)[0] if board.is_castling(m)]
    assert sorted(castlings) == ["e1b1", "e1g1"]


def test_public_helpers_agree_with_format_transform():
    board = chess.Board("8/8/8/8/8/2k5/8/K6Q w - - 0 1")  # canonical formats transform this one
    for fmt in (1, 3):
        moves, indices = legal_moves_and_indices(board, fmt)
        t = transform_of(board, fmt)
        assert indices == [move_index(board, m, t) for m in moves]
        assert policy_indices(board, fmt) == dict(zip(moves, indices))
    assert transform_of(board, 3) != 0


def test_lc0_reference_positions():
    path = need_shared("positions.jsonl")
    for rec in read_jsonl(path):
        board = chess.Board(rec["fen"])
        for uci in rec["moves"]:
            board.push_uci(uci)
        check_board(board)
