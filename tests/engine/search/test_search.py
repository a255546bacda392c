"""Search against hand-computed values on fake networks, terminal handling and tree reuse."""

from __future__ import annotations

import math

import chess
import numpy as np
import pytest

from engine.backend import POLICY_SIZE, BackendAttributes, NetworkOutput
from engine.encoding import policy_indices
from engine.search import Limit, PlayoutClock, Search, SearchParams, from_options
from engine.search.core import gather as cgather
from engine.search.core import tree as ctree
from engine.search.core.params import pack
from engine.search.core.view import NodeView, puct_terms
from reference_mcts import lc0_cpuct, lc0_prior, lc0_softmax
from tree_checks import ended_at_limit, run_settled

NO_PRUNING = SearchParams(smart_pruning_factor=0.0)


class ConstNetwork:
    """Uniform policy logits (0), value q for every position; counts evaluated positions."""

    input_format = 1
    has_wdl = True
    has_mlh = False
    max_batch = 64

    def __init__(self, q: float = 0.0, d: float = 0.0, favourite: str | None = None) -> None:
        self.q, self.d, self.favourite = q, d, favourite
        self.evaluated = 0

    def attributes(self) -> BackendAttributes:
        """Minibatches of max_batch; no padding (prefetch up to MaxPrefetch); one call at a time."""
        return BackendAttributes(
            name="const",
            description=(),
            max_batch=self.max_batch,
            preferred_batch=self.max_batch,
            padded_size=None,
            concurrency=1,
            packed_input=False,
            policy_gather=False,
            prepare=None,
        )

    def evaluate(self, planes: np.ndarray) -> NetworkOutput:
        n = planes.shape[0]
        self.evaluated += n
        policy = np.zeros((n, POLICY_SIZE), np.float32)
        return NetworkOutput(
            policy,
            np.full(n, self.q, np.float32),
            np.full(n, self.d, np.float32),
            np.zeros(n, np.float32),
        )


class LogitNetwork(ConstNetwork):
    """Policy logit 1.0 on one policy index (of the start position's move e2e4), 0 elsewhere."""

    def evaluate(self, planes: np.ndarray) -> NetworkOutput:
        out = super().evaluate(planes)
        idx = policy_indices(chess.Board())[chess.Move.from_uci("e2e4")]
        out.policy[:, idx] = 1.0
        return out


class FavouriteNetwork(ConstNetwork):
    """Policy logit 5 on the start position's e2e4 (89 % of the prior), 0 elsewhere."""

    def evaluate(self, planes: np.ndarray) -> NetworkOutput:
        out = super().evaluate(planes)
        out.policy[:, policy_indices(chess.Board())[chess.Move.from_uci("e2e4")]] = 5.0
        return out


def _root_visits_on(clock: PlayoutClock, nodes: int) -> int:
    search = Search(FavouriteNetwork(), from_options({"Threads": 1}))  # one thread: repeatable
    search.state.clock = clock
    search.set_position(chess.Board())
    search.run(Limit(nodes=nodes))
    visits = search.root.n
    search.close()
    return visits


def test_smart_pruning_waits_200ms_by_the_searchs_clock():
    """lc0's SmartPruningStopper stops a go nodes search once the runner-up cannot catch up,
    but only from 200 ms after the first evaluation: by a clock at 1e9 nodes/s that never comes
    within 400 nodes; at 100 nodes/s it comes after 20 playouts, and the search stops where
    e2e4's lead passes the remaining playouts / 1.33 (236 visits). Run twice, the same: the
    search's decisions follow its clock, not the host's speed."""
    fast = [_root_visits_on(PlayoutClock(1e9), 400) for _ in range(2)]
    slow = [_root_visits_on(PlayoutClock(100.0), 400) for _ in range(2)]
    assert fast[0] == fast[1] >= 400
    assert slow[0] == slow[1] and 150 <= slow[0] < 300, slow


def test_playout_clock_rejects_a_pace_of_zero():
    with pytest.raises(ValueError, match="expected nodes_per_s > 0, got 0"):
        PlayoutClock(0.0)


def test_cpuct_matches_lc0_formula():
    p = SearchParams()
    for n in (0, 1, 100, 50_000):
        expected = lc0_cpuct(n, 1.745, 38739.0, 3.894)
        tree = star([1.0], cn=[0], n=n)
        mult = scores(p, tree, at_root=False, draw_score=0.0)[2]
        assert mult == pytest.approx(expected * math.sqrt(max(n - 1, 1)), rel=1e-12)


