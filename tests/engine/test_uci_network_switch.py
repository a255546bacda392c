"""A network change starts clean: setting WeightsFile or BackendOptions drops the search tree and
the NN cache, so the next search uses only the new network's outputs.

Truth: the new network evaluated directly on the position (its highest-policy legal move is what
``go nodes 1`` must play), with both networks shipped in nets/."""

from __future__ import annotations

import functools
import io

import chess
import numpy as np
import pytest

from conftest import SMALL_BUCKETS
from engine.encoding import encode_batch, policy_indices
from engine.loading import NETS_DIR
from engine.uci import UciEngine, register_backends

DEFAULT_NET = NETS_DIR / "xlazero-sf6x64.onnx"
OTHER_NET = NETS_DIR / "untrained.onnx"
MOVES = "e2e4 e7e5 g1f3"


def _board() -> chess.Board:
    board = chess.Board()
    for m in MOVES.split():
        board.push_uci(m)
    return board


@functools.lru_cache(maxsize=None)
def _top_policy_move(path) -> str:
    """The network's highest-policy legal move after MOVES."""
    from backend_xla import load_network

    board = _board()
    net = load_network(str(path), SMALL_BUCKETS)
    out = net.evaluate(encode_batch([board], net.input_format))
    indices = policy_indices(board, net.input_format)
    return max(indices, key=lambda m: out.policy[0, indices[m]]).uci()


def _bestmove(uci: UciEngine, out: io.StringIO, go: str) -> str:
    start = out.tell()
    uci.handle(go)
    uci.controller.wait(timeout=120)
    lines = out.getvalue()[start:].splitlines()
    return next(line.split()[1] for line in lines if line.startswith("bestmove"))


@pytest.mark.parametrize("switch", ["WeightsFile", "BackendOptions"])
def test_network_change_drops_tree_and_cache(switch):
    register_backends()  # as the engine's entry point does
    first = OTHER_NET if switch == "WeightsFile" else DEFAULT_NET
    out = io.StringIO()
    uci = UciEngine(out, {"WeightsFile": str(first), "BackendOptions": SMALL_BUCKETS})
    uci.handle(f"position startpos moves {MOVES}")
    # The tree and the cache now hold the first network's view.
    assert _bestmove(uci, out, "go nodes 50") != "0000", out.getvalue()[-2000:]
    assert uci.controller.search is not None and len(uci.controller.cache) > 0
    if switch == "WeightsFile":
        uci.handle(f"setoption name WeightsFile value {DEFAULT_NET}")
    else:
        # The same file with other options is another network as far as the engine knows; the
        # tree must go even though the outputs agree, so check the drop itself here.
        uci.handle("setoption name BackendOptions value batch_buckets=16")
        assert uci.controller.search is None and len(uci.controller.cache) == 0
        uci.handle("quit")  # a search now would only compile the same outputs again (6 s)
        return
    default_top = _top_policy_move(DEFAULT_NET)
    assert _top_policy_move(OTHER_NET) != default_top, "the test needs networks that disagree here"
    assert _bestmove(uci, out, "go nodes 1") == default_top
    uci.handle("quit")
