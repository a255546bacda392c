"""lc0's order of equal priors (core/lc0_order.py) against lc0's own code: its move generator's
order on 200 positions and libstdc++'s std::sort with lc0's SortEdges comparison on 300 key
arrays with many ties (tests/data, made by ``bin/check/lc0-order-truths`` from lc0's source)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import chess
import numpy as np

from engine.board import from_chess_position, legal_moves
from engine.board.moves import CASTLE, KIND_MASK
from engine.search.core.lc0_order import generation_rank, lc0_sort

DATA = Path(__file__).resolve().parents[2] / "data"


def _records(name: str) -> list[dict]:
    with gzip.open(DATA / name, "rt") as f:
        return [json.loads(line) for line in f]


def _lc0_text(move: int, black: bool) -> str:
    """A move word as lc0 prints a move of its frame (ranks mirrored for black)."""
    frm, to = move & 63, (move >> 6) & 63
    if black:
        frm, to = frm ^ 56, to ^ 56
    text = chess.square_name(frm) + chess.square_name(to)
    kind = (move & KIND_MASK) >> 12
    if kind >= 2 and not move & CASTLE:
        text += chess.piece_symbol(kind)
    return text


def test_generation_rank_orders_moves_as_lc0s_generator() -> None:
    for rec in _records("lc0-movegen-order.jsonl.gz"):
        board = chess.Board(rec["fen"])
        pos = from_chess_position(board)
        moves = np.zeros(256, np.int32)
        count = legal_moves(pos, 0, moves, np.zeros(256, np.int32))
        ranked = sorted(moves[:count].tolist(), key=lambda m: generation_rank(pos, np.int64(m)))
        black = board.turn == chess.BLACK
        assert [_lc0_text(m, black) for m in ranked] == rec["moves"], rec["fen"]


def test_lc0_sort_is_libstdcxx_std_sort_by_decreasing_prior() -> None:
    # Moves whose generation ranks rise with their index on an empty board (white to move):
    # move i goes from square i // 4 up its file to rank i % 4, a straight step ranked by its
    # destination, so lc0_sort starts from the order std::sort was given.
    pos = np.zeros(16, np.uint64)
    for rec in _records("libstdcxx-sort-desc.jsonl.gz"):
        keys = np.array(rec["keys"], np.uint16)
        n = len(keys)
        ids = np.arange(n, dtype=np.int32)
        moves = ids // 4 | (((ids // 4) & 7) + 8 * (ids % 4)) << 6
        priors = keys.copy()
        lc0_sort(pos, moves, priors, n, np.zeros(max(n, 48), np.int64), np.zeros(n, np.int64))
        got = [4 * int(m & 63) + (int(m >> 6) >> 3) for m in moves]
        assert got == rec["order"]
        assert (priors == keys[rec["order"]]).all()
