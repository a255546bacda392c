"""The one record of what a ``go`` asks for (python-chess's ``chess.engine.Limit``)."""

from __future__ import annotations

from dataclasses import dataclass

import chess


@dataclass(frozen=True)
class Limit:
    """What one ``go`` asks for, from the UCI parser through the controller and the time
    manager to the search (lc0's units: milliseconds). Any limit reached stops the search.

    Clock readings, which the time manager turns into a budget: ``wtime``, ``btime``, ``winc``,
    ``binc``, ``movestogo``, and ``movetime``.
    Search limits: ``nodes``, ``depth``, ``mate``; ``searchmoves`` (root moves to search;
    empty: all).
    ``infinite`` / ``ponder``: no bestmove before ``stop`` (or, pondering, ``ponderhit``, which
    turns ``ponder`` off and starts the clock).
    ``started_at``: time.monotonic() of the arrival of the ``go``'s ``position`` line (a go
    with a clock; its ``go`` line's with StrictTiming after an ``isready``, or without a clock)
    or of the ``ponderhit``; the clock runs from it, as lc0 counts (None: from the search's
    start).
    ``budget_ms``: the time the move may take from ``started_at``: the time manager's answer,
    which the controller sets; None: no time limit.
    ``ceiling_ms``: the time the go line itself allows (the movetime, or the side's clock, less
    MoveOverheadMs), past which the move arrives late. The budget does not stop a search whose
    root has no evaluation yet (lc0's rule: a move chosen blind is the worst answer); the
    ceiling does.
    """

    wtime: int | None = None
    btime: int | None = None
    winc: int | None = None
    binc: int | None = None
    movestogo: int | None = None
    movetime: int | None = None
    nodes: int | None = None
    depth: int | None = None
    mate: int | None = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: tuple[chess.Move, ...] = ()
    started_at: float | None = None
    budget_ms: float | None = None
    ceiling_ms: float | None = None

    @property
    def until_stop(self) -> bool:
        """Search until stop (``go infinite`` or ``go ponder``): no limit ends it."""
        return self.infinite or self.ponder
