"""The select phase: gathering a minibatch (lc0's GatherMinibatch) with PUCT selection and
multi-visit picking, collisions, out-of-order backups of terminals and cache hits, prefetching
into the NN cache, and the new leaves' encodings."""

from __future__ import annotations

import math

import chess
import numpy as np

from engine import encoding, tablebase
from engine.encoding.planes import masks_to_planes, position_masks
from engine.search import backup, tree
from engine.search.cache import CachedEval
from engine.search.node import Node, Terminal
from engine.search.puct import assign_visits, child_scores, selection_width
from engine.search.ranking import best_children
from engine.search.state import STOP_CHECK_EVERY, Batch, Request, SearchState
from engine.search.stoppers import time_up


def ensure_root_expanded(state: SearchState) -> None:
    """Expand the root synchronously (needed for the searchmoves mask)."""
    root = state.root
    if not root.expanded:
        tree.sync(state, root, 0)
        key = tree.cache_key(state, 0)
        hit = state.cache.get(key)
        if hit is None:
            hit = evaluate_now(state, key)
        root.expand(hit.moves, hit.priors)
        backup.backup(state, root, 1, -hit.q, hit.d, hit.m, 0)
    if state.searchmoves:
        state.mask = np.array([m in state.searchmoves for m in root.moves])
        if not state.mask.any():
            state.mask = None


def evaluate_now(state: SearchState, key: object) -> CachedEval:
    """Evaluate the synced position at once (not in a minibatch) and cache its entry under
    ``key``: the root, when the search needs its moves before it can start."""
    batch = Batch()
    add_request(state, batch, None, key, 0, *legal_moves(state))
    entry = backup.make_entries(state, batch.requests, state.network.evaluate(encode(batch)))[0]
    state.cache.put(key, entry)
    return entry


def legal_moves(state: SearchState) -> tuple[list[chess.Move], list[int]]:
    """The synced position's legal moves and their policy indices in the network's format."""
    return encoding.legal_moves_and_indices(state.board, state.network.input_format)


def add_request(
    state: SearchState,
    batch: Batch,
    node: Node | None,
    key: object,
    depth: int,
    moves: list[chess.Move],
    indices: list[int],
) -> None:
    """Queue the synced position for evaluation in ``batch``: its request and its planes'
    masks (``node`` None: a prefetch, for the NN cache only)."""
    batch.requests.append(Request(node, key, moves, indices, depth))
    batch.masks.append(position_masks(state.board, state.rules, state.fill))


def encode(batch: Batch) -> np.ndarray:
    """The batch's input planes: its positions' masks, decoded once for the whole batch."""
    return masks_to_planes(batch.masks)


def gather(state: SearchState, batch_size: int) -> Batch:
    """Collect up to ``batch_size`` positions to evaluate, as lc0's GatherMinibatch.

    Each pick hands out at most as many visits as the collision budget has left, so a small
    tree (up to MaxCollisionVisitsScalingStart visits: a budget of one) grows one visit at
    a time and the first collision ends the minibatch; the budget scales with the smaller
    of the tree size and the playouts the stoppers expect to remain. Cache hits and
    terminals are backed up at once and do not fill the minibatch; when a pick met any,
    its collisions are given back instead of counted, since the values they waited for
    may be there now (lc0 does the same).
    """
    batch = Batch()
    p = state.params
    max_ooo = max(1, int(p.max_out_of_order_evals_factor * batch_size))
    collisions_left = p.collision_visit_limit(min(state.root.n, state.remaining_hint))
    state.root_filter = catchable_root_moves(state)
    while len(batch.requests) < batch_size and batch.out_of_order < max_ooo:
        want = min(collisions_left, batch_size - len(batch.requests), max_ooo - batch.out_of_order)
        if state.limit.nodes is not None:
            want = min(want, state.limit.nodes - state.root.n - visits_in_flight(state, batch))
        if want <= 0:
            break
        before = (len(batch.requests), batch.out_of_order)
        first_collision = len(batch.collisions)
        select(state, want, batch)
        if (len(batch.requests), batch.out_of_order) == before:
            break
        new = batch.collisions[first_collision:]
        if batch.out_of_order > before[1]:
            for node, k in new:
                backup.cancel(state, node, k)
            del batch.collisions[first_collision:]
        else:
            collisions_left -= sum(k for _, k in new)
        if (
            collisions_left <= 0
            or batch.collision_events >= p.max_collision_events
            or state.stop.is_set()
        ):
            break
    for node, k in batch.collisions:
        backup.cancel(state, node, k)
    target = prefetch_target(state, len(batch.requests))
    if 0 < len(batch.requests) < target and not state.stop.is_set():
        prefetch(
            state,
            state.root,
            target - len(batch.requests),
            0,
            batch,
            {r.key for r in batch.requests},
        )
    return batch


