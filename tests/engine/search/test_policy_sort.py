"""The evaluation's policy sort (core/backup.py's ``sort_policies``): each position's legal moves
in lc0's edge order (Node::SortEdges: decreasing 16-bit prior) with their priors, checked against
Python's sort of the same priors; equal priors come as a group, in lc0's order among themselves
(tests/engine/search/test_lc0_order.py checks that order against lc0's code)."""

from __future__ import annotations

import numpy as np

from engine.board.position import FIELDS
from engine.search.core.backup import fast_softmax, sort_policies
from engine.search.core.gather import REQUEST
from engine.search.core.tree import compress_priors

ROWS, WIDTH, POLICY = 64, 256, 1858


def _inputs(seed: int):
    rng = np.random.default_rng(seed)
    req = np.zeros(ROWS, REQUEST)
    req["count"] = rng.integers(0, 80, ROWS)
    req["count"][:4] = [0, 1, 2, 218]  # no move, one, two, the most a position has
    moves = rng.integers(0, 1 << 16, (ROWS, WIDTH)).astype(np.int32)
    indices = np.stack([rng.permutation(POLICY)[:WIDTH] for _ in range(ROWS)]).astype(np.int32)
    policy = (rng.standard_normal((ROWS, POLICY)) * 3).astype(np.float32)
    policy[4] = 0.0  # every prior equal
    policy[5] = np.round(policy[5])  # many equal logits
    policy[6, indices[6, :12]] = -200.0  # priors that round to 0
    # Read-only, as the search passes the network's heads (evaluation.network_heads); so are the
    # other arguments' types: each test process loads the search's compiled code from numba's
    # cache instead of compiling its own (about a second each).
    policy.flags.writeable = False
    return req, moves, indices, policy


def _expected(req, moves, indices, policy, temperature, r):
    count = int(req["count"][r])
    logits = policy[r, indices[r, :count]]
    probs = (logits - logits.max()).astype(np.float32) if count else logits.copy()
    fast_softmax(probs, np.int32(count), np.float32(1.0 / np.float32(temperature)))
    priors = np.zeros(count, np.uint16)
    compress_priors(probs, priors, np.int32(count))
    order = sorted(range(count), key=lambda j: -int(priors[j]))
    return moves[r, order], priors[order]


def _groups(moves, priors) -> list[tuple[int, frozenset[int]]]:
    """The moves by prior, each group of equal priors as a set (their order is lc0's)."""
    out: dict[int, set[int]] = {}
    for m, p in zip(moves.tolist(), priors.tolist(), strict=True):
        out.setdefault(p, set()).add(m)
    return [(p, frozenset(ms)) for p, ms in out.items()]


def test_moves_come_in_lc0s_edge_order_with_their_priors() -> None:
    for seed, temperature in ((1, 1.0), (2, 1.359)):
        req, moves, indices, policy = _inputs(seed)
        out_moves = np.zeros((ROWS, WIDTH), np.int32)
        out_priors = np.zeros((ROWS, WIDTH), np.uint16)
        rows = np.zeros((ROWS, FIELDS), np.uint64)
        sort_policies(req, rows, moves, indices, policy, 0, ROWS, temperature, out_moves,
                      out_priors)  # fmt: skip
        tied = 0
        for r in range(ROWS):
            count = int(req["count"][r])
            want_moves, want_priors = _expected(req, moves, indices, policy, temperature, r)
            np.testing.assert_array_equal(out_priors[r, :count], want_priors, err_msg=f"row {r}")
            if len(set(want_priors.tolist())) == count:
                np.testing.assert_array_equal(out_moves[r, :count], want_moves, f"row {r}")
            else:
                tied += 1
                got = _groups(out_moves[r, :count], out_priors[r, :count])
                assert got == _groups(want_moves, want_priors), f"row {r}"
        assert tied >= 3  # the all-equal, the rounded and the zero rows at least


def test_rows_outside_the_range_are_left_alone() -> None:
    req, moves, indices, policy = _inputs(3)
    out_moves = np.full((ROWS, WIDTH), -7, np.int32)
    out_priors = np.full((ROWS, WIDTH), 9, np.uint16)
    rows = np.zeros((ROWS, FIELDS), np.uint64)
    sort_policies(req, rows, moves, indices, policy, 10, 20, 1.0, out_moves, out_priors)
    assert (out_moves[:10] == -7).all() and (out_moves[20:] == -7).all()
    assert (out_priors[:10] == 9).all() and (out_priors[20:] == 9).all()
