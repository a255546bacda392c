"""The engine behind the UCI loop: the network, NN cache, tree, tablebases, time manager and
the search thread, driven by option values and the commands' meaning (lc0's EngineController).
It decides when to load what the options name and what a change drops; the loading itself, and
what it tells the user, is :mod:`engine.loading`'s.

It never prints: what it has to say goes to a :class:`Listener` (the UCI layer, which formats
it). Every ``go`` gets exactly one ``bestmove`` callback: a legal move, or None without a legal
move or without a network. A network that cannot be loaded is never played around: each ``go``
reports ``no network loaded: …`` and answers None, which a GUI shows as the engine's failure
instead of silently weak moves.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import chess

from engine import options as opts
from engine.backend import Network
from engine.loading import (
    NETWORK_OPTIONS,
    NetworkLoadError,
    Reporter,
    load_named_network,
    log_time,
    network_key,
    open_syzygy,
    warm_up_search,
)
from engine.search import (
    Limit,
    NNCache,
    Search,
    SearchParams,
    SearchResult,
    ThinkingInfo,
    from_options,
    stop_reason,
    verbose_stats,
)
from engine.search.contempt import INFINITE_CONTEMPT_WARNING, PLAY, contempt_of
from engine.startup import collector
from engine.tablebase import Tablebase
from engine.timemgr import TimeManager, parse_time_manager
from engine.timemgr_smooth import SmoothParams
from engine.timemgr_watch import SmoothWatch


class Listener(Reporter, Protocol):
    """Where the controller's output goes (the UCI layer)."""

    def infos(self, board: chess.Board, infos: list[ThinkingInfo]) -> None:
        """Search progress from the position ``board``."""

    def bestmove(
        self, board: chess.Board, best: chess.Move | None, ponder: chess.Move | None
    ) -> None:
        """The answer to a ``go``: a legal move (None: no legal move or no network) and the
        reply expected to it, if any (the search's; shown only where legal after ``best``)."""


class GoSignals:
    """What the UCI thread tells a running ``go``, and the limit in force: the go's, then the
    ponderhit's (the one place it lives). The UCI thread writes (:meth:`stop`,
    :meth:`ponderhit`), the search thread reads (:meth:`next_limit`), under one lock; each
    write also halts the running search (``halt``) under that lock, so that a stop is never
    lost between a ponder run's end and the ponderhit's run."""

    def __init__(self, limit: Limit, halt: Callable[[], None]) -> None:
        self.limit = limit
        self._halt = halt
        self._stopped = False
        self._lock = threading.Lock()
        self._changed = threading.Event()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            self._halt()
            self._changed.set()

    @property
    def stopped(self) -> bool:
        """Whether the go was stopped (the stop command, or a command that ends it first)."""
        with self._lock:
            return self._stopped

    def ponderhit(self, make_limit: Callable[[Limit], Limit]) -> None:
        """A ponder search becomes a normal one: the limit ``make_limit`` makes of the ponder
        limit; the ponder run is halted and the search thread starts a run of it (lc0's
        ``PonderHit`` re-issues ``Go``). Nothing after a stop, or when not pondering."""
        with self._lock:
            if self._stopped or not self.limit.ponder:
                return
            self.limit = make_limit(self.limit)
            self._halt()
            self._changed.set()

    def next_limit(self, ran: Limit, rearm: Callable[[], None]) -> Limit | None:
        """After a run of ``ran``: the limit of the next run (a ponderhit's; ``rearm`` has made
        the search ready for it), or None: answer now. With ``ran`` infinite or pondering, waits
        for the stop or the ponderhit (UCI: no bestmove before either)."""
        while True:
            with self._lock:
                if self._stopped:
                    return None
                if self.limit is not ran:
                    rearm()
                    return self.limit
                if not ran.until_stop:
                    return None
                self._changed.clear()
            self._changed.wait()


