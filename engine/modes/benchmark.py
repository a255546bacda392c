"""``xlazero benchmark`` and ``xlazero bench``: lc0's ``benchmark``/``bench`` (src/tools/benchmark.cc).

Searches lc0's 34 benchmark positions (``bench``: the first 10) for ``--movetime`` ms each
(benchmark 10000, bench 500; -1: no time limit) and/or ``--nodes`` nodes, each position a fresh
tree, and prints what lc0 prints: ``Position: i/n FEN``, a ``Benchmark time … ms, … nodes, … nps,
move …`` line a thinking update, the ``bestmove`` line, then the total time, nodes and nodes/s.
Every search option is a flag, as lc0's; the threads default to 2 (lc0's benchmark default).

bin/perf/bench, the project's development benchmark (lc0 side by side, breakdown, timelines),
loads and times its searches with :func:`load` and :func:`timed_search` from here.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any

import chess

from engine import options as opts
from engine.modes.flags import INT, STRING, Flag, Mode, ModeError, option_flag

POSITIONS = (  # lc0's benchmark positions (src/tools/benchmark.h: "Same positions as Stockfish uses")
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 10",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 11",
    "4rrk1/pp1n3p/3q2pQ/2p1pb2/2PP4/2P3N1/P2B2PP/4RRK1 b - - 7 19",
    "rq3rk1/ppp2ppp/1bnpb3/3N2B1/3NP3/7P/PPPQ1PP1/2KR3R w - - 7 14 moves d4e6",
    "r1bq1r1k/1pp1n1pp/1p1p4/4p2Q/4Pp2/1BNP4/PPP2PPP/3R1RK1 w - - 2 14 moves g2g4",
    "r3r1k1/2p2ppp/p1p1bn2/8/1q2P3/2NPQN2/PPP3PP/R4RK1 b - - 2 15",
    "r1bbk1nr/pp3p1p/2n5/1N4p1/2Np1B2/8/PPP2PPP/2KR1B1R w kq - 0 13",
    "r1bq1rk1/ppp1nppp/4n3/3p3Q/3P4/1BP1B3/PP1N2PP/R4RK1 w - - 1 16",
    "4r1k1/r1q2ppp/ppp2n2/4P3/5Rb1/1N1BQ3/PPP3PP/R5K1 w - - 1 17",
    "2rqkb1r/ppp2p2/2npb1p1/1N1Nn2p/2P1PP2/8/PP2B1PP/R1BQK2R b KQ - 0 11",
    "r1bq1r1k/b1p1npp1/p2p3p/1p6/3PP3/1B2NN2/PP3PPP/R2Q1RK1 w - - 1 16",
    "3r1rk1/p5pp/bpp1pp2/8/q1PP1P2/b3P3/P2NQRPP/1R2B1K1 b - - 6 22",
    "r1q2rk1/2p1bppp/2Pp4/p6b/Q1PNp3/4B3/PP1R1PPP/2K4R w - - 2 18",
    "4k2r/1pb2ppp/1p2p3/1R1p4/3P4/2r1PN2/P4PPP/1R4K1 b - - 3 22",
    "3q2k1/pb3p1p/4pbp1/2r5/PpN2N2/1P2P2P/5PP1/Q2R2K1 b - - 4 26",
    "6k1/6p1/6Pp/ppp5/3pn2P/1P3K2/1PP2P2/3N4 b - - 0 1",
    "3b4/5kp1/1p1p1p1p/pP1PpP1P/P1P1P3/3KN3/8/8 w - - 0 1",
    "2K5/p7/7P/5pR1/8/5k2/r7/8 w - - 0 1 moves g5g6 f3e3 g6g5 e3f3",
    "8/6pk/1p6/8/PP3p1p/5P2/4KP1q/3Q4 w - - 0 1",
    "7k/3p2pp/4q3/8/4Q3/5Kp1/P6b/8 w - - 0 1",
    "8/2p5/8/2kPKp1p/2p4P/2P5/3P4/8 w - - 0 1",
    "8/1p3pp1/7p/5P1P/2k3P1/8/2K2P2/8 w - - 0 1",
    "8/pp2r1k1/2p1p3/3pP2p/1P1P1P1P/P5KR/8/8 w - - 0 1",
    "8/3p4/p1bk3p/Pp6/1Kp1PpPp/2P2P1P/2P5/5B2 b - - 0 1",
    "5k2/7R/4P2p/5K2/p1r2P1p/8/8/8 b - - 0 1",
    "6k1/6p1/P6p/r1N5/5p2/7P/1b3PP1/4R1K1 w - - 0 1",
    "1r3k2/4q3/2Pp3b/3Bp3/2Q2p2/1p1P2P1/1P2KP2/3N4 w - - 0 1",
    "6k1/4pp1p/3p2p1/P1pPb3/R7/1r2P1PP/3B1P2/6K1 w - - 0 1",
    "8/3p3B/5p2/5P2/p7/PP5b/k7/6K1 w - - 0 1",
    "5rk1/q6p/2p3bR/1pPp1rP1/1P1Pp3/P3B1Q1/1K3P2/R7 w - - 93 90",
    "4rrk1/1p1nq3/p7/2p1P1pp/3P2bp/3Q1Bn1/PPPB4/1K2R1NR w - - 40 21",
    "r3k2r/3nnpbp/q2pp1p1/p7/Pp1PPPP1/4BNN1/1P5P/R2Q1RK1 w kq - 0 16",
    "3Qb1k1/1r2ppb1/pN1n2q1/Pp1Pp1Pr/4P2p/4BP2/4B1R1/1R5K b - - 11 40",
)

ENGINE_ONLY = frozenset({
    "syzygy-paths", "smart-pruning-factor", "smart-pruning-minimum-batches", "log-live-stats",
    "show-wdl", "ponder", "chess960", "time-manager", "move-overhead", "show-movesleft",
    "logfile", "show-eps", "ramlimit-mb", "config", "nodes-as-playouts",
    "minimum-kldgain-per-node", "kldgain-average-interval",
})  # fmt: skip
"""Engine options that are the UCI engine's, not a search's: lc0's benchmark has none of them
(its searches stop at --nodes or --movetime, without smart pruning)."""

UNSUPPORTED: dict[str, str] = {}
"""lc0's benchmark flags refused here (flag -> why): none."""


