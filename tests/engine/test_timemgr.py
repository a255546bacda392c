"""Time management against lc0's legacy formulas computed by hand, and its safety cap."""

from __future__ import annotations

import pytest

from engine.search import Limit
from engine.timemgr import (LOW_CLOCK_INCREMENT_SHARE, MAX_CLOCK_SHARE, RESERVE_INCREMENTS,
                            LegacyParams, TimeManager, estimated_moves_to_go, parse_time_manager)

OVERHEAD = 200


def _lc0_moves_to_go(ply: int, midpoint: float = 51.5, steepness: float = 7.0) -> float:
    move = ply / 2
    return midpoint * (1 + 2 * (move / midpoint) ** steepness) ** (1 / steepness) - move


def _after_first_move(tm: TimeManager) -> TimeManager:
    tm.first_move_of_game = False
    return tm


def test_estimated_moves_to_go_is_lc0s_log_logistic_model():
    assert estimated_moves_to_go(0, 51.5, 7.0) == pytest.approx(51.5)
    for ply in (10, 60, 120, 200):
        assert estimated_moves_to_go(ply, 51.5, 7.0) == pytest.approx(_lc0_moves_to_go(ply))
    assert estimated_moves_to_go(200, 51.5, 7.0) < estimated_moves_to_go(60, 51.5, 7.0)


def test_clock_budget_is_remaining_time_plus_increments_over_moves_to_go():
    tm = _after_first_move(TimeManager(OVERHEAD))
    mtg = _lc0_moves_to_go(30)
    # lc0's formula, with RESERVE_INCREMENTS increments kept back from the remaining time
    expected = (60_000 - RESERVE_INCREMENTS * 1_000 + 1_000 * (mtg - 1) - OVERHEAD) / mtg
    got = tm.budget_ms(Limit(wtime=60_000, btime=1, winc=1_000, binc=0), black_to_move=False, game_ply=30)
    assert got == pytest.approx(expected)


def test_movestogo_replaces_the_estimate_when_smaller_and_movetime_keeps_overhead():
    tm = _after_first_move(TimeManager(OVERHEAD))
    got = tm.budget_ms(Limit(wtime=1, btime=30_000, movestogo=5), black_to_move=True, game_ply=30)
    assert got == pytest.approx((30_000 - OVERHEAD) / 5)
    assert TimeManager(OVERHEAD).budget_ms(Limit(movetime=1_000), False, 0) == 1_000 - OVERHEAD
    assert TimeManager(OVERHEAD).budget_ms(Limit(infinite=True, wtime=5_000), False, 0) is None


def test_first_move_bonus():
    params = LegacyParams()
    tm = TimeManager(OVERHEAD, params)
    got = tm.budget_ms(Limit(wtime=600_000, btime=600_000), black_to_move=False, game_ply=0)
    base = (600_000 - OVERHEAD) / _lc0_moves_to_go(0)
    assert got == pytest.approx(base * (1 + params.first_move_bonus))
    again = tm.budget_ms(Limit(wtime=600_000, btime=600_000), black_to_move=False, game_ply=0)
    assert again == pytest.approx(base)


def test_unused_time_is_banked_and_spent_on_the_next_move():
    tm = _after_first_move(TimeManager(OVERHEAD))
    go = Limit(wtime=300_000, btime=300_000)
    budget = tm.budget_ms(go, False, 40)
    tm.search_done(budget, used_ms=budget - 1_000)  # smart pruning stopped 1 s early
    mtg = _lc0_moves_to_go(40)
    expected = (300_000 - OVERHEAD - 1_000) / mtg + 1_000
    assert tm.budget_ms(go, False, 40) == pytest.approx(expected)


def test_no_move_plans_more_than_its_share_of_the_clock():
    """Banked time never drains the clock down to MoveOverheadMs in a single move."""
    tm = _after_first_move(TimeManager(OVERHEAD))
    tm.time_spared_ms = 60_000  # many pruned moves earlier
    got = tm.budget_ms(Limit(wtime=3_000, btime=3_000, winc=100, binc=100), False, 80)
    assert got == pytest.approx((3_000 - OVERHEAD) * MAX_CLOCK_SHARE)


def test_time_manager_spec_errors_name_the_key():
    assert parse_time_manager("legacy(slowmover=1.2,midpoint-move=40)").midpoint_move == 40
    with pytest.raises(ValueError, match="expected key=value"):
        parse_time_manager("legacy(speed=3)")
    with pytest.raises(ValueError, match="expected legacy"):
        parse_time_manager("smooth")


def test_low_clock_with_increment_spends_less_than_the_increment():
    """Near the reserve the clock must grow back: lc0's formula would settle at about
    MoveOverheadMs + increment, where latency beyond the plan drains it."""
    tm = _after_first_move(TimeManager(OVERHEAD))
    low = OVERHEAD + RESERVE_INCREMENTS * 100 - 1
    got = tm.budget_ms(Limit(wtime=low, btime=low, winc=100, binc=100), False, 120)
    assert got == pytest.approx(100 * LOW_CLOCK_INCREMENT_SHARE)
    clock = 10_000.0
    for ply in range(0, 400, 2):  # a long game: plan + 30 ms latency each move, 100 ms increment
        clock += 100 - tm.budget_ms(Limit(wtime=int(clock), btime=1, winc=100, binc=100), False, ply) - 30
    assert clock > OVERHEAD + 5 * 100


