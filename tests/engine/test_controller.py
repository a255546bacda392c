"""The controller's answer to a ``go``, in process: the garbage collector paused from the search
to the bestmove, and a legal answer whatever the search returns (the UCI layer shows a ponder
move only where it is legal after the best move)."""

from __future__ import annotations

import io

import chess
import pytest

import engine.backends  # noqa: F401  (registers the random backend)
from engine.search import Search, SearchResult
from engine.uci import UciEngine


@pytest.fixture
def session():
    uci = UciEngine(io.StringIO(), {"Backend": "random"})
    yield uci
    uci.controller.stop_and_join()


def _answer(session: UciEngine, position: str, go: str = "go nodes 10") -> str:
    session.handle(position)
    session.handle(go)
    session.controller.wait(20)
    return session.out.getvalue().splitlines()[-1]


@pytest.mark.parametrize("best, ponder, answer", [
    ("e2e4", "e7e5", "bestmove e2e4 ponder e7e5"),
    ("e2e4", "e2e4", "bestmove e2e4"),                    # ponder illegal after best: dropped
    ("e2e5", "e7e5", "bestmove a2a3"),                    # best illegal: the first legal move
    (None, None, "bestmove a2a3"),                        # the search found none: likewise
])
def test_the_answer_is_legal_whatever_the_search_returns(session, monkeypatch, best, ponder, answer):
    move = lambda uci: None if uci is None else chess.Move.from_uci(uci)  # noqa: E731  (a table helper)
    monkeypatch.setattr(Search, "run", lambda self, limit, **kw: SearchResult(move(best), move(ponder),
                                                                              0, 0, 0.0))
    first_legal = next(iter(chess.Board().legal_moves)).uci()
    assert answer.replace("a2a3", first_legal) == _answer(session, "position startpos")


def test_chess960_castling_is_written_as_king_takes_rook_in_bestmove_and_ponder(session, monkeypatch):
    fen = "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1"
    castle, reply = chess.Move.from_uci("e1c1"), chess.Move.from_uci("e8g8")
    monkeypatch.setattr(Search, "run", lambda self, limit, **kw: SearchResult(castle, reply, 0, 0, 0.0))
    assert _answer(session, f"position fen {fen}") == "bestmove e1c1 ponder e8g8"
    session.handle("setoption name UCI_Chess960 value true")  # moves are king-takes-rook then
    castle, reply = chess.Move.from_uci("e1a1"), chess.Move.from_uci("e8h8")
    assert _answer(session, f"position fen {fen}") == "bestmove e1a1 ponder e8h8"



def test_a_loaded_network_leaves_the_collectors_generations_until_it_is_dropped(monkeypatch):
    """After a load, what start-up made is frozen (a search's garbage collections skip it); a
    network change unfreezes first, so what the old network left in reference cycles can be
    collected, then freezes again. The controller does it through the start-up's collector
    policy (engine/startup/collector.py), recorded here around the real calls."""
    import gc

    import engine.controller
    from engine.startup import collector

    calls: list[str] = []

    class Recorder:
        def freeze(self, *, collect: bool = False) -> None:
            calls.append("freeze")
            collector.freeze(collect=collect)

        def unfreeze(self) -> None:
            calls.append("unfreeze")
            collector.unfreeze()

    monkeypatch.setattr(engine.controller, "collector", Recorder())
    gc.unfreeze()
    uci = UciEngine(io.StringIO(), {"Backend": "random"})
    try:
        uci.handle("isready")
        assert calls[-1] == "freeze" and gc.get_freeze_count() > 1000
        uci.handle("setoption name BackendOptions value seed=3")
        uci.handle("isready")
        assert calls[-2:] == ["unfreeze", "freeze"], calls
    finally:
        uci.handle("quit")
        gc.unfreeze()