def mode(shorter: bool) -> Mode:
    """lc0's ``bench`` (``shorter``) or ``benchmark``."""
    flags = []
    for o in opts.OPTIONS:
        if not o.flag or o.flag in ENGINE_ONLY:
            continue
        if o.name == "Threads":
            flags.append(option_flag("Threads", 2, "Number of (CPU) worker threads to use.", min=1))
        else:
            flags.append(option_flag(o.name))
    flags += [
        Flag("nodes", INT, -1, "Number of nodes to run as a benchmark.", min=-1, max=999999999),
        Flag("fen", STRING, "", "Benchmark position FEN."),
        Flag("movetime", INT, 500 if shorter else 10000,
             "Benchmark time allocation, in milliseconds.", min=-1, max=999999999),
        Flag("num-positions", INT, 10 if shorter else len(POSITIONS),
             "The number of benchmark positions to test.", min=1, max=len(POSITIONS)),
    ]  # fmt: skip
    name, what = ("bench", "Very quick benchmark") if shorter else ("benchmark", "Quick benchmark")
    return Mode(name, what, tuple(flags), run, UNSUPPORTED)


def option_values(mode_values: dict[str, Any]) -> dict[str, Any]:
    """The engine options a mode's flags set (by UCI name), over the options' defaults, smart
    pruning off (lc0's benchmark searches run to their limits)."""
    values = opts.defaults() | {"SmartPruningFactor": 0.0}
    for name, value in mode_values.items():
        option = opts.BY_FLAG.get(name)
        if option is not None:
            values[option.name] = value
    return values


