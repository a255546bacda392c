"""Encoder, classical format 1 and the policy map, against lc0's own reference records."""

from __future__ import annotations

import json

import chess
import numpy as np
import pytest

from conftest import board_of, lc0_planes, need_shared, read_jsonl
from engine.encoding import (
    POLICY_MOVES,
    POLICY_SIZE,
    SUPPORTED_INPUT_FORMATS,
    encode_batch,
    encode_planes,
    policy_indices,
)


def describe_plane_mismatch(record: dict, got: np.ndarray, expected: np.ndarray) -> str:
    planes = sorted({int(p) for p in np.nonzero(got != expected)[0]})
    return (
        f"position {record['index']} ({record['tag']}) {record['fen']} moves "
        f"{record['moves']}: expected lc0's planes, got differences in planes {planes}"
    )


@pytest.fixture(scope="module")
def maia_records(maia1100_ref: list[dict]) -> list[dict]:
    return maia1100_ref


def test_format1_planes_equal_lc0_for_every_position(maia_records):
    assert len(maia_records) == 301
    for record in maia_records:
        assert record["input_format"] == 1
        got = encode_planes(board_of(record), 1)
        expected = lc0_planes(record)
        assert got.dtype == np.float32 and got.shape == (112, 8, 8)
        assert np.array_equal(got, expected), describe_plane_mismatch(record, got, expected)


def test_encode_batch_equals_per_board_encoding(maia_records):
    records = maia_records[:40]
    batch = encode_batch([board_of(r) for r in records], 1)
    assert batch.shape == (40, 112, 8, 8) and batch.dtype == np.float32
    for k, record in enumerate(records):
        assert np.array_equal(batch[k], lc0_planes(record)), record["index"]


def test_format1_policy_indices_equal_lc0(maia_records):
    for record in maia_records:
        board = board_of(record)
        indices = policy_indices(board, 1)
        assert sorted(m.uci() for m in indices) == sorted(record["legal_moves"]), record["index"]
        got = [indices[chess.Move.from_uci(u)] for u in record["legal_moves"]]
        assert got == record["policy_indices"], (
            f"position {record['index']} {record['fen']}: expected {record['policy_indices']}, "
            f"got {got}"
        )


def test_generated_policy_table_equals_lc0_table():
    expected = json.loads(need_shared("policy_index_moves.json").read_text())
    assert len(POLICY_MOVES) == POLICY_SIZE == 1858
    assert list(POLICY_MOVES) == expected


def test_policy_table_conventions_without_shared():
    # Independent of ../shared: castling as king-takes-rook, knight promotion without suffix.
    assert "e1h1" in POLICY_MOVES and "e1a1" in POLICY_MOVES
    assert not any(m.endswith("n") for m in POLICY_MOVES)
    assert sum(len(m) == 5 for m in POLICY_MOVES) == 22 * 3
    assert len(set(POLICY_MOVES)) == POLICY_SIZE


def test_castling_and_promotions_use_lc0_conventions():
    board = chess.Board("r3k2r/1P6/8/8/8/8/8/R3K2R w KQkq - 0 1")
    indices = policy_indices(board, 1)
    assert POLICY_MOVES[indices[chess.Move.from_uci("e1g1")]] == "e1h1"
    assert POLICY_MOVES[indices[chess.Move.from_uci("e1c1")]] == "e1a1"
    assert POLICY_MOVES[indices[chess.Move.from_uci("b7a8n")]] == "b7a8"
    assert POLICY_MOVES[indices[chess.Move.from_uci("b7a8q")]] == "b7a8q"
    assert POLICY_MOVES[indices[chess.Move.from_uci("b7b8r")]] == "b7b8r"
    black = chess.Board("r3k2r/8/8/8/8/8/6p1/R3K2R b KQkq - 0 1")
    indices = policy_indices(black, 1)
    # Black's moves are written in its own frame (ranks flipped).
    assert POLICY_MOVES[indices[chess.Move.from_uci("e8g8")]] == "e1h1"
    assert POLICY_MOVES[indices[chess.Move.from_uci("g2h1b")]] == "g7h8b"


def test_unsupported_format_is_a_value_error():
    board = chess.Board()
    with pytest.raises(ValueError, match=r"unsupported input format 7: expected one of \[1, 2"):
        encode_planes(board, 7)
    with pytest.raises(ValueError, match="unsupported input format"):
        policy_indices(board, 0)
    with pytest.raises(ValueError, match="unsupported input format"):
        encode_batch([], 6)
    assert SUPPORTED_INPUT_FORMATS == {1, 2, 3, 4, 5, 132, 133}


def test_unknown_history_fill_is_a_value_error():
    with pytest.raises(ValueError, match=r"unknown history_fill 'sometimes': expected one of"):
        encode_planes(chess.Board(), 1, history_fill="sometimes")


def test_boards_lc0_cannot_encode_are_value_errors():
    # En-passant square on a rank lc0 rejects.
    with pytest.raises(ValueError, match="en-passant square of the root position"):
        encode_planes(chess.Board("4k3/8/8/8/4P3/8/8/4K3 w - e4 0 1"), 1)
    # Castling right without its rook.
    with pytest.raises(ValueError, match="castling rights"):
        encode_planes(chess.Board("4k3/8/8/8/8/8/8/4K3 w K - 0 1"), 1)


def test_history_fill_modes_on_a_fen_root():
    board = chess.Board("4k3/8/8/8/8/8/4P3/4K3 w - - 3 40")
    filled = encode_planes(board, 1, "fen_only")
    assert all(np.array_equal(filled[13 * t : 13 * t + 12], filled[:12]) for t in range(8))
    empty = encode_planes(board, 1, "no")
    assert not empty[13:104].any() and np.array_equal(empty[:13], filled[:13])
    start = chess.Board()
    assert not encode_planes(start, 1, "fen_only")[13:104].any()
    always = encode_planes(start, 1, "always")
    assert np.array_equal(always[13:25], always[:12])
