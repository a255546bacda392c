"""The select phase, compiled: gathering a minibatch (lc0's GatherMinibatch) with PUCT selection
and multi-visit picking (PickNodesToExtendTask), collisions, out-of-order backups of terminals
and cache hits, the draw rules at a leaf, prefetching into the NN cache (PrefetchIntoCache),
and each new leaf's legal moves, policy indices and input planes.

The board travels with the descent: ``hist`` holds the game's rows (root at ``game_len - 1``)
and then the row of each node on the current path, ``hist[game_len - 1 + depth]``. Selection
is depth first with an explicit stack, so a node's row is made from its parent's, which is
still in place when the node is popped.

    cpuct(N) = CPuct + CPuctFactor * ln((N + CPuctBase) / CPuctBase)
    U_i      = cpuct(N) * sqrt(max(N - 1, 1)) * P_i / (1 + N_i + n_in_flight_i)
    Q_i      = WL_i + draw_score * D_i for visited children, else the FPU
    S_i      = Q_i + U_i + M_i   (M_i: moves-left utility, networks with that head)

The gather (core/minibatch.py's entry) and what it calls run without numba's reference
counting (``_nrt=False``; numba compiles a callee with its caller's flags): with it, every call
of a compiled function counted each array argument in and out and every row view once more, 17 %
of the search thread's time in atomic increments (measured with ``perf``, docs/engine.md), and
60 % of the prefetch's, whose frames allocated. The caller holds every array for the whole
phase, so no count is needed; numba refuses to compile an allocation there, so nothing can
leak (the buffers live in :class:`Batch`; tests/engine/search/test_compiled_boundary.py checks
that a search's allocations are all freed).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from engine.board.bitboards import ONE, ZERO, popcount
from engine.board.make import make_move
from engine.board.movegen import has_legal_move, in_check, legal_moves
from engine.board.moves import MAX_MOVES
from engine.board.position import BISHOPS, FIELDS, HASH, KNIGHTS, PAWNS, QUEENS, ROOKS, RULE50
from engine.board.repetition import repetitions
from engine.encoding.rows import (
    HISTORY_STEPS,
    canonical_transform,
    encode_packed,
    encode_window,
    take_window,
    window_suffices,
)

from .atomic import compare_swap, fetch_add, fetch_or, load, store
from .backup import backup, cancel, order_descending
from .cache import lookup, read_entry
from .calls import UNCOUNTED
from .fastmath import fast_log as _fast_log
from .layout import Layout
from .params import (
    CACHE_HISTORY,
    CPUCT,
    CPUCT_BASE,
    CPUCT_BASE_ROOT,
    CPUCT_FACTOR,
    CPUCT_FACTOR_ROOT,
    CPUCT_ROOT,
    FPU_ABSOLUTE,
    FPU_ABSOLUTE_ROOT,
    FPU_VALUE,
    FPU_VALUE_ROOT,
    IDLING_MIN_WORK,
    IDLING_THRESHOLD,
    ML_CONSTANT,
    ML_MAX_EFFECT,
    ML_QUADRATIC,
    ML_SCALED,
    ML_SLOPE,
    ML_THRESHOLD,
    OUT_OF_ORDER,
    THREADS,
    TWO_FOLD,
    USE_MLH,
)
from .tree import (
    MATE,
    MATERIAL,
    NONE,
    PENDING,
    STALEMATE,
    THREEFOLD,
    TWOFOLD,
    child,
    expand,
    new_node,
    prior,
)
from .tree import (
    RULE50 as KIND_RULE50,
)

I = np.int64
"""Each compiled call takes its integers as int64 and its floats as F (float64): numba compiles
a function anew for every new combination of argument types (int32, a literal 0, ...)."""
F = np.float64

REQUEST = np.dtype(
    [
        ("key", np.uint64),
        ("node", np.int32),
        ("depth", np.int32),
        ("count", np.int32),
        ("tb", np.uint8),
        ("reps", np.uint8),
        ("wlast", np.int8),
    ],
    align=True,
)
COLLISION = np.dtype([("node", np.int32), ("k", np.int32), ("most", np.int32)], align=True)
"""A collision: its node, its visits, and the visits lc0 may upsize it to (0: none)."""
COLLISION_ROOM = 1 << 17
"""A batch's room for collisions, whatever its size (the same gather in any buffers): a gather
collects at most its collision visits' worth, MaxCollisionVisits (80,000 by default), and ends
where the next round could overflow the room (1.5 MB of address space; only the pages used
become memory)."""
FRAME = np.dtype(
    [
        ("order", np.int64),
        ("qm", np.float64),
        ("pu", np.float64),
        ("started", np.float64),
        ("scores", np.float64),
    ],
    align=True,
)
Batch = namedtuple(
    "Batch",
    "req rows window moves indices masks values planes sorted_moves priors coll meta stack "
    "frames frame_meta pick_values pick_order order",
)
"""A minibatch being gathered. req: REQUEST records, one a request: node (-1: prefetched, for
the cache only), key (NN-cache key), depth, count of legal moves, tb (a tablebase candidate:
the caller probes it), wlast / reps (see :func:`_planes_of`: -1 / 0 when already encoded);
rows uint64 [B, FIELDS]: each request's position; window uint64 [B, HISTORY_STEPS, FIELDS]:
the history its planes are encoded from once the gather's rounds are done
(:func:`encode_requests`); moves / indices int32 [B, MAX_MOVES]: move words and policy indices
(generated then too; the rounds' scratch before);
masks uint64 [B, 112] and values float32 [B, 112]: each request's input planes as lc0 packs
them (engine/encoding/rows.py); planes float32 [B, 112, 8, 8]: the same expanded, written by
the evaluation thread for a network that takes float planes; sorted_moves int32 / priors
uint16 [B, MAX_MOVES]: each request's moves by decreasing prior and the priors (written by the
evaluation thread from the network's policy); coll: COLLISION records; meta int64 [:data:`BATCH_META`].
Scratch space of the phases, allocated once: stack int64 [3, STACK] (selection); frames
(FRAME records [levels, MAX_MOVES]) and frame_meta int64 [levels, :data:`FRAME_META`]
(prefetch's descent); pick_values float64 [5, MAX_MOVES] (a node's
children's Q+M, P*U and :func:`_assign`'s scratch) and pick_order int64 [4, MAX_MOVES]
(:func:`_assign`'s order) for selection. order int64 [B]: the rows in the order the selection
made them, in which the network's answers are backed up."""
STACK = 4096
PREFETCH_LEVELS = 64
PREFETCH_LC0, PREFETCH_PADDING, PREFETCH_DEEP = 0, 1, 2
"""How a gather's prefetch fills its minibatch (:func:`prefetch`): lc0's PrefetchIntoCache with
its MaxPrefetch budget (a backend that computes a batch's rows only: each leaf costs a slot, as
in lc0, cached, in the batch already or terminal as well); the rows a backend pads the batch
to (they cost no network time: a leaf cached, in the batch or terminal costs nothing); or
past MaxPrefetch, those rows with the NN cache's entries descended through (a device whose
call costs the same whatever its rows)."""
BATCH_META = Layout("Batch.meta", "REQUESTS COLLISIONS OUT_OF_ORDER_DONE NO_ROOM PREFETCHED SPREAD")
"""A gather's counts: requests, collisions (in flight until its prefetch is done: ``coll``'s
records), out-of-order backups, out of room (nodes or edges ran short: the caller reserves
more), and the requests that are prefetched positions (node -1: for the NN cache only); and
its picking rule: SPREAD 1 for a minibatch above :data:`LC0_PICKING_MAX` (every visit handed
to a leaf counts in flight there: the visits spread over more leaves), else 0 (lc0's: one)."""
REQUESTS, COLLISIONS, OUT_OF_ORDER_DONE, NO_ROOM, PREFETCHED, SPREAD = BATCH_META.indices(
    "REQUESTS COLLISIONS OUT_OF_ORDER_DONE NO_ROOM PREFETCHED SPREAD"
)
LC0_PICKING_MAX = 32
"""The largest minibatch gathered with lc0's picking rule, where a leaf counts one visit in
flight at most (its TryStartScoreUpdate) and the visits it gets beyond are collisions that do
not make it look more visited: the exact reference with lc0 (Threads 1, minibatch 7: visit
for visit on lc0's random network). Above it (an accelerator's minibatch of 256) such
collisions pile up on the best leaves round after round, and a search alone ran 0.65x as fast
(150k against 225k nodes/s, Threads 1; two threads 0.5x): there a leaf counts every visit
handed to it, as before 2026-12-03, and a minibatch fills with more leaves."""
FRAME_META = Layout(
    "Batch.frame_meta",
    "FRAME_NODE FRAME_DEPTH FRAME_LEFT FRAME_SPENT FRAME_KEPT FRAME_NEXT FRAME_TO_SPEND",
)
"""A row of prefetch's descent (one a level): its node, depth, budget left, budget spent,
children kept, next child, and lc0's budget_to_spend (the last child's under PREFETCH_LC0)."""
(
    FRAME_NODE,
    FRAME_DEPTH,
    FRAME_LEFT,
    FRAME_SPENT,
    FRAME_KEPT,
    FRAME_NEXT,
    FRAME_TO_SPEND,
) = FRAME_META.indices(
    "FRAME_NODE FRAME_DEPTH FRAME_LEFT FRAME_SPENT FRAME_KEPT FRAME_NEXT FRAME_TO_SPEND"
)
Walk = namedtuple("Walk", "hist info draw_scores root_filter stop on_device")
"""What selection reads besides the tree: hist uint64 [H, FIELDS] (the game's rows, then the
path's); info int64 [:data:`WALK_INFO`]; draw_scores float64 [2] by depth parity; root_filter uint8
[root edges] (1: the move may get visits), or empty for all; stop uint8 [1]; on_device int64
[1]: minibatches the network is computing now (written by the evaluation threads)."""
MOVES_PENDING = -1
"""``req.count`` of a request whose legal moves the gather's end generates (:func:`encode_requests`)."""
WALK_INFO = Layout("Walk.info", "GAME_LEN FORMAT FILL TB_PIECES ROOT_IN_TB")
"""A walk's constants: the game's length, the input format, the history fill, the tablebases'
pieces (0: no tables), whether the root is in the tables."""
GAME_LEN, FORMAT, FILL, TB_PIECES, ROOT_IN_TB = WALK_INFO.indices(
    "GAME_LEN FORMAT FILL TB_PIECES ROOT_IN_TB"
)


def new_batch(size: int) -> Batch:
    """Buffers for minibatches of ``size`` rows."""
    rows = size
    return Batch(
        np.zeros(rows, REQUEST),
        np.zeros((rows, FIELDS), np.uint64),
        np.zeros((rows, HISTORY_STEPS, FIELDS), np.uint64),
        np.zeros((rows, MAX_MOVES), np.int32),
        np.zeros((rows, MAX_MOVES), np.int32),
        np.zeros((rows, 112), np.uint64),
        np.zeros((rows, 112), np.float32),
        np.zeros((rows, 112, 8, 8), np.float32),
        np.zeros((rows, MAX_MOVES), np.int32),
        np.zeros((rows, MAX_MOVES), np.uint16),
        np.zeros(COLLISION_ROOM, COLLISION),
        BATCH_META.new(),
        np.zeros((3, STACK), np.int64),
        np.zeros((PREFETCH_LEVELS, MAX_MOVES), FRAME),
        np.zeros((PREFETCH_LEVELS, FRAME_META.size), np.int64),
        np.zeros((5, MAX_MOVES), np.float64),
        np.zeros((4, MAX_MOVES), np.int64),
        np.arange(rows, dtype=np.int64),
    )


# ----------------------------------------------------------------------------- PUCT terms
@njit(cache=True, inline="always")
def _cpuct(n, init, base, factor):
    """lc0's ComputeCpuct in its float32 arithmetic: init + factor * FastLog((N + base) / base)."""
    f32 = np.float32
    if factor == 0.0:
        return np.float64(f32(init))
    ratio = f32(f32(f32(n) + f32(base)) / f32(base))
    return np.float64(f32(f32(init) + f32(f32(factor) * _fast_log(ratio))))


@njit(cache=True, inline="always")
def _puct_terms(tree, params, node, at_root, draw_score):
    """What every child of ``node`` shares in its score: (P's multiplier cpuct * sqrt(N - 1),
    the first-play urgency, whether moves-left utility applies)."""
    n = tree.nodes.n[node]
    if at_root:
        init, base, factor = params[CPUCT_ROOT], params[CPUCT_BASE_ROOT], params[CPUCT_FACTOR_ROOT]
    else:
        init, base, factor = params[CPUCT], params[CPUCT_BASE], params[CPUCT_FACTOR]
    cpuct = _cpuct(n, init, base, factor)
    puct_mult = cpuct * np.sqrt(max(n - 1, 1))
    absolute = params[FPU_ABSOLUTE_ROOT] if at_root else params[FPU_ABSOLUTE]
    value = params[FPU_VALUE_ROOT] if at_root else params[FPU_VALUE]
    if absolute != 0.0:
        fpu = value
    else:
        fpu = -(tree.nodes.wl[node] - draw_score * tree.nodes.d[node]) - value * np.sqrt(
            tree.nodes.vpol[node]
        )
    use_mu = params[USE_MLH] != 0.0 and abs(tree.nodes.wl[node]) > params[ML_THRESHOLD]
    return puct_mult, fpu, use_mu


@njit(cache=True, inline="always")
def _child_q(tree, params, node, c, draw_score, fpu, use_mu):
    """Q+M of child ``c`` of ``node`` (-1: never visited, FPU)."""
    visited = c >= 0 and tree.nodes.n[c] > 0
    q = tree.nodes.wl[c] + draw_score * tree.nodes.d[c] if visited else fpu
    if use_mu and visited:
        q += _moves_left_utility(params, tree.nodes.m[c] - tree.nodes.m[node], q)
    return q


@njit(cache=True, **UNCOUNTED)
def child_scores(tree, params, node, at_root, draw_score, width, qm, pu):
    """Q+M and P * cpuct * sqrt(N - 1) of the first ``width`` children of ``node`` into
    ``qm`` and ``pu``; the PUCT score is ``qm + pu / (1 + N_i + n_in_flight_i)``."""
    puct_mult, fpu, use_mu = _puct_terms(tree, params, node, at_root, draw_score)
    f, ks = tree.nodes.first[node], tree.nodes.kids[node]
    for j in range(width):
        c = tree.kids[ks + j] if ks >= 0 else -1
        qm[j] = _child_q(tree, params, node, c, draw_score, fpu, use_mu)
        pu[j] = puct_mult * prior(tree.edges.prior[f + j])
    return puct_mult


@njit(cache=True, **UNCOUNTED)
def best_child(tree, params, node, at_root, draw_score, width, mask, use_mask):
    """The child of the first ``width`` that one visit goes to: the highest PUCT score
    (:func:`child_scores`' terms, the same arithmetic), ties to the lower index; one pass over
    the children, where most nodes below the root take a single visit."""
    puct_mult, fpu, use_mu = _puct_terms(tree, params, node, at_root, draw_score)
    f, ks = tree.nodes.first[node], tree.nodes.kids[node]
    best, top = 0, -np.inf
    for j in range(width):
        c = tree.kids[ks + j] if ks >= 0 else -1
        q = _child_q(tree, params, node, c, draw_score, fpu, use_mu)
        pu = puct_mult * prior(tree.edges.prior[f + j])
        visited = 1.0 + (tree.nodes.n[c] + tree.nodes.nif[c] if c >= 0 else 0.0)
        score = -np.inf if use_mask and mask[j] == 0 else q + pu / visited
        if score > top:  # strictly: ties stay with the lower index
            best, top = j, score
    return best


@njit(cache=True)
def _moves_left_utility(params, m_diff, q):
    """lc0's MEvaluator.GetMUtility for a visited child: shorter wins, longer losses."""
    e = params[ML_MAX_EFFECT]
    m = min(max(params[ML_SLOPE] * m_diff, -e), e) * np.sign(-q)
    thr = params[ML_THRESHOLD]
    aq = abs(q)
    if 0.0 < thr < 1.0:
        aq = max(0.0, aq - thr) / (1.0 - thr)
    return m * (params[ML_CONSTANT] + params[ML_SCALED] * aq + params[ML_QUADRATIC] * aq * aq)


_CN, _NIF, _SCORE = range(3)
"""Rows of :func:`_assign`'s scratch (its children's visits, visits in flight and scores)."""
_HEAP, _SLOT, GIVEN_CHILD, GIVEN_K = range(4)
"""Rows of :func:`_assign`'s ``order``: the children as a heap by score, where each child's
visits went in the output (-1: none yet), and the output: (child, visits) pairs."""


@njit(cache=True, inline="always")
def _ahead(scratch, a, b):
    """Whether child ``a`` picks before child ``b``: a higher score, or the lower index."""
    sa, sb = scratch[_SCORE, a], scratch[_SCORE, b]
    return sa > sb or (sa == sb and a < b)


@njit(cache=True, inline="always")
def _sift_down(order, scratch, i, size):
    while True:
        m = 2 * i + 1
        if m >= size:
            return
        if m + 1 < size and _ahead(scratch, order[_HEAP, m + 1], order[_HEAP, m]):
            m += 1
        if not _ahead(scratch, order[_HEAP, m], order[_HEAP, i]):
            return
        order[_HEAP, i], order[_HEAP, m] = order[_HEAP, m], order[_HEAP, i]
        i = m


@njit(cache=True, inline="always")
def _started(tree, ks, j, scratch, take, spread):
    """The visits child ``j`` (kids block ``ks``) shows in flight after ``take`` more, as lc0's
    picks count them (current_nstarted): all of them on an expanded node; one on a terminal
    or a leaf not yet in flight (its TryStartScoreUpdate), none on a leaf in flight already
    (the others are collisions, in flight above it only). All of them when ``spread``
    (:data:`LC0_PICKING_MAX`)."""
    if spread:
        return take
    c = tree.kids[ks + j] if ks >= 0 else -1
    if c >= 0 and tree.nodes.kind[c] != NONE:
        return 1
    if c < 0 or tree.nodes.n[c] == 0:
        return 1 if scratch[_NIF, j] == 0 else 0
    return take


@njit(cache=True, **UNCOUNTED)
def _assign(tree, node, qm, pu, width, visits, mask, use_mask, scratch, order, spread):
    """Share ``visits`` (more than one: :func:`best_child` takes a single one) among the first
    ``width`` children as lc0's multi-visit picking: the
    best child takes as many as it can before its score falls below the second best's; ties
    go to the lowest index. Writes (edge offset, visits) pairs in the order given into
    ``order[GIVEN_CHILD]``, ``order[GIVEN_K]``; returns how many. ``scratch`` float64
    [3, >= width]: room for the children's visits, visits in flight and scores; ``order``
    int64 [4, >= width]: also the children kept as a heap by score (the best and the second
    best in O(log width) a step, where a scan took O(width): at the root a step often takes
    one visit), and each child's output slot."""
    ks = tree.nodes.kids[node]
    for j in range(width):
        c = tree.kids[ks + j] if ks >= 0 else -1
        scratch[_CN, j] = tree.nodes.n[c] if c >= 0 else 0.0
        scratch[_NIF, j] = tree.nodes.nif[c] if c >= 0 else 0.0
        scratch[_SCORE, j] = qm[j] + pu[j] / (1.0 + scratch[_CN, j] + scratch[_NIF, j])
        if use_mask and mask[j] == 0:
            scratch[_SCORE, j] = -np.inf
        order[_HEAP, j] = j
        order[_SLOT, j] = -1
    for i in range(width // 2 - 1, -1, -1):
        _sift_down(order, scratch, i, width)
    given = 0
    while visits > 0:
        best = order[_HEAP, 0]
        second = -np.inf
        if width > 1:
            second = scratch[_SCORE, order[_HEAP, 1]]
            if width > 2 and scratch[_SCORE, order[_HEAP, 2]] > second:
                second = scratch[_SCORE, order[_HEAP, 2]]
        take = 1
        if visits > 1 and width > 1:
            qb, pb = qm[best], pu[best]
            if second <= qb:
                take = visits  # U only shrinks towards Q, which already beats the second best
            else:
                visited = 1.0 + scratch[_CN, best] + scratch[_NIF, best]
                take = int(pb / (second - qb) - visited) + 1
            take = max(1, min(take, visits))
        elif visits > 1:
            take = visits
        slot = order[_SLOT, best]
        if slot < 0:
            slot = given
            order[_SLOT, best] = slot
            order[GIVEN_CHILD, slot] = best
            order[GIVEN_K, slot] = 0
            given += 1
        order[GIVEN_K, slot] += take
        scratch[_NIF, best] += _started(tree, ks, best, scratch, take, spread)
        visits -= take
        if visits:
            visited = 1.0 + scratch[_CN, best] + scratch[_NIF, best]
            scratch[_SCORE, best] = qm[best] + pu[best] / visited
            _sift_down(order, scratch, 0, width)
    return given


# ----------------------------------------------------------------------------- leaves
@njit(cache=True)
def _has_mating_material(pos):
    """lc0's ChessBoard::HasMatingMaterial."""
    if (pos[PAWNS] | pos[ROOKS] | pos[QUEENS]) != ZERO:
        return True
    if popcount(pos[0] | pos[1]) < 4:
        return False
    if pos[KNIGHTS] != ZERO:
        return True
    light = np.uint64(0x55AA55AA55AA55AA)
    return (pos[BISHOPS] & light) != ZERO and (pos[BISHOPS] & ~light) != ZERO


@njit(cache=True)
def _mix(x):
    x ^= x >> np.uint64(31)
    x *= np.uint64(0x7FB5D329728EA185)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x81DADEF4BC2DD44D)
    return x ^ (x >> np.uint64(33))


@njit(cache=True)
def cache_key(hist, row, reps, history):
    """lc0's NN-cache key (neural/memcache.cc: the position's Hash(), its board and its
    repetitions; no rule50 count, though the network sees it, and no history), and ``history``
    earlier positions (CacheHistoryLength, which lc0's classic search reads nowhere). Never 0
    (a free cache slot)."""
    pos = hist[row]
    key = _mix(pos[HASH] ^ np.uint64(min(reps, 2)))
    for j in range(1, history + 1):
        if row - j < 0:
            break
        key = _mix(key ^ hist[row - j, HASH])
    return key if key != ZERO else ONE


@njit(cache=True)
def _back_up(tree, params, counters, batch, node, k, wl, d, m, depth):
    """``k`` visits of a terminal's value backed up from ``node`` at once (out of order)."""
    backup(tree, params, counters, I(node), I(k), F(wl), F(d), F(m), I(depth))
    batch.meta[OUT_OF_ORDER_DONE] += 1


@njit(cache=True)
def _cancel(tree, batch, node, k):
    """``k`` visits out of flight from ``node`` up, for want of room (the caller grows it)."""
    cancel(tree, I(node), I(k))
    batch.meta[NO_ROOM] = 1


@njit(cache=True)
def _drawn(params, pos, reps, since, depth):
    """The draw by rule at a node ``depth`` plies below the root (``reps``: the repetitions
    of ``pos``, the first ``since`` plies ago): (its kind, the plies left for a two-fold
    repetition), or (NONE, 0)."""
    if pos[RULE50] >= 100:
        return KIND_RULE50, 0.0
    if not _has_mating_material(pos):
        return MATERIAL, 0.0
    if reps >= 2:
        return THREEFOLD, 0.0
    if reps == 1 and params[TWO_FOLD] != 0.0 and depth >= 4 and since <= depth:
        return TWOFOLD, np.float64(since)  # the cycle's length, as lc0
    return NONE, 0.0


@njit(cache=True)
def expand_cached(tree, params, counters, node, depth, got, moves, priors, q, d, m):
    """An out-of-order evaluation from the NN cache: ``node`` expanded with the ``got`` moves
    and priors copied out of it (:func:`engine.search.core.cache.read_entry`) and its value
    (q, d, m) backed up."""
    expand(tree, I(node), moves, priors, I(got))
    backup(tree, params, counters, I(node), I(1), -F(q), F(d), F(m), I(depth))


@njit(cache=True)
def _terminal(tree, params, counters, batch, node, k, kind, wl, m, depth):
    tree.nodes.t_wl[node] = wl
    tree.nodes.t_d[node] = 1.0 - abs(wl)
    tree.nodes.t_m[node] = m
    store(tree.nodes.kind, node, kind)  # last: a gather that sees it reads the value
    _back_up(tree, params, counters, batch, node, 1, wl, 1.0 - abs(wl), m, depth)
    _release(tree, node)
    if k > 1:  # as lc0's: a terminal takes one visit, the others are a collision
        _collision(tree, batch, node, k - 1)


@njit(cache=True, inline="always")
def _claim(tree, node):
    """Whether this gather takes the unexpanded leaf ``node`` (marks it PENDING), where
    gathers on other threads may reach it at once: False when it is pending already, or was
    expanded or proven since the caller looked (then its visits are a collision)."""
    if fetch_or(tree.nodes.status, node, PENDING) & PENDING:
        return False
    if load(tree.nodes.nedges, node) > 0 or load(tree.nodes.kind, node) != NONE:
        _release(tree, node)
        return False
    return True


@njit(cache=True, inline="always")
def _release(tree, node):
    """A claimed leaf no longer pending (it was expanded from the cache, or is terminal)."""
    store(tree.nodes.status, node, tree.nodes.status[node] & ~PENDING)


@njit(cache=True)
def _collision(tree, batch, node, k):
    """``k`` of the visits handed to ``node`` collide there: in flight on its path above it
    until the gather ends or, kept, a backup (:func:`cancel_collision`), not at ``node``
    itself, as lc0's (its TryStartScoreUpdate puts one visit at most in flight on a leaf or a
    terminal: a new leaf's, and its collisions do not make it look more visited to the next
    picks); at ``node`` too when the batch spreads its visits (:data:`LC0_PICKING_MAX`)."""
    if tree.nodes.parent[node] >= 0 and not batch.meta[SPREAD]:  # the root's: never in flight
        fetch_add(tree.nodes.nif, node, -k)
    c = batch.meta[COLLISIONS]
    if c < batch.coll.node.shape[0]:
        batch.coll.node[c] = node
        batch.coll.k[c] = k
        batch.coll.most[c] = 0
        batch.meta[COLLISIONS] = c + 1


@njit(cache=True)
def cancel_collision(tree, batch, c):
    """Collision ``c`` of the batch out of flight: its visits, from its node's parent up (from
    its node when the batch spreads its visits)."""
    start = _collision_path(tree, batch, c)
    if start >= 0:
        cancel(tree, I(start), I(batch.coll.k[c]))


@njit(cache=True, inline="always")
def _collision_path(tree, batch, c):
    """The first node whose visits in flight hold collision ``c``'s (-1: none)."""
    node = batch.coll.node[c]
    return node if batch.meta[SPREAD] else tree.nodes.parent[node]


@njit(cache=True)
def _planes_of(hist, row, fmt, fill, window, masks, values):
    """The input planes of ``hist[row]``: the history they read is copied into ``window``
    for the gather's end to encode; returns (the position's index there, its rows'
    repetition bits). In formats whose planes read further back, encoded now into ``masks``
    and ``values`` (index -1). Array by array, not the batch: a compiled call counts a
    reference to each array it is given."""
    if window_suffices(fmt):
        return take_window(hist, row, window)
    encode_packed(hist, row, fmt, fill, masks, values)
    return -1, 0


@njit(cache=True)
def encode_requests(req, rows, window, moves, indices, fmt, fill, masks, values, n):
    """The legal moves and policy indices of the first ``n`` requests (the gather left them
    :data:`MOVES_PENDING`) and the input planes that :func:`_planes_of` left to encode: once
    the gather's rounds are done (core/minibatch.py), out of the selection's way as lc0's
    ExtendNode is out of its mutex."""
    for r in range(n):
        if req.count[r] == MOVES_PENDING:
            pos = rows[r]
            req.count[r] = legal_moves(pos, I(canonical_transform(pos, fmt)), moves[r], indices[r])
        if req.wlast[r] >= 0:
            encode_window(window[r], req.wlast[r], req.reps[r], fmt, fill, masks[r], values[r])


@njit(cache=True, **UNCOUNTED)
def leaf(tree, params, counters, cache, batch, walk, node, k, depth):
    """An unexpanded node received ``k`` visits: a collision, a terminal, a cache hit or a
    new request. The node is claimed first (:func:`_claim`): gathers on other threads may
    reach it at once."""
    if not _claim(tree, node):
        _collision(tree, batch, node, k)
        return
    game_len, fmt = walk.info[GAME_LEN], walk.info[FORMAT]
    row = game_len - 1 + depth
    pos = walk.hist[row]
    reps, first = repetitions(walk.hist, row)
    key = cache_key(walk.hist, row, reps, np.int64(params[CACHE_HISTORY]))
    slot = lookup(cache, key)
    r = batch.meta[REQUESTS]  # the next row: the request's, scratch until then
    got, q, d, m = -1, 0.0, 0.0, 0.0
    if slot >= 0:  # copied out at once: an evaluation may write the entry meanwhile
        got, q, d, m = read_entry(cache, slot, key, batch.moves[r], batch.priors[r])
    if got <= 0:
        # Mate or stalemate now; the moves themselves are generated once the rounds are done
        # (:func:`encode_requests`; lc0's ExtendNode outside its mutex). A cached position
        # without moves is one the prefetch sent (lc0's does); the search's checks come first.
        got = -1
        if not has_legal_move(pos, batch.moves[r], batch.indices[r]):
            wl = 1.0 if in_check(pos) else 0.0
            kind = MATE if wl else STALEMATE
            _terminal(tree, params, counters, batch, node, k, kind, wl, 0.0, depth)
            return
    if depth > 0:
        kind, m = _drawn(params, pos, reps, row - first, depth)
        if kind != NONE:
            _terminal(tree, params, counters, batch, node, k, kind, 0.0, m, depth)
            return
    tb = (
        depth > 0
        and walk.info[TB_PIECES] > 0
        and walk.info[ROOT_IN_TB] == 0
        and pos[RULE50] == 0
        and popcount(pos[0] | pos[1]) <= walk.info[TB_PIECES]
    )
    room = tree.count[1] + MAX_MOVES <= tree.edges.move.shape[0]
    if got >= 0 and params[OUT_OF_ORDER] != 0.0 and not tb and room:
        expand_cached(tree, params, counters, node, depth, got, batch.moves[r], batch.priors[r],
                      q, d, m)  # fmt: skip
        _release(tree, node)
        batch.meta[OUT_OF_ORDER_DONE] += 1
    else:
        batch.req.node[r] = node
        batch.req.key[r] = key
        batch.req.depth[r] = depth
        batch.req.count[r] = MOVES_PENDING
        batch.req.tb[r] = tb
        for f in range(FIELDS):
            batch.rows[r, f] = pos[f]
        batch.req.wlast[r], batch.req.reps[r] = _planes_of(
            walk.hist, row, fmt, walk.info[FILL], batch.window[r], batch.masks[r], batch.values[r]
        )
        batch.meta[REQUESTS] = r + 1  # the node stays pending (claimed) until its backup
    if k > 1:
        _collision(tree, batch, node, k - 1)


# ----------------------------------------------------------------------------- selection
@njit(cache=True, **UNCOUNTED)
def share_visits(tree, params, batch, walk, node, k, depth):
    """``k`` visits of the expanded ``node`` (``depth`` plies below the root) shared among its
    children by PUCT (:func:`_assign`, over the children that can get any: the root filter's at
    the root, else those visited and the next ``k + 1``); returns how many children got visits,
    written into ``batch.pick_order`` (GIVEN_CHILD, GIVEN_K), and marks them touched."""
    at_root = node == 0
    masked = at_root and walk.root_filter.shape[0] > 0
    nedges = tree.nodes.nedges[node]
    width = nedges if masked else min(nedges, tree.nodes.touched[node] + k + 1)
    qm, pu, scratch = batch.pick_values[0], batch.pick_values[1], batch.pick_values[2:]
    order = batch.pick_order
    draw_score = walk.draw_scores[depth & 1]
    if k == 1:  # most nodes below the root: the best child alone, no heap
        order[GIVEN_CHILD, 0] = best_child(tree, params, I(node), at_root, draw_score, I(width),
                                           walk.root_filter, masked)  # fmt: skip
        order[GIVEN_K, 0] = 1
        given = 1
    else:
        child_scores(tree, params, I(node), at_root, draw_score, I(width), qm, pu)
        given = _assign(tree, node, qm, pu, width, k, walk.root_filter, masked, scratch, order,
                        batch.meta[SPREAD] != 0)  # fmt: skip
    for g in range(given):
        _touch(tree, node, order[GIVEN_CHILD, g] + 1)
    return given


@njit(cache=True, inline="always")
def _touch(tree, node, width):
    """``node``'s touched children at least ``width`` (a maximum kept with other threads'
    gathers raising it at once)."""
    seen = load(tree.nodes.touched, node)
    while seen < width:
        was = compare_swap(tree.nodes.touched, node, seen, width)
        if was == seen:
            return
        seen = was


@njit(cache=True)
def move_request(batch, src, dst):
    """Request row ``src`` copied into row ``dst`` (loops: a slice assignment costs seconds of
    compilation)."""
    batch.req[dst] = batch.req[src]
    for f in range(batch.rows.shape[1]):
        batch.rows[dst, f] = batch.rows[src, f]
    for s in range(batch.window.shape[1]):
        for f in range(batch.window.shape[2]):
            batch.window[dst, s, f] = batch.window[src, s, f]
    for j in range(batch.moves.shape[1]):
        batch.moves[dst, j] = batch.moves[src, j]
        batch.indices[dst, j] = batch.indices[src, j]
    for p in range(batch.masks.shape[1]):
        batch.masks[dst, p] = batch.masks[src, p]
        batch.values[dst, p] = batch.values[src, p]


@njit(cache=True, **UNCOUNTED)
def _path_limit(tree, params, batch, walk, node, depth, k):
    """lc0's max_limit of a pick that sent all its ``k`` visits down the path to ``node``
    (``depth`` plies below the root): the least, over the path's nodes, of the visits their
    child on the path could take before the second best overtook it (as each pick reckoned
    it, before the ``k`` visits went in flight); 2**31 - 1 where no second child is in the
    running."""
    big = np.int64(2**31 - 1)
    limit = big
    qm, pu = batch.pick_values[0], batch.pick_values[1]
    c = node
    d = depth
    while tree.nodes.parent[c] >= 0:
        a = tree.nodes.parent[c]
        d -= 1
        j = tree.nodes.pedge[c] - tree.nodes.first[a]
        width = tree.nodes.nedges[a]
        at_root = a == 0
        masked = at_root and walk.root_filter.shape[0] > 0
        child_scores(tree, params, I(a), at_root, walk.draw_scores[d & 1], I(width), qm, pu)
        ks = tree.nodes.kids[a]
        second = -np.inf
        others = False
        for i in range(width):
            if i == j or (masked and walk.root_filter[i] == 0):
                continue
            o = tree.kids[ks + i] if ks >= 0 else -1
            started = tree.nodes.n[o] + tree.nodes.nif[o] if o >= 0 else 0
            score = qm[i] + pu[i] / (1.0 + started)
            others = True
            if score > second:
                second = score
        if others and qm[j] < second:
            started = tree.nodes.n[c] + tree.nodes.nif[c] - k
            est = pu[j] / (second - qm[j]) - (started + 1) + 1
            est = np.int64(max(1.0, min(est, 1e9)))
            if est < limit:
                limit = est
        c = a
    return limit


@njit(cache=True, **UNCOUNTED)
def select(tree, params, counters, cache, batch, walk, visits):
    """Distribute ``visits`` from the root (node 0) down the tree by PUCT, depth first (the
    rows of a node's ancestors are in ``walk.hist`` when it is popped)."""
    hist = walk.hist
    base = walk.info[GAME_LEN] - 1
    cap = tree.nodes.parent.shape[0]
    stack_node, stack_k, stack_depth = batch.stack[0], batch.stack[1], batch.stack[2]
    stack_node[0], stack_k[0], stack_depth[0] = 0, visits, 0
    top = 1
    order = batch.pick_order
    while top > 0:
        top -= 1
        node, k, depth = stack_node[top], stack_k[top], stack_depth[top]
        if node != 0:
            if base + depth >= hist.shape[0]:  # deeper than the history: the caller grows it
                _cancel(tree, batch, node, k)
                continue
            move = I(tree.edges.move[tree.nodes.pedge[node]])
            make_move(hist[base + depth - 1], move, hist[base + depth])
            if tree.nodes.kind[node] != NONE:
                wl, d, m = (
                    F(tree.nodes.t_wl[node]),
                    F(tree.nodes.t_d[node]),
                    F(tree.nodes.t_m[node]),
                )
                # lc0's: one visit of a terminal a pick, the others a collision there.
                _back_up(tree, params, counters, batch, node, 1, wl, d, m, depth)
                if k > 1:
                    _collision(tree, batch, node, k - 1)
                continue
        # Acquire: an expansion on another thread (a cache hit) writes the edges, then nedges.
        if load(tree.nodes.nedges, node) == 0:
            if k == visits and tree.nodes.status[node] & PENDING:
                # The whole round on one leaf in flight: lc0 lets this collision grow to the
                # visits its path could take before another child overtook (maxvisit).
                limit = _path_limit(tree, params, batch, walk, node, depth, k)
                _collision(tree, batch, node, k)
                c = batch.meta[COLLISIONS] - 1
                if limit > k and c >= 0 and batch.coll.node[c] == node:
                    batch.coll.most[c] = limit
                continue
            leaf(tree, params, counters, cache, batch, walk, node, k, depth)
            continue
        given = share_visits(tree, params, batch, walk, node, k, depth)
        f = tree.nodes.first[node]
        for g in range(given):
            j, cnt = order[GIVEN_CHILD, g], order[GIVEN_K, g]
            c = child(tree, node, j)
            if c < 0:
                if tree.count[0] >= cap or top >= stack_node.shape[0]:
                    _cancel(tree, batch, node, cnt)
                    continue
                c = new_node(tree, node, f + j)
            elif top >= stack_node.shape[0]:
                _cancel(tree, batch, node, cnt)
                continue
            fetch_add(tree.nodes.nif, c, cnt)
            stack_node[top], stack_k[top], stack_depth[top] = c, cnt, depth + 1
            top += 1


@njit(cache=True, inline="always")
def _push_frame(frame_meta, level, node, depth, budget, kept):
    """Prefetch's frame at ``level``: ``kept`` children of ``node`` (-1: a cached position's)
    share ``budget``; returns -1 (a frame to walk)."""
    frame_meta[level, FRAME_NODE] = node
    frame_meta[level, FRAME_DEPTH] = depth
    frame_meta[level, FRAME_LEFT] = budget
    frame_meta[level, FRAME_SPENT] = 0
    frame_meta[level, FRAME_KEPT] = kept
    frame_meta[level, FRAME_NEXT] = 0
    frame_meta[level, FRAME_TO_SPEND] = budget
    return -1


@njit(cache=True)
def _cached_frame(cache, batch, slot, key, budget, depth, level, r):
    """Push a prefetch frame at ``level`` for a position that is in the NN cache but not
    expanded in the tree: its children are its cached moves, by decreasing prior (their
    priors in ``pu``); -1, or 0 when the entry changed meanwhile. Row ``r`` (the next
    request's) is the scratch the entry is copied into."""
    got, _q, _d, _m = read_entry(cache, slot, key, batch.moves[r], batch.priors[r])
    if got <= 0:
        return 0
    frames = batch.frames
    for j in range(got):
        frames.order[level, j] = batch.moves[r, j]
        frames.pu[level, j] = prior(batch.priors[r, j])
    return _push_frame(batch.frame_meta, level, -1, depth, budget, got)


@njit(cache=True)
def _tree_frame(tree, params, batch, walk, node, budget, depth, level):
    """Push a prefetch frame at ``level`` for the expanded ``node``: its children in PUCT order
    (those with a prior), their terms in the frame; -1, or 0 when it has no visit yet."""
    frames = batch.frames
    if tree.nodes.n[node] == 0 or level >= frames.shape[0]:
        return 0
    width = tree.nodes.nedges[node]
    qm, pu = frames.qm[level], frames.pu[level]
    started, scores = frames.started[level], frames.scores[level]
    # Into the selection's contiguous scratch, then the frame's strided rows: child_scores is
    # compiled for one layout of arrays.
    qm_c, pu_c = batch.pick_values[0], batch.pick_values[1]
    child_scores(
        tree, params, I(node), node == 0, walk.draw_scores[depth & 1], I(width), qm_c, pu_c
    )
    f, ks = tree.nodes.first[node], tree.nodes.kids[node]
    for j in range(width):
        qm[j], pu[j] = qm_c[j], pu_c[j]
        c = tree.kids[ks + j] if ks >= 0 else -1
        started[j] = (tree.nodes.n[c] + tree.nodes.nif[c]) if c >= 0 else 0.0
        scores[j] = qm[j] + pu[j] / (1.0 + started[j])
    order = batch.pick_order[0]  # the selection's scratch: it is done when the prefetch runs
    order_descending(scores, np.int64(width), order)
    kept = 0
    for j in range(width):
        if tree.edges.prior[f + order[j]] > 0:
            frames.order[level, kept] = order[j]
            kept += 1
    return _push_frame(batch.frame_meta, level, node, depth, budget, kept)


@njit(cache=True)
def _prefetch_leaf(params, cache, batch, walk, budget, depth, level, mode):
    """Prefetch's position at ``depth`` of the walk's history, unexpanded in the tree: the slots
    it spends (:data:`PREFETCH_LC0`'s rule: 1 for any leaf; else 1 for a new row, 0 for one
    cached, in the batch already or terminal), or -1 for a frame through its cached priors
    (:data:`PREFETCH_DEEP`)."""
    hist = walk.hist
    row = walk.info[GAME_LEN] - 1 + depth
    reps, _ = repetitions(hist, row)
    key = cache_key(hist, row, reps, np.int64(params[CACHE_HISTORY]))
    r = batch.meta[REQUESTS]
    lc0 = mode == PREFETCH_LC0
    if r >= batch.req.node.shape[0]:
        return 1 if lc0 else 0
    slot = lookup(cache, key)
    if slot >= 0:
        if mode == PREFETCH_DEEP and budget > 1 and level < batch.frames.shape[0]:
            return _cached_frame(cache, batch, slot, key, budget, depth, level, r)
        return 1 if lc0 else 0
    pos = hist[row]
    if not lc0:  # lc0 sends these too (its computation has no other check)
        for j in range(r):
            if batch.req.key[j] == key:
                return 0
        if not has_legal_move(pos, batch.moves[r], batch.indices[r]):
            return 0
    for f in range(FIELDS):
        batch.rows[r, f] = pos[f]
    batch.req.node[r] = -1
    batch.req.key[r] = key
    batch.req.depth[r] = depth
    batch.req.count[r] = MOVES_PENDING
    batch.req.tb[r] = 0
    batch.req.wlast[r], batch.req.reps[r] = _planes_of(
        hist, row, walk.info[FORMAT], walk.info[FILL], batch.window[r], batch.masks[r],
        batch.values[r],
    )  # fmt: skip
    batch.meta[REQUESTS] = r + 1
    return 1


@njit(cache=True)
def _prefetch_enter(tree, params, cache, batch, walk, node, move, budget, depth, level, mode):
    """One node of the prefetch descent (``node``: -1 for a position not in the tree, reached
    by ``move``): returns the budget it spent when that is known at once (a leaf, a terminal,
    nothing to do), or -1 when it pushed a frame at ``level`` whose children the caller walks.
    ``mode``: how the batch is filled (:data:`PREFETCH_LC0` and the others)."""
    if budget <= 0:
        return 0
    if node >= 0 and (tree.nodes.kind[node] != NONE or tree.nodes.status[node] & PENDING):
        return 0
    hist = walk.hist
    row = walk.info[GAME_LEN] - 1 + depth
    if depth > 0:
        if row >= hist.shape[0]:
            return 0
        make_move(hist[row - 1], I(move), hist[row])
    if node < 0 or load(tree.nodes.nedges, node) == 0:
        return _prefetch_leaf(params, cache, batch, walk, budget, depth, level, mode)
    return _tree_frame(tree, params, batch, walk, node, budget, depth, level)


@njit(cache=True)
def prefetch(tree, params, cache, batch, walk, budget, mode):
    """lc0's PrefetchIntoCache: fill a small batch with positions the search is likely to visit
    next, for the NN cache only (the tree is not touched). From the root down, children in
    PUCT order each get the budget they would take before the next child overtakes them.
    Depth first with explicit frames (numba caches no recursive function)."""
    frames = batch.frames
    frame_meta = batch.frame_meta
    got = _prefetch_enter(
        tree, params, cache, batch, walk, I(0), I(-1), I(budget), I(0), I(0), mode
    )
    if got >= 0:
        return got
    level = 0
    while level >= 0:
        meta = frame_meta[level]
        node, depth, left = meta[FRAME_NODE], meta[FRAME_DEPTH], meta[FRAME_LEFT]
        kept, jj = meta[FRAME_KEPT], meta[FRAME_NEXT]
        if left <= 0 or jj >= kept:
            spent = meta[FRAME_SPENT]
            level -= 1
            if level >= 0:
                frame_meta[level, FRAME_LEFT] -= spent
                frame_meta[level, FRAME_SPENT] += spent
            else:
                return spent
            continue
        meta[FRAME_NEXT] = jj + 1
        to_spend = left
        if node < 0:  # a cached position's children: the budget shared by their priors
            if jj + 1 < kept:
                rest = 0.0
                for j in range(jj, kept):
                    rest += frames.pu[level, j]
                share = frames.pu[level, jj] / rest if rest > 0.0 else 1.0
                to_spend = min(left, max(1, int(left * share + 0.5)))
            c, move = -1, frames.order[level, jj]
        else:
            i = frames.order[level, jj]
            if jj + 1 < kept:
                # lc0 takes an unvisited child's Q here as minus its FPU (edge.GetQ(-fpu)).
                c = child(tree, node, i)
                q = frames.qm[level, i] if c >= 0 and tree.nodes.n[c] > 0 else -frames.qm[level, i]
                gap = frames.scores[level, frames.order[level, jj + 1]] - q
                if gap > 0:
                    to_spend = min(
                        left, int(frames.pu[level, i] / gap - frames.started[level, i]) + 1
                    )
                meta[FRAME_TO_SPEND] = to_spend
            elif mode == PREFETCH_LC0:
                # lc0's budget_to_spend: the last child gets the one before it's, even past
                # what is left (lc0 may spend more than its budget there); filling padding it
                # gets what is left (a row past it would make the batch a size larger).
                to_spend = meta[FRAME_TO_SPEND]
            c, move = child(tree, node, i), tree.edges.move[tree.nodes.first[node] + i]
        got = _prefetch_enter(
            tree,
            params,
            cache,
            batch,
            walk,
            I(c),
            I(move),
            I(to_spend),
            I(depth + 1),
            I(level + 1),
            mode,
        )
        if got >= 0:
            meta[FRAME_LEFT] -= got
            meta[FRAME_SPENT] += got
        else:
            level += 1
    return 0


@njit(cache=True)
def _network_idle(params, walk, requests):
    """Whether a minibatch of ``requests`` should go now, unfinished, because the network has
    nothing to compute (lc0's GatherMinibatch with ThreadIdlingThreshold and IdlingMinimumWork;
    never with one thread, which would then send every minibatch after its first pick)."""
    threads = params[THREADS]
    return (
        threads > 1
        and requests > params[IDLING_MIN_WORK]
        and threads - walk.on_device[0] > params[IDLING_THRESHOLD]
    )


@njit(cache=True)
def round_visits(tree, params, batch, walk, batch_size, max_ooo, collisions_left):
    """The visits the next round of a gather hands out from the root (0: the gather is done).
    Not capped by ``go nodes``: lc0's gather is not (its VisitsStopper is asked between
    iterations, so a search ends past the limit by up to its last minibatch), and capped, the
    last gathers of a search differed from lc0's (0.0124 against 0.0009 of lc0's root visit
    shares on its random network, tests/engine/search/test_exact_reference.py)."""
    if batch.meta[REQUESTS] >= batch_size or batch.meta[OUT_OF_ORDER_DONE] >= max_ooo:
        return 0
    if batch.meta[REQUESTS] > 0 and _network_idle(params, walk, batch.meta[REQUESTS]):
        return 0
    want = min(
        collisions_left,
        batch_size - batch.meta[REQUESTS],
        max_ooo - batch.meta[OUT_OF_ORDER_DONE],
    )
    return max(want, 0)


@njit(cache=True)
def round_end(tree, batch, walk, want, before_req, before_ooo, first, collisions_left):
    """After a round of ``want`` visits (the batch's requests, out-of-order backups and
    collisions were ``before_req``, ``before_ooo``, ``first`` before it): the collisions left
    for the next round, or 0 when the gather is done (as lc0's GatherMinibatch: the collision
    visits spent, whatever the collision events; or no room for another round's)."""
    if (
        batch.meta[REQUESTS] == before_req
        and batch.meta[OUT_OF_ORDER_DONE] == before_ooo
        and batch.meta[COLLISIONS] == first
    ):
        return 0
    if batch.meta[OUT_OF_ORDER_DONE] > before_ooo:
        # Values arrived meanwhile: the collisions may be worth another look.
        for c in range(first, batch.meta[COLLISIONS]):
            cancel_collision(tree, batch, c)
        batch.meta[COLLISIONS] = first
    else:
        for c in range(first, batch.meta[COLLISIONS]):
            k, most = batch.coll.k[c], batch.coll.most[c]
            if most > 0 and collisions_left > k:
                # lc0's upsized collision: more visits in flight on its path, and the gather
                # ends sooner.
                extra = min(most, collisions_left) - k
                n = _collision_path(tree, batch, c)
                while n >= 0 and tree.nodes.parent[n] >= 0:
                    fetch_add(tree.nodes.nif, n, extra)
                    n = tree.nodes.parent[n]
                batch.coll.k[c] = k + extra
            collisions_left -= batch.coll.k[c]
    if (
        collisions_left <= 0
        or walk.stop[0] != 0
        or batch.meta[NO_ROOM] != 0
        or batch.meta[COLLISIONS] + want >= batch.coll.node.shape[0]
    ):
        return 0
    return collisions_left


@njit(cache=True)
def gather_end(tree, params, cache, batch, walk, pad, keep):
    """A gather's last step: a minibatch cut short filled up to ``pad[requests]`` with
    prefetched positions (lc0's prefetch scores the children with the collisions in flight),
    then, unless ``keep``, its collisions out of flight (:func:`cancel_collisions`; kept, they
    stay until a backup, as lc0's shared collisions)."""
    requests = batch.meta[REQUESTS]
    target = pad[min(requests, pad.shape[0] - 1)]
    if 0 < requests < target and walk.stop[0] == 0:
        # pad[0] is MaxPrefetch: a target above it is padding the backend computes anyway.
        mode = PREFETCH_LC0
        if target > pad[0]:
            mode = PREFETCH_DEEP
        elif target < pad[0]:
            mode = PREFETCH_PADDING
        prefetch(tree, params, cache, batch, walk, target - requests, I(mode))
        batch.meta[PREFETCHED] = batch.meta[REQUESTS] - requests
    if not keep:
        cancel_collisions(tree, batch)


@njit(cache=True)
def cancel_collisions(tree, batch):
    """The batch's collisions out of flight (the count stays: the records, for the tests)."""
    for c in range(batch.meta[COLLISIONS]):
        cancel_collision(tree, batch, c)
