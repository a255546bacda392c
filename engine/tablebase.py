"""Syzygy endgame tablebases for the search, as lc0 uses them (``SyzygyPath``, ``SyzygyFastPlay``).

Probing is python-chess's (``chess.syzygy``). Two uses, both lc0's:

- at the root, when the position itself is in the tables, only the moves that keep its best
  outcome are searched: by DTZ (the moves that reach the best result soonest, so a win makes
  progress towards a zeroing move and mate), or by WDL alone with ``SyzygyFastPlay`` or when
  the DTZ tables are missing;
- inside the tree (only when the root was not filtered), a position just after a capture or a
  pawn move (rule50 0), with no castling right and few enough pieces, is a terminal node with
  its WDL value: cursed wins and blessed losses count as draws.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.syzygy

WIN, CURSED_WIN, DRAW, BLESSED_LOSS, LOSS = 2, 1, 0, -1, -2
"""Syzygy WDL values, from the side to move's view."""

PATH_SEPARATOR = ";" if os.name == "nt" else ":"
"""Separator of several folders in ``SyzygyPath``, as lc0's."""


class TablebaseError(ValueError):
    """A SyzygyPath that cannot be used; the message names the folder."""


@dataclass(frozen=True)
class RootProbe:
    """The root moves that keep the position's best outcome, and that outcome (WDL, mover's view)."""

    moves: tuple[chess.Move, ...]
    wdl: int
    by_dtz: bool


class Tablebase:
    """Syzygy tables from ``path`` (folders separated by ':' on Unix, ';' on Windows)."""

    def __init__(self, path: str) -> None:
        folders = [f for f in path.split(PATH_SEPARATOR) if f.strip()]
        if not folders:
            raise TablebaseError(f"SyzygyPath: expected one or more folders, got {path!r}")
        self._tb = chess.syzygy.Tablebase()
        for folder in folders:
            p = Path(folder).expanduser()
            if not p.is_dir():
                self._tb.close()
                raise TablebaseError(f"SyzygyPath: {p} is not a folder")
            self._tb.add_directory(str(p))
        if not self._tb.wdl:
            self._tb.close()
            raise TablebaseError(f"SyzygyPath: no Syzygy tables (*.rtbw) in {', '.join(folders)}")
        self.max_pieces = max(_pieces(name) for name in self._tb.wdl)
        self.tables = len(self._tb.wdl) + len(self._tb.dtz)
        self.path = path

    def close(self) -> None:
        self._tb.close()

    def covers(self, board: chess.Board) -> bool:
        """Whether the tables can answer for ``board``: few enough pieces, no castling right."""
        return chess.popcount(board.occupied) <= self.max_pieces and not board.castling_rights

    def probe_wdl(self, board: chess.Board) -> int | None:
        """WDL of ``board`` for the side to move, or None when no table answers."""
        if not self.covers(board):
            return None
        try:
            return self._tb.probe_wdl(board)
        except (KeyError, chess.syzygy.MissingTableError):
            return None

    def root_moves(self, board: chess.Board, fast_play: bool) -> RootProbe | None:
        """The moves to search at a root that the tables cover (None: not covered)."""
        if not self.covers(board):
            return None
        moves = list(board.legal_moves)
        if not moves:
            return None
        wdls = []
        for move in moves:
            board.push(move)
            try:
                wdls.append(-self._tb.probe_wdl(board))
            except (KeyError, chess.syzygy.MissingTableError):
                return None
            finally:
                board.pop()
        best = max(wdls)
        keep = [m for m, w in zip(moves, wdls) if w == best]
        if fast_play or best == DRAW:
            return RootProbe(tuple(keep), best, False)
        ranks = []
        for move in keep:
            rank = self._dtz_rank(board, move)
            if rank is None:  # no DTZ table: WDL alone, as lc0 falls back
                return RootProbe(tuple(keep), best, False)
            ranks.append(rank)
        # Winning: reach the zeroing move soonest; losing: resist longest.
        target = min(ranks) if best > 0 else max(ranks)
        return RootProbe(tuple(m for m, r in zip(keep, ranks) if r == target), best, True)

    def _dtz_rank(self, board: chess.Board, move: chess.Move) -> int | None:
        """Plies to the next zeroing move after ``move`` (0 when ``move`` zeroes)."""
        if board.is_zeroing(move):
            return 0
        board.push(move)
        try:
            if board.is_checkmate():
                return 0
            return abs(self._tb.probe_dtz(board)) + 1
        except (KeyError, chess.syzygy.MissingTableError):
            return None
        finally:
            board.pop()


def _pieces(table_name: str) -> int:
    """Pieces of a table named like 'KQvK' (kings included)."""
    return sum(ch.isalpha() and ch != "v" for ch in table_name)


def open_tablebases(path: str) -> Tablebase | None:
    """Tablebases for a SyzygyPath option value ('' or '<empty>': none)."""
    if not path or path.strip() in ("", "<empty>"):
        return None
    return Tablebase(path)
