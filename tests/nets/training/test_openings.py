"""Balanced openings for matches: a scoring stand-in for Stockfish, the truth replayed by python-chess."""

from __future__ import annotations

import chess
import pytest

from nets.training.openings import OpeningConfig, balanced_openings, write_epd
from nets.training.stockfish import Line


class ScoringEngine:
    """Scores a position by its mobility difference (deterministic, spread over ±100s of cp)."""

    def __init__(self):
        self.calls = 0

    @staticmethod
    def score(moves: list[str]) -> int:
        board = chess.Board()
        for m in moves:
            board.push_uci(m)
        mine = board.legal_moves.count()
        board.push(chess.Move.null())
        theirs = board.legal_moves.count()
        return 15 * (mine - theirs)

    def analyse(self, board, nodes):
        self.calls += 1
        return [Line("0000", self.score([m.uci() for m in board.move_stack]), (0, 1000, 0))]


def test_openings_are_distinct_balanced_random_positions(tmp_path):
    cfg = OpeningConfig(count=12, seed=5, min_plies=3, max_plies=5, max_cp=30, nodes=1)
    engine = ScoringEngine()
    boards = balanced_openings(engine, cfg)
    assert len(boards) == 12 and len({b.epd() for b in boards}) == 12
    assert engine.calls > 12, "the filter never rejected a candidate: the test does not test it"
    for board in boards:
        replay = chess.Board()
        for move in board.move_stack:
            assert move in replay.legal_moves
            replay.push(move)
        assert 3 <= len(board.move_stack) <= 5
        assert abs(ScoringEngine.score([m.uci() for m in board.move_stack])) <= 30
        assert not board.is_game_over()
    assert [b.epd() for b in balanced_openings(ScoringEngine(), cfg)] == [b.epd() for b in boards]
    path = tmp_path / "o.epd"
    write_epd(boards, path)
    back = [chess.Board.from_epd(line)[0] for line in path.read_text().splitlines()]
    assert [b.epd() for b in back] == [b.epd() for b in boards]


def test_too_strict_a_filter_is_an_error_not_fewer_openings():
    cfg = OpeningConfig(count=3, min_plies=2, max_plies=2, max_cp=-1, nodes=1, max_tries=50)
    with pytest.raises(RuntimeError, match="expected 3 openings"):
        balanced_openings(ScoringEngine(), cfg)
    with pytest.raises(ValueError, match="min_plies"):
        balanced_openings(ScoringEngine(), OpeningConfig(min_plies=4, max_plies=2))
