"""``bin/check/soak`` (its --help says what each kind checks): one UCI driver, one resumable
JSON-lines job and its report, and the three kinds. A kind is a context manager, ``with
kind(args, workdir) as (indices, one)``: ``one(index)`` runs a case and returns its JSON fields,
an ``outcome`` among them (a failure unless in OK)."""

from __future__ import annotations

import ctypes
import gzip
import json
import os
import queue
import random
import re
import shutil
import struct
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import chess

from .uci_pipe import ROOT, Engine

ENGINE = ROOT / "bin" / "xlazero"
OK = frozenset({"ok", "ok_loaded", "ok_refused", "opponent_abnormal"})
Kind = Iterator[tuple[Iterable[int], Callable[[int], dict[str, Any]]]]


def rss_bytes(pid: int, field: str = "VmRSS") -> int:
    """A process's resident memory (VmRSS) or its peak (VmHWM), from /proc; 0 once it is gone."""
    with suppress(OSError), open(f"/proc/{pid}/status") as f:
        return next((int(ln.split()[1]) * 1024 for ln in f if ln.startswith(field + ":")), 0)
    return 0


class Driver(Engine):
    """``bin/xlazero ARGS`` on a pipe, its stderr dropped."""

    def __init__(self, args: Iterable[str]) -> None:
        super().__init__([str(ENGINE), *args], dict(os.environ), stderr=subprocess.DEVNULL)

    def ask(
        self, lines: Iterable[str | bytes], readyoks: int, bestmoves: int, timeout: float
    ) -> tuple[str, list[str]]:
        """Send ``lines`` (bytes as they are); read until ``readyoks`` readyok and ``bestmoves``
        bestmove lines have come: ("ok" | "timeout" | "eof", the lines read)."""
        data = b"".join((ln.encode() if isinstance(ln, str) else ln) + b"\n" for ln in lines)
        with suppress(OSError, ValueError):  # a closed pipe: the engine died, read to the end
            self.proc.stdin.buffer.write(data)  # type: ignore[union-attr]
            self.proc.stdin.buffer.flush()  # type: ignore[union-attr]
        need, end = {"readyok": readyoks, "bestmove": bestmoves}, time.monotonic() + timeout
        out: list[str] = []
        while need["readyok"] > 0 or need["bestmove"] > 0:
            try:
                _, line = self.lines.get(timeout=max(end - time.monotonic(), 0.0))
            except queue.Empty:
                return "timeout", out
            with suppress(subprocess.TimeoutExpired):
                if line == "" and self.proc.wait(timeout=1) is not None:
                    return "eof", out
            out.append(line)
            need[line.split(" ")[0]] = need.get(line.split(" ")[0], 0) - 1
        return "ok", out

    def close(self, timeout: float = 5.0) -> float | None:
        """``quit``: the seconds until the process exited; None if killed after ``timeout``."""
        t0 = time.monotonic()
        self.ask(["quit"], 0, 0, 0)
        with suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=timeout)
            return time.monotonic() - t0
        self.proc.kill()
        return None


def run_job(args: Any, job: tuple[Iterable[int], Callable[[int], dict[str, Any]]]) -> int:
    """Run the cases ``args.log`` lacks (this kind and seed), a JSON line each, for at most
    ``args.max_minutes``; then print the count of each outcome in the log. 1 if any failed."""
    records, (indices, one) = [], job
    for line in args.log.read_text(encoding="utf-8").splitlines() if args.log.exists() else []:
        with suppress(ValueError):  # a line cut by a kill: that case runs again
            rec = json.loads(line)
            records += [rec] if (rec.get("kind"), rec.get("seed")) == (args.kind, args.seed) else []
    done, wanted = {rec["index"] for rec in records}, list(indices)
    end, left = time.monotonic() + 60 * args.max_minutes, [i for i in wanted if i not in done]
    with args.log.open("a", encoding="utf-8") as f:
        while left and time.monotonic() < end:
            t0, index = time.monotonic(), left.pop(0)
            rec = {"kind": args.kind, "seed": args.seed, "index": index, **one(index)}
            rec.setdefault("s", round(time.monotonic() - t0, 3))
            print(json.dumps(rec, default=str), file=f, flush=True)
            records.append(rec)
            if rec["outcome"] not in OK:
                print(f"FAIL {args.kind} case {index}: {json.dumps(rec, default=str)[:600]}")
    counts = Counter(rec["outcome"] for rec in records)
    extra = sum((Counter(rec.get("counts", {})) for rec in records), Counter())
    print(f"soak {args.kind} seed {args.seed}: {len(wanted) - len(left)} of {len(wanted)} done")
    for key, n in sorted(counts.items()) + sorted((f"[{k}]", n) for k, n in extra.items()):
        print(f"  {key:<24} {n:6d}" + ("" if key in OK or key[0] == "[" else "   <- failure"))
    if left:
        print("  incomplete: the time limit ended this job; rerun the same command to resume")
    failures = sum(n for outcome, n in counts.items() if outcome not in OK)
    print(f"  failures: {failures}")
    return int(failures > 0)