def prefetch_target(state: SearchState, requests: int) -> int:
    """Batch size to fill with prefetched positions: MaxPrefetch (lc0), but no further than
    the rows the backend computes anyway (its padded size), so prefetching never costs
    network time: on a CPU, a minibatch cut to 5 requests by collisions and padded to the
    compiled 7 takes two prefetches, not 27."""
    padded = state.attributes.padded_size
    if padded is None or requests == 0:
        return state.params.max_prefetch
    return min(state.params.max_prefetch, padded(requests))


def probe_tablebase(state: SearchState, node: Node, k: int, depth: int, batch: Batch) -> bool:
    """lc0: below a root the tables do not cover, a position just after a capture or pawn
    move (rule50 0) that they cover is a terminal node with its WDL (cursed wins and
    blessed losses are draws); moves left are the parent's less one."""
    tb = state.tablebase
    if tb is None or state.root_in_tablebase or state.board.halfmove_clock != 0:
        return False
    wdl = tb.probe_wdl(state.board)
    if wdl is None:
        return False
    state.tb_hits += 1
    # The mover's view is the opposite of the side to move's; cursed and blessed count as draws.
    wl = -1.0 if wdl == tablebase.WIN else (1.0 if wdl == tablebase.LOSS else 0.0)
    m = max(0.0, node.parent.m - 1.0) if node.parent is not None else 0.0
    node.terminal = Terminal(wl, 1.0 - abs(wl), m, "tablebase")
    backup.backup(state, node, k, wl, 1.0 - abs(wl), m, depth)
    batch.out_of_order += 1
    return True


def catchable_root_moves(state: SearchState) -> list[bool] | None:
    """Root moves worth visits (searchmoves, and lc0's pruning in selection): a move whose
    visits cannot reach the current best move's in the playouts expected to remain gets
    none; the best move always stays. None: every move."""
    root = state.root
    mask = None if state.mask is None else state.mask.tolist()
    remaining = state.remaining_hint
    if remaining == math.inf or not root.expanded or root.n == 0:
        return mask
    best = best_children(state, root, 1)
    if not best:
        return mask
    best_n = root.cn[best[0]]
    catchable = [i == best[0] or remaining >= best_n - n for i, n in enumerate(root.cn)]
    return catchable if mask is None else [a and b for a, b in zip(mask, catchable)]


def prefetch(
    state: SearchState, node: Node, budget: int, depth: int, batch: Batch, keys: set
) -> int:
    """lc0's PrefetchIntoCache: fill a small batch with positions the search is likely to
    visit next, for the NN cache only (the tree is not touched). From ``node`` down, children
    in PUCT order each get the budget they would take before the next child overtakes them.
    Returns the budget spent."""
    if budget <= 0 or node.terminal is not None or node.pending:
        return 0
    if not node.expanded:
        tree.sync(state, node, depth)
        key = tree.cache_key(state, depth)
        if key in keys or state.cache.get(key) is not None:
            return 0
        moves, idx = legal_moves(state)
        if not moves:
            return 0
        keys.add(key)
        add_request(state, batch, None, key, depth, moves, idx)
        return 1
    if node.n == 0:
        return 0
    p = state.params
    draw_score = state.draw_score(depth)
    qm, pu, _ = child_scores(p, node, node is state.root, draw_score, state.network.has_mlh)
    started = [n + f for n, f in zip(node.cn, node.cnif)]
    scores = [q + u / (1.0 + s) for q, u, s in zip(qm, pu, started)]
    order = sorted((i for i in range(len(scores)) if node.p[i] > 0.0), key=lambda i: -scores[i])
    spent = 0
    to_spend = budget
    for j, i in enumerate(order):
        if budget <= 0:
            break
        if j + 1 < len(order):  # the last child keeps the budget of the one before it
            gap = scores[order[j + 1]] - qm[i]
            to_spend = min(budget, int(pu[i] / gap - started[i]) + 1) if gap > 0 else budget
        child = node.child(i)
        got = prefetch(state, child, to_spend, depth + 1, batch, keys)
        budget -= got
        spent += got
    return spent


