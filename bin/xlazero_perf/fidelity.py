"""Search fidelity against lc0: run our search on the positions lc0 searched and compare the root
visit statistics (``../shared/lc0/search/*.jsonl.gz``, described in ``../shared/README.md``).

Two numbers say how alike two searches are on one position:

- the best move (lc0's ``bestmove`` against ours);
- the visit-share distance ``½·Σ|Nᵢ/ΣN − N'ᵢ/ΣN'|`` over the root's moves (0: the same shares,
  1: no move in common).

lc0 against itself (other thread count and minibatch size) agrees on 98.3 % of best moves at a
mean distance of 0.027; that spread is the yardstick. Used by ``bin/check/fidelity`` and the tests.
"""

from __future__ import annotations

import gzip
import json
import statistics
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import chess

from engine.backend import Network
from engine.search import Limit, PlayoutClock, Search, SearchParams

Visits = Mapping[str, int]
"""Root visits by move in UCI notation (absolute coordinates, castling as e1g1)."""


@dataclass(frozen=True)
class Comparison:
    """One position searched by both engines."""

    index: int
    bestmove_ref: str
    bestmove: str
    total_ref: int
    total: int
    distance: float

    @property
    def same_best(self) -> bool:
        return self.bestmove_ref == self.bestmove


@dataclass(frozen=True)
class Summary:
    """Comparisons over a set of positions."""

    positions: int
    same_best_share: float
    mean_distance: float
    median_total_ratio: float

    def line(self) -> str:
        return (
            f"{self.positions} positions: same best move {100 * self.same_best_share:.1f} %, "
            f"mean visit-share distance {self.mean_distance:.4f}, "
            f"median root-visit ratio (ours / reference) {self.median_total_ratio:.3f}"
        )


RECORDED_PACE = {
    "lc0-maia-1900-n400.jsonl.gz": 1200.0,
    "lc0-maia-1900-n400-random.jsonl.gz": 1200.0,
    "lc0-maia-1900-n400-games.jsonl.gz": 1719.0,
}
"""Nodes/s lc0 searched at when it recorded each file, for :func:`compare`'s ``pace`` (a record
with its own ``nps`` is replayed at that instead). The two files of isolated positions: lc0
(blas, defaults) rerun on them on a 2-core AVX-512 EPYC (2026-11-28) searched at a median
1,229 and 1,260 nodes/s and reproduced them (root-visit totals 1.007 and 1.004 times the
recorded, visit-share distance 0.009 and 0.006). The games file is a recording of that day on
that host whose records carry lc0's own nps (median 1,719; 1,719 here for its three searches
that reused 400 visits and searched none). Its first recording, made on a slower or busier
machine, lc0 itself no longer reproduced (totals 1.156 times, distance 0.065: a faster lc0
reached the node limit before smart pruning could stop it)."""


class Unpadded:
    """``network`` as a backend whose batch costs its rows (``padded_size`` None): the search
    then prefetches up to MaxPrefetch into every minibatch, as lc0 does on any backend (its
    default 32), where against a padded backend it fills only the padding. For an exact
    reference against lc0 (Threads 1, SmartPruningFactor 0, lc0's minibatch)."""

    def __init__(self, network: Network) -> None:
        self._network = network

    def attributes(self):  # noqa: ANN201 (BackendAttributes)
        return dataclasses.replace(self._network.attributes(), padded_size=None)

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self._network, name)


def pace_of(path: Path) -> float | None:
    """The pace lc0 recorded ``path`` at (None: not known; the host's clock then). A record
    that has lc0's own ``nps`` (bin/check/lc0-root-stats since 2026-11-28) is replayed at it."""
    return RECORDED_PACE.get(Path(path).name)


def visit_distance(a: Visits, b: Visits) -> float:
    """½·Σ|aᵢ/Σa − bᵢ/Σb| over the union of moves; expects both totals positive."""
    ta, tb = sum(a.values()), sum(b.values())
    if ta <= 0 or tb <= 0:
        raise ValueError(f"expected visits on both sides, got totals {ta} and {tb}")
    moves = set(a) | set(b)
    return 0.5 * sum(abs(a.get(m, 0) / ta - b.get(m, 0) / tb) for m in moves)