# ------------------------------------------------------------------------------------- networks
ZOO = "zoo/bt-e32h2-pemap-relu-ffnswish-smolgennone-valclassical-nomlh"
SOURCES = [path / f"{net}{suffix}" for path, net in ((ROOT / "nets", "xlazero-sf6x64"),
           (ROOT.parent / "shared/lc0", ZOO), (ROOT.parent / "shared/lc0", "maia/maia-1100"))
           for suffix in (".onnx", ".pb.gz")]  # fmt: skip
HANG_S, MAX_RSS_MB = 60.0, 4096  # a case's time (start, load, go nodes 1), the peak RSS
ONNX_ONLY = ("wrong_shape", "wrong_op", "huge_dims", "drop_output", "bitflip_weights",
             "external_dotdot", "external_abs", "external_etc", "external_symlink",
             "external_inside", "external_sparse")  # fmt: skip
PB_ONLY = ("bitflip_inner", "truncate_inner", "garbage_inner")
MUTATIONS = ("truncate", "bitflip", "empty", "garbage", "gzip_bomb", "wrong_suffix", *ONNX_ONLY,
             *PB_ONLY)  # fmt: skip


class Watch:
    """inotify on the sentinel files: those opened or read since the last ``take``."""

    def __init__(self, paths: list[Path]) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK)
        self.names = {libc.inotify_add_watch(self.fd, str(p).encode(), 0x21): str(p) for p in paths}

    def take(self) -> list[str]:
        seen: set[str] = set()
        with suppress(BlockingIOError):  # no more events
            while data := os.read(self.fd, 1 << 16):  # events of files: 16 bytes, no name
                seen |= {self.names.get(wd, "?") for wd, *_ in struct.iter_unpack("iIII", data)}
        return sorted(seen)


def flip(data: bytes, rng: random.Random, n: int) -> bytes:
    buf = bytearray(data)
    for _ in range(n):
        buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
    return bytes(buf)


