"""``bin/check/soak uci``: hostile UCI lines and rapid command interleavings against
``bin/xlazero --backend=random``. Each case is a batch of lines, then a sync (``stop``,
``isready``); it passes if the engine is alive, answered every ``isready`` with ``readyok``, and
every ``go`` with one ``bestmove`` legal in the position it searched (followed with
python-chess, parsing ``position`` as the engine does). The last case of a run is ``quit``: the
process must exit within 1 s."""

from __future__ import annotations

import random
import time
from typing import Any

import chess

from .soak_common import CaseLog, Deadline, Pipe, engine_command, run_cases, short

SKIP_OPTIONS = {"uci_chess960", "weightsfile", "backend", "backendoptions", "logfile", "syzygypath"}
"""Options the fuzzer leaves alone: they change how positions parse, load a real network, or
write files; the rest get hostile and valid values."""
SYNC_S = 20.0
GO_WORDS = ("wtime", "btime", "winc", "binc", "movestogo", "movetime", "nodes", "depth", "mate")
HUGE = ("9" * 30, "-" + "9" * 30, "1e400", "nan", "inf", "-inf", "2147483648", "-1", "0x10",
        "18446744073709551617", "-0", "1e-9", "٣")  # fmt: skip
UNICODE = ("é", "♞", "\u2028", "\x85", "\u200b", "\ufeff", "𝕏", "\x00", "\x1b[2J", "\t", "\r")


class Tracker:
    """The position the engine holds, updated from the lines sent as engine.uci parses them."""

    def __init__(self) -> None:
        self.board = chess.Board()
        self.pending: list[chess.Board] = []  # boards of the gos not yet answered
        self.isready = 0

    def sent(self, line: str | bytes) -> None:
        text = line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line
        tokens = text.strip().split()
        if not tokens:
            return
        cmd, args = tokens[0], tokens[1:]
        if cmd == "isready":
            self.isready += 1
        elif cmd == "ucinewgame":
            self.board = chess.Board()
        elif cmd == "position" and args:
            try:
                self.board = parse_position(args)
            except Exception:
                pass
        elif cmd == "go":
            self.pending.append(self.board.copy(stack=False))


def parse_position(args: list[str]) -> chess.Board:
    """engine.uci's ``position`` parsing, re-stated (raises where the engine keeps the old one)."""
    at = args.index("moves") if "moves" in args else len(args)
    head, moves = args[:at], args[at + 1 :]
    if head[0] == "startpos" and len(head) == 1:
        board = chess.Board()
    elif head[0] == "fen" and len(head) > 1:
        board = chess.Board(" ".join(head[1:]))
        if board.status() & ~(chess.STATUS_BAD_CASTLING_RIGHTS | chess.STATUS_INVALID_EP_SQUARE):
            raise ValueError("invalid position")
    else:
        raise ValueError("bad position")
    for text in moves:
        board.push(board.parse_uci(text))
    return board


# ------------------------------------------------------------------------------ generators
def random_game(rng: random.Random, plies: int) -> tuple[chess.Board, list[str]]:
    board, moves = chess.Board(), []
    for _ in range(plies):
        legal = list(board.legal_moves)
        if not legal:
            break
        move = rng.choice(legal)
        moves.append(move.uci())
        board.push(move)
    return board, moves


def position_line(rng: random.Random) -> str:
    board, moves = random_game(rng, rng.randrange(0, 80))
    if rng.random() < 0.5:
        return "position startpos" + (" moves " + " ".join(moves) if moves else "")
    return f"position fen {board.fen()}"


def go_line(rng: random.Random, infinite_ok: bool = True) -> str:
    kind = rng.random()
    if kind < 0.3:
        return f"go nodes {rng.choice((1, 2, 10, 100, 1000))}"
    if kind < 0.5:
        return f"go movetime {rng.choice((1, 5, 20, 50))}"
    if kind < 0.7:
        return "go wtime {} btime {} winc {} binc {}".format(
            *(rng.choice((0, 1, 10, 100, 1000, 60000)) for _ in range(4))
        )
    if kind < 0.85 or not infinite_ok:
        return "go ponder movetime 50" if rng.random() < 0.5 else "go ponder nodes 500"
    return "go infinite"


