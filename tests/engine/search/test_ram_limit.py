"""RamLimitMb (issue 42): the search stops when what its tree and NN cache hold reaches the
limit, counted in bytes and not estimated from the visits (a visit costs 150 to 500 bytes by
the position's legal moves and the cache's fill), and the process's memory stays within the
limit plus its base."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import chess
import pytest

from conftest import REPO_ROOT
from engine.backends.random import RandomNetwork
from engine.board.moves import MAX_MOVES
from engine.search import Limit, Search, from_options
from engine.search.core import cache as ccache
from engine.search.core import tree as ctree
from engine.search.pages import WINDOW

POSITIONS = {
    "start": chess.STARTING_FEN,
    "middlegame": "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N2N2/PP2BPPP/R2QKB1R w KQ - 0 9",
    "queens": "r3k2r/1bq1bppp/p2ppn2/1p4B1/3NP3/2N2Q2/PPP2PPP/2KR1B1R w kq - 0 12",
    "endgame": "8/5pk1/6p1/3P4/2p5/2P3P1/5PK1/8 w - - 0 40",
}


@pytest.mark.parametrize("name", POSITIONS)
def test_the_search_stops_when_tree_and_cache_hold_the_limit(name):
    limit_mb = 2
    # A cache of 20,000 entries: its table (640 KB, counted whole once used, as lc0 counts
    # its cache) leaves the tree most of the 2 MB; the default's 6.4 MB would pass it alone.
    params = from_options(
        {"RamLimitMb": limit_mb, "SmartPruningFactor": 0.0, "NNCacheSize": 20_000}
    )
    network = RandomNetwork()
    search = Search(network, params)
    search.set_position(chess.Board(POSITIONS[name]))
    try:
        result = search.run(Limit(nodes=10**6))
        tree, cache = search.state.tree, search.cache.arrays
        held = ctree.memory_bytes(tree) + ccache.memory_in_use(cache)
        # Counted independently of the search's own sum: every node and edge made, every cache
        # entry and move slot written.
        nodes, edges = int(tree.count[ctree.NODES]), int(tree.count[ctree.EDGES])
        made = tree.nodes[:nodes]
        kids = int(made["nedges"][made["kids"] >= 0].sum())  # a block a node with a child
        assert kids == int(tree.count[ctree.KIDS])
        assert ctree.memory_bytes(tree) == (
            nodes * tree.nodes.itemsize + edges * tree.edges.itemsize + kids * tree.kids.itemsize
        )
        assert result.nodes < 10**6, "the limit, not go nodes, ended the search"
        # At most each thread's batch in flight when the limit was reached, and the out-of-order
        # backups of a gather under way (lc0's MaxOutOfOrderEvalsFactor x the batch: cache hits
        # and terminals expanded at once), are added after it: each leaf a node, its edges, its
        # parent's block of kids and a cache entry with a slot per move.
        per_move = tree.edges.itemsize + tree.kids.itemsize + 4
        per_leaf = tree.nodes.itemsize + MAX_MOVES * per_move + 32
        attributes = network.attributes()
        batch = params.batch_size(attributes.max_batch, attributes.preferred_batch)
        out_of_order = max(1, int(params.max_out_of_order_evals_factor * batch))
        in_flight = params.threads * (batch + out_of_order)
        assert limit_mb * 1e6 <= held <= limit_mb * 1e6 + in_flight * per_leaf, held
        assert held / result.nodes > 100  # what the search counts is the tree itself
    finally:
        search.close()


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc")
def test_go_infinite_under_ram_limit_keeps_rss_within_the_limit_plus_the_base():
    limit_mb = 60
    engine = subprocess.Popen(
        [sys.executable, "-m", "engine.uci", "--backend=random"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
    )  # fmt: skip
    assert engine.stdin is not None and engine.stdout is not None

    def send(line: str) -> None:
        engine.stdin.write(line + "\n")
        engine.stdin.flush()

    def until(prefix: str, timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = engine.stdout.readline()
            assert line, "the engine exited"
            if line.startswith(prefix) or prefix in line:
                return line
        raise AssertionError(f"no {prefix!r} in {timeout} s")

    try:
        send(f"setoption name RamLimitMb value {limit_mb}")
        send("position fen " + POSITIONS["middlegame"])
        send("isready")
        until("readyok")
        base = _rss_kb(engine.pid)
        send("go infinite")
        said = until("RamLimitMb:")
        grown_mb = (_rss_kb(engine.pid) - base) / 1000
        send("isready")
        until("readyok", timeout=5)  # still answering
        send("stop")
        until("bestmove")
        assert "search stopped at" in said, said
        # The tree and cache's pages plus what a search allocates beside them (the batches'
        # buffers, a few MB) and the pages made ready past the used part of the tree's three
        # arrays and the cache's ring (engine/search/pages.py: a window each, once a search
        # passes FIRST_USE), and not far below: the limit is what stopped the tree.
        ahead_mb = 4 * WINDOW / 1e6
        assert limit_mb / 2 < grown_mb <= limit_mb + ahead_mb + 10, (grown_mb, said)
    finally:
        send("quit")
        engine.wait(timeout=10)
