"""lc0's SmoothStopper's use of the piggy bank past a move's deadline (smooth.cc), read from the
root as one of the search's stoppers: the search asks for more time when its most visited move
is not the best by Q + M (lc0's ``kNeedMoreTime``, classic/search.cc
PopulateCommonIterationStats), and the visit trend says the best move is being overtaken (lc0's
VisitsTrendWatcher). A move that ends on its deadline while either holds searches on, up to the
deadline plus the bank's share, and stops at the first minibatch where neither holds
(:class:`SmoothWatch`, set on the search by the controller for one move).
"""

from __future__ import annotations

from engine.search import Search
from engine.search.core.view import NodeView, puct_terms
from engine.timemgr_smooth import SmoothParams


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
    elapsed_ms: float,
    since_first_batch_ms: float,
    deadline_ms: float,
    force_ms: float,
    wanted: bool,
) -> tuple[bool, bool]:
    """lc0's SmoothStopper::ShouldStop under a budget of the deadline plus the bank: (stop now,
    the bank is being used). The bank is used past the deadline while it is ``wanted`` (the
    search asks for more time, or the trend) or forced (the first ``force_ms`` after the first
    playout: lc0's ``time_since_first_batch``)."""
    use = wanted or since_first_batch_ms <= force_ms
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
    """lc0's SmoothStopper over a run whose budget is the deadline plus the bank's share: one of
    the search's stoppers (``Resources.time_stopper``, asked before every minibatch and by the
    run's watching thread, nodes lock held, as lc0 asks its stoppers after every minibatch and
    in its watchdog) from its making to :meth:`close`. It stops the search at the deadline
    unless the bank is wanted (its first ``force-piggybank-ms`` after the first playout, the
    search asking for more time, or the best move's trend being overtaken), and past the
    deadline as soon as it no longer is. The search's smart pruning counts on the longer
    budget, as lc0's does while the bank may be used. :meth:`poll` is given the run's own clock
    readings, which count from the go's arrival."""

    def __init__(
        self, search: Search, p: SmoothParams, deadline_ms: float, spare_ms: float
    ) -> None:
        self.search, self.p = search, p
        self.deadline, self.spare = deadline_ms, spare_ms
        self.trend = TrendWatcher(p)
        self.used_piggybank = False
        search.resources.time_stopper = self.poll

    def close(self) -> None:
        """The search's later runs are not this move's: the stopper is taken out."""
        resources = self.search.resources
        if resources.time_stopper == self.poll:
            resources.time_stopper = None

    def poll(self, elapsed_ms: float, since_first_batch_ms: float) -> bool:
        """lc0's SmoothStopper::ShouldStop (nodes lock held): whether the search should stop
        now, ``elapsed_ms`` into the move and ``since_first_batch_ms`` after its first playout
        (never before the root's first evaluation, as lc0's MaybeTriggerStop)."""
        resources = self.search.resources
        tree = resources.state.tree
        if int(tree.nodes["nedges"][0]) == 0 or int(tree.nodes["n"][0]) == 0:
            return False
        visits = NodeView(tree, 0).cn
        self.trend.update(elapsed_ms, visits)
        if elapsed_ms < self.deadline:
            return False  # the rest decides only past the deadline (should_stop)
        terms = puct_terms(tree, resources.packed, 0, True, resources.state.draw_score(0))
        wanted = need_more_time(visits, list(terms.qm)) or self.trend.overtaken(
            self.deadline + self.spare
        )
        stop, used = should_stop(
            elapsed_ms, since_first_batch_ms, self.deadline, self.p.force_piggybank_ms, wanted
        )
        self.used_piggybank = self.used_piggybank or used
        return stop
