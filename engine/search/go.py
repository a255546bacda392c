"""One ``go`` as its search run holds it: :class:`Go`, its terms, fixed when the run starts
(lc0's ``GoParams`` with the search's start; a ``ponderhit`` is a new run with a new
:class:`Go`, as lc0's ``PonderHit`` re-issues ``Go``), and :class:`Tally`, what the run has done
so far. Neither outlives the run; the tree and what else outlives it is
:class:`engine.search.state.SearchState`'s."""

from __future__ import annotations

from dataclasses import dataclass

import chess
import numpy as np

from engine.search.core import backup as cbackup
from engine.search.limit import Limit


@dataclass(frozen=True, eq=False)
class Go:
    """A run's terms: the ``limit``, its ``start`` (time.monotonic(): the go line's arrival, or
    the ponderhit's), the root moves it may play (``searchmoves``, narrowed by the tablebases;
    empty: all) as a ``mask`` over the root's edges (None: every edge), whether the root is in
    the tablebases, and the root's visits when it began (a reused tree's)."""

    limit: Limit
    start: float
    searchmoves: frozenset[chess.Move] = frozenset()
    mask: np.ndarray | None = None
    root_in_tablebase: bool = False
    initial_visits: int = 0


class Tally:
    """What a run has done, written by its search thread: the compiled phases' counters
    (playouts, their depth sum, the deepest, tablebase hits), the batches backed up, and when
    the first evaluation came back (the stoppers' time, ms; None: not yet). The reports' own:
    ``nps_start_ms``, the run's time when it first saw a playout (lc0's ``nps_start_time_``,
    from which ``nps`` and ``eps`` count; None: not yet), and ``evaluations``, the positions
    the network evaluated for it (lc0's ``network_evaluations_``: no cache hit, no prefetch)."""

    def __init__(self) -> None:
        self.counters = cbackup.COUNTERS.new()
        self.batches = 0
        self.first_eval_time: float | None = None
        self.nps_start_ms: float | None = None
        self.evaluations = 0

    @property
    def playouts(self) -> int:
        return int(self.counters[cbackup.PLAYOUTS])

    @property
    def depth_sum(self) -> int:
        return int(self.counters[cbackup.DEPTH_SUM])

    @property
    def max_depth(self) -> int:
        return int(self.counters[cbackup.MAX_DEPTH])

    # lc0 counts depth from 1 at the root (a playout's path length, root included); the
    # compiled phases count plies from the root (0). The reports and the depth limit use lc0's.
    @property
    def cum_depth(self) -> int:
        """lc0's ``cum_depth_``: the playouts' depths summed, the root's being 1."""
        return self.depth_sum + self.playouts

    @property
    def average_depth(self) -> int:
        """lc0's average depth, ``cum_depth_ / total_playouts_`` (0 without a playout)."""
        return self.cum_depth // self.playouts if self.playouts else 0

    @property
    def seldepth(self) -> int:
        """lc0's ``max_depth_``: the deepest playout, the root's being 1 (0: none yet)."""
        deepest = self.max_depth
        return deepest + 1 if deepest or self.playouts else 0

    @property
    def tb_hits(self) -> int:
        return int(self.counters[cbackup.TB_HITS])
