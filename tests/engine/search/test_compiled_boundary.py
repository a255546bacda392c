"""The search calls its compiled entry points through :func:`engine.search.core.calls.direct`,
which keeps the dispatcher's first signature and skips numba's typing from then on: a call with
other argument types would be misread, not recompiled. These tests run searches through the
dispatchers themselves (numba types every call, and a call with other types compiles a second
signature) and check that each still has exactly one (issue 40: a guarded boundary).

The check holds whatever else ran in this test process: a second signature from any caller,
a test's included, fails it."""

from __future__ import annotations

import chess
import pytest

from engine.backends.random import RandomNetwork
from engine.encoding import rows
from engine.search import Limit, Search, from_options
from engine.search import evaluation as evaluation_module
from engine.search import worker as search_module
from engine.search.core import calls, minibatch
from engine.search.warmup import _Instant, compile_the_rest

NO_CLOCK = {"SmartPruningFactor": 0.0}


def _wrapped_in_search_module(module=search_module) -> dict[str, object]:
    """The search module's names bound to a :func:`direct` call, with their dispatchers."""
    dispatchers = {id(call): dispatcher for call, dispatcher in calls.WRAPPED}
    return {
        name: dispatchers[id(value)]
        for name, value in vars(module).items()
        if id(value) in dispatchers
    }


def test_the_search_modules_call_their_compiled_entry_points_directly():
    wrapped = _wrapped_in_search_module() | _wrapped_in_search_module(evaluation_module)
    assert wrapped == {
        "gather_minibatch": minibatch.gather,
        "store_results": minibatch.store_results,
        "expand_and_backup": minibatch.expand_and_backup,
        "release_collisions": minibatch.release_collisions,
        "expand_planes": rows.expand_batch,
        "sort_policies": minibatch.sort,
        "finite_values": minibatch.finite_values,
        "most_moves": minibatch.most_moves,
    }


def _searches(network, **options) -> None:
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    search = Search(network, from_options(NO_CLOCK | options))
    try:
        search.set_position(board)
        search.run(Limit(nodes=300), on_info=lambda infos: None)
        result = search.run(Limit(nodes=320, searchmoves=(chess.Move.from_uci("d2d4"),)))
        board.push(result.bestmove)
        search.set_position(board)  # tree reuse
        search.run(Limit(nodes=60))
    finally:
        search.close()


@pytest.mark.parametrize(
    ("make_network", "options"),
    [
        (RandomNetwork, {}),
        (RandomNetwork, {"Threads": 2, "MinibatchSize": 16}),
        (_Instant, {"OutOfOrderEval": False}),
    ],
    ids=["random", "random-2-threads", "warm-up-network"],
)
def test_every_direct_entry_point_keeps_exactly_one_signature(monkeypatch, make_network, options):
    # Made in the test, not at collection: the random backend compiles its functions when made,
    # which every test process would otherwise do before the suite's warm-up had cached them.
    network = make_network()
    for module in (search_module, evaluation_module):
        wrapped = _wrapped_in_search_module(module)
        assert wrapped
        for name, dispatcher in wrapped.items():
            monkeypatch.setattr(module, name, dispatcher)  # numba types every call
    compile_the_rest()  # the warm-up compiles the types the search passes
    _searches(network, **options)
    # A network taking packed planes never has them expanded: expand_planes may be unused.
    packed = network.attributes().packed_input
    for call, dispatcher in calls.WRAPPED:
        unused_ok = packed and dispatcher is rows.expand_batch
        expected = (0, 1) if unused_ok else (1,)
        assert len(dispatcher.signatures) in expected, (call.__name__, dispatcher.signatures)


NRT_BALANCE = """
import gc, json, sys, chess
from numba.core.runtime import rtsys
from engine.backends.random import RandomNetwork
from engine.search import Limit, Search, from_options
net = RandomNetwork()
def searches():
    search = Search(net, from_options({"SmartPruningFactor": 0.0, "MinibatchSize": 32,
                                       "Threads": 2}))
    board = chess.Board("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")
    search.set_position(board)
    board.push(search.run(Limit(nodes=3000)).bestmove)
    search.set_position(board)  # tree reuse
    search.run(Limit(nodes=2000))
    search.close()
searches(); gc.collect()  # anything made once a process
before = rtsys.get_allocation_stats()
searches(); gc.collect()
after = rtsys.get_allocation_stats()
# The instrument sees an allocation still held: a compiled array kept alive.
import numpy as np
from numba import njit
kept = njit(lambda n: np.empty(n))(3)
held = rtsys.get_allocation_stats()
print(json.dumps([after.alloc - before.alloc, after.free - before.free,
                  after.mi_alloc - before.mi_alloc, after.mi_free - before.mi_free,
                  (held.alloc - held.free) - (after.alloc - after.free)]))
"""


def test_a_search_frees_every_compiled_allocation():
    """Selection runs without numba's reference counts (core/gather.py): what the compiled
    functions allocate over two searches (tree reuse included, two search threads) is all freed
    once they end."""
    import json
    import os
    import subprocess
    import sys

    from conftest import REPO_ROOT

    env = dict(os.environ, NUMBA_NRT_STATS="1", PYTHONPATH=str(REPO_ROOT))
    out = subprocess.run([sys.executable, "-c", NRT_BALANCE], env=env,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    alloc, free, mi_alloc, mi_free, held = json.loads(out.stdout.strip().splitlines()[-1])
    assert alloc > 0 and mi_alloc > 0  # the searches do allocate: the balance means something
    assert held == 1  # and one array left alive shows
    assert (alloc, mi_alloc) == (free, mi_free)
