"""bin/match between two engines: PGN, summary, illegal-move accounting."""

from __future__ import annotations

import subprocess
import sys

import chess.pgn
import pytest
from conftest import REPO_ROOT

REPO = REPO_ROOT
RANDOM_ENGINE = f"{sys.executable} -m engine.uci --backend=random"

ILLEGAL_ENGINE = """
import sys
for line in sys.stdin:
    cmd = line.split()[:1]
    if cmd == ["uci"]:
        print("id name liar"); print("uciok")
    elif cmd == ["isready"]:
        print("readyok")
    elif cmd == ["go"]:
        print("bestmove a1a8")
    elif cmd == ["quit"]:
        break
    sys.stdout.flush()
"""


def _run(tmp_path, engine2: str, games: int) -> tuple[str, list]:
    openings = tmp_path / "open.epd"
    openings.write_text("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - \n")
    pgn = tmp_path / "out.pgn"
    proc = subprocess.run(
        [sys.executable, str(REPO / "bin" / "match"), "--engine1", RANDOM_ENGINE, "--engine2", engine2,
         "--games", str(games), "--nodes", "8", "--max-plies", "40", "--openings", str(openings),
         "--pgn", str(pgn)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    with open(pgn) as f:
        parsed = []
        while (game := chess.pgn.read_game(f)) is not None:
            parsed.append(game)
    return proc.stdout.strip().splitlines()[-1], parsed


def test_match_two_engines_alternating_colours(tmp_path):
    summary, games = _run(tmp_path, RANDOM_ENGINE + " --cpuct=2.5", 2)
    assert len(games) == 2
    assert games[0].headers["White"] == "engine1" and games[1].headers["White"] == "engine2"
    assert all(g.headers["FEN"].startswith("rnbqkbnr/pppppppp/8/8/4P3") for g in games)
    assert "illegal moves 0" in summary and "crashes 0" in summary
    wins, draws, losses = (int(summary.split(tok)[1].split()[0]) for tok in ("+", "=", "-"))
    assert wins + draws + losses == 2


def test_match_counts_illegal_moves(tmp_path):
    liar = tmp_path / "liar.py"
    liar.write_text(ILLEGAL_ENGINE)
    summary, games = _run(tmp_path, f"{sys.executable} {liar}", 2)
    assert "illegal moves 2" in summary
    assert "+2 =0 -0" in summary


OPTION_ENGINE = """
import sys
log = open(sys.argv[1], "a")
for line in sys.stdin:
    cmd = line.split()[:1]
    if cmd == ["uci"]:
        print("id name optioned"); print("option name Skill type spin default 1 min 0 max 20"); print("uciok")
    elif cmd == ["setoption"]:
        log.write(line); log.flush()
    elif cmd == ["isready"]:
        print("readyok")
    elif cmd == ["go"]:
        print("bestmove 0000")
    elif cmd == ["quit"]:
        break
    sys.stdout.flush()
"""


@pytest.mark.slow  # a tool's further end-to-end run (docs/performance.md, "The test suite's time")
def test_match_sets_uci_options_as_cutechess_does(tmp_path):
    script = tmp_path / "optioned.py"
    script.write_text(OPTION_ENGINE)
    log = tmp_path / "setoption.log"
    engine2 = f"{sys.executable} {script} {log}"
    base = [sys.executable, str(REPO / "bin" / "match"), "--engine1", RANDOM_ENGINE, "--engine2", engine2,
            "--games", "1", "--nodes", "4", "--pgn", str(tmp_path / "o.pgn")]
    proc = subprocess.run(base + ["--option2", "Skill=7"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert log.read_text().split() == ["setoption", "name", "Skill", "value", "7"]
    bad = subprocess.run(base + ["--option2", "Skill"], capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "expected an option as NAME=VALUE, got 'Skill'" in bad.stderr
    unknown = subprocess.run(base + ["--option2", "Speed=3"], capture_output=True, text=True, timeout=300)
    assert unknown.returncode != 0 and "Speed" in unknown.stderr and "Traceback" not in unknown.stderr
