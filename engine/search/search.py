"""The search as the controller sees it (lc0's ``Search`` and ``NodeTree`` together): the
position, a ``go`` at a time, the stop. What outlives a ``go`` (the tree, the NN
cache, the batch buffers, the evaluation workers) is its :class:`Resources`; each ``go`` is one
:class:`engine.search.run.SearchRun` over them (lc0's ``Search``), whose phases are compiled
(numba, engine/search/core/)."""

from __future__ import annotations

from collections.abc import Callable

import chess
import numpy as np

from engine.backend import Network
from engine.board import game_rows, move_from_chess
from engine.search.core import tree as ctree
from engine.search.core.view import NodeView
from engine.search.limit import Limit
from engine.search.params import SearchParams
from engine.search.resources import Resources
from engine.search.result import SearchResult, ThinkingInfo
from engine.search.run import SearchRun
from engine.search.state import NNCache, SearchState
from engine.search.timeline import Timeline
from engine.tablebase import Tablebase


class Search:
    """The position and one ``run`` at a time over :attr:`resources` (see the module
    docstring)."""

    def __init__(
        self,
        network: Network,
        params: SearchParams,
        cache: NNCache | None = None,
        tablebase: Tablebase | None = None,
    ) -> None:
        self.resources = Resources(network, params, cache, tablebase)
        self._unsettled: SearchRun | None = None
        """The last run, until the batches it left on the network are backed up."""

    @property
    def state(self) -> SearchState:
        return self.resources.state

    @property
    def params(self) -> SearchParams:
        return self.resources.params

    @params.setter
    def params(self, params: SearchParams) -> None:
        self.resources.params = params

    @property
    def cache(self) -> NNCache:
        return self.resources.cache

    @property
    def root(self) -> NodeView:
        return self.state.root

    @property
    def tablebase(self) -> Tablebase | None:
        return self.resources.tablebase

    @tablebase.setter
    def tablebase(self, tablebase: Tablebase | None) -> None:
        self.resources.tablebase = tablebase

    @property
    def timeline(self) -> Timeline | None:
        """Each batch's phase times, when a caller sets one (bin/perf/bench --trace)."""
        return self.resources.timeline

    @timeline.setter
    def timeline(self, timeline: Timeline | None) -> None:
        self.resources.timeline = timeline

    def set_position(self, board: chess.Board) -> bool:
        """Search from ``board`` (its move stack is the game); keeps the subtree when the game
        continues the previous one, and returns whether it did. A stop asked for before this
        is forgotten; one asked for after it ends the next ``run`` at once, even if that
        ``run`` has not begun yet."""
        self.settle()
        state, res = self.state, self.resources
        res.rearm()
        old = state.root_board
        new_stack, old_stack = board.move_stack, old.move_stack
        rows = game_rows(board)
        node = -1
        if (
            len(new_stack) >= len(old_stack)
            and board.root() == old.root()
            and board.chess960 == old.chess960
            and new_stack[: len(old_stack)] == old_stack
        ):
            node = _follow(state.tree, board, rows, len(old_stack))
        reused = (
            node >= 0
            and int(state.tree.nodes["n"][node]) > 0
            and int(state.tree.nodes["kind"][node]) == ctree.NONE
        )
        if not reused:
            state.tree = ctree.emptied(state.tree)
        elif node != 0:  # (the root itself: the tree stays as it is)
            kept_from = state.tree
            state.tree = ctree.keep_subtree(kept_from, node, state.spare)
            # The old arrays, their pages backed, are the next move's copy's (12 moves of 50,000
            # nodes through UCI: 57 ms of set-up against 39, in-process 79-126 against 34-42);
            # not under RamLimitMb, whose count of the tree's bytes they would escape.
            state.spare = kept_from if self.params.ram_limit_bytes <= 0 else None
        res.set_game(board, rows)
        state.changed()
        return reused

    def clear_tree(self) -> None:
        """Forget the tree, keeping the NN cache (lc0's ClearTree)."""
        self.settle()
        self.state.tree = ctree.emptied(self.state.tree)
        self.state.changed()

    def clear(self) -> None:
        """Forget the tree and the NN cache (ucinewgame)."""
        self.settle()
        self.state.tree = ctree.emptied(self.state.tree)
        self.cache.clear()
        self.state.changed()

    def stop(self) -> None:
        """End the running search (and one that starts before :meth:`rearm` or the next
        :meth:`set_position`)."""
        self.resources.stop()

    def rearm(self) -> None:
        """Forget a stop, keeping the position and tree: the next ``run`` searches on (a
        ponderhit's run after the ponder run it stopped, as lc0's ``PonderHit`` re-issues
        ``Go``)."""
        self.resources.rearm()

    def close(self) -> None:
        self.settle()
        self.resources.close()

    def settle(self) -> None:
        """The batches the last run left on the network backed up into the tree (lc0's search
        threads finish their iteration after the bestmove, and the next search waits for them:
        ``Search::Wait``). Every step that reads or changes the tree next calls it first; any
        thread may, more than once."""
        run = self._unsettled
        if run is not None:
            run.settle()
            if self._unsettled is run:
                self._unsettled = None

    def run(
        self,
        limit: Limit,
        on_info: Callable[[list[ThinkingInfo]], None] | None = None,
        on_verbose: Callable[[list[str]], None] | None = None,
        verbose: bool = False,
        live_stats: bool = False,
        settle: bool = True,
    ) -> SearchResult:
        """Search the current position to ``limit`` (one :class:`SearchRun`). The result is
        made from the tree as the run ended; with ``settle`` the call returns once the batches
        left on the network are backed up, else they wait for :meth:`settle` (the controller's,
        after its bestmove)."""
        self.settle()
        self._rescale_for(limit)
        run = SearchRun(self.resources, limit, on_info, on_verbose, verbose, live_stats)
        try:
            result = run.execute()
        finally:
            self._unsettled = run  # once over: no other thread settles it while it runs
        if settle:
            self.settle()
        return result

    def _rescale_for(self, limit: Limit) -> None:
        """The WDL rescaling (contempt) of a run to ``limit``: for the reports, and for the
        network's values when it changes them, with the NN cache holding values of that
        rescaling only (engine/search/contempt.py), and of the run's history fill and policy
        temperature (the network's input and the priors)."""
        state = self.state
        white = state.root_board.turn == chess.WHITE
        rescale = state.params.rescale_for(white, limit.infinite)
        state.wdl_rescale = rescale
        self.resources.evaluator.rescale = rescale if rescale.active else None
        p = state.params
        self.cache.hold_values_of((rescale.cache_key(white), p.history_fill, p.policy_softmax_temp))


def _follow(tree: ctree.Tree, board: chess.Board, rows: np.ndarray, from_ply: int) -> int:
    """The node the game's moves after ``from_ply`` lead to from the root, or -1 (``rows``:
    the game's rows)."""
    replay = board.root()
    node = 0
    for ply, move in enumerate(board.move_stack):
        if ply >= from_ply:
            k = int(tree.nodes["nedges"][node])
            if k == 0 or int(tree.nodes["kind"][node]) != ctree.NONE:
                return -1
            word = move_from_chess(rows[ply], replay, move)
            f = int(tree.nodes["first"][node])
            hit = np.nonzero(tree.edges["move"][f : f + k] == word)[0]
            if hit.size == 0:
                return -1
            node = int(ctree.child(tree, node, int(hit[0])))
            if node < 0:
                return -1
        replay.push(move)
    return node
