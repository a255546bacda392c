"""What limits the network, measured on played games (``bin/dev/train-net analyse``).

For each move a named player made in a PGN's games (within the first ``max_moves`` moves):

1. **cp loss**: Stockfish (``go nodes N``, Threads 1) scores the position before the move twice in
   the same kind of search: its best line, and the played move alone (``root_moves=[move]``); the
   loss is the difference from the mover's view, mates capped at ±1000 cp, negative differences
   (search noise) counted as 0. The buckets ≥ 300 cp and 150–300 cp are nets/README.md's figure.
   When the played move is Stockfish's best move the loss is 0 and the second search is skipped.
2. **policy agreement**: the network's top-prior legal move equals Stockfish's best move (top-1
   agreement), and the played move equals Stockfish's best (the search's agreement).
3. **value calibration**: the network's expected score W + D/2 (side to move) against Stockfish's
   expected score from its WDL (``UCI_ShowWDL``, as the training labels) and against the game's
   result, in bins of the network's prediction.
4. **a second network on the same positions** (``compare_weights``, e.g. Maia-1100): both
   networks' top-prior moves are scored by Stockfish like the played move (``root_moves``; no
   extra search when the move was already scored), so policy agreement, the cp loss of following
   the top prior, and value calibration can be set side by side, by game phase (``PHASES``). This
   separates what the network knows from what the search and the time control made of it.

Stockfish runs in ``workers`` processes (one engine each); the network runs in this process with
``backend_xla``, fed the engine's own input planes (``engine.encoding``, history from the game).
A time limit stops the analysis cleanly: the report covers the positions finished by then.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import numpy as np

from .stockfish import find_stockfish

CP_CAP = 1000
"""Scores are capped at ±this many centipawns (mates count as the cap)."""
BIG_LOSS = 300
MEDIUM_LOSS = 150
BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
"""Calibration bins of the network's expected score (the last one closed on the right)."""
PHASES = (("opening 1-15", 1, 15), ("middlegame 16-40", 16, 40), ("late 41+", 41, 10_000))
"""Game phases by the full-move number of the position before the move (inclusive ranges): the
split that nets/README.md's earlier analysis pointed at (wins not converted after move 40)."""


@dataclass(frozen=True)
class Task:
    """One move to analyse: the game's start position and moves up to (not including) it."""

    game: int
    start_fen: str
    moves: tuple[str, ...]
    played: str
    result: float | None  # the game's result from the mover's view (None: unfinished "*")
    ply: int  # 0-based ply in the PGN's game (from its start position)
    also: tuple[str, ...] = ()  # more moves for Stockfish to score (the networks' top priors)

    def board(self) -> chess.Board:
        board = chess.Board(self.start_fen)
        for uci in self.moves:
            board.push_uci(uci)
        return board


@dataclass
class MoveResult:
    game: int
    ply: int
    fullmove: int
    played: str
    sf_best: str
    best_cp: int
    played_cp: int
    loss: int
    sf_expected: float
    result: float | None
    net_top: str = ""
    net_expected: float = float("nan")
    scored: dict[str, int] = field(default_factory=dict)  # cp after each ``Task.also`` move
    net_top_loss: int = 0  # cp lost by the network's top-prior move
    cmp_top: str = ""  # the same for the comparison network (compare_weights)
    cmp_top_loss: int = 0
    cmp_expected: float | None = None


def read_tasks(pgn_text: str, player: str, max_moves: int) -> tuple[list[Task], int]:
    """The moves of ``player`` (PGN White/Black tag, exact) in the first ``max_moves`` moves of
    each game; also the number of games the player played."""
    tasks: list[Task] = []
    games = 0
    stream = io.StringIO(pgn_text)
    index = 0
    while (game := chess.pgn.read_game(stream)) is not None:
        index += 1
        colours = [c for c, tag in ((chess.WHITE, "White"), (chess.BLACK, "Black"))
                   if game.headers.get(tag) == player]
        if not colours:
            continue
        games += 1
        result = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}.get(game.headers.get("Result", "*"))
        board = game.board()
        start = board.fen()
        moves: list[str] = []
        for ply, move in enumerate(game.mainline_moves()):
            if board.fullmove_number > max_moves:
                break
            if board.turn in colours:
                mover_result = None if result is None else (result if board.turn else 1.0 - result)
                tasks.append(Task(index - 1, start, tuple(moves), move.uci(), mover_result, ply))
            moves.append(move.uci())
            board.push(move)
    return tasks, games


