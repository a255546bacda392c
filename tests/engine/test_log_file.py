"""LogFile holds what lc0's log holds besides the UCI dialogue: its start, the network's load,
each position and go, why a search stopped and the root's move stats, each as a line of the log
in lc0's format and never on stdout (lc0 v0.33, ``lc0 --backend=blas --weights=… --logfile=…``,
sent uci, isready, position startpos, go nodes 20):

    ... main.cc:83] Lc0 started.
    ... commandline.cc:56] Command line: /…/lc0 --backend=blas --weights=… --logfile=/tmp/lc0.log
    ... engine_loop.cc:73] >> uci
    ... engine.cc:203] Setting a new search position.
    ... loader.cc:225] Loading weights file from: /…/maia-1100.pb.gz
    ... engine_loop.cc:73] >> go nodes 20
    ... wrapper.cc:138] Timer started at 1202 13:39:05.890275
    ... search.cc:914] Search started. 4ms already passed.
    ... stoppers.cc:65] Stopped search: Reached visits limit: 26>=20
    ... search.cc:589] === Move stats:
    ... search.cc:590] b1a3  (34  ) N:       0 (+ 0) (P:  0.10%) (WL:  -.-----) …
    ... search.cc:590] node  (  20) N:      26 (+ 0) (P: 100.0%) (WL:  …
    ... search.cc:597] --- Opponent moves after: e2e4
    ... search.cc:599] f7f6  (346 ) N:       0 (+ 0) (P:  4.58%) (WL:  -.-----) …
    ... uciloop.cc:342] << bestmove e2e4 ponder e7e5
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Iterator

import chess

import option_harness
from option_harness import Session

import engine.controller

LOG_LINE = re.compile(r"^\d{4} \d\d:\d\d:\d\d\.\d{6} \d+ \S+\] (.*)$")


def _said(path) -> list[str]:
    """The log's lines past its header, without their time, thread and place (each line must
    have them, as lc0's)."""
    said = []
    for line in path.read_text().split("============= Log started. =============\n", 1)[1].splitlines():
        m = LOG_LINE.match(line)
        assert m, f"expected lc0's log format, got {line!r}"
        said.append(m.group(1))
    return said


def _index(said: list[str], prefix: str, after: int = -1) -> int:
    """The first line from ``after`` on that starts with ``prefix``."""
    for i in range(after + 1, len(said)):
        if said[i].startswith(prefix):
            return i
    raise AssertionError(f"expected a line {prefix!r} after line {after}, got {said[after + 1:][:40]}")


def _commands(out: io.StringIO, lines: list[str]) -> Iterator[str]:
    """The lines of stdin, each ``go`` answered before the next line is read."""
    gos = 0
    for line in lines:
        while out.getvalue().count("bestmove") < gos:
            time.sleep(0.005)
        gos += line.startswith("go")
        yield line


def test_log_holds_lc0s_lines_of_the_start_the_load_and_the_search(tmp_path):
    """Through the program's entry point (its command line): the start, the weights file, the
    position, the go's start, why it stopped, then ``=== Move stats:`` and a line per legal root
    move and the root's, then the bestmove; none of it on stdout."""
    from engine.uci import main

    log = tmp_path / "engine.log"
    weights = option_harness.__file__
    argv = ["--backend=effects", f"--weights={weights}", f"--logfile={log}", "--threads=1",
            "--smart-pruning-factor=0", "--max-prefetch=0"]
    out = io.StringIO()
    stdin = _commands(out, ["uci", "isready", "position startpos", "go nodes 20", "quit"])
    assert main(argv, stdin=stdin, stdout=out) == 0
    said = _said(log)
    start = _index(said, "xlazero ")
    assert said[start].endswith(" started."), said[start]
    assert said[_index(said, "Command line: ", start)] == "Command line: xlazero " + " ".join(argv)
    uci = _index(said, ">> uci", start)
    loading = _index(said, "Loading weights file from: ", uci)
    assert said[loading] == f"Loading weights file from: {weights}"
    position = _index(said, "Setting a new search position.", _index(said, ">> position startpos", loading))
    go = _index(said, ">> go nodes 20", position)
    timer = _index(said, "Timer started at ", go)
    _index(said, "Search started. ", timer)
    stopped = _index(said, "Stopped search: Reached visits limit: ", go)
    visits, limit = map(int, said[stopped].rsplit(" ", 1)[1].split(">="))
    assert visits >= 20 and limit == 20, said[stopped]
    stats = _index(said, "=== Move stats:", stopped)
    bestmove = _index(said, "<< bestmove ", stats)
    moves = said[stats + 1 : stats + 21]
    assert sorted(ln.split()[0] for ln in moves) == sorted(m.uci() for m in chess.Board().legal_moves)
    assert said[stats + 21].startswith("node ") and " N:      " in said[stats + 21], said[stats + 21]
    # Then lc0's "--- Opponent moves after:" the move played: the node after it, a line per
    # legal reply (its visits) and its own line, whose visits are 1 + the replies' (a node's
    # first visit is its own evaluation).
    played = chess.Move.from_uci(said[bestmove].split()[2])
    after = _index(said, "--- Opponent moves after: ", stats + 21)
    assert said[after] == f"--- Opponent moves after: {played.uci()}" and after < bestmove
    board = chess.Board()
    board.push(played)
    replies = [m.uci() for m in board.legal_moves]
    lines = said[after + 1 : after + 2 + len(replies)]
    assert sorted(ln.split()[0] for ln in lines[:-1]) == sorted(replies), lines
    visits = [int(re.search(r" N: +(\d+) ", ln).group(1)) for ln in lines]
    assert lines[-1].startswith(f"node  ({len(replies):4d}) N: ") and visits[-1] == 1 + sum(visits[:-1])
    assert bestmove == after + 2 + len(replies)
    stdout = out.getvalue()
    for text in ("started.", "Command line", "Loading weights", "Setting a new", "Timer started",
                 "Search started", "Stopped search", "=== Move stats", "N:      "):
        assert text not in stdout, f"{text!r} on stdout"


