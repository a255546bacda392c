"""Gathering a minibatch (lc0's GatherMinibatch): PUCT selection with multi-visit picking,
collisions, out-of-order backups of terminals and cache hits, and encoding of the new leaves.
``GatherMixin`` is one part of ``Search``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import chess
import numpy as np

from engine import encoding, tablebase
from engine.encoding.planes import EncodedMasks, masks_to_planes, position_masks
from engine.search.cache import CachedEval
from engine.search.node import Node, Terminal
from engine.search.report import best_children
from engine.search.select import assign_visits, child_scores

STOP_CHECK_EVERY = 8
"""Nodes handled between checks of stop / the deadline while gathering."""


@dataclass
class Request:
    """A leaf sent to the network: its node, cache key, legal moves and their policy indices."""

    node: Node | None  # None: a prefetched position, for the NN cache only
    key: object
    moves: list[chess.Move]
    indices: list[int]
    depth: int


@dataclass
class Batch:
    """One minibatch being gathered, with the collisions and out-of-order work it met."""

    requests: list[Request] = field(default_factory=list)
    # Planes are encoded as bitboard masks per leaf and turned into dense planes once per batch.
    masks: list[EncodedMasks] = field(default_factory=list)
    collisions: list[tuple[Node, int]] = field(default_factory=list)
    collision_events: int = 0
    collision_visits: int = 0
    out_of_order: int = 0


class GatherMixin:
    """Selection and leaf handling of ``Search``."""

    def _ensure_root_expanded(self) -> None:
        """Expand the root synchronously (needed for the searchmoves mask)."""
        root = self.root
        if not root.expanded:
            self._sync(root, 0)
            key = self._cache_key(0)
            hit = self.cache.get(key)
            if hit is None:
                hit = self._evaluate_now(key)
            root.expand(hit.moves, hit.priors)
            self._backup(root, 1, -hit.q, hit.d, hit.m, 0)
        if self._searchmoves:
            self._mask = np.array([m in self._searchmoves for m in root.moves])
            if not self._mask.any():
                self._mask = None

    def _evaluate_now(self, key: object) -> CachedEval:
        moves, idx = encoding.legal_moves_and_indices(self._board, self.network.input_format)
        planes = masks_to_planes([position_masks(self._board, self._rules, self._fill)])
        out = self.network.evaluate(planes)
        entry = self._make_entries([moves], [idx], out)[0]
        self.cache.put(key, entry)
        return entry

    def _gather(self, batch_size: int) -> Batch:
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
        p = self.params
        max_ooo = max(1, int(p.max_out_of_order_evals_factor * batch_size))
        collisions_left = p.collision_visit_limit(min(self.root.n, self._remaining_hint))
        self._root_filter = self._catchable_root_moves()
        while len(batch.requests) < batch_size and batch.out_of_order < max_ooo:
            want = min(collisions_left, batch_size - len(batch.requests),
                       max_ooo - batch.out_of_order)
            if self._limits.nodes is not None:
                want = min(want, self._limits.nodes - self.root.n - self._visits_in_flight(batch))
            if want <= 0:
                break
            before = (len(batch.requests), batch.out_of_order)
            first_collision = len(batch.collisions)
            self._select(want, batch)
            if (len(batch.requests), batch.out_of_order) == before:
                break
            new = batch.collisions[first_collision:]
            if batch.out_of_order > before[1]:
                for node, k in new:
                    self._cancel(node, k)
                del batch.collisions[first_collision:]
            else:
                collisions_left -= sum(k for _, k in new)
            if (collisions_left <= 0 or batch.collision_events >= p.max_collision_events
                    or self._stop.is_set()):
                break
        for node, k in batch.collisions:
            self._cancel(node, k)
        target = self._prefetch_target(len(batch.requests))
        if 0 < len(batch.requests) < target and not self._stop.is_set():
            self._prefetch(self.root, target - len(batch.requests), 0, batch,
                           {r.key for r in batch.requests})
        return batch

    def _prefetch_target(self, requests: int) -> int:
        """Batch size to fill with prefetched positions: MaxPrefetch (lc0), but no further than
        the rows the backend computes anyway (its padded size), so prefetching never costs
        network time: on a CPU, 7 requests padded to 8 take one prefetch, not 25."""
        padded = getattr(self.network, "padded_size", None)
        if padded is None or requests == 0:
            return self.params.max_prefetch
        return min(self.params.max_prefetch, padded(requests))

    def _probe_tablebase(self, node: Node, k: int, depth: int, batch: Batch) -> bool:
        """lc0: below a root the tables do not cover, a position just after a capture or pawn
        move (rule50 0) that they cover is a terminal node with its WDL (cursed wins and
        blessed losses are draws); moves left are the parent's less one."""
        tb = self.tablebase
        if tb is None or self._root_in_tablebase or self._board.halfmove_clock != 0:
            return False
        wdl = tb.probe_wdl(self._board)
        if wdl is None:
            return False
        self._tb_hits += 1
        # The mover's view is the opposite of the side to move's; cursed and blessed count as draws.
        wl = -1.0 if wdl == tablebase.WIN else (1.0 if wdl == tablebase.LOSS else 0.0)
        m = max(0.0, node.parent.m - 1.0) if node.parent is not None else 0.0
        node.terminal = Terminal(wl, 1.0 - abs(wl), m, "tablebase")
        self._backup(node, k, wl, 1.0 - abs(wl), m, depth)
        batch.out_of_order += 1
        return True

    def _catchable_root_moves(self) -> list[bool] | None:
        """Root moves worth visits (searchmoves, and lc0's pruning in selection): a move whose
        visits cannot reach the current best move's in the playouts expected to remain gets
        none; the best move always stays. None: every move."""
        root = self.root
        mask = None if self._mask is None else self._mask.tolist()
        remaining = self._remaining_hint
        if remaining == math.inf or not root.expanded or root.n == 0:
            return mask
        best = best_children(self, root, 1)
        if not best:
            return mask
        best_n = root.cn[best[0]]
        catchable = [i == best[0] or remaining >= best_n - n for i, n in enumerate(root.cn)]
        return catchable if mask is None else [a and b for a, b in zip(mask, catchable)]

    def _prefetch(self, node: Node, budget: int, depth: int, batch: Batch, keys: set) -> int:
        """lc0's PrefetchIntoCache: fill a small batch with positions the search is likely to
        visit next, for the NN cache only (the tree is not touched). From ``node`` down, children
        in PUCT order each get the budget they would take before the next child overtakes them.
        Returns the budget spent."""
        if budget <= 0 or node.terminal is not None or node.pending:
            return 0
        if not node.expanded:
            self._sync(node, depth)
            key = self._cache_key(depth)
            if key in keys or self.cache.get(key) is not None:
                return 0
            moves, idx = encoding.legal_moves_and_indices(self._board, self.network.input_format)
            if not moves:
                return 0
            keys.add(key)
            batch.requests.append(Request(None, key, moves, idx, depth))
            batch.masks.append(position_masks(self._board, self._rules, self._fill))
            return 1
        if node.n == 0:
            return 0
        p = self.params
        root_black = self.root_board.turn == chess.BLACK
        draw_score = p.draw_score if ((depth % 2 == 1) == root_black) else -p.draw_score
        qm, pu, _ = child_scores(p, node, node is self.root, draw_score, self.network.has_mlh)
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
            got = self._prefetch(child, to_spend, depth + 1, batch, keys)
            budget -= got
            spent += got
        return spent

    def _visits_in_flight(self, batch: Batch) -> int:
        """Evaluations not yet backed up: the root's children visits in flight (+1 for a pending root)."""
        root = self.root
        if root.expanded:
            return sum(root.cnif)
        return 1 if root.pending else 0

    def _select(self, visits: int, batch: Batch) -> None:
        """Distribute ``visits`` from the root down the tree by PUCT (multi-visit picking)."""
        p = self.params
        use_mlh = self.network.has_mlh
        root_black = self.root_board.turn == chess.BLACK
        stack: list[tuple[Node, int, int]] = [(self.root, visits, 0)]
        leaves = 0
        while stack:
            node, k, depth = stack.pop()
            leaves += 1
            if leaves % STOP_CHECK_EVERY == 0 and (self._stop.is_set() or self._time_up()):
                # Give back the visits not handed out yet, so the tree keeps no phantom in-flight.
                self._cancel(node, k)
                for rest, rk, _ in stack:
                    self._cancel(rest, rk)
                return
            if node.terminal is not None and node is not self.root:
                t = node.terminal
                self._backup(node, k, t.wl, t.d, t.m, depth)
                batch.out_of_order += 1
                continue
            if not node.expanded:
                self._leaf(node, k, depth, batch)
                continue
            at_root = node is self.root
            # lc0's GetDrawScore: DrawScore at even depth for white at the root, negated otherwise.
            draw_score = p.draw_score if ((depth % 2 == 1) == root_black) else -p.draw_score
            qm, pu, _ = child_scores(p, node, at_root, draw_score, use_mlh)
            mask = self._root_filter if at_root else None
            for i, cnt in assign_visits(qm, pu, node.cn, node.cnif, k, mask).items():
                stack.append((node.child(i), cnt, depth + 1))

    def _leaf(self, node: Node, k: int, depth: int, batch: Batch) -> None:
        """An unexpanded node received k visits: collision, terminal, cache hit or a new request."""
        if node.pending:
            batch.collisions.append((node, k))
            batch.collision_events += 1
            batch.collision_visits += k
            return
        self._sync(node, depth)
        board = self._board
        key = self._cache_key(depth)
        hit = self.cache.get(key)
        moves = None
        if hit is None:
            moves, idx = encoding.legal_moves_and_indices(board, self.network.input_format)
            if not moves:
                wl = 1.0 if board.is_check() else 0.0
                node.terminal = Terminal(wl, 1.0 - abs(wl), 0.0, "mate" if wl else "stalemate")
                self._backup(node, k, node.terminal.wl, node.terminal.d, 0.0, depth)
                batch.out_of_order += 1
                return
        if depth > 0:
            draw = self._draw_kind(depth)
            if draw is not None:
                # lc0 uses the cycle length as moves left of a two-fold draw.
                m = float(len(self._keys) - 1 - self._twofold_first) if draw == "twofold" else 0.0
                node.terminal = Terminal(0.0, 1.0, m, draw)
                if draw == "twofold":
                    self._twofold.append((node, self._twofold_first))
                self._backup(node, k, 0.0, 1.0, m, depth)
                batch.out_of_order += 1
                return
            if self._probe_tablebase(node, k, depth, batch):
                return
        self._max_depth = max(self._max_depth, depth)
        if hit is not None and self.params.out_of_order_eval:
            node.expand(hit.moves, hit.priors)
            self._backup(node, 1, -hit.q, hit.d, hit.m, depth)
            batch.out_of_order += 1
        else:
            if moves is None:
                moves, idx = encoding.legal_moves_and_indices(board, self.network.input_format)
            batch.requests.append(Request(node, key, moves, idx, depth))
            batch.masks.append(position_masks(board, self._rules, self._fill))
            node.pending = True
        if k > 1:
            batch.collisions.append((node, k - 1))
            batch.collision_events += 1
            batch.collision_visits += k - 1
