"""lc0's smooth time manager (src/search/classic/stoppers/smooth.cc), ported.

Across the moves of a game it keeps estimates of the share of the tree that survives a move
(tree reuse), of the nodes per second, and of the share of its allocation a move really uses
(smart pruning stops early), plus a piggy bank: a share of the initial clock and of every move's
time, spent on moves that need longer. A move's allocation: the time left (less the bank) over
the moves expected (lc0's game-length model, ``mle-legacy``), grown for the reuse expected, less
the reused tree's worth of time, less the bank's share, divided by the time use, capped at
``max-move-budget`` of the clock.

The stopper (lc0's SmoothStopper) is :class:`engine.timemgr_watch.SmoothWatch`: the search's
budget is the deadline plus the bank's share, and the stopper, asked before every minibatch as
lc0's, stops it at the deadline unless the bank is wanted.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SmoothParams:
    """lc0's smooth parameters, by its keys with ``-`` for ``_`` (smooth.cc's defaults)."""

    init_tree_reuse: float = 0.52
    max_tree_reuse: float = 0.73
    tree_reuse_update_rate: float = 3.39
    nps_update_period: float = 20.0
    init_timeuse: float = 0.7
    min_timeuse: float = 0.34
    timeuse_update_rate: float = 5.51
    max_move_budget: float = 0.42
    init_piggybank: float = 0.09
    per_move_piggybank: float = 0.12
    max_piggybank_use: float = 0.94
    max_piggybank_moves: float = 36.5
    trend_nps_update_period_ms: int = 3000
    bestmove_optimism: float = 0.2
    overtaker_optimism: float = 4.0
    force_piggybank_ms: int = 1000
    midpoint: float = 45.2
    steepness: float = 5.93


def exponential_decay(start: float, to: float, step: float, value: float) -> float:
    """lc0's ExponentialDecay: ``start`` moved towards ``to`` by ``value / step`` halvings."""
    return to - (to - start) * 0.5 ** (value / step)


def linear_decay(
    cur: float, target: float, since_reliable: float, since_update: float, window: float
) -> float:
    """lc0's LinearDecay of an average (nps) towards a lower ``target`` over ``window`` ms."""
    if cur <= target:
        return target
    if since_update <= 0:
        return cur
    if since_reliable >= window:
        return target
    since_update = min(since_update, since_reliable)
    prev_frac = (since_reliable - since_update) / window
    reliable = (prev_frac * target - cur) / (prev_frac - 1)
    theta = since_reliable / window
    return (
        reliable if theta <= 0 else target if theta >= 1 else reliable + (target - reliable) * theta
    )


def moves_to_go(ply: int, midpoint: float, steepness: float) -> float:
    """lc0's ComputeEstimatedMovesToGo (legacy.cc), with smooth's mle-legacy parameters."""
    move = ply / 2.0
    return midpoint * (1 + 2 * (move / midpoint) ** steepness) ** (1 / steepness) - move


