"""The UCI loop: reads commands on stdin, answers on stdout (flushed per line).

The search runs on its own thread, so ``stop``, ``ponderhit`` and ``isready`` are answered while it
runs. Every ``go`` gets exactly one ``bestmove``: a legal move, or ``0000`` without a legal move or
without a network. A network that cannot be loaded is never played around: each ``go`` answers
``info string error: no network loaded: …`` and ``bestmove 0000``, which a GUI shows as the engine's
failure instead of silently weak moves. Any bad line gets ``info string error: …`` and the loop
goes on.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

import chess

import engine
from engine import options as opts
from engine.backend import load_network
from engine.search import Limits, NNCache, Search, ThinkingInfo, collector_paused, from_options
from engine.tablebase import Tablebase, TablebaseError, open_tablebases
from engine.timemgr import GoParams, TimeManager, parse_time_manager

NETS_DIR = Path(engine.__file__).resolve().parent.parent / "nets"
DEFAULT_NETWORK = NETS_DIR / opts.DEFAULT_NETWORK_FILE
UNTRAINED_KEY = "xlazero_untrained"
NETWORK_OPTIONS = ("WeightsFile", "Backend", "BackendOptions")
GO_INT_ARGS = ("wtime", "btime", "winc", "binc", "movestogo", "movetime", "nodes", "depth", "mate")


NETWORK_SUFFIXES = (".pb.gz", ".pb", ".onnx")
"""Files ``<autodiscover>`` takes for networks."""


def resolve_weights(value: str) -> Path:
    """WeightsFile value -> path: ``<default>`` is the project's shipped network, and
    ``<autodiscover>`` the newest network file in the working directory, else beside the engine
    (the repository root, then nets/), as lc0 looks in its working and binary directories."""
    if value in (opts.DEFAULT_WEIGHTS, ""):
        return DEFAULT_NETWORK
    if value == opts.AUTODISCOVER:
        for folder in (Path.cwd(), NETS_DIR.parent, NETS_DIR):
            found = [p for p in folder.iterdir()
                     if p.is_file() and p.name.endswith(NETWORK_SUFFIXES)] if folder.is_dir() else []
            if found:
                return max(found, key=lambda p: (p.stat().st_mtime, p.name))
        return Path(f"{opts.AUTODISCOVER}: no {'/'.join(NETWORK_SUFFIXES)} file in "
                    f"{Path.cwd()}, {NETS_DIR.parent} or {NETS_DIR}")
    return Path(value).expanduser()


def is_untrained(path: Path) -> bool:
    """Whether an ONNX file carries the shipped-untrained marker in its metadata."""
    if path.suffix != ".onnx":
        return False
    try:
        import onnx

        model = onnx.load(str(path), load_external_data=False)
    except Exception:
        return False
    return any(p.key == UNTRAINED_KEY and p.value == "1" for p in model.metadata_props)


class UciEngine:
    """State of one UCI session; ``handle(line)`` returns False after ``quit``."""

    def __init__(self, out: TextIO, values: dict[str, Any] | None = None) -> None:
        self.out = out
        self.values = opts.defaults()
        self.values.update(values or {})
        self._out_lock = threading.Lock()
        self._line_time = time.monotonic()  # arrival of the line being handled (see handle)
        self._log: TextIO | None = None
        self._open_log()
        self.network = None
        self._network_key: tuple | None = None
        self._load_error: str | None = None  # why the last load failed, repeated at each go
        self.search: Search | None = None
        self.tablebase: Tablebase | None = None
        self._tablebase_path = ""
        self.cache = NNCache(int(self.values["NNCacheSize"]))
        self.board = chess.Board()
        self.timemgr = TimeManager(int(self.values["MoveOverheadMs"]))
        self._thread: threading.Thread | None = None
        self._infinite_stop = threading.Event()
        self._bestmove_sent = threading.Event()
        self._go: GoParams | None = None
        self._pending_go_limits: dict | None = None

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
            self.error(f"unknown command {cmd[:80]!r}: expected one of uci, isready, setoption, "
                       "ucinewgame, position, go, stop, ponderhit, quit")
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
        if not self.searching:
            self.ensure_network()
            self.ensure_tablebase()
        self.send("readyok")

    def cmd_setoption(self, args: list[str]) -> None:
        if not args or args[0] != "name":
            raise ValueError("expected setoption name <name> [value <value>]")
        rest = args[1:]
        if "value" in rest:
            at = rest.index("value")
            name, text = " ".join(rest[:at]), " ".join(rest[at + 1:])
        else:
            name, text = " ".join(rest), ""
        try:
            option = opts.find(name)
            value = option.parse(text) if (text or option.kind == opts.STRING) else option.parse("true")
        except opts.OptionError as exc:
            self.error(str(exc))
            return
        if option.name == "TimeManager":
            try:
                parse_time_manager(value)
            except ValueError as exc:
                self.error(str(exc))
                return
        self.values[option.name] = value
        if option.name in NETWORK_OPTIONS:
            self._drop_network()
        elif option.name == "LogFile":
            self._open_log()
        elif option.name == "NNCacheSize":
            self.cache.resize(int(value))
        elif option.name == "SyzygyPath":
            self.ensure_tablebase()

    def cmd_ucinewgame(self, args: list[str]) -> None:
        self._stop_and_join()
        if self.search is not None:
            self.search.clear()
        self.cache.clear()
        self.timemgr.new_game()
        self.board = chess.Board(chess960=bool(self.values["UCI_Chess960"]))

    def cmd_position(self, args: list[str]) -> None:
        if not args:
            raise ValueError("expected position startpos|fen <FEN> [moves ...]")
        chess960 = bool(self.values["UCI_Chess960"])
        if "moves" in args:
            at = args.index("moves")
            head, moves = args[:at], args[at + 1:]
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
                raise ValueError(f"illegal move {text[:20]!r} (move {i + 1} of position); "
                                 "position unchanged") from None
            board.push(move)
        self.board = board

    def cmd_go(self, args: list[str]) -> None:
        # Every go must get its bestmove: a go during a search ends that search first (it sends
        # its own bestmove), and a malformed argument is reported and skipped, not fatal.
        if self.searching:
            self.error("go: a search is already running; stopping it first")
            self._stop_and_join()
        ints: dict[str, int] = {}
        flags = set()
        searchmoves: list[chess.Move] = []
        i = 0
        while i < len(args):
            tok = args[i]
            if tok in GO_INT_ARGS:
                value = args[i + 1] if i + 1 < len(args) else None
                try:
                    ints[tok] = int(float(value))
                    i += 2
                except (TypeError, ValueError, OverflowError):
                    self.error(f"go {tok}: expected a number, got "
                               f"{'nothing' if value is None else repr(value[:20])}; ignored")
                    # A following keyword starts the next argument; anything else was the value.
                    keyword = value is None or value in GO_INT_ARGS + ("infinite", "ponder", "searchmoves")
                    i += 1 if keyword else 2
            elif tok in ("infinite", "ponder"):
                flags.add(tok)
                i += 1
            elif tok == "searchmoves":
                i += 1
                while i < len(args) and args[i] not in GO_INT_ARGS + ("infinite", "ponder"):
                    try:
                        searchmoves.append(self.board.parse_uci(args[i]))
                    except ValueError:
                        self.error(f"go searchmoves: ignoring illegal move {args[i][:20]!r}")
                    i += 1
            else:
                self.error(f"go: unknown argument {tok[:40]!r}; ignored")
                i += 1
        go = GoParams(wtime=_nonneg(ints.get("wtime")), btime=_nonneg(ints.get("btime")),
                      winc=ints.get("winc"), binc=ints.get("binc"), movestogo=ints.get("movestogo"),
                      movetime=_nonneg(ints.get("movetime")), infinite="infinite" in flags,
                      ponder="ponder" in flags)
        self._start_search(go, ints, tuple(searchmoves))

    def cmd_stop(self, args: list[str]) -> None:
        self._infinite_stop.set()
        if self.search is not None:
            self.search.stop()

    def cmd_ponderhit(self, args: list[str]) -> None:
        if not self.searching or self._go is None or not self._go.ponder:
            return
        go = GoParams(**{**self._go.__dict__, "ponder": False})
        limits = self._make_limits(go, self._pending_go_limits or {}, ())
        self._go = go
        self.search.ponderhit(limits)

    def cmd_quit(self, args: list[str]) -> bool:
        self._stop_and_join()
        return False

    # ------------------------------------------------------------------------------------- search
    @property
    def searching(self) -> bool:
        """A search whose bestmove is not sent yet (a finished thread may still be exiting)."""
        if self._thread is None:
            return False
        if self._bestmove_sent.is_set():
            self._thread.join()
            self._thread = None
            return False
        return self._thread.is_alive()

    def _stop_and_join(self) -> None:
        if self.searching:
            self.cmd_stop([])
            self._thread.join()
            self._thread = None

    def _drop_network(self) -> None:
        """Forget the network with everything computed by it: the tree and the NN cache."""
        self._stop_and_join()
        if self.search is not None:
            self.search.close()
        self.network = None
        self.search = None
        self._network_key = None
        self.cache.clear()

    def ensure_network(self) -> bool:
        """Load the network named by the options if needed; report failures as info string."""
        key = tuple(self.values[k] for k in NETWORK_OPTIONS)
        if self.network is not None and key == self._network_key:
            return True
        self._drop_network()
        path = resolve_weights(self.values["WeightsFile"])
        backend = self.values["Backend"]
        if backend == "random":
            import engine.backends  # noqa: F401  (registers the random backend)
        elif not path.exists():
            return self._load_failed(f"cannot load network {path}: file not found")
        try:
            self.network = load_network(str(path), self.values["BackendOptions"], backend=backend)
        except Exception as exc:
            return self._load_failed(f"cannot load network {path} with backend {backend}: "
                                     f"{type(exc).__name__}: {exc}")
        self._network_key = key
        self._load_error = None
        name = getattr(self.network, "name", path.name)
        self.send(f"info string loaded network {name} ({path}) with backend {backend}")
        for line in getattr(self.network, "describe", lambda: [])():
            self.send(f"info string {line}")
        if backend != "random" and is_untrained(path):
            self.send(f"info string network {path.name} is untrained (random weights): "
                      "its moves are not meaningful; set WeightsFile to a trained network")
        return True

    def ensure_tablebase(self) -> None:
        """Open the Syzygy tables of SyzygyPath if it changed; a bad path is reported and the
        engine goes on without tables."""
        path = str(self.values["SyzygyPath"])
        if path == self._tablebase_path:
            return
        self._stop_and_join()
        if self.tablebase is not None:
            self.tablebase.close()
        self.tablebase, self._tablebase_path = None, path
        try:
            self.tablebase = open_tablebases(path)
        except TablebaseError as exc:
            self.error(str(exc))
            return
        if self.tablebase is not None:
            self.send(f"info string Syzygy tablebases: {self.tablebase.tables} tables, up to "
                      f"{self.tablebase.max_pieces} pieces, from {path}")

    def _load_failed(self, message: str) -> bool:
        self._load_error = message
        self.error(message)
        return False

    def _make_limits(self, go: GoParams, ints: dict, searchmoves: tuple) -> Limits:
        budget = self.timemgr.budget_ms(go, self.board.turn == chess.BLACK, self.board.ply())
        return Limits(nodes=ints.get("nodes"), time_ms=budget, depth=ints.get("depth"),
                      mate=ints.get("mate"), infinite=go.infinite or go.ponder,
                      searchmoves=searchmoves, started_at=self._line_time)

    def _start_search(self, go: GoParams, ints: dict, searchmoves: tuple) -> None:
        self._infinite_stop.clear()
        self._bestmove_sent.clear()
        self.timemgr.move_overhead_ms = int(self.values["MoveOverheadMs"])
        try:
            self.timemgr.params = parse_time_manager(self.values["TimeManager"])
        except ValueError as exc:
            self.error(str(exc))
        board = self.board.copy()
        self._go = go
        self._pending_go_limits = ints
        ok = self.ensure_network()
        if ok:
            params = from_options(self.values)
            if self.search is None:
                self.search = Search(self.network, params, self.cache)
            self.ensure_tablebase()
            self.search.params = params
            self.search.tablebase = self.tablebase
            self.cache.resize(params.nn_cache_size)
        limits = self._make_limits(go, ints, searchmoves)
        clock_budget = limits.time_ms if go.movetime is None else None
        self._thread = threading.Thread(target=self._search_thread, name="search", daemon=True,
                                        args=(board, limits, go, clock_budget if ok else None, ok))
        self._thread.start()

    def _search_thread(self, board: chess.Board, limits: Limits, go: GoParams,
                       clock_budget: float | None, ok: bool) -> None:
        # The collector stays paused until bestmove is out: resuming it costs tens of ms.
        with collector_paused():
            self._search_and_answer(board, limits, go, clock_budget, ok)

    def _search_and_answer(self, board: chess.Board, limits: Limits, go: GoParams,
                           clock_budget: float | None, ok: bool) -> None:
        start = limits.started_at
        best = ponder = None
        try:
            if not ok:
                self.error(f"no network loaded: {self._load_error}; set WeightsFile (and "
                           "Backend, BackendOptions) to a network that loads")
            elif any(board.legal_moves):
                search = self.search
                search.set_position(board)
                result = search.run(
                    limits, on_info=lambda infos: self._send_infos(board, infos),
                    on_verbose=lambda lines: [self.send(f"info string {ln}") for ln in lines],
                    verbose=bool(self.values["VerboseMoveStats"]),
                    live_stats=bool(self.values["LogLiveStats"]))
                best, ponder = result.bestmove, result.ponder
        except Exception as exc:
            self.error(f"search failed: {type(exc).__name__}: {exc}")
        if not ok:
            best = ponder = None  # bestmove 0000: a GUI must not take this for play
        elif best is None or best not in board.legal_moves:
            best, ponder = next(iter(board.legal_moves), None), None
        if limits.infinite and not self._infinite_stop.is_set():
            # UCI: no bestmove before stop in infinite/ponder mode (ponderhit turns limits finite).
            while not self._infinite_stop.is_set() and self._go is not None and (
                    self._go.infinite or self._go.ponder):
                self._infinite_stop.wait(0.01)
        if self._go is not None and not (self._go.infinite or self._go.ponder):
            self.timemgr.search_done(clock_budget, (time.monotonic() - start) * 1000.0)
        line = self._bestmove_line(board, best, ponder)
        self._bestmove_sent.set()  # the thread only sends this line and exits
        self.send(line)

    def _bestmove_line(self, board: chess.Board, best: chess.Move | None, ponder: chess.Move | None) -> str:
        if best is None:
            return "bestmove 0000"
        chess960 = bool(self.values["UCI_Chess960"])
        line = f"bestmove {board.uci(best, chess960=chess960)}"
        if ponder is not None:
            after = board.copy(stack=False)
            after.push(best)
            if ponder in after.legal_moves:
                line += f" ponder {after.uci(ponder, chess960=chess960)}"
        return line

    def _send_infos(self, board: chess.Board, infos: list[ThinkingInfo]) -> None:
        for info in infos:
            self.send(self.format_info(board, info))

    def format_info(self, board: chess.Board, info: ThinkingInfo) -> str:
        parts = [f"info depth {info.depth} seldepth {info.seldepth} time {info.time_ms} nodes {info.nodes}"]
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
            chess960 = bool(self.values["UCI_Chess960"])
            b = board.copy(stack=False)
            moves = []
            for move in info.pv:
                if move not in b.legal_moves:
                    break
                moves.append(b.uci(move, chess960=chess960))
                b.push(move)
            parts.append("pv " + " ".join(moves))
        return " ".join(parts)


class _StderrLog:
    """LogFile=<stderr>: the dialogue on standard error, which closing must not close."""

    def write(self, text: str) -> None:
        sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def close(self) -> None:
        pass


def _nonneg(value: int | None) -> int | None:
    return None if value is None else max(0, value)


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


def main(argv: list[str] | None = None, stdin=None, stdout: TextIO | None = None) -> int:
    """Console entry point: ``xlazero [--flag=value ...]``; exit code 2 on a bad flag."""
    from backend_xla.devices import configure_host_devices  # before anything imports jax:
    configure_host_devices()  # one XLA CPU device per core, so backend_xla splits batches over them
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
        uci._stop_and_join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
