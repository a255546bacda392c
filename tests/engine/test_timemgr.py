"""Time management against lc0's legacy formulas computed by hand, and its safety cap."""

from __future__ import annotations

import re

import pytest

from engine.search import Limit
from engine.timemgr import (LOW_CLOCK_INCREMENT_SHARE, MAX_CLOCK_SHARE, RESERVE_INCREMENTS,
                            AlphazeroParams, LegacyParams, SimpleParams, TimeManager,
                            estimated_moves_to_go, parse_time_manager)
from engine.timemgr_smooth import SmoothManager, SmoothParams

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


def test_every_manager_reads_lc0s_game_ply():
    """lc0 v0.33's Position::GetGamePly: the FEN's full-move number (ChessBoard::SetFromFen
    writes it into the ply count), plus one a move played: 31 here, where the board's ply is
    60."""
    import chess

    board = chess.Board("8/8/8/4k3/8/8/4K3/8 b - - 0 30")
    board.push_uci("e5d5")
    assert board.ply() == 60
    for spec in ("legacy", "smooth", "alphazero", "simple"):
        assert TimeManager(OVERHEAD, parse_time_manager(spec)).game_ply_for(board) == 31, spec


def _lc0_legacy_first_move_ms(time_ms: int, fen_fullmove: int) -> float:
    """lc0 v0.33's LegacyTimeManager::GetStopper (legacy.cc) on a game's first move, no
    increment, no movestogo, defaults (midpoint-move 51.5, steepness 7, first-move-bonus 1.8,
    book-ply-bonus 0.25, slowmover 1), with the ply it reads: the FEN's full-move number."""
    ply = fen_fullmove
    movestogo = _lc0_moves_to_go(ply)
    this_move = max(0.0, time_ms - OVERHEAD) / movestogo
    return this_move * (1.0 + 1.8 + 0.25 * min(12, ply))


@pytest.mark.parametrize(
    "fen",
    [
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",  # 3.05x: ply 1, not 0
        "r1bq1rk1/pp2bppp/2n1pn2/3p4/3P4/2NBPN2/PP3PPP/R2Q1RK1 w - - 0 30",  # ply 30, not 58
    ],
)
def test_legacy_first_move_budget_is_lc0s_at_lc0s_ply(fen):
    """legacy's first move on a 60 s clock, the ply read as the controller reads it, against
    lc0's formula at lc0's ply (the start position: 59.8 s / 51.0 moves x 3.05, where the
    board's ply gave / 51.5 x 2.8)."""
    import chess

    board = chess.Board(fen)
    tm = TimeManager(OVERHEAD)
    go = Limit(wtime=60_000, btime=60_000)
    got = tm.budget_ms(go, black_to_move=False, game_ply=tm.game_ply_for(board))
    assert got == pytest.approx(_lc0_legacy_first_move_ms(60_000, board.fullmove_number))


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
    with pytest.raises(ValueError, match="unknown key 'speed' for legacy; expected key=value"):
        parse_time_manager("legacy(speed=3)")
    with pytest.raises(ValueError, match=r"unknown time manager 'bogus'; expected one of \['alphazero', "
                                         r"'legacy', 'simple', 'smooth'\]"):
        parse_time_manager("bogus")