def hostile_line(rng: random.Random, options: list[str], big_left: list[int]) -> str | bytes:
    """One malformed or extreme line (never ``quit``)."""
    r = rng.random()
    if r < 0.08 and big_left[0] > 0:
        big_left[0] -= 1
        filler = rng.choice(("e2e4 ", "x", "♞", "go ", "depth 1 ", "moves "))
        head = rng.choice(
            ("position startpos moves ", "go ", "setoption name ", "", "position fen ")
        )
        return (head + filler * ((1 << 20) // len(filler.encode()))).rstrip()
    if r < 0.25:
        return _bad_position(rng)
    if r < 0.45:
        return _bad_go(rng)
    if r < 0.6:
        return _bad_setoption(rng, options)
    if r < 0.7:
        return rng.randbytes(rng.randrange(1, 200)).replace(b"\n", b" ")
    if r < 0.8:
        word = rng.choice(("isready", "uci", "stop", "ponderhit", "ucinewgame", "debug on", "go"))
        return rng.choice(UNICODE) + word + rng.choice(UNICODE) + rng.choice(UNICODE)
    if r < 0.9:
        return rng.choice(("isready", "stop", "ponderhit", "ucinewgame", "uci", "register later"))
    return position_line(rng) if rng.random() < 0.5 else go_line(rng)


def _bad_position(rng: random.Random) -> str:
    board, moves = random_game(rng, rng.randrange(0, 30))
    fen = board.fen()
    choices = [
        "position",
        "position moves e2e4",
        "position startpos moves",
        "position startpos moves e2e5",
        "position startpos moves " + " ".join(moves) + " a1a1",
        "position startpos moves 0000 " + " ".join(moves[:3]),
        "position startpos extra",
        "position fen",
        "position fen " + fen[: rng.randrange(len(fen))],
        "position fen 8/8/8/8/8/8/8/8 w - - 0 1",
        "position fen k7/8/8/8/8/8/8/7K w - - 0 1 moves h1h2",
        "position fen 7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",
        "position fen 7k/6Q1/6K1/8/8/8/8/8 b - - 0 1",
        "position fen KKKKKKKK/8/8/8/8/8/8/kkkkkkkk w - - 0 1",
        "position fen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e3 0 1",
        "position fen " + fen.replace(" w ", " x "),
        "position startpos moves " + " ".join(moves) + " " + rng.choice(UNICODE),
        "position startpos moves e2e4 " + rng.choice(HUGE),
        "position fen " + fen + " moves " + " ".join(rng.choice(("e7e8q", "e2e4", "a7a8n"))),
    ]
    return rng.choice(choices)


def _bad_go(rng: random.Random) -> str:
    words = [rng.choice(GO_WORDS + ("infinite", "ponder", "searchmoves", "bogus", "-1"))
             for _ in range(rng.randrange(1, 6))]  # fmt: skip
    parts = ["go"]
    for w in words:
        parts.append(w)
        if w in GO_WORDS and rng.random() < 0.8:
            parts.append(rng.choice(HUGE + ("10", "0", "", "abc", "1.5")))
        elif w == "searchmoves":
            parts.extend(rng.sample(["e2e4", "a1a1", "e7e5", "0000", "g1f3", "zz"], 3))
    line = " ".join(p for p in parts if p)
    if (
        "infinite" not in parts
        and "ponder" not in parts
        and not any(w in parts for w in ("nodes", "movetime", "depth", "wtime", "btime"))
    ):
        line += " nodes 50"  # ends by itself too (the sync stops any other)
    return line


def _bad_setoption(rng: random.Random, options: list[str]) -> str:
    name = rng.choice(options + ["NoSuchOption", "", "name", "value", "♞"])
    value = rng.choice(HUGE + ("", "true", "false", "maybe", "x" * 1000, "1,5", "0", "1") + UNICODE)
    form = rng.randrange(4)
    if form == 0:
        return f"setoption name {name} value {value}"
    if form == 1:
        return f"setoption name {name}"
    if form == 2:
        return f"setoption {name} {value}"
    return f"setoption name {name} value"


def interleaving(rng: random.Random) -> list[str]:
    """A rapid burst of go/stop/ponderhit/ucinewgame/position, sent without waiting."""
    lines: list[str] = []
    for _ in range(rng.randrange(3, 25)):
        r = rng.random()
        if r < 0.3:
            lines.append(go_line(rng))
        elif r < 0.5:
            lines.append("stop")
        elif r < 0.65:
            lines.append("ponderhit")
        elif r < 0.75:
            lines.append("ucinewgame")
        elif r < 0.92:
            lines.append(position_line(rng))
        else:
            lines.append("isready")
    return lines


def is_quit(line: str | bytes) -> bool:
    """Whether the engine would read ``line`` as ``quit`` (which ends the session)."""
    text = line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line
    return text.strip().split()[:1] == ["quit"]


# ------------------------------------------------------------------------------ checking
class UciSoak:
    def __init__(self, engine_args: list[str]) -> None:
        self.engine_args = ["--backend=random", *engine_args]
        self.pipe: Pipe | None = None
        self.options: list[str] = []
        self.tracker = Tracker()

    def start(self) -> Pipe:
        if self.pipe is None or not self.pipe.alive():
            self.pipe = Pipe(engine_command(self.engine_args))
            self.pipe.send("uci", "isready")
            state, lines = self.pipe.read_until(lambda ln: ln == "readyok", 300)
            if state != "ok":
                raise RuntimeError(f"engine did not start ({state}): {lines[-3:]}")
            names = [ln.split(" type ")[0][len("option name ") :] for ln in lines if " type " in ln]
            self.options = [n for n in names if n.lower() not in SKIP_OPTIONS]
            self.tracker = Tracker()
        return self.pipe

    def case(self, lines: list[str | bytes]) -> dict[str, Any]:
        pipe = self.start()
        tr = self.tracker
        tr.isready = 0
        for line in lines:
            tr.sent(line)
            if not pipe.send(line):
                break
        tr.sent("stop")
        tr.sent("isready")
        pipe.send("stop", "isready")
        counts = {"lines": len(lines), "gos": len(tr.pending), "readyok": 0, "bestmoves": 0}
        out: list[str] = []
        problems: list[str] = []
        deadline = time.monotonic() + SYNC_S
        state = "ok"
        while counts["readyok"] < tr.isready or tr.pending:
            state, got = pipe.read_until(
                lambda ln: ln == "readyok" or ln.startswith("bestmove"),
                max(deadline - time.monotonic(), 0.0),
            )
            out += got
            if state != "ok":
                break
            if got[-1] == "readyok":
                counts["readyok"] += 1
            else:
                counts["bestmoves"] += 1
                problems += self._check_bestmove(got[-1])
        fields: dict[str, Any] = {"counts": counts}
        if state == "eof":
            fields["outcome"] = "crash"
        elif state == "timeout":
            fields["outcome"] = "no_readyok" if counts["readyok"] < tr.isready else "no_bestmove"
        elif problems:
            fields["outcome"] = "illegal_bestmove"
            fields["problems"] = problems[:5]
        else:
            fields["outcome"] = "ok"
        if fields["outcome"] != "ok":
            fields["lines_sent"] = [short(repr(ln), 200) for ln in lines]
            fields["tail"] = [short(ln, 200) for ln in out[-8:]]
            if self.pipe is not None:
                self.pipe.kill()
            self.pipe = None
        return fields

    def _check_bestmove(self, line: str) -> list[str]:
        tr = self.tracker
        if not tr.pending:
            return [f"unexpected {line!r}: no go pending"]
        board = tr.pending.pop(0)
        words = line.split()
        best = words[1] if len(words) > 1 else ""
        legal = {m.uci() for m in board.legal_moves}
        if not legal:
            return [] if best == "0000" else [f"{line!r} in a position without moves {board.fen()}"]
        if best not in legal:
            return [f"{line!r} not legal in {board.fen()}"]
        if len(words) > 3 and words[2] == "ponder":
            after = board.copy(stack=False)
            after.push_uci(best)
            if words[3] not in {m.uci() for m in after.legal_moves}:
                return [f"{line!r}: ponder move not legal after it in {board.fen()}"]
        return []

    def quit_case(self) -> dict[str, Any]:
        pipe = self.start()
        pipe.send("position startpos", "go infinite")
        time.sleep(0.2)
        took = pipe.quit(timeout=1.0)
        self.pipe = None
        if took is None:
            return {"outcome": "slow_quit", "quit_s": None}
        return {"outcome": "ok", "quit_s": round(took, 3)}

    def close(self) -> None:
        if self.pipe is not None:
            self.pipe.quit(timeout=5)
            self.pipe = None


INTERLEAVING_BASE = 1_000_000
"""Case indices: hostile-line batches from 0, interleavings from here, quit at -1 (so a rerun
with larger counts keeps the indices of the cases already done)."""


def run_uci(args: Any, log: CaseLog, deadline: Deadline) -> tuple[int, bool]:
    """Batches of ``args.batch`` hostile lines (``args.count`` lines in all), one case per
    interleaving, and last quit during a search."""
    batches = -(-args.count // args.batch)
    indices = [*range(batches), *range(INTERLEAVING_BASE, INTERLEAVING_BASE + args.interleavings)]
    indices.append(-1)
    soak = UciSoak(args.engine_args)

    def one(index: int) -> dict[str, Any]:
        rng = random.Random(f"{args.seed}:{index}")
        if index == -1:
            return {"case": "quit", **soak.quit_case()}
        if index < INTERLEAVING_BASE:
            n = min(args.batch, args.count - index * args.batch)
            big = [args.big_lines]
            lines = [hostile_line(rng, soak.options or ["Threads"], big) for _ in range(n)]
            lines = [ln for ln in lines if not is_quit(ln)]
            return {"case": "lines", **soak.case(lines)}
        return {"case": "interleaving", **soak.case(list(interleaving(rng)))}

    try:
        soak.start()
        complete = run_cases(log, indices, deadline, one)
    finally:
        soak.close()
    return len(indices), complete
