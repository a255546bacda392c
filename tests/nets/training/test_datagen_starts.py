"""Datagen games started from PGN positions (``--start-pgn``): the sampling alone, then one game
with a fake engine in place of Stockfish. The truth is the PGN replayed by python-chess."""

from __future__ import annotations

import gzip
from pathlib import Path

import chess
import chess.pgn
import numpy as np
import pytest

from nets.training.reference.planes import encode_masks
from nets.training.datagen import GenConfig, load_start_games, make_chunk, play_game, sample_start
from nets.training.records import read_chunk, write_chunk
from nets.training.stockfish import Line

PGN = Path(__file__).resolve().parents[3] / "nets" / "matches" / "v6-vs-sf1350-tc10+0.1.pgn.gz"
CFG = GenConfig(out_dir="unused", start_pgn=(str(PGN),), start_min_move=16, start_max_move=40)


def _positions_of(path: Path) -> set[tuple[str, int]]:
    """(FEN, plies from the game's start) of every position of every game in ``path``."""
    found = set()
    with gzip.open(path, "rt") as f:
        while (game := chess.pgn.read_game(f)) is not None:
            board = game.board()
            found.add((board.fen(), 0))
            for move in game.mainline_moves():
                board.push(move)
                found.add((board.fen(), len(board.move_stack)))
    return found


def test_starts_are_pgn_positions_in_the_move_range_and_reproducible():
    games = load_start_games(CFG)
    truth = _positions_of(PGN)
    rng = np.random.default_rng(7)
    samples = [sample_start(CFG, games, rng) for _ in range(100)]
    for board, played in samples:
        assert [m.uci() for m in board.move_stack] == played  # the real history, not just a FEN
        assert (board.fen(), len(played)) in truth
        assert 16 <= len(played) // 2 + 1 <= 40  # full move of the position, from the game's start
        assert not board.is_game_over()
    assert len({b.fen() for b, _ in samples}) > 50 and len({len(p) % 2 for _, p in samples}) == 2
    rng = np.random.default_rng(7)
    again = [sample_start(CFG, games, rng)[0].fen() for _ in range(100)]
    assert again == [b.fen() for b, _ in samples]
    rng = np.random.default_rng(8)
    assert [sample_start(CFG, games, rng)[0].fen() for _ in range(100)] != again


def test_a_pgn_without_long_enough_games_is_an_error_naming_it(tmp_path):
    short = tmp_path / "short.pgn"
    short.write_text('[Event "?"]\n\n1. e4 e5 2. Nf3 Nc6 *\n\n[Event "?"]\n\n1. d4 *\n')
    with pytest.raises(ValueError, match="short.pgn: no readable game reaches move 16"):
        load_start_games(GenConfig(out_dir="unused", start_pgn=(str(PGN), str(short))))
    empty = tmp_path / "empty.pgn"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty.pgn"):
        load_start_games(GenConfig(out_dir="unused", start_pgn=(str(empty),)))
    assert len(load_start_games(GenConfig(out_dir="unused", start_pgn=(str(short),),
                                          start_min_move=2, start_max_move=3))) == 1


class BestFirstEngine:
    """Stands in for Stockfish: the legal moves in UCI order, scores falling 40 cp per line."""

    def new_game(self):
        pass

    def analyse(self, board, nodes):
        legal = sorted(board.legal_moves, key=chess.Move.uci)[:3]
        return [Line(m.uci(), 50 - 40 * k, (300, 500, 200)) for k, m in enumerate(legal)]


def test_a_move_range_that_is_empty_is_an_error_with_both_values():
    with pytest.raises(ValueError, match="expected 1 <= start_min_move <= start_max_move, got 30, 20"):
        load_start_games(GenConfig(out_dir="unused", start_pgn=CFG.start_pgn,
                                   start_min_move=30, start_max_move=20))


def test_a_game_from_a_pgn_start_keeps_its_history_and_plays_no_opening():
    cfg = GenConfig(out_dir="unused", start_pgn=CFG.start_pgn, explore=0.0, multipv=3)
    starts = load_start_games(cfg)
    moves, records, fen = play_game(BestFirstEngine(), cfg, np.random.default_rng(3), starts)
    moves = moves.split()
    first = int(records[0]["ply"])
    assert 30 <= first <= 79 and [r["ply"] for r in records] == list(range(first, first + len(records)))
    start_fen, pgn_moves = next(g for g in starts if list(g[1][:first]) == moves[:first])
    assert fen == ("" if start_fen == chess.STARTING_FEN else start_fen)
    board = chess.Board(start_fen)
    for ply, uci in enumerate(moves):
        if ply >= first:  # from the start on, the engine's best move: no sampled opening
            assert uci == BestFirstEngine().analyse(board, 1)[0].move
        board.push_uci(uci)
    share0 = GenConfig(out_dir="unused", start_pgn=CFG.start_pgn, start_pgn_share=0.0, multipv=3)
    assert play_game(BestFirstEngine(), share0, np.random.default_rng(3), starts)[1][0]["ply"] == 0


def test_a_chunk_of_pgn_starts_rebuilds_every_position(tmp_path):
    """The matches' games start from their openings' FENs: a chunk keeps each game's start, so
    every stored position is rebuilt, history included, to the very masks it was stored with."""
    cfg = GenConfig(out_dir=str(tmp_path), start_pgn=CFG.start_pgn, explore=0.0, multipv=3,
                    positions_per_chunk=30)
    write_chunk(tmp_path / "c.npz", make_chunk(BestFirstEngine(), cfg, 0, load_start_games(cfg)))
    chunk = read_chunk(tmp_path / "c.npz")
    assert chunk.starts is not None and all(chunk.starts)
    for i in range(len(chunk)):
        board = chunk.board(i)
        assert len(board.move_stack) == chunk.ply[i]
        np.testing.assert_array_equal(np.array(encode_masks([board])[0].masks, np.uint64),
                                      chunk.masks[i])