def test_time_manager_specs_in_lc0s_syntax():
    """lc0's names, keys and defaults (stoppers/*.cc), its OptionsDict syntax (a nested
    ``mle-legacy(...)`` for smooth, floats with ``.``/``e``, quoted strings), and an error that
    names the key and what is allowed for anything lc0 would not read."""
    assert parse_time_manager("smooth") == SmoothParams()
    assert (SmoothParams().init_piggybank, SmoothParams().midpoint, SmoothParams().steepness,
            SmoothParams().force_piggybank_ms) == (0.09, 45.2, 5.93, 1000)
    got = parse_time_manager(" smooth( init-piggybank=0.1 , mle-legacy(midpoint=5e1), "
                             "force-piggybank-ms=500)")
    assert got == SmoothParams(init_piggybank=0.1, midpoint=50.0, force_piggybank_ms=500)
    assert parse_time_manager("smooth(steepness=6.5)").steepness == 6.5
    assert parse_time_manager("alphazero") == AlphazeroParams(12.0)
    assert parse_time_manager("alphazero(alphazero-time-pct=20.0)").alphazero_time_pct == 20.0
    assert parse_time_manager("simple()") == SimpleParams()
    assert parse_time_manager("legacy") == LegacyParams()
    bad = {
        "smooth(foo=1.0)": "unknown key 'foo' for smooth; expected key=value with key in "
                           "['bestmove-optimism', ",
        "alphazero(alphazero-time-value=20.0)": "unknown key 'alphazero-time-value' for alphazero; "
                                                "expected key=value with key in ['alphazero-time-pct']",
        "smooth(mle-legacy(mid=3.0))": "unknown key 'mid' in smooth's mle-legacy",
        "smooth(steepness=6.0,mle-legacy(steepness=5.0))": "steepness given both",
        "legacy(mle-legacy(midpoint=3.0))": "unexpected mle-legacy",
        "smooth(force-piggybank-ms=1.5)": "force-piggybank-ms expects an integer, got 1.5",
        "legacy(slowmover=fast)": "slowmover expects a number, got 'fast'",
        "legacy(slowmover='1.2')": "slowmover expects a number, got '1.2'",
        "alphazero(alphazero-time-pct=120.0)": "alphazero-time-pct value to be in range [0.0, 100.0]",
        "simple(base-pct=0.0)": "base-pct value to be in range",
        "legacy,smooth": "exactly one time manager should be specified, 2 specified instead",
        "": "exactly one time manager should be specified, 0 specified instead",
        "slowmover=1.5": "slowmover= outside a manager",
        "smooth(": "unable to parse 'smooth(' at offset 7 (expected ))",
        "legacy(slowmover=1.2,)x": "unexpected token",
        "legacy(slowmover=)": "expected value",
        "smooth;": "unable to parse token",
    }
    for spec, message in bad.items():
        with pytest.raises(ValueError, match=re.escape(message)):
            parse_time_manager(spec)


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
    at_position = time.monotonic()
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
    # A go with a clock is timed from its position line, as lc0's (StrictTiming off).
    assert at_position <= limit.started_at <= before and limit.until_stop
    assert "bestmove" not in out.getvalue()  # pondering: no answer before ponderhit
    uci.handle("ponderhit")
    uci.controller.wait(10)
    finite = dataclasses.replace(limit, ponder=False)
    # lc0's game ply after 1.e4: the start FEN's full-move number 1, plus one move
    budget = TimeManager(OVERHEAD).budget_ms(finite, black_to_move=True, game_ply=2)
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
    # lc0's game ply after 1.e4: the start FEN's full-move number 1, plus one move
    budget = TimeManager(OVERHEAD).budget_ms(Limit(wtime=60_000, btime=60_000), True, 2)
    assert budget is not None and budget > 1_000
    spared = uci.controller.timemgr.time_spared_ms
    assert budget - 1_000 < spared <= budget, (spared, budget)
    uci.handle("quit")


def test_ucinewgame_starts_legacys_state_afresh():
    """lc0's ucinewgame makes a new time manager (classic/wrapper.cc NewGame): the time banked
    by the last game's moves and its spent first-move bonus do not carry into the next game."""
    import io

    import engine.backends  # noqa: F401  (registers the random backend)
    from engine.uci import UciEngine

    uci = UciEngine(io.StringIO(), {"Backend": "random", "MoveOverheadMs": OVERHEAD})
    uci.handle("position startpos moves e2e4")
    uci.handle("go wtime 60000 btime 60000 nodes 50")
    uci.controller.wait(10)
    tm = uci.controller.timemgr
    assert tm.time_spared_ms > 1_000 and not tm.first_move_of_game  # banked, bonus spent
    uci.handle("ucinewgame")
    assert tm.time_spared_ms == 0.0 and tm.first_move_of_game
    uci.handle("quit")