class Controller:
    """One engine session's state; every method is called from the UCI thread."""

    def __init__(self, listener: Listener, values: Mapping[str, Any] | None = None) -> None:
        self.listener = listener
        self.values: dict[str, Any] = opts.defaults()
        self.values.update(values or {})
        self.network: Network | None = None
        self._network_key: tuple | None = None
        self._load_error: str | None = None  # why the last load failed, repeated at each go
        self.search: Search | None = None
        self.tablebase: Tablebase | None = None
        self._tablebase_path = ""
        self.cache = NNCache(int(self.values["NNCacheSize"]))
        self.board = chess.Board()
        self.timemgr = TimeManager(int(self.values["MoveOverheadMs"]))
        self._thread: threading.Thread | None = None
        self._bestmove_sent = threading.Event()
        self._clear_tree = False
        """ClearTree was pressed since the last go."""
        self._go: GoSignals | None = None
        """The running (or last) go's signals and limit in force."""

    # ------------------------------------------------------------------------------ commands
    def set_option(self, name: str, value: Any) -> None:
        """Store a parsed option value and apply what it changes at once."""
        if name == "TimeManager":
            parse_time_manager(value)  # a bad spec raises before anything changes
        elif name == "Contempt":
            contempt_of("", value, 0.0)  # a malformed entry raises, as lc0's at its search
        elif name == "ClearTree":  # a button: pressed for the next search, not a value
            self._clear_tree = True
            return
        self.values[name] = value
        if name in NETWORK_OPTIONS:
            self._drop_network()
        elif name == "NNCacheSize":
            self.cache.resize(int(value))
        elif name == "SyzygyPath":
            self.ensure_tablebase()

    def ready(self) -> None:
        """isready: load what the options name, unless a search is running, and make the
        compiled search ready (compiled, or loaded from numba's cache): never inside a go."""
        if not self.searching:
            ok = self.ensure_network()
            self.ensure_tablebase()
            if ok:
                prepare_network(self.network, from_options(self.values), self.listener)
            warm_up_search(self.listener)
            if ok:
                # The search's tree, game and workers now, not in the first go's time.
                self._search_for(from_options(self.values))

    def new_game(self) -> None:
        self.stop_and_join()
        if self.search is not None:
            self.search.clear()
        self.cache.clear()
        self.timemgr.new_game()
        self.board = chess.Board(chess960=bool(self.values["UCI_Chess960"]))

    def set_position(self, board: chess.Board) -> None:
        self.listener.log("Setting a new search position.")  # lc0's engine.cc
        self.board = board

    def go(self, limit: Limit) -> None:
        """Start a search on its own thread; its clock runs from ``limit.started_at`` (when the
        go line arrived)."""
        if self.searching:
            self.listener.error("go: a search is already running; stopping it first")
            self.stop_and_join()
        self._bestmove_sent.clear()
        self.timemgr.move_overhead_ms = int(self.values["MoveOverheadMs"])
        try:
            self.timemgr.params = parse_time_manager(self.values["TimeManager"])
        except ValueError as exc:  # set on the command line: reported, the previous one stays
            self.listener.error(str(exc))
        board = self.board.copy()
        self.timemgr.set_game(board.root().fen(), board.move_stack)
        ok = self.ensure_network()
        search = None
        if ok:
            params = from_options(self.values)
            self.ensure_tablebase()
            search = self._search_for(params)
            prepare_network(self.network, params, self.listener)
            self.cache.resize(params.nn_cache_size)
            if self._clear_tree:  # lc0's ClearTree: the tree goes, the NN cache stays
                search.clear_tree()
                self._clear_tree = False
            # Here, not on the search thread: a stop that arrives from now on ends this search.
            search.set_position(board)
            if limit.infinite and params.contempt_mode == PLAY and params.wdl_rescale.diff:
                self.listener.message(INFINITE_CONTEMPT_WARNING)
            _log_start(self.listener, limit)
        halt = search.stop if search is not None else _nothing
        self._go = signals = GoSignals(self._with_budget(limit), halt)
        self._thread = threading.Thread(
            target=self._search_and_answer,
            name="search",
            daemon=True,
            args=(board, signals, search),
        )
        self._thread.start()

    def stop(self) -> None:
        if self._go is not None:
            self._go.stop()
        elif self.search is not None:
            self.search.stop()

    def ponderhit(self, arrived_at: float) -> None:
        if not self.searching or self._go is None:
            return

        def on_the_clock(ponder: Limit) -> Limit:
            finite = dataclasses.replace(ponder, ponder=False, started_at=arrived_at)
            return self._with_budget(finite)

        self._go.ponderhit(on_the_clock)

    # ------------------------------------------------------------------------------ state
    @property
    def searching(self) -> bool:
        """A search whose bestmove is not sent yet (a finished thread may still be exiting)."""
        if self._thread is None:
            return False
        if self._bestmove_sent.is_set():
            self._thread.join()
            self._thread = None
            return False
        return self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> None:
        """Wait until the running search has answered (tests, quit)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def stop_and_join(self) -> None:
        if self.searching and self._thread is not None:
            self.listener.log("Aborting search, if it is still active.")  # lc0's search.cc
            self.stop()
            self._thread.join()
            self._thread = None

    def _drop_network(self) -> None:
        """Forget the network with everything computed by it: the tree and the NN cache."""
        self.stop_and_join()
        if self.search is not None:
            self.search.close()
        self.network = None
        self.search = None
        self._network_key = None
        self.cache.clear()
        collector.unfreeze()  # what the dropped network left in reference cycles can be collected

    def ensure_network(self) -> bool:
        """Load the network named by the options if needed; report failures to the listener."""
        key = network_key(self.values)
        if self.network is not None and key == self._network_key:
            return True
        self._drop_network()
        try:
            self.network = load_named_network(self.values, self.listener)
        except NetworkLoadError as exc:
            self._load_error = str(exc)
            self.listener.error(self._load_error)
            return False
        self._network_key = key
        self._load_error = None
        # What start-up and the load made leaves the collector's generations (the start-up's
        # collector policy: engine/startup/collector.py).
        collector.freeze()
        return True

    def ensure_tablebase(self) -> None:
        """Open the Syzygy tables of SyzygyPath if it changed; a bad path is reported and the
        engine goes on without tables."""
        path = str(self.values["SyzygyPath"])
        if path == self._tablebase_path:
            return
        self.stop_and_join()
        if self.tablebase is not None:
            self.tablebase.close()
        self.tablebase, self._tablebase_path = None, path
        self.tablebase = open_syzygy(path, self.listener)

    # ------------------------------------------------------------------------------ search
    def _search_for(self, params: SearchParams) -> Search:
        """The search (the one place it is made) over the loaded network, with ``params`` and
        the open tablebases."""
        assert self.network is not None  # ensure_network() loaded it
        if self.search is None:
            self.search = Search(self.network, params, self.cache, self.tablebase)
        self.search.params = params
        self.search.tablebase = self.tablebase
        return self.search

    def _with_budget(self, limit: Limit) -> Limit:
        """``limit`` with the time manager's budget for the position to search."""
        black = self.board.turn == chess.BLACK
        visits = int(self.search.state.tree.nodes["n"][0]) if self.search is not None else 0
        ply = self.timemgr.game_ply_for(self.board)
        budget = self.timemgr.budget_ms(limit, black, ply, root_visits=visits)
        ceiling = self.timemgr.ceiling_ms(limit, black)
        return dataclasses.replace(limit, budget_ms=budget, ceiling_ms=ceiling)

    def _search_and_answer(
        self, board: chess.Board, signals: GoSignals, search: Search | None
    ) -> None:
        """The search thread of one go: a run of the go's limit, then one of each ponderhit's,
        then exactly one bestmove."""
        best = ponder = None
        listener = self.listener
        ran = signals.limit
        legal = any(board.legal_moves)
        if search is None:
            listener.error(
                f"no network loaded: {self._load_error}; set WeightsFile (and "
                "Backend, BackendOptions) to a network that loads"
            )
        limit: Limit | None = ran
        result: SearchResult | None = None
        watch: SmoothWatch | None = None
        while limit is not None:
            ran = limit
            if search is not None and legal:
                watch = watch or _smooth_watch(self.timemgr, search, ran)
                best, ponder, result = _run(search, board, ran, listener, self.values)
                _log_stop(listener, search, ran, result, signals)
            limit = signals.next_limit(ran, search.rearm if search is not None else _nothing)
        if watch is not None:
            watch.close()
        if search is None:
            best = ponder = None  # bestmove 0000: a GUI must not take this for play
        elif best is None or best not in board.legal_moves:
            best, ponder = next(iter(board.legal_moves), None), None
        if search is not None and not ran.until_stop and ran.movetime is None:
            _search_done(self.timemgr, ran, result, watch)
        _log_move_stats(listener, search, result, self.values, best)
        self._bestmove_sent.set()  # the thread only sends this answer and exits
        try:
            listener.bestmove(board, best, ponder)
        finally:
            if search is not None:
                search.settle()  # the batches left on the network, into the tree (lc0's)


