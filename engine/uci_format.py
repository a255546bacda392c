"""The UCI text of :mod:`engine.uci`: the arguments of ``position`` and ``go`` parsed, and the
``info`` and ``bestmove`` answers formatted. Plain functions of their inputs: reading and
writing the lines, and the session's state, stay in :class:`engine.uci.UciEngine`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import chess

from engine.search import Limit, ThinkingInfo

GO_INT_ARGS = ("wtime", "btime", "winc", "binc", "movestogo", "movetime", "nodes", "depth", "mate")
GO_NONNEGATIVE_ARGS = ("wtime", "btime", "movetime")
"""go arguments read as at least 0 (a clock gone negative means no time left)."""


def parse_position(args: list[str], chess960: bool) -> chess.Board:
    """``startpos|fen <FEN> [moves ...]`` -> the board; ValueError names what is wrong."""
    if "moves" in args:
        at = args.index("moves")
        head, moves = args[:at], args[at + 1 :]
    else:
        head, moves = args, []
    if head[0] == "startpos" and len(head) == 1:
        board = chess.Board(chess960=chess960)
    elif head[0] == "fen" and len(head) > 1:
        fen = " ".join(head[1:])
        try:
            board = chess.Board(fen, chess960=chess960)
        except ValueError as exc:
            raise ValueError(f"bad FEN {fen!r}: {exc}") from None
        status = board.status()
        if status & ~(chess.STATUS_BAD_CASTLING_RIGHTS | chess.STATUS_INVALID_EP_SQUARE):
            raise ValueError(f"invalid position in FEN {fen!r}: {status!r}")
    else:
        raise ValueError(f"expected startpos or fen <FEN>, got {' '.join(head)[:100]!r}")
    for i, text in enumerate(moves):
        try:
            move = board.parse_uci(text)
        except ValueError:
            raise ValueError(
                f"illegal move {text[:20]!r} (move {i + 1} of position); position unchanged"
            ) from None
        board.push(move)
    return board


def parse_go(
    args: list[str], board: chess.Board, started_at: float, error: Callable[[str], None]
) -> Limit:
    """The go arguments as a :class:`Limit` whose clock starts at ``started_at``. Every go must
    get its bestmove, so a malformed argument goes to ``error`` and is skipped, never raised."""
    ints: dict[str, int] = {}
    flags = set()
    searchmoves: list[chess.Move] = []
    i = 0
    while i < len(args):
        tok = args[i]
        if tok in GO_INT_ARGS:
            value = args[i + 1] if i + 1 < len(args) else None
            try:
                if value is None:
                    raise ValueError(f"go {tok} without a value")
                ints[tok] = int(float(value))
                i += 2
            except (TypeError, ValueError, OverflowError):
                error(
                    f"go {tok}: expected a number, got "
                    f"{'nothing' if value is None else repr(value[:20])}; ignored"
                )
                # A following keyword starts the next argument; anything else was the value.
                keyword = value is None or value in GO_INT_ARGS + (
                    "infinite",
                    "ponder",
                    "searchmoves",
                )
                i += 1 if keyword else 2
        elif tok in ("infinite", "ponder"):
            flags.add(tok)
            i += 1
        elif tok == "searchmoves":
            i += 1
            while i < len(args) and args[i] not in GO_INT_ARGS + ("infinite", "ponder"):
                try:
                    move = board.parse_uci(args[i])
                    if not move:  # python-chess parses 0000 as the null move
                        raise ValueError("the null move")
                    searchmoves.append(move)
                except ValueError:
                    error(f"go searchmoves: ignoring illegal move {args[i][:20]!r}")
                i += 1
        else:
            error(f"go: unknown argument {tok[:40]!r}; ignored")
            i += 1
    for key in GO_NONNEGATIVE_ARGS:
        if key in ints:
            ints[key] = max(0, ints[key])
    return Limit(
        **ints,
        infinite="infinite" in flags,
        ponder="ponder" in flags,
        searchmoves=tuple(searchmoves),
        started_at=started_at,
    )


def uci_moves(board: chess.Board, moves: tuple[chess.Move, ...], chess960: bool) -> list[str]:
    """``moves`` played one after the other from ``board``, in UCI notation (Chess960's when
    ``chess960``), up to the first that is not legal where it is played."""
    b = board.copy(stack=False)
    out = []
    for move in moves:
        if move not in b.legal_moves:
            break
        out.append(b.uci(move, chess960=chess960))
        b.push(move)
    return out


def pv_uci(board: chess.Board, moves: tuple[chess.Move, ...], chess960: bool) -> list[str]:
    """An info line's PV in UCI notation: :func:`uci_moves`, which checks every move on a copy
    of the board (about 9 µs a move: an info line's largest cost). The search's PV is legal
    (its moves are its move generator's, which the tests check against python-chess) and
    written in the board's castling form (king to g/c file, or king takes rook on a Chess960
    board), so where that is the form asked for and its first move is legal on ``board`` (the
    PV is this position's), each move is written as it is."""
    if board.chess960 != chess960 or not moves or moves[0] not in board.legal_moves:
        return uci_moves(board, moves, chess960)
    return [move.uci() for move in moves]


def bestmove_line(
    board: chess.Board, best: chess.Move | None, ponder: chess.Move | None, chess960: bool
) -> str:
    # best is legal (the controller's promise); ponder only where it is legal after it.
    moves = (
        [] if best is None else uci_moves(board, (best, ponder) if ponder else (best,), chess960)
    )
    if not moves:
        return "bestmove 0000"
    return f"bestmove {moves[0]}" + (f" ponder {moves[1]}" if len(moves) > 1 else "")


def format_info(board: chess.Board, info: ThinkingInfo, values: Mapping[str, Any]) -> str:
    """One ``info`` line, its fields in lc0's order (StringUciResponder::OutputThinkingInfo):
    depth at least 1, ``nps`` (and ``eps``) only once time has passed since the first playout;
    the option ``values`` say which optional fields it shows."""
    parts = [
        f"info depth {max(info.depth, 1)} seldepth {info.seldepth} time {info.time_ms} "
        f"nodes {info.nodes}"
    ]
    if info.mate is not None:
        parts.append(f"score mate {info.mate}")
    elif info.score_cp is not None:
        parts.append(f"score cp {info.score_cp}")
    if values["UCI_ShowWDL"]:
        parts.append("wdl {} {} {}".format(*info.wdl))
    if info.moves_left is not None and values["UCI_ShowMovesLeft"]:
        parts.append(f"movesleft {info.moves_left}")
    parts.append(f"hashfull {info.hashfull}")
    if info.nps is not None:
        parts.append(f"nps {info.nps}")
    if info.eps is not None and values.get("UCI_ShowEPS"):
        parts.append(f"eps {info.eps}")
    parts.append(f"tbhits {info.tbhits}")
    if info.multipv is not None:
        parts.append(f"multipv {info.multipv}")
    if info.pv:
        parts.append("pv " + " ".join(pv_uci(board, info.pv, bool(values["UCI_Chess960"]))))
    return " ".join(parts)
