"""Time management as lc0's legacy time manager (src/search/classic/stoppers/legacy.cc).

The budget of a move is the remaining time plus the expected increments, minus MoveOverheadMs,
split over an estimate of the moves left in the game (a log-logistic model of game length, or
movestogo when it is smaller), with a bonus on the first move of a game and unused time carried
over ("piggy bank"). Two safety margins beyond lc0's: a move never plans more than half of
``time - MoveOverheadMs``, and with an increment ten increments stay in reserve (below that a move
plans half an increment, so the clock recovers). Smart pruning (in the
search) stops earlier when the best move cannot be overtaken.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.search.core.stoppers import SMART_PRUNING_TOLERANCE_MS  # lc0: slowmover only above it
from engine.search.limit import Limit

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


def parse_time_manager(spec: str) -> LegacyParams:
    """``legacy`` or ``legacy(slowmover=1.2,midpoint-move=40)``; ValueError names a bad key/value."""
    spec = spec.strip()
    match = re.fullmatch(r"legacy\s*(?:\((.*)\))?", spec)
    if not match:
        raise ValueError(f"TimeManager: expected legacy or legacy(key=value,...), got {spec!r}")
    values = {}
    names = {f.replace("_", "-"): f for f in LegacyParams.__dataclass_fields__}
    for part in filter(None, (p.strip() for p in (match.group(1) or "").split(","))):
        key, eq, text = part.partition("=")
        key = key.strip()
        if key not in names or not eq:
            raise ValueError(
                f"TimeManager: expected key=value with key in {sorted(names)}, got {part!r}"
            )
        try:
            values[names[key]] = float(text)
        except ValueError:
            raise ValueError(f"TimeManager: {key} expects a number, got {text!r}") from None
    return LegacyParams(**values)


def estimated_moves_to_go(ply: int, midpoint: float, steepness: float) -> float:
    """Median residual game length in moves at ``ply`` (lc0's ComputeEstimatedMovesToGo)."""
    move = ply / 2.0
    return midpoint * (1 + 2 * (move / midpoint) ** steepness) ** (1 / steepness) - move


class TimeManager:
    """Keeps state across the moves of a game (first move bonus, spared time)."""

    def __init__(self, move_overhead_ms: int, params: LegacyParams | None = None) -> None:
        self.move_overhead_ms = move_overhead_ms
        self.params = params or LegacyParams()
        self.first_move_of_game = True
        self.time_spared_ms = 0.0

    def new_game(self) -> None:
        self.first_move_of_game = True
        self.time_spared_ms = 0.0

    def budget_ms(self, go: Limit, black_to_move: bool, game_ply: int) -> float | None:
        """Time for this move in ms from the start of the search; None when not time-limited.

        ``movetime`` gives movetime - MoveOverheadMs (as lc0); clock times use the legacy formula.
        """
        limits = []
        if go.movetime is not None:
            limits.append(max(MIN_BUDGET_MS, go.movetime - self.move_overhead_ms))
        clock = self._clock_budget(go, black_to_move, game_ply)
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

    def _clock_budget(self, go: Limit, black: bool, ply: int) -> float | None:
        time_left = go.btime if black else go.wtime
        if go.until_stop or time_left is None:
            return None
        p = self.params
        inc = max(0, (go.binc if black else go.winc) or 0)
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

    def search_done(self, budget_ms: float | None, used_ms: float) -> None:
        """Bank the unused part of a clock budget (lc0's LegacyStopper::OnSearchDone)."""
        if budget_ms is not None:
            self.time_spared_ms += budget_ms - used_ms