def capped_cp(score: chess.engine.PovScore, pov: chess.Color) -> int:
    cp = score.pov(pov).score(mate_score=100 * CP_CAP)
    return max(-CP_CAP, min(CP_CAP, cp))


class Analyser:
    """One Stockfish (Threads 1, UCI_ShowWDL) scoring a position's best line and a played move."""

    def __init__(self, stockfish: str | None, nodes: int, hash_mb: int = 16):
        self.nodes = nodes
        self.engine = chess.engine.SimpleEngine.popen_uci(find_stockfish(stockfish))
        self.engine.configure({"Threads": 1, "Hash": hash_mb, "UCI_ShowWDL": True,
                               "UCI_AnalyseMode": False})

    def analyse(self, task: Task) -> MoveResult:
        board = task.board()
        mover = board.turn
        # ucinewgame (an empty hash) before each move: its numbers do not depend on which moves
        # this process searched before, so they are the same for any --workers.
        game = object()
        limit = chess.engine.Limit(nodes=self.nodes)
        best = self.engine.analyse(board, limit, game=game)
        best_move = best["pv"][0].uci()
        best_cp = capped_cp(best["score"], mover)
        wdl = best["wdl"].pov(mover)
        cps = {best_move: best_cp}
        for move in (task.played, *task.also):
            if move not in cps:  # a move already scored is not searched again
                info = self.engine.analyse(board, limit, game=game,
                                           root_moves=[chess.Move.from_uci(move)])
                cps[move] = capped_cp(info["score"], mover)
        played_cp = cps[task.played]
        return MoveResult(task.game, task.ply, board.fullmove_number, task.played, best_move, best_cp,
                          played_cp, max(0, best_cp - played_cp), wdl.expectation(), task.result,
                          scored={m: cps[m] for m in task.also})

    def close(self) -> None:
        try:
            self.engine.quit()
        except (chess.engine.EngineError, TimeoutError):
            self.engine.close()


_worker: Analyser | None = None


def _init_worker(stockfish: str | None, nodes: int) -> None:
    global _worker
    _worker = Analyser(stockfish, nodes)


def _analyse_in_worker(task: Task) -> MoveResult:
    assert _worker is not None
    return _worker.analyse(task)


