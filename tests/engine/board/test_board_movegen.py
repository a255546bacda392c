"""The compiled board against python-chess: legal moves, policy indices, make-move and perft."""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest
from numba import njit

from engine.board import (
    MAX_MOVES,
    compute_hash,
    from_chess_position,
    game_rows,
    in_check,
    legal_moves,
    make_move,
    move_from_chess,
    to_chess_move,
)
from engine.board.position import CASTLING, EP, FIELDS, HASH, PLY, RULE50, TURN
from nets.training.reference import move_index


@njit(cache=True, nogil=True)
def perft(pos, depth):
    """Leaves of the legal-move tree of ``pos`` at ``depth`` plies (iterative, copy-make; the
    last ply's moves are counted, not played). Here since issue 58 dropped bin/perf/perft."""
    if depth <= 0:
        return 1
    rows = np.empty((depth + 1, FIELDS), np.uint64)
    moves = np.empty((depth, MAX_MOVES), np.int32)
    indices = np.empty((depth, MAX_MOVES), np.int32)
    count = np.zeros(depth, np.int64)
    cursor = np.zeros(depth, np.int64)
    rows[0] = pos
    count[0] = legal_moves(rows[0], np.int64(0), moves[0], indices[0])
    if depth == 1:
        return count[0]
    total = 0
    ply = 0
    while ply >= 0:
        if cursor[ply] == count[ply]:
            ply -= 1
            continue
        make_move(rows[ply], np.int64(moves[ply, cursor[ply]]), rows[ply + 1])
        cursor[ply] += 1
        if ply + 2 == depth:
            total += legal_moves(rows[ply + 1], np.int64(0), moves[ply + 1], indices[ply + 1])
        else:
            ply += 1
            count[ply] = legal_moves(rows[ply], np.int64(0), moves[ply], indices[ply])
            cursor[ply] = 0
    return total


def random_games(seed: int, games: int, plies: int, chess960: bool) -> list[chess.Board]:
    """Every position of ``games`` random games (without their move stacks: copying each
    position's stack took seven times as long as the games)."""
    rng = random.Random(seed)
    out = []
    for _ in range(games):
        board = (chess.Board.from_chess960_pos(rng.randrange(960)) if chess960
                 else chess.Board())
        for _ in range(plies):
            out.append(board.copy(stack=False))
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
    return out


@pytest.fixture(scope="module")
def positions() -> list[chess.Board]:
    """10,400 positions: 70 standard games of up to 140 random plies, 10 Chess960 games."""
    boards = random_games(2026, 70, 140, False) + random_games(960, 10, 140, True)
    assert len(boards) >= 10_000
    return boards


def generate(pos: np.ndarray, transform: int = 0) -> tuple[np.ndarray, np.ndarray]:
    moves = np.empty(MAX_MOVES, np.int32)
    indices = np.empty(MAX_MOVES, np.int32)
    n = legal_moves(pos, transform, moves, indices)
    return moves[:n], indices[:n]


def lc0_marker(board: chess.Board) -> int | None:
    """lc0's en-passant marker after python-chess's push: only with an enemy pawn beside."""
    ep = board.ep_square
    if ep is None:
        return None
    capturers = chess.BB_PAWN_ATTACKS[not board.turn][ep] & board.pawns & board.occupied_co[
        board.turn]
    return ep if capturers else None


def test_perft_depth_1_and_policy_indices_equal_python_chess(positions):
    """Every legal move (as UCI), in check, and each move's policy index under a canonical
    transform drawn at random, on 10,400 random-game positions."""
    rng = random.Random(7)
    for board in positions:
        pos = from_chess_position(board.copy(stack=False))
        # lc0 transposes or mirrors pawnless boards only (a pawn move has no entry otherwise).
        transform = rng.randrange(2) if board.pawns else rng.randrange(8)
        moves, indices = generate(pos, transform)
        ours = [to_chess_move(m, board.chess960) for m in moves]
        assert sorted(m.uci() for m in ours) == sorted(m.uci() for m in board.legal_moves), \
            board.fen()
        assert len(set(moves.tolist())) == len(moves)
        assert in_check(pos) == board.is_check()
        expected = [move_index(board, m, transform) for m in ours]
        assert indices.tolist() == expected, board.fen()


