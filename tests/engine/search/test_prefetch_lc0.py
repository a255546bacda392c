"""The prefetch of a backend that computes a batch's rows only (lc0's PrefetchIntoCache with its
MaxPrefetch budget) against a plain reference of lc0's (reference_prefetch.py): at every
minibatch of a search, the same positions in the same order."""

from __future__ import annotations

import dataclasses

import chess
import pytest

import engine.search.threads as threads
from engine.backends.random import RandomNetwork
from engine.board import to_board
from engine.search import Limit, Search, from_options
from engine.search.core import gather as cgather

from reference_mcts import cache_key
from reference_prefetch import prefetch as reference_prefetch

POSITIONS = [
    chess.STARTING_FEN,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "2rb3r/5k1B/3np3/p1p1P1p1/2P5/B2P3K/6QP/R2b3R w - - 2 34",
]


class RowsOnly(RandomNetwork):
    """The random network as a backend whose batch costs its rows (no padding): lc0's case."""

    def attributes(self):  # noqa: ANN201
        return dataclasses.replace(super().attributes(), padded_size=None)


def _key(row) -> tuple:
    """A batch row's cache key (a row has no history: not a repetition; these searches, one
    thread and the random network, are the same every run, and prefetch no repeated position)."""
    return cache_key(to_board(row))


@pytest.mark.parametrize("fen", POSITIONS)
def test_prefetch_sends_what_lc0s_would(fen, monkeypatch):
    params = from_options({"Threads": 1, "MinibatchSize": 7, "SmartPruningFactor": 0.0})
    search = Search(RowsOnly(), params)
    root = chess.Board(fen)
    cached: set = set()
    compared: list[int] = []
    mismatches: list[str] = []
    run_gather = threads.run_gather

    def gather_and_compare(call) -> None:
        shared, batch = call[0], call[1]
        run_gather(call)
        rows = int(batch.meta[cgather.REQUESTS])
        own = rows - int(batch.meta[cgather.PREFETCHED])
        sent = [_key(batch.rows[r]) for r in range(own, rows)]
        expected = []
        if 0 < own < params.max_prefetch:
            # lc0 prefetches with the minibatch's collisions in flight (on the paths above
            # their nodes): the search threads' gathers leave them there until a backup.
            boards = reference_prefetch(
                shared.tree, params, root.copy(), params.max_prefetch - own, cached
            )
            expected = [cache_key(b) for b in boards]
        compared.append(len(expected))
        if sent != expected:  # said after the search: an assertion here would only end it
            nodes = int(shared.tree.nodes["n"][0])
            mismatches.append(f"minibatch {len(compared)} at {nodes} nodes: {sent} != {expected}")
        cached.update(_key(batch.rows[r]) for r in range(rows))

    monkeypatch.setattr(threads, "run_gather", gather_and_compare)
    search.set_position(root)
    search.run(Limit(nodes=600))
    search.close()
    assert not mismatches, mismatches[0]
    assert sum(compared) > 100  # the prefetch had work to do
