"""The explicit state of a search, and the records its phases pass between them.

The phases are plain functions over a :class:`SearchState` (as mctx's select/expand/backup are
over its tree): ``tree`` keeps the board in step with the node being visited, ``gather``
selects a minibatch, ``backup`` expands evaluated leaves and backs their values up,
``stoppers`` decide when to stop and ``report`` reads the results. ``Search`` (search.py) owns
one state and the threads, and runs the phases in its loop.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field

import chess
import numpy as np

from engine import encoding
from engine.backend import BackendAttributes, Network
from engine.encoding.formats import FormatRules
from engine.encoding.planes import EncodedMasks
from engine.search.cache import NNCache
from engine.search.limit import Limit
from engine.search.node import Node
from engine.search.params import SearchParams
from engine.tablebase import Tablebase

STOP_CHECK_EVERY = 8
"""Nodes handled between checks of stop / the deadline while gathering or expanding."""


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
    out_of_order: int = 0


@dataclass(eq=False)
class SearchState:
    """Everything the search phases read and write.

    The tree: ``root`` and ``root_board`` (the game up to the root). The walker: ``board`` shows
    the position of the last node synced (``tree.sync``), reached by pushing the nodes in
    ``pushed``; ``keys`` are the position keys of the game and then of that path.
    The current search: its ``limit``, counters and the root filters; ``stop`` is set to
    end it (by the UCI thread or a deadline).
    """

    network: Network
    params: SearchParams
    cache: NNCache
    tablebase: Tablebase | None = None
    stop: threading.Event = field(default_factory=threading.Event)

    root: Node = field(default_factory=Node)
    root_board: chess.Board = field(default_factory=chess.Board)
    board: chess.Board = field(default_factory=chess.Board)
    pushed: list[Node] = field(default_factory=list)
    keys: list = field(default_factory=list)
    root_ply: int = 0
    twofold: list[tuple[Node, int]] = field(default_factory=list)
    """Two-fold draws in the tree with the ply of their first occurrence (reverted on reuse)."""
    twofold_first: int = 0
    """Ply of the first occurrence of the two-fold draw ``tree.draw_kind`` found last."""

    limit: Limit = field(default_factory=Limit)
    start: float = 0.0
    total_playouts: int = 0
    cum_depth: int = 0
    max_depth: int = 0
    batches: int = 0
    first_eval_time: float | None = None
    initial_visits: int = 0
    tb_hits: int = 0
    searchmoves: set = field(default_factory=set)
    root_in_tablebase: bool = False
    mask: np.ndarray | None = None
    """Root moves allowed by searchmoves (and the tables), or None for all."""
    remaining_hint: float = math.inf
    """Playouts the stoppers expect to remain (lc0's StoppersHints): scales the collision budget
    and decides which root moves can still catch the best one."""
    root_filter: list[bool] | None = None
    """Root moves that get visits in the minibatch being gathered (None: every move)."""

    attributes: BackendAttributes = field(init=False)
    """The network's attributes (batch sizes, padding, concurrency), read once."""
    rules: FormatRules = field(init=False)
    """The encoding rules of the network's input format (engine.encoding.format_rules)."""
    fill: encoding.HistoryFill = field(init=False)
    """How history before the game start is filled: encode_planes' default, as lc0."""

    def __post_init__(self) -> None:
        self.attributes = self.network.attributes()
        self.rules = encoding.format_rules(self.network.input_format)
        self.fill = encoding.HistoryFill.FEN_ONLY

    def new_search(self, limit: Limit) -> None:
        """Reset the counters of one search (the tree stays)."""
        self.start = limit.started_at if limit.started_at is not None else time.monotonic()
        self.limit = limit
        self.total_playouts = 0
        self.cum_depth = 0
        self.max_depth = 0
        self.batches = 0
        self.first_eval_time = None
        self.initial_visits = self.root.n
        self.searchmoves = set(limit.searchmoves)
        self.root_in_tablebase = False
        self.tb_hits = 0
        self.mask = None
        self.twofold_first = 0
        self.remaining_hint = math.inf
        self.root_filter = None

    def draw_score(self, depth: int) -> float:
        """lc0's GetDrawScore(is_odd_depth): DrawScore is White's at the root and its sign
        alternates with the side to move ``depth`` plies below the root."""
        ds = self.params.draw_score
        root_black = self.root_board.turn == chess.BLACK
        return ds if ((depth % 2 == 1) == root_black) else -ds

    def network_q(self, move: chess.Move | None) -> float | None:
        """The network's q (side to move's view) of the root, or of the position after the
        root ``move``, from the NN cache; None when the cache does not have it."""
        board = self.root_board.copy(stack=False)
        if move is not None:
            board.push(move)
        entry = self.cache.get((board._transposition_key(), board.halfmove_clock))
        return None if entry is None else entry.q

    def elapsed_ms(self) -> float:
        return (time.monotonic() - self.start) * 1000.0

    def stats(self) -> SearchStats:
        """The running search's counters as one record (what reports and stoppers read)."""
        return SearchStats(
            elapsed_ms=self.elapsed_ms(),
            nodes=self.total_playouts + self.initial_visits,
            playouts=self.total_playouts,
            depth_sum=self.cum_depth,
            max_depth=self.max_depth,
            tb_hits=self.tb_hits,
            hashfull=self.cache.hashfull(),
        )
