"""Time management as lc0's time managers (src/search/classic/stoppers/): ``legacy`` (the
default), ``smooth``, ``alphazero`` and ``simple``, chosen and tuned by the ``TimeManager``
option in lc0's syntax (``smooth(init-piggybank=0.1,mle-legacy(midpoint=50))``).

``legacy`` (legacy.cc): the remaining time plus the expected increments, minus MoveOverheadMs,
split over an estimate of the moves left in the game (a log-logistic model of game length, or
movestogo when it is smaller), with a bonus on the first move of a game and unused time carried
over ("piggy bank"). Two safety margins beyond lc0's: a move never plans more than half of
``time - MoveOverheadMs``, and with an increment ten increments stay in reserve (below that a move
plans half an increment, so the clock recovers).

``smooth`` (smooth.cc, :mod:`engine.timemgr_smooth`), ``alphazero`` (alphazero.cc: a fixed share
of the clock) and ``simple`` (simple.cc) as lc0's, without the extra margins. Smart pruning (in
the search) stops earlier when the best move cannot be overtaken.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import chess

from engine.search.core.stoppers import SMART_PRUNING_TOLERANCE_MS  # lc0: slowmover only above it
from engine.search.limit import Limit
from engine.timemgr_smooth import SmoothManager, SmoothParams
from engine.timemgr_spec import Spec, parse_spec

MIN_BUDGET_MS = 1.0

RESERVE_INCREMENTS = 10
"""With an increment, the clock keeps this many increments in reserve beyond MoveOverheadMs.
lc0's formula lets the clock settle at about MoveOverheadMs + increment, where each move's latency
beyond its plan drains it and one hiccup loses on time (seen at 10+0.1 under load)."""

LOW_CLOCK_INCREMENT_SHARE = 0.5
"""Below the reserve, a move plans this share of the increment, so the clock grows back."""

MAX_CLOCK_SHARE = 0.5
"""No single move plans more than this share of the clock left after MoveOverheadMs. lc0's legacy
manager may spend all banked time at once, up to time - MoveOverheadMs; a Python engine's latency
outside the search (thread wake-ups and stop latency when the CPU is busy) needs more slack than
that, or one long move after several pruned ones can lose on time."""


@dataclass(frozen=True)
class LegacyParams:
    """Parameters of lc0's legacy time manager (TimeManager=legacy(key=value,…))."""

    slowmover: float = 1.0
    midpoint_move: float = 51.5
    steepness: float = 7.0
    immediate_use: float = 1.0
    first_move_bonus: float = 1.8
    book_ply_bonus: float = 0.25


@dataclass(frozen=True)
class AlphazeroParams:
    """lc0's alphazero time manager: each move gets ``alphazero-time-pct`` % of the clock
    (less MoveOverheadMs); no increment, no game-length model."""

    alphazero_time_pct: float = 12.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.alphazero_time_pct <= 100.0:
            raise ValueError("TimeManager: alphazero-time-pct value to be in range [0.0, 100.0]")


@dataclass(frozen=True)
class SimpleParams:
    """lc0's simple time manager: a percentage of the clock that grows with the ply and the
    increment's share of the clock, plus what smart pruning saved on the previous move."""

    base_pct: float = 1.4
    ply_pct: float = 0.049
    time_factor: float = 1.5
    opening_bonus_pct: float = 0.0

    def __post_init__(self) -> None:
        for key, low, high, value in (
            ("base-pct", 0.0, 100.0, self.base_pct),
            ("ply-pct", 0.0, 1.0, self.ply_pct),
            ("time-factor", 0.0, 100.0, self.time_factor),
            ("opening-bonus-pct", 0.0, 1000.0, self.opening_bonus_pct),
        ):
            if not low <= value <= high or (key == "base-pct" and value <= 0.0):
                raise ValueError(f"TimeManager: {key} value to be in range [{low}, {high}]")