class SmoothManager:
    """The state of lc0's SmoothTimeManager over one game, its names and units (ms)."""

    def __init__(self, params: SmoothParams, move_overhead_ms: int) -> None:
        self.p = params
        self.move_overhead_ms = move_overhead_ms
        self.tree_reuse = params.init_tree_reuse
        self.nps = 20000.0
        self.nps_is_reliable = False
        self.timeuse = params.init_timeuse
        self.avg_ms_per_move = 0.0
        self.move_allocated_time_ms = 0.0
        self.last_move_final_nodes = 0
        self.last_time = 0
        self.piggybank_time = 0
        self.is_first_move = True
        self.last_plan: dict[str, float] = {}
        """The last plan's figures, as lc0's TMGR log lines name them."""

    def plan(
        self, time: int, inc: int, movestogo: int | None, ply: int, current_nodes: int
    ) -> tuple[int, int]:
        """lc0's GetStopper: (the move's deadline, the piggy bank it may draw on), in ms."""
        p, overhead = self.p, self.move_overhead_ms
        if self.is_first_move:
            self.piggybank_time = int(time * p.init_piggybank)
            self.is_first_move = False
        if self.last_move_final_nodes and self.last_time and self.avg_ms_per_move >= 0.0:
            self._update_tree_reuse(current_nodes)
        self.last_time = 0
        remaining = moves_to_go(ply, p.midpoint, p.steepness)
        if movestogo is not None and 0 < movestogo < remaining:
            remaining = movestogo
        max_piggybank = (
            p.max_piggybank_moves * max(0.0, time + inc * (remaining - 1) - overhead) / remaining
        )
        if self.piggybank_time > max_piggybank:
            self.piggybank_time = int(max_piggybank)
        total = max(0.0, time - self.piggybank_time + inc * (remaining - 1) - overhead)
        avg_nodes = total * self.nps / 1000.0 / remaining
        self.avg_ms_per_move = total / remaining
        with_reuse = avg_nodes / (1.0 - self.tree_reuse)
        estimate_nodes = max(0.0, with_reuse - current_nodes)
        brutto = estimate_nodes / self.nps * 1000.0
        to_piggybank = min(max_piggybank - self.piggybank_time, brutto * p.per_move_piggybank)
        allowed = int(self.piggybank_time * p.max_piggybank_use)
        allocated = (brutto - to_piggybank) / self.timeuse
        allocated = min(allocated, time * p.max_move_budget)
        if allocated > time - overhead:
            allocated = float(max(0, time - overhead))
        if allowed > time - overhead - allocated:
            allowed = int(time - overhead - allocated)
        self.move_allocated_time_ms = allocated
        self.piggybank_time = int(self.piggybank_time + to_piggybank)
        self.last_plan = {
            "allocated": allocated,
            "expected_brutto": brutto,
            "timeuse": self.timeuse,
            "tree_reuse": self.tree_reuse,
            "piggybank": self.piggybank_time,
            "longthink": allowed,
            "nps": self.nps,
            "reused": current_nodes,
            "moves": remaining,
        }
        return int(allocated), allowed

    def done(
        self,
        used_ms: float,
        deadline: float,
        nodes: int,
        playouts: int,
        search_ms: float,
        extended: bool = False,
    ) -> None:
        """lc0's UpdateNps (as the search's last call makes it) and UpdateEndOfMoveStats.
        ``extended``: the move searched past its deadline on the bank (:mod:`engine.timemgr_watch`)."""
        self._update_nps(int(search_ms), playouts)
        self.nps_is_reliable = True
        total_move_time = int(used_ms)
        fraction = 0.0 if self.avg_ms_per_move <= 0.0 else total_move_time / self.avg_ms_per_move
        use = (
            1.0
            if self.move_allocated_time_ms <= 0.0
            else total_move_time / self.move_allocated_time_ms
        )
        # lc0 sets the flag when the deadline passes while the bank may be used: forced (its
        # first force-piggybank-ms), or ``extended`` (asked for by the search or the trend)
        forced = deadline <= self.p.force_piggybank_ms and total_move_time >= deadline
        used_piggybank = extended or forced
        if used_piggybank:
            self.piggybank_time -= max(0, total_move_time - int(deadline))
        self.timeuse = exponential_decay(
            self.timeuse, 1.0 if used_piggybank else use, self.p.timeuse_update_rate, fraction
        )
        self.timeuse = max(self.timeuse, self.p.min_timeuse)
        self.last_move_final_nodes = nodes

    def _update_nps(self, since_first_batch_ms: int, playouts: int) -> None:
        if since_first_batch_ms <= 0:
            return
        target = 1000.0 * playouts / since_first_batch_ms
        if self.nps_is_reliable and since_first_batch_ms > self.last_time:
            self.nps = linear_decay(
                self.nps,
                target,
                since_first_batch_ms,
                since_first_batch_ms - self.last_time,
                self.p.nps_update_period * 1000.0,
            )
        else:
            self.nps = target
        self.last_time = since_first_batch_ms

    def _update_tree_reuse(self, new_move_nodes: int) -> None:
        fraction = 0.0 if self.avg_ms_per_move <= 0.0 else self.last_time / self.avg_ms_per_move
        this_reuse = new_move_nodes / self.last_move_final_nodes
        self.tree_reuse = exponential_decay(
            self.tree_reuse, this_reuse, self.p.tree_reuse_update_rate, fraction
        )
        self.tree_reuse = min(self.tree_reuse, self.p.max_tree_reuse)