def star(priors, cn, cq=None, cd=None, cnif=None, n=0, wl=0.0, d=0.0, vpol=0.0) -> ctree.Tree:
    """A tree of a root (n, wl, d, visited policy vpol) and one child per prior, each with its
    visits cn, value cq, draw share cd and visits in flight cnif."""
    k = len(priors)
    zeros = [0] * k
    cq, cd, cnif = cq or zeros, cd or zeros, cnif or zeros
    tree = ctree.new_tree()
    stored = np.array([ctree.compress_prior(p) for p in priors], np.uint16)  # lc0's 16 bits
    ctree.expand(tree, 0, np.arange(k, dtype=np.int32), stored, k)
    for j in range(k):
        c = ctree.new_node(tree, 0, j)
        tree.nodes["n"][c], tree.nodes["nif"][c] = cn[j], cnif[j]
        tree.nodes["wl"][c], tree.nodes["d"][c] = cq[j], cd[j]
    tree.nodes["n"][0], tree.nodes["wl"][0], tree.nodes["d"][0] = n, wl, d
    tree.nodes["vpol"][0] = vpol
    return tree


def scores(params: SearchParams, tree: ctree.Tree, at_root: bool, draw_score: float):
    """The compiled selection's (Q+M, P * cpuct * sqrt(N - 1), puct_mult) of the root's children."""
    k = int(tree.nodes["nedges"][0])
    qm, pu = np.zeros(k), np.zeros(k)
    mult = cgather.child_scores(tree, pack(params, False), 0, at_root, draw_score, k, qm, pu)
    return qm, pu, mult


def test_child_scores_by_hand():
    """Q+U of each child against the formula written out with the numbers of a small node."""
    p = SearchParams()
    tree = star(
        [0.5, 0.3, 0.2],
        cn=[6, 4, 0],
        cq=[0.2, -0.05, 0.0],
        cd=[0.3, 0.4, 0.0],
        cnif=[1, 0, 2],
        n=11,
        wl=-0.1,
        d=0.3,
        vpol=0.8,
    )  # node's own value: -0.1
    qm, pu, puct_mult = scores(p, tree, at_root=False, draw_score=0.0)
    cpuct = lc0_cpuct(11, 1.745, 38739.0, 3.894)
    assert puct_mult == pytest.approx(cpuct * math.sqrt(10))
    fpu = 0.1 - 0.33 * math.sqrt(0.8)  # -Q_parent - FpuValue * sqrt(visited policy)
    assert qm[2] == pytest.approx(fpu)
    p0, p1, p2 = (ctree.prior(ctree.compress_prior(p)) for p in (0.5, 0.3, 0.2))
    assert p0 == 0.5 and p1 == pytest.approx(0.3, rel=5e-4) and p2 == pytest.approx(0.2, rel=5e-4)
    expected = [
        0.2 + puct_mult * p0 / (1 + 6 + 1),
        -0.05 + puct_mult * p1 / (1 + 4 + 0),
        fpu + puct_mult * p2 / (1 + 0 + 2),
    ]
    got = [q + u / (1 + n + f) for q, u, n, f in zip(qm, pu, [6, 4, 0], [1, 0, 2])]
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    # The reports read the same terms (core/view.py puct_terms).
    terms = puct_terms(tree, pack(p, False), 0, False, 0.0)
    assert (terms.q == qm).all() and (terms.qm == qm).all() and (terms.pu == pu).all()
    assert terms.puct_mult == puct_mult
    # DrawScore enters visited children's Q as draw_score * D.
    qm2, _, _ = scores(p, tree, at_root=False, draw_score=0.5)
    assert qm2[0] == pytest.approx(0.2 + 0.5 * 0.3)


def test_report_terms_keep_q_without_the_moves_left_utility():
    """VerboseMoveStats shows Q without M (its order and Q column) and S with it, as lc0's."""
    p = SearchParams()
    tree = star([0.6, 0.4], cn=[3, 2], cq=[0.9, 0.95], n=6, wl=-0.9)  # |Q| above the threshold
    tree.nodes["m"][1:3] = [20.0, 40.0]
    tree.nodes["m"][0] = 30.0
    plain = puct_terms(tree, pack(p, False), 0, False, 0.0)
    with_m = puct_terms(tree, pack(p, True), 0, False, 0.0)
    assert (with_m.q == plain.q).all() and (plain.qm == plain.q).all()
    assert with_m.qm[0] > with_m.q[0] and with_m.qm[1] < with_m.q[1]  # shorter win favoured
    k = 2
    qm, pu = np.zeros(k), np.zeros(k)
    cgather.child_scores(tree, pack(p, True), 0, False, 0.0, k, qm, pu)
    assert (with_m.qm == qm).all() and (with_m.pu == pu).all()