TimeManagerParams = LegacyParams | SmoothParams | AlphazeroParams | SimpleParams

MANAGERS: dict[str, type] = {
    "legacy": LegacyParams,
    "smooth": SmoothParams,
    "alphazero": AlphazeroParams,
    "simple": SimpleParams,
}
"""lc0's time managers by the name its TimeManager option takes (factory.cc)."""

INT_KEYS = {"trend-nps-update-period-ms", "force-piggybank-ms"}
"""Keys lc0 reads as integers; every other key is a number (lc0: a float)."""


def parse_time_manager(spec: str) -> TimeManagerParams:
    """lc0's TimeManager string, ``NAME`` or ``NAME(key=value,…)`` (smooth also takes
    ``mle-legacy(midpoint=…,steepness=…)``); ValueError names a bad name, key or value and what
    is allowed."""
    name, values, subdicts = parse_spec(spec)
    if name not in MANAGERS:
        raise ValueError(
            f"TimeManager: unknown time manager {name!r}; expected one of {sorted(MANAGERS)}, "
            "optionally with (key=value,...)"
        )
    cls = MANAGERS[name]
    fields = {f.name.replace("_", "-"): f.name for f in dataclasses.fields(cls)}
    allowed = sorted(fields) + (["mle-legacy(midpoint=,steepness=)"] if name == "smooth" else [])
    if name == "smooth" and "mle-legacy" in subdicts:
        mle = subdicts.pop("mle-legacy")
        for key in mle:
            if key not in ("midpoint", "steepness"):
                raise ValueError(
                    f"TimeManager: unknown key {key!r} in smooth's mle-legacy(...); "
                    "expected midpoint or steepness"
                )
            if key in values:  # lc0 reads mle-legacy's and refuses the unread one
                raise ValueError(
                    f"TimeManager: smooth's {key} given both in and outside mle-legacy"
                )
        values = {**values, **mle}  # as lc0: mle-legacy's subdict is read, not the top keys
    if subdicts:
        raise ValueError(
            f"TimeManager: unexpected {sorted(subdicts)[0]}(...) in {name}; "
            f"expected key=value with key in {allowed}"
        )
    kwargs = {}
    for key, value in values.items():
        if key not in fields:
            raise ValueError(
                f"TimeManager: unknown key {key!r} for {name}; "
                f"expected key=value with key in {allowed}"
            )
        kwargs[fields[key]] = _number(name, key, value)
    return cls(**kwargs)


def _number(name: str, key: str, value: Spec) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"TimeManager: {name}'s {key} expects a number, got {value!r}")
    if key in INT_KEYS and not isinstance(value, int):
        raise ValueError(f"TimeManager: {name}'s {key} expects an integer, got {value!r}")
    return value


def estimated_moves_to_go(ply: int, midpoint: float, steepness: float) -> float:
    """Median residual game length in moves at ``ply`` (lc0's ComputeEstimatedMovesToGo)."""
    move = ply / 2.0
    return midpoint * (1 + 2 * (move / midpoint) ** steepness) ** (1 / steepness) - move


