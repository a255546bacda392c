"""The UCI loop: reads commands on stdin, answers on stdout (flushed per line).

This layer parses commands and formats answers (their text in :mod:`engine.uci_format`); the
engine behind it (network, tree, search thread, time manager) is
:class:`engine.controller.Controller`. The search runs on its own thread, so ``stop``,
``ponderhit`` and ``isready`` are answered while it runs. Every ``go`` gets exactly one
``bestmove``: a legal move, or ``0000`` without a legal move or without a network. Any bad line
gets ``info string error: …`` and the loop goes on.
"""

from __future__ import annotations

if __name__ == "__main__":  # the program (python -m engine.uci, bin/xlazero): the process's set-up
    from engine.startup import configure  # before the imports below load the compiled search

    configure(clean=True)

import dataclasses
import os
import sys
import threading
import time
from collections import deque
from typing import Any, TextIO

import chess

import engine
from engine import options as opts
from engine.backend import prepare_backend
from engine.controller import Controller
from engine.loading import log_time, start_warm_up
from engine.search import Limit, ThinkingInfo
from engine.startup import cmdline, configure, write_bytecode
from engine.uci_format import bestmove_line, format_info, parse_go, parse_position


class UciEngine:
    """State of one UCI session; ``handle(line)`` returns False after ``quit``."""

    def __init__(
        self,
        out: TextIO,
        values: dict[str, Any] | None = None,
        command_line: list[str] | None = None,
    ) -> None:
        self.out = out
        self._out_lock = threading.Lock()
        self._line_time = time.monotonic()  # arrival of the line being handled (see handle)
        self._position_time: float | None = None
        """When the last ``position`` line arrived: lc0 starts a move's clock there."""
        self._ready_since_position = False
        self._log: TextIO | _StderrLog | None = None
        self._unlogged: deque[str] = deque(maxlen=LOG_BUFFER_LINES)
        """The dialogue's last lines while no LogFile is open, written when one opens (lc0's)."""
        self.started_with = dict(values or {})
        """The values the command line (and its config file) set: the ``uci`` reply advertises
        them as the defaults, as lc0's does, so a GUI that sends the defaults back keeps them."""
        # lc0's first lines (main.cc, commandline.cc), kept for the log to come
        self.log(f"xlazero {engine.__version__} started.")
        if command_line is not None:
            self.log(f"Command line: {' '.join(command_line)}")
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
            self._log_line(f"<< {line}")

    def error(self, message: str) -> None:
        self.send(f"info string error: {message}")

    # The controller's listener: what the engine has to say, as UCI lines.
    def message(self, text: str) -> None:
        self.send(f"info string {text}")

    def log(self, text: str) -> None:
        """A line for the log only (lc0's non-UCI lines), never on ``out``."""
        with self._out_lock:
            self._log_line(text)

    @property
    def logging(self) -> bool:
        return self._log is not None

    def infos(self, board: chess.Board, infos: list[ThinkingInfo]) -> None:
        for info in infos:
            self.send(format_info(board, info, self.values))

    def bestmove(
        self, board: chess.Board, best: chess.Move | None, ponder: chess.Move | None
    ) -> None:
        self.send(bestmove_line(board, best, ponder, bool(self.values["UCI_Chess960"])))

    def _log_line(self, text: str) -> None:
        """One line of the log in lc0's format (``<<`` what the engine sent, ``>>`` what it
        read, else a line of the engine's own: :meth:`log`); kept for the log to come while
        none is open. Called under the output lock."""
        line = log_line(text)
        if self._log is None:
            self._unlogged.append(line)
            return
        self._log.write(line + "\n")
        self._log.flush()

    def _open_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
        path = self.values["LogFile"]
        log: TextIO | _StderrLog | None = None
        if path == "<stderr>":
            log = _StderrLog()
        elif path:
            try:
                log = open(path, "a", encoding="utf-8")
            except OSError as exc:
                self.error(f"cannot open LogFile {path}: {exc}")
        if log is not None:
            with self._out_lock:  # lc0's header, then what was said before the log opened
                log.write(LOG_STARTED)
                for line in self._unlogged:
                    log.write(line + "\n")
                log.flush()
                self._unlogged.clear()
                self._log = log

    # ------------------------------------------------------------------------------------- dispatch
    def handle(self, line: str) -> bool:
        # A go's clock runs from the moment its line (or its position's: _clock_start) arrives:
        # work before the search starts (copying the board, reusing the tree, starting the
        # thread) is on the engine's clock too.
        self._line_time = time.monotonic()
        with self._out_lock:
            self._log_line(f">> {line}")
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
            self.send(option.uci_line(self.started_with.get(option.name)))
        self.send("uciok")

    def cmd_debug(self, args: list[str]) -> None:
        pass

    def cmd_isready(self, args: list[str]) -> None:
        self._ready_since_position = True
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
        if option.name in self.values and self.values[option.name] == value:
            return  # its value already (a GUI sending the advertised defaults back): no reload
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
        self.controller.set_position(parse_position(args, bool(self.values["UCI_Chess960"])))
        self._position_time, self._ready_since_position = self._line_time, False

    def cmd_go(self, args: list[str]) -> None:
        # Every go must get its bestmove: a go during a search ends that search first (it sends
        # its own bestmove), and a malformed argument is reported and skipped, not fatal.
        board = self.controller.board
        limit = parse_go(args, board, self._line_time, self.error)
        limit = dataclasses.replace(limit, started_at=self._clock_start(limit))
        try:
            self.controller.go(limit)
        except Exception as exc:  # no search started: this go still gets its bestmove
            self.error(f"go: {type(exc).__name__}: {exc}; answering without a search")
            self.bestmove(board, next(iter(board.legal_moves), None), None)

    def _clock_start(self, limit: Limit) -> float:
        """When a go's clock starts, as lc0's: at its ``position`` line, so that the time the GUI
        took to send ``go`` counts (a host that does not compensate for lag); at the ``go`` line
        without a clock (``go movetime``, ``go infinite``), or with ``StrictTiming`` when an
        ``isready`` came between the two (the host waited for ``readyok`` and times from
        ``go``)."""
        clock = limit.wtime is not None or limit.btime is not None
        strict = bool(self.values["StrictTiming"]) and self._ready_since_position
        if not clock or strict or self._position_time is None:
            return self._line_time
        return self._position_time

    def cmd_stop(self, args: list[str]) -> None:
        if self.controller.searching:
            self.log("Stopping search due to `stop` uci command.")  # lc0's search.cc
        self.controller.stop()

    def cmd_ponderhit(self, args: list[str]) -> None:
        self.controller.ponderhit(self._line_time)

    def cmd_quit(self, args: list[str]) -> bool:
        self.controller.stop_and_join()
        return False