def test_fpu_absolute_at_root():
    p = SearchParams(fpu_absolute_at_root=True, fpu_value_at_root=-1.0)
    tree = star([0.6, 0.4], cn=[0, 0], n=5, wl=0.4)
    assert scores(p, tree, at_root=True, draw_score=0.0)[0][1] == -1.0
    assert scores(p, tree, at_root=False, draw_score=0.0)[0][1] == pytest.approx(-0.4)
    assert puct_terms(tree, pack(p, False), 0, True, 0.0).q[1] == -1.0


def _assign_visits_numpy(qm, pu, cn, cnif, visits, mask=None, spread=False):
    """Reference multi-visit picking written plainly with numpy (argmax / partition a step):
    what assign_visits' heap must reproduce exactly, ties and masks included."""
    score = qm + pu / (1.0 + cn + cnif)
    if mask is not None:
        score = np.where(mask, score, -np.inf)
    out, k = {}, len(score)
    started = cnif.copy()
    while visits > 0:
        best = int(np.argmax(score))
        take = 1
        if visits > 1 and k > 1:
            second = np.partition(score, k - 2)[k - 2]
            denom = 1.0 + cn[best] + started[best]
            if second <= qm[best]:
                take = visits
            else:
                take = int(pu[best] / (second - qm[best]) - denom) + 1
            take = max(1, min(take, visits))
        elif visits > 1:
            take = visits
        out[best] = out.get(best, 0) + take
        cnif[best] += take
        started[best] += take if spread else _lc0_started(cn[best], started[best], take)
        visits -= take
        score[best] = qm[best] + pu[best] / (1.0 + cn[best] + started[best])
    return out


def _lc0_started(n: float, started: float, take: int) -> int:
    """lc0's current_nstarted after ``take`` more visits: all of them on a visited child; on
    a leaf (n 0) one if none was in flight (its first visit), none after (collisions)."""
    if n > 0:
        return take
    return 1 if started == 0 else 0


def assign(qm, pu, cn, visits, mask=None, spread=False) -> tuple[dict[int, int], np.ndarray]:
    """The compiled multi-visit picking (_assign) on a star tree: {child: visits} in the order
    given, and the children's visits in flight after it."""
    k = len(qm)
    tree = star([1.0 / k] * k, cn=[int(c) for c in cn], n=int(sum(cn)) + 1)
    use_mask = mask is not None
    mask_u8 = np.asarray(mask, np.uint8) if use_mask else np.zeros(0, np.uint8)
    order = np.zeros((4, k), np.int64)
    given = cgather._assign(
        tree,
        0,
        np.asarray(qm, np.float64),
        np.asarray(pu, np.float64),
        k,
        visits,
        mask_u8,
        use_mask,
        np.zeros((3, k)),
        order,
        spread,
    )
    got = {int(order[cgather.GIVEN_CHILD, g]): int(order[cgather.GIVEN_K, g]) for g in range(given)}
    nif = np.zeros(k)
    for c, v in got.items():
        nif[c] = v
    return got, nif


def test_assign_visits_equals_one_at_a_time():
    """Multi-visit picking gives each child what picking one visit at a time would give, in the
    same order, masked children none; a leaf (no visit yet) counts one visit started at most,
    as lc0's picks (its others are collisions)."""
    rng = np.random.default_rng(7)
    for trial in range(200):
        spread = trial % 2 == 1  # a big minibatch's rule: every visit counts, leaves too
        k = int(rng.integers(1, 40))
        visits = int(rng.integers(1, 300))
        qm, pu = rng.uniform(-0.5, 0.5, k), rng.uniform(0.0, 3.0, k)
        cn = rng.integers(0, 20, k).astype(float)
        mask = rng.random(k) < 0.7 if trial % 3 == 0 else None
        if mask is not None and not mask.any():
            mask[0] = True
        cnif_b, started = np.zeros(k), np.zeros(k)
        got, cnif_a = assign(qm, pu, cn, visits, mask, spread)
        order = []
        for _ in range(visits):
            score = qm + pu / (1 + cn + started)
            if mask is not None:
                score = np.where(mask, score, -np.inf)
            i = int(np.argmax(score))
            cnif_b[i] += 1
            started[i] += 1 if spread else _lc0_started(cn[i], started[i], 1)
            if i not in order:
                order.append(i)
        assert sum(got.values()) == visits
        assert list(got) == order
        np.testing.assert_array_equal(cnif_a, cnif_b)


