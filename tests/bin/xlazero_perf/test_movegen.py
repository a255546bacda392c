"""xlazero_perf.movegen's batched legal-move mask against the engine's tested move
generator: for every position, the True entries of ``legal_policy_mask`` must be exactly the
policy indices of ``engine.encoding.legal_moves_and_indices(board, 1)``."""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

from xlazero_perf import movegen
from xlazero_perf.movegen import (POLICY_SIZE, encode_boards, legal_policy_mask,
                                      pad_batch)
from engine.backend import POLICY_MOVES
from engine.encoding import legal_moves_and_indices

BATCH = 512  # one compiled shape; the last batch is padded with empty boards
RANDOM_GAMES = 25
SEED = 20240611

SPECIAL_FENS = [
    chess.STARTING_FEN,
    # Castling: both sides free, through check (f1 / d1 attacked), into check, out of check,
    # b1 attacked (queen-side still legal), blocked, rights without the rook.
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
    "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1",
    "k4r2/8/8/8/8/8/8/R3K2R w KQ - 0 1",
    "k2r4/8/8/8/8/8/8/R3K2R w KQ - 0 1",
    "k5r1/8/8/8/8/8/8/R3K2R w KQ - 0 1",
    "k3r3/8/8/8/8/8/8/R3K2R w KQ - 0 1",
    "kr6/8/8/8/8/8/8/R3K2R w KQ - 0 1",
    "r3k2r/8/8/8/8/8/8/RN2K1NR w KQkq - 0 1",
    "r3k2r/8/8/8/8/8/8/R3K3 w KQkq - 0 1",
    "r3k2r/8/8/8/8/8/8/4K1R1 b kq - 0 1",
    "r3k2r/8/8/8/8/8/8/2R1K3 b kq - 0 1",
    "r3k2r/8/8/8/8/8/6n1/R3K2R w KQkq - 0 1",  # knight g2 checks e1
    "r3k2r/8/8/8/8/4n3/8/R3K2R w KQkq - 0 1",  # knight e3 covers d1 and f1
    "r3k2r/8/8/8/8/8/5p2/R3K2R w KQkq - 0 1",  # pawn f2 checks e1
    "r3k2r/8/8/8/8/8/6p1/R3K2R w KQkq - 0 1",  # pawn g2 attacks f1 (and h1)
    # En passant: plain, both sides, horizontal pin of both pawns (white and black to move),
    # capture removing a checking pawn, capture along a diagonal pin, capturer pinned off-line.
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
    "rnbqkbnr/ppp2ppp/8/2PpP3/8/8/PP1P1PPP/RNBQKBNR w KQkq d6 0 3",
    "8/8/8/KPp4r/8/8/8/7k w - c6 0 2",
    "8/8/8/KPp4r/8/8/8/7k w - - 0 2",
    "8/8/8/1r1pPK2/8/8/8/7k w - d6 0 2",
    "8/8/8/8/k2Pp2Q/8/8/4K3 b - d3 0 1",
    "8/8/8/2k5/3Pp3/8/8/4K3 b - d3 0 1",
    "8/8/8/8/1k1Pp3/8/8/4K3 b - d3 0 1",
    "4k3/8/8/8/3Pp3/8/8/B3K2b b - d3 0 1",
    "7k/8/8/1b6/2Pp4/8/8/5K2 b - c3 0 1",
    "4k3/8/8/1B6/2pP4/8/8/4K3 b - d3 0 1",
    "4k3/4r3/8/3pP3/8/8/8/4K3 w - d6 0 1",
    # Promotions and underpromotions, with captures, both colours; a promotion that blocks.
    "r3k3/1P6/8/8/8/8/8/4K3 w q - 0 1",
    "n1n1k3/1P6/8/8/8/8/8/4K3 w - - 0 1",
    "4k3/8/8/8/8/8/1p6/R1N1K3 b Q - 0 1",
    "7k/P7/8/8/8/8/8/K6r w - - 0 1",
    "1r5k/P7/8/8/8/8/8/K7 w - - 0 1",
    # Double check, single checks by every piece, pins of every kind.
    "4r2k/8/8/8/8/3n4/8/4K3 w - - 0 1",
    "4r2k/8/8/8/8/8/8/4K2b w - - 0 1",
    "4r2k/8/8/8/8/8/4N3/4K3 w - - 0 1",
    "7k/8/8/8/8/2b5/3R4/4K3 w - - 0 1",
    "4r2k/8/8/8/8/8/4Q3/4K3 w - - 0 1",
    "7k/8/8/8/b7/8/2P5/4K3 w - - 0 1",
    "7k/8/8/8/b7/1P6/2B5/4K3 w - - 0 1",
    "7k/8/8/8/8/8/r2PK3/8 w - - 0 1",
    "4k3/8/8/8/8/8/3q4/4K3 w - - 0 1",
    "4k3/8/8/8/8/8/3p4/4K3 w - - 0 1",
    "4k3/8/8/8/8/2n5/8/R3K3 w Q - 0 1",
    "4k3/8/8/8/1q6/8/8/R3K2R w KQ - 0 1",
    "3qk3/8/8/8/8/8/8/3QK3 b - - 0 1",
    # Checkmate and stalemate (no legal moves), kings side by side.
    "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3",
    "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",
    "k7/2Q5/1K6/8/8/8/8/8 b - - 0 1",
    "8/8/8/8/8/8/5k2/7K w - - 0 1",
]
NO_MOVE_FENS = SPECIAL_FENS[-4:-1]


