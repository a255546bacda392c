"""What a search hands back: its result, its info lines, its running counters, and the pace of
its reports."""

from __future__ import annotations

from dataclasses import dataclass

import chess

INFO_INTERVAL_S = 1.0
"""An info line at least this often."""

WAIT_SLICE_S = 0.005
"""Granularity of waiting for a batch, so that stop and deadlines are noticed within it."""


@dataclass(frozen=True)
class SearchStats:
    """Counters of the running search, as the reports read them (lc0's IterationStats part).

    nodes: visits of the root, reused ones included; playouts: visits this search added;
    depth_sum: sum of the depths of those playouts; tb_hits: tablebase probes that answered.
    """

    elapsed_ms: float
    nodes: int
    playouts: int
    depth_sum: int
    max_depth: int
    tb_hits: int
    hashfull: int

    @property
    def average_depth(self) -> int:
        return int(self.depth_sum // self.playouts) if self.playouts else 0

    @property
    def nps(self) -> int:
        return int(self.playouts * 1000 / self.elapsed_ms) if self.elapsed_ms > 0 else 0


@dataclass(frozen=True)
class ThinkingInfo:
    """One ``info`` line: statistics of one principal variation (multipv index, 1-based)."""

    depth: int
    seldepth: int
    time_ms: int
    nodes: int
    nps: int
    hashfull: int
    score_cp: int | None
    mate: int | None
    wdl: tuple[int, int, int]
    multipv: int | None
    pv: tuple[chess.Move, ...]
    moves_left: int | None = None
    tbhits: int = 0


@dataclass(frozen=True)
class SearchResult:
    """Outcome of one search: best move (None when the root has no legal move) and the ponder
    move; nodes: the root's visits, playouts: those this search added."""

    bestmove: chess.Move | None
    ponder: chess.Move | None
    nodes: int
    playouts: int
    time_ms: float
    infos: tuple[ThinkingInfo, ...] = ()
