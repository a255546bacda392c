"""A leaf's legal moves are generated once its gather's rounds are done (issue 65): a round
leaves a request's moves pending and only asks whether it has one (``has_legal_move``);
``gather.encode_requests`` then writes the moves and their policy indices. Both against
python-chess and the training code's independent policy map."""

from __future__ import annotations

import chess
import numpy as np

from tree_checks import ended_at_limit

from engine.backends.random import RandomNetwork
from engine.board import from_chess_position, to_chess_move
from engine.board.movegen import has_legal_move
from engine.search import Limit, Search, from_options
from engine.search.core import gather
from nets.training.reference import policy_indices

FENS = (
    chess.STARTING_FEN,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",  # kiwipete
    "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3",  # mated
    "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",  # stalemate
    "8/8/8/2k5/3Pp3/8/8/4K3 b - d3 0 1",  # en passant
    "8/1P4k1/8/8/8/8/6p1/K7 w - - 0 1",  # promotions
    "4k3/8/8/8/8/8/4r3/R3K2R w KQ - 0 1",  # in check, castling refused
)


def test_has_legal_move_finds_mate_and_stalemate_as_python_chess():
    moves, indices = np.zeros(256, np.int32), np.zeros(256, np.int32)
    for fen in FENS:
        board = chess.Board(fen)
        assert has_legal_move(from_chess_position(board), moves, indices) == any(
            board.legal_moves
        ), fen


def test_the_gathers_end_writes_the_moves_its_rounds_left_pending():
    boards = [chess.Board(f) for f in FENS if any(chess.Board(f).legal_moves)]
    batch = gather.new_batch(len(boards))
    for r, board in enumerate(boards):
        batch.rows[r] = from_chess_position(board)
        batch.req["count"][r] = gather.MOVES_PENDING
        batch.req["wlast"][r] = -1  # planes already encoded: moves only
    gather.encode_requests(
        batch.req, batch.rows, batch.window, batch.moves, batch.indices, 1, 0, batch.masks,
        batch.values, len(boards),
    )
    for r, board in enumerate(boards):
        n = int(batch.req["count"][r])
        got = {to_chess_move(w): int(i) for w, i in zip(batch.moves[r, :n], batch.indices[r, :n])}
        assert got == policy_indices(board, 1), board.fen()


def test_a_search_leaves_no_request_pending_after_its_gather():
    search = Search(RandomNetwork(), from_options({"Threads": 1, "MinibatchSize": 16}))
    try:
        search.set_position(chess.Board(FENS[1]))
        result = search.run(Limit(nodes=300))
        batch = search.resources.batches[0]
        n = int(batch.meta[gather.REQUESTS])
        assert n > 0 and (batch.req["count"][:n] > 0).all()
        assert search.root.n == result.nodes and ended_at_limit(result.nodes, 300, search)
    finally:
        search.close()
