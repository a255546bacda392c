"""What outlives a ``go`` (lc0's ``NodeTree`` and backend): the search's state over the tree,
the game up to the root, the NN cache, the batch buffers, the evaluator (the evaluation's
threads) and the stop signals. :class:`engine.search.search.Search` owns one and changes the position; each ``go``'s
:class:`engine.search.run.SearchRun` and its :class:`engine.search.worker.SearchWorker` use it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import chess
import numpy as np

from engine.backend import Network
from engine.board import game_rows, move_from_chess
from engine.board.moves import MAX_MOVES
from engine.board.position import FIELDS
from engine.encoding.formats import format_rules, parse_history_fill
from engine.encoding.rows import FILL_CODES
from engine.search.core import cache as ccache
from engine.search.core import gather as cgather
from engine.search.core import steps
from engine.search.core.params import pack
from engine.search.evaluation import Evaluator
from engine.search.pages import PagesAhead
from engine.search.params import SearchParams
from engine.search.state import NNCache, SearchState
from engine.search.timeline import Timeline
from engine.tablebase import Tablebase

TimeStopper = Callable[[float, float], bool]
"""A time manager's stopper (lc0's ``SearchStopper::ShouldStop``) over the run's milliseconds
since the go and since its first playout (lc0's ``time_since_movestart`` and
``time_since_first_batch``, 0 before it): whether the search should stop now."""

HISTORY_ROOM = 1024
"""Plies of path the history buffer holds beyond the game (grown when a search goes deeper)."""


class Resources:
    """The tree's state, the game's rows, the NN cache, the batch buffers and the evaluation
    workers of one :class:`engine.search.search.Search`, with what a run asks of them."""

    def __init__(
        self,
        network: Network,
        params: SearchParams,
        cache: NNCache | None = None,
        tablebase: Tablebase | None = None,
    ) -> None:
        self.network = network
        # The cache may be shared: the controller keeps it across trees and networks' searches.
        self._cache = cache if cache is not None else NNCache(params.nn_cache_size)
        self.state = SearchState(network, params, self._cache)
        self.tablebase = tablebase
        self._fmt = format_rules(network.input_format).input_format
        self._game = np.zeros((0, FIELDS), np.uint64)
        self.hist = self._game
        """The game's rows, then room for a path's (the compiled selection's board)."""
        self.attributes = network.attributes()
        self.evaluator = Evaluator(network, self.attributes)
        """The evaluation's threads, their order and signals (the one owner of them)."""
        self.pages = PagesAhead()  # the tree's and the cache's next pages, backed in advance
        self.stop_flag = np.zeros(1, np.uint8)
        """The stop as the compiled gather reads it."""
        self.time_stopper: TimeStopper | None = None
        """The time manager's own stopper (smooth's, lc0's SmoothStopper), when one is set:
        asked with the stoppers before every minibatch and at each look of the run's watching
        thread, nodes lock held (engine/search/run.py); True ends a run that has a limit."""
        self._pad_key: tuple[int, int] | None = None
        self._pad = np.zeros(1, np.int64)
        self._packed_for: SearchParams | None = None
        self._packed_value = np.zeros(0)
        self.batches: list[cgather.Batch] = []
        self._retired: dict[int, tuple[cgather.Batch, threading.Thread]] = {}
        """Batches a run dropped on the network (hung calls), by id, with the thread holding each."""
        self._sequence = 0
        self.state.cached_q = self._cached_q
        start = chess.Board()
        self.set_game(start, game_rows(start))

    @property
    def params(self) -> SearchParams:
        return self.state.params

    @params.setter
    def params(self, params: SearchParams) -> None:
        self.state.params = params
        self._cache.resize(params.nn_cache_size)

    @property
    def cache(self) -> NNCache:
        return self._cache

    @property
    def timeline(self) -> Timeline | None:
        """Each batch's phase times, when a caller sets one (bin/perf/bench --trace); the
        evaluator records the device's."""
        return self.evaluator.timeline

    @timeline.setter
    def timeline(self, timeline: Timeline | None) -> None:
        self.evaluator.timeline = timeline

    def stop(self) -> None:
        """The stop, for the loop, the compiled gather and a waiting run."""
        self.state.stop.set()
        self.stop_flag[0] = 1

    def rearm(self) -> None:
        """Forget a stop: the next run searches (a new position, or a ponderhit's new run)."""
        self.state.stop.clear()
        self.stop_flag[0] = 0

    def close(self) -> None:
        """Close (the threads of a run's batches are gone by then: ``Search.close`` settles it;
        a hung call's is left behind)."""
        self.evaluator.close()
        self.pages.close()

    def next_sequence(self) -> int:
        """The next batch's number (the timeline's)."""
        self._sequence += 1
        return self._sequence

    @property
    def packed(self) -> np.ndarray:
        """The parameters as the compiled phases read them (packed once per SearchParams)."""
        params = self.state.params
        if self._packed_for is not params:
            self._packed_value = pack(params, bool(self.network.has_mlh))
            self._packed_for = params
        return self._packed_value

    def pad_table(self, batch_size: int, max_prefetch: int) -> np.ndarray:
        """Prefetch target by request count. A backend that computes a batch's rows only is
        filled up to MaxPrefetch (lc0's); one that pads batches (to compiled sizes, or a
        device whose call costs the same whatever its rows) has its padding filled, which costs
        no network time, up to the batch buffers' rows. MaxPrefetch 0: no prefetch."""
        key = (batch_size, max_prefetch)
        if self._pad_key != key:
            self._pad = _pad_targets(self.attributes.padded_size, batch_size, max_prefetch)
            self._pad_key = key
        return self._pad

    def walk_info(self, root_in_tablebase: bool) -> np.ndarray:
        """The compiled selection's Walk.info (engine/search/core/gather.py)."""
        pieces = self.tablebase.max_pieces if self.tablebase is not None else 0
        return cgather.WALK_INFO.pack(
            GAME_LEN=len(self._game),
            FORMAT=self._fmt,
            FILL=FILL_CODES[parse_history_fill(self.params.history_fill)],
            TB_PIECES=pieces,
            ROOT_IN_TB=root_in_tablebase,
        )

    def ensure_batches(self, count: int, size: int) -> None:
        """``count`` batch buffers of ``size`` rows at least, free: a buffer a hung call held
        is used again once its thread has gone, else replaced (:meth:`retire_batch`)."""
        if len(self.batches) != count or self.batches[0].req.shape[0] < size:
            self.batches = [cgather.new_batch(size) for _ in range(count)]
        for i, batch in enumerate(self.batches):
            held = self._retired.get(id(batch))
            if held is not None and held[0] is batch and held[1].is_alive():
                self.batches[i] = cgather.new_batch(len(batch.req))
        self._retired.clear()

    def retire_batch(self, batch: cgather.Batch, thread: threading.Thread) -> None:
        """A batch a run dropped while its call hung, with its thread: that still writes to it
        once back (the sorted policies, the NN cache's store), so the next run gathers into it
        only once the thread has gone (a new buffer cost that run's gathers 0.4-3.8 ms of
        first writes)."""
        self._retired[id(batch)] = (batch, thread)

    def grow_history(self) -> None:
        g = len(self._game)
        bigger = np.zeros((2 * len(self.hist), FIELDS), np.uint64)
        bigger[:g] = self._game
        self.hist = bigger

    def cached_root_moves(self) -> list[int]:
        """The root's legal moves by decreasing prior, if the NN cache has the root."""
        row = len(self._game) - 1
        moves = np.zeros(MAX_MOVES, np.int32)
        priors = np.zeros(MAX_MOVES, np.uint16)
        with self._cache.lock:
            slot = steps.cached_slot(self.hist, row, -1, self.packed, self._cache.arrays)
            count = 0 if slot < 0 else ccache.read_moves(self._cache.arrays, slot, moves, priors)
        return moves[:count].tolist()

    def _cached_q(self, path: tuple[chess.Move, ...]) -> float | None:
        """The network's q of the root, or of the position after the root's moves ``path``
        (two at most: lc0's move stats go one node below the root), from the NN cache. The
        rows past the game's are scratch (each gather walks a copy of them)."""
        row = len(self._game) - 1
        board = self.state.root_board
        arrays = self._cache.arrays
        with self._cache.lock:
            slot = steps.cached_slot(self.hist, row, -1, self.packed, arrays) if not path else -1
            for k, move in enumerate(path):
                word = move_from_chess(self.hist[row], board, move)
                slot = steps.cached_slot(self.hist, row, word, self.packed, arrays)
                row += 1
                if k + 1 < len(path):
                    board = board.copy(stack=False)
                    board.push(move)
            return None if slot < 0 else float(arrays.entries["q"][slot])

    def set_game(self, board: chess.Board, rows: np.ndarray) -> None:
        """The game up to the root: ``board`` and its rows (engine.board.game_rows)."""
        self.state.root_board = board.copy()
        self._game = rows
        g = len(rows)
        self.hist = np.zeros((g + HISTORY_ROOM, FIELDS), np.uint64)
        self.hist[:g] = rows
        steps.revert_stale_twofolds(self.state.tree, self.hist, g)


def _pad_targets(
    padded: Callable[[int], int] | None, batch_size: int, max_prefetch: int
) -> np.ndarray:
    """Resources.pad_table's targets, by request count (``padded``: the backend's padded size)."""
    rows = max(batch_size, max_prefetch)  # the batch buffers' (SearchWorker.prepare)

    def target(n: int) -> int:
        if max_prefetch == 0 or padded is None or n == 0:
            return max_prefetch
        return min(padded(n), rows)

    return np.array([target(n) for n in range(batch_size + 1)], np.int64)