LOG_BUFFER_LINES = 200
"""Lines kept while no LogFile is open (lc0's kBufferSizeLines)."""

LOG_STARTED = "\n\n============= Log started. =============\n"
"""What lc0 writes first to a log file it opens."""


def log_line(text: str, now: float | None = None) -> str:
    """``text`` as a line of lc0's log: local date and time to the microsecond, the thread,
    where it was written, ``]`` (lc0's LogMessage: ``MMDD HH:MM:SS.uuuuuu TID file:line] ``)."""
    now = time.time() if now is None else now
    return f"{log_time(now)} {threading.get_native_id()} engine/uci.py] {text}"


class _StderrLog:
    """LogFile=<stderr>: the dialogue on standard error, which closing must not close."""

    def write(self, text: str) -> None:
        sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def close(self) -> None:
        pass


def register_backends() -> None:
    """Import the backends, which register themselves by name: the protocol (engine.backend)
    knows no implementation, so the program's entry point brings them in. The process's set-up
    (engine/startup/: numba's cache, XLA's CPU devices, one per core) comes first."""
    configure()  # done already where the program started here; for a caller of main
    import backend_xla  # noqa: F401  (registers "xla")
    import engine.backends  # noqa: F401  (random)


def main(argv: list[str] | None = None, stdin=None, stdout: TextIO | None = None) -> int:
    """Console entry point: ``xlazero [--flag=value ...]`` (the command line read by
    engine/startup/cmdline.py), then the UCI session; exit code 2 on a bad flag."""
    register_backends()
    program = sys.argv[0] if argv is None else "xlazero"  # the process's, as lc0's log says it
    argv = sys.argv[1:] if argv is None else argv
    if cmdline.wants_help(argv):
        print(cmdline.help_text())
        return 0
    try:
        command = cmdline.parse(argv)
    except opts.OptionError as exc:
        print(f"xlazero: error: {exc}", file=sys.stderr)
        return 2
    out = stdout or sys.stdout
    uci = UciEngine(out, command.values, [program, *argv])
    if command.warm_up:
        start_loading(uci)
        uci.handle("isready")
        write_bytecode()
        return 0
    stream = stdin or sys.stdin.buffer
    loading = command.preload
    if command.preload:  # lc0's: the backend and the network loaded before the first command
        start_loading(uci)
        uci.controller.ready()
    for raw in stream:
        line = (raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw).strip()
        if not loading and line != "uci":
            start_loading(uci)
            loading = True
        going_on = uci.handle(line)
        if not loading:  # after uciok: the GUI reads the options while jax imports
            start_loading(uci)
            loading = True
        if not going_on:
            break
    else:
        uci.controller.stop_and_join()
    return 0


def start_loading(uci: UciEngine) -> None:
    """Import the backend's libraries (jax), then start the search's warm-up thread: both
    imports hold the GIL, so together they would only take turns; this way the warm-up runs
    while the network's programs load at ``isready``, which XLA does without the GIL (issue 41:
    0.1 s of a warm start). Called once, after the first line if it is ``uci`` (so that
    ``uciok`` does not wait for jax), else before it."""
    prepare_backend(uci.values["Backend"])
    start_warm_up()


def run(argv: list[str] | None = None) -> None:
    """The engine process: ``main`` (on ``argv``, else the command line's), then exit at once.
    Interpreter teardown (XLA's and numba's finalizers) takes most of a second, which a GUI
    would wait for after ``quit``; the search thread has stopped and the output is flushed, so
    nothing is lost."""
    configure(clean=True)  # as ``python -m engine.uci`` did before its imports (engine/startup/)
    code = main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
