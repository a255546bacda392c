"""Stockfish's MultiPV analysis through python-chess (``chess.engine``): the training labels.

Install Stockfish with ``apt-get install stockfish`` (Debian's 15.1 is what the project used).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

import chess
import chess.engine

DEFAULT_STOCKFISH = "/usr/games/stockfish"
MATE_CP = 10_000
"""Centipawn stand-in for a mate score (minus the distance, so faster mates rank higher)."""


@dataclass(frozen=True)
class Line:
    """One MultiPV line: first move (UCI), score in centipawns (side to move), WDL per mille."""

    move: str
    cp: int
    wdl: tuple[int, int, int]


def find_stockfish(path: str | None = None) -> str:
    found = path or shutil.which("stockfish") or DEFAULT_STOCKFISH
    if shutil.which(found) is None:
        raise FileNotFoundError(f"Stockfish not found at {found!r}: install it with "
                                f"`apt-get install stockfish` or pass its path")
    return found


def line_of(info: chess.engine.InfoDict) -> Line | None:
    """The :class:`Line` of one MultiPV entry of ``analyse``; None for an entry without a move
    (Stockfish's answer in a position without legal moves)."""
    if not info.get("pv"):
        return None
    score = info["score"].relative
    mate = score.mate()
    cp = score.score() if mate is None else (MATE_CP - abs(mate)) * (1 if mate > 0 else -1)
    wdl = info["wdl"].relative
    return Line(info["pv"][0].uci(), cp, (wdl.wins, wdl.draws, wdl.losses))


class Stockfish:
    """One Stockfish process with Threads=1, MultiPV=``multipv`` and UCI_ShowWDL on."""

    def __init__(self, path: str | None = None, multipv: int = 6, hash_mb: int = 16):
        self.multipv = multipv
        self.engine = chess.engine.SimpleEngine.popen_uci(find_stockfish(path))
        try:
            # UCI_AnalyseMode stays off, as before python-chess (which turns it on for analysis).
            self.engine.configure({"Threads": 1, "Hash": hash_mb, "UCI_ShowWDL": True,
                                   "UCI_AnalyseMode": False})
        except BaseException:
            self.engine.quit()
            raise
        self.new_game()

    def new_game(self) -> None:
        # python-chess sends ucinewgame (Stockfish clears its hash) when the game object changes.
        self._game = object()

    def analyse(self, board: chess.Board, nodes: int) -> list[Line]:
        """MultiPV lines of ``board`` in Stockfish's order (its best first) (its moves from the root are sent too, so
        Stockfish sees repetitions); empty for a position without legal moves.

        Each line is the last Stockfish printed for its index. python-chess takes a bound mark
        only right after the score, and Stockfish puts the WDL between them, so the line of an
        aspiration search that the node limit stopped counts as exact here (the hand-written
        client this replaces skipped such lines and kept the previous iteration's)."""
        infos = self.engine.analyse(board, chess.engine.Limit(nodes=nodes), multipv=self.multipv,
                                    game=self._game)
        return [line for line in map(line_of, infos) if line is not None]

    def close(self) -> None:
        try:
            self.engine.quit()
        except (chess.engine.EngineError, TimeoutError):
            self.engine.close()

