"""Training records: generation (with a fake engine in place of Stockfish), chunk files, decoding.

The truth for planes is the position rebuilt from the stored game, its planes laid out from
python-chess alone and made by the engine's own encoder (engine.encoding.encode_planes); for policy
targets, python-chess's legal moves.
"""

from __future__ import annotations

import chess
import numpy as np
import pytest

from engine.encoding import encode_planes, policy_indices
from nets.training import datagen
from nets.training.datagen import GenConfig, chunk_path, generate, make_chunk
from nets.training.records import (decode_planes, dense_policy, legal_mask, list_chunks, read_chunk,
                                   write_chunk)
from nets.training.stockfish import Line

FAKE_LINES = 3


class FakeEngine:
    """Stands in for Stockfish: up to FAKE_LINES legal moves (chosen from the position's move
    count, so replays are deterministic) with decreasing scores and a fixed WDL."""

    def __init__(self, *args, **kwargs):
        self.calls = 0

    def new_game(self):
        pass

    def analyse(self, board, nodes):
        self.calls += 1
        legal = sorted(board.legal_moves, key=lambda m: m.uci())
        rng = np.random.default_rng(len(board.move_stack))
        pick = rng.permutation(len(legal))[:FAKE_LINES]
        return [Line(legal[j].uci(), 50 - 40 * k, (300, 500, 200)) for k, j in enumerate(pick)]

    def close(self):
        pass


CFG = dict(positions_per_chunk=60, nodes=1, multipv=FAKE_LINES, workers=1, max_opening_plies=4)


@pytest.fixture(scope="module")
def chunk():
    return make_chunk(FakeEngine(), GenConfig(out_dir="unused", **CFG), 0)


def test_chunk_round_trips_through_a_file(chunk, tmp_path):
    path = tmp_path / "c.npz"
    write_chunk(path, chunk)
    back = read_chunk(path)
    assert list_chunks(tmp_path) == [path]
    for name in chunk.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(back, name), getattr(chunk, name), err_msg=name)
    assert [back.board(i).fen() for i in range(len(back))] == [chunk.board(i).fen() for i in range(len(chunk))]


def python_chess_planes(board: chess.Board) -> np.ndarray:
    """lc0's input-format-1 planes of ``board`` from python-chess alone: 8 history steps of 13 planes
    (our / their P N B R Q K, repetition; nothing before the start position), castling rights,
    black to move, rule50, zeros, ones; squares in the side to move's frame."""
    planes = np.zeros((112, 8, 8), np.float32)
    us = board.turn
    frame = chess.square_mirror if us == chess.BLACK else (lambda square: square)
    past = board.copy()
    for t in range(8):
        for k, piece_type in enumerate(chess.PIECE_TYPES):
            for colour, first in ((us, 0), (not us, 6)):
                for square in map(frame, past.pieces(piece_type, colour)):
                    planes[13 * t + first + k, square // 8, square % 8] = 1
        planes[13 * t + 12] = past.is_repetition(2)
        if not past.move_stack:
            break
        past.pop()
    rights = (board.has_queenside_castling_rights(us), board.has_kingside_castling_rights(us),
              board.has_queenside_castling_rights(not us), board.has_kingside_castling_rights(not us))
    planes[104:108] = np.array(rights, np.float32)[:, None, None]
    planes[108] = us == chess.BLACK
    planes[109] = board.halfmove_clock
    planes[111] = 1
    return planes


def test_stored_masks_decode_to_the_planes_of_the_rebuilt_position(chunk):
    assert len(chunk) >= CFG["positions_per_chunk"]
    planes = decode_planes(chunk.masks, chunk.rule50, chunk.black)
    for i in range(len(chunk)):
        board = chunk.board(i)
        np.testing.assert_array_equal(planes[i], python_chess_planes(board), err_msg=f"position {i}")
        np.testing.assert_array_equal(planes[i], encode_planes(board), err_msg=f"position {i}")
    assert chunk.black.any() and (chunk.rule50 > 0).any()  # both frames and rule50 exercised


def test_policy_targets_are_the_engine_moves_and_legal(chunk):
    fake = FakeEngine()
    dense = dense_policy(chunk.policy_idx, chunk.policy_prob)
    legal = legal_mask(chunk.legal)
    np.testing.assert_allclose(dense.sum(axis=1), 1.0, rtol=1e-6)
    for i in range(len(chunk)):
        board = chunk.board(i)
        index_of = policy_indices(board)
        lines = fake.analyse(board, 1)
        expected = [index_of[chess.Move.from_uci(l.move)] for l in lines]
        assert list(chunk.policy_idx[i][: len(expected)]) == expected
        assert set(np.flatnonzero(legal[i])) == set(index_of.values())
        assert np.all(legal[i][dense[i] > 0])
        # Softmax over scores 40 cp apart at POLICY_TEMPERATURE_CP: each next move gets e^-0.8.
        p = chunk.policy_prob[i][: len(expected)]
        np.testing.assert_allclose(p[1:] / p[:-1], np.exp(-40 / datagen.POLICY_TEMPERATURE_CP), rtol=1e-5)
    np.testing.assert_allclose(chunk.wdl, np.tile([0.3, 0.5, 0.2], (len(chunk), 1)), rtol=1e-6)


def test_generation_resumes_by_skipping_finished_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(datagen, "Stockfish", FakeEngine)
    cfg = GenConfig(out_dir=str(tmp_path), chunks=2, **CFG)
    generate(cfg)
    first, second = chunk_path(cfg, 0), chunk_path(cfg, 1)
    kept_mtime, redo_bytes = first.stat().st_mtime_ns, read_chunk(second)
    second.unlink()
    generate(cfg)
    assert first.stat().st_mtime_ns == kept_mtime
    again = read_chunk(second)
    np.testing.assert_array_equal(again.games, redo_bytes.games)  # chunk k depends on (seed, k) only


def _moves_outside_the_lines(blunder: float) -> tuple[int, int]:
    """(moves after the opening that none of the engine's lines proposed, moves after the opening)
    in a generated chunk; every game is replayed with python-chess, so each move must be legal."""
    chunk = make_chunk(FakeEngine(), GenConfig(out_dir="unused", blunder=blunder, **CFG), 0)
    fake, outside, total = FakeEngine(), 0, 0
    for game in chunk.games:
        board, moves = chess.Board(), str(game).split()
        for ply, move in enumerate(moves):
            assert chess.Move.from_uci(move) in board.legal_moves
            if ply >= CFG["max_opening_plies"]:
                total += 1
                outside += move not in {l.move for l in fake.analyse(board, 1)}
            board.push_uci(move)
    return outside, total


def test_blunder_plays_random_legal_moves_after_the_opening():
    # Without it every move is one of the engine's lines; with blunder=1 a uniform pick from
    # ~30 legal moves misses the FAKE_LINES lines most of the time.
    assert _moves_outside_the_lines(0.0)[0] == 0
    outside, total = _moves_outside_the_lines(1.0)
    assert total > 20 and outside > 0.6 * total, (outside, total)