def random_game_positions(games: int, seed: int) -> list[chess.Board]:
    """Every position of ``games`` random games."""
    rng = random.Random(seed)
    return [board for _ in range(games) for board in movegen.random_game_positions(rng)]


def masks(boards: list[chess.Board]) -> np.ndarray:
    """bool [len(boards), 1858], computed BATCH positions a call."""
    out = []
    for start in range(0, len(boards), BATCH):
        chunk = boards[start:start + BATCH]
        mask = np.asarray(legal_policy_mask(pad_batch(encode_boards(chunk), BATCH)))
        assert not mask[len(chunk):].any(), "padding (empty boards) must have no moves"
        out.append(mask[:len(chunk)])
    return np.concatenate(out)


def mismatches(boards: list[chess.Board]) -> list[str]:
    found = []
    for board, row in zip(boards, masks(boards)):
        want = set(legal_moves_and_indices(board, 1)[1])
        got = set(np.flatnonzero(row).tolist())
        if want != got:
            found.append(f"{board.fen()}: missing {[POLICY_MOVES[i] for i in sorted(want - got)]}"
                         f" extra {[POLICY_MOVES[i] for i in sorted(got - want)]}")
    return found


def test_random_game_positions_match_engine_movegen():
    boards = random_game_positions(RANDOM_GAMES, SEED)
    assert len(boards) > 3000
    assert any(b.turn == chess.BLACK for b in boards) and any(b.turn == chess.WHITE for b in boards)
    assert any(b.is_check() for b in boards) and any(b.has_legal_en_passant() for b in boards)
    bad = mismatches(boards)
    assert not bad, f"{len(bad)} of {len(boards)} positions differ, e.g.\n" + "\n".join(bad[:5])


@pytest.mark.parametrize("fen", SPECIAL_FENS)
def test_special_position(fen):
    assert mismatches([chess.Board(fen)]) == []


def test_special_positions_in_one_batch():
    boards = [chess.Board(fen) for fen in SPECIAL_FENS]
    assert mismatches(boards) == []


@pytest.mark.parametrize("fen", NO_MOVE_FENS)
def test_no_legal_moves_gives_an_empty_mask(fen):
    mask = masks([chess.Board(fen)])
    assert mask.shape == (1, POLICY_SIZE) and not mask.any()


def test_black_to_move_is_seen_flipped():
    """After 1.e4 black's e7-e5 is, from black's side as lc0 sees it, the move e2e4."""
    board = chess.Board()
    board.push_uci("e2e4")
    arrays = encode_boards([board])
    assert arrays["pieces"].shape == (1, 64) and arrays["pieces"][0, chess.E1] == 6  # our king
    assert arrays["pieces"][0, chess.E5] == 7  # their pawn, flipped from e4
    assert arrays["ep_file"][0] == chess.FILE_NAMES.index("e")  # e3 seen as e6: a real target
    mask = masks([board])[0]
    assert mask[POLICY_MOVES.index("e2e4")]
