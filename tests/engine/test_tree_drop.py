"""Dropping a big tree costs no visible time (the compiled tree is a few arrays, freed at once;
the Python tree's millions of objects took seconds to free). The figure after a 1,000,000-node
analysis is in docs/engine.md (bin/perf/ucilatency); here a smaller tree, with a generous bound."""

from __future__ import annotations

import time

from test_uci import RawEngine

NODES = 30_000
BOUND_S = 0.5


def test_new_game_and_quit_answer_at_once_after_a_big_search():
    engine = RawEngine("--backend=random")
    try:
        engine.send("setoption name SmartPruningFactor value 0")  # search all the nodes
        engine.send("position startpos")
        engine.send(f"go nodes {NODES}")
        line, before = engine.expect("bestmove", timeout=120)
        nodes = [int(ln.split(" nodes ")[1].split()[0]) for ln in before if " nodes " in ln]
        assert nodes and nodes[-1] >= NODES * 0.9, before[-3:]
        t = time.monotonic()
        engine.send("ucinewgame")
        engine.send("position startpos moves e2e4")
        engine.send("isready")
        engine.expect("readyok", timeout=10)
        assert time.monotonic() - t < BOUND_S
        t = time.monotonic()
        assert engine.close() == 0
        assert time.monotonic() - t < BOUND_S + 0.5  # the process exit itself
    finally:
        if engine.proc.poll() is None:
            engine.proc.kill()