def read_records(path: Path) -> list[dict]:
    """The records of an lc0 search file (gzip JSON lines) that have root visits."""
    with gzip.open(path, "rt") as f:
        records = [json.loads(line) for line in f if line.strip()]
    return [r for r in records if sum(r["visits"].values()) > 0]


def board_of(record: dict) -> chess.Board:
    board = chess.Board(record["fen"])
    for uci in record["moves"]:
        board.push_uci(uci)
    return board


def reference_visits(record: dict, board: chess.Board) -> dict[str, int]:
    """A record's root visits keyed as ours: lc0 writes castling as king-takes-rook (e1h1)."""
    return {board.uci(board.parse_uci(m)): n for m, n in record["visits"].items()}


def root_visits(search: Search) -> dict[str, int]:
    """Completed visits of each root move of the last search."""
    root = search.root
    return {m.uci(): int(n) for m, n in zip(root.moves, root.cn)}


def compare(
    network: Network,
    params: SearchParams,
    records: Iterable[dict],
    on_result: Callable[[Comparison], None] | None = None,
    workers: int = 1,
    pace: float | None = None,
) -> list[Comparison]:
    """Search every record's position to its node count and compare with its root visits.

    A record without a ``game`` field gets a fresh search (new tree and NN cache, as after
    ``ucinewgame``). Records of one ``game`` share a search, in order, so that each continues
    the previous one's tree as in a real game (``go nodes`` then counts the reused visits).
    ``workers`` searches run at once, each with its own tree and cache: the network runs
    outside the GIL, so on a CPU whose convolutions use one core each, two searches keep two
    cores busy. ``pace``: the nodes/s lc0 searched at when it recorded them (a record's own
    ``nps`` first); each search then runs on a :class:`PlayoutClock` at that pace, so smart pruning stops where lc0's did
    whatever this host's speed (None: the host's clock). Results come back in the records'
    order.
    """
    groups: list[list[tuple[int, dict]]] = []
    by_game: dict = {}
    for i, rec in enumerate(records):
        game = rec.get("game")
        if game is None:
            groups.append([(i, rec)])
        elif game in by_game:
            by_game[game].append((i, rec))
        else:
            by_game[game] = [(i, rec)]
            groups.append(by_game[game])
    lock = threading.Lock()
    results: dict[int, Comparison] = {}

    def run_group(group: list[tuple[int, dict]]) -> None:
        search = Search(network, params)
        try:
            for i, rec in group:
                rec_pace = rec.get("nps") or pace
                if rec_pace is not None:
                    search.state.clock = PlayoutClock(float(rec_pace))
                c = _compare_one(search, rec)
                with lock:
                    results[i] = c
                    if on_result is not None:
                        on_result(c)
        finally:
            search.close()

    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="fidelity") as pool:
        for future in [pool.submit(run_group, g) for g in groups]:
            future.result()  # re-raises a search's failure
    return [results[i] for i in sorted(results)]


def _compare_one(search: Search, rec: dict) -> Comparison:
    board = board_of(rec)
    search.set_position(board)
    # The root as the run ended, as lc0's verbose statistics show it beside its bestmove; the
    # batches left on the network are then backed up (the next search of a game reuses them).
    move = search.run(Limit(nodes=int(rec["nodes"])), settle=False).bestmove
    best = move.uci() if move is not None else "0000"
    visits = root_visits(search)
    search.settle()
    ref = reference_visits(rec, board)
    return Comparison(
        rec["index"],
        rec["bestmove"],
        best,
        sum(ref.values()),
        sum(visits.values()),
        visit_distance(ref, visits),
    )


def summarize(comparisons: list[Comparison]) -> Summary:
    if not comparisons:
        raise ValueError("expected at least one comparison, got none")
    return Summary(
        positions=len(comparisons),
        same_best_share=sum(c.same_best for c in comparisons) / len(comparisons),
        mean_distance=statistics.fmean(c.distance for c in comparisons),
        median_total_ratio=statistics.median(c.total / c.total_ref for c in comparisons),
    )