def visits_in_flight(state: SearchState, batch: Batch) -> int:
    """Evaluations not yet backed up: the root's children visits in flight (+1 for a pending root)."""
    root = state.root
    if root.expanded:
        return sum(root.cnif)
    return 1 if root.pending else 0


def select(state: SearchState, visits: int, batch: Batch) -> None:
    """Distribute ``visits`` from the root down the tree by PUCT (multi-visit picking)."""
    p = state.params
    use_mlh = state.network.has_mlh
    draw_scores = (state.draw_score(0), state.draw_score(1))  # by depth parity
    stack: list[tuple[Node, int, int]] = [(state.root, visits, 0)]
    leaves = 0
    while stack:
        node, k, depth = stack.pop()
        leaves += 1
        if leaves % STOP_CHECK_EVERY == 0 and (state.stop.is_set() or time_up(state)):
            # Give back the visits not handed out yet, so the tree keeps no phantom in-flight.
            backup.cancel(state, node, k)
            for rest, rk, _ in stack:
                backup.cancel(state, rest, rk)
            return
        if node.terminal is not None and node is not state.root:
            t = node.terminal
            backup.backup(state, node, k, t.wl, t.d, t.m, depth)
            batch.out_of_order += 1
            continue
        if not node.expanded:
            leaf(state, node, k, depth, batch)
            continue
        at_root = node is state.root
        draw_score = draw_scores[depth & 1]
        mask = state.root_filter if at_root else None
        # A root filter may exclude the first untouched children: then score them all.
        width = len(node.cn) if mask is not None else selection_width(node, k)
        qm, pu, _ = child_scores(p, node, at_root, draw_score, use_mlh, width)
        touched = node.touched
        for i, cnt in assign_visits(qm, pu, node.cn, node.cnif, k, mask).items():
            if i >= touched:
                touched = i + 1
            stack.append((node.child(i), cnt, depth + 1))
        node.touched = touched


def leaf(state: SearchState, node: Node, k: int, depth: int, batch: Batch) -> None:
    """An unexpanded node received k visits: collision, terminal, cache hit or a new request."""
    if node.pending:
        batch.collisions.append((node, k))
        batch.collision_events += 1
        return
    tree.sync(state, node, depth)
    board = state.board
    key = tree.cache_key(state, depth)
    hit = state.cache.get(key)
    moves = idx = None
    if hit is None:
        moves, idx = legal_moves(state)
        if not moves:
            wl = 1.0 if board.is_check() else 0.0
            node.terminal = Terminal(wl, 1.0 - abs(wl), 0.0, "mate" if wl else "stalemate")
            backup.backup(state, node, k, node.terminal.wl, node.terminal.d, 0.0, depth)
            batch.out_of_order += 1
            return
    if depth > 0:
        draw = tree.draw_kind(state, depth)
        if draw is not None:
            # lc0 uses the cycle length as moves left of a two-fold draw.
            m = float(len(state.keys) - 1 - state.twofold_first) if draw == "twofold" else 0.0
            node.terminal = Terminal(0.0, 1.0, m, draw)
            if draw == "twofold":
                state.twofold.append((node, state.twofold_first))
            backup.backup(state, node, k, 0.0, 1.0, m, depth)
            batch.out_of_order += 1
            return
        if probe_tablebase(state, node, k, depth, batch):
            return
    state.max_depth = max(state.max_depth, depth)
    if hit is not None and state.params.out_of_order_eval:
        node.expand(hit.moves, hit.priors)
        backup.backup(state, node, 1, -hit.q, hit.d, hit.m, depth)
        batch.out_of_order += 1
    else:
        if moves is None or idx is None:
            moves, idx = legal_moves(state)
        add_request(state, batch, node, key, depth, moves, idx)
        node.pending = True
    if k > 1:
        batch.collisions.append((node, k - 1))
        batch.collision_events += 1