def test_alphazero_budget_is_lc0s_share_of_the_clock():
    """lc0's log (``lc0 --time-manager=alphazero --move-overhead=150 --logfile=…``, go wtime 20000
    then 7433): "Budgeted time for the move: 2382ms", "873.96ms"; its TimeLimitStopper takes
    the whole milliseconds. No increment, no first-move bonus, no state."""
    tm = TimeManager(150, parse_time_manager("alphazero"))
    assert tm.budget_ms(Limit(wtime=20_000, btime=1, winc=200, binc=200), False, 0) == 2382
    assert tm.budget_ms(Limit(wtime=7_433, btime=1, winc=200, binc=200), False, 2) == 873
    tm.params = parse_time_manager("alphazero(alphazero-time-pct=20.0)")  # lc0: 3970, 1456.6
    assert tm.budget_ms(Limit(wtime=1, btime=20_000), True, 1) == 3970
    assert tm.budget_ms(Limit(wtime=1, btime=7_433), True, 3) == 1456
    assert tm.budget_ms(Limit(wtime=1, btime=7_433, movetime=1_000), True, 3) == 1_000 - 150


def test_simple_budget_is_lc0s_formula():
    """simple.cc by hand: (base-pct + ply * ply-pct) % of the clock less the overhead, plus
    time-factor * inc / time, plus what the previous move left of its budget."""
    tm = TimeManager(OVERHEAD, parse_time_manager("simple(opening-bonus-pct=10.0)"))
    first = tm.budget_ms(Limit(wtime=60_000, btime=1, winc=600, binc=0), False, 4)
    pct = (1.4 + 4 * 0.049) * 0.01 + 600 / 60_000 * 1.5
    assert first == pytest.approx((60_000 - OVERHEAD) * pct * 1.1)
    # the clock fell by 500 ms less the 600 ms increment: 100 ms of the budget were left
    second = tm.budget_ms(Limit(wtime=60_000 - first + 100 + 600, btime=1, winc=600, binc=0), False, 6)
    available = 60_000 - first + 100 + 600 - OVERHEAD
    pct = (1.4 + 6 * 0.049) * 0.01 + 600 / (available + OVERHEAD) * 1.5
    assert second == pytest.approx(available * pct + (first - (60_000 - OVERHEAD - (available - 600))))


def _replay_lc0_smooth() -> tuple[SmoothManager, list[tuple[int, int]]]:
    """lc0's smooth on two moves, from its log (``lc0 --weights=maia-1100.pb.gz --threads=1
    --time-manager=smooth --logfile=…``, move overhead 200): ``go wtime 20000 … winc 200`` from
    the start; the search entered the piggy bank (asked for by the search), took 2625 ms,
    2623 ms after its first batch, for 2786 playouts; then ``position startpos moves e2e4 e7e5``,
    ``go wtime 19000 … winc 200`` with 447 visits reused: 817 ms on the bank again. The
    figures asserted are the log's (TMGR lines)."""
    sm = SmoothManager(SmoothParams(), 200)
    plans = [sm.plan(20_000, 200, None, 1, 0)]  # lc0's game ply at the start: 1 (moves=44.7)
    assert sm.last_plan["allocated"] == pytest.approx(1566.741089, abs=0.01)
    assert sm.last_plan["expected_brutto"] == pytest.approx(1246.3, abs=0.05)
    assert (sm.piggybank_time, plans[0]) == (1949, (1566, 1692))  # total=1949ms longthink=1692ms
    assert sm.avg_ms_per_move == pytest.approx(598.210266, abs=1e-3)
    sm.done(2625, 1566, nodes=2786, playouts=2786, search_ms=2623, extended=True)
    assert sm.timeuse == pytest.approx(0.827263, abs=1e-5)
    assert sm.piggybank_time == 1949 - 1059  # piggybank_used=1059ms
    plans.append(sm.plan(19_000, 200, None, 3, 447))
    assert sm.tree_reuse == pytest.approx(0.307136, abs=1e-5)
    assert sm.last_plan["nps"] == pytest.approx(1062.1, abs=0.05)
    assert sm.last_plan["allocated"] == pytest.approx(481.579498, abs=0.01)
    assert (sm.piggybank_time, plans[1]) == (944, (481, 836))  # total=944ms longthink=836ms
    sm.done(817, 481, nodes=1500, playouts=1053, search_ms=815, extended=True)
    assert sm.timeuse == pytest.approx(0.854240, abs=1e-5)
    assert sm.piggybank_time == 944 - 336  # piggybank_used=336ms
    return sm, plans


