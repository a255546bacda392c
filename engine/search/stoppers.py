"""When a search stops: node, time, depth and mate limits and lc0's smart pruning
(lc0's src/search/classic/stoppers/). ``StopperMixin`` is one part of ``Search``."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import chess
import numpy as np

from engine.search.report import best_children

SMART_PRUNING_TOLERANCE_MS = 200
SMART_PRUNING_TOLERANCE_NODES = 300
"""lc0's SmartPruningStopper tolerances (stoppers.cc)."""


@dataclass(frozen=True)
class Limits:
    """When to stop: any limit reached. time_ms counts from ``started_at`` (time.monotonic() of the
    `go` command's arrival, as lc0 counts; None: the search start) or from ponderhit."""

    nodes: int | None = None
    time_ms: float | None = None
    started_at: float | None = None
    depth: int | None = None
    mate: int | None = None
    infinite: bool = False
    searchmoves: tuple[chess.Move, ...] = ()


class StopperMixin:
    """Stop conditions of ``Search``, read from its counters and ``_limits``."""

    def elapsed_ms(self) -> float:
        return (time.monotonic() - self._start) * 1000.0

    def _time_up(self) -> bool:
        t = self._limits.time_ms
        return t is not None and not self._limits.infinite and self.elapsed_ms() >= t

    def _limit_reached(self) -> bool:
        lim = self.params
        limits = self._limits
        # Playouts the stoppers expect to remain (lc0's StoppersHints), for the collision budget:
        # the nodes left when smart pruning is on, divided by its factor once it is measuring.
        self._remaining_hint = math.inf
        if limits.nodes is not None and lim.smart_pruning_factor > 0.0:
            self._remaining_hint = max(limits.nodes - self.root.n, 0)
        if limits.nodes is not None and self.root.n >= limits.nodes:
            return True
        if self.root.n >= lim.max_tree_nodes:
            return True
        if self._time_up():
            return True
        if limits.depth is not None and self.root.n > 1 and self._avg_depth() >= limits.depth:
            return True
        if limits.mate is not None:
            mate = self._mate_found()
            if mate is not None and 0 < mate <= limits.mate:
                return True
        if not limits.infinite and self._smart_prune():
            return True
        return False

    def _avg_depth(self) -> float:
        return self._cum_depth / max(self._total_playouts, 1)

    def _mate_found(self) -> int | None:
        if not self.root.expanded:
            return None
        best = best_children(self, self.root, 1)
        if not best:
            return None
        child = self.root.children[best[0]]
        if child is None or child.terminal is None or child.terminal.wl <= 0:
            return None
        return int(round(child.terminal.m)) // 2 + 1

    def _root_outcomes(self) -> tuple[int, int, bool]:
        """(moves searched, root moves proven lost, a root move proven won), over the searchmoves."""
        root = self.root
        moves = lost = 0
        won = False
        for i, child in enumerate(root.children):
            if self._mask is not None and not self._mask[i]:
                continue
            moves += 1
            t = child.terminal if child is not None and root.cn[i] > 0 else None
            if t is not None:
                lost += t.wl < 0.0
                won = won or t.wl > 0.0
        return moves, lost, won

    def _smart_prune(self) -> bool:
        """lc0's SmartPruningStopper, in its order: one legal move, at most one move that does not
        lose, a proven win; then, from SMART_PRUNING_TOLERANCE_MS after the first evaluation and
        SmartPruningMinimumBatches batches on, stop when the second-best move cannot catch up
        with the best in the playouts left (nodes left under ``go nodes``, time left times the
        measured rate under a clock; each divided by SmartPruningFactor)."""
        p = self.params
        root = self.root
        if p.smart_pruning_factor <= 0.0 or not root.expanded:
            return False
        moves, lost, won = self._root_outcomes()
        if moves <= 1 or moves <= lost + 1 or won:
            return True
        elapsed = self.elapsed_ms()
        if self._first_eval_time is None:
            if self._total_playouts > 0:
                self._first_eval_time = elapsed
            return False
        if elapsed < self._first_eval_time + SMART_PRUNING_TOLERANCE_MS:
            return False
        remaining = math.inf
        if self._limits.nodes is not None:
            remaining = (self._limits.nodes - root.n) / p.smart_pruning_factor
        if self._limits.time_ms is not None:
            nodes = self._total_playouts + SMART_PRUNING_TOLERANCE_NODES
            nps = 1000.0 * nodes / max(elapsed - self._first_eval_time, 1e-3) + 1
            remaining = min(remaining, (self._limits.time_ms - elapsed) / 1000.0 * nps
                            / p.smart_pruning_factor)
        if math.isinf(remaining):
            return False
        self._remaining_hint = remaining
        if self._batches < p.smart_pruning_minimum_batches:
            return False
        cn = np.asarray(root.cn) if self._mask is None else np.where(self._mask, root.cn, 0)
        top2 = np.partition(cn, len(cn) - 2)[-2:]
        return remaining < top2[1] - top2[0]