def test_log_says_why_a_search_stopped_and_the_backends_lines(tmp_path):
    """A stop command says so (and no stopper's reason follows); a movetime runs out of time;
    the backend's description lines are lines of the log of their own; with VerboseMoveStats
    the move stats are the ``info string`` lines (``<<``), as lc0's, not a second copy."""
    log = tmp_path / "engine.log"
    session = Session(Backend="random", BackendOptions="delay=1,seed=3", LogFile=log,
                      VerboseMoveStats=False)
    try:
        session.send("position startpos")
        session.send("go infinite")
        time.sleep(0.3)
        session.send("stop")
        session.uci.controller.wait(30)
        session.go("go movetime 200")
        session.set("VerboseMoveStats", True)
        verbose = session.go("go nodes 30")
    finally:
        session.close()
    said = _said(log)
    description = "random backend: delay 1 ms a batch, seed 3"
    assert description in said and f"<< info string {description}" in said
    go = _index(said, ">> go infinite")
    stop = _index(said, "Stopping search due to `stop` uci command.", _index(said, ">> stop", go))
    stats = _index(said, "=== Move stats:", stop)
    first_bestmove = _index(said, "<< bestmove ", stats)
    assert not [ln for ln in said[go:first_bestmove] if ln.startswith(("Stopped search", "Stopping search: "))]
    timed = _index(said, ">> go movetime 200", first_bestmove)
    assert said[_index(said, "Stopping search", timed)] == "Stopping search: Ran out of time."
    last = _index(said, ">> go nodes 30", timed)
    assert "=== Move stats:" not in said[last:]
    _index(said, "--- Opponent moves after: ", last)  # lc0 logs these with VerboseMoveStats too
    node = [ln for ln in verbose.lines if ln.startswith("info string node ")]
    assert node and f"<< {node[0]}" in said[last:]


def test_without_a_log_nothing_is_computed_for_it(monkeypatch, tmp_path):
    """LogFile empty: neither the move stats nor the stop's reason are made (with a log, both)."""
    calls: list[str] = []

    def record(name, real):
        def wrapper(*args):
            calls.append(name)
            return real(*args)

        monkeypatch.setattr(engine.controller, name, wrapper)

    record("verbose_stats", engine.controller.verbose_stats)
    record("stop_reason", engine.controller.stop_reason)
    session = Session(VerboseMoveStats=False)
    try:
        reply = session.go("go nodes 20")
        assert not calls
        assert not [ln for ln in reply.lines if "Move stats" in ln or "Stopped search" in ln]
        session.set("LogFile", tmp_path / "engine.log")
        session.go("go nodes 20")
    finally:
        session.close()
    assert sorted(calls) == ["stop_reason", "verbose_stats", "verbose_stats"]  # the replies


def test_log_names_the_playouts_limit_with_nodes_as_playouts(tmp_path):
    """With NodesAsPlayouts a go nodes is a playouts limit, and the log says so in lc0's words
    (PlayoutsStopper): a second go nodes 30 on the reused tree stops at 30 playouts, not at the
    30 visits the root already has."""
    log = tmp_path / "engine.log"
    session = Session(LogFile=log, NodesAsPlayouts=True)
    try:
        session.go("go nodes 30")
        second = session.go("go nodes 30")
    finally:
        session.close()
    said = _said(log)
    assert second.field("nodes", second.final[0]) >= 60, second.final
    first_go = _index(said, ">> go nodes 30")
    second_go = _index(said, ">> go nodes 30", first_go)
    line = said[_index(said, "Stopped search: ", second_go)]
    # lc0's stopper is asked between iterations: the playouts of the search, 30 or a few more.
    reached = re.fullmatch(r"Stopped search: Reached playouts limit: (\d+)>=30", line)
    assert reached and 30 <= int(reached[1]) < 60, line


def test_log_names_the_kld_gain_stop(tmp_path):
    """A search the KLD gain stopper ends is logged in lc0's words (KldGainStopper), where the
    same search without it runs to its nodes and logs the visits limit."""
    log = tmp_path / "engine.log"
    session = Session(LogFile=log, MinimumKLDGainPerNode=1)
    try:
        stopped = session.go("go nodes 2000")
        session.set("MinimumKLDGainPerNode", 0)
        session.send("ucinewgame")
        full = session.go("go nodes 2000")
    finally:
        session.close()
    assert stopped.field("nodes", stopped.final[0]) < 2000 <= full.field("nodes", full.final[0])
    said = _said(log)
    first = _index(said, ">> go nodes 2000")
    second = _index(said, ">> go nodes 2000", first)
    reasons = [ln for ln in said if ln.startswith(("Stopping search: ", "Stopped search: "))]
    assert said[_index(said, "Stopping search: KLDGain", first)] == (
        "Stopping search: KLDGain per node too small."
    )
    assert _index(said, "Stopping search: KLDGain", first) < second, reasons
    visits = re.match(r"Stopped search: Reached visits limit: (\d+)>=2000", said[
        _index(said, "Stopped search: ", second)])  # fmt: skip
    assert visits and int(visits[1]) == full.field("nodes", full.final[0]), reasons
