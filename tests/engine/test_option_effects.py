"""Every engine option does what its help says, seen from outside the search.

Each test sets an option through ``setoption`` on an in-process engine (tests/engine/option_harness.py:
a deterministic fake network, fixed ``go nodes`` searches) and checks the change the option
promises against a second search without it: root visits (VerboseMoveStats), the batches the
network evaluated, the info lines, the time used or the move played. ``@effect_of`` records
which options a test covers; test_every_option_has_an_effect_test fails for an option in
engine/options.py that no test covers, so a new option comes with its test.
"""

from __future__ import annotations

import functools
import math
import random
import re
import time

import chess
import numpy as np
import pytest

from engine import options as opts
from engine.startup.cmdline import parse_command_line
from option_harness import NETWORK_PACE, Reply, Session, top_share, visited_moves

EFFECTS: dict[str, list[str]] = {}
"""Option name -> the tests that check its effect."""


def effect_of(*names: str):
    def register(test):
        for name in names:
            assert opts.find(name).name == name, f"expected an option named {name}"
            EFFECTS.setdefault(name, []).append(test.__name__)
        return test

    return register


@functools.lru_cache(maxsize=None)
def _search(options: tuple, go: str, position: str) -> Reply:
    session = Session(**dict(options))
    try:
        return session.go(go, position)
    finally:
        session.close()


def ended_at(nodes: float, limit: int, minibatch: int = 7, threads: int = 1) -> bool:
    """Whether a ``go nodes limit`` search ended as lc0's: at the limit or past it by no more
    than its threads' last iterations (lc0 asks its VisitsStopper between iterations), each a
    ``minibatch`` (the effects backend's 7 unless set) and its out-of-order backups
    (MaxOutOfOrderEvalsFactor 2.4 of the minibatch)."""
    return limit <= nodes <= limit + threads * (minibatch + int(2.4 * minibatch))


def search(go: str = "go nodes 60", position: str = "position startpos", **options) -> Reply:
    """One search on a fresh engine with these options (the same arguments are searched once)."""
    return _search(tuple(sorted(options.items())), go, position)


def batches(go: str = "go nodes 60", **options) -> list[int]:
    """The sizes of the batches the network evaluated during one search."""
    session = Session(**options)
    try:
        session.go(go)
        return session.network.batches
    finally:
        session.close()


# ----------------------------------------------------------------------------------------- network
@effect_of("WeightsFile")
def test_weights_file_names_the_network_played(tmp_path):
    """The effects backend favours the move its file is named after: changing WeightsFile
    loads the other file and the move follows."""
    for name in ("a2a3.net", "h2h3.net"):
        (tmp_path / name).write_bytes(b"")
    session = Session(WeightsFile=tmp_path / "a2a3.net")
    try:
        assert session.go("go nodes 30").bestmove == "a2a3"
        session.set("WeightsFile", tmp_path / "h2h3.net")
        reply = session.go("go nodes 30")
        assert reply.bestmove == "h2h3", f"expected h2h3 after the switch, got {reply.bestmove}"
        loaded = [ln for ln in session.out.lines if ln.startswith("info string loaded network")]
        assert len(loaded) == 2 and str(tmp_path / "h2h3.net") in loaded[-1], loaded
    finally:
        session.close()


@effect_of("Backend")
def test_backend_chooses_the_network_implementation(tmp_path):
    weights = tmp_path / "a2a3.net"
    weights.write_bytes(b"")
    assert search("go nodes 30", WeightsFile=weights).bestmove == "a2a3"
    session = Session(WeightsFile=weights, Backend="random")
    try:
        reply = session.go("go nodes 30")
        assert reply.bestmove != "a2a3"  # the random backend ignores the file
        assert any(f"({weights}) with backend random" in ln for ln in session.out.lines)
        session.set("Backend", "nosuch")
        reply = session.go("go nodes 1")
        assert reply.bestmove == "0000" and any("nosuch" in ln for ln in reply.lines), reply.lines
    finally:
        session.close()


@effect_of("BackendOptions")
def test_backend_options_reach_the_backend():
    assert search("go nodes 30", BackendOptions="favourite=g1h3").bestmove == "g1h3"
    assert search("go nodes 30", BackendOptions="favourite=b1a3").bestmove == "b1a3"


# ------------------------------------------------------------------------------------------ search
@effect_of("MinibatchSize")
def test_minibatch_size_bounds_the_batches():
    small = batches("go nodes 150", MinibatchSize=8)
    large = batches("go nodes 150", MinibatchSize=64)
    assert max(small) <= 8 < max(large), (small, large)
    # One evaluation a visit without prefetching; the search ends with the iteration that
    # reaches 150 visits (lc0's), past it by less than that iteration's minibatch.
    assert 150 <= sum(small) < 150 + 8 and 150 <= sum(large) < 150 + 64, (small, large)


@effect_of("CPuct")
def test_cpuct_spreads_the_visits():
    low, high = search(CPuct=0.3), search(CPuct=10)
    assert visited_moves(high) > visited_moves(low) and top_share(high) < top_share(low)


@effect_of("CPuctBase")
def test_cpuct_base_grows_exploration_when_small():
    # cpuct grows by CPuctFactor*ln((N+base)/base): with base 1 it is ~16 at 60 visits.
    assert visited_moves(search(CPuctBase=1)) > visited_moves(search())


@effect_of("CPuctFactor")
def test_cpuct_factor_scales_the_growth():
    assert visited_moves(search(CPuctBase=1, CPuctFactor=0)) < visited_moves(search(CPuctBase=1))


@effect_of("RootHasOwnCpuctParams", "CPuctAtRoot", "CPuctBaseAtRoot", "CPuctFactorAtRoot")
def test_root_cpuct_parameters_apply_only_with_root_has_own():
    base = search()
    for name, value in (("CPuctAtRoot", 10), ("CPuctBaseAtRoot", 1), ("CPuctFactorAtRoot", 1000)):
        assert search(**{name: value}).visits == base.visits, (
            f"{name} acted without RootHasOwnCpuctParams"
        )
        own = search(RootHasOwnCpuctParams=True, **{name: value})
        assert visited_moves(own) > visited_moves(base), f"{name}={value} did not widen the root"
    # The root parameters leave the rest of the tree to CPuct: at the defaults nothing changes.
    assert search(RootHasOwnCpuctParams=True).visits == base.visits


@effect_of("FpuStrategy", "FpuValue")
def test_fpu_below_the_root():
    """Pessimistic first-play urgency makes the tree narrow and deep, optimistic wide and shallow
    (the root keeps its own reduction here)."""
    pessimistic = search(FpuStrategy="absolute", FpuValue=-1, FpuStrategyAtRoot="reduction")
    optimistic = search(FpuStrategy="absolute", FpuValue=1, FpuStrategyAtRoot="reduction")
    assert pessimistic.field("seldepth") > optimistic.field("seldepth")
    # Reduction: a larger FpuValue lowers unvisited moves, here at the root too (strategy same).
    assert visited_moves(search(FpuValue=2)) < visited_moves(search(FpuValue=0))


@effect_of("FpuStrategyAtRoot", "FpuValueAtRoot")
def test_fpu_at_the_root():
    every = search(FpuStrategyAtRoot="absolute", FpuValueAtRoot=1)
    few = search(FpuStrategyAtRoot="absolute", FpuValueAtRoot=-1)
    assert visited_moves(every) == 20 and visited_moves(few) < 10, (every.visits, few.visits)
    # FpuValueAtRoot is used only with its own strategy.
    assert search(FpuValueAtRoot=-1).visits == search().visits


