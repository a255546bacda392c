"""What outlives a ``go`` and the reports read (:class:`SearchState`), and the NN cache."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import chess

from engine.backend import Network
from engine.search.contempt import WdlRescale
from engine.search.core import cache as ccache
from engine.search.core import tree as ctree
from engine.search.core.view import NodeView
from engine.search.go import Go, Tally
from engine.search.params import SearchParams
from engine.search.result import SearchStats


class NNCache:
    """The NN cache as the reports and the controller see it (hashfull, clear, resize)."""

    def __init__(self, capacity: int) -> None:
        self.arrays = ccache.new_cache(capacity)
        self.lock = threading.Lock()
        """Held by whoever writes the arrays (a batch's evaluation storing its results, a clear)
        or reads them from Python; the gathers read them without it (core/cache.py's
        seqlock)."""
        self.values_key: Hashable = None
        """What its entries were made with (:meth:`hold_values_of`; None: nothing yet)."""

    def hold_values_of(self, key: Hashable) -> None:
        """Make the entries those made with ``key`` (what they depend on beyond the position:
        the WDL rescaling, the history fill, the policy's temperature): forget them when they
        were stored with another (contempt changes the values the cache keeps, the history
        fill the network's input, the temperature the priors)."""
        if key != self.values_key:
            if len(self):
                self.clear()
            self.values_key = key

    def hashfull(self) -> int:
        return ccache.hashfull(self.arrays)

    def clear(self) -> None:
        """Forget every entry, keeping the arrays: freeing hundreds of MB would delay the
        ``ucinewgame`` that asks for it. An empty cache is left alone: writing its keys would
        back each of its pages with memory (megabytes at every ``ucinewgame`` of a new
        engine, and a fresh huge page costs a virtual machine's kernel milliseconds)."""
        with self.lock:
            if not self.arrays.meta[ccache.USED]:
                return  # no slot was ever filled: every key is 0 already
            self.arrays.entries["key"][:] = 0
            self.arrays.meta[ccache.WRITE] = 0
            self.arrays.meta[ccache.USED] = 0

    def resize(self, capacity: int) -> None:
        with self.lock:
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
    """What outlives a ``go`` and the reports read of it: the array tree, the game up to its root,
    the parameters, the network and its NN cache, the stoppers' clock, the stop signal. A run's
    own terms and progress are its :class:`engine.search.go.Go` and ``Tally``."""

    def __init__(self, network: Network, params: SearchParams, cache: NNCache) -> None:
        self.clock: Clock = WallClock()
        """The stoppers' time; a replay of lc0's searches sets a :class:`PlayoutClock`."""
        self.network = network
        self.params = params
        self.cache = cache
        self.tree = ctree.new_tree()
        self.spare: ctree.Tree | None = None
        """The arrays of the tree before the last one kept a subtree of it (Search.set_position),
        for the next such copy."""
        self.root_board = chess.Board()
        self.stop = threading.Event()
        self._root: NodeView | None = None
        self.wdl_rescale: WdlRescale = params.rescale_for(True, False)
        """The WDL rescaling (contempt) of the current run's values and reports (Search.run)."""
        self.cached_q: Callable[[tuple[chess.Move, ...]], float | None] | None = None

    def network_q(self, path: tuple[chess.Move, ...] = ()) -> float | None:
        """The network's q of the root, or of the position after the root's moves ``path``,
        from the NN cache (the search that owns this state answers); None when it does not
        have it."""
        return None if self.cached_q is None else self.cached_q(path)

    @property
    def root(self) -> NodeView:
        if self._root is None:
            self._root = NodeView(self.tree, 0, self.root_board.chess960)
        return self._root

    def changed(self) -> None:
        """The tree changed: views read it anew."""
        self._root = None

    def snapshot(self) -> SearchState:
        """This state as a report reads it without the nodes lock: the same objects, with the
        tree's arrays as they are now throughout (the tree's growth replaces them and leaves
        these whole: a view never mixes the old arrays with the new)."""
        view = copy.copy(self)
        view._root = None
        return view

    @property
    def root_ply(self) -> int:
        return len(self.root_board.move_stack)

    def draw_score(self, depth: int) -> float:
        """lc0's GetDrawScore: DrawScore is White's at the root, its sign alternating."""
        ds = self.params.draw_score
        root_black = self.root_board.turn == chess.BLACK
        return ds if ((depth % 2 == 1) == root_black) else -ds

    def stats(self, go: Go, tally: Tally) -> SearchStats:
        """The counters of the run of ``go`` that has done ``tally``, as the reports read them."""
        return SearchStats(
            elapsed_ms=self.clock.elapsed_ms(go.start, tally.playouts),
            nodes=tally.playouts + go.initial_visits,
            playouts=tally.playouts,
            depth_sum=tally.cum_depth,
            max_depth=tally.seldepth,
            tb_hits=tally.tb_hits,
            hashfull=self.cache.hashfull(),
            evaluations=tally.evaluations,
            nps_start_ms=tally.nps_start_ms,
        )
