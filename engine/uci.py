"""The UCI loop: reads commands on stdin, answers on stdout (flushed per line).

This layer parses commands and formats answers; the engine behind it (network, tree, search
thread, time manager) is :class:`engine.controller.Controller`. The search runs on its own
thread, so ``stop``, ``ponderhit`` and ``isready`` are answered while it runs. Every ``go`` gets
exactly one ``bestmove``: a legal move, or ``0000`` without a legal move or without a network.
Any bad line gets ``info string error: …`` and the loop goes on.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

import chess

import engine
from engine import options as opts
from engine.controller import Controller
from engine.search import Limit, ThinkingInfo

GO_INT_ARGS = ("wtime", "btime", "winc", "binc", "movestogo", "movetime", "nodes", "depth", "mate")
GO_NONNEGATIVE_ARGS = ("wtime", "btime", "movetime")
"""go arguments read as at least 0 (a clock gone negative means no time left)."""


class UciEngine:
    """State of one UCI session; ``handle(line)`` returns False after ``quit``."""

    def __init__(self, out: TextIO, values: dict[str, Any] | None = None) -> None:
        self.out = out
        self._out_lock = threading.Lock()
        self._line_time = time.monotonic()  # arrival of the line being handled (see handle)
        self._log: TextIO | _StderrLog | None = None
        self.controller = Controller(self, values)
        self._open_log()

    @property
    def values(self) -> dict[str, Any]:
        """The option values (the controller's, which it acts on)."""
        return self.controller.values

    # ------------------------------------------------------------------------------------- output
    def send(self, line: str) -> None:
        with self._out_lock:
            self.out.write(line + "\n")
            self.out.flush()
            if self._log is not None:
                self._log.write(f">> {line}\n")
                self._log.flush()

    def error(self, message: str) -> None:
        self.send(f"info string error: {message}")

    # The controller's listener: what the engine has to say, as UCI lines.
    def message(self, text: str) -> None:
        self.send(f"info string {text}")

    def infos(self, board: chess.Board, infos: list[ThinkingInfo]) -> None:
        for info in infos:
            self.send(self.format_info(board, info))

    def bestmove(
        self, board: chess.Board, best: chess.Move | None, ponder: chess.Move | None
    ) -> None:
        self.send(self._bestmove_line(board, best, ponder))

    def _open_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
        path = self.values["LogFile"]
        if path == "<stderr>":
            self._log = _StderrLog()
        elif path:
            try:
                self._log = open(path, "a", encoding="utf-8")
            except OSError as exc:
                self.error(f"cannot open LogFile {path}: {exc}")

    # ------------------------------------------------------------------------------------- dispatch
    def handle(self, line: str) -> bool:
        # The clock of a go runs from the moment its line arrives: work before the search starts
        # (copying the board, reusing the tree, starting the thread) is on the engine's clock too.
        self._line_time = time.monotonic()
        if self._log is not None:
            with self._out_lock:
                self._log.write(f"<< {line}\n")
                self._log.flush()
        tokens = line.split()
        if not tokens:
            return True
        cmd, args = tokens[0], tokens[1:]
        handler = getattr(self, f"cmd_{cmd}", None) if cmd.isidentifier() else None
        if handler is None:
            self.error(
                f"unknown command {cmd[:80]!r}: expected one of uci, isready, setoption, "
                "ucinewgame, position, go, stop, ponderhit, quit"
            )
            return True
        try:
            return handler(args) is not False
        except Exception as exc:  # never let a bad line end the loop
            self.error(f"{cmd}: {type(exc).__name__}: {exc}")
            return True

    def cmd_uci(self, args: list[str]) -> None:
        self.send(f"id name xlazero {engine.__version__}")
        self.send("id author The xlazero authors")
        for option in opts.OPTIONS:
            self.send(option.uci_line())
        self.send("uciok")

    def cmd_debug(self, args: list[str]) -> None:
        pass

    def cmd_isready(self, args: list[str]) -> None:
        self.controller.ready()
        self.send("readyok")

    def cmd_setoption(self, args: list[str]) -> None:
        if not args or args[0] != "name":
            raise ValueError("expected setoption name <name> [value <value>]")
        rest = args[1:]
        if "value" in rest:
            at = rest.index("value")
            name, text = " ".join(rest[:at]), " ".join(rest[at + 1 :])
        else:
            name, text = " ".join(rest), ""
        try:
            option = opts.find(name)
            value = (
                option.parse(text) if (text or option.kind == opts.STRING) else option.parse("true")
            )
        except opts.OptionError as exc:
            self.error(str(exc))
            return
        try:
            self.controller.set_option(option.name, value)
        except ValueError as exc:  # a TimeManager spec that does not parse
            self.error(str(exc))
            return
        if option.name == "LogFile":
            self._open_log()

    def cmd_ucinewgame(self, args: list[str]) -> None:
        self.controller.new_game()

    def cmd_position(self, args: list[str]) -> None:
        if not args:
            raise ValueError("expected position startpos|fen <FEN> [moves ...]")
        self.controller.set_position(self._parse_position(args))

    def _parse_position(self, args: list[str]) -> chess.Board:
        chess960 = bool(self.values["UCI_Chess960"])
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

    def cmd_go(self, args: list[str]) -> None:
        # Every go must get its bestmove: a go during a search ends that search first (it sends
        # its own bestmove), and a malformed argument is reported and skipped, not fatal.
        board = self.controller.board
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
                    self.error(
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
                        self.error(f"go searchmoves: ignoring illegal move {args[i][:20]!r}")
                    i += 1
            else:
                self.error(f"go: unknown argument {tok[:40]!r}; ignored")
                i += 1
        for key in GO_NONNEGATIVE_ARGS:
            if key in ints:
                ints[key] = max(0, ints[key])
        limit = Limit(
            **ints,
            infinite="infinite" in flags,
            ponder="ponder" in flags,
            searchmoves=tuple(searchmoves),
            started_at=self._line_time,
        )
        try:
            self.controller.go(limit)
        except Exception as exc:  # no search started: this go still gets its bestmove
            self.error(f"go: {type(exc).__name__}: {exc}; answering without a search")
            self.bestmove(board, next(iter(board.legal_moves), None), None)

    def cmd_stop(self, args: list[str]) -> None:
        self.controller.stop()

    def cmd_ponderhit(self, args: list[str]) -> None:
        self.controller.ponderhit(self._line_time)

    def cmd_quit(self, args: list[str]) -> bool:
        self.controller.stop_and_join()
        return False

    # ------------------------------------------------------------------------------------- answers
    def _bestmove_line(
        self, board: chess.Board, best: chess.Move | None, ponder: chess.Move | None
    ) -> str:
        # best is legal (the controller's promise); ponder only where it is legal after it.
        moves = (
            [] if best is None else self._uci_moves(board, (best, ponder) if ponder else (best,))
        )
        if not moves:
            return "bestmove 0000"
        return f"bestmove {moves[0]}" + (f" ponder {moves[1]}" if len(moves) > 1 else "")

    def _uci_moves(self, board: chess.Board, moves: tuple[chess.Move, ...]) -> list[str]:
        """``moves`` played one after the other from ``board``, in UCI notation (Chess960's
        when UCI_Chess960 is set), up to the first that is not legal where it is played."""
        chess960 = bool(self.values["UCI_Chess960"])
        b = board.copy(stack=False)
        out = []
        for move in moves:
            if move not in b.legal_moves:
                break
            out.append(b.uci(move, chess960=chess960))
            b.push(move)
        return out

    def format_info(self, board: chess.Board, info: ThinkingInfo) -> str:
        parts = [
            f"info depth {info.depth} seldepth {info.seldepth} time {info.time_ms} nodes {info.nodes}"
        ]
        if info.multipv is not None:
            parts.append(f"multipv {info.multipv}")
        if info.mate is not None:
            parts.append(f"score mate {info.mate}")
        elif info.score_cp is not None:
            parts.append(f"score cp {info.score_cp}")
        if self.values["UCI_ShowWDL"]:
            parts.append("wdl {} {} {}".format(*info.wdl))
        if info.moves_left is not None and self.values["UCI_ShowMovesLeft"]:
            parts.append(f"movesleft {info.moves_left}")
        parts.append(f"hashfull {info.hashfull} nps {info.nps} tbhits {info.tbhits}")
        if info.pv:
            parts.append("pv " + " ".join(self._uci_moves(board, info.pv)))
        return " ".join(parts)


class _StderrLog:
    """LogFile=<stderr>: the dialogue on standard error, which closing must not close."""

    def write(self, text: str) -> None:
        sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def close(self) -> None:
        pass


def expand_config(argv: list[str]) -> list[str]:
    """``--config=FILE`` (lc0's ``lc0.config`` habit): the file's flags, one a line (``#``
    comments, the leading ``--`` optional), come before the command line's, which win."""
    out, config = [], None
    for arg in argv:
        if arg.startswith("--config="):
            config = arg.split("=", 1)[1]
        else:
            out.append(arg)
    if config is None:
        return out
    try:
        text = Path(config).expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        raise opts.OptionError(f"--config: cannot read {config}: {exc.strerror or exc}") from None
    flags = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            flags.append(line if line.startswith("-") else "--" + line)
    return flags + out


def register_backends() -> None:
    """Import the backends, which register themselves by name: the protocol (engine.backend)
    knows no implementation, so the program's entry point brings them in. Importing
    backend_xla, before anything imports jax, also asks XLA for one CPU device per core, so
    that batches can be split over the cores."""
    import backend_xla  # noqa: F401  (registers "xla"; before jax: a CPU device per core)
    import engine.backends  # noqa: F401  (random)


def main(argv: list[str] | None = None, stdin=None, stdout: TextIO | None = None) -> int:
    """Console entry point: ``xlazero [--flag=value ...]``; exit code 2 on a bad flag."""
    register_backends()
    argv = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in argv):
        print("usage: xlazero [--option=value ...]\n")
        print(opts.markdown_table())
        return 0
    try:
        argv = expand_config(argv)
        values = opts.parse_command_line(argv)
    except opts.OptionError as exc:
        print(f"xlazero: error: {exc}", file=sys.stderr)
        return 2
    out = stdout or sys.stdout
    uci = UciEngine(out, values)
    stream = stdin or sys.stdin.buffer
    for raw in stream:
        line = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
        if not uci.handle(line.strip()):
            break
    else:
        uci.controller.stop_and_join()
    return 0


def run() -> None:
    """The engine process: ``main``, then exit at once. Interpreter teardown (XLA's and numba's
    finalizers) takes most of a second, which a GUI would wait for after ``quit``; the search
    thread has stopped and the output is flushed, so nothing is lost."""
    from engine.compiled_cache import remove_stale

    remove_stale()  # other versions' numba caches unused for a week (never on import)
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