def _smooth_watch(timemgr: TimeManager, search: Search, ran: Limit) -> SmoothWatch | None:
    """smooth's reading of the root for a run on its clock budget (lc0's SmoothStopper)."""
    plan, params = timemgr.smooth_plan, timemgr.params
    if plan is None or ran.until_stop or ran.started_at is None:
        return None
    assert isinstance(params, SmoothParams)
    return SmoothWatch(search, params, plan[0], plan[1])


def _search_done(
    timemgr: TimeManager, ran: Limit, result: SearchResult | None, watch: SmoothWatch | None
) -> None:
    """The clock's budget less the time the last run took (lc0's piggy bank); a ponder go counts
    from its ponderhit, with the ponderhit's budget. smooth also learns the run's visits and
    whether it searched on the bank."""
    started = ran.started_at if ran.started_at is not None else time.monotonic()
    timemgr.search_done(
        ran.budget_ms,
        (time.monotonic() - started) * 1000.0,
        nodes=result.nodes if result is not None else 0,
        playouts=result.playouts if result is not None else 0,
        search_ms=result.time_ms if result is not None else None,
        used_piggybank=watch is not None and watch.used_piggybank,
    )


def _run(
    search: Search, board: chess.Board, limit: Limit, listener: Listener, values: Mapping[str, Any]
) -> tuple[chess.Move | None, chess.Move | None, SearchResult | None]:
    """One run of ``limit`` from ``board``, its reports to ``listener``: its bestmove, ponder
    move and result (None, None, None when it failed)."""

    def on_verbose(lines: list[str]) -> None:
        for line in lines:
            listener.message(line)

    try:
        result = search.run(
            limit,
            on_info=lambda infos: listener.infos(board, infos),
            on_verbose=on_verbose,
            verbose=bool(values["VerboseMoveStats"]),
            live_stats=bool(values["LogLiveStats"]),
            settle=False,  # after the bestmove
        )
    except Exception as exc:
        listener.error(f"search failed: {type(exc).__name__}: {exc}")
        return None, None, None
    return result.bestmove, result.ponder, result


