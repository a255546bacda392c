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
    the first evaluation came back (the stoppers' time, ms; None: not yet)."""

    def __init__(self) -> None:
        self.counters = np.zeros(4, np.int64)
        self.batches = 0
        self.first_eval_time: float | None = None

    @property
    def playouts(self) -> int:
        return int(self.counters[cbackup.PLAYOUTS])

    @property
    def depth_sum(self) -> int:
        return int(self.counters[cbackup.DEPTH_SUM])

    @property
    def max_depth(self) -> int:
        return int(self.counters[cbackup.MAX_DEPTH])

    @property
    def tb_hits(self) -> int:
        return int(self.counters[cbackup.TB_HITS])
