"""One ``go``: lc0's classic ``Search`` with its constant parameters, over the tree, the NN cache
and the evaluator that outlive it (:class:`engine.search.resources.Resources`, lc0's
``NodeTree`` and backend). Its terms are one frozen :class:`engine.search.go.Go` (a ``ponderhit``
is a new run), its progress a :class:`engine.search.go.Tally`; neither outlives it.

``Threads`` search threads (lc0's ``SearchWorker``s) share the one tree; each repeats one
iteration (lc0's ``ExecuteOneIteration``, engine/search/threads.py's ``_iterate``): stoppers
(under the nodes lock) → gather (compiled, beside the other threads' phases) → Syzygy probes of
the candidates it flagged → evaluate (its own network call: the compiled encoding and sort and
the backend's call release the GIL) → expand and back up (compiled, beside the others). Visits
in flight are the tree's own counts (``nif``), changed atomically, so every visit is accounted
for (threads.py's docstring says who writes what). The phases of a
minibatch are :class:`engine.search.worker.SearchWorker`'s; this module decides when each runs.
What a step computes for a later phase (the stoppers' hint, the root's best move) is passed to
it as an argument.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numpy as np

from engine.search.answer import choose_move
from engine.search.core import backup as cbackup
from engine.search.core import stoppers as cstop
from engine.search.go import Go, Tally
from engine.search.limit import Limit
from engine.search.memory import full_message, held_bytes, reserve_for_limit
from engine.search.noise import add_dirichlet_noise
from engine.search.outbox import Outbox
from engine.search.params import SearchParams
from engine.search.report import make_infos, verbose_stats
from engine.search.resources import Resources
from engine.search.result import (
    INFO_HEARTBEAT_MS,
    SearchResult,
    SearchStats,
    ThinkingInfo,
)
from engine.search.state import SearchState, WallClock
from engine.search.threads import SearchThreads
from engine.search.worker import SearchWorker
from engine.tablebase import Tablebase

LIMIT_WARNING = "WARNING: Search has reached limit and does not make any progress."
"""lc0's ``info string`` after each info line of a run until stop (``go infinite``, ``go
ponder``) whose limit is reached (go nodes or depth, the tree or RAM limit): it searches no
further but waits for ``stop`` (classic/search.cc MaybeOutputInfo: ``stop_`` set, no bestmove
to send)."""

WATCH_SLICE_S = 0.02
"""How often the run's own thread looks at its search threads (a deadline is noticed within it
while every thread waits for the network; the threads see a stop and their limits at once)."""


class SearchRun:
    """One search from the resources' root to ``limit``: its terms, parameters and batch size are
    fixed at its start; the callbacks get its info lines."""

    def __init__(
        self,
        res: Resources,
        limit: Limit,
        on_info: Callable[[list[ThinkingInfo]], None] | None = None,
        on_verbose: Callable[[list[str]], None] | None = None,
        verbose: bool = False,
        live_stats: bool = False,
    ) -> None:
        self.res = res
        self.state = res.state
        self.params: SearchParams = res.params
        start = limit.started_at if limit.started_at is not None else time.monotonic()
        self.go = Go(limit, start, frozenset(limit.searchmoves))
        """The run's terms; :meth:`execute` adds the root's (tablebases, searchmoves) once."""
        self.tally = Tally()
        self.on_info, self.on_verbose = on_info, on_verbose
        self.outbox = Outbox()  # the lines queued under the nodes lock, made and sent without it
        self.verbose, self.live_stats = verbose, live_stats
        attributes = res.attributes
        self.batch_size = self.params.batch_size(attributes.max_batch, attributes.preferred_batch)
        self.failure: BaseException | None = None
        """The exception of a network call that failed (it ended the run)."""
        self.ram_limited = False
        self.worker = SearchWorker(res, self.params, self.batch_size, self.go, self.tally)
        self.kld = cstop.kld_stopper(
            limit, self.params, lambda: cstop.root_edge_visits(self.state.tree)
        )
        """lc0's KldGainStopper of this run (None: MinimumKLDGainPerNode 0, or not watched)."""
        self._sent: ThinkingInfo | None = None
        """The first line of the last report sent (lc0's ``last_outputted_uci_info_``)."""
        self._queued: tuple[int, int, int, int] | None = None
        """The last report queued: the root's best edge (lc0's ``last_outputted_info_edge_``),
        the average depth, the seldepth and the milliseconds when it was."""
        self._ending = False
        """A limit is reached: the next report is the final one (lc0's ``bestmove_is_sent_``)."""
        self._stalled = False
        """A limit is reached in a run until stop: it waits for ``stop`` (lc0's ``stop_``
        without ``ok_to_respond_bestmove_``); each info line then comes with LIMIT_WARNING."""
        self.threads: SearchThreads | None = None  # its threads, once started

    # ----------------------------------------------------------------------------- the run
    def execute(self) -> SearchResult:
        """Search, then report and answer (bestmove, ponder move, info lines)."""
        state = self.state
        state.changed()
        root_moves = list(state.root_board.legal_moves)
        if not root_moves:
            return SearchResult(None, None, int(state.tree.nodes["n"][0]), 0, 0.0)
        self._set_go(dataclasses.replace(self.go, initial_visits=int(state.tree.nodes["n"][0])))
        state.tree = reserve_for_limit(state.tree, self.params)
        if (tablebase := self.res.tablebase) is not None:
            self._set_go(root_by_tablebase(state, tablebase, self.params, self.go, self.tally))
        if self.params.noise_epsilon > 0 and not state.root.expanded:
            self.worker.expand_root()  # lc0 adds the noise where it extends the root
            add_dirichlet_noise(state, self.params.noise_epsilon, self.params.noise_alpha)
        if self.go.searchmoves:
            self.worker.expand_root()
            moves = state.root.moves or ()
            mask = np.array([m in self.go.searchmoves for m in moves], bool)
            self._set_go(dataclasses.replace(self.go, mask=mask if mask.any() else None))
        self._search()
        self.outbox.flush()
        state.changed()
        self._report_the_end()
        infos = self._infos() if state.tree.nodes["n"][0] > 0 else []
        # lc0 sends a last report with the bestmove; not when it would repeat the one just sent.
        if self.on_info is not None and infos and not infos[0].same_but_time(self._sent):
            self.on_info(infos)
        if self.verbose and self.on_verbose is not None and state.root.expanded:
            self.on_verbose(verbose_stats(state))
        best, ponder = choose_move(state, self.go, root_moves, self.res.cached_root_moves)
        return SearchResult(
            best,
            ponder,
            int(state.tree.nodes["n"][0]),
            self.tally.playouts,
            (time.monotonic() - self.go.start) * 1000.0,
            tuple(infos),
            self.kld is not None and self.kld.stopped,
        )

    def stats(self) -> SearchStats:
        """The run's counters as the reports read them."""
        return self.state.stats(self.go, self.tally)

    def _set_go(self, go: Go) -> None:
        """The run's terms with the root's added (before the loop: fixed from then on)."""
        self.go = self.worker.go = go

    def _infos(self) -> list[ThinkingInfo]:
        return make_infos(self.state, self.go, self.tally)

    def _elapsed_ms(self) -> float:
        """Milliseconds of this run by the search's clock (the stoppers' time)."""
        return self.state.clock.elapsed_ms(self.go.start, self.tally.playouts)

    def memory_bytes(self) -> int:
        """What the tree and the NN cache hold now."""
        return held_bytes(self.state.tree, self.res.cache.arrays)

    def _report_the_end(self) -> None:
        """Why the search stopped early, when it did: a failed network."""
        if self.on_verbose is not None and self.failure is not None:
            exc, nodes = self.failure, int(self.state.tree.nodes["n"][0])
            why = f"{type(exc).__name__}: {exc}; the search stopped at {nodes} nodes"
            self.on_verbose([f"error: network evaluation failed: {why}"])

    # ----------------------------------------------------------------------------- the threads
    def _search(self) -> None:
        """The search threads until the run is over (engine/search/threads.py); this thread
        watches them: the stop, the deadline (the threads may all be on the network) and the
        info lines."""
        threads = SearchThreads(
            self.res,
            self.worker,
            self._stoppers,
            self.go.limit.until_stop,
            self._above_nps_limit if np.float32(self.params.nps_limit) > 0.0 else None,
            self.outbox,
        )
        # The threads end the run themselves (a limit, a stop, a failure) at each iteration;
        # the watch is for the deadline while they all wait for the network, and the info lines.
        self.threads = threads
        threads.run(self._watch, WATCH_SLICE_S)
        self.failure = threads.failure

    def settle(self) -> None:
        """The batches on the network when the run ended, backed up (threads.py's LateBatches)."""
        if self.threads is not None:
            self.threads.late.settle()

    def _stoppers(self) -> tuple[bool, float, int]:
        """lc0's stoppers over the root (nodes lock held): (a limit is reached, the playouts
        expected to remain, the root's best edge)."""
        state, tally = self.state, self.tally
        summary = self._summary()
        self._note_first_playout()
        progress = cstop.Progress(
            self._elapsed_ms(),
            tally.playouts,
            tally.cum_depth,  # lc0's: the depth limit reads its average
            tally.batches,
            tally.first_eval_time,
            self.memory_bytes() if self.params.ram_limit_bytes > 0 else 0,
        )
        reached, remaining, tally.first_eval_time = cstop.limit_reached(
            self.go.limit, self.params, summary, progress, self.kld
        )
        reached = reached or self._time_stopper(progress.elapsed_ms)
        full = summary.visits >= self.params.max_tree_nodes or (
            0 < self.params.ram_limit_bytes <= progress.memory_bytes
        )
        if reached and full and not self.ram_limited:
            self.ram_limited = True
            held = self.memory_bytes()
            if self.on_verbose is not None:  # now: under go infinite the search goes on
                full_line = full_message(int(state.tree.nodes["n"][0]), self.params, held)
                self.outbox.put(self.on_verbose, [full_line])
        if reached and not self.go.limit.until_stop:
            self._ending = True  # the run's end sends the final report
        else:
            self._stalled = self._stalled or reached
            self._maybe_report(summary)
        return reached, remaining, summary.best

    def _above_nps_limit(self) -> bool:
        """Whether the search runs above NodesPerSecondLimit now; by the wall clock only: a
        replay's PlayoutClock is a pace already, which no wait changes."""
        if not isinstance(self.state.clock, WallClock):
            return False
        tally = self.tally
        return above_nps_limit(
            self._elapsed_ms(), tally.nps_start_ms, tally.playouts, self.params.nps_limit
        )

    def _watch(self) -> bool:
        """One look at the run (nodes lock held): False when it must end (a stop, the
        deadline); the info lines when due (lc0's watchdog thread)."""
        state = self.state
        if state.stop.is_set():
            return False
        elapsed = self._elapsed_ms()
        if cstop.time_up(self.go.limit, elapsed, int(state.tree.nodes["n"][0])):
            return False
        self._note_first_playout()
        if self._time_stopper(elapsed):
            return False
        self._maybe_report(self._summary())
        return True

    def _time_stopper(self, elapsed_ms: float) -> bool:
        """The time manager's own stopper (Resources.time_stopper, smooth's), as lc0 chains it
        with the other stoppers: asked before every minibatch and by the watching thread (lc0's
        watchdog), never in a run until stop."""
        stopper = self.res.time_stopper
        if stopper is None or self.go.limit.until_stop:
            return False
        first = self.tally.nps_start_ms
        return stopper(elapsed_ms, 0.0 if first is None else max(elapsed_ms - first, 0.0))

    # ----------------------------------------------------------------------------- info lines
    def _note_first_playout(self) -> None:
        """lc0's PopulateCommonIterationStats: the first look that finds a playout starts the
        clock of ``nps`` and ``eps`` (so they leave out the wait for the first batch)."""
        if self.tally.nps_start_ms is None and self.tally.playouts > 0:
            self.tally.nps_start_ms = self._elapsed_ms()

    def _maybe_report(self, summary: cstop.RootSummary) -> None:
        """lc0's MaybeOutputInfo, after every minibatch and at every look of the watching
        thread (nodes lock held): the info lines when the root has a best move and it, the
        average depth or the seldepth changed since the last report, or that report is
        INFO_HEARTBEAT_MS old; never once a limit is reached (the final report follows), but
        in a run until stop, where each line is followed by lc0's LIMIT_WARNING."""
        if self.on_info is None or self._ending:
            return
        if not summary.expanded or summary.best < 0 or summary.first_visits == 0:
            return  # no visited root move yet: lc0's current_best_edge_ is unset
        tally, last, elapsed = self.tally, self._queued, int(self._elapsed_ms())
        if (
            last is not None
            and (summary.best, tally.average_depth, tally.seldepth) == last[:3]
            and elapsed <= last[3] + INFO_HEARTBEAT_MS
        ):
            return
        self._queued = (summary.best, tally.average_depth, tally.seldepth, elapsed)
        # Made when sent, without the lock (engine/search/outbox.py): with one thread, before
        # its next gather, so from the tree lc0 would report.
        self.outbox.later(self.on_info, self._made_infos)
        if self.live_stats and self.on_verbose is not None:
            self.outbox.later(self.on_verbose, lambda: verbose_stats(self.state.snapshot()))
        if self._stalled and self.on_verbose is not None:
            self.outbox.put(self.on_verbose, [LIMIT_WARNING])  # lc0: after the line and its stats

    def _made_infos(self) -> list[ThinkingInfo]:
        """A report's lines from the tree as it is now (read without the nodes lock)."""
        infos = make_infos(self.state.snapshot(), self.go, self.tally)
        if infos:
            self._sent = infos[0]
        return infos

    # ----------------------------------------------------------------------------- helpers
    def _summary(self) -> cstop.RootSummary:
        state = self.state
        return cstop.summarize(state.tree, state.draw_score(0), self.go.mask)