def _log_start(listener: Listener, limit: Limit) -> None:
    """lc0's lines at a go's start: the time its clock runs from (the go line's arrival) and
    the time gone by before the search starts."""
    now = time.monotonic()
    arrived = limit.started_at if limit.started_at is not None else now
    listener.log(f"Timer started at {log_time(time.time() - (now - arrived))}")
    listener.log(f"Search started. {int((now - arrived) * 1000)}ms already passed.")


def _log_stop(
    listener: Listener, search: Search, ran: Limit, result: SearchResult | None, go: GoSignals
) -> None:
    """Why a run stopped, as lc0's stoppers log it (a stop command logged itself): with a log
    open only."""
    if result is None or go.stopped or not listener.logging:
        return
    reason = stop_reason(search.state, ran, result)
    if reason is not None:
        listener.log(reason)


def _log_move_stats(
    listener: Listener,
    search: Search | None,
    result: SearchResult | None,
    values: Mapping[str, Any],
    best: chess.Move | None,
) -> None:
    """lc0's move stats at the end of a search (SendMovesStats), with a log open only (they
    cost): the root's VerboseMoveStats lines in the log (with VerboseMoveStats they were its
    ``info string`` lines instead), then, whatever VerboseMoveStats, the stats of the node
    after the move played, the opponent's replies."""
    if search is None or result is None or not listener.logging:
        return
    if not values["VerboseMoveStats"]:
        lines = verbose_stats(search.state)
        if lines:
            listener.log("=== Move stats:")
            for line in lines:
                listener.log(line)
    if best is not None:
        opponent = verbose_stats(search.state, (best,))
        if opponent:
            listener.log(f"--- Opponent moves after: {best.uci()}")
            for line in opponent:
                listener.log(line)


def _nothing() -> None:
    """No search to halt or rearm (no network: the go only answers 0000)."""


def prepare_network(network: Network | None, params: SearchParams, listener: Listener) -> None:
    """Tell a network that can prepare (its attributes' ``prepare``) the batch the search will
    gather: a compiled size for a MinibatchSize above the backend's own starts now, in the
    background, not at the first batch that needs it."""
    if network is None:
        return
    attrs = network.attributes()
    if attrs.prepare is None:
        return
    try:
        attrs.prepare(params.batch_size(attrs.max_batch, attrs.preferred_batch))
    except Exception as exc:  # a background compile's failure: the go reports it too
        listener.error(f"network: {exc}")
