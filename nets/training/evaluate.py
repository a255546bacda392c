"""Small strength matches (``bin/dev/train-net evaluate``): xlazero with a network against an opponent
engine, played by the shared match runner (:mod:`.match`, as ``bin/match``).

Games start from short book openings (:data:`OPENINGS`), each played twice with colours swapped,
so opening advantage cancels. Limits are either fixed nodes per move (``go nodes N``, the fair
way to compare two networks in the same search) or a clock (base + increment). Games still going
``max_plies`` plies after the opening are adjudicated draws. The score comes with a 95 % interval
from the per-game score variance.
"""

from __future__ import annotations

from pathlib import Path

import chess

from .match import Player, Tally, run_match
from .stockfish import find_stockfish

ROOT = Path(__file__).resolve().parent.parent.parent
XLAZERO = str(ROOT / "bin" / "xlazero")
OPENINGS = (
    "e2e4 e7e5 g1f3 b8c6", "e2e4 c7c5 g1f3 d7d6", "d2d4 d7d5 c2c4 e7e6", "d2d4 g8f6 c2c4 g7g6",
    "e2e4 e7e6 d2d4 d7d5", "e2e4 c7c6 d2d4 d7d5", "c2c4 e7e5 b1c3 g8f6", "g1f3 d7d5 g2g3 g8f6",
    "d2d4 d7d5 g1f3 g8f6 c1f4", "e2e4 e7e5 f1c4 g8f6", "e2e4 d7d5 e4d5 d8d5", "d2d4 g8f6 c2c4 e7e6",
    "e2e4 c7c5 b1c3 b8c6", "d2d4 f7f5 g2g3 g8f6", "e2e4 g7g6 d2d4 f8g7", "c2c4 c7c5 g1f3 g8f6",
)


def xlazero(weights: str, nodes: int | None = None, base_s: float | None = None, inc_s: float = 0.0,
            name: str | None = None) -> Player:
    return Player(name or Path(weights).name, [XLAZERO, f"--weights={weights}"], {}, nodes,
                  base_s=base_s, inc_s=inc_s)


def stockfish(elo: int, base_s: float, inc_s: float, path: str | None = None) -> Player:
    return Player(f"stockfish-{elo}", [find_stockfish(path)],
                  {"UCI_LimitStrength": True, "UCI_Elo": elo, "Threads": 1, "Hash": 16},
                  base_s=base_s, inc_s=inc_s)


def book() -> list[chess.Board]:
    """The positions after each of :data:`OPENINGS`, their moves kept (so the PGN shows them)."""
    boards = []
    for line in OPENINGS:
        board = chess.Board()
        for uci in line.split():
            board.push_uci(uci)
        boards.append(board)
    return boards


def match(a: Player, b: Player, games: int, max_plies: int = 200, log=print,
          first_opening: int = 0) -> Tally:
    """``games`` games of ``a`` against ``b`` (colours alternate per opening, openings from
    ``first_opening`` on); scores from a's view."""

    def on_game(g: int, game, tally: Tally) -> None:
        opening = OPENINGS[(first_opening + g // 2) % len(OPENINGS)]
        a_white = g % 2 == 0
        how = f"{game.headers['Termination']} at ply {game.end().ply()}"
        log(f"game {g + 1}/{games} ({opening}; {a.name} {'white' if a_white else 'black'}): "
            f"{game.headers['Result']} ({how}) -> {tally.summary()}")

    return run_match((a, b), games, book(), max_plies, first_opening, on_game)