@effect_of("PolicyTemperature")
def test_policy_temperature_is_the_softmax_temperature():
    """Priors are softmax(logit / T): log(P_a / P_b) * T is the same at every temperature."""
    two, four = search("go nodes 1", PolicyTemperature=2), search("go nodes 1", PolicyTemperature=4)
    ranked = sorted(two.stats, key=lambda m: -two.stats[m]["P"])
    a, b = ranked[0], ranked[len(ranked) // 2]  # far enough apart that rounded P keep the ratio
    ratio2 = math.log(two.stats[a]["P"] / two.stats[b]["P"]) * 2
    ratio4 = math.log(four.stats[a]["P"] / four.stats[b]["P"]) * 4
    assert ratio2 > 0.1 and ratio4 == pytest.approx(ratio2, rel=0.02), (ratio2, ratio4)


@effect_of("ClearTree")
def test_clear_tree_drops_the_tree_at_the_next_search_and_keeps_the_cache():
    """lc0's ClearTree button (``setoption name ClearTree``, no value): the next search starts
    from a fresh root (a go nodes 30 after one of 60 stops at about 30 visits, not at once on
    the 60 or more it would reuse) while the NN cache stays (its positions come from the cache:
    few new rows); each press counts once, and a second press works as the first."""
    session = Session()
    try:
        session.go("go nodes 60")
        assert session.go("go nodes 30").field("nodes") >= 60  # reused: nothing to search
        for _press in range(2):
            session.send("setoption name ClearTree")
            session.network.batches.clear()
            cleared = session.go("go nodes 30")
            assert 30 <= cleared.field("nodes") < 60, cleared.final
            assert sum(session.network.batches) < 10, session.network.batches  # cache hits
            again = session.go("go nodes 20").field("nodes")  # reused: the press used up
            assert again == cleared.field("nodes"), (again, cleared.final)
    finally:
        session.close()


@effect_of("HistoryFill")
def test_history_fill_is_the_root_planes_lc0_encodes():
    """The root's planes, as the network gets them, are lc0's encoding of the position with the
    fill chosen (engine.encoding, checked against lc0's own planes in tests/encoding): from a
    FEN, ``fen_only`` (the default) and ``always`` repeat the position in the history planes and
    ``no`` leaves them empty; from the start position only ``always`` does. Changing it empties
    the NN cache, whose entries were made from the other planes."""
    from engine.encoding import encode_planes

    fen = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"
    history = slice(13, 13 * 8)  # the seven earlier positions' planes
    seen = {}
    for position, board in (("position fen " + fen, chess.Board(fen)),
                            ("position startpos", chess.Board())):  # fmt: skip
        for fill in ("no", "fen_only", "always"):
            session = Session(HistoryFill=fill)
            try:
                session.send("isready")
                network, planes = session.network, []
                evaluate = network.evaluate
                network.evaluate = lambda x: planes.append(np.array(x[0])) or evaluate(x)
                session.go("go nodes 1", position)
                assert np.array_equal(planes[0], encode_planes(board, 1, fill)), (position, fill)
                seen[position[:13], fill] = bool(planes[0][history].any())
                if fill == "no":  # back to it with another fill: evaluated anew, not cached
                    session.go("go nodes 1", "position fen 8/8/8/8/8/8/k7/7K w - - 0 1")
                    session.set("HistoryFill", "always")
                    session.go("go nodes 1", position)
                    assert len(planes) == 3, (position, len(planes))
                    assert np.array_equal(planes[2], encode_planes(board, 1, "always")), position
            finally:
                session.close()
    assert seen == {("position fen ", "no"): False, ("position fen ", "fen_only"): True,
                    ("position fen ", "always"): True, ("position star", "no"): False,
                    ("position star", "fen_only"): False, ("position star", "always"): True}, seen  # fmt: skip


@effect_of("DirichletNoiseEpsilon", "DirichletNoiseAlpha")
def test_dirichlet_noise_mixes_into_the_root_priors():
    """lc0's root noise: each prior becomes p (1 - eps) + eps eta / sum(eta), eta ~ Gamma(alpha),
    the root's moves sorted anew. Without it the priors are the network's; with it every prior
    keeps at least (1 - eps) of its own, they still sum to 1, and a large alpha spreads the
    noise evenly (each move gets about eps / moves) where a small one gives it to a few."""
    plain = search("go nodes 1").stats

    def noisy(alpha: float) -> dict:
        return search("go nodes 1", DirichletNoiseEpsilon=0.5, DirichletNoiseAlpha=alpha).stats

    flat, sharp = noisy(1e6), noisy(0.03)
    k = len(plain)
    for stats in (flat, sharp):
        assert set(stats) == set(plain)
        assert sum(s["P"] for s in stats.values()) == pytest.approx(100.0, abs=0.5)
        assert all(stats[m]["P"] >= 0.5 * plain[m]["P"] - 0.02 for m in plain), stats
    # Gamma(1e6) draws are within 0.5 % of each other: the noise is epsilon / k a move.
    assert all(flat[m]["P"] == pytest.approx(0.5 * plain[m]["P"] + 50.0 / k, abs=0.05) for m in plain)
    gains = sorted(sharp[m]["P"] - 0.5 * plain[m]["P"] for m in plain)
    assert gains[-1] > 10.0 and gains[k // 2] < 1.0, gains  # a few moves take most of it
    # A reused tree's root keeps its priors (lc0 adds the noise where it extends the root).
    session = Session(DirichletNoiseEpsilon=0.5, DirichletNoiseAlpha=0.03)
    try:
        first = session.go("go nodes 1").stats
        again = session.go("go nodes 20").stats
        assert {m: s["P"] for m, s in again.items()} == {m: s["P"] for m, s in first.items()}
    finally:
        session.close()
    # The root's edges are in the order of their new priors, as the selection expects.
    from engine.backends.random import RandomNetwork
    from engine.search import Limit, Search, from_options

    tree_search = Search(RandomNetwork(), from_options({"DirichletNoiseEpsilon": 0.5,
                                                        "DirichletNoiseAlpha": 0.03}))  # fmt: skip
    try:
        tree_search.set_position(chess.Board())
        tree_search.run(Limit(nodes=1))
        priors = tree_search.root.p
        assert priors == sorted(priors, reverse=True) and len(priors) == 20
    finally:
        tree_search.close()


def _collision_batches(**options) -> int:
    """Batches of a search whose minibatches may hold 64 positions: collisions end them first."""
    return len(batches("go nodes 150", MinibatchSize=64, **options))


@effect_of("MaxCollisionVisits", "MaxCollisionVisitsScalingEnd")
def test_collision_visits_end_a_minibatch():
    """Fewer collision visits allowed: smaller minibatches, more of them for the same visits."""
    unscaled = _collision_batches(MaxCollisionVisitsScalingEnd=0)  # MaxCollisionVisits at once
    assert unscaled < _collision_batches()  # the scaling allows 1 in a small tree
    assert _collision_batches(MaxCollisionVisitsScalingEnd=0, MaxCollisionVisits=1) > unscaled


@effect_of("MaxCollisionVisitsScalingStart", "MaxCollisionVisitsScalingPower")
def test_collision_visit_scaling():
    scaled = dict(MaxCollisionVisitsScalingStart=1, MaxCollisionVisitsScalingEnd=300)
    late = dict(scaled, MaxCollisionVisitsScalingStart=299)
    assert _collision_batches(**scaled) < _collision_batches(**late)
    assert _collision_batches(**scaled, MaxCollisionVisitsScalingPower=0.01) < _collision_batches(
        **scaled, MaxCollisionVisitsScalingPower=10
    )


@effect_of("MaxPrefetch")
def test_prefetch_sends_more_positions_to_the_network():
    """The prefetched positions fill the NN cache; the tree still gets the visits of its
    gathers alone (tests/engine/search/test_search.py checks that they become cache hits)."""
    without, with_ = batches(), batches(MaxPrefetch=32)  # the harness sets 0
    assert 60 <= sum(without) < sum(with_)
    prefetched = search(MaxPrefetch=32)
    assert prefetched.node["N"] == prefetched.field("nodes") >= 60


@effect_of("ThreadIdlingThreshold", "IdlingMinimumWork")
def test_an_idle_network_gets_partial_minibatches():
    """lc0's partial minibatches: at threshold 0 the network counts as idle whenever fewer than
    Threads minibatches are on it, which is always when one is gathered, so each minibatch goes
    after its first pick; IdlingMinimumWork above the minibatch, or one thread, turns it off.
    The tree still gets the visits of its gathers alone. (Two threads interleave by timing:
    the counts are compared, not the batches.)"""
    full = batches("go nodes 200", MinibatchSize=64, Threads=2)
    partial = batches("go nodes 200", MinibatchSize=64, Threads=2, ThreadIdlingThreshold=0)
    assert len(partial) > 2 * len(full) and sum(partial) / len(partial) < 3, (full, partial)
    idle = search("go nodes 200", MinibatchSize=64, Threads=2, ThreadIdlingThreshold=0)
    assert idle.node["N"] == idle.field("nodes") >= 200
    unworthy = batches("go nodes 200", MinibatchSize=64, Threads=2, ThreadIdlingThreshold=0,
                       IdlingMinimumWork=1000)
    assert 2 * len(unworthy) < len(partial) and sum(unworthy) / len(unworthy) > 3, unworthy
    one = batches("go nodes 200", MinibatchSize=64, Threads=1)
    assert batches("go nodes 200", MinibatchSize=64, Threads=1, ThreadIdlingThreshold=0) == one


def _rows_after_warm_cache(**options) -> tuple[int, int]:
    return _warm_cache(tuple(sorted(options.items())))


@functools.lru_cache(maxsize=None)
def _warm_cache(options: tuple) -> tuple[int, int]:
    """(rows, batches) the network evaluates for a 200-visit search of a new tree whose first
    100 visits' positions are in the NN cache."""
    session = Session(**dict(options))
    try:
        session.go("go nodes 100")
        session.go("go nodes 1", "position fen 8/8/8/8/8/8/k7/7K w - - 0 1")  # a new tree
        session.network.batches.clear()
        session.go("go nodes 200")
        return sum(session.network.batches), len(session.network.batches)
    finally:
        session.close()


@effect_of("OutOfOrderEval")
def test_out_of_order_eval_backs_up_cache_hits_without_the_network():
    assert _rows_after_warm_cache(OutOfOrderEval=False)[0] > _rows_after_warm_cache()[0]


@effect_of("MaxOutOfOrderEvalsFactor")
def test_out_of_order_evals_factor_ends_a_minibatch():
    assert _rows_after_warm_cache(MaxOutOfOrderEvalsFactor=0)[1] > _rows_after_warm_cache()[1]


@effect_of("NNCacheSize")
def test_nn_cache_size_is_the_cache_capacity():
    # hashfull is the per mille of the capacity in use: full at 50 entries, 0 without a cache,
    # and 60 visits evaluate at most 60 positions, 60 per mille of 1000.
    assert search(NNCacheSize=50).field("hashfull") == 1000
    assert search(NNCacheSize=0).field("hashfull") == 0
    assert 0 < search(NNCacheSize=1000).field("hashfull") <= 60
    assert _rows_after_warm_cache(NNCacheSize=0)[0] > _rows_after_warm_cache()[0]


@effect_of("CacheHistoryLength")
def test_cache_history_length_separates_transpositions():
    """Nf3 Nf6 Nc3 and Nc3 Nf6 Nf3 reach one position by different histories: the cache finds
    the second in the first's entries only when the history is not part of the key."""

    def rows(length: int) -> int:
        session = Session(CacheHistoryLength=length)
        try:
            session.go("go nodes 100", "position startpos moves g1f3 g8f6 b1c3")
            session.go("go nodes 1", "position fen 8/8/8/8/8/8/k7/7K w - - 0 1")
            session.network.batches.clear()
            session.go("go nodes 30", "position startpos moves b1c3 g8f6 g1f3")
            return sum(session.network.batches)
        finally:
            session.close()

    assert rows(0) < rows(7) / 2


KINGS_AND_BLOCKED_PAWNS = "position fen 4k3/8/8/p1p1p1p1/P1P1P1P1/8/8/4K3 w - - 0 1"
"""Only king moves: the tree is full of repetitions within four plies."""


@effect_of("TwoFoldDraws")
def test_two_fold_draws_score_repetitions_as_draws():
    on = search("go nodes 200", KINGS_AND_BLOCKED_PAWNS, TwoFoldDraws=True)
    off = search("go nodes 200", KINGS_AND_BLOCKED_PAWNS, TwoFoldDraws=False)
    assert on.node["D"] > off.node["D"], (on.node, off.node)


@effect_of("StickyEndgames")
def test_sticky_endgames_prove_a_move_that_allows_mate():
    """After ...Kh8, Ra8 mates: with StickyEndgames the mate propagates up and the root reports
    it; without, Kh8 keeps an ordinary score."""
    position = "position fen 6k1/5ppp/8/8/8/8/8/R5K1 b - - 0 1"
    net = "favourite=a1a8"  # the network finds Ra8 at once
    on = search("go nodes 40 searchmoves g8h8", position, BackendOptions=net, StickyEndgames=True)
    off = search("go nodes 40 searchmoves g8h8", position, BackendOptions=net, StickyEndgames=False)
    assert " score mate -1 " in on.final[0], on.final
    assert " score cp " in off.final[0], off.final


MATE_IN_ONE = "position fen 6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"


@effect_of("SmartPruningFactor")
def test_smart_pruning_stops_at_a_proven_win():
    """Once Ra8 is seen to mate (the network's favourite, so at once) nothing can overtake it."""
    net = "favourite=a1a8"
    unpruned = search("go nodes 200", MATE_IN_ONE, BackendOptions=net)  # factor 0
    assert ended_at(unpruned.field("nodes"), 200), unpruned.final
    pruned = search("go nodes 200", MATE_IN_ONE, BackendOptions=net, SmartPruningFactor=1.33)
    assert pruned.field("nodes") < 50 and pruned.bestmove == "a1a8", pruned.final


@effect_of("SmartPruningMinimumBatches")
def test_smart_pruning_waits_for_the_minimum_batches():
    """With a dominant move the runner-up cannot catch up long before the node limit; pruning
    may stop only 200 ms after the first evaluation (each batch here takes 5 ms)."""
    slow = dict(
        BackendOptions="favourite=e2e4,delay=0.005", SmartPruningFactor=1.33, MinibatchSize=4
    )
    assert search("go nodes 400", **slow).field("nodes") < 400
    waited = search("go nodes 400", **slow, SmartPruningMinimumBatches=10000)
    assert ended_at(waited.field("nodes"), 400, minibatch=4), waited.final


@effect_of("NodesAsPlayouts")
def test_nodes_as_playouts_counts_the_searchs_own_playouts():
    """lc0's PlayoutsStopper against its VisitsStopper: a second ``go nodes 100`` of the same
    position, on the reused tree of the first, stops at once (it has 100 root visits: it adds
    nothing) or, counting playouts, after 100 more; after a move, the reused subtree's visits
    (the first search's visits of that move, read from VerboseMoveStats) plus 60. Each search
    ends with the iteration that reaches its limit, as lc0's."""
    net = dict(BackendOptions="favourite=e2e4")
    for as_playouts in (False, True):
        session = Session(NodesAsPlayouts=as_playouts, **net)
        try:
            first = session.go("go nodes 100")
            n = first.node["N"]
            assert first.field("nodes") == n and ended_at(n, 100), first.final
            again = session.go("go nodes 100")
            added = again.node["N"] - n
            assert ended_at(added, 100) if as_playouts else added == 0, again.node
            reused = again.visits["e2e4"]
            assert reused > 60, again.visits  # the favourite: its subtree is over the limit
            after = session.go("go nodes 60", "position startpos moves e2e4")
            searched = after.node["N"] - reused
            assert ended_at(searched, 60) if as_playouts else searched == 0, (reused, after.node)
        finally:
            session.close()


def _kld_looks(monkeypatch, go: str, **options) -> tuple[Reply, list[tuple[int, list[int]]]]:
    """A search, with the KLD stopper's looks at the root: (root visits, each root edge's
    visits) each time it read the edges' visits."""
    from engine.search.core import stoppers as cstop

    looks: list[tuple[int, list[int]]] = []
    read = cstop.root_edge_visits

    def spy(tree):
        visits = read(tree)
        looks.append((int(tree.nodes["n"][0]), visits.tolist()))
        return visits

    monkeypatch.setattr(cstop, "root_edge_visits", spy)
    session = Session(**options)
    try:
        return session.go(go), looks
    finally:
        session.close()


def _kld_gain_per_node(before: tuple[int, list[int]], after: tuple[int, list[int]]) -> float:
    """lc0's KldGainStopper's test quantity, computed here apart from the engine: the KL
    divergence of the earlier child-visit distribution from the later one (over the moves
    visited before), per child visit between them."""
    (n0, v0), (n1, v1) = before, after
    p = [v / (n0 - 1) for v in v0]
    q = [v / (n1 - 1) for v in v1]
    gain = sum(a * math.log(a / b) for a, b in zip(p, q) if a > 0)
    return gain / (n1 - n0)


@effect_of("MinimumKLDGainPerNode", "KLDGainAverageInterval")
def test_kld_gain_stops_once_the_root_distribution_settles(monkeypatch):
    """lc0's KldGainStopper: every KLDGainAverageInterval child visits of the root (one at a
    time here, MinibatchSize 1: exactly at 1 + k * interval root visits) it compares the
    root's visit distribution with the previous look's and stops when the gain per visit is
    below the minimum. The stop is the first look whose gain, computed here from the looks'
    distributions, is below it; a minimum of 1 stops at the first comparison; 0 never looks."""
    one = dict(MinibatchSize=1)
    full, looks = _kld_looks(monkeypatch, "go nodes 2000", **one)
    assert full.field("nodes") == 2000 and looks == []  # the default, 0: no stopper
    at_once, looks = _kld_looks(monkeypatch, "go nodes 2000", MinimumKLDGainPerNode=1, **one)
    assert [n for n, _ in looks] == [101, 201] and at_once.field("nodes") == 201
    for interval, minimum in ((100, 1e-4), (300, 8e-5)):
        reply, looks = _kld_looks(
            monkeypatch,
            "go nodes 2000",
            MinimumKLDGainPerNode=minimum,
            KLDGainAverageInterval=interval,
            **one,
        )
        assert [n for n, _ in looks] == [1 + interval * k for k in range(1, len(looks) + 1)]
        assert all(sum(v) == n - 1 for n, v in looks)  # lc0's child nodes: the edges' visits
        gains = [_kld_gain_per_node(a, b) for a, b in zip(looks, looks[1:])]
        below = [g < minimum for g in gains]
        assert True in below, (interval, minimum, gains)  # stopped before go nodes 2000
        stop = below.index(True) + 1
        assert len(looks) == stop + 1 and reply.field("nodes") == looks[stop][0], (
            interval,
            gains,
            reply.field("nodes"),
        )
        assert stop >= 2, gains  # not at the first comparison: the minimum matters


WINNING = "q=0.9"
"""White wins by 0.9 in every position: |Q| is above MovesLeftThreshold everywhere, and only
the priors and the moves-left utility tell the moves apart."""


def _root_scores(reply: Reply) -> tuple[dict[str, int], dict[str, float]]:
    """Visits and PUCT score S (which includes the moves-left utility) of each root move."""
    return reply.visits, {move: values["S"] for move, values in reply.stats.items()}


def _moves_left(**options) -> tuple[dict[str, int], dict[str, float]]:
    return _root_scores(search(BackendOptions=f"mlh=1,{WINNING}", VerboseMoveStats=True, **options))


def _without_head() -> tuple[dict[str, int], dict[str, float]]:
    return _root_scores(search(BackendOptions=WINNING, VerboseMoveStats=True))


@effect_of("MovesLeftMaxEffect", "MovesLeftSlope")
def test_moves_left_utility_vanishes_with_no_effect_or_slope():
    assert _moves_left() != _without_head()
    assert _moves_left(MovesLeftMaxEffect=0) == _without_head()
    assert _moves_left(MovesLeftSlope=0) == _without_head()
    assert _moves_left(MovesLeftMaxEffect=0.3) != _moves_left()


@effect_of("MovesLeftThreshold")
def test_moves_left_threshold():
    assert _moves_left(MovesLeftThreshold=0.95) == _without_head()  # |Q| = 0.9 is below


@effect_of("MovesLeftConstantFactor", "MovesLeftScaledFactor", "MovesLeftQuadraticFactor")
def test_moves_left_scaling_factors():
    base = _moves_left()
    for name, value in (
        ("MovesLeftConstantFactor", 1),
        ("MovesLeftScaledFactor", 0),
        ("MovesLeftQuadraticFactor", 0),
    ):
        assert _moves_left(**{name: value}) != base, f"{name}={value} had no effect"
    # All three 0: the utility is 0 whatever M says.
    zero = dict(MovesLeftConstantFactor=0, MovesLeftScaledFactor=0, MovesLeftQuadraticFactor=0)
    assert _moves_left(**zero) == _without_head()


@effect_of("DrawScore")
def test_draw_score_values_draws_for_the_side_to_move():
    """ScoreType Q reports 10000 * (W - L + DrawScore * D) of the best move."""
    for draw_score in (0.5, 0.0, -0.5):
        reply = search("go nodes 50", DrawScore=draw_score, ScoreType="Q", UCI_ShowWDL=True)
        tokens = reply.final[0].split()
        w, d, l = (int(tokens[tokens.index("wdl") + k]) for k in (1, 2, 3))
        expected = 10 * (w - l + draw_score * d)
        assert reply.field("cp", reply.final[0]) == pytest.approx(expected, abs=16), reply.final[0]


# ------------------------------------------------------------------------------ WDL contempt
FIXED_VALUE = "q=0.2"
"""The effects network with one value everywhere: White 0.2 ahead (W - L), 40 % drawn. The
best move's score is then the value the search gave the network's results, rescaled or not."""
BLACK_TO_MOVE = "position startpos moves e2e4"


def _score(position: str = "position startpos", **options) -> int:
    """The best move's score (cp, ScoreType WDL_mu) after a short search of FIXED_VALUE."""
    reply = search("go nodes 30", position, BackendOptions=FIXED_VALUE, **options)
    return reply.field("cp", reply.final[0])


def _used(position: str = "position startpos", **options) -> int:
    """The score of the values the search used: WDLEvalObjectivity 0 keeps the contempt."""
    return _score(position, WDLEvalObjectivity=0, **options)


@effect_of("Contempt")
def test_contempt_raises_the_values_of_the_side_to_move_at_the_root():
    """ContemptMode play favours the side to move at the root, White or Black: an Elo
    advantage raises its values, a negative one lowers them; the visits follow."""
    for position in ("position startpos", BLACK_TO_MOVE):
        base = _used(position)
        assert _used(position, Contempt="-100") < base < _used(position, Contempt="100")
    assert search(Contempt="300").visits != search().visits


@effect_of("WDLEvalObjectivity")
def test_eval_objectivity_reports_the_values_without_the_contempt():
    """1 (the default) reports the values with the contempt's shift taken back (within lc0's
    fast log and logistic), 0 as the search used them, 0.5 half way."""
    base, used = _score(), _used(Contempt="100")
    assert abs(_score(Contempt="100") - base) <= 3 and used > base + 50
    assert base + 3 < _score(Contempt="100", WDLEvalObjectivity=0.5) < used


@effect_of("UCI_Opponent")
def test_the_opponents_name_chooses_the_contempt():
    named = "leela=-100,stockfish=100,30"
    assert _used(Contempt=named, UCI_Opponent="none 3500 computer Stockfish 17") == _used(
        Contempt="100"
    )
    assert _used(Contempt=named, UCI_Opponent="GM 2700 human Leela Fan") == _used(Contempt="-100")
    assert _used(Contempt=named, UCI_Opponent="none none computer Komodo") == _used(Contempt="30")


@effect_of("UCI_RatingAdv")
def test_rating_advantage_is_the_default_contempt():
    assert _used(UCI_RatingAdv=100) == _used(Contempt="100") > _used()
    assert _used(UCI_RatingAdv=100, Contempt="-100") == _used(Contempt="-100")  # Contempt wins


@effect_of("ContemptMaxValue")
def test_contempt_max_value_caps_the_contempt():
    capped = _used(Contempt="400", ContemptMaxValue=100)
    assert capped == _used(Contempt="100") < _used(Contempt="400")


@effect_of("WDLContemptAttenuation")
def test_attenuation_scales_the_contempt():
    assert _used(Contempt="100", WDLContemptAttenuation=0) == _used()
    assert _used() < _used(Contempt="100", WDLContemptAttenuation=0.5) < _used(Contempt="100")
    assert _used(Contempt="100", WDLContemptAttenuation=-1) == _used(Contempt="-100")


@effect_of("ContemptMode")
def test_contempt_mode_names_the_favoured_side():
    assert _used(Contempt="100", ContemptMode="disable") == _used()
    assert _used(Contempt="100", ContemptMode="black_side_analysis") < _used()
    assert _used(BLACK_TO_MOVE, Contempt="100", ContemptMode="white_side_analysis") < _used(
        BLACK_TO_MOVE
    )
    assert _used(BLACK_TO_MOVE, Contempt="100", ContemptMode="black_side_analysis") == _used(
        BLACK_TO_MOVE, Contempt="100"
    )


def test_play_mode_has_no_contempt_in_go_infinite():
    """As lc0: ``go infinite`` with ContemptMode play searches without contempt (no side to
    favour in an analysis) and says so; an analysis mode keeps it."""
    for mode, expected in (("play", _used()), ("white_side_analysis", _used(Contempt="100"))):
        session = Session(Contempt="100", WDLEvalObjectivity=0, ContemptMode=mode,
                          BackendOptions=FIXED_VALUE)  # fmt: skip
        try:
            session.send("position startpos")
            said = session.send("go infinite")
            time.sleep(0.2)
            lines = session.send("stop")
            t0 = time.monotonic()
            while not any(ln.startswith("bestmove") for ln in session.out.lines):
                assert time.monotonic() - t0 < 30, "expected a bestmove after stop"
                time.sleep(0.01)
            warned = any("'play' not supported for infinite search" in ln for ln in said)
            assert warned == (mode == "play"), said
            infos = [ln for ln in session.out.lines if ln.startswith("info depth")]
            assert Reply([*infos, "bestmove a1a1"], 0).field("cp") == expected, lines
        finally:
            session.close()


@effect_of("WDLDrawRateTarget", "WDLDrawRateReference", "WDLBookExitBias")
def test_the_draw_rate_model_sizes_the_contempt_and_the_sharpness():
    """lc0's draw-rate model: the target draw rate against the network's reference sets how
    sharp the values are (the search's visits change without any contempt) and, with the book
    exit bias, how far an Elo advantage moves them."""
    full = _used(Contempt="100")
    assert _used(Contempt="100", WDLDrawRateTarget=0.9) != full
    assert _used(Contempt="100", WDLDrawRateReference=0.3) != full
    target = dict(Contempt="100", WDLDrawRateTarget=0.9)
    assert _used(**target, WDLBookExitBias=0.0) != _used(**target)
    assert search(WDLDrawRateTarget=0.9).visits != search().visits
    assert search(WDLDrawRateTarget=0.9, WDLDrawRateReference=0.9).visits == search().visits


@effect_of("WDLCalibrationElo")
def test_calibration_elo_takes_lc0s_elo_model():
    """An Elo sets the sharpness and the contempt's size by lc0's Elo model, which ignores the
    draw-rate target."""
    elo = dict(Contempt="100", WDLCalibrationElo=1500)
    assert _used(**elo) != _used(Contempt="100")
    assert _used(**elo, WDLDrawRateTarget=0.9) == _used(**elo)
    assert search(WDLCalibrationElo=2500).visits != search().visits


@effect_of("WDLMaxS")
def test_max_s_bounds_the_spread_the_contempt_scales():
    """The network's WDL here has spread s = 1.12: a WDLMaxS below it caps s, and with it the
    contempt's shift s**2 * diff; one above it changes nothing."""
    assert _used(Contempt="100", WDLMaxS=0.5) < _used(Contempt="100") == _used(
        Contempt="100", WDLMaxS=5
    )


def test_a_malformed_contempt_is_refused():
    session = Session()
    try:
        lines = session.send("setoption name Contempt value leela=-50,sf=1=2")
        assert any("invalid contempt entry" in ln for ln in lines), lines
        assert session.uci.values["Contempt"] == ""
    finally:
        session.close()


def _moves_played(position: str = "position startpos", repeats: int = 6, **options) -> list[str]:
    random.seed(1)  # Temperature draws with Python's random module
    session = Session(**options)
    try:
        played = []
        for _ in range(repeats):
            session.send("ucinewgame")
            played.append(session.go("go nodes 30", position).bestmove)
        return played
    finally:
        session.close()


def _most_visited(position: str = "position startpos") -> str:
    visits = search("go nodes 30", position).visits
    return max(visits, key=visits.get)


AFTER_TWO_MOVES = "position startpos moves e2e4 e7e5 g1f3 b8c6"


@effect_of("Temperature")
def test_temperature_draws_moves_by_visits():
    assert set(_moves_played()) == {_most_visited()}
    assert len(set(_moves_played(Temperature=10))) > 1


@effect_of("TempDecayMoves", "TempDecayDelayMoves")
def test_temperature_decay():
    """Two moves played: a decay over 1 move is over, unless it starts after 5 moves."""
    assert set(_moves_played(AFTER_TWO_MOVES, Temperature=10, TempDecayMoves=1)) == {
        _most_visited(AFTER_TWO_MOVES)
    }
    assert (
        len(
            set(
                _moves_played(
                    AFTER_TWO_MOVES, Temperature=10, TempDecayMoves=1, TempDecayDelayMoves=5
                )
            )
        )
        > 1
    )


@effect_of("TempCutoffMove", "TempEndgame")
def test_temperature_cutoff_move_switches_to_the_endgame_temperature():
    assert set(_moves_played(Temperature=10, TempCutoffMove=1)) == {_most_visited()}
    assert len(set(_moves_played(TempCutoffMove=1, TempEndgame=10))) > 1


@effect_of("TempValueCutoff")
def test_temp_value_cutoff_keeps_only_moves_near_the_best_value():
    stats = search("go nodes 30").stats
    best_value = max((s["Q"], m) for m, s in stats.items() if s["N"] > 0)[1]
    assert best_value != _most_visited()  # so that the check below tells the two apart
    assert set(_moves_played(Temperature=10, TempValueCutoff=0)) == {best_value}


@effect_of("TempVisitOffset")
def test_temp_visit_offset_is_added_to_the_visits():
    visits = sorted(search("go nodes 30").visits.values())
    # Offset minus the runner-up's visits: only the most visited move keeps a positive count.
    played = _moves_played(Temperature=10, TempVisitOffset=-visits[-2])
    assert set(played) == {_most_visited()}, played


@effect_of("RamLimitMb")
def test_ram_limit_caps_the_tree():
    # 1 MB holds a tree of a few thousand visits (150 to 500 bytes each, by the position's legal
    # moves; the bytes are counted: tests/engine/search/test_ram_limit.py); without the limit go
    # nodes ends at its limit (above). An info string says why the search stopped. The NN cache's table
    # counts whole once used (lc0's way): 2,000 entries (64 KB), where the default's 6.4 MB
    # alone would pass the limit at the first batch.
    capped = search("go nodes 20000", RamLimitMb=1, NNCacheSize=2000)
    assert 1000 < capped.field("nodes") < 10000
    assert any("RamLimitMb" in line for line in capped.lines), capped.lines[-5:]


@effect_of("NodesPerSecondLimit")
def test_nodes_per_second_limit_throttles_the_search():
    """lc0's throttle: after each minibatch a search thread waits while the playouts a second
    since the first playout are above the limit. At 2000 nodes/s go nodes 1000 lasts about
    half a second (a lower bound: a loaded machine is only slower) and its reported nps (the
    same measure) and nodes over time stay under the limit, one minibatch of 16 allowed;
    without the limit the same search (the same tree: one thread) runs far faster."""
    options = dict(MinibatchSize=16)
    free = search("go nodes 1000", **options)
    limited = search("go nodes 1000", NodesPerSecondLimit=2000, **options)
    assert limited.field("nodes") == free.field("nodes") and ended_at(free.field("nodes"), 1000, 16)
    assert limited.seconds >= 0.45, limited.seconds
    assert limited.field("nps") <= 2000 * 1.05, limited.final
    assert 1000 * limited.field("nodes") / max(limited.field("time"), 1) <= 2000 * 1.05
    assert free.field("nps") > 2000 * 1.5, free.final  # the limit is what slowed it


# ----------------------------------------------------------------------------------------- display
@effect_of("MultiPV", "PerPVCounters")
def test_multipv_lines_and_their_counters():
    plain = search("go nodes 100")
    assert len(plain.final) == 1 and " multipv " not in plain.final[0]
    three = search("go nodes 100", MultiPV=3)
    assert [three.field("multipv", ln) for ln in three.final] == [1, 2, 3]
    assert {three.field("nodes", ln) for ln in three.final} == {three.node["N"]}
    assert ended_at(three.node["N"], 100)
    per_pv = search("go nodes 100", MultiPV=3, PerPVCounters=True)
    ranked = sorted(per_pv.visits.values(), reverse=True)[:3]
    assert [per_pv.field("nodes", ln) for ln in per_pv.final] == ranked


@effect_of("ScoreType")
def test_score_type_formulas():
    """lc0's score conversions of the best move's W-L (wdl per mille: +-0.001 of rounding)."""
    formulas = {
        "centipawn": lambda wl: 90 * math.tan(1.5637541897 * wl),
        "centipawn_with_drawscore": lambda wl: 90 * math.tan(1.5637541897 * wl),  # DrawScore 0
        "centipawn_2019": lambda wl: 295 * wl / (1 - 0.976953126 * wl**14),
        "centipawn_2018": lambda wl: 290.680623072 * math.tan(1.548090806 * wl),
        "win_percentage": lambda wl: wl * 5000 + 5000,
        "Q": lambda wl: wl * 10000,
        "W-L": lambda wl: wl * 10000,
    }
    seen = set()
    for score_type in opts.find("ScoreType").choices:
        reply = search("go nodes 30", ScoreType=score_type, UCI_ShowWDL=True)
        tokens = reply.final[0].split()
        w, _, l = (int(tokens[tokens.index("wdl") + k]) for k in (1, 2, 3))
        cp = reply.field("cp", reply.final[0])
        seen.add(cp)
        if score_type in formulas:
            f = formulas[score_type]
            lo, hi = sorted((f((w - l - 1.5) / 1000), f((w - l + 1.5) / 1000)))
            assert lo - 1 <= cp <= hi + 1, f"{score_type}: expected {lo:.1f}..{hi:.1f}, got {cp}"
    assert len(seen) >= 5  # the types give different numbers for the same search


@effect_of("VerboseMoveStats")
def test_verbose_move_stats_list_every_root_move():
    on = search("go nodes 100")  # the harness sets it
    assert len(on.stats) == 20 and sum(on.visits.values()) == on.node["N"] - 1
    assert ended_at(on.node["N"], 100)
    assert sum(s["P"] for s in on.stats.values()) == pytest.approx(100, abs=0.2)
    assert not search("go nodes 100", VerboseMoveStats=False).stats


@effect_of("LogLiveStats")
def test_log_live_stats_print_the_stats_during_the_search():
    live = search("go movetime 700", LogLiveStats=True, VerboseMoveStats=False,
                  BackendOptions=NETWORK_PACE)
    node_lines = [i for i, ln in enumerate(live.lines) if ln.startswith("info string node")]
    assert node_lines and node_lines[0] < live.lines.index(live.infos[-1]), live.lines
    quiet = search("go nodes 50", VerboseMoveStats=False)
    assert not any(ln.startswith("info string node") for ln in quiet.lines)


@effect_of("UCI_ShowWDL")
def test_show_wdl():
    assert " wdl " not in search("go nodes 50").final[0]
    line = search("go nodes 50", UCI_ShowWDL=True).final[0].split()
    at = line.index("wdl")
    assert sum(int(x) for x in line[at + 1 : at + 4]) == 1000


@effect_of("UCI_ShowEPS")
def test_show_eps_the_networks_evaluations_a_second():
    """lc0's ``eps``: positions the network evaluated a second, over the same time as ``nps``,
    so eps/nps is the evaluations (the batches' rows, as the network counted them) per
    playout; absent without the option."""
    assert " eps " not in search("go nodes 60", BackendOptions=NETWORK_PACE).final[0]
    session = Session(UCI_ShowEPS=True, BackendOptions=f"favourite=a1a8,{NETWORK_PACE}",
                      MinibatchSize=4)
    try:
        # 600 nodes: enough playouts after the first that time passes (nps and eps need it; at
        # 60 the mate's playouts took under a millisecond on a fast host, half the runs).
        reply = session.go("go nodes 600", "position fen 7k/6pp/8/8/8/8/5PPP/R5K1 w - - 0 1")
        evaluated = sum(session.network.batches)
    finally:
        session.close()
    line = reply.final[0]
    eps, nps, nodes = (reply.field(k, line) for k in ("eps", "nps", "nodes"))
    # Ra8# (the network's favourite): its playouts are a terminal's, never the network's.
    assert evaluated < nodes - 20 and 0 < eps < nps, (evaluated, line)
    assert abs(eps / nps - evaluated / nodes) < 0.05, (evaluated, nodes, line)


@effect_of("UCI_ShowMovesLeft")
def test_show_moves_left():
    assert " movesleft " not in search("go nodes 50", BackendOptions="mlh=1").final[0]
    assert (
        " movesleft "
        in search("go nodes 50", BackendOptions="mlh=1", UCI_ShowMovesLeft=True).final[0]
    )
    # Without a moves-left head there is nothing to show.
    assert " movesleft " not in search("go nodes 50", UCI_ShowMovesLeft=True).final[0]


@effect_of("UCI_Chess960")
def test_chess960_castling_is_king_takes_rook():
    position = "position fen r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1"
    assert search("go nodes 5 searchmoves e1g1", position).bestmove == "e1g1"
    assert search("go nodes 5 searchmoves e1g1", position, UCI_Chess960=True).bestmove == "e1h1"


LC0_LOG = (
    "\n\n============= Log started. =============\n"
    "1202 04:43:50.676768 140216282990528 ../src/src/engine_loop.cc:73] >> uci\n"
    "1202 04:43:50.676794 140216282990528 ../src/src/chess/uciloop.cc:342] << id name Lc0 v0.33.0-dev+git.909a4082\n"
)
"""The start of lc0's log (``lc0 --logfile=FILE``, lc0 v0.33.0-dev 909a408, sent ``uci``)."""
LOG_LINE = re.compile(r"^(\d{4} \d\d:\d\d:\d\d\.\d{6}) \d+ \S+\] (?:(>>|<<) )?(.*)$")


@effect_of("LogFile")
def test_log_file_records_the_dialogue_as_lc0(tmp_path):
    """lc0's log: its header, then a line for each line read (``>>``) or sent (``<<``), with
    the time to the microsecond, the thread and the place in the code, and the engine's own lines
    between them (tests/engine/test_log_file.py); the lines said before the log opened come
    first."""
    log = tmp_path / "uci.log"
    started = time.time()
    session = Session(LogFile=log)
    try:
        reply = session.go("go nodes 5")
    finally:
        session.close()
    text = log.read_text()
    header = "\n\n============= Log started. =============\n"
    assert LC0_LOG.startswith(header) and text.startswith(header), text[:200]
    lc0_lines = [LOG_LINE.match(ln) for ln in LC0_LOG[len(header):].splitlines()]
    assert [m.group(2) for m in lc0_lines if m] == [">>", "<<"]
    said = []
    for line in text[len(header):].splitlines():
        m = LOG_LINE.match(line)
        assert m, f"expected lc0's log format, got {line!r}"
        when = time.strptime(time.strftime("%Y ") + m.group(1)[:-7], "%Y %m%d %H:%M:%S")
        assert abs(time.mktime(when) - started) < 60, line
        if m.group(2):  # the dialogue (the engine's own lines: tests/engine/test_log_file.py)
            said.append(f"{m.group(2)} {m.group(3)}")
    assert ">> setoption name Backend value effects" in said  # before the log opened
    assert ">> go nodes 5" in said and f"<< {reply.lines[-1]}" in said
    assert said.index(">> go nodes 5") < said.index(f"<< {reply.lines[-1]}")


# ------------------------------------------------------------------------------------------- time
@effect_of("MoveOverheadMs")
def test_move_overhead_is_taken_from_movetime():
    """movetime 1000 searches 1000 ms less the overhead (lower bounds only: a loaded machine
    makes a search longer, never shorter)."""
    full = search("go movetime 1000", MoveOverheadMs=0, BackendOptions=NETWORK_PACE)
    short = search("go movetime 1000", MoveOverheadMs=800, BackendOptions=NETWORK_PACE)
    assert full.seconds >= 0.95 and full.seconds > short.seconds + 0.4, (
        full.seconds,
        short.seconds,
    )
    # The reported time too; on a loaded machine the 200 ms may pass before the root's first
    # evaluation, and then the answer comes without an info line (a movetime's ceiling is its
    # budget: tests/engine/test_timemgr.py).
    assert not short.infos or short.field("time") < 700


@effect_of("MoveOverheadMs")
def test_the_budget_waits_for_the_first_evaluation_but_not_past_the_clock():
    """As lc0, a search is not stopped by its budget before the root is evaluated (a move chosen
    blind is the worst answer); the side's clock less MoveOverheadMs still stops it. (The first
    move's budget of 5 s is about 270 ms.)"""
    search()  # the compiled search loaded first: its compile is no network time
    clock = "go wtime 5000 btime 5000"
    slow = search(clock, MoveOverheadMs=0, BackendOptions="delay=0.6")
    assert slow.seconds >= 0.6 and slow.field("nodes") >= 1, slow.lines
    hung = search(clock, MoveOverheadMs=4700, BackendOptions="delay=3")
    assert hung.seconds < 2.5 and hung.infos == [], (hung.seconds, hung.lines)


@effect_of("TimeManager")
def test_time_manager_slowmover_scales_the_budget():
    """At move 20 (lc0's game ply 20: the FEN's full-move number) with 8 s left the legacy
    budget is 1118 ms; slowmover=0.25 makes it 280 ms (a loaded machine may overrun the short
    one by half a second); alphazero and smooth too."""
    position = "position fen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 20"
    paced = dict(MoveOverheadMs=0, BackendOptions=NETWORK_PACE)
    normal = search("go wtime 8000 btime 8000", position, **paced)
    slow = search(
        "go wtime 8000 btime 8000", position, TimeManager="legacy(slowmover=0.25)", **paced
    )
    assert normal.seconds >= 1.0 and normal.seconds > slow.seconds + 0.3, (
        normal.seconds,
        slow.seconds,
    )
    # lc0's other managers: alphazero's 2 % of 8 s is 160 ms; smooth without its piggy bank
    # plans about 600 ms (tests/engine/test_timemgr.py checks their formulas against lc0's)
    for spec in ("alphazero(alphazero-time-pct=2.0)", "smooth(init-piggybank=0.0)"):
        other = search("go wtime 8000 btime 8000", position, TimeManager=spec, **paced)
        assert normal.seconds > other.seconds + 0.3, (spec, normal.seconds, other.seconds)


@effect_of("StrictTiming")
def test_strict_timing_starts_the_clock_at_go_after_isready():
    """lc0 runs a move's clock from its ``position`` line when the go has a clock (the GUI's lag
    before ``go`` is the engine's time); with StrictTiming and an ``isready`` in between, from
    ``go``. A go that waited 0.4 s after its position, stopped at once (50 ms), reports that time."""

    def reported_ms(strict: bool, isready: bool) -> int:
        session = Session(StrictTiming=strict)
        try:
            session.send("isready")  # the network loaded before the position
            session.send("position startpos")
            if isready:
                session.send("isready")
            time.sleep(0.4)
            before = len(session.out.lines)
            session.send("go wtime 60000 btime 60000")
            time.sleep(0.05)
            session.send("stop")
            deadline = time.monotonic() + 30
            while not any(ln.startswith("bestmove") for ln in session.out.lines[before:]):
                assert time.monotonic() < deadline, session.out.lines[before:]
                time.sleep(0.002)
            infos = [ln for ln in session.out.lines[before:] if ln.startswith("info depth")]
            return int(infos[-1].split(" time ")[1].split()[0])
        finally:
            session.close()

    assert reported_ms(strict=False, isready=False) >= 400
    assert reported_ms(strict=False, isready=True) >= 400  # isready alone changes nothing
    assert reported_ms(strict=True, isready=False) >= 400  # nor StrictTiming without isready
    assert reported_ms(strict=True, isready=True) < 350


@effect_of("Ponder")
def test_ponder_is_advertised_and_pondering_works_either_way():
    """UCI: the GUI sets Ponder to say pondering is allowed; an engine may use it in its time
    management. Its default is lc0's, false; with Ponder true or false, go ponder searches
    until ponderhit and then plays within the clock (lc0 refuses go ponder with Ponder off)."""
    session = Session(BackendOptions=NETWORK_PACE)
    try:
        assert "option name Ponder type check default false" in session.send("uci")
        for value in (True, False):
            session.set("Ponder", value)
            session.uci.handle("position startpos moves e2e4")
            before = len(session.out.lines)
            session.uci.handle("go ponder wtime 2000 btime 2000")
            time.sleep(0.3)
            assert not any(ln.startswith("bestmove") for ln in session.out.lines[before:])
            reply = session.go("ponderhit", "position startpos moves e2e4")
            board = chess.Board()
            board.push_uci("e2e4")
            assert chess.Move.from_uci(reply.bestmove) in board.legal_moves
    finally:
        session.close()


@effect_of("Threads")
def test_threads_is_the_number_of_search_threads():
    """lc0's search threads: each gathers a minibatch from the one tree, evaluates it on its own
    thread and backs it up, so a network that takes time (5 ms a call here) is in Threads calls
    at once; 0 is automatic (the host's cores, up to 2, engine.search.params.auto_threads). One
    thread is repeatable; any number ends at the node count asked for."""
    from engine.search.params import auto_threads

    for threads, expected in ((1, 1), (3, 3), (0, auto_threads())):
        session = Session(Threads=threads, BackendOptions=NETWORK_PACE, MinibatchSize=4)
        try:
            n = session.go("go nodes 200").node["N"]
            assert ended_at(n, 200, minibatch=4, threads=expected), (threads, n)
            assert session.network.most_at_once == expected, (threads, expected)
        finally:
            session.close()
    repeated = []
    for _ in range(2):
        session = Session(Threads=1)
        try:
            repeated.append(session.go().visits)
        finally:
            session.close()
    assert repeated[0] == repeated[1]
    session = Session()
    try:
        assert any(
            "Threads: expected a value in [0, 128], got -1" in ln
            for ln in session.send("setoption name Threads value -1")
        )
    finally:
        session.close()


@effect_of("SyzygyPath", "SyzygyFastPlay")
def test_syzygy_tables_choose_the_root_moves():
    """KQvK is won: with the tables only the moves that keep the win by the shortest DTZ are
    searched, with SyzygyFastPlay every winning move (python-chess's reading of the same tables
    is the truth; more in tests/engine/test_syzygy.py)."""
    import chess.syzygy

    from conftest import SHARED

    folder = SHARED / "syzygy"
    if not folder.is_dir():
        pytest.skip(f"../shared is absent here: {folder} not found")
    board = chess.Board("8/8/8/4k3/8/8/8/4K2Q w - - 0 1")
    dtz = {}
    with chess.syzygy.open_tablebase(str(folder)) as truth:
        for move in board.legal_moves:
            board.push(move)
            if truth.probe_wdl(board) == -2:
                dtz[move.uci()] = abs(truth.probe_dtz(board))
            board.pop()
    shortest = {m for m, d in dtz.items() if d == min(dtz.values())}
    assert len(shortest) < len(dtz) < 20
    position = f"position fen {board.fen()}"

    def searched(reply: Reply) -> set[str]:
        return {m for m, n in reply.visits.items() if n > 0}

    assert searched(search("go nodes 60", position)) - shortest  # without tables, any move
    by_dtz = searched(search("go nodes 60", position, SyzygyPath=folder))
    fast = searched(search("go nodes 60", position, SyzygyPath=folder, SyzygyFastPlay=True))
    assert by_dtz <= shortest and fast <= set(dtz) and fast - shortest, (by_dtz, fast, shortest)


INERT = [o for o in opts.OPTIONS if o.inert]
"""lc0's internals with no counterpart here (each option's ``inert`` says why)."""


def _far_from_default(option: opts.Option):
    if option.kind == opts.CHECK:
        return not option.default
    return option.max if option.default != option.max else option.min


@effect_of(*(o.name for o in INERT))
def test_lc0_internals_are_accepted_and_leave_the_search_identical():
    """lc0's configurations load: each internal takes lc0's values by setoption and by lc0's
    flag, and a search with every one of them at the far end of its range visits the root's
    moves exactly as one at the defaults."""
    assert len(INERT) == 10, [o.name for o in INERT]
    far = {o.name: _far_from_default(o) for o in INERT}
    for o in INERT:
        text = str(far[o.name]).lower()
        assert parse_command_line([f"--{o.flag}={text}"]) == {o.name: far[o.name]}, o.name
    base = search("go nodes 120")
    session = Session(**far)
    try:
        assert {name: session.uci.values[name] for name in far} == far
        reply = session.go("go nodes 120")
    finally:
        session.close()
    assert len(base.visits) > 10 and sum(base.visits.values()) >= 119, base.visits
    assert reply.visits == base.visits, (
        f"expected the defaults' root visits {base.visits}, got {reply.visits} with {far}"
    )


@pytest.mark.parametrize("name", [o.name for o in opts.OPTIONS])
def test_every_option_has_an_effect_test(name):
    assert EFFECTS.get(name), f"expected a test of option {name}'s effect in {__name__}"


@effect_of("ConfigFile")
def test_config_file_sets_the_options_at_the_start(tmp_path):
    """Read at the start, as lc0's (tests/engine/test_config_file.py: its format): the file's
    flags set the options; ``--config=`` reads none."""
    from engine.startup.cmdline import command_line_values

    config = tmp_path / "my.config"
    config.write_text("cpuct=2.5\n--threads=1\n")
    values = command_line_values([f"--config={config}"])
    assert values["CPuct"] == 2.5 and values["Threads"] == 1 and values["ConfigFile"] == str(config)
    assert "CPuct" not in command_line_values(["--config="])
