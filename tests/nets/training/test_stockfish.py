"""Labels from Stockfish through python-chess: scores from the side to move, mates, WDL.

The truth is python-chess: the mating move must mate, the lines must be legal moves, and a
position and its colour-flipped mirror must get the same labels (both seen from the side to move).
Tests that run Stockfish skip when it is not installed.
"""

from __future__ import annotations

import shutil

import chess
import chess.engine
import pytest

from nets.training.stockfish import DEFAULT_STOCKFISH, MATE_CP, Line, Stockfish, line_of

NODES = 20_000


def _info(score: chess.engine.Score, turn: chess.Color, pv: str = "e7e5") -> dict:
    """An info of one line as python-chess makes it: UCI scores and WDL are the side to move's."""
    return {"multipv": 2, "pv": [chess.Move.from_uci(pv)], "score": chess.engine.PovScore(score, turn),
            "wdl": chess.engine.PovWdl(chess.engine.Wdl(20, 870, 110), turn)}


def test_a_line_keeps_the_side_to_moves_view_and_ranks_mates():
    for turn in chess.COLORS:
        assert line_of(_info(chess.engine.Cp(-35), turn)) == Line("e7e5", -35, (20, 870, 110))
        assert line_of(_info(chess.engine.Mate(-3), turn)).cp == -(MATE_CP - 3)
        assert line_of(_info(chess.engine.Mate(2), turn)).cp == MATE_CP - 2
    # A faster mate ranks higher, any mate above any centipawn score.
    assert line_of(_info(chess.engine.Mate(1), True)).cp > line_of(_info(chess.engine.Mate(5), True)).cp > 5000
    no_move = {"depth": 0, "score": chess.engine.PovScore(chess.engine.Mate(0), chess.BLACK)}
    assert line_of(no_move) is None


@pytest.fixture(scope="module")
def stockfish():
    if shutil.which("stockfish") is None and shutil.which(DEFAULT_STOCKFISH) is None:
        pytest.skip(f"Stockfish is not installed (not on PATH, not at {DEFAULT_STOCKFISH})")
    sf = Stockfish(multipv=3)
    yield sf
    sf.close()


def _both_colours(fen: str) -> list[chess.Board]:
    board = chess.Board(fen)
    return [board, board.mirror()]


def test_a_mate_in_one_scores_from_the_side_to_move_in_both_colours(stockfish):
    for board in _both_colours("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"):  # Ra8#
        lines = stockfish.analyse(board, NODES)
        mate = board.copy()
        mate.push_uci(lines[0].move)
        assert mate.is_checkmate(), f"expected a mating first move, got {lines[0]} in {board.fen()}"
        assert lines[0].cp == MATE_CP - 1, f"expected {MATE_CP - 1} (mate in 1), got {lines[0].cp}"
        assert lines[0].wdl == (1000, 0, 0)


def test_lines_are_distinct_legal_moves_scored_for_the_side_to_move(stockfish):
    # White is a queen up; mirrored, black is: either way the side to move is winning.
    labels = []
    for board in _both_colours("4k3/8/8/8/8/8/3Q4/4K3 w - - 0 1"):
        stockfish.new_game()
        lines = stockfish.analyse(board, NODES)
        assert len(lines) == 3 and len({l.move for l in lines}) == 3
        assert all(chess.Move.from_uci(l.move) in board.legal_moves for l in lines)
        assert all(l.cp > 500 and l.wdl[0] > 900 and sum(l.wdl) == 1000 for l in lines), lines
        labels.append(lines)
    assert labels[0][0].cp > 0 and labels[1][0].cp > 0


def test_a_position_without_legal_moves_has_no_lines(stockfish):
    board = chess.Board("R5k1/5ppp/8/8/8/8/8/6K1 b - - 1 1")
    assert board.is_checkmate()
    assert stockfish.analyse(board, 100) == []