def test_assign_visits_equals_numpy_reference_with_ties():
    """The picking gives exactly the plain argmax/partition algorithm's visits and order, also
    with equal scores (coarse values) where one-at-a-time picking may differ at the boundary;
    every other trial a single visit (the search gives one to best_child instead)."""
    rng = np.random.default_rng(8)
    for trial in range(400):
        k = int(rng.integers(1, 40))
        visits = 1 if trial % 2 else int(rng.integers(1, 300))
        qm = rng.integers(-2, 3, k) / 4.0
        pu = rng.integers(0, 4, k) / 2.0
        cn = rng.integers(0, 5, k).astype(float)
        mask = rng.random(k) < 0.7 if trial % 3 == 0 else None
        if mask is not None and not mask.any():
            mask[0] = True
        cnif_b = np.zeros(k)
        spread = trial % 4 < 2
        got, cnif_a = assign(qm, pu, cn, visits, mask, spread)
        expected = _assign_visits_numpy(qm, pu, cn, cnif_b, visits, mask, spread)
        assert list(got.items()) == list(expected.items())
        np.testing.assert_array_equal(cnif_a, cnif_b)


def test_one_visit_goes_to_the_best_score_of_child_scores():
    """best_child (a node's single visit, in one pass) picks the child with the highest score
    of child_scores' terms, qm + pu / (1 + N + n_in_flight), ties to the lower index, masked
    children never; unvisited children (FPU), at the root and below, draw scores either way."""
    rng = np.random.default_rng(9)
    params = pack(SearchParams(), False)
    for trial in range(300):
        k = int(rng.integers(1, 30))
        priors = list(rng.integers(1, 5, k) / (4.0 * k))  # coarse: ties happen
        cn = [int(v) for v in rng.integers(0, 4, k)]
        cq = [float(v) for v in rng.integers(-2, 3, k) / 4.0]
        cnif = [int(v) for v in rng.integers(0, 3, k)]
        tree = star(priors, cn=cn, cq=cq, cnif=cnif, n=sum(cn) + 1, wl=0.25, d=0.1, vpol=0.5)
        at_root, draw = bool(trial % 2), float(rng.choice([0.0, -0.3]))
        mask = (rng.random(k) < 0.7).astype(np.uint8) if trial % 3 == 0 else None
        if mask is not None and not mask.any():
            mask[0] = 1
        qm, pu = np.zeros(k), np.zeros(k)
        cgather.child_scores(tree, params, 0, at_root, draw, k, qm, pu)
        score = qm + pu / (1.0 + np.array(cn, float) + np.array(cnif, float))
        if mask is not None:
            score = np.where(mask > 0, score, -np.inf)
        flags = mask if mask is not None else np.zeros(0, np.uint8)
        got = cgather.best_child(tree, params, 0, at_root, draw, k, flags, mask is not None)
        assert got == int(np.argmax(score)), (trial, got, score)


def test_nodes_one_plays_top_prior():
    net = LogitNetwork()
    s = Search(net, NO_PRUNING)
    s.set_position(chess.Board())
    result = s.run(Limit(nodes=1))
    assert result.bestmove == chess.Move.from_uci("e2e4")
    assert s.root.n == 1 and net.evaluated == 1


def test_priors_are_softmax_with_policy_temperature():
    net = LogitNetwork()
    s = Search(net, NO_PRUNING)
    s.set_position(chess.Board())
    s.run(Limit(nodes=1))
    k = 20
    # lc0's softmax (its fast exp, float32: reference_mcts.lc0_softmax), stored as lc0 stores
    # a prior: 16 bits, an 11-bit mantissa (reference_mcts.lc0_prior).
    p = lc0_softmax(np.array([1.0] + [0.0] * (k - 1)), 1.359)
    assert s.root.p[0] == lc0_prior(float(p[0]))
    assert s.root.p[1] == lc0_prior(float(p[1]))
    top = math.exp(1.0 / 1.359)  # within lc0's fast exp's error of the exact softmax
    assert s.root.p[0] == pytest.approx(top / (top + k - 1), rel=2e-3)
    assert sum(s.root.p) == pytest.approx(1.0, rel=5e-4)


