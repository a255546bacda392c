"""The info lines a search sends, as lc0's (issue 66 item 6): a line whenever the average depth,
the seldepth or the best move changed since the last one (lc0's MaybeOutputInfo, checked after
every minibatch), one at least every INFO_HEARTBEAT_MS, a final one with the bestmove; depth
from 1, ``nps`` only once time has passed since the first playout, no line twice.

The searches run in-process on the option tests' deterministic network
(tests/engine/option_harness.py). The truth a search's lines are checked against is another
code path: the final line of ``go nodes k`` on a fresh engine, for each k, which says what the
search had reached after k playouts. lc0's own counts, side by side: bin/check/info-lines.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from engine.search import run as search_run
from option_harness import NETWORK_PACE, Session

ONE_AT_A_TIME = {"MinibatchSize": 1, "VerboseMoveStats": False}
"""Minibatches of one playout: the engine looks for a change after each."""


def parse(line: str) -> dict[str, object]:
    tokens = line.split()
    out: dict[str, object] = {"keys": [t for t in tokens if t.isalpha() and t != "info"]}
    for key in ("depth", "seldepth", "time", "nodes", "nps", "eps"):
        if key in tokens:
            out[key] = int(tokens[tokens.index(key) + 1])
    out["pv"] = tokens[tokens.index("pv") + 1 :] if "pv" in tokens else []
    return out


def state(line: str) -> tuple[object, object, object]:
    """What a new line is due for: the average depth, the seldepth, the best move."""
    info = parse(line)
    pv = info["pv"]
    assert isinstance(pv, list)
    return info["depth"], info["seldepth"], pv[0] if pv else None


def search_lines(go: str, position: str = "position startpos", **options) -> list[str]:
    session = Session(**{**ONE_AT_A_TIME, **options})
    try:
        return session.go(go, position).infos
    finally:
        session.close()


def assert_well_formed(lines: list[str]) -> None:
    assert lines, "expected info lines"
    for line in lines:
        assert not re.search(r"\bdepth 0\b", line), line
        assert not re.search(r"\bnps 0\b", line), line
    assert len(set(lines)) == len(lines), f"expected no line twice, got {lines}"


@pytest.fixture
def no_watch(monkeypatch):
    """The run's watching thread looks only when the run ends, so that the lines are those
    the search thread's own check sends after each minibatch (the watch's can come while a
    minibatch is on the network, whose leaves the seldepth already counts)."""
    monkeypatch.setattr(search_run, "WATCH_SLICE_S", 60.0)


def test_a_line_on_each_change_and_only_then(no_watch):
    """``go nodes 24`` one playout a minibatch: its lines are exactly the playouts after which
    the average depth, the seldepth or the best move differed from the line before (the
    truth: the final line of ``go nodes k`` for each k), and the final one."""
    n = 24
    truth = {}
    for k in range(1, n + 1):
        final = search_lines(f"go nodes {k}")[-1]
        assert parse(final)["nodes"] == k, final
        truth[k] = state(final)
    lines = search_lines(f"go nodes {n}")
    assert_well_formed(lines)
    expected, last = [], None
    for k in range(2, n):  # after the root's own playout no move has a visit: nothing to report
        if truth[k] != last:
            expected.append(k)
            last = truth[k]
    expected.append(n)  # the final line
    assert [parse(ln)["nodes"] for ln in lines] == expected, lines
    for line in lines:
        nodes = parse(line)["nodes"]
        assert isinstance(nodes, int)
        assert state(line) == truth[nodes], (line, truth[nodes])
    # Depth starts at 1 as lc0's (the root's own playout is depth 1), and grows.
    assert truth[1][:2] == (1, 1) and parse(lines[-1])["depth"] >= 3  # type: ignore[operator]


def test_go_nodes_1_and_a_reused_tree_send_one_line(no_watch):
    """lc0: ``go nodes 1`` sends ``depth 1 seldepth 1`` once; a search whose tree already has
    its nodes (no playout of its own) sends one line, depth 1, seldepth 0 and no nps."""
    lines = search_lines("go nodes 1")
    assert len(lines) == 1 and " depth 1 seldepth 1 " in lines[0], lines
    session = Session(**ONE_AT_A_TIME)
    try:
        first = session.go("go nodes 30").infos
        again = session.go("go nodes 30").infos
    finally:
        session.close()
    assert_well_formed(first)
    assert len(again) == 1 and " depth 1 seldepth 0 " in again[0] and " nps " not in again[0], again
    assert " nodes 30 " in again[0]


def test_lines_of_a_search_with_several_threads_and_the_watch():
    """Threads 2, lc0's own minibatches, the watching thread on: still no depth 0, no nps 0,
    no line twice, and a line for less than every second minibatch's worth of playouts (each
    says something new: a deeper average, a new seldepth or a new best move)."""
    reply_lines = search_lines("go nodes 300", Threads=2, MinibatchSize=0, BackendOptions=NETWORK_PACE)
    assert_well_formed(reply_lines)
    states = [state(ln) for ln in reply_lines]
    assert all(a != b for a, b in zip(states, states[1:-1])), reply_lines
    assert 4 <= len(reply_lines) <= 40, reply_lines


def test_a_line_at_least_every_heartbeat(monkeypatch):
    """While nothing changes, lc0 repeats its line every 5 s (here shortened to 60 ms): with a
    network that takes 250 ms a batch, the lines between two batches are the heartbeat's,
    60 ms apart plus the watch's look (20 ms), each with its own time (without it, a line
    comes only after a batch that changed something: 250 ms apart). The slack (70 ms) is for a
    busy host (the suite's other tests beside it: 40 ms was once not enough)."""
    monkeypatch.setattr(search_run, "INFO_HEARTBEAT_MS", 60)
    lines = search_lines("go movetime 900", BackendOptions="delay=0.25", MoveOverheadMs=0)
    assert_well_formed(lines)
    times = [parse(ln)["time"] for ln in lines]
    gaps = sorted(b - a for a, b in zip(times, times[1:]))  # type: ignore[operator]
    assert len(lines) >= 4 and gaps[len(gaps) // 2] <= 60 + 20 + 70, (gaps, lines)


LC0_FIELDS = ("depth", "seldepth", "time", "nodes", "score", "wdl", "movesleft", "hashfull", "nps",
              "eps", "tbhits", "multipv", "pv")
"""The order of lc0's fields (StringUciResponder::OutputThinkingInfo; lc0 sends no hashfull)."""


def test_fields_in_lc0s_order():
    lines = search_lines("go nodes 60", MultiPV=2, UCI_ShowWDL=True, UCI_ShowEPS=True,
                         UCI_ShowMovesLeft=True, BackendOptions=f"mlh=1,{NETWORK_PACE}")
    final = lines[-2:]
    for line in final:
        keys = [k for k in line.split() if k in LC0_FIELDS]
        assert keys == list(LC0_FIELDS), line


LC0_LIMIT_RECORDING = Path(__file__).parents[1] / "data" / "lc0-go-infinite-nodes-limit.txt"
"""lc0's reply to ``go infinite nodes 50`` then ``stop`` 6.5 s later (the command in its header)."""


def _until_stop_lines(go: str, wait_s: float) -> list[str]:
    session = Session(**ONE_AT_A_TIME)
    try:
        session.uci.handle("position startpos")
        before = len(session.out.lines)
        session.uci.handle(go)
        time.sleep(wait_s)
        session.uci.handle("stop")
        deadline = time.monotonic() + 30
        while not any(ln.startswith("bestmove") for ln in session.out.lines[before:]):
            assert time.monotonic() < deadline, session.out.lines[before:]
            time.sleep(0.005)
        return session.out.lines[before:]
    finally:
        session.close()


def test_a_run_until_stop_past_its_limit_warns_as_lc0(monkeypatch):
    """lc0 (recorded): ``go infinite nodes N`` stops searching at N but waits for ``stop``; each
    info line from then on (a change, or the 5 s heartbeat: here 60 ms) is followed by lc0's
    ``info string WARNING: Search has reached limit and does not make any progress.``. A run
    with no limit reached, or one that is not until stop, sends no warning."""
    lc0 = [ln for ln in LC0_LIMIT_RECORDING.read_text().splitlines() if not ln.startswith("#")]
    warning = next(ln for ln in lc0 if ln.startswith("info string"))
    assert warning == f"info string {search_run.LIMIT_WARNING}"

    def pattern(lines: list[str], limit: int) -> None:
        warned = [i for i, ln in enumerate(lines) if ln == warning]
        assert warned, lines
        for i in warned:  # right after an info line of the stalled search
            assert lines[i - 1].startswith("info depth"), lines
            assert parse(lines[i - 1])["nodes"] >= limit, lines  # type: ignore[operator]
        assert lines[-1].startswith("bestmove"), lines

    pattern(lc0[lc0.index("uciok") + 1 :], 50)
    monkeypatch.setattr(search_run, "INFO_HEARTBEAT_MS", 60)
    ours = _until_stop_lines("go infinite nodes 30", 0.5)
    pattern(ours, 30)
    assert len([ln for ln in ours if ln == warning]) >= 2, ours  # with each heartbeat's line
    assert warning not in search_lines("go nodes 30")
    assert warning not in _until_stop_lines("go infinite", 0.3)


LC0_SCORES = [
    ("position startpos moves e2e4", 1, 201),
    ("position startpos moves e2e4", 8, 88),
    ("position startpos", 1, -163),
    ("position startpos", 8, 2105),
    ("position startpos moves d2d4 d7d5", 1, 127),
    ("position fen r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 8, 1317),
    ("position startpos moves g1f3 g8f6 c2c4", 1, 79),
]
"""lc0's last ``info depth`` score (v0.33.0-dev 909a4082, ``--backend=random --task-workers=0
--threads=1 --minibatch-size=7 --smart-pruning-factor=0``, ScoreType WDL_mu) after ``go nodes``
1 and 8, where lc0's search ends at the limit too."""


@pytest.mark.parametrize("position, nodes, cp", LC0_SCORES)
def test_the_score_is_lc0s_on_lc0s_network(position, nodes, cp):
    """With lc0's random network bit for bit (``lc0=1``), the score lc0 printed: lc0 assigns
    its float score to an int (truncated toward zero: 201.9 prints 201, rounded it was 202)."""
    session = Session(Backend="random", BackendOptions="lc0=1", MinibatchSize=7, MaxPrefetch=32)
    try:
        final = [ln for ln in session.go(f"go nodes {nodes}", position).lines if " score " in ln]
        assert f" nodes {nodes} score cp {cp} " in final[-1], final[-1]
    finally:
        session.close()


@pytest.mark.parametrize(
    ("fen", "chess960"),
    [
        ("r3k2r/pppq1ppp/2n2n2/4p3/4P3/2N2N2/PPPQ1PPP/R3K2R w KQkq - 0 1", False),
        ("r3k2r/pppq1ppp/2n2n2/4p3/4P3/2N2N2/PPPQ1PPP/R3K2R w KQkq - 0 1", True),
        ("1r1k1r2/pppppppp/8/8/8/8/PPPPPPPP/1R1K1R2 w FBfb - 0 1", True),
    ],
)
def test_an_info_lines_pv_is_written_as_the_checked_moves(fen, chess960):
    """format_info writes the search's PV as it is (uci_format.pv_uci) where the board's castling
    form is the one asked for: the same words as uci_moves, which plays each move on the board
    (castling included: king to the g/c file, or takes its rook in Chess960), for every PV of a
    search from positions whose PVs castle; and, the form not the board's, uci_moves itself."""
    import chess

    from engine.backends.random import RandomNetwork
    from engine.search import Limit, Search, from_options
    from engine.uci_format import pv_uci, uci_moves

    board = chess.Board(fen, chess960=chess960)
    search = Search(RandomNetwork(), from_options({"SmartPruningFactor": 0.0, "MultiPV": 100}))
    pvs: list[tuple[chess.Move, ...]] = []
    try:
        search.set_position(board)
        search.run(Limit(nodes=3000), on_info=lambda infos: pvs.extend(i.pv for i in infos))
    finally:
        search.close()
    castled = 0
    for pv in pvs:
        for form in (chess960, not chess960):
            assert pv_uci(board, pv, form) == uci_moves(board, pv, form), (pv, form)
        b = board.copy()
        for move in pv:
            castled += b.is_castling(move)
            b.push(move)
    assert castled > 0, "expected PVs that castle"
