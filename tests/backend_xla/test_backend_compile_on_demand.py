"""Compiled batch sizes (issue 41): at default options a network compiles at load the size the
search's minibatch needs and nothing after it, so a warm start leaves no compile running after
``readyok``; a batch larger than every compiled size has the size that holds it compiled in the
background, and meanwhile runs split over the compiled ones, with the same outputs.

States are checked, not times. The shipped 6×64 network with XLA's own convolution keeps each
compile well under a second; ``cache_dir=none`` keeps the user's cache out of it."""

from __future__ import annotations

import threading
import time

import chess
import numpy as np
import pytest

import backend_xla
from backend_xla.buckets import COMPILE_THREAD_NAME
from backend_xla.buckets import CPU_MINIBATCH
from conftest import REPO_ROOT
from engine.encoding import encode_batch
from engine.search import Limit, Search, from_options

NET = REPO_ROOT / "nets" / "xlazero-sf6x64.onnx"
DEFAULTS = "cache_dir=none,conv_method=lax"
"""The default options but for the cache and the convolution (faster to compile)."""
TOL = 2e-5  # the same rows padded to another batch size: rounding only
WAIT_S = 120


def _compile_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == COMPILE_THREAD_NAME and t.is_alive()]


@pytest.fixture(scope="module")
def net():
    network = backend_xla.load_network(NET, DEFAULTS)
    yield network
    network.close()


def _planes(n: int) -> np.ndarray:
    """Planes of ``n`` positions of a game from the start (each with its history)."""
    board, boards = chess.Board(), []
    for i in range(n):
        boards.append(board.copy())
        moves = list(board.legal_moves)
        board.push(moves[(7 * i) % len(moves)])
    return encode_batch(boards).astype(np.float32)


def test_default_search_compiles_only_its_minibatch(net):
    assert net.preferred_batch == CPU_MINIBATCH and len(net.sizes) > 1
    assert net.ready_sizes == [CPU_MINIBATCH] and net.load_size == CPU_MINIBATCH
    assert not net.compiling and not _compile_threads()
    search = Search(net, from_options({}))
    search.set_position(chess.Board())
    result = search.run(Limit(nodes=300))
    assert result.playouts >= 100  # (smart pruning may stop it before 300)
    # Every batch of the search fitted the minibatch's size: nothing else compiled or compiling.
    assert net.ready_sizes == [CPU_MINIBATCH]
    assert not net.compiling and not _compile_threads()
    assert "a larger one when a batch first needs it" in net.describe()[0]


def test_larger_batch_compiles_its_size_on_demand_with_the_same_outputs(net):
    planes = _planes(20)
    assert net.ready_sizes == [CPU_MINIBATCH]
    split = net.evaluate(planes)  # 7 + 7 + 6: the 32 is compiling meanwhile
    deadline = time.monotonic() + WAIT_S
    while net.compiling and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not net.compiling and not _compile_threads()
    assert net.ready_sizes == [CPU_MINIBATCH, 32]
    whole = net.evaluate(planes)  # padded to 32
    direct = backend_xla.load_network(NET, DEFAULTS + ",batch_buckets=32,background_compile=0")
    reference = direct.evaluate(planes)
    assert direct.ready_sizes == [32] and not _compile_threads()
    for out in (split, whole):
        assert len(out) == 20
        for field in ("policy", "q", "d", "m"):
            np.testing.assert_allclose(
                getattr(out, field), getattr(reference, field), rtol=TOL, atol=TOL
            )
    # A batch the ready sizes hold compiles nothing more.
    net.evaluate(planes[:9])
    assert not net.compiling and net.ready_sizes == [CPU_MINIBATCH, 32]


def _wait_ready(network, size: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while size not in network.ready_sizes and time.monotonic() < deadline:
        time.sleep(0.05)


def test_isready_prepares_a_minibatch_set_above_the_backends_own():
    """MinibatchSize 32 set before isready: its size compiles from isready on, in the
    background, not at the first batch of 32; at the backend's own minibatch nothing does."""
    import io

    from engine.uci import UciEngine

    uci = UciEngine(io.StringIO(), {"WeightsFile": str(NET), "BackendOptions": DEFAULTS})
    try:
        uci.handle("isready")
        network = uci.controller.network
        assert network is not None and network.ready_sizes == [CPU_MINIBATCH]
        assert not network.compiling
        uci.handle("setoption name MinibatchSize value 32")
        uci.handle("isready")
        _wait_ready(network, 32)
        assert 32 in network.ready_sizes
    finally:
        uci.controller.stop_and_join()
        if uci.controller.network is not None:
            uci.controller.network.close()