def test_a_node_limit_ends_with_the_iteration_that_reaches_it():
    """lc0's ``go nodes``: its VisitsStopper is asked between iterations, so the search ends at
    the limit or past it by its last minibatch (lc0 ends a search of 400 at 399-414 root
    visits); a search of fewer nodes than its first minibatch holds stops at that minibatch."""
    s = Search(ConstNetwork(), NO_PRUNING)
    s.set_position(chess.Board())
    result = run_settled(s, Limit(nodes=500))
    assert ended_at_limit(result.nodes, 500, s)
    s.set_position(chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"))
    assert s.run(Limit(nodes=1)).nodes == 1  # the root's own evaluation: one iteration
    s.close()


def test_mate_in_one_found_and_scored():
    board = chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")  # Ra8#
    s = Search(ConstNetwork(), NO_PRUNING)
    s.set_position(board)
    result = s.run(Limit(nodes=200))
    assert result.bestmove == chess.Move.from_uci("a1a8")
    assert result.infos[0].mate == 1


def test_stalemate_child_is_draw():
    # Black king a8, white Kb6, Qc1: Qc7 is stalemate.
    board = chess.Board("k7/8/1K6/8/8/8/8/2Q5 w - - 0 1")
    s = Search(ConstNetwork(q=0.9), NO_PRUNING)
    s.set_position(board)
    s.run(Limit(nodes=300))
    i = s.root.moves.index(chess.Move.from_uci("c1c7"))
    child = s.root.children[i]
    assert child is not None and child.terminal is not None and child.terminal.kind == "stalemate"
    assert s.root.cq[i] == 0.0 and s.root.cd[i] == 1.0


def test_root_without_moves():
    s = Search(ConstNetwork(), NO_PRUNING)
    s.set_position(chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"))
    assert s.run(Limit(nodes=10)).bestmove is None


class KnightsNetwork(ConstNetwork):
    """Policy logit 8 on the knight moves g1f3 and f3g1 (the same indices for Black's g8f6
    and f6g8: lc0's policy is the side to move's), 0 elsewhere: knights out and back."""

    def evaluate(self, planes: np.ndarray) -> NetworkOutput:
        out = super().evaluate(planes)
        out.policy[:, policy_indices(chess.Board())[chess.Move.from_uci("g1f3")]] = 8.0
        back = chess.Board()
        back.push_uci("g1f3")
        back.push_uci("g8f6")
        out.policy[:, policy_indices(back)[chess.Move.from_uci("f3g1")]] = 8.0
        return out


def _node(search: Search, path: str) -> NodeView | None:
    node: NodeView | None = search.root
    for uci in path.split():
        assert node is not None and node.expanded
        node = node.children[node.moves.index(chess.Move.from_uci(uci))]
    return node


@pytest.mark.parametrize("two_fold", [True, False])
def test_repetitions_inside_the_tree(two_fold):
    """Knights out and back: the root position repeated inside the tree (4 plies down) is a
    two-fold draw with TwoFoldDraws (python-chess sees the repetition), else a position like
    any other; after the game has repeated it twice, the third time is a draw either way."""
    board = chess.Board()
    s = Search(
        KnightsNetwork(q=-0.5), SearchParams(smart_pruning_factor=0.0, two_fold_draws=two_fold)
    )
    s.set_position(board)
    s.run(Limit(nodes=300))
    node = _node(s, "g1f3 g8f6 f3g1 f6g8")
    after = board.copy()
    for uci in ("g1f3", "g8f6", "f3g1", "f6g8"):
        after.push_uci(uci)
    assert after.is_repetition(2) and node is not None and node.n > 0
    if two_fold:
        assert node.terminal is not None and node.terminal.kind == "twofold"
        assert node.wl == 0.0 and node.d == 1.0
    else:
        assert node.terminal is None and node.expanded
    # The game itself has the start position twice: the third occurrence is a draw at depth 1.
    s.set_position(after.copy())  # a new root: the tree below it is kept
    game = after.copy()
    for uci in ("g1f3", "g8f6", "f3g1"):
        game.push_uci(uci)
    s.set_position(game)
    s.run(Limit(nodes=100))
    child = _node(s, "f6g8")
    game.push_uci("f6g8")
    assert game.is_repetition(3)
    assert child is not None and child.terminal is not None and child.terminal.kind == "threefold"
    s.close()


def test_tree_reuse_keeps_subtree():
    s = Search(ConstNetwork(), NO_PRUNING)
    board = chess.Board()
    s.set_position(board)
    s.run(Limit(nodes=400))
    best = max(range(len(s.root.moves)), key=lambda i: s.root.cn[i])
    move = s.root.moves[best]
    child_n = s.root.children[best].n
    board.push(move)
    assert s.set_position(board)
    assert s.root.n == child_n and s.root.parent is None
    # The same position again keeps the whole tree, in place.
    nodes = s.state.tree.nodes
    assert s.set_position(board.copy()) and s.root.n == child_n and s.state.tree.nodes is nodes
    # A position that does not continue the game starts a new tree.
    assert not s.set_position(chess.Board("8/8/8/8/8/8/k7/7K w - - 0 1"))


def _game_searches(options: dict, plies: int) -> tuple[list[tuple], list[np.ndarray]]:
    """A game of ``plies`` moves searched with tree reuse (one thread: deterministic): each
    search's (bestmove, the root's visits by move), and its tree's node array (held: an id
    alone could be a freed array's, reused)."""
    s = Search(ConstNetwork(), from_options({"SmartPruningFactor": 0.0, "Threads": 1} | options))
    board, results, arrays = chess.Board(), [], []
    for _ in range(plies):
        assert s.set_position(board) or not board.move_stack
        result = s.run(Limit(nodes=600))
        results.append((result.bestmove, tuple(zip(s.root.moves, s.root.cn))))
        arrays.append(s.state.tree.nodes)
        board.push(result.bestmove)
    s.close()
    return results, arrays


def test_tree_reuse_copies_into_the_arrays_of_the_tree_before_and_searches_the_same():
    results, arrays = _game_searches({}, 6)
    # From the third move the kept subtree goes into the arrays of the tree two moves before
    # (their pages already backed), the two sets taking turns.
    assert arrays[3] is arrays[1] and arrays[4] is arrays[2] and arrays[1] is not arrays[2]
    # RamLimitMb keeps no second set (its count would miss it): a new one each move.
    limited, fresh = _game_searches({"RamLimitMb": 4000}, 6)
    assert len({id(a) for a in fresh[1:]}) == 5
    assert results == limited


def test_nn_cache_avoids_reevaluation():
    net = ConstNetwork()
    s = Search(net, NO_PRUNING)
    s.set_position(chess.Board())
    s.run(Limit(nodes=100))
    first = net.evaluated
    s.set_position(chess.Board("8/8/8/8/8/8/k7/7K w - - 0 1"))
    s.set_position(chess.Board())
    s.run(Limit(nodes=100))
    assert net.evaluated - first < first  # a new tree, but its positions come from the cache


def test_searchmoves_restricts_root():
    s = Search(ConstNetwork(), NO_PRUNING)
    s.set_position(chess.Board())
    only = (chess.Move.from_uci("a2a3"), chess.Move.from_uci("h2h3"))
    result = s.run(Limit(nodes=50, searchmoves=only))
    assert result.bestmove in only
    assert all(s.root.cn[i] == 0 for i, m in enumerate(s.root.moves) if m not in only)


def test_a_network_that_always_fails_ends_the_search_with_a_legal_move_and_a_message():
    """The search no longer propagates a network's exception (the controller would answer the
    first legal move with the tree left in flight): it stops, says so, and answers from what it
    has (here nothing: the first legal move)."""

    class Broken(ConstNetwork):
        def evaluate(self, planes):
            raise RuntimeError("boom")

    s = Search(Broken(), NO_PRUNING)
    board = chess.Board()
    s.set_position(board)
    lines: list[str] = []
    result = s.run(Limit(nodes=10), on_verbose=lines.extend)
    assert result.bestmove in board.legal_moves and result.nodes == 0
    assert lines == [
        "error: network evaluation failed: RuntimeError: boom; the search stopped at 0 nodes"
    ]


def test_time_limit_counts_from_the_go_arrival():
    """lc0 counts a move's time from the go command: time spent before the search starts (here a
    simulated 10 s) is already used, so a 200 ms budget is over at once (no more than the root)."""
    import time

    s = Search(ConstNetwork(), NO_PRUNING)
    s.set_position(chess.Board())
    late = s.run(Limit(budget_ms=200, started_at=time.monotonic() - 10.0))
    assert late.nodes <= 1 and late.time_ms >= 10_000
    s.clear()
    s.set_position(chess.Board())
    on_time = s.run(Limit(budget_ms=200, started_at=time.monotonic()))
    assert on_time.nodes > 1 and 150 <= on_time.time_ms < 1_000


def test_search_params_are_built_from_the_option_table():
    """Each search option sets its own field, and the derived root parameters follow lc0's rules
    (the root's cpuct only with RootHasOwnCpuctParams; FpuStrategyAtRoot=same follows FpuStrategy)."""
    from engine import options as opts
    from engine.search.params import auto_threads

    base = from_options({})
    assert SearchParams() == base
    for option in opts.OPTIONS:
        if not option.param:
            continue
        if option.kind == opts.CHECK:
            value = not option.default
        elif option.kind == opts.COMBO:
            value = next(c for c in option.choices if c != option.default)
        else:
            value = option.max if option.default != option.max else option.min
            value = int(value) if option.kind == opts.SPIN else float(value)
        changed = from_options({option.name: value})
        assert getattr(changed, option.param) == value, option.name
        default = auto_threads() if option.name == "Threads" else option.default  # 0: automatic
        assert getattr(base, option.param) == default, option.name
    assert from_options({"CPuctAtRoot": 3.0}).cpuct_at_root == base.cpuct
    assert from_options({"CPuctAtRoot": 3.0, "RootHasOwnCpuctParams": True}).cpuct_at_root == 3.0
    assert from_options({"FpuStrategy": "absolute"}).fpu_absolute_at_root
    assert not from_options(
        {"FpuStrategy": "absolute", "FpuStrategyAtRoot": "reduction"}
    ).fpu_absolute_at_root
    assert from_options({"RamLimitMb": 16}).ram_limit_bytes == 16_000_000
    assert base.ram_limit_bytes == 0


class SlowNetwork(ConstNetwork):
    """ConstNetwork whose evaluations take ``delay`` seconds (a big network on a slow device)."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    def evaluate(self, planes: np.ndarray) -> NetworkOutput:
        import time

        time.sleep(self.delay)
        return super().evaluate(planes)


def test_stop_does_not_wait_for_the_evaluation_in_flight():
    """stop() during a 1-second evaluation returns a legal move long before the evaluation ends;
    the batch is backed up once the search settles (lc0's, after the bestmove): the root's
    evaluation, its one visit."""
    import threading
    import time

    search = Search(SlowNetwork(1.0), NO_PRUNING)
    search.set_position(chess.Board())
    result = {}
    thread = threading.Thread(
        target=lambda: result.setdefault("r", search.run(Limit(infinite=True), settle=False))
    )
    thread.start()
    time.sleep(0.1)
    t0 = time.monotonic()
    search.stop()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert time.monotonic() - t0 < 0.5, "run() waited for the evaluation instead of stopping"
    assert result["r"].bestmove in chess.Board().legal_moves
    assert search.root.n == 0
    search.settle()
    search.state.changed()
    assert search.root.n == 1 and search.root.expanded
    _assert_tree_consistent(search.root)
    search.close()


def _assert_tree_consistent(root: NodeView) -> None:
    """No node left pending or with visits in flight; every node's visits = 1 + its children's."""
    stack = [root]
    while stack:
        node = stack.pop()
        assert not node.pending
        if node.expanded:
            assert not any(node.cnif)
            children = [c for c in node.children if c is not None]
            assert node.n == 1 + sum(c.n for c in children)
            stack += children


class StoppingNetwork(ConstNetwork):
    """Calls ``search.stop()`` during its ``calls``-th evaluation (a stop while a batch is out)."""

    def __init__(self, calls: int) -> None:
        super().__init__(q=0.1)
        self.calls, self.search = calls, None

    def evaluate(self, planes: np.ndarray) -> NetworkOutput:
        self.calls -= 1
        if self.calls == 0:
            self.search.stop()
        return super().evaluate(planes)


def test_stop_while_a_batch_is_evaluated_keeps_the_tree_consistent():
    """A stop that arrives while a batch is evaluated drops that batch: no node stays pending,
    no visit stays in flight, every node's visits equal 1 + its children's."""
    net = StoppingNetwork(calls=12)
    search = Search(net, NO_PRUNING)
    net.search = search
    search.set_position(chess.Board())
    result = search.run(Limit(nodes=50_000))
    assert result.bestmove in chess.Board().legal_moves
    assert 0 < search.root.n < 12 * net.max_batch
    _assert_tree_consistent(search.root)
    search.close()


def test_collision_limit_scales_with_tree_size_as_lc0():
    """lc0's CalculateCollisionsLeft with its defaults (start 28, end 145000, power 1.25, max 80000),
    written out by hand."""
    p = SearchParams()
    assert p.collision_visit_limit(0) == 1
    assert p.collision_visit_limit(28) == 1
    assert p.collision_visit_limit(145_000) == 80_000
    assert p.collision_visit_limit(10**7) == 80_000
    for n in (100, 4_000, 50_000):  # lc0's Mix(80000, 1, share): rounded to the nearest
        expected = round(1 + ((n - 28) / (145_000 - 28)) ** 1.25 * 79_999)
        assert p.collision_visit_limit(n) == expected
    assert p.collision_visit_limit(100) == 7  # 1 + ((72 / 144972) ** 1.25) * 79999 = 6.93
    assert p.collision_visit_limit(400) == 47  # 46.2 truncated before
    assert SearchParams(max_collision_visits_scaling_end=0).collision_visit_limit(5) == 80_000


def test_prefetch_fills_small_batches_for_the_cache_only():
    """MaxPrefetch (lc0's PrefetchIntoCache): batches of fewer new positions than MaxPrefetch
    (minibatches of 16) are filled up with likely next positions; they reach the network and
    the NN cache, while the tree gets only its gathers' visits, and later visits to those
    positions are cache hits. (One search thread: with two, which batches come out small
    depends on timing, and the counts differed by one.)"""
    results = {}
    for prefetch in (0, 32):
        net = ConstNetwork(q=0.05)
        params = SearchParams(
            smart_pruning_factor=0.0, max_prefetch=prefetch, threads=1, minibatch_size=16
        )
        search = Search(net, params)
        search.set_position(chess.Board())
        res = search.run(Limit(nodes=300))
        assert res.bestmove in chess.Board().legal_moves
        assert search.root.n == res.nodes and ended_at_limit(res.nodes, 300, search)
        _assert_tree_consistent(search.root)
        results[prefetch] = (net.evaluated, len(search.cache), search.root.count_nodes())
        search.close()
    (eval0, cache0, _), (eval32, cache32, _) = results[0], results[32]
    assert eval32 > eval0, "no position was prefetched"
    assert cache32 > cache0  # the prefetched results are kept


class PaddedNetwork(ConstNetwork):
    """ConstNetwork computing every batch padded to a multiple of 16 rows, counting the calls."""

    def __init__(self) -> None:
        super().__init__(q=0.05)
        self.sizes: list[int] = []

    def attributes(self) -> BackendAttributes:
        return BackendAttributes(
            "padded",
            (),
            self.max_batch,
            self.max_batch,
            lambda n: -(-n // 16) * 16,
            1,
            False,
            False,
            None,
        )

    def evaluate(self, planes: np.ndarray) -> NetworkOutput:
        self.sizes.append(planes.shape[0])
        return super().evaluate(planes)


def test_prefetch_fills_the_padding_of_a_padding_backend():
    """A backend that computes each batch padded (compiled sizes; a device whose call costs
    the same whatever its rows) gets its padding filled with prefetched positions, beyond
    MaxPrefetch: those rows cost no network time. MaxPrefetch 0 still turns prefetch off, and
    the tree gets the visits of its gathers alone."""
    sizes = {}
    for prefetch in (0, 4):
        net = PaddedNetwork()
        # One thread: the batches' sizes in order (two threads' first batches come either way).
        params = SearchParams(smart_pruning_factor=0.0, max_prefetch=prefetch, threads=1)
        search = Search(net, params)
        search.set_position(chess.Board())
        res = search.run(Limit(nodes=400))
        assert search.root.n == res.nodes and ended_at_limit(res.nodes, 400, search)
        _assert_tree_consistent(search.root)
        sizes[prefetch] = net.sizes
        search.close()
    assert any(n % 16 for n in sizes[0])  # without prefetch: batches as gathered
    # Beyond MaxPrefetch's 4, once the tree has more than the root's 20 children to offer:
    assert sizes[4][:2] == [1, 20] and all(n % 16 == 0 for n in sizes[4][2:]), sizes[4]


class DeviceNetwork(LogitNetwork):
    """LogitNetwork as a simulated accelerator: a call costs 256 rows whatever it computes;
    counts the rows of each call."""

    max_batch = 256

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def attributes(self) -> BackendAttributes:
        return BackendAttributes(
            "device", (), self.max_batch, 256, lambda n: max(n, 256), 1, False, False, None
        )

    def evaluate(self, planes: np.ndarray) -> NetworkOutput:
        self.sizes.append(planes.shape[0])
        return super().evaluate(planes)


def test_prefetch_fills_a_device_batch_through_cached_positions():
    """On a device whose every call costs the same rows, a small tree offers fewer unexpanded
    positions than the padding holds: past MaxPrefetch the prefetch goes on through positions
    the NN cache holds but the tree has not expanded, by their cached priors. The third call
    comes when the tree has expanded the root and one child (40 unexpanded children, 19 of
    them cached by the second call), yet it is full: positions two plies below the tree. The
    tree still gets the visits of its gathers alone."""
    net = DeviceNetwork()
    params = SearchParams(smart_pruning_factor=0.0, max_prefetch=4, threads=1, minibatch_size=256)
    search = Search(net, params)
    search.set_position(chess.Board())
    res = search.run(Limit(nodes=3000))
    assert search.root.n == res.nodes and ended_at_limit(res.nodes, 3000, search)
    _assert_tree_consistent(search.root)
    search.close()
    assert net.sizes[:3] == [1, 20, 256], net.sizes


def test_move_without_visits_is_the_cached_favourite():
    """A search stopped before any visit (here `go nodes 0`) plays the network's favourite when
    the NN cache knows the root, not merely the first legal move."""
    net = LogitNetwork()
    board = chess.Board()
    first = Search(net, NO_PRUNING)
    first.set_position(board)
    assert first.run(Limit(nodes=0)).bestmove == next(iter(board.legal_moves))  # nothing known yet
    first.run(Limit(nodes=1))  # evaluates the root: e2e4 has the highest prior
    second = Search(net, NO_PRUNING, cache=first.cache)  # a new tree, the same NN cache
    second.set_position(board)
    assert second.run(Limit(nodes=0)).bestmove == chess.Move.from_uci("e2e4")
    first.close()
    second.close()