def test_smooth_follows_lc0s_log_over_two_moves():
    _replay_lc0_smooth()


def test_smooth_through_the_time_manager_keeps_its_state_within_a_game():
    """The time manager runs smooth's plan with the clock, ply and reused visits; its budget
    is the deadline plus the bank's share (the watch stops the search at the deadline unless
    the bank is wanted); a move's end updates the estimates; a position of another game,
    ucinewgame or a changed spec start afresh."""
    import chess

    tm = TimeManager(200, parse_time_manager("smooth"))
    tm.set_game(chess.STARTING_FEN, [])
    go = Limit(wtime=20_000, btime=20_000, winc=200, binc=200)
    assert tm.game_ply_for(chess.Board()) == 1  # lc0's GetGamePly: the FEN's full-move number
    assert tm.budget_ms(go, False, 1, root_visits=0) == 1566 + 1692  # deadline and bank
    assert tm.smooth_plan == (1566.0, 1692.0)
    tm.search_done(1566, 2625, nodes=2786, playouts=2786, search_ms=2623, used_piggybank=True)
    moves = [chess.Move.from_uci(m) for m in ("e2e4", "e7e5")]
    tm.set_game(chess.STARTING_FEN, moves)
    assert tm.budget_ms(Limit(wtime=19_000, btime=20_000, winc=200, binc=200), False, 3, 447) == 481 + 836
    assert tm.smooth_plan == (481.0, 836.0)
    assert tm.smooth is not None and tm.smooth.tree_reuse == pytest.approx(0.307136, abs=1e-5)
    tm.set_game(chess.STARTING_FEN, moves[:1])  # not a continuation: a new game for lc0
    assert tm.smooth.is_first_move and tm.smooth.tree_reuse == 0.52
    assert tm.budget_ms(Limit(infinite=True, wtime=5_000), False, 1) is None
    assert tm.smooth_plan is None
    tm.params = parse_time_manager("smooth(init-timeuse=0.5)")
    assert tm.smooth.timeuse == 0.5


def test_smooth_stops_at_the_deadline_unless_the_bank_is_wanted():
    """lc0's SmoothStopper: before the deadline never; past it, on while the search wants more
    time (or the trend says so), or within the first force-piggybank-ms after the first batch
    (lc0's time_since_first_batch); the bank counts as used then. The search's own budget is
    the deadline plus the bank's share."""
    from engine.timemgr_watch import should_stop

    assert should_stop(400.0, 400.0, 481.0, 1000, wanted=False) == (False, False)
    assert should_stop(500.0, 500.0, 481.0, 1000, wanted=False) == (False, True)  # forced
    assert should_stop(1001.0, 1001.0, 481.0, 1000, wanted=False) == (True, False)
    assert should_stop(1200.0, 1000.0, 481.0, 1000, wanted=False) == (False, True)  # 1st batch late
    assert should_stop(1200.0, 1200.0, 481.0, 1000, wanted=True) == (False, True)
    assert should_stop(1600.0, 1600.0, 1566.0, 1000, wanted=False) == (True, False)


def test_smooth_caps_a_move_at_max_move_budget_of_the_clock():
    sm = SmoothManager(SmoothParams(init_timeuse=0.34), 200)
    deadline, spare = sm.plan(2_000, 2_000, None, 0, 0)  # 2 s clock, 2 s increment
    assert deadline == int(2_000 * 0.42)
    assert spare <= 2_000 - 200 - 0.42 * 2_000