class TimeManager:
    """Keeps state across the moves of a game: legacy's first move bonus and spared time,
    simple's previous budget, smooth's estimates (:class:`SmoothManager`)."""

    def __init__(self, move_overhead_ms: int, params: TimeManagerParams | None = None) -> None:
        self.move_overhead_ms = move_overhead_ms
        self._params: TimeManagerParams = params or LegacyParams()
        self.first_move_of_game = True
        self.time_spared_ms = 0.0
        self.smooth: SmoothManager | None = None
        self._simple_prev: tuple[float, float] = (0.0, 0.0)
        self._game: tuple[str, list] | None = None
        self.smooth_plan: tuple[float, float] | None = None
        """smooth: the (deadline, piggy bank share) of the last budget; None after one without
        (the controller's :class:`engine.timemgr_watch.SmoothWatch` extends a move by it)."""
        self.new_game()

    @property
    def params(self) -> TimeManagerParams:
        return self._params

    @params.setter
    def params(self, params: TimeManagerParams) -> None:
        """A changed manager or parameter starts its state afresh (lc0 makes a new manager)."""
        if params != self._params:
            self._params = params
            self.new_game()

    def new_game(self) -> None:
        """lc0 makes a new time manager at ucinewgame and at a position of another game."""
        self.first_move_of_game = True
        self.time_spared_ms = 0.0
        self._simple_prev = (0.0, 0.0)
        self.smooth_plan = None
        p = self._params
        self.smooth = (
            SmoothManager(p, self.move_overhead_ms) if isinstance(p, SmoothParams) else None
        )

    def set_game(self, start_fen: str, moves: list) -> None:
        """The game of the next search: a position that does not continue the previous one's
        game starts smooth's, alphazero's and simple's state afresh, as lc0 makes a new time
        manager then (classic/wrapper.cc SetPosition); legacy's state stays, as before."""
        same = (
            self._game is not None
            and start_fen == self._game[0]
            and moves[: len(self._game[1])] == self._game[1]
        )
        if not same and not isinstance(self._params, LegacyParams):
            self.new_game()
        self._game = (start_fen, list(moves))

    def game_ply_for(self, board: chess.Board) -> int:
        """The game ply every manager reads: lc0's ``Position::GetGamePly``, which since v0.33
        starts from the FEN's full-move number (``Position::FromFen`` passes ChessBoard::SetFromFen
        its ply count to hold the full-move number: 1 at the start position, where the board's
        ply is 0) plus one a move played (``Position(parent, move)``). legacy's first-move bonus
        at the start position is then lc0's 1 + 1.8 + 0.25 x 1 = 3.05x."""
        return board.root().fullmove_number + len(board.move_stack)

    def budget_ms(
        self, go: Limit, black_to_move: bool, game_ply: int, root_visits: int = 0
    ) -> float | None:
        """Time for this move in ms from the start of the search; None when not time-limited.

        ``movetime`` gives movetime - MoveOverheadMs (as lc0); clock times the manager's
        formula. ``root_visits``: the visits the search starts with (smooth's tree reuse).
        """
        limits = []
        self.smooth_plan = None
        if go.movetime is not None:
            limits.append(max(MIN_BUDGET_MS, go.movetime - self.move_overhead_ms))
        clock = self._clock_budget(go, black_to_move, game_ply, root_visits)
        if clock is not None:
            limits.append(clock)
        return min(limits) if limits else None

    def ceiling_ms(self, go: Limit, black_to_move: bool) -> float | None:
        """The most time the go line allows at all: its movetime or the side's clock, less
        MoveOverheadMs (the lag the user expects: past it the move arrives late); None: no time
        limit. The stoppers wait at least the budget whatever it says: a movetime's ceiling is
        its budget."""
        limits = [go.movetime] if go.movetime is not None else []
        time_left = go.btime if black_to_move else go.wtime
        if time_left is not None and not go.until_stop:
            limits.append(time_left)
        if not limits:
            return None
        return float(max(MIN_BUDGET_MS, min(limits) - self.move_overhead_ms))

    def _clock_budget(self, go: Limit, black: bool, ply: int, root_visits: int) -> float | None:
        time_left = go.btime if black else go.wtime
        if go.until_stop or time_left is None:
            return None
        inc = max(0, (go.binc if black else go.winc) or 0)
        p = self._params
        if isinstance(p, AlphazeroParams):
            # lc0: a TimeLimitStopper of int64(that float), with no floor
            return max(
                MIN_BUDGET_MS,
                float(int((time_left - self.move_overhead_ms) * (p.alphazero_time_pct / 100.0))),
            )
        if isinstance(p, SimpleParams):
            return self._simple_budget(p, time_left, inc, ply)
        if isinstance(p, SmoothParams):
            assert self.smooth is not None
            self.smooth.move_overhead_ms = self.move_overhead_ms
            deadline, spare = self.smooth.plan(time_left, inc, go.movestogo, ply, root_visits)
            self.smooth_plan = (float(deadline), float(spare))
            # the most it may take: the controller's SmoothWatch stops it at the deadline
            # unless the piggy bank is wanted (engine/timemgr_watch.py)
            return max(MIN_BUDGET_MS, float(deadline + spare))
        return self._legacy_budget(p, go, time_left, inc, ply)

    def _legacy_budget(
        self, p: LegacyParams, go: Limit, time_left: int, inc: int, ply: int
    ) -> float:
        movestogo = estimated_moves_to_go(ply, p.midpoint_move, p.steepness)
        if go.movestogo is not None and 0 < go.movestogo < movestogo:
            movestogo = go.movestogo
        usable = time_left - self.move_overhead_ms - RESERVE_INCREMENTS * inc
        if inc > 0 and usable <= 0:
            cap = (time_left - self.move_overhead_ms) * MAX_CLOCK_SHARE
            return max(MIN_BUDGET_MS, min(inc * LOW_CLOCK_INCREMENT_SHARE, cap))
        total = max(0.0, usable + inc * (movestogo - 1))
        squander = 0.0
        if self.time_spared_ms > 0:
            total = max(0.0, total - self.time_spared_ms)
            squander = self.time_spared_ms * p.immediate_use
            self.time_spared_ms -= squander
        this_move = total / movestogo
        if self.first_move_of_game:
            this_move *= 1.0 + p.first_move_bonus + p.book_ply_bonus * min(12, ply)
            self.first_move_of_game = False
        if p.slowmover < 1.0 or this_move * p.slowmover > SMART_PRUNING_TOLERANCE_MS:
            self.time_spared_ms -= this_move * (p.slowmover - 1)
            this_move *= p.slowmover
        this_move += squander
        cap = (time_left - self.move_overhead_ms) * MAX_CLOCK_SHARE
        return max(MIN_BUDGET_MS, min(this_move, cap))

    def _simple_budget(self, p: SimpleParams, time_left: int, inc: int, ply: int) -> float:
        """lc0's SimpleTimeManager::GetStopper."""
        available = float(time_left - self.move_overhead_ms)
        pct = (p.base_pct + ply * p.ply_pct) * 0.01 + (
            inc / time_left if time_left else 0.0
        ) * p.time_factor
        budget = available * pct
        if self.first_move_of_game:
            budget += budget * p.opening_bonus_pct * 0.01
            self.first_move_of_game = False
        prev_budget, prev_available = self._simple_prev
        if prev_budget > 0.0:
            budget += max(prev_budget - (prev_available - (available - inc)), 0.0)
        budget = min(budget, available)
        self._simple_prev = (budget, available)
        return max(MIN_BUDGET_MS, budget)

    def search_done(
        self,
        budget_ms: float | None,
        used_ms: float,
        nodes: int = 0,
        playouts: int = 0,
        search_ms: float | None = None,
        used_piggybank: bool = False,
    ) -> None:
        """After a search on the clock: legacy banks the unused part of the budget (lc0's
        LegacyStopper::OnSearchDone); smooth updates its estimates from the move's time, the
        root's final visits (``nodes``), the ``playouts`` it added in ``search_ms``, and whether
        it searched past its deadline on the piggy bank (``used_piggybank``)."""
        if budget_ms is None:
            return
        if isinstance(self._params, SmoothParams) and self.smooth is not None:
            if self.smooth_plan is not None:
                deadline = self.smooth_plan[0]
                self.smooth.done(
                    used_ms,
                    deadline,
                    nodes,
                    playouts,
                    used_ms if search_ms is None else search_ms,
                    used_piggybank,
                )
            return
        if isinstance(self._params, LegacyParams):
            self.time_spared_ms += budget_ms - used_ms