def above_nps_limit(elapsed_ms: float, first_ms: float | None, playouts: int, limit: float) -> bool:
    """lc0's test after each minibatch under NodesPerSecondLimit (search.cc): the playouts over
    the whole milliseconds since the first playout was seen (``first_ms``), else since the
    start, in floats, above ``limit``; a search thread waits a millisecond while it is."""
    ms = int(elapsed_ms - first_ms) if first_ms is not None else 0
    if ms <= 0:
        ms = int(elapsed_ms)
    if ms <= 0:
        return playouts > 0  # lc0's x / 0: inf above any limit, 0 / 0 (NaN) not
    nps = np.float32(playouts) * np.float32(1e3) / np.float32(ms)
    return bool(nps > np.float32(limit))


def root_by_tablebase(
    state: SearchState, tablebase: Tablebase, params: SearchParams, go: Go, tally: Tally
) -> Go:
    """The run's terms with the root's moves limited to the tablebase's best (a tablebase hit),
    or as they are where the root is not in it."""
    probe = tablebase.root_moves(state.root_board.copy(), params.syzygy_fast_play)
    if probe is None:
        return go
    tally.counters[cbackup.TB_HITS] += 1
    allowed = frozenset(probe.moves)
    searchmoves = (go.searchmoves & allowed) or allowed
    return dataclasses.replace(go, root_in_tablebase=True, searchmoves=searchmoves)