def test_make_move_and_perft_depth_2_equal_python_chess(positions):
    """Every move of every twentieth position: the row after it equals python-chess's board after
    push (pieces, side, castling, rule50, ply, lc0's en-passant marker), its incremental hash
    equals the hash from scratch, and the depth-2 count matches."""
    for board in positions[::20]:
        board = board.copy(stack=False)
        pos = from_chess_position(board)
        moves, _ = generate(pos)
        out = np.empty_like(pos)
        leaves = 0
        for m in moves:
            make_move(pos, int(m), out)  # an int64 move, as the search passes it
            after = board.copy(stack=False)
            after.push(to_chess_move(m, board.chess960))
            want = from_chess_position(after)
            marker = lc0_marker(after)
            want[EP] = 64 if marker is None else marker
            want[HASH] = compute_hash(want)
            assert out.tolist() == want.tolist(), (board.fen(), to_chess_move(m).uci())
            assert generate(out)[0].size == after.legal_moves.count()
            leaves += after.legal_moves.count()
        assert perft(pos, 2) == leaves


# Published perft counts (chessprogramming.org "Perft Results"; python-chess reproduces them).
PERFT = [
    (chess.STARTING_FEN, 4, 197_281),
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 4, 4_085_603),
    ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", 5, 674_624),
    ("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", 4, 422_333),
    ("r2q1rk1/pP1p2pp/Q4n2/bbp1p3/Np6/1B3NBn/pPPP1PPP/R3K2R b KQ - 0 1", 4, 422_333),
    ("rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", 4, 2_103_487),
    ("r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10", 4, 3_894_594),
]


@pytest.mark.parametrize("fen,depth,count", PERFT)
def test_perft_standard_positions(fen, depth, count):
    assert perft(from_chess_position(chess.Board(fen)), depth) == count


@pytest.mark.parametrize("fen", [p[0] for p in PERFT[:4]])
def test_perft_depth_3_equals_python_chess(fen):
    board = chess.Board(fen)

    def count(b: chess.Board, depth: int) -> int:
        if depth == 1:
            return b.legal_moves.count()
        total = 0
        for m in list(b.legal_moves):
            b.push(m)
            total += count(b, depth - 1)
            b.pop()
        return total

    assert perft(from_chess_position(board), 3) == count(board, 3)


def test_chess960_castling_through_the_rook_square_and_uci_forms():
    """Chess960 castling where the king's target is the rook's square; and standard castling
    written e1g1 in UCI, e1h1 in Chess960."""
    board = chess.Board("rr3k2/8/8/8/8/8/8/1R3KR1 w GB - 0 1", chess960=True)
    pos = from_chess_position(board)
    moves = [to_chess_move(m, True).uci() for m in generate(pos)[0]]
    assert sorted(moves) == sorted(m.uci() for m in board.legal_moves)
    assert "f1g1" in moves and "f1b1" in moves  # the king ends on g1, the rook's square
    std = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    ucis = {to_chess_move(m).uci() for m in generate(from_chess_position(std))[0]}
    assert {"e1g1", "e1c1"} <= ucis and "e1h1" not in ucis


def test_game_rows_follow_the_move_stack_and_hashes_detect_repetitions():
    board = chess.Board()
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "e2e4", "b8c6", "e4e5", "d7d5"]:
        board.push_uci(uci)
    rows = game_rows(board)
    assert rows.shape[0] == len(board.move_stack) + 1
    replay = board.root()
    for k, move in enumerate(board.move_stack):
        assert move_from_chess(rows[k], replay, move) >= 0
        replay.push(move)
        assert chess.Board(replay.fen()).board_fen() == replay.board_fen()
        assert int(rows[k + 1][TURN]) == int(replay.turn == chess.BLACK)
        assert int(rows[k + 1][RULE50]) == replay.halfmove_clock
        assert int(rows[k + 1][PLY]) == replay.ply()
    assert rows[0][HASH] == rows[4][HASH]  # start position again, same rights and side
    assert rows[1][HASH] == rows[5][HASH]
    assert rows[0][HASH] != rows[2][HASH]
    # d7d5 beside white's e5 pawn sets lc0's marker on d6.
    assert int(rows[-1][EP]) == chess.D6
    # e2e4 with no black pawn beside: python-chess records e3, lc0 no marker.
    assert board.root().ep_square is None and int(rows[7][EP]) == 64


def test_castling_rights_change_the_hash():
    a = from_chess_position(chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1"))
    b = from_chess_position(chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w Kkq - 0 1"))
    assert a[HASH] != b[HASH] and a[CASTLING] != b[CASTLING]


def test_move_from_chess_rejects_an_illegal_move():
    board = chess.Board()
    with pytest.raises(ValueError, match="e2e5"):
        move_from_chess(from_chess_position(board), board, chess.Move.from_uci("e2e5"))