def test_a_go_line_reaches_search_and_time_manager_as_one_limit(monkeypatch):
    """The UCI parser makes one Limit; the search gets that same record with the time manager's
    budget (none while pondering), and ponderhit starts a second run (lc0's PonderHit re-issues
    Go) with the record with ponder off, the clock restarted and the budget computed from the
    same clock readings; the answer is that run's."""
    import dataclasses
    import io
    import threading
    import time

    import chess

    import engine.backends  # noqa: F401  (registers the random backend)
    from engine.search import Search, SearchResult
    from engine.uci import UciEngine

    runs: list[Limit] = []
    started = threading.Event()

    def run(self, limit, **kwargs):
        runs.append(limit)
        started.set()
        answer = "d7d5" if limit.ponder else "e7e5"
        return SearchResult(chess.Move.from_uci(answer), None, 0, 0, 0.0)

    monkeypatch.setattr(Search, "run", run)
    out = io.StringIO()
    uci = UciEngine(out, {"Backend": "random", "MoveOverheadMs": OVERHEAD})
    uci.handle("position startpos moves e2e4")
    before = time.monotonic()
    uci.handle("go ponder wtime -5 btime 30000 winc 100 binc 200 movestogo 20 nodes 500 depth 9 "
               "mate 3 searchmoves e7e5 d7d5")
    assert started.wait(10)
    limit = runs[0]
    assert limit == Limit(wtime=0, btime=30_000, winc=100, binc=200, movestogo=20, nodes=500,
                          depth=9, mate=3, ponder=True,
                          searchmoves=(chess.Move.from_uci("e7e5"), chess.Move.from_uci("d7d5")),
                          started_at=limit.started_at, budget_ms=None)
    assert before <= limit.started_at <= time.monotonic() and limit.until_stop
    assert "bestmove" not in out.getvalue()  # pondering: no answer before ponderhit
    uci.handle("ponderhit")
    uci.controller.wait(10)
    finite = dataclasses.replace(limit, ponder=False)
    budget = TimeManager(OVERHEAD).budget_ms(finite, black_to_move=True, game_ply=1)
    assert budget is not None and budget > 0
    hits = runs[1:]
    assert hits == [dataclasses.replace(finite, started_at=hits[0].started_at, budget_ms=budget,
                                        ceiling_ms=30_000 - OVERHEAD)]
    assert hits[0].started_at >= limit.started_at and not hits[0].until_stop
    assert out.getvalue().splitlines()[-1] == "bestmove e7e5"


def test_ceiling_is_the_movetime_or_the_side_to_moves_clock_less_the_overhead():
    tm = TimeManager(OVERHEAD)
    limit = Limit(movetime=900, wtime=500, btime=5_000)
    assert tm.ceiling_ms(limit, black_to_move=False) == 500 - OVERHEAD
    assert tm.ceiling_ms(limit, black_to_move=True) == 900 - OVERHEAD
    assert tm.ceiling_ms(Limit(movetime=900), black_to_move=True) == tm.budget_ms(
        Limit(movetime=900), black_to_move=True, game_ply=0)  # a movetime waits no longer
    assert tm.ceiling_ms(Limit(wtime=500, btime=5_000, ponder=True), black_to_move=False) is None
    assert tm.ceiling_ms(Limit(nodes=10), black_to_move=False) is None


def test_the_budget_waits_for_the_roots_first_evaluation_up_to_the_ceiling():
    from engine.search.core.stoppers import time_up

    limit = Limit(movetime=1_000, budget_ms=200.0, ceiling_ms=1_000.0)
    assert time_up(limit, 250.0, root_visits=1)
    assert not time_up(limit, 250.0, root_visits=0)
    assert time_up(limit, 1_000.0, root_visits=0)
    assert not time_up(Limit(infinite=True, budget_ms=200.0), 5_000.0, root_visits=1)


def test_ponderhit_banks_the_time_its_search_left_unused():
    """After ponderhit the search runs on the ponderhit's budget, and what it leaves unused goes
    to the time bank as after any go on the clock (lc0's piggy bank: its PonderHit re-issues Go,
    whose stopper banks on completion). A search of 50 nodes uses milliseconds of a budget of
    seconds: nearly all of it is banked."""
    import io

    import engine.backends  # noqa: F401  (registers the random backend)
    from engine.uci import UciEngine

    out = io.StringIO()
    uci = UciEngine(out, {"Backend": "random", "MoveOverheadMs": OVERHEAD})
    uci.handle("position startpos moves e2e4")
    uci.handle("go ponder wtime 60000 btime 60000 nodes 50")
    uci.handle("ponderhit")
    uci.controller.wait(10)
    assert out.getvalue().splitlines()[-1].startswith("bestmove ")
    budget = TimeManager(OVERHEAD).budget_ms(Limit(wtime=60_000, btime=60_000), True, 1)
    assert budget is not None and budget > 1_000
    spared = uci.controller.timemgr.time_spared_ms
    assert budget - 1_000 < spared <= budget, (spared, budget)
    uci.handle("quit")
