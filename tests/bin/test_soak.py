"""The short version of `bin/check/soak` (the long one: README, "Tools"): each kind small, and the log
resumes. The whole file runs in about 20 s on the project's 2-core machine."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT

SOAK = REPO_ROOT / "bin" / "check" / "soak"
sys.path.insert(0, str(REPO_ROOT / "bin"))

from xlazero_perf.soak import CUTECHESS, STOCKFISH, Tracker, classify, is_quit  # noqa: E402

FAST_MUTATIONS = ("truncate,empty,garbage,gzip_bomb,wrong_suffix,truncate_inner,external_dotdot,"
                  "external_abs,external_etc,external_symlink")  # fmt: skip
"""Mutations that fail fast (no network compiles): the long run covers the loadable ones."""


def soak(*args: str, log: Path, timeout: float = 120) -> tuple[subprocess.CompletedProcess, list]:
    run = subprocess.run([str(SOAK), *args, "--log", str(log), "--max-minutes", "3"],
                         capture_output=True, text=True, timeout=timeout)  # fmt: skip
    records = [json.loads(ln) for ln in log.read_text().splitlines()] if log.exists() else []
    return run, records


@pytest.mark.slow  # a tool's further end-to-end run (docs/performance.md, "The test suite's time")
def test_networks_short(tmp_path):
    log = tmp_path / "networks.jsonl"
    run, records = soak("networks", "--count", "8", "--mutations", FAST_MUTATIONS,
                        "--bomb-mb", "64", "--seed", "3", log=log)  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert len(records) == 8 and {r["outcome"] for r in records} <= {"ok_refused", "ok_loaded"}
    assert "failures: 0" in run.stdout


@pytest.mark.slow  # a tool's further end-to-end run (docs/performance.md, "The test suite's time")
def test_uci_short_and_resume(tmp_path):
    log = tmp_path / "uci.jsonl"
    run, records = soak("uci", "--count", "100", "--interleavings", "10", log=log)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert len(records) == 4 + 10 + 1  # 100 lines in batches of 25, the bursts, quit
    assert sum(r["counts"]["lines"] for r in records if r["case"] == "lines") >= 98
    quit_case = [r for r in records if r["case"] == "quit"]
    assert quit_case and quit_case[0]["quit_s"] <= 1.0
    # A rerun with the same log has nothing left to do; a larger count runs only the new cases.
    again, records2 = soak("uci", "--count", "100", "--interleavings", "11", log=log)
    assert again.returncode == 0 and len(records2) == len(records) + 1, again.stdout[-2000:]


def test_games_one_short_game(tmp_path):
    if not CUTECHESS.is_file() or not (STOCKFISH.is_file() or shutil.which("stockfish")):
        pytest.skip(f"needs cutechess-cli ({CUTECHESS}) and Stockfish ({STOCKFISH})")
    log = tmp_path / "games.jsonl"
    run, records = soak("games", "--count", "1", "--tc", "0.5+0.01",
                        "--engine-args=--backend=random --backend-opts=delay=5",
                        log=log)  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert records and records[0]["outcome"] == "ok" and records[0]["plies"] > 0


def test_tracker_follows_the_engines_position_parsing():
    tr = Tracker()
    tr.sent("position startpos moves e2e4 e7e5")
    tr.sent("position startpos moves e2e4 e7e6 a1a1")  # illegal: the engine keeps the last one
    tr.sent("position fen 8/8/8/8/8/8/8/8 w - - 0 1")  # no kings: refused
    tr.sent(b"\xff\xfe position startpos")  # not a command
    assert tr.board.fen().split()[0] == "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR"
    tr.sent("go nodes 1")
    tr.sent("ucinewgame")
    assert len(tr.pending) == 1 and tr.board.ply() == 0
    assert is_quit("\x85quit now") and not is_quit("\ufeffquit")


def test_classify_counts_abnormal_endings():
    assert classify("White mates", "") == "ok"
    assert classify("Black makes an illegal move: e2e5", "") == "illegal"
    assert classify("White loses on time", "") == "time_loss"
    assert classify("Black loses on time", "", "xlazero", "stockfish") == "opponent_abnormal"
    assert classify("Black disconnects", "") == "crash"
    assert classify("White's connection stalls", "") == "stall"
    assert classify("Draw by adjudication", "1 <xlazero(0): bestmove 0000") == "bestmove_0000"
