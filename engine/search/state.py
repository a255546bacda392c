"""What a running search's reports read (:class:`SearchState`), and its NN cache."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import chess
import numpy as np

from engine.backend import Network
from engine.search.core import backup as cbackup
from engine.search.core import cache as ccache
from engine.search.core import tree as ctree
from engine.search.core.view import NodeView
from engine.search.limit import Limit
from engine.search.params import SearchParams
from engine.search.result import SearchStats


class NNCache:
    """The NN cache as the reports and the controller see it (hashfull, clear, resize)."""

    def __init__(self, capacity: int) -> None:
        self.arrays = ccache.new_cache(capacity)

    def hashfull(self) -> int:
        return ccache.hashfull(self.arrays)

    def clear(self) -> None:
        """Forget every entry, keeping the arrays: freeing hundreds of MB would delay the
        ``ucinewgame`` that asks for it."""
        self.arrays.entries["key"][:] = 0
        self.arrays.meta[ccache.WRITE] = 0
        self.arrays.meta[ccache.USED] = 0

    def resize(self, capacity: int) -> None:
        if capacity != int(self.arrays.meta[ccache.CAPACITY]):
            self.arrays = ccache.new_cache(capacity)

    def __len__(self) -> int:
        return int(self.arrays.meta[ccache.USED])


class WallClock:
    """The host's clock: what lc0 reads, and what every search in play uses."""

    def elapsed_ms(self, start: float, playouts: int) -> float:
        return (time.monotonic() - start) * 1000.0


@dataclass(frozen=True)
class PlayoutClock:
    """A clock that advances with the search's own playouts, ``nodes_per_s`` of them a second.

    lc0's smart pruning may stop a ``go nodes`` search only from 200 ms after the first
    evaluation, so where a search stops, and the tree the next one reuses, depend on how fast
    the host searches. Replaying a search lc0 recorded at ``nodes_per_s`` under this clock
    makes those decisions as lc0's were, on any host (the fidelity checks); never in play."""

    nodes_per_s: float

    def __post_init__(self) -> None:
        if not self.nodes_per_s > 0:
            raise ValueError(f"expected nodes_per_s > 0, got {self.nodes_per_s}")

    def elapsed_ms(self, start: float, playouts: int) -> float:
        return 1000.0 * playouts / self.nodes_per_s


Clock = WallClock | PlayoutClock


class SearchState:
    """What the stoppers and the reports read of a running search, over the array tree."""

    def __init__(self, network: Network, params: SearchParams, cache: NNCache) -> None:
        self.clock: Clock = WallClock()
        """The stoppers' time; a replay of lc0's searches sets a :class:`PlayoutClock`."""
        self.network = network
        self.params = params
        self.cache = cache
        self.tree = ctree.new_tree()
        self.counters = np.zeros(4, np.int64)
        self.root_board = chess.Board()
        self.limit = Limit()
        self.start = 0.0
        self.batches = 0
        self.first_eval_time: float | None = None
        self.initial_visits = 0
        self.searchmoves: set[chess.Move] = set()
        self.root_in_tablebase = False
        self.mask: np.ndarray | None = None
        self.stop = threading.Event()
        self._root: NodeView | None = None
        self.cached_q: Callable[[chess.Move | None], float | None] | None = None

    def network_q(self, move: chess.Move | None) -> float | None:
        """The network's q of the root, or of the position after the root ``move``, from the
        NN cache (the search that owns this state answers); None when it does not have it."""
        return None if self.cached_q is None else self.cached_q(move)

    @property
    def root(self) -> NodeView:
        if self._root is None:
            self._root = NodeView(self.tree, 0, self.root_board.chess960)
        return self._root

    def changed(self) -> None:
        """The tree changed: views read it anew."""
        self._root = None

    @property
    def root_ply(self) -> int:
        return len(self.root_board.move_stack)

    @property
    def total_playouts(self) -> int:
        return int(self.counters[cbackup.PLAYOUTS])

    @property
    def cum_depth(self) -> int:
        return int(self.counters[cbackup.DEPTH_SUM])

    @property
    def max_depth(self) -> int:
        return int(self.counters[cbackup.MAX_DEPTH])

    @property
    def tb_hits(self) -> int:
        return int(self.counters[cbackup.TB_HITS])

    def new_search(self, limit: Limit) -> None:
        self.start = limit.started_at if limit.started_at is not None else time.monotonic()
        self.limit = limit
        self.counters[:] = 0
        self.batches = 0
        self.first_eval_time = None
        self.initial_visits = int(self.tree.nodes["n"][0])
        self.searchmoves = set(limit.searchmoves)
        self.root_in_tablebase = False
        self.mask = None
        self.changed()

    def draw_score(self, depth: int) -> float:
        """lc0's GetDrawScore: DrawScore is White's at the root, its sign alternating."""
        ds = self.params.draw_score
        root_black = self.root_board.turn == chess.BLACK
        return ds if ((depth % 2 == 1) == root_black) else -ds

    def elapsed_ms(self) -> float:
        """Milliseconds of this search by its clock (the stoppers' time)."""
        return self.clock.elapsed_ms(self.start, self.total_playouts)

    def stats(self) -> SearchStats:
        return SearchStats(
            elapsed_ms=self.elapsed_ms(),
            nodes=self.total_playouts + self.initial_visits,
            playouts=self.total_playouts,
            depth_sum=self.cum_depth,
            max_depth=self.max_depth,
            tb_hits=self.tb_hits,
            hashfull=self.cache.hashfull(),
        )
