"""The match runner shared by bin/match and bin/dev/train-net evaluate: scores, PGN, lost games.

The truth for games is python-chess replaying the PGN; for the interval, the per-game variance
worked out by hand. bin/match's own command line is tested in tests/bin/test_match.py.
"""

from __future__ import annotations

import sys

import chess
import numpy as np
import pytest

from nets.training import evaluate
from nets.training.match import Player, Tally, run_match

RANDOM_ENGINE = [sys.executable, "-m", "engine.uci", "--backend=random"]

CRASHING_ENGINE = """
import sys
for line in sys.stdin:
    cmd = line.split()[:1]
    if cmd == ["uci"]:
        print("id name crasher"); print("uciok")
    elif cmd == ["isready"]:
        print("readyok")
    elif cmd in (["go"], ["quit"]):
        break
    sys.stdout.flush()
"""


def test_match_score_and_interval():
    r = Tally(wins=6, draws=4, losses=10)
    assert r.games == 20 and r.score == pytest.approx(0.4)
    # per-game scores: 6 x 1, 4 x 0.5, 10 x 0 -> population variance 0.19, stderr sqrt(0.19/20)
    assert r.interval() == pytest.approx(1.96 * np.sqrt(0.19 / 20))
    assert "Elo difference -70" in r.summary()
    elo, err = r.elo()
    assert elo == pytest.approx(-400 * np.log10(1 / 0.4 - 1))
    assert err > 0
    # All losses: Wilson's interval, upper bound z^2 / (n + z^2) = 0.161 for n = 20.
    lo, hi = Tally(losses=20).bounds()
    assert lo == pytest.approx(0.0, abs=1e-12) and hi == pytest.approx(1.96 ** 2 / (20 + 1.96 ** 2))


def test_book_openings_stay_in_the_pgn_and_only_played_moves_carry_times():
    a = Player("a", RANDOM_ENGINE, nodes=4)
    b = Player("b", RANDOM_ENGINE + ["--cpuct=2.5"], nodes=4)
    games = []
    tally = run_match((a, b), 2, evaluate.book(), max_plies=6, first_opening=8,
                      on_game=lambda g, game, t: games.append(game))
    assert tally.games == 2 and [g.headers["White"] for g in games] == ["a", "b"]
    opening = evaluate.OPENINGS[8].split()  # five plies: the second game starts with black to move
    for game in games:
        moves = [m.uci() for m in game.mainline_moves()]
        assert "FEN" not in game.headers, "the book starts from the start position"
        assert moves[: len(opening)] == opening
        board = chess.Board()
        for node in game.mainline():
            assert node.move in board.legal_moves
            board.push(node.move)
            played = board.ply() > len(opening)
            assert ("[%emt" in node.comment) == played, f"ply {board.ply()}: comment {node.comment!r}"
        if game.headers["Termination"] == "max plies":
            assert len(moves) == len(opening) + 6


def test_a_crashed_engine_loses_and_is_restarted(tmp_path):
    script = tmp_path / "crasher.py"
    script.write_text(CRASHING_ENGINE)
    a = Player("random", RANDOM_ENGINE, nodes=4)
    b = Player("crasher", [sys.executable, str(script)], nodes=4)
    games = []
    tally = run_match((a, b), 2, [chess.Board()], max_plies=20, on_game=lambda g, game, t: games.append(game))
    assert (tally.wins, tally.draws, tally.losses, tally.crashes) == (2, 0, 0, 2)
    assert [g.headers["Termination"] for g in games] == ["crasher crashed"] * 2
    assert [g.headers["Result"] for g in games] == ["1-0", "0-1"]


def test_a_player_needs_a_limit():
    with pytest.raises(ValueError, match="expected nodes, movetime_ms or base_s"):
        Player("x", ["engine"])
