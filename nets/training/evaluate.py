"""Small strength matches with python-chess: xlazero with a network against an opponent engine.

Games start from short book openings (:data:`OPENINGS`), each played twice with colours swapped,
so opening advantage cancels. Limits are either fixed nodes per move (``go nodes N``, the fair
way to compare two networks in the same search) or a clock (base + increment, tracked here from
wall time; a player whose clock runs out loses). Games longer than ``max_plies`` are adjudicated
draws. The score comes with a 95 % interval from the per-game score variance.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import chess
import chess.engine

ROOT = Path(__file__).resolve().parent.parent.parent
XLAZERO = str(ROOT / "bin" / "xlazero")
Z95 = 1.96
OPENINGS = (
    "e2e4 e7e5 g1f3 b8c6", "e2e4 c7c5 g1f3 d7d6", "d2d4 d7d5 c2c4 e7e6", "d2d4 g8f6 c2c4 g7g6",
    "e2e4 e7e6 d2d4 d7d5", "e2e4 c7c6 d2d4 d7d5", "c2c4 e7e5 b1c3 g8f6", "g1f3 d7d5 g2g3 g8f6",
    "d2d4 d7d5 g1f3 g8f6 c1f4", "e2e4 e7e5 f1c4 g8f6", "e2e4 d7d5 e4d5 d8d5", "d2d4 g8f6 c2c4 e7e6",
    "e2e4 c7c5 b1c3 b8c6", "d2d4 f7f5 g2g3 g8f6", "e2e4 g7g6 d2d4 f8g7", "c2c4 c7c5 g1f3 g8f6",
)


@dataclass(frozen=True)
class Player:
    """An engine command line, its UCI options, and its limit: ``nodes`` per move or a clock."""

    name: str
    command: list[str]
    options: dict = field(default_factory=dict)
    nodes: int | None = None
    base_s: float | None = None
    inc_s: float = 0.0


def xlazero(weights: str, nodes: int | None = None, base_s: float | None = None, inc_s: float = 0.0,
            name: str | None = None) -> Player:
    return Player(name or Path(weights).name, [XLAZERO, f"--weights={weights}"], {}, nodes, base_s, inc_s)


def stockfish(elo: int, base_s: float, inc_s: float, path: str = "/usr/games/stockfish") -> Player:
    return Player(f"stockfish-{elo}", [path], {"UCI_LimitStrength": True, "UCI_Elo": elo, "Threads": 1,
                                               "Hash": 16}, None, base_s, inc_s)


@dataclass
class MatchResult:
    wins: int = 0
    draws: int = 0
    losses: int = 0

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / max(self.games, 1)

    def interval(self) -> float:
        """Half-width of the 95 % interval of the score (normal approximation)."""
        n = max(self.games, 1)
        mean = self.score
        var = (self.wins * (1 - mean) ** 2 + self.draws * (0.5 - mean) ** 2 + self.losses * mean ** 2) / n
        return Z95 * math.sqrt(var / n)

    def bounds(self) -> tuple[float, float]:
        """95 % interval of the score: normal approximation, or Wilson's interval when every game
        had the same result (the sample variance is then 0 and says nothing)."""
        s, n = self.score, max(self.games, 1)
        e = self.interval()
        if e > 0:
            return max(0.0, s - e), min(1.0, s + e)
        z2 = Z95 * Z95
        centre = (s + z2 / (2 * n)) / (1 + z2 / n)
        half = Z95 / (1 + z2 / n) * math.sqrt(s * (1 - s) / n + z2 / (4 * n * n))
        return max(0.0, centre - half), min(1.0, centre + half)

    def summary(self) -> str:
        s = self.score
        lo, hi = self.bounds()
        elo = lambda x: -400 * math.log10(1 / min(max(x, 1e-3), 1 - 1e-3) - 1)  # noqa: E731
        return (f"+{self.wins} ={self.draws} -{self.losses} of {self.games}: score {100 * s:.1f} % "
                f"[{100 * lo:.1f}, {100 * hi:.1f}] (95 %), Elo difference {elo(s):+.0f} "
                f"[{elo(lo):+.0f}, {elo(hi):+.0f}]")


def _open(p: Player) -> chess.engine.SimpleEngine:
    engine = chess.engine.SimpleEngine.popen_uci(p.command, stderr=None)
    if p.options:
        engine.configure(p.options)
    return engine


def play_game(engines: dict, players: dict, opening: str, max_plies: int) -> tuple[str, str]:
    """One game; ``engines``/``players`` keyed by chess.WHITE/BLACK. Returns the result ('1-0',
    '0-1' or '1/2-1/2') and how it ended (checkmate, time forfeit, adjudication, ...)."""
    board = chess.Board()
    for uci in opening.split():
        board.push_uci(uci)
    clock = {c: players[c].base_s for c in (chess.WHITE, chess.BLACK)}
    for e in engines.values():
        e.protocol.send_line("ucinewgame")
    while not board.is_game_over(claim_draw=True) and board.ply() < max_plies:
        side = board.turn
        p = players[side]
        if p.nodes is not None:
            limit = chess.engine.Limit(nodes=p.nodes)
        else:
            limit = chess.engine.Limit(white_clock=clock[chess.WHITE], black_clock=clock[chess.BLACK],
                                       white_inc=players[chess.WHITE].inc_s, black_inc=players[chess.BLACK].inc_s)
        t0 = time.monotonic()
        move = engines[side].play(board, limit).move
        if p.nodes is None:
            clock[side] -= time.monotonic() - t0
            if clock[side] < 0:
                return ("0-1" if side == chess.WHITE else "1-0"), f"time forfeit at ply {board.ply()}"
            clock[side] += p.inc_s
        board.push(move)
    outcome = board.outcome(claim_draw=True)
    if outcome is None:
        return "1/2-1/2", f"adjudicated draw at ply {board.ply()}"
    return outcome.result(), f"{outcome.termination.name.lower()} at ply {board.ply()}"


def match(a: Player, b: Player, games: int, max_plies: int = 200, log=print,
          first_opening: int = 0) -> MatchResult:
    """``games`` games of ``a`` against ``b`` (colours alternate per opening, openings from
    ``first_opening`` on); scores from a's view."""
    result = MatchResult()
    ea, eb = _open(a), _open(b)
    try:
        for g in range(games):
            opening = OPENINGS[(first_opening + g // 2) % len(OPENINGS)]
            a_white = g % 2 == 0
            engines = {chess.WHITE: ea if a_white else eb, chess.BLACK: eb if a_white else ea}
            players = {chess.WHITE: a if a_white else b, chess.BLACK: b if a_white else a}
            res, how = play_game(engines, players, opening, max_plies)
            a_points = {"1-0": 1.0, "0-1": 0.0}.get(res, 0.5)
            a_points = a_points if a_white else 1.0 - a_points
            if a_points == 1.0:
                result.wins += 1
            elif a_points == 0.0:
                result.losses += 1
            else:
                result.draws += 1
            log(f"game {g + 1}/{games} ({opening}; {a.name} {'white' if a_white else 'black'}): "
                f"{res} ({how}) -> {result.summary()}")
            sys.stdout.flush()
    finally:
        ea.quit()
        eb.quit()
    return result
