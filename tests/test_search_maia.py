"""End to end with a real network (Maia-1100 through the xla backend): ``go nodes 1`` plays lc0's
top policy move (argmax of p_raw over the legal moves in lc0's reference records)."""

from __future__ import annotations

import sys
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest

from conftest import need_shared
from engine.search import Limits, Search, from_options

LOGIT_TOLERANCE = 5e-3
"""Top-two logits closer than this may swap between lc0 and us (lc0 vs onnx differ by ≤2.6e-3)."""


def _board(rec: dict) -> chess.Board:
    board = chess.Board(rec["fen"])
    for uci in rec["moves"]:
        board.push_uci(uci)
    return board


def _acceptable(rec: dict) -> set[str]:
    p = np.asarray(rec["p_raw"], np.float64)
    top = p.max()
    return {m for m, x in zip(rec["legal_moves"], p) if x >= top - LOGIT_TOLERANCE}


@pytest.fixture(scope="module")
def maia_net():
    path = need_shared("maia", "maia-1100.onnx")
    from backend_xla import load_network

    return load_network(str(path), "")


@pytest.mark.slow
def test_nodes_one_plays_top_policy_move_in_process(maia_net, maia1100_ref):
    search = Search(maia_net, from_options({}))
    checked = 0
    for rec in maia1100_ref:
        if not rec["legal_moves"]:
            continue
        board = _board(rec)
        search.clear()
        search.set_position(board)
        result = search.run(Limits(nodes=1))
        assert result.bestmove.uci() in _acceptable(rec), (
            f"position {rec['index']} ({rec['fen']} moves {rec['moves']}): expected one of "
            f"{sorted(_acceptable(rec))}, got {result.bestmove.uci()}")
        checked += 1
    assert checked > 250


def test_nodes_one_via_uci(maia1100_ref):
    path = need_shared("maia", "maia-1100.onnx")
    repo = Path(__file__).resolve().parent.parent
    eng = chess.engine.SimpleEngine.popen_uci(
        [sys.executable, "-m", "engine.uci", f"--weights={path}"], cwd=repo, timeout=120)
    try:
        records = [r for r in maia1100_ref if r["legal_moves"]][::60]
        for rec in records:
            board = _board(rec)
            result = eng.play(board, chess.engine.Limit(nodes=1))
            assert result.move.uci() in _acceptable(rec), f"position {rec['index']}"
    finally:
        eng.quit()