def test_need_more_time_is_lc0s_rule():
    from engine.timemgr_watch import TrendWatcher, need_more_time

    assert not need_more_time([10, 5, 0], [0.1, 0.0, -0.5])
    assert need_more_time([10, 5, 0], [0.1, 0.2, -0.5])  # the second has the better Q
    assert not need_more_time([10, 10, 0], [0.1, 0.2, -0.5])  # either of the most visited
    assert need_more_time([10, 5, 0], [0.1, 0.0, 0.3])  # an unvisited edge's Q (its FPU) counts
    trend = TrendWatcher(SmoothParams())
    trend.update(100.0, [50, 10])
    trend.update(200.0, [60, 40])  # the second gains 30 visits per 100 ms, the best 10
    assert trend.overtaken(by_ms=300.0)  # 40 + 4.0 * 0.3 * 100 > 60 + 0.2 * 0.1 * 100
    assert not trend.overtaken(by_ms=201.0)


def _one_move_search(stopper_ms: int | None = None):
    """A search (random network, one thread, minibatches of 8, no smart pruning) whose clock is
    its playouts (1 ms each), at a position of one legal move: lc0's kNeedMoreTime and the
    visit trend never hold there (one edge), so only the deadline and the forced bank decide."""
    import chess

    from engine.backends.random import RandomNetwork
    from engine.search import PlayoutClock, Search, from_options

    search = Search(
        RandomNetwork(),
        from_options({"Threads": 1, "MinibatchSize": 8, "SmartPruningFactor": 0.0}),
    )
    search.state.clock = PlayoutClock(1000.0)
    board = chess.Board("7k/8/8/8/8/8/3R1PPP/q5K1 w - - 0 1")
    assert board.legal_moves.count() == 1  # the truth the docstring leans on (python-chess)
    search.set_position(board)
    return search


# A minibatch's playouts at most: MinibatchSize plus its out-of-order backups (factor 2.4).
ONE_MINIBATCH = 8 + int(8 * 2.4)


def test_a_time_managers_stopper_is_asked_before_every_minibatch():
    """lc0 asks its stoppers (the time manager's among them) after every minibatch: a stopper
    that says stop from 100 ms on (by the search's clock: 100 playouts) ends the search within
    one minibatch of it, where a watch reading the host's clock every few ms would not (the
    random network searches thousands of playouts a second here)."""
    search = _one_move_search()
    calls: list[tuple[float, float]] = []

    def stopper(elapsed_ms: float, since_first_batch_ms: float) -> bool:
        calls.append((elapsed_ms, since_first_batch_ms))
        return elapsed_ms >= 100.0

    search.resources.time_stopper = stopper
    try:
        result = search.run(Limit(nodes=50_000))
    finally:
        search.close()
    assert 100 <= result.playouts <= 100 + ONE_MINIBATCH, result.playouts
    assert calls[0] == (0.0, 0.0)  # before the first minibatch: nothing searched yet
    assert all(since <= elapsed for elapsed, since in calls)
    assert len(calls) >= result.playouts // ONE_MINIBATCH  # at least one call a minibatch


@pytest.mark.parametrize("force_ms", [0, 300])
def test_smooth_stopper_ends_the_search_at_the_first_minibatch_past_its_limit(force_ms):
    """lc0's SmoothStopper as one of the search's stoppers: with neither kNeedMoreTime nor the
    trend holding, the search stops at the first minibatch past the deadline (100 ms), or,
    the bank forced for force-piggybank-ms after the first batch, past that (the bank counted
    as used: lc0's used_piggybank_); closed, it is no longer the search's stopper."""
    from engine.timemgr_watch import SmoothWatch

    search = _one_move_search()
    watch = SmoothWatch(search, SmoothParams(force_piggybank_ms=force_ms), 100.0, 10_000.0)
    assert search.resources.time_stopper == watch.poll
    try:
        result = search.run(Limit(nodes=50_000))
        watch.close()
        assert search.resources.time_stopper is None
    finally:
        search.close()
    limit = max(100, force_ms)
    assert limit <= result.playouts <= limit + 2 * ONE_MINIBATCH, result.playouts
    assert watch.used_piggybank == (force_ms > 100)
