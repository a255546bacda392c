"""lc0's SmoothStopper's use of the piggy bank past a move's deadline (smooth.cc), read from the
root while the search runs: the search asks for more time when its most visited move is not the
best by Q + M (lc0's ``kNeedMoreTime``, classic/search.cc PopulateCommonIterationStats), and the
visit trend says the best move is being overtaken (lc0's VisitsTrendWatcher). A move that ends on
its deadline while either holds searches on, up to the deadline plus the bank's share, and stops
as soon as neither holds (:class:`SmoothWatch`, beside the search the controller runs).
"""

from __future__ import annotations

import threading
import time

import numpy as np

from engine.search import Search
from engine.search.core.params import pack
from engine.search.core.view import NodeView, puct_terms
from engine.timemgr_smooth import SmoothParams

POLL_S = 0.005
"""How often the watch reads the root (lc0 asks its stoppers after every minibatch)."""


def need_more_time(n: list[int], q_plus_m: list[float]) -> bool:
    """lc0's kNeedMoreTime: the most visited edge (the first of the most visited) is not the
    one of the highest Q + M (the last of the highest)."""
    max_n, max_qm, flag = 0, -1000.0, True
    for ni, qm in zip(n, q_plus_m, strict=True):
        if max_n < ni:
            max_n, flag = ni, False
        if max_qm <= qm:
            flag, max_qm = max_n == ni, qm
    return not flag


def should_stop(
    elapsed_ms: float, deadline_ms: float, force_ms: float, wanted: bool
) -> tuple[bool, bool]:
    """lc0's SmoothStopper::ShouldStop under a budget of the deadline plus the bank: (stop now,
    the bank is being used). The bank is used past the deadline while it is ``wanted`` (the
    search asks for more time, or the trend) or forced (the first ``force_ms``)."""
    use = wanted or elapsed_ms <= force_ms
    if elapsed_ms < deadline_ms:
        return False, False
    return not use, use


class TrendWatcher:
    """lc0's VisitsTrendWatcher: the root's visits at the last few readings, and whether a
    move other than the most visited would pass it by ``by_ms`` at the visit rates seen (the
    best's scaled by ``bestmove-optimism``, the others' by ``overtaker-optimism``)."""

    def __init__(self, p: SmoothParams) -> None:
        self.period, self.best_opt, self.other_opt = (
            p.trend_nps_update_period_ms,
            p.bestmove_optimism,
            p.overtaker_optimism,
        )
        self.prev: tuple[float, list[int]] | None = None
        self.cur: tuple[float, list[int]] = (0.0, [])
        self.last: tuple[float, list[int]] = (0.0, [])

    def update(self, at_ms: float, visits: list[int]) -> None:
        if at_ms <= self.last[0]:
            return
        if self.prev is None:
            self.prev = self.cur = (at_ms, visits)
        self.last = (at_ms, visits)
        if self.cur[0] + self.period >= at_ms:  # as lc0's (the window rolls within the period)
            self.prev, self.cur = self.cur, self.last

    def overtaken(self, by_ms: float) -> bool:
        if self.prev is None or self.prev[0] >= self.last[0] or by_ms <= self.last[0]:
            return False
        (t0, v0), (t1, v1) = self.prev, self.last
        if len(v0) != len(v1) or not v1:
            return False
        rate = [(b - a) / (t1 - t0) for a, b in zip(v0, v1, strict=True)]
        best = max(range(len(v1)), key=lambda i: (v1[i], -i))
        ahead = by_ms - t1
        planned_best = v1[best] + self.best_opt * rate[best] * ahead
        return any(
            v1[i] + self.other_opt * rate[i] * ahead > planned_best
            for i in range(len(v1))
            if i != best
        )


class SmoothWatch:
    """lc0's SmoothStopper over a run whose budget is the deadline plus the bank's share: reads
    the root every :data:`POLL_S` and stops the search at the deadline unless the bank is wanted
    (its first ``force-piggybank-ms``, the search asking for more time, or the best move's trend
    being overtaken), and past the deadline as soon as it no longer is. The search's smart
    pruning counts on the longer budget, as lc0's does while the bank may be used."""

    def __init__(
        self,
        search: Search,
        p: SmoothParams,
        deadline_ms: float,
        spare_ms: float,
        started_at: float,
    ) -> None:
        self.search, self.p = search, p
        self.deadline, self.spare, self.started_at = deadline_ms, spare_ms, started_at
        self.trend = TrendWatcher(p)
        self.used_piggybank = False
        self._packed: tuple[object, np.ndarray] | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="smooth-watch", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._done.set()
        self._thread.join()

    def poll(self) -> bool:
        """One of lc0's ShouldStop calls: whether the search should stop now (never before the
        root's first evaluation, as lc0's MaybeTriggerStop)."""
        elapsed = (time.monotonic() - self.started_at) * 1000.0
        state = self.search.state
        tree = state.tree
        if int(tree.nodes["nedges"][0]) == 0 or int(tree.nodes["n"][0]) == 0:
            return False
        if self._packed is None or self._packed[0] is not state.params:
            self._packed = (state.params, pack(state.params, bool(state.network.has_mlh)))
        terms = puct_terms(tree, self._packed[1], 0, True, state.draw_score(0))
        visits = NodeView(tree, 0).cn
        self.trend.update(elapsed, visits)
        use = need_more_time(visits, list(terms.qm)) or self.trend.overtaken(
            self.deadline + self.spare
        )
        stop, used = should_stop(elapsed, self.deadline, self.p.force_piggybank_ms, use)
        self.used_piggybank = self.used_piggybank or used
        return stop

    def _loop(self) -> None:
        while not self._done.wait(POLL_S):
            try:
                stop = self.poll()
            except Exception:  # a tree being replaced under the reading: read it next time
                continue
            if stop:
                self.search.stop()
                return
