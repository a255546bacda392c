"""Games between two UCI engines through python-chess: the match runner of ``bin/match`` and of
``bin/dev/train-net evaluate``.

Each opening is played twice with colours swapped: the first player has White in games 0, 2, ...
A player's limit is nodes or a time per move, or a clock (base + increment) kept here from wall
time; a player whose clock runs out loses. A crash, an illegal move or a refused position loses
the game (a crashed engine is restarted for the next one), and a game still going ``max_plies``
plies after its opening is a draw. Results are counted from the first player's view.
"""

from __future__ import annotations

import math
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import chess
import chess.engine
import chess.pgn

from .pgnfile import is_pgn, open_pgn

ENGINE_TIMEOUT_S = 60.0
"""Start-up / isready allowance of an engine (network compilation)."""
Z95 = 1.96


class MatchError(Exception):
    """An engine refused its options, or an openings file held none."""


@dataclass(frozen=True)
class Player:
    """An engine command line, its UCI options, and its limit: ``nodes`` or ``movetime_ms`` per
    move, else a clock of ``base_s`` seconds plus ``inc_s`` per move."""

    name: str
    command: list[str]
    options: dict = field(default_factory=dict)
    nodes: int | None = None
    movetime_ms: int | None = None
    base_s: float | None = None
    inc_s: float = 0.0

    def __post_init__(self):
        if self.nodes is None and self.movetime_ms is None and self.base_s is None:
            raise ValueError(f"{self.name}: expected nodes, movetime_ms or base_s, got none of them")

    def limit(self, clocks: dict, incs: dict) -> chess.engine.Limit:
        if self.nodes is not None:
            return chess.engine.Limit(nodes=self.nodes)
        if self.movetime_ms is not None:
            return chess.engine.Limit(time=self.movetime_ms / 1000)
        return chess.engine.Limit(white_clock=clocks[chess.WHITE], black_clock=clocks[chess.BLACK],
                                  white_inc=incs[chess.WHITE], black_inc=incs[chess.BLACK])


@dataclass
class Tally:
    """Results from the first player's view, and how games were lost other than on the board."""

    wins: int = 0
    draws: int = 0
    losses: int = 0
    illegal: int = 0
    time_losses: int = 0
    crashes: int = 0

    def record(self, result: str, first_is_white: bool) -> None:
        if result == "1/2-1/2":
            self.draws += 1
        elif (result == "1-0") == first_is_white:
            self.wins += 1
        else:
            self.losses += 1

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / max(self.games, 1)

    def interval(self) -> float:
        """Half-width of the 95 % interval of the score (normal approximation over game scores)."""
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

    def elo(self) -> tuple[float, float]:
        """Elo difference and its 95 % error (bin/match's summary)."""
        if self.games == 0:
            return 0.0, float("inf")
        mean, err = self.score, self.interval()

        def elo(p: float) -> float:
            p = min(max(p, 1e-6), 1 - 1e-6)
            return -400 * math.log10(1 / p - 1)

        return elo(mean), (elo(min(mean + err, 1 - 1e-6)) - elo(max(mean - err, 1e-6))) / 2

    def summary(self) -> str:
        """Score with its interval and the matching Elo differences (bin/dev/train-net evaluate)."""
        s = self.score
        lo, hi = self.bounds()
        elo = lambda x: -400 * math.log10(1 / min(max(x, 1e-3), 1 - 1e-3) - 1)  # noqa: E731
        return (f"+{self.wins} ={self.draws} -{self.losses} of {self.games}: score {100 * s:.1f} % "
                f"[{100 * lo:.1f}, {100 * hi:.1f}] (95 %), Elo difference {elo(s):+.0f} "
                f"[{elo(lo):+.0f}, {elo(hi):+.0f}]")


def load_openings(path: str | None) -> list[chess.Board]:
    """Openings of an EPD file (one position a line) or a PGN file (each game's last position,
    its moves kept); the start position without a file."""
    if not path:
        return [chess.Board()]
    boards = []
    if is_pgn(path):
        with open_pgn(path) as f:
            while (game := chess.pgn.read_game(f)) is not None:
                boards.append(game.end().board())
    else:
        for line in Path(path).read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                board, _ = chess.Board.from_epd(line.strip())
                boards.append(board)
    if not boards:
        raise MatchError(f"no openings in {path}")
    return boards