def make_network(
    rng: random.Random, only: tuple[str, ...], folder: Path, outside: Path, bomb_mb: int
) -> tuple[str, Path, dict[str, Any]]:
    """A corrupt network in ``folder``: its mutation, path, and what the answer must do:
    ``refuse`` it (an escape: loaded, it was read), name a ``node`` and its op."""
    mutation = rng.choice(only)
    suffix = ".onnx" if mutation in ONNX_ONLY else ".pb.gz" if mutation in PB_ONLY else ""
    src = rng.choice([p for p in SOURCES if p.is_file() and p.name.endswith(suffix)])
    data, path, size = src.read_bytes(), folder / src.name, rng.choice((16, bomb_mb))
    n = rng.randrange(1, 1 << 16)
    inner = gzip.decompress(data) if mutation in PB_ONLY else b""
    must: dict[str, Any] = {}
    if mutation in ("gzip_bomb", "wrong_suffix"):
        path = folder / (src.name.split(".")[0] + (".onnx" if src.suffix == ".gz" else ".pb.gz"))
    write = {
        "truncate": lambda: data[: rng.randrange(len(data))],
        "bitflip": lambda: flip(data, rng, rng.choice((1, 2, 8, 64))),
        "empty": lambda: b"",
        "garbage": lambda: rng.choice((b"", b"\x1f\x8b", b"\x08\x07")) + rng.randbytes(n),
        "gzip_bomb": lambda: gzip.compress(b"\0" * (16 << 20), 9) * max(1, size // 16),
        "wrong_suffix": lambda: data,
        "bitflip_inner": lambda: gzip.compress(flip(inner, rng, rng.choice((1, 4, 32))), 1),
        "truncate_inner": lambda: gzip.compress(inner[: rng.randrange(len(inner))], 1),
        "garbage_inner": lambda: gzip.compress(rng.randbytes(n), 1),
    }
    if mutation in write:
        path.write_bytes(write[mutation]())
        return mutation, path, must
    import onnx
    from onnx.external_data_helper import set_external_data

    model = onnx.load(str(src), load_external_data=False)
    t = rng.choice([t for t in model.graph.initializer if t.raw_data] or model.graph.initializer)
    dims = list(t.dims) or [1]
    dims[rng.randrange(len(dims))] += rng.choice((1, 5))
    if mutation in ("wrong_shape", "huge_dims"):
        huge = [[1 << 31, 1 << 31], [1 << 62], [-1, 7], [0], [1 << 20] * 4]
        t.ClearField("dims")
        t.dims.extend(rng.choice(huge if mutation == "huge_dims" else [[*dims, 3], dims[1:], dims]))
        for d in model.graph.input[0].type.tensor_type.shape.dim if mutation == "huge_dims" else []:
            d.dim_value = rng.choice((d.dim_value, 1 << 40))
    elif mutation == "wrong_op":
        node = rng.choice(model.graph.node)
        node.op_type = rng.choice(("FooBar", "Conv", "Softmax", "Loop", "If", "", "Identity"))
        node.domain = "com.example.evil" if rng.random() < 0.3 else node.domain
        must["node"] = True
    elif mutation == "drop_output":
        del model.graph.output[rng.randrange(len(model.graph.output))]
    elif mutation == "bitflip_weights" and t.raw_data:
        t.raw_data = flip(t.raw_data, rng, rng.choice((1, 16)))
    elif mutation.startswith("external_"):  # at a hostile place (refused), beside, huge and sparse
        where = {
            "external_dotdot": rng.choice(("../secret", "sub/../../secret")),
            "external_abs": str(outside),
            "external_etc": rng.choice(("/etc/passwd", "/proc/self/environ", "/dev/zero")),
        }.get(mutation, mutation[9:] + ".bin")  # fmt: skip
        must["refuse"] = mutation not in ("external_inside", "external_sparse")
        length = rng.choice((None, len(t.raw_data))) if mutation != "external_sparse" else None
        if mutation == "external_symlink":
            (folder / where).symlink_to(outside)
        elif mutation == "external_inside":
            (folder / where).write_bytes(t.raw_data)
        elif mutation == "external_sparse":  # and no length: is all of it read?
            with open(folder / where, "wb") as f:
                f.truncate(size << 20)
        set_external_data(t, where, length=length)
        t.ClearField("raw_data")
    path.write_bytes(model.SerializeToString())
    return mutation, path, must


def judge_network(lines: list[str], path: Path, must: dict[str, Any], fields: dict) -> str:
    """The outcome of an answer that came (a network loaded or refused); ``fields`` added to."""
    best = (next((ln for ln in lines if ln.startswith("bestmove")), "").split() + ["", ""])[1]
    errors = [ln for ln in lines if ln.startswith("info string error")]
    fields["error"] = errors[0][:400] if errors else None
    if any(ln.startswith("info string loaded network") for ln in lines):
        if must.get("refuse"):
            return "escape_loaded"
        return "ok_loaded" if best in {m.uci() for m in chess.Board().legal_moves} else "bad_move"
    node = re.compile(r"node '.*'.*\bop\b" if must.get("node") else "")  # "node 'N' (op T)"
    if not any(path.name in ln and node.search(ln) for ln in errors):
        return "unclear_error"
    return "ok_refused" if best == "0000" else "bad_move"


@contextmanager
def networks(args: Any, workdir: Path) -> Kind:
    only = tuple(m for m in args.mutations.split(",") if m) or MUTATIONS
    if set(only) - set(MUTATIONS) or not any(p.is_file() for p in SOURCES):
        raise SystemExit(f"soak networks: mutations {MUTATIONS}; needs one of {SOURCES}")
    folders, outside = workdir / "cases", workdir / "outside" / "secret"
    sentinels = [folders / "secret", outside]  # ../secret of a case's folder, and an absolute one
    for sentinel in sentinels:
        sentinel.parent.mkdir(parents=True)
        sentinel.write_bytes(b"SECRET " * 1000)
    watch = Watch(sentinels)
    Driver(["--backend=random"]).ask(["uci", "isready", "quit"], 1, 0, 300)  # compiles the search

    def one(index: int) -> dict[str, Any]:
        rng, folder = random.Random(f"{args.seed}:{index}"), folders / f"case-{index}"
        folder.mkdir()
        mutation, path, must = make_network(rng, only, folder, outside, args.bomb_mb)
        watch.take()
        driver = Driver(args.engine_args)
        lines = ["uci", f"setoption name WeightsFile value {path}", "isready", "position startpos"]
        state, out = driver.ask([*lines, "go nodes 1"], 1, 1, HANG_S)
        fields: dict[str, Any] = {"mutation": mutation, "source": path.name, "outcome": "ok"}
        fields["peak_rss_mb"] = rss_bytes(driver.proc.pid, "VmHWM") >> 20
        driver.close()
        if state != "ok":
            fields.update(outcome="crash" if state == "eof" else "hang", tail=out[-5:])
        elif opened := watch.take():
            fields.update(outcome="read_outside", opened=opened)
        elif fields["peak_rss_mb"] > MAX_RSS_MB:
            fields["outcome"] = "memory"
        else:
            fields["outcome"] = judge_network(out, path, must, fields)
        shutil.rmtree(folder, ignore_errors=True)
        return fields

    try:
        yield range(args.count), one
    finally:
        os.close(watch.fd)


# ------------------------------------------------------------------------------------------ uci
BATCH, BURSTS = 25, 1_000_000  # lines a case; the first burst's index, far off (-1: quit)
SKIP_OPTIONS = {"uci_chess960", "weightsfile", "backend", "backendoptions", "logfile", "syzygypath"}
"""Options left alone: they change how positions parse, load a network or write files."""
GO_WORDS = ("wtime", "btime", "winc", "binc", "movestogo", "movetime", "nodes", "depth", "mate")
HUGE = ("9" * 30, "-" + "9" * 30, "1e400", "nan", "inf", "-inf", "2147483648", "-1", "0x10",
        "18446744073709551617", "-0", "1e-9", "٣")  # fmt: skip
UNICODE = ("é", "♞", "\u2028", "\x85", "\u200b", "\ufeff", "𝕏", "\x00", "\x1b[2J", "\t", "\r")
ACCEPTED = chess.STATUS_BAD_CASTLING_RIGHTS | chess.STATUS_INVALID_EP_SQUARE
"""The flaws of a FEN that engine.uci accepts (it refuses any other)."""
WORDS = ("isready", "stop", "ponderhit", "ucinewgame", "uci", "register later", "debug on", "go")


def is_quit(line: str | bytes) -> bool:
    """Whether the engine would read ``line`` as ``quit`` (which ends the session)."""
    text = line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line
    return text.strip().split()[:1] == ["quit"]


class Tracker:
    """The engine's position from the lines sent (parsed as engine.uci does); the gos unanswered."""

    def __init__(self) -> None:
        self.board, self.isready = chess.Board(), 0
        self.pending: list[chess.Board] = []

    def sent(self, line: str | bytes) -> None:
        text = line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line
        cmd, *args = text.strip().split() or [""]
        self.isready += cmd == "isready"
        if cmd == "ucinewgame":
            self.board = chess.Board()
        elif cmd == "go":
            self.pending.append(self.board.copy(stack=False))
        elif cmd == "position":  # a position the engine refuses leaves the one it had
            at = args.index("moves") if "moves" in args else len(args)
            head, moves = args[:at], args[at + 1 :]
            if head != ["startpos"] and (head[:1] != ["fen"] or len(head) < 2):
                return
            with suppress(Exception):
                board = chess.Board(" ".join(head[1:])) if head[0] == "fen" else chess.Board()
                if board.status() & ~ACCEPTED:
                    return
                for move in moves:
                    board.push(board.parse_uci(move))
                self.board = board

    def answered(self, line: str) -> list[str]:
        """The problems of a ``bestmove`` line, for the oldest ``go`` pending."""
        if not self.pending:
            return [f"unexpected {line!r}: no go pending"]
        board, words = self.pending.pop(0), line.split()
        best, legal = words[1] if len(words) > 1 else "", {m.uci() for m in board.legal_moves}
        if best not in legal:
            return [] if not legal and best == "0000" else [f"{line!r} not legal in {board.fen()}"]
        if len(words) > 3 and words[2] == "ponder":
            board.push_uci(best)
            if words[3] not in {m.uci() for m in board.legal_moves}:
                return [f"{line!r}: ponder move not legal after it in {board.fen()}"]
        return []


def random_game(rng: random.Random, plies: int) -> tuple[str, list[str]]:
    board = chess.Board()
    while board.ply() < plies and (legal := list(board.legal_moves)):
        board.push(rng.choice(legal))
    return board.fen(), [m.uci() for m in board.move_stack]


def position_line(rng: random.Random) -> str:
    fen, moves = random_game(rng, rng.randrange(0, 80))
    if rng.random() < 0.5:
        return f"position fen {fen}"
    return "position startpos" + (" moves " + " ".join(moves) if moves else "")


def go_line(rng: random.Random) -> str:
    n = rng.choice((1, 2, 10, 20, 50, 100, 1000, 60000))
    return rng.choice((f"go nodes {n}", f"go movetime {n % 99}", "go ponder movetime 50",
                       f"go wtime {n} btime {n} winc {n % 11} binc 0", "go ponder nodes 500",
                       "go infinite"))  # fmt: skip


def bad_position(rng: random.Random) -> str:
    fen, moves = random_game(rng, rng.randrange(0, 30))
    played = " ".join(moves)
    return "position" + rng.choice((
        "", " moves e2e4", " startpos moves", " startpos moves e2e5", " startpos extra",
        f" startpos moves {played} a1a1", f" startpos moves 0000 {' '.join(moves[:3])}",
        " fen", " fen " + fen[: rng.randrange(len(fen))], " fen 8/8/8/8/8/8/8/8 w - - 0 1",
        " fen k7/8/8/8/8/8/8/7K w - - 0 1 moves h1h2", " fen 7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",
        " fen 7k/6Q1/6K1/8/8/8/8/8 b - - 0 1", " fen KKKKKKKK/8/8/8/8/8/8/kkkkkkkk w - - 0 1",
        " fen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e3 0 1",
        " fen " + fen.replace(" w ", " x "), f" startpos moves {played} {rng.choice(UNICODE)}",
        " startpos moves e2e4 " + rng.choice(HUGE), f" fen {fen} moves e7e8q e2e4 a7a8n",
    ))  # fmt: skip


def bad_go(rng: random.Random) -> str:
    parts = ["go"]
    for _ in range(rng.randrange(1, 6)):
        parts.append(rng.choice(GO_WORDS + ("infinite", "ponder", "searchmoves", "bogus", "-1")))
        if parts[-1] in GO_WORDS and rng.random() < 0.8:
            parts.append(rng.choice(HUGE + ("10", "0", "", "abc", "1.5")))
        elif parts[-1] == "searchmoves":
            parts += rng.sample(["e2e4", "a1a1", "e7e5", "0000", "g1f3", "zz"], 3)
    if not {"infinite", "ponder", "nodes", "movetime", "depth", "wtime", "btime"} & set(parts):
        parts.append("nodes 50")  # ends by itself too (the sync stops any other)
    return " ".join(p for p in parts if p)


def bad_setoption(rng: random.Random, options: list[str]) -> str:
    name = rng.choice(options + ["NoSuchOption", "", "name", "value", "♞"])
    value = rng.choice(HUGE + ("", "true", "false", "maybe", "x" * 1000, "1,5", "0", "1") + UNICODE)
    forms = ("setoption name {} value {}", "setoption name {}", "setoption {} {}")
    return rng.choice((*forms, "setoption name {} value")).format(name, value)


def hostile_lines(rng: random.Random, options: list[str], n: int) -> list[str | bytes]:
    """``n`` malformed or extreme lines, one of 1 MB at most; no ``quit``."""
    filler = rng.choice(("e2e4 ", "x", "♞", "go ", "depth 1 ", "moves "))
    heads = ("position startpos moves ", "go ", "setoption name ", "", "position fen ")
    makers: list[Callable[[], str | bytes]] = [
        lambda: bad_position(rng), lambda: bad_go(rng), lambda: bad_setoption(rng, options),
        lambda: rng.randbytes(rng.randrange(1, 200)).replace(b"\n", b" "),
        lambda: rng.choice(UNICODE) + rng.choice(WORDS) + rng.choice(UNICODE) + rng.choice(UNICODE),
        lambda: rng.choice(WORDS[:6]),
        lambda: position_line(rng) if rng.random() < 0.5 else go_line(rng),
        lambda: (rng.choice(heads) + filler * ((1 << 20) // len(filler.encode()))).rstrip(),
    ]  # fmt: skip
    picks = rng.choices(range(8), (17, 20, 15, 10, 10, 10, 10, 8), k=n)  # 7: the 1 MB line, once
    lines = [makers[i if i < 7 or k == picks.index(7) else 0]() for k, i in enumerate(picks)]
    return [ln for ln in lines if not is_quit(ln)]


def burst(rng: random.Random) -> list[str]:
    """go/stop/ponderhit/ucinewgame/position/isready, sent without waiting."""
    makers = (lambda: go_line(rng), lambda: position_line(rng), lambda: "stop",
              lambda: "ponderhit", lambda: "ucinewgame", lambda: "isready")  # fmt: skip
    return [rng.choices(makers, (30, 17, 20, 15, 10, 8))[0]() for _ in range(rng.randrange(3, 25))]


@contextmanager
def uci(args: Any, workdir: Path) -> Kind:
    eng: Driver | None = None
    tr, options = Tracker(), ["Threads"]

    def start() -> Driver:  # the engine, started anew after a failure
        nonlocal eng, tr, options
        if eng is None or eng.proc.poll() is not None:
            eng, tr = Driver(["--backend=random", *args.engine_args]), Tracker()
            state, lines = eng.ask(["uci", "isready"], 1, 0, 300)
            if state != "ok":
                raise RuntimeError(f"engine did not start ({state}): {lines[-3:]}")
            names = [ln.split(" type ")[0][len("option name ") :] for ln in lines if " type " in ln]
            options = [n for n in names if n.lower() not in SKIP_OPTIONS]
        return eng

    def case(lines: Sequence[str | bytes]) -> dict[str, Any]:
        nonlocal eng
        driver, tr.isready = start(), 0
        for line in [*lines, "stop", "isready"]:
            tr.sent(line)
        gos = len(tr.pending)
        state, out = driver.ask([*lines, "stop", "isready"], tr.isready, gos, 20)
        answers = [ln for ln in out if ln.startswith("bestmove")]
        problems = [problem for ln in answers for problem in tr.answered(ln)]
        counts = {"lines": len(lines), "gos": gos, "readyok": out.count("readyok")}
        fields: dict[str, Any] = {"counts": {**counts, "bestmoves": len(answers)}, "outcome": "ok"}
        if state != "ok" or problems:
            late = "no_readyok" if counts["readyok"] < tr.isready else "no_bestmove"
            fields["outcome"] = {"eof": "crash", "ok": "illegal_bestmove"}.get(state, late)
            fields.update(problems=problems[:5], tail=[ln[:200] for ln in out[-8:]])
            fields["lines_sent"] = [repr(ln)[:200] for ln in lines]
            driver.proc.kill()
            eng = None
        return fields

    def one(index: int) -> dict[str, Any]:
        nonlocal eng
        rng = random.Random(f"{args.seed}:{index}")
        if index >= BURSTS:
            return {"case": "interleaving", **case(burst(rng))}
        if index >= 0:
            n = min(BATCH, args.count - index * BATCH)
            return {"case": "lines", **case(hostile_lines(rng, options, n))}
        start().ask(["position startpos", "go infinite"], 0, 0, 0)
        time.sleep(0.2)
        took, eng = start().close(timeout=1.0), None
        return {"case": "quit", "outcome": "slow_quit" if took is None else "ok", "quit_s": took}

    start()
    try:
        bursts = range(BURSTS, BURSTS + args.interleavings)
        yield [*range(-(-args.count // BATCH)), *bursts, -1], one
    finally:
        if eng is not None:
            eng.close()


# ---------------------------------------------------------------------------------------- games
OPENINGS = ROOT / "nets" / "matches" / "heldout-openings.epd"
CUTECHESS = ROOT.parent / "shared" / "tools" / "bin" / "cutechess-cli"
STOCKFISH = Path("/usr/games/stockfish")
RESULT = re.compile(r"Finished game \d+ \((.+) vs (.+)\): (\S+) \{(.*)\}")
ABNORMAL = {"illegal": ("illegal move",), "time_loss": ("on time",), "crash": ("disconnects",
            "crash", "terminated"), "stall": ("stalls", "connection")}  # fmt: skip


def classify(comment: str, dialogue: str, white: str = "xlazero", black: str = "xlazero") -> str:
    """A game's outcome from its result and dialogue; an opponent's abnormal end is no failure."""
    if "bestmove 0000" in dialogue:
        return "bestmove_0000"
    low = comment.lower()
    side = white if low.startswith("white") else black if low.startswith("black") else "xlazero"
    for outcome, words in ABNORMAL.items():
        if any(w in low for w in words):
            return outcome if side.startswith("xlazero") else "opponent_abnormal"
    return "ok"


@contextmanager
def games(args: Any, workdir: Path) -> Kind:
    """Even cases against Stockfish, odd ones self-play; an opening for 4 cases (both colours)."""
    cutechess = str(CUTECHESS) if CUTECHESS.is_file() else shutil.which("cutechess-cli")
    stockfish = str(STOCKFISH) if STOCKFISH.is_file() else shutil.which("stockfish")
    if not cutechess or not stockfish:
        raise SystemExit(f"soak games: needs cutechess-cli ({CUTECHESS}) and Stockfish")
    openings = [ln for ln in OPENINGS.read_text().splitlines() if ln.strip()]
    base, _, inc = args.tc.partition("+")
    timeout = 60 + 6 * (float(base.split("/")[-1]) + 200 * float(inc or 0))
    me = ["-engine", "name=xlazero", f"cmd={ENGINE}", f"dir={ROOT}"]
    me += [f"arg={a}" for a in args.engine_args]
    sf = ["-engine", "name=stockfish", f"cmd={stockfish}", "option.UCI_LimitStrength=true",
          "option.UCI_Elo=1350"]  # fmt: skip

    def one(index: int) -> dict[str, Any]:
        other = sf if index % 2 == 0 else ["-engine", "name=xlazero2", *me[2:]]
        pair = [*me, *other] if index // 2 % 2 == 0 else [*other, *me]
        opening, pgn = workdir / f"opening-{index}.epd", workdir / f"game-{index}.pgn"
        opening.write_text(random.Random(f"{args.seed}:{index // 4}").choice(openings) + "\n")
        each = ["-each", "proto=uci", f"tc={args.tc}"] + (["ponder"] if index % 2 else [])
        command = [cutechess, *pair, *each, "-openings", f"file={opening}", "format=epd", "-games",
                   "1", "-maxmoves", "200", "-pgnout", str(pgn), "-debug", "all"]  # fmt: skip
        fields: dict[str, Any] = {"opponent": ["stockfish", "self-ponder"][index % 2]}
        try:
            run = subprocess.run(command, capture_output=True, text=True, errors="replace",
                                 timeout=timeout, cwd=workdir)  # fmt: skip
        except subprocess.TimeoutExpired:
            return {**fields, "outcome": "stall", "detail": "cutechess-cli timed out"}
        lines = run.stdout.splitlines()
        found = [m for m in map(RESULT.search, lines) if m]
        if not found:
            return {**fields, "outcome": "no_result", "tail": lines[-10:] + [run.stderr[-500:]]}
        white, black, result, comment = found[-1].groups()
        moves = [ln for ln in lines if "<" in ln and "bestmove" in ln]
        fields.update(white=white, black=black, result=result, comment=comment, plies=len(moves))
        fields["outcome"] = classify(comment, "\n".join(moves), white, black)
        if fields["outcome"] != "ok" and pgn.exists():
            fields["pgn"] = pgn.read_text()[-2000:]
        return fields

    yield range(args.count), one
