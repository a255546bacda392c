"""A network call that fails mid-search (a fault-injecting backend): the search stops with a
legal best move from the tree it has, says what happened, leaves no visit in flight, and the
next search works once the network does."""

from __future__ import annotations

import threading

import chess

from engine.backends.random import RandomNetwork
from engine.search import Limit, Search, from_options
from engine.search import threads as search_module


class FailingNetwork(RandomNetwork):
    """The random network, whose calls number ``fail_from`` and later raise (until reset)."""

    def __init__(self, fail_from: int) -> None:
        super().__init__()
        self.fail_from = fail_from
        self.calls = 0

    def evaluate(self, planes):
        self.calls += 1
        if self.calls >= self.fail_from:
            raise RuntimeError("device lost")
        return super().evaluate(planes)


def test_a_failing_network_call_stops_the_search_with_a_legal_move_and_a_message():
    net = FailingNetwork(fail_from=40)
    search = Search(net, from_options({"SmartPruningFactor": 0.0}))
    board = chess.Board()
    search.set_position(board)
    lines: list[str] = []
    result = search.run(Limit(nodes=5000), on_verbose=lines.extend)
    assert result.bestmove in board.legal_moves
    assert 0 < result.nodes < 5000
    assert any("network evaluation failed: RuntimeError: device lost" in x for x in lines), lines
    tree = search.state.tree
    count = int(tree.count[0])
    assert (tree.nodes["nif"][:count] == 0).all()  # every abandoned visit out of flight
    root = search.root
    assert root.n == 1 + sum(root.cn)

    net.fail_from = 10**9  # the network is back: the next search goes on from the same tree
    lines.clear()
    again = search.run(Limit(nodes=3000), on_verbose=lines.extend)
    assert again.bestmove in board.legal_moves and again.nodes >= 3000
    assert not any("failed" in x for x in lines), lines


class HangingNetwork(RandomNetwork):
    """The random network, whose call number ``hang_at`` blocks until released."""

    def __init__(self, hang_at: int) -> None:
        super().__init__()
        self.hang_at = hang_at
        self.calls = 0
        self.release = threading.Event()

    def evaluate(self, planes):
        self.calls += 1
        if self.calls == self.hang_at:
            self.hung_planes = planes.base  # the batch's planes buffer this call reads
            self.release.wait(30)
        return super().evaluate(planes)


def test_a_hanging_network_call_stops_a_node_limited_search(monkeypatch):
    """Without a time limit nothing else would end the wait: after NETWORK_STALL_S the search
    stops with a legal move and says so; the next search runs on a new worker."""
    # Compiled first: on a cold numba cache, under load, a first call's compilation took longer
    # than the stall limit below and ended the search before any playout.
    warm = Search(HangingNetwork(hang_at=0), from_options({"SmartPruningFactor": 0.0}))
    warm.set_position(chess.Board())
    warm.run(Limit(nodes=300))
    warm.close()
    monkeypatch.setattr(search_module, "NETWORK_STALL_S", 0.3)
    net = HangingNetwork(hang_at=30)
    # One search thread: a second one would reach the limit past the hung batch (a gather is
    # not cut at ``go nodes``, as lc0's), and end the search without the wait.
    search = Search(net, from_options({"SmartPruningFactor": 0.0, "Threads": 1}))
    board = chess.Board()
    search.set_position(board)
    lines: list[str] = []
    try:
        result = search.run(Limit(nodes=5000), on_verbose=lines.extend)
        assert result.bestmove in board.legal_moves and 0 < result.nodes < 5000
        assert any("TimeoutError: no answer from the network in" in x for x in lines), lines
        tree = search.state.tree
        assert (tree.nodes["nif"][: int(tree.count[0])] == 0).all()
        lines.clear()
        # The hung call's worker still holds its batch, and writes into it once it returns
        # (here during the next search): the next search gathers into other buffers.
        assert net.hung_planes is not None
        threading.Timer(0.05, net.release.set).start()
        again = search.run(Limit(nodes=3000), on_verbose=lines.extend)
        assert not any(b.planes is net.hung_planes for b in search.resources.batches)
        assert again.nodes >= 3000 and not lines, lines
        assert again.bestmove in board.legal_moves
        _assert_moves_legal(search)
    finally:
        net.release.set()
        search.close()


class HangingDevice(HangingNetwork):
    """The hanging network as a backend that takes one call at a time (as XLA's on a CPU): the
    search's device thread runs its calls."""

    concurrency = 1


def test_after_a_hung_call_the_next_search_does_not_queue_behind_it(monkeypatch):
    """A backend of one call at a time whose call hangs: the run that gave it up leaves its
    device thread behind, and the next search's calls go to a new one while it still hangs."""
    monkeypatch.setattr(search_module, "NETWORK_STALL_S", 0.3)
    net = HangingDevice(hang_at=30)
    search = Search(net, from_options({"SmartPruningFactor": 0.0}))
    search.set_position(chess.Board())
    lines: list[str] = []
    try:
        search.run(Limit(nodes=5000), on_verbose=lines.extend)
        assert any("TimeoutError: no answer from the network in" in x for x in lines), lines
        lines.clear()
        again = search.run(Limit(nodes=3000), on_verbose=lines.extend)  # still hung meanwhile
        assert again.nodes >= 3000 and not lines, lines
    finally:
        net.release.set()
        search.close()


def _assert_moves_legal(search: Search) -> None:
    """Every expanded node's edges are its position's legal moves (python-chess), through
    the first two plies: a batch written by a stale worker would give some node another
    position's moves."""
    root = search.root
    board = chess.Board()
    assert sorted(m.uci() for m in root.moves) == sorted(m.uci() for m in board.legal_moves)
    for move, child in zip(root.moves, root.children):
        if child is None or not child.expanded:
            continue
        board.push(move)
        assert sorted(m.uci() for m in child.moves) == sorted(m.uci() for m in board.legal_moves)
        board.pop()


def test_the_tree_limit_is_said_when_reached_not_at_stop():
    """Under go infinite the search goes on answering at RamLimitMb's cap: a GUI must learn why
    the node count froze then, not after its stop."""
    search = Search(RandomNetwork(), from_options({"SmartPruningFactor": 0.0, "RamLimitMb": 1}))
    search.set_position(chess.Board())
    said = threading.Event()
    lines: list[str] = []

    def on_verbose(new: list[str]) -> None:
        lines.extend(new)
        if any("RamLimitMb: search stopped at" in x for x in new):
            said.set()

    done = threading.Event()
    thread = threading.Thread(
        target=lambda: (search.run(Limit(infinite=True), on_verbose=on_verbose), done.set())
    )
    thread.start()
    try:
        assert said.wait(30), lines
        assert not done.is_set()  # said while the search still runs
    finally:
        search.stop()
        thread.join(10)
    assert done.is_set()
    assert sum("RamLimitMb" in x for x in lines) == 1, lines
