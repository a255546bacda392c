"""A minimal UCI driver for Stockfish's MultiPV analysis (training-time tool only).

Talks UCI over pipes directly (no asyncio layer), since labelling is the cost of data generation.
Install Stockfish with ``apt-get install stockfish`` (Debian's 15.1 is what the project used).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

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


class Stockfish:
    """One Stockfish process with Threads=1, MultiPV=``multipv`` and UCI_ShowWDL on."""

    def __init__(self, path: str | None = None, multipv: int = 6, hash_mb: int = 16):
        self.proc = subprocess.Popen([find_stockfish(path)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        self._send("uci")
        self._wait("uciok")
        for name, value in (("Threads", 1), ("Hash", hash_mb), ("MultiPV", multipv),
                            ("UCI_ShowWDL", "true")):
            self._send(f"setoption name {name} value {value}")
        self._send("isready")
        self._wait("readyok")

    def _send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")

    def _wait(self, token: str) -> None:
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("Stockfish exited")
            if line.startswith(token):
                return

    def new_game(self) -> None:
        self._send("ucinewgame")

    def analyse(self, moves: list[str], nodes: int) -> list[Line]:
        """MultiPV lines (best first) of the position after ``moves`` from the start position,
        from the deepest completed iteration; empty for a position without legal moves."""
        self._send("position startpos" + (" moves " + " ".join(moves) if moves else ""))
        self._send(f"go nodes {nodes}")
        lines: dict[int, Line] = {}
        while True:
            text = self.proc.stdout.readline()
            if not text:
                raise RuntimeError("Stockfish exited")
            if text.startswith("bestmove"):
                break
            if text.startswith("info") and " multipv " in text and " pv " in text:
                k, line = _parse_info(text.split())
                if k is not None and "bound" not in text:
                    lines[k] = line
        return [lines[k] for k in sorted(lines)]

    def close(self) -> None:
        try:
            self._send("quit")
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def _parse_info(tok: list[str]) -> tuple[int | None, Line | None]:
    try:
        k = int(tok[tok.index("multipv") + 1])
        s = tok.index("score")
        kind, val = tok[s + 1], int(tok[s + 2])
        cp = val if kind == "cp" else (MATE_CP - abs(val)) * (1 if val > 0 else -1)
        w = tok.index("wdl")
        wdl = (int(tok[w + 1]), int(tok[w + 2]), int(tok[w + 3]))
        move = tok[tok.index("pv") + 1]
    except (ValueError, IndexError):
        return None, None
    return k, Line(move, cp, wdl)
