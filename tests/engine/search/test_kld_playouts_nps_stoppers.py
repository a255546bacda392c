"""lc0's KldGainStopper, PlayoutsStopper and the NodesPerSecondLimit hint to smart pruning
(src/search/classic/stoppers/stoppers.cc, common.cc; search.cc's MaybeTriggerStop), as
engine/search/core/stoppers.py ports them, against lc0's formulas written out here."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.search.core import stoppers as cstop
from engine.search.limit import Limit
from engine.search.params import from_options


def _lc0_kld(prev: list[int], prev_nodes: float, new: list[int], new_nodes: float) -> float:
    """KldGainStopper::ShouldStop's sum, as lc0 writes it (doubles, in edge order)."""
    kldgain = 0.0
    for i in range(len(new)):
        o_p = prev[i] / prev_nodes
        n_p = new[i] / new_nodes
        if prev[i] != 0:
            kldgain += o_p * math.log(o_p / n_p)
    return kldgain


def test_kld_gain_is_lc0s_sum_bit_for_bit():
    rng = np.random.default_rng(7)
    for _ in range(200):
        edges = int(rng.integers(1, 60))
        prev = rng.integers(0, 50, edges).astype(np.uint32)
        new = prev + rng.integers(0, 50, edges).astype(np.uint32)
        prev_nodes, new_nodes = float(prev.sum()), float(new.sum())
        if prev_nodes == 0:
            continue
        ours = cstop.kld_gain(prev, prev_nodes, new, new_nodes)
        assert ours == _lc0_kld(prev.tolist(), prev_nodes, new.tolist(), new_nodes)
    # A share that fell to 0 (impossible in a search: visits only grow) is lc0's inf.
    zero = np.array([0], np.uint32)
    assert cstop.kld_gain(np.array([3], np.uint32), 3.0, zero, 5.0) == math.inf


def test_kld_stopper_looks_every_interval_and_stops_below_the_minimum():
    """The first look (child nodes >= the interval) records; later looks, once the child nodes
    grew by the interval since the last, compare; the minimum is the option's float."""
    visits = {"now": np.array([0, 0], np.uint32)}
    kld = cstop.KldGain(0.001, 10, lambda: visits["now"])
    assert kld.min_gain == float(np.float32(0.001)) != 0.001
    visits["now"] = np.array([6, 4], np.uint32)
    assert not kld.should_stop(10)  # 9 child nodes: no look yet
    assert kld.prev_visits is None
    assert not kld.should_stop(11)  # 10: the first look records
    assert kld.prev_child_nodes == 10.0 and kld.prev_visits.tolist() == [6, 4]
    visits["now"] = np.array([6, 14], np.uint32)  # the distribution moved: a large gain
    assert not kld.should_stop(20)  # 19 < 10 + 10: no look
    assert not kld.should_stop(21)
    gain = _lc0_kld([6, 4], 10.0, [6, 14], 20.0) / 10.0
    assert gain > 0.001 and kld.prev_child_nodes == 20.0
    visits["now"] = np.array([9, 21], np.uint32)  # the same shares: no gain
    assert kld.should_stop(31)
    assert kld.prev_child_nodes == 20.0  # a stop records nothing, as lc0's


def test_kld_stopper_is_made_where_lc0_adds_one():
    edges = lambda: np.zeros(0, np.uint32)  # noqa: E731
    on = from_options({"MinimumKLDGainPerNode": 0.5, "KLDGainAverageInterval": 7})
    made = cstop.kld_stopper(Limit(nodes=100), on, edges)
    assert made is not None and made.interval == 7
    assert cstop.kld_stopper(Limit(nodes=100), from_options({}), edges) is None
    for limit in (Limit(infinite=True), Limit(ponder=True), Limit(mate=2)):
        assert cstop.kld_stopper(limit, on, edges) is None  # lc0: no intrinsic stoppers
    tiny = from_options({"MinimumKLDGainPerNode": 1e-50})  # 0 as lc0's float
    assert cstop.kld_stopper(Limit(nodes=100), tiny, edges) is None


def _root(visits: int, first: int = 0, second: int = 0) -> cstop.RootSummary:
    return cstop.RootSummary(True, visits, 0, first, second, 20, 0, False, -1)


def _progress(playouts: int, elapsed_ms: float = 0.0, first_eval: float | None = None):
    return cstop.Progress(elapsed_ms, playouts, playouts, 1, first_eval)


@pytest.mark.parametrize("as_playouts", [False, True])
def test_go_nodes_counts_visits_or_playouts(as_playouts):
    """A reused tree of 500 visits, 80 playouts made: go nodes 100 is reached (visits) or
    20 playouts away (playouts), and smart pruning's hint is what is left of it."""
    params = from_options({"NodesAsPlayouts": as_playouts, "SmartPruningFactor": 1.0})
    limit = Limit(nodes=100)
    stop, hint, _ = cstop.limit_reached(limit, params, _root(580), _progress(80))
    assert (stop, hint) == ((False, 20.0) if as_playouts else (True, 0.0))
    stop, hint, _ = cstop.limit_reached(limit, params, _root(600), _progress(100))
    assert stop and hint == 0.0


def test_nps_limit_is_smart_prunings_nodes_per_second():
    """lc0's MaybeTriggerStop hints NodesPerSecondLimit as the estimated nps: smart pruning's
    remaining playouts are the remaining time times it, over the factor."""
    limit = Limit(budget_ms=2000.0)
    root, progress = _root(1000, 600, 300), _progress(999, 1000.0, 100.0)
    computed = 1000.0 * (999 + 300) / 900.0 + 1  # without the hint: the search's own
    for nps_limit, nps in ((0.0, computed), (123.4, float(np.float32(123.4)))):
        params = from_options({"NodesPerSecondLimit": nps_limit, "SmartPruningFactor": 2.0})
        stop, remaining, _ = cstop.limit_reached(limit, params, root, progress)
        # 1 s left of the budget, at nps, over the factor
        assert remaining == pytest.approx(1.0 * nps / 2.0, rel=1e-12), (nps_limit, remaining)
        assert stop == (remaining < 300)
