"""The UCI engine driven as a separate process (python-chess's chess.engine and raw lines),
with the instant ``random`` backend."""

from __future__ import annotations

import io
import queue
import re
import subprocess
import sys
import threading
import time

import chess
import chess.engine
import pytest

from engine import options as opts
from engine.startup.cmdline import parse_command_line
from conftest import REPO_ROOT

REPO = REPO_ROOT
ENGINE_CMD = [sys.executable, "-m", "engine.uci", "--backend=random"]


class RawEngine:
    """Line-level access to the engine process, with timeouts on reads."""

    def __init__(self, *extra: str) -> None:
        self.proc = subprocess.Popen(ENGINE_CMD + list(extra), cwd=REPO, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for raw in self.proc.stdout:
            self.lines.put(raw.decode("utf-8", "replace").rstrip("\n"))

    def send(self, data: str | bytes) -> None:
        self.proc.stdin.write(data if isinstance(data, bytes) else (data + "\n").encode())
        self.proc.stdin.flush()

    def expect(self, prefix: str, timeout: float = 30.0) -> tuple[str, list[str]]:
        """Read until a line starting with ``prefix``; returns it and the lines before it."""
        seen = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"expected a line starting with {prefix!r}, got {seen[-10:]}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line.startswith(prefix):
                return line, seen
            seen.append(line)

    def close(self) -> int:
        try:
            self.send("quit")
        except BrokenPipeError:
            pass
        return self.proc.wait(timeout=20)


@pytest.fixture
def raw():
    eng = RawEngine()
    yield eng
    eng.close()


@pytest.fixture
def paced():
    """An engine whose random network takes 5 ms a batch (the random backend's simulated
    accelerator, whose suggested minibatch is then a GPU's 256): a search on the clock waits on
    it instead of spinning both cores for its whole budget."""
    eng = RawEngine("--backend-opts=delay=5")
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def uci_engine():
    eng = chess.engine.SimpleEngine.popen_uci(ENGINE_CMD, cwd=REPO)
    yield eng
    eng.quit()


def test_uci_handshake_lists_every_option(uci_engine):
    assert uci_engine.id["name"].startswith("xlazero")
    assert uci_engine.id["author"] == "The xlazero authors"
    names = {name.lower() for name in uci_engine.options}
    for option in opts.OPTIONS:
        assert option.name.lower() in names, f"option {option.name} missing from the uci answer"
    assert uci_engine.options["CPuct"].default == "1.745"
    assert uci_engine.options["MinibatchSize"].default == 0


def test_self_play_game_only_legal_moves(uci_engine):
    board = chess.Board()
    uci_engine.configure({"UCI_ShowWDL": True})
    while not board.is_game_over(claim_draw=True) and board.ply() < 60:
        result = uci_engine.play(board, chess.engine.Limit(nodes=20), info=chess.engine.INFO_ALL)
        assert result.move in board.legal_moves, f"illegal {result.move} in {board.fen()}"
        assert "wdl" in result.info and sum(result.info["wdl"]) == 1000
        board.push(result.move)
    assert board.ply() > 10


def test_setoption_unknown_name_lists_the_options(raw):
    """Each option's effect: tests/engine/test_option_effects.py. Here the UCI answer to a bad name."""
    raw.send("setoption name NoSuchOption value 3")
    raw.send("setoption name MultiPV value 2")
    raw.send("isready")
    line, before = raw.expect("readyok")
    errors = [b for b in before if b.startswith("info string error")]
    assert len(errors) == 1 and "NoSuchOption" in errors[0] and "CPuct" in errors[0], before


def test_robustness_bad_lines(raw):
    raw.send(b"\xff\xfe\x00garbage\x80\n")
    raw.send("x" * 200_000)
    raw.send("go nodes 5")  # go before position: searches the start position
    line, before = raw.expect("bestmove")
    assert sum(b.startswith("info string error: unknown command") for b in before) == 2, before
    assert chess.Move.from_uci(line.split()[1]) in chess.Board().legal_moves
    raw.send("position startpos moves e2e4 e7e4")
    raw.send("position fen not/a/fen w - - 0 1")
    raw.send("position fen")
    raw.send("go nodes abc")  # reported; what remains is a plain go (infinite) until stop
    raw.send("stop")
    line, before = raw.expect("bestmove")
    assert chess.Move.from_uci(line.split()[1]) in chess.Board().legal_moves
    raw.send("setoption name CPuct value -5")
    raw.send("setoption value 3")
    raw.send("ponderhit")
    raw.send("stop")
    raw.send("isready")
    _, after = raw.expect("readyok")
    errors = [b for b in before + after if b.startswith("info string error")]
    assert len(errors) == 6, before + after
    assert any("e7e4" in e for e in errors)
    raw.send("position startpos moves e2e4")
    raw.send("go nodes 20")
    line, _ = raw.expect("bestmove")
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(line.split()[1]) in board.legal_moves


def test_no_legal_move_gives_null_bestmove(raw):
    raw.send("position fen 7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
    raw.send("go nodes 10")
    line, _ = raw.expect("bestmove")
    assert line == "bestmove 0000"


def _round_trip(raw: RawEngine, line: str, answer: str) -> float:
    t0 = time.monotonic()
    raw.send(line)
    raw.expect(answer, timeout=5)
    return time.monotonic() - t0


REPLY_SLACK_S = 0.25
"""Allowed beyond ten idle round trips for an answer during a search: a search holding the
command loop would take seconds (a batch, or the whole search), while a loaded machine slows
every round trip alike (the idle ones measured in the same run)."""


def test_isready_and_stop_during_infinite_search(raw):
    raw.send("position startpos")
    idle = sorted(_round_trip(raw, "isready", "readyok") for _ in range(3))[1]
    raw.send("go infinite")
    time.sleep(0.5)
    limit = 10 * idle + REPLY_SLACK_S
    delays = sorted(_round_trip(raw, "isready", "readyok") for _ in range(3))
    assert delays[1] < limit, f"isready took {delays}s during the search, {idle:.4f}s idle"
    t0 = time.monotonic()
    raw.send("stop")
    line, before = raw.expect("bestmove", timeout=5)
    assert time.monotonic() - t0 < limit, f"stop took {time.monotonic() - t0:.3f}s, {idle:.4f}s idle"
    assert any(b.startswith("info depth") for b in before)
    assert chess.Move.from_uci(line.split()[1]) in chess.Board().legal_moves


def test_movetime_and_clock_are_respected(paced):
    """Each go answers within its time. A loaded machine delays every answer by its fixed costs
    (waking threads, the first batch): five times a ``go nodes 1`` round trip of this run is
    allowed on top, a few ms on an idle machine."""
    paced.send("position startpos")
    paced.send("isready")
    paced.expect("readyok")
    slack = 5 * sorted(_round_trip(paced, "go nodes 1", "bestmove") for _ in range(3))[1]
    for go, limit in (("go movetime 500", 0.5), ("go wtime 1500 btime 1500", 1.5),
                      ("go wtime 300 btime 300 winc 0 binc 0 movestogo 1", 0.3)):
        took = _round_trip(paced, go, "bestmove")
        assert took < limit + slack, f"{go} took {took:.3f}s, allowed {limit} + {slack:.3f}s"


def test_ponder_then_ponderhit(paced):
    """After ponderhit the search is a normal one on the clock (2 s left): it answers within
    it, plus the load slack of test_movetime_and_clock_are_respected."""
    paced.send("position startpos moves e2e4 e7e5")
    paced.send("isready")
    paced.expect("readyok")
    slack = 5 * sorted(_round_trip(paced, "go nodes 1", "bestmove") for _ in range(3))[1]
    paced.send("go ponder wtime 2000 btime 2000")
    time.sleep(0.3)
    assert paced.lines.empty() or not any(l.startswith("bestmove") for l in list(paced.lines.queue))
    t0 = time.monotonic()
    paced.send("ponderhit")
    line, _ = paced.expect("bestmove", timeout=5)
    took = time.monotonic() - t0
    assert took < 2.0 + slack, f"ponderhit to bestmove took {took:.3f}s, allowed 2 + {slack:.3f}s"
    assert line.split()[1] != "0000"


def test_multipv_verbose_stats_and_searchmoves(raw):
    raw.send("setoption name MultiPV value 3")
    raw.send("setoption name VerboseMoveStats value true")
    raw.send("position startpos")
    raw.send("go nodes 200 searchmoves a2a3 b2b3 c2c3 d2d4")
    line, before = raw.expect("bestmove")
    assert line.split()[1] in ("a2a3", "b2b3", "c2c3", "d2d4")
    last = [b for b in before if b.startswith("info depth")][-3:]
    assert [int(b.split(" multipv ")[1].split()[0]) for b in last] == [1, 2, 3]
    stats = [b for b in before if b.startswith("info string") and "N:" in b]
    assert len(stats) == 21  # 20 moves and the node line
    assert all(k in stats[-2] for k in ("(P:", "(WL:", "(D:", "(M:", "(Q:", "(U:", "(S:", "(V:"))
    # As lc0 prints them (its log: "e7e5  (322 ) N: ...", "node  (  20) N: ..."): a move's
    # index left-aligned in four columns, the node line's (its number of moves) right-aligned.
    assert stats[-1].startswith("info string node  (  20) N:     "), stats[-1]
    assert re.match(r"info string [a-h][1-8][a-h][1-8]  \(\d+ *\) N: ", stats[-2]), stats[-2]


def test_chess960_king_takes_rook():
    board = chess.Board("bqnbrkrn/pppppppp/8/8/8/8/PPPPPPPP/BQNBRKRN w GEge - 0 1", chess960=True)
    castle = board.parse_san("O-O")
    assert castle.uci() == "f1g1"  # king takes rook
    eng = chess.engine.SimpleEngine.popen_uci(ENGINE_CMD, cwd=REPO)
    try:
        result = eng.play(board, chess.engine.Limit(nodes=30), root_moves=[castle])
        assert result.move == castle
        board.push(result.move)
        for _ in range(4):
            result = eng.play(board, chess.engine.Limit(nodes=30))
            assert result.move in board.legal_moves
            board.push(result.move)
    finally:
        eng.quit()


def test_missing_network_refuses_every_go(tmp_path):
    """A network that fails to load is never played around: each go names the error and answers
    bestmove 0000, so a GUI shows the failure instead of silently weak moves."""
    missing = tmp_path / "no-such-net.onnx"
    eng = RawEngine("--backend=xla", f"--weights={missing}")
    try:
        eng.send("isready")
        line, before = eng.expect("readyok")
        assert any("error" in b and str(missing) in b for b in before), before
        for go in ("go nodes 1", "go movetime 50"):
            eng.send("position startpos moves e2e4")
            eng.send(go)
            line, before = eng.expect("bestmove")
            assert line == "bestmove 0000", line
            errors = [b for b in before if b.startswith("info string error: no network loaded")]
            assert errors and str(missing) in errors[0], before
        eng.send("setoption name Backend value random")  # a network that loads: play resumes
        eng.send("go nodes 5")
        line, _ = eng.expect("bestmove")
        board = chess.Board()
        board.push_uci("e2e4")
        assert chess.Move.from_uci(line.split()[1]) in board.legal_moves
    finally:
        eng.close()


def test_unknown_flag_exits_2():
    proc = subprocess.run(ENGINE_CMD + ["--no-such-flag=1"], cwd=REPO, capture_output=True, text=True,
                          input="quit\n", timeout=30)
    assert proc.returncode == 2
    assert "--no-such-flag" in proc.stderr


def test_a_bad_flag_names_the_nearest_and_a_hint_that_works_from_any_directory(tmp_path):
    """Issue 66: the hint was `python -m engine.options --markdown`, which fails outside the
    repository; now the error lists the flags and points at the program's own --help."""
    import os

    env = dict(os.environ, PYTHONPATH=str(REPO))
    program = [sys.executable, "-m", "engine.uci"]
    proc = subprocess.run([*program, "--cpuctt=1"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "unknown flag --cpuctt (did you mean --cpuct?)" in proc.stderr
    assert "--move-overhead" in proc.stderr and "--help describes them" in proc.stderr
    proc = subprocess.run([*program, "--help"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and "| `CPuct` | `--cpuct` |" in proc.stdout, proc.stderr


def test_warm_up_flag_makes_ready_and_exits_without_reading_stdin():
    """``--warm-up`` (run once after an install) answers as isready does and exits: it reads no
    command, so the stdin left open here must not hold it."""
    proc = subprocess.Popen(ENGINE_CMD + ["--warm-up", "--backend=random"], cwd=REPO,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.wait(timeout=120) == 0  # stdin still open: it exited on its own
        assert proc.stdout is not None
        out = proc.stdout.read()
    finally:
        proc.kill()
    assert out.splitlines()[-1] == "readyok", out


def test_command_line_sets_options(tmp_path):
    log = tmp_path / "uci.log"
    eng = RawEngine("--cpuct=1.7", "--minibatch-size=64", f"--logfile={log}", "--show-wdl")
    try:
        eng.send("position startpos")
        eng.send("go nodes 20")
        line, before = eng.expect("bestmove")
        assert any(" wdl " in b for b in before)
    finally:
        eng.close()
    text = log.read_text()
    assert "] >> go nodes 20" in text and "] << bestmove" in text  # lc0's arrows


def test_options_markdown_table():
    table = opts.markdown_table()
    assert table.count("\n") == len(opts.OPTIONS) + 1
    assert "| `CPuct` | `--cpuct` |" in table


def test_every_go_gets_a_bestmove_even_malformed_or_overlapping(raw):
    raw.send("position startpos")
    raw.send("go infinite")
    time.sleep(0.3)
    raw.send("go nodes 10")  # overlapping: the infinite search ends first, with its own bestmove
    first, before = raw.expect("bestmove", timeout=5)
    assert any("already running" in b for b in before), before
    second, _ = raw.expect("bestmove", timeout=30)
    raw.send("go nodes 10 wtime xx bogus depth")  # bad arguments are reported and skipped
    third, before = raw.expect("bestmove", timeout=30)
    errors = [b for b in before if b.startswith("info string error")]
    assert len(errors) == 3 and "'xx'" in errors[0] and "'bogus'" in errors[1], errors
    for line in (first, second, third):
        assert chess.Move.from_uci(line.split()[1]) in chess.Board().legal_moves


def test_lc0_command_line_habits(tmp_path):
    """lc0's short flags, LogFile=<stderr>, movesleft only with UCI_ShowMovesLeft, Threads."""
    values = parse_command_line(["-w", "net.pb.gz", "-b", "random", "-o=max_batch=64", "-t", "2"])
    assert values == {"WeightsFile": "net.pb.gz", "Backend": "random",
                      "BackendOptions": "max_batch=64", "Threads": 2}
    assert parse_command_line(["-v", "-l", "x.log", "-s", "/tb"]) == {
        "VerboseMoveStats": True, "LogFile": "x.log", "SyzygyPath": "/tb"}
    with pytest.raises(opts.OptionError, match="short flags -w, -b, -o, -t, -l, -s, -v"):
        parse_command_line(["-x", "1"])
    proc = subprocess.run(ENGINE_CMD + ["--logfile=<stderr>"], cwd=REPO, capture_output=True,
                          text=True, input="uci\nisready\nquit\n", timeout=60)
    assert "] >> isready" in proc.stderr and "] << readyok" in proc.stderr  # lc0's arrows
    assert not (REPO / "<stderr>").exists()
    from engine.search import ThinkingInfo
    from engine.uci import UciEngine
    from engine.uci_format import format_info

    info = ThinkingInfo(depth=1, seldepth=1, time_ms=1, nodes=2, nps=2, hashfull=0, score_cp=10,
                        mate=None, wdl=(1, 998, 1), multipv=None, pv=(), moves_left=40)
    uci = UciEngine(io.StringIO())
    assert "movesleft" not in format_info(chess.Board(), info, uci.values)
    uci.handle("setoption name UCI_ShowMovesLeft value true")
    assert " movesleft 40 " in format_info(chess.Board(), info, uci.values)


def test_unknown_backend_lists_every_backend():
    """Every registered backend: the engine's two, and any a test registered (option_harness)."""
    import re

    from engine.backend import backend_names, load_network
    from engine.uci import register_backends

    register_backends()
    assert {"random", "xla"} <= set(backend_names())
    with pytest.raises(ValueError, match=re.escape(f"expected one of {backend_names()}")):
        load_network("x.onnx", "", backend="cuda")


def test_weights_autodiscover_and_config_file(tmp_path):
    """lc0's <autodiscover> (newest network file in the working directory) and --config (one
    flag a line, '#' comments, the command line wins)."""
    import os

    (tmp_path / "old.pb.gz").write_bytes(b"x")
    newest = tmp_path / "newest.onnx"
    newest.write_bytes(b"x")
    os.utime(tmp_path / "old.pb.gz", (1, 1))
    config = tmp_path / "lc0.config"
    config.write_text("# my engine\nbackend=random\n--weights=<autodiscover>\n  minibatch-size=16\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-m", "engine.uci", f"--config={config}",
                           "--minibatch-size=8"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, input="isready\nquit\n", timeout=60)
    assert f"loaded network random ({newest}) with backend random" in proc.stdout, proc.stdout
    from engine.startup.cmdline import expand_config

    values = parse_command_line(expand_config([f"--config={config}", "--minibatch-size=8"]))
    assert values["MinibatchSize"] == 8 and values["Backend"] == "random"
    proc = subprocess.run(ENGINE_CMD + [f"--config={tmp_path / 'missing.config'}"], cwd=REPO,
                          capture_output=True, text=True, input="quit\n", timeout=60)
    assert proc.returncode == 2 and "missing.config" in proc.stderr


def test_option_pairs_of_the_bin_tools():
    assert opts.parse_pairs(["minibatchsize=7", "SmartPruningFactor=0"]) == {
        "MinibatchSize": 7, "SmartPruningFactor": 0.0}
    with pytest.raises(opts.OptionError, match="expected NAME=VALUE, got 'CPuct'"):
        opts.parse_pairs(["CPuct"])
    with pytest.raises(opts.OptionError, match=r"MinibatchSize: expected a value in \[0, 1024\]"):
        opts.parse_pairs(["MinibatchSize=5000"])


def test_a_null_move_in_searchmoves_is_ignored_and_the_go_answered(raw):
    """Found by bin/check/soak uci: python-chess parses 0000 as the null move, which the search could
    not place, and that go ended with an error and no bestmove."""
    raw.send("position startpos")
    raw.send("go nodes 50 searchmoves 0000 e2e4")
    line, before = raw.expect("bestmove")
    assert line.split()[1] == "e2e4"
    assert any("ignoring illegal move '0000'" in b for b in before), before


def test_a_go_that_cannot_start_a_search_still_gets_a_legal_bestmove(monkeypatch):
    """Whatever fails before the search thread starts, the go is answered (a GUI waits for it)."""
    from engine.uci import UciEngine

    out = io.StringIO()
    uci = UciEngine(out, parse_command_line(["--backend=random"]))

    def broken(limit):
        raise RuntimeError("injected")

    monkeypatch.setattr(uci.controller, "go", broken)
    uci.handle("position startpos moves e2e4")
    uci.handle("go nodes 5")
    lines = out.getvalue().splitlines()
    assert any("go: RuntimeError: injected" in line for line in lines), lines
    best = lines[-1].split()
    board = chess.Board()
    board.push_uci("e2e4")
    assert best[0] == "bestmove" and chess.Move.from_uci(best[1]) in board.legal_moves
