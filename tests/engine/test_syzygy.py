"""Syzygy tablebases (SyzygyPath, SyzygyFastPlay) as lc0 uses them.

Truth: python-chess's own probing of the 3- and 4-piece tables in ../shared/syzygy (an
independent reader of the same files) and python-chess's game rules. The network is the instant
``random`` backend: whatever the tables fix, they fix even for a network that knows nothing.
"""

from __future__ import annotations

import io

import chess
import chess.syzygy
import pytest

from conftest import SHARED
from engine.backends.random import RandomNetwork
from engine.search import Limit, Search, from_options
from engine.tablebase import Tablebase, TablebaseError
from engine.uci import UciEngine

SYZYGY = SHARED / "syzygy"
NODES = 24


@pytest.fixture(scope="module")
def tables():
    if not SYZYGY.is_dir():
        pytest.skip(f"../shared is absent here: {SYZYGY} not found")
    tb = Tablebase(str(SYZYGY))
    yield tb
    tb.close()


@pytest.fixture(scope="module")
def truth():
    if not SYZYGY.is_dir():
        pytest.skip(f"../shared is absent here: {SYZYGY} not found")
    with chess.syzygy.open_tablebase(str(SYZYGY)) as tb:
        yield tb


def _defend(truth, board: chess.Board) -> chess.Move:
    """The tables' best move for the side to move: its best WDL, then the soonest zeroing move
    when winning and the latest when not (python-chess's probing, not ours)."""
    def key(move):
        board.push(move)
        try:
            if board.is_checkmate():
                return (3, 0)
            wdl, dtz = -truth.probe_wdl(board), truth.probe_dtz(board)
            return (wdl, -abs(dtz) if wdl > 0 else abs(dtz))
        finally:
            board.pop()
    return max(board.legal_moves, key=key)


def _play(truth, fen: str, tablebase, plies: int, nodes_a_move: int = NODES) -> tuple[chess.Board, int]:
    """Our search (random network) against the tables' best play; returns the final board and
    our total nodes."""
    board = chess.Board(fen)
    search = Search(RandomNetwork(), from_options({}), tablebase=tablebase)
    ours, nodes = board.turn, 0
    while not board.is_game_over() and len(board.move_stack) < plies:
        if board.turn == ours:
            search.set_position(board)
            result = search.run(Limit(nodes=nodes_a_move))
            nodes += result.playouts
            board.push(result.bestmove)
        else:
            board.push(_defend(truth, board))
    search.close()
    return board, nodes


def test_root_moves_keep_the_result_by_dtz(tables, truth):
    board = chess.Board("8/8/8/4k3/8/8/8/4K2Q w - - 0 1")  # KQvK, won
    probe = tables.root_moves(board, fast_play=False)
    assert probe.wdl == 2 and probe.by_dtz and probe.moves
    dtz = {}
    for move in board.legal_moves:
        board.push(move)
        if truth.probe_wdl(board) == -2:
            dtz[move] = abs(truth.probe_dtz(board))
        board.pop()
    assert set(probe.moves) == {m for m, d in dtz.items() if d == min(dtz.values())}
    fast = tables.root_moves(board, fast_play=True)
    assert set(fast.moves) == set(dtz) and not fast.by_dtz  # every winning move


@pytest.mark.parametrize("fen", ["8/8/8/4k3/8/8/8/4K2Q w - - 0 1",      # KQvK
                                 "8/8/3k4/8/8/8/8/R3K3 w - - 0 1"])      # KRvK
def test_won_ending_is_converted_to_mate(tables, truth, fen):
    board, nodes = _play(truth, fen, tables, plies=120)
    assert board.is_checkmate() and board.turn == chess.BLACK, board.fen()
    # Without the tables, ten times the nodes a move do not mate in as many plies.
    plain, plain_nodes = _play(truth, fen, None, len(board.move_stack), nodes_a_move=10 * NODES)
    assert not plain.is_checkmate() and nodes < plain_nodes, (plain.fen(), nodes, plain_nodes)


def test_drawn_krvkr_is_held(tables, truth):
    fen = "8/8/3k4/8/2r5/8/8/R3K3 w - - 0 1"  # KRvKR, a draw
    board = chess.Board(fen)
    assert truth.probe_wdl(board) == 0
    search = Search(RandomNetwork(), from_options({}), tablebase=tables)
    for _ in range(20):
        search.set_position(board)
        board.push(search.run(Limit(nodes=NODES)).bestmove)
        assert truth.probe_wdl(board) == 0, f"the draw was lost: {board.fen()}"
        if board.is_game_over():
            break
        board.push(_defend(truth, board))
        if board.is_game_over():
            break
    assert not board.is_checkmate()
    search.close()


FLAT_PRIORS = {"PolicyTemperature": 10.0}
"""Softmax temperature that makes the random network's priors nearly uniform."""


def test_tree_scores_positions_after_captures_and_reports_tbhits(tables):
    """Ten fresh searches with the default threads: each plays the capture into a won table
    position and reports it (a thread that waited for the tree alone to probe its batch's
    leaves once let another end the search before the root's first visit: 0 nodes, no line)."""
    board = chess.Board("7k/8/3r4/8/8/8/7P/1K1R4 w - - 0 1")  # 5 pieces; Rxd6 leaves KRPvK, won
    for attempt in range(10):
        infos = []
        # Near-uniform priors (FLAT_PRIORS): every root move is tried, so the random network's
        # policy cannot hide the capture; its table value must then make it the best move.
        search = Search(RandomNetwork(), from_options(FLAT_PRIORS), tablebase=tables)
        search.set_position(board)
        result = search.run(Limit(nodes=300), on_info=infos.extend)
        search.close()
        assert result.nodes > 0 and infos, f"search {attempt}: {result.nodes} nodes, no line"
        assert result.bestmove == chess.Move.from_uci("d1d6")
        assert infos[-1].tbhits > 0 and infos[-1].mate is None  # a table's win: no mate distance


def test_uci_options_and_errors(tmp_path, tables):
    out = io.StringIO()
    uci = UciEngine(out, {"Backend": "random"})
    uci.handle(f"setoption name SyzygyPath value {tmp_path / 'none'}:{SYZYGY}")
    assert f"SyzygyPath: {tmp_path / 'none'} is not a folder" in out.getvalue()
    uci.handle(f"setoption name SyzygyPath value {tmp_path}:{SYZYGY}")  # an empty folder is fine
    assert "info string Syzygy tablebases:" in out.getvalue() and "up to 4 pieces" in out.getvalue()
    uci.handle(f"setoption name SyzygyPath value {tmp_path}")
    assert f"no Syzygy tables (*.rtbw) in {tmp_path}" in out.getvalue()
    uci.handle(f"setoption name SyzygyPath value {SYZYGY}")
    for name, value in FLAT_PRIORS.items():
        uci.handle(f"setoption name {name} value {value}")
    uci.handle("position fen 7k/8/3r4/8/8/8/7P/1K1R4 w - - 0 1")
    uci.handle("go nodes 300")
    uci.controller.wait(timeout=60)
    lines = out.getvalue().splitlines()
    assert "bestmove d1d6" in lines[-1]
    hits = [int(ln.split(" tbhits ")[1].split()[0]) for ln in lines if ln.startswith("info depth")]
    assert hits and hits[-1] > 0, lines
    uci.handle("quit")


def test_tablebase_error_names_the_folder(tmp_path):
    with pytest.raises(TablebaseError, match="is not a folder"):
        Tablebase(str(tmp_path / "missing"))
    with pytest.raises(TablebaseError, match="no Syzygy tables"):
        Tablebase(str(tmp_path))