def stockfish_results(tasks: list[Task], nodes: int, workers: int = 1, stockfish: str | None = None,
                      deadline: float | None = None, log=print) -> list[MoveResult]:
    """Stockfish's verdict on each task, in task order, as far as ``deadline`` (time.monotonic)
    allows: the tasks finished by then (a prefix when ``workers`` is 1)."""
    out: list[MoveResult] = []
    every = max(1, len(tasks) // 10)

    def progress() -> None:
        if len(out) % every == 0:
            log(f"  {len(out)}/{len(tasks)} moves analysed")

    if workers <= 1:
        sf = Analyser(stockfish, nodes)
        try:
            for task in tasks:
                if deadline is not None and time.monotonic() >= deadline:
                    break
                out.append(sf.analyse(task))
                progress()
        finally:
            sf.close()
        return out
    stockfish = find_stockfish(stockfish)  # here: a pool whose initializer fails restarts it forever
    # spawn: this process holds JAX's threads, which a fork would copy in an unknown state.
    pool = multiprocessing.get_context("spawn").Pool(workers, _init_worker, (stockfish, nodes))
    try:
        pending = pool.imap(_analyse_in_worker, tasks)  # in order; workers run ahead
        for _ in tasks:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            try:
                out.append(pending.next(timeout=left))
            except multiprocessing.TimeoutError:
                break
            progress()
    finally:
        pool.terminate()  # Stockfish children end with their pipes closed
        pool.join()
    return out


def network_outputs(weights: str, tasks: list[Task]) -> tuple[list[str], np.ndarray]:
    """The network's top-prior legal move (UCI) and expected score W + D/2 (side to move) of the
    position before each task's move."""
    import backend_xla
    from engine.encoding import encode_batch, legal_moves_and_indices

    net = backend_xla.load_network(weights, "batch_buckets=64,background_compile=0")
    tops: list[str] = []
    expected: list[np.ndarray] = []
    for start in range(0, len(tasks), 64):
        boards = [t.board() for t in tasks[start:start + 64]]
        out = net.evaluate(encode_batch(boards, net.input_format))
        for k, board in enumerate(boards):
            moves, idx = legal_moves_and_indices(board, net.input_format)
            tops.append(moves[int(np.argmax(out.policy[k, idx]))].uci())
        expected.append((1.0 + np.asarray(out.q, np.float64)) / 2.0)  # W - L = q, so W + D/2 = (1 + q) / 2
    return tops, (np.concatenate(expected) if expected else np.zeros(0))


@dataclass
class Report:
    player: str
    games: int
    moves_total: int
    moves: int
    nodes: int
    weights: str
    seconds: float
    stopped_early: bool
    max_moves: int = 0
    loss_300: float = float("nan")
    loss_150_300: float = float("nan")
    mean_loss: float = float("nan")
    big_losses_net_top: float = float("nan")
    big_losses_still_winning: int = 0
    policy_top1: float = float("nan")
    played_top1: float = float("nan")
    calibration: list[dict] = field(default_factory=list)
    mae_stockfish: float = float("nan")
    mae_result: float = float("nan")
    results_counted: int = 0
    compare_weights: str = ""
    phases: list[dict] = field(default_factory=list)
    per_move: list[dict] = field(default_factory=list)


def _pct(flags) -> float:
    flags = list(flags)
    return 100.0 * sum(flags) / len(flags) if flags else float("nan")


def _network_columns(results: list[MoveResult], top: str, loss: str, expected: str) -> dict:
    """One network's policy and value measures over ``results`` (attribute names of MoveResult)."""
    top_loss = np.array([getattr(r, loss) for r in results])
    pred = np.array([getattr(r, expected) for r in results])
    sf = np.array([r.sf_expected for r in results])
    res = np.array([np.nan if r.result is None else r.result for r in results])
    has = ~np.isnan(res)
    return {
        "top1": _pct(getattr(r, top) == r.sf_best for r in results),
        "top_loss_300": _pct(top_loss >= BIG_LOSS),
        "top_loss_150_300": _pct((top_loss >= MEDIUM_LOSS) & (top_loss < BIG_LOSS)),
        "top_mean_loss": float(top_loss.mean()),
        "expected": float(pred.mean()),
        "mae_stockfish": float(np.abs(pred - sf).mean()),
        "mae_result": float(np.abs(pred - res)[has].mean()) if has.any() else float("nan"),
    }


def by_phase(results: list[MoveResult], compare: bool) -> list[dict]:
    """Per game phase (``PHASES``): the played moves' losses, Stockfish's and the game's mean
    expected score, and each network's columns (``net``; ``cmp`` when ``compare``); last, all moves."""
    rows = []
    for name, lo, hi in (*PHASES, ("all", 1, 10**9)):
        sel = [r for r in results if lo <= r.fullmove <= hi]
        row: dict = {"phase": name, "moves": len(sel)}
        if sel:
            played = np.array([r.loss for r in sel])
            res = [r.result for r in sel if r.result is not None]
            row |= {"played_loss_300": _pct(played >= BIG_LOSS), "played_mean_loss": float(played.mean()),
                    "stockfish": float(np.mean([r.sf_expected for r in sel])),
                    "result": float(np.mean(res)) if res else float("nan"),
                    "net": _network_columns(sel, "net_top", "net_top_loss", "net_expected")}
            if compare:
                row["cmp"] = _network_columns(sel, "cmp_top", "cmp_top_loss", "cmp_expected")
        rows.append(row)
    return rows


def summarise(results: list[MoveResult], report: Report) -> Report:
    report.moves = len(results)
    report.per_move = [asdict(r) for r in results]
    if not results:
        return report
    report.phases = by_phase(results, bool(report.compare_weights))
    loss = np.array([r.loss for r in results])
    report.loss_300 = _pct(loss >= BIG_LOSS)
    report.loss_150_300 = _pct((loss >= MEDIUM_LOSS) & (loss < BIG_LOSS))
    report.mean_loss = float(loss.mean())
    report.big_losses_still_winning = sum(r.loss >= BIG_LOSS and r.played_cp >= BIG_LOSS for r in results)
    report.big_losses_net_top = _pct(r.played == r.net_top for r in results if r.loss >= BIG_LOSS)
    report.policy_top1 = _pct(r.net_top == r.sf_best for r in results)
    report.played_top1 = _pct(r.played == r.sf_best for r in results)
    pred = np.array([r.net_expected for r in results])
    sf = np.array([r.sf_expected for r in results])
    res = np.array([np.nan if r.result is None else r.result for r in results])
    has = ~np.isnan(res)
    report.mae_stockfish = float(np.abs(pred - sf).mean())
    report.results_counted = int(has.sum())
    report.mae_result = float(np.abs(pred - res)[has].mean()) if has.any() else float("nan")
    which = np.clip(np.digitize(pred, BINS[1:-1]), 0, len(BINS) - 2)
    for b in range(len(BINS) - 1):
        sel = which == b
        n = int(sel.sum())
        report.calibration.append({
            "bin": [BINS[b], BINS[b + 1]], "count": n,
            "net": float(pred[sel].mean()) if n else float("nan"),
            "stockfish": float(sf[sel].mean()) if n else float("nan"),
            "result": float(res[sel & has].mean()) if (sel & has).any() else float("nan"),
        })
    return report


def format_report(r: Report) -> str:
    lines = [f"{r.player}: {r.moves} of {r.moves_total} moves analysed ({r.games} games, first "
             f"{r.max_moves} moves), Stockfish {r.nodes} nodes, network {Path(r.weights).name}, {r.seconds:.0f} s"
             + (" (stopped at the time limit)" if r.stopped_early else "")]
    if not r.moves:
        return "\n".join(lines)
    lines += [
        f"cp loss: >= {BIG_LOSS} cp {r.loss_300:.1f} %, {MEDIUM_LOSS}-{BIG_LOSS} cp {r.loss_150_300:.1f} %, "
        f"mean {r.mean_loss:.0f} cp (capped at {CP_CAP})" + (
            f"; the network's top prior played in {r.big_losses_net_top:.0f} % of the >= {BIG_LOSS} cp "
            f"moves, {r.big_losses_still_winning} of them still >= +{BIG_LOSS} cp after the move (a slower "
            "win, e.g. a missed mate)" if r.loss_300 > 0 else ""),
        f"agreement with Stockfish's best move: network policy top-1 {r.policy_top1:.1f} %, "
        f"played move (search) {r.played_top1:.1f} %",
        f"value calibration (expected score W + D/2, side to move): mean |net - Stockfish| "
        f"{r.mae_stockfish:.3f}, mean |net - game result| {r.mae_result:.3f} ({r.results_counted} moves)",
        "  net bin     count  net    stockfish  result",
    ]
    for b in r.calibration:
        lo, hi = b["bin"]
        cells = [f"{b[k]:.3f}" if b[k] == b[k] else "  -  " for k in ("net", "stockfish", "result")]
        lines.append(f"  {lo:.1f}-{hi:.1f}  {b['count']:6d}  {cells[0]}  {cells[1]}      {cells[2]}")
    return "\n".join(lines + format_phases(r))


def format_phases(r: Report) -> list[str]:
    """The by-phase table: one row per phase and network (and the played moves' losses)."""
    names = [("net", Path(r.weights).name)] + ([("cmp", Path(r.compare_weights).name)]
                                                if r.compare_weights else [])
    lines = [f"by game phase (full-move number), the top-prior move's cp loss and value (expected "
             f"score, side to move); played moves' >= {BIG_LOSS} cp share and mean loss for reference:",
             f"  {'phase':<17} {'moves':>5}  {'network':<24} {'top=SF':>6} {'>=300':>5} {'150-300':>7} "
             f"{'mean':>5}  {'value':>5} {'SF':>5} {'result':>6} {'|-SF|':>6} {'|-res|':>6}"]
    for p in r.phases:
        if not p["moves"]:
            lines.append(f"  {p['phase']:<17} {0:>5}")
            continue
        for key, name in names:
            c = p[key]
            lines.append(
                f"  {p['phase']:<17} {p['moves']:>5}  {name[:24]:<24} {c['top1']:>5.1f}% {c['top_loss_300']:>4.1f}% "
                f"{c['top_loss_150_300']:>6.1f}% {c['top_mean_loss']:>5.0f}  {c['expected']:>5.3f} "
                f"{p['stockfish']:>5.3f} {p['result']:>6.3f} {c['mae_stockfish']:>6.3f} {c['mae_result']:>6.3f}")
        lines.append(f"  {p['phase']:<17} {p['moves']:>5}  {'(played moves)':<24} {'':>6} "
                     f"{p['played_loss_300']:>4.1f}% {'':>7} {p['played_mean_loss']:>5.0f}")
    return lines


def analyse_pgn(pgn_text: str, player: str, weights: str, max_moves: int = 40, nodes: int = 50_000,
                workers: int = 1, max_minutes: float | None = None, stockfish: str | None = None,
                log=print, compare_weights: str | None = None) -> Report:
    """The report for ``player``'s moves; with ``compare_weights`` a second network's policy and
    value on the same positions, its top-prior moves scored by the same Stockfish searches."""
    t0 = time.monotonic()
    deadline = None if max_minutes is None else t0 + 60.0 * max_minutes
    tasks, games = read_tasks(pgn_text, player, max_moves)
    report = Report(player, games, len(tasks), 0, nodes, weights, 0.0, False, max_moves,
                    compare_weights=compare_weights or "")
    if not tasks:
        log(f"no moves of {player!r} in the PGN (its White/Black tags)")
        return report
    log(f"{len(tasks)} moves of {player} in {games} games; network(s) first, then Stockfish")
    tops, expected = network_outputs(weights, tasks)
    cmp_tops, cmp_expected = (network_outputs(compare_weights, tasks) if compare_weights
                              else ([""] * len(tasks), np.zeros(len(tasks))))
    tasks = [replace(t, also=tuple(m for m in (top, ct) if m)) for t, top, ct in zip(tasks, tops, cmp_tops)]
    results = stockfish_results(tasks, nodes, workers, stockfish, deadline, log)
    for k, r in enumerate(results):
        r.net_top, r.net_expected = tops[k], float(expected[k])
        r.net_top_loss = max(0, r.best_cp - r.scored[r.net_top])
        if compare_weights:
            r.cmp_top, r.cmp_expected = cmp_tops[k], float(cmp_expected[k])
            r.cmp_top_loss = max(0, r.best_cp - r.scored[r.cmp_top])
    report.stopped_early = len(results) < len(tasks)
    report.seconds = time.monotonic() - t0
    return summarise(results, report)


def write_json(report: Report, path: str | Path) -> None:
    Path(path).write_text(json.dumps(asdict(report), indent=1, allow_nan=True) + "\n")
