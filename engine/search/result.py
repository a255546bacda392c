"""What a search hands back: its result, its info lines, its running counters, and the pace of
its reports."""

from __future__ import annotations

from dataclasses import dataclass, replace

import chess

INFO_HEARTBEAT_MS = 5000
"""An info line at least this often while nothing changes (lc0's kUciInfoMinimumFrequencyMs)."""

WAIT_SLICE_S = 0.005
"""Granularity of waiting for a batch, so that stop and deadlines are noticed within it."""


@dataclass(frozen=True)
class SearchStats:
    """Counters of the running search, as the reports read them (lc0's IterationStats part).

    nodes: visits of the root, reused ones included; playouts: visits this search added;
    depth_sum: sum of the depths of those playouts and max_depth the deepest, as lc0 counts
    them (the root's depth 1: :attr:`engine.search.go.Tally.cum_depth`); tb_hits: tablebase
    probes that answered; evaluations: positions the network evaluated; nps_start_ms: when the
    run first saw a playout (lc0's ``nps_start_time_``; None: not yet).
    """

    elapsed_ms: float
    nodes: int
    playouts: int
    depth_sum: int
    max_depth: int
    tb_hits: int
    hashfull: int
    evaluations: int = 0
    nps_start_ms: float | None = None

    @property
    def average_depth(self) -> int:
        return int(self.depth_sum // self.playouts) if self.playouts else 0

    @property
    def rate_ms(self) -> int:
        """Whole milliseconds since the first playout (lc0's time since the first batch)."""
        return 0 if self.nps_start_ms is None else int(self.elapsed_ms - self.nps_start_ms)

    @property
    def nps(self) -> int | None:
        """Playouts a second since the first playout, as lc0's; None (no ``nps`` field) before
        any time has passed since it, or without a playout (a reused tree's search)."""
        ms = self.rate_ms
        return self.playouts * 1000 // ms if ms > 0 else None

    @property
    def eps(self) -> int | None:
        """Network evaluations a second over the same time (lc0's ``eps``, UCI_ShowEPS)."""
        ms = self.rate_ms
        return self.evaluations * 1000 // ms if ms > 0 else None


@dataclass(frozen=True)
class ThinkingInfo:
    """One ``info`` line: statistics of one principal variation (multipv index, 1-based)."""

    depth: int
    seldepth: int
    time_ms: int
    nodes: int
    nps: int | None
    """None: no ``nps`` field (no time has passed since the first playout, as lc0's)."""
    hashfull: int
    score_cp: int | None
    mate: int | None
    wdl: tuple[int, int, int]
    multipv: int | None
    pv: tuple[chess.Move, ...]
    moves_left: int | None = None
    tbhits: int = 0
    eps: int | None = None
    """Network evaluations a second (shown with UCI_ShowEPS); None as ``nps``."""

    def same_but_time(self, other: ThinkingInfo | None) -> bool:
        """Whether ``other`` says the same but for the time and the rates (a repeat)."""
        if other is None:
            return False
        return replace(self, time_ms=0, nps=None, eps=None) == replace(
            other, time_ms=0, nps=None, eps=None
        )


@dataclass(frozen=True)
class SearchResult:
    """Outcome of one search: best move (None when the root has no legal move) and the ponder
    move; nodes: the root's visits, playouts: those this search added; ``kld_stopped``: the KLD
    gain stopper ended it (what only the run knows; the log says so, as lc0's)."""

    bestmove: chess.Move | None
    ponder: chess.Move | None
    nodes: int
    playouts: int
    time_ms: float
    infos: tuple[ThinkingInfo, ...] = ()
    kld_stopped: bool = False