def load(values: dict[str, Any]) -> tuple[Any, Any]:
    """The network the options name and the search's parameters; ModeError says why a
    network does not load."""
    from engine.backend import load_network
    from engine.loading import resolve_weights
    from engine.search import from_options
    from engine.uci import register_backends

    register_backends()
    path = resolve_weights(values["WeightsFile"])
    try:
        network = load_network(str(path), values["BackendOptions"], backend=values["Backend"])
    except Exception as exc:  # the backend's own errors name the file and the problem
        raise ModeError(f"cannot load {path}: {exc}") from exc
    return network, from_options(values)


WARMUP_NODES = 600


def warm_up(network, params, nodes: int = WARMUP_NODES) -> float:
    """One unmeasured search of the start position, which compiles what the search and the
    network run (the caches' work on a first start); its seconds."""
    from engine.search import Limit

    t = time.monotonic()
    timed_search(network, params, chess.Board(), Limit(nodes=nodes))
    return time.monotonic() - t


def board_of(position: str) -> chess.Board:
    """lc0's benchmark position: a FEN, optionally ``moves …`` after it."""
    fen, _, moves = position.partition(" moves ")
    board = chess.Board(fen.strip())
    for move in moves.split():
        board.push_uci(move)
    return board


def timed_search(network, params, board: chess.Board, limit, on_info=None, timeline=None,
                 search=None):  # fmt: skip
    """One search of ``board`` to ``limit`` on a fresh tree: (result, wall seconds, CPU seconds
    of the process: the search's threads and the network's), timed, as lc0's benchmark, until
    the batches left on the network are backed up, with their nodes. ``timeline``
    (engine/search/timeline.py's Timeline), if given, records the search's batches. On a new
    Search, or on ``search`` after what ``ucinewgame`` does to it (its arrays kept)."""
    from engine.search import Search

    own = search is None
    if search is None:
        search = Search(network, params)
    else:
        search.clear()
    try:
        search.set_position(board)
        search.timeline = timeline
        t, process = time.monotonic(), time.process_time()
        result = search.run(limit, on_info=on_info, settle=False)
        search.settle()
        wall, cpu = time.monotonic() - t, time.process_time() - process
        nodes = int(search.state.tree.nodes["n"][0])
        late = nodes - result.nodes
        result = dataclasses.replace(result, nodes=nodes, playouts=result.playouts + late)
        return result, wall, cpu
    finally:
        if own:
            search.close()


def run(mode_values: dict[str, Any]) -> int:
    from engine.search import Limit

    nodes, movetime = mode_values["nodes"], mode_values["movetime"]
    if nodes < 0 and movetime < 0:
        raise ModeError("--nodes and --movetime are both -1: the searches would never end")
    network, params = load(option_values(mode_values))
    secs = warm_up(network, params, min(nodes, WARMUP_NODES) if nodes > 0 else WARMUP_NODES)
    print(f"warmed up in {secs:.1f}s (a search of the start position, not counted)",
          file=sys.stderr, flush=True)  # fmt: skip
    fen = mode_values["fen"]
    positions = [fen] if fen else list(POSITIONS[: mode_values["num-positions"]])
    limit = Limit(nodes=nodes if nodes > -1 else None,
                  budget_ms=movetime if movetime > -1 else None,
                  ceiling_ms=movetime if movetime > -1 else None)  # fmt: skip
    total_ms, total_playouts = 0, 0
    for i, position in enumerate(positions, 1):
        print(f"\nPosition: {i}/{len(positions)} {position}", flush=True)
        result, secs, _ = timed_search(network, params, board_of(position), limit, _on_info)
        if result.bestmove is not None:
            print(f"bestmove {result.bestmove.uci()}", flush=True)
        total_ms += int(secs * 1000)
        total_playouts += result.playouts
    print("\n===========================")
    print(f"Total time (ms) : {total_ms}")
    print(f"Nodes searched  : {total_playouts}")
    print(f"Nodes/second    : {round(1000.0 * total_playouts / (total_ms + 1))}", flush=True)
    return 0


def _on_info(infos) -> None:
    """lc0's Benchmark::OnInfo: one line a thinking update."""
    info = infos[0]
    line = f"Benchmark time {info.time_ms} ms, {info.nodes} nodes, {info.nps or 0} nps"
    if info.pv:
        line += f", move {info.pv[0].uci()}"
    print(line, flush=True)
