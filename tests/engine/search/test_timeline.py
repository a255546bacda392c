"""The search's timeline (engine/search/timeline.py, ``bin/perf/bench --trace``): each batch's
phases in order, and one search thread gathering its batch while the device evaluates
another's (Threads=2), which is what the timeline exists to show."""

from __future__ import annotations

import random

import chess

from engine.backends.random import RandomNetwork
from engine.search import Limit, Search, from_options
from engine.search.timeline import Timeline, busy_seconds, overlap_seconds


def _covered(spans, step=0.001):
    """Brute force: the grid points (ms) that some span covers."""
    return {t for a, b in spans for t in range(round(a / step), round(b / step))}


def test_busy_and_overlap_match_a_brute_force_count():
    rng = random.Random(5)
    for _ in range(50):
        spans = [
            [(a, a + rng.randint(1, 20)) for a in (rng.randint(0, 100) for _ in range(6))]
            for _ in range(2)
        ]
        a = [(x / 1000, y / 1000) for x, y in spans[0]]
        b = [(x / 1000, y / 1000) for x, y in spans[1]]
        assert round(busy_seconds(a) * 1000) == len(_covered(a))
        both = _covered(a) & _covered(b)
        assert round(overlap_seconds(a, b) * 1000) == len(both)


def test_each_batch_is_gathered_evaluated_and_backed_up_in_order_and_they_overlap():
    net = RandomNetwork(delay_ms=3.0)
    search = Search(net, from_options({"SmartPruningFactor": 0.0, "Threads": 2}))
    search.set_position(chess.Board())
    search.timeline = Timeline()
    search.run(Limit(nodes=3000))
    batches = search.timeline.batches()
    assert [b.batch for b in batches] == list(range(1, len(batches) + 1))
    # The run's end takes a batch still on the network out of flight at once (the other thread
    # may have gathered past the limit: lc0's go nodes ends with its iterations): it has its
    # gather alone. The rest went through every phase.
    left = [b for b in batches if b.backup is None]
    assert len(left) <= 1 and all(b.gather is not None for b in left), left
    batches = [b for b in batches if b.backup is not None]
    for b in batches:
        assert b.gather is not None and b.device is not None and b.backup is not None
        assert b.gather[0] <= b.gather[1] <= b.device[0] <= b.device[1] <= b.backup[0]
        assert b.backup[0] <= b.backup[1]
        assert 1 <= b.rows <= 256
    # One simulated device: each call's span holds its own 3 ms turn of it (and its wait for
    # the turn), and the turns never overlap, so the spans cover at least 3 ms a batch.
    assert busy_seconds([b.device for b in batches]) >= 0.003 * len(batches)
    # Some gathering happened while a batch was on the device (two batches in flight).
    gathers = [b.gather for b in batches]
    devices = [b.device for b in batches]
    assert overlap_seconds(gathers, devices) > 0