def open_engine(player: Player) -> chess.engine.SimpleEngine:
    engine = chess.engine.SimpleEngine.popen_uci(player.command, timeout=ENGINE_TIMEOUT_S)
    if player.options:
        try:
            engine.configure(player.options)
        except chess.engine.EngineError as exc:
            engine.quit()
            raise MatchError(f"{shlex.join(player.command)}: {exc}") from None
    return engine


def _hms(seconds: float) -> str:
    """A PGN clock value (h:mm:ss.s), as Cutechess writes it."""
    whole = int(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}.{int((seconds - whole) * 10)}"


def play_game(engines: list[chess.engine.SimpleEngine], players: Sequence[Player], opening: chess.Board,
              max_plies: int, tally: Tally, first_is_white: bool) -> chess.pgn.Game:
    """One game from ``opening`` (its moves, if any, stay in the PGN); ``engines[i]`` plays for
    ``players[i]`` and is replaced if it crashes. Counts the result into ``tally``."""
    board = opening.copy()
    seat = {chess.WHITE: 0 if first_is_white else 1, chess.BLACK: 1 if first_is_white else 0}
    clocks = {c: players[seat[c]].base_s for c in chess.COLORS}
    incs = {c: players[seat[c]].inc_s for c in chess.COLORS}
    result, reason = "*", ""
    move_times: list[tuple[float, float | None]] = []  # (seconds spent, clock left) per move, as PGN comments
    token = object()  # a new game for python-chess (sends ucinewgame)
    while True:
        outcome = board.outcome(claim_draw=True)
        if outcome is not None:
            result, reason = outcome.result(), outcome.termination.name.lower()
            break
        if board.ply() - opening.ply() >= max_plies:
            result, reason = "1/2-1/2", "max plies"
            break
        side = board.turn
        idx = seat[side]
        player, loss = players[idx], ("0-1" if side == chess.WHITE else "1-0")
        t0 = time.monotonic()
        try:
            play = engines[idx].play(board, player.limit(clocks, incs), game=token)
        except chess.engine.EngineTerminatedError:
            tally.crashes += 1
            result, reason = loss, f"{player.name} crashed"
            engines[idx] = open_engine(player)
            break
        except chess.engine.EngineError as exc:
            tally.illegal += 1
            result, reason = loss, f"{player.name}: {exc}"
            break
        spent = time.monotonic() - t0
        if clocks[side] is not None:
            clocks[side] -= spent
            if clocks[side] < 0:
                tally.time_losses += 1
                result, reason = loss, (f"{player.name} lost on time ({spent:.3f} s spent, "
                                        f"{spent + clocks[side]:.3f} s left)")
                break
            clocks[side] += incs[side]
        if play.move is None or play.move not in board.legal_moves:
            tally.illegal += 1
            result, reason = loss, f"{player.name} illegal move {play.move}"
            break
        board.push(play.move)
        move_times.append((spent, clocks[side]))
    game = chess.pgn.Game.from_board(board)  # FEN and SetUp headers when the root is not the start
    played = list(game.mainline())[len(board.move_stack) - len(move_times):]
    for node, (spent, clock) in zip(played, move_times):
        node.comment = f"[%emt {spent:.3f}]" + ("" if clock is None else f" [%clk {_hms(clock)}]")
    game.headers.update({"Event": "xlazero match", "White": players[seat[chess.WHITE]].name,
                         "Black": players[seat[chess.BLACK]].name, "Result": result,
                         "Termination": reason})
    tally.record(result, first_is_white)
    return game


def run_match(players: Sequence[Player], games: int, openings: Sequence[chess.Board], max_plies: int,
              first_opening: int = 0,
              on_game: Callable[[int, chess.pgn.Game, Tally], None] | None = None) -> Tally:
    """``games`` games of ``players[0]`` against ``players[1]``: game g from opening
    ``first_opening + g // 2`` (cyclically), the first player White when g is even.
    ``on_game(g, pgn, tally)`` runs after each game."""
    tally = Tally()
    engines: list[chess.engine.SimpleEngine] = []
    players = list(players)
    try:
        for player in players:
            engines.append(open_engine(player))
        for g in range(games):
            opening = openings[(first_opening + g // 2) % len(openings)]
            game = play_game(engines, players, opening, max_plies, tally, first_is_white=g % 2 == 0)
            if on_game is not None:
                on_game(g, game, tally)
    finally:
        for engine in engines:
            try:
                engine.quit()
            except Exception:  # a dead engine has nothing left to close
                pass
    return tally
