"""Compiling (or loading from numba's cache) every compiled function of the search before the
first ``go``: a small search on an instant network that takes every path once (selection,
leaves, prefetch, expansion, backup, root filter, tree reuse, searchmoves, the reports).

A fresh install compiles them (tens of seconds on a small CPU); later starts load them from
numba's cache beside the sources, or from its user-wide cache when the install is read-only.
"""

from __future__ import annotations

import threading

import chess
import numpy as np

from engine.backend import POLICY_SIZE, BackendAttributes, NetworkOutput
from engine.search.limit import Limit
from engine.search.params import from_options

_done = threading.Event()
_lock = threading.Lock()


class _Instant:
    """A network that answers at once: flat policy, a fixed value."""

    input_format = 1
    has_wdl = True
    has_mlh = True

    def attributes(self) -> BackendAttributes:
        return BackendAttributes("warm-up", (), 64, 7, lambda n: -(-n // 7) * 7, 1)

    def evaluate(self, planes: np.ndarray) -> NetworkOutput:
        n = len(planes)
        return NetworkOutput(
            policy=np.zeros((n, POLICY_SIZE), np.float32),
            q=np.full(n, 0.1, np.float32),
            d=np.full(n, 0.3, np.float32),
            m=np.full(n, 30.0, np.float32),
        )


def warm_up() -> None:
    """Make every compiled function of the search ready (once a process; thread-safe)."""
    if _done.is_set():
        return
    with _lock:
        if _done.is_set():
            return
        from engine.search.search import Search  # the compiled modules load here

        board = chess.Board()
        for uci in ("g1f3", "g8f6", "f3g1", "f6g8"):
            board.push_uci(uci)
        search = Search(_Instant(), from_options({"SmartPruningFactor": 0.0}))
        try:
            search.set_position(board)
            search.run(Limit(nodes=200), on_info=lambda infos: None)
            result = search.run(Limit(nodes=220, searchmoves=(chess.Move.from_uci("e2e4"),)))
            assert result.bestmove is not None
            board.push(result.bestmove)
            search.set_position(board)  # tree reuse
            search.run(Limit(nodes=50))
        finally:
            search.close()
        _done.set()
