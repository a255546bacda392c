"""``bin/dev/train-net analyse``: a player's moves read from a PGN, a hung queen counted as a blunder,
agreement over the right moves, calibration bins that hold every position, the time limit, a second
network's columns computed from its own outputs.

Runs the real Stockfish at few nodes (skips without it) and the shipped network.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nets.training.analyse import (
    BIG_LOSS,
    PHASES,
    analyse_pgn,
    format_report,
    read_tasks,
    write_json,
)
from nets.training.stockfish import DEFAULT_STOCKFISH

ROOT = Path(__file__).resolve().parents[3]
WEIGHTS = str(ROOT / "nets" / "xlazero-sf6x64.onnx")
NODES = 3000

# Game 1: "net" (White) hangs its queen on move 3 (Qxe5+?? Nxe5). Game 2: "net" plays Black, a
# quiet opening. Game 3: "net" does not play, so it is not read.
PGN = """[White "net"]
[Black "other"]
[Result "0-1"]

1. e4 e5 2. Qh5 Nc6 3. Qxe5+ Nxe5 0-1

[White "other"]
[Black "net"]
[Result "1/2-1/2"]

1. d4 d5 2. c4 e6 3. Nc3 Nf6 1/2-1/2

[White "a"]
[Black "b"]
[Result "*"]

1. e4 c5 *
"""


def test_the_players_moves_are_read_within_max_moves():
    tasks, games = read_tasks(PGN, "net", max_moves=40)
    assert games == 2
    assert [t.played for t in tasks] == ["e2e4", "d1h5", "h5e5", "d7d5", "e7e6", "g8f6"]
    assert [t.result for t in tasks] == [0.0] * 3 + [0.5] * 3  # the mover's view
    assert tasks[2].board().fen().startswith("r1bqkbnr/pppp1ppp/2n5/4p2Q/4P3")
    tasks, _ = read_tasks(PGN, "net", max_moves=2)
    assert [t.played for t in tasks] == ["e2e4", "d1h5", "d7d5", "e7e6"]
    assert read_tasks(PGN, "nobody", 40) == ([], 0)


@pytest.fixture(scope="module")
def stockfish():
    if shutil.which("stockfish") is None and shutil.which(DEFAULT_STOCKFISH) is None:
        pytest.skip(f"Stockfish is not installed (not on PATH, not at {DEFAULT_STOCKFISH})")


@pytest.fixture(scope="module")
def report(stockfish):
    return analyse_pgn(PGN, "net", WEIGHTS, max_moves=40, nodes=NODES, log=lambda m: None)


def test_a_hung_queen_is_a_big_loss(report):
    assert report.moves == report.moves_total == 6 and not report.stopped_early
    by_move = {m["played"]: m for m in report.per_move}
    assert by_move["h5e5"]["loss"] >= BIG_LOSS, by_move["h5e5"]
    big = sum(m["loss"] >= BIG_LOSS for m in report.per_move)
    assert big >= 1 and report.loss_300 == pytest.approx(100 * big / 6)
    assert 0 <= report.loss_150_300 <= 100 - report.loss_300
    assert report.big_losses_still_winning == 0  # the queen is lost, not a slower win
    assert report.mean_loss >= by_move["h5e5"]["loss"] / 6
    assert all(m["loss"] >= 0 and abs(m["best_cp"]) <= 1000 for m in report.per_move)


def test_agreement_is_a_share_of_the_analysed_moves(report):
    moves = report.per_move
    assert report.policy_top1 == pytest.approx(100 * sum(m["net_top"] == m["sf_best"] for m in moves) / 6)
    assert report.played_top1 == pytest.approx(100 * sum(m["played"] == m["sf_best"] for m in moves) / 6)
    assert 0 <= report.policy_top1 <= 100 and 0 <= report.played_top1 <= 100
    assert all(len(m["net_top"]) >= 4 and len(m["sf_best"]) >= 4 for m in moves)


def test_calibration_bins_hold_every_position(report, tmp_path):
    assert sum(b["count"] for b in report.calibration) == 6
    assert all(0 <= m["net_expected"] <= 1 and 0 <= m["sf_expected"] <= 1 for m in report.per_move)
    assert 0 <= report.mae_stockfish <= 1 and report.results_counted == 6
    text = format_report(report)
    assert ">= 300 cp" in text and "policy top-1" in text
    write_json(report, tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text())["moves"] == 6


@pytest.mark.slow  # a tool's further end-to-end run (docs/performance.md, "The test suite's time")
def test_workers_and_the_time_limit(report):
    two = analyse_pgn(PGN, "net", WEIGHTS, nodes=NODES, workers=2, log=lambda m: None)
    assert two.per_move == report.per_move  # the hash is cleared before each move
    none = analyse_pgn(PGN, "net", WEIGHTS, nodes=NODES, max_minutes=0, log=lambda m: None)
    assert none.moves == 0 and none.moves_total == 6 and none.stopped_early
    assert "stopped at the time limit" in format_report(none)


@pytest.mark.slow  # a tool's further end-to-end run (docs/performance.md, "The test suite's time")
def test_a_second_network_on_the_same_positions(report):
    """The untrained net against v6: its own top priors and values, each top prior scored by
    Stockfish (the same loss as the played move's when they coincide); the shipped net's columns
    equal the run without a comparison."""
    untrained = str(ROOT / "nets" / "untrained.onnx")
    both = analyse_pgn(PGN, "net", WEIGHTS, nodes=NODES, compare_weights=untrained, log=lambda m: None)
    assert both.compare_weights == untrained and both.phases[0]["moves"] == 6
    assert both.phases[0]["net"] == report.phases[0]["net"] and "cmp" not in report.phases[0]
    moves = both.per_move
    assert any(m["cmp_expected"] != m["net_expected"] for m in moves)
    for m in moves:
        assert set(m["scored"]) == {m["net_top"], m["cmp_top"]}
        for top, loss in (("net_top", "net_top_loss"), ("cmp_top", "cmp_top_loss")):
            assert m[loss] == max(0, m["best_cp"] - m["scored"][m[top]])
            if m[top] == m["sf_best"]:
                assert m[loss] == 0
            if m[top] == m["played"]:
                assert m[loss] == m["loss"]
    cmp = both.phases[0]["cmp"]
    assert cmp["top1"] == pytest.approx(100 * sum(m["cmp_top"] == m["sf_best"] for m in moves) / 6)
    assert cmp["expected"] == pytest.approx(sum(m["cmp_expected"] for m in moves) / 6)
    assert [p["phase"] for p in both.phases] == [name for name, _, _ in PHASES] + ["all"]
    assert [p["moves"] for p in both.phases] == [6, 0, 0, 6]  # every move is in the first 15
    text = format_report(both)
    assert "untrained.onnx" in text and "xlazero-sf6x64.onnx" in text and "opening 1-15" in text
