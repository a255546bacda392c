"""bin/perf/bench --lc0: both engines searched side by side against a fake lc0 (no real lc0 needed)."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys

from conftest import REPO_ROOT

BENCH = REPO_ROOT / "bin" / "perf" / "bench"

# Enough UCI for bin/perf/bench: it logs its argv and every command to the file named by its first
# argument's neighbour (argv[0] + ".log").
FAKE_LC0 = """\
import sys
log = open(__file__ + ".log", "a")
log.write("argv " + " ".join(sys.argv[1:]) + "\\n")
for line in sys.stdin:
    log.write(line); log.flush()
    words = line.split()
    if words[:1] == ["uci"]:
        print("id name fake lc0"); print("uciok")
    elif words[:1] == ["isready"]:
        print("readyok")
    elif words[:1] == ["go"]:
        n = int(words[words.index("nodes") + 1])
        print(f"info depth 1 seldepth 2 time 1 nodes {n // 2} score cp 10 pv e2e4")
        print(f"info depth 2 seldepth 3 time 2 nodes {n + 1} score cp 12 nps 1000 pv e2e4 e7e5")
        print("bestmove e2e4 ponder e7e5")
    elif words[:1] == ["quit"]:
        break
    sys.stdout.flush()
"""


def _fake_lc0(tmp_path):
    script = tmp_path / "fake_lc0.py"
    script.write_text(FAKE_LC0)
    binary = tmp_path / "lc0"
    binary.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$@"\n')
    binary.chmod(0o755)
    return binary, tmp_path / "fake_lc0.py.log"


def _bench(*args, cwd):
    return subprocess.run(
        [sys.executable, str(BENCH), "--backend", "random", "--nodes", "24", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_bench_runs_lc0_side_by_side(tmp_path):
    binary, log = _fake_lc0(tmp_path)
    out = _bench(
        "--lc0",
        str(binary),
        "--lc0-backend",
        "random",
        "--repeats",
        "2",
        "--positions",
        "2",
        "--lc0-option",
        "Threads=1",
        "--json",
        str(tmp_path / "b.json"),
        "--trace",
        str(tmp_path / "t.csv"),
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout
    assert "round 1/2 (xlazero first)" in text and "round 2/2 (lc0 first)" in text, text
    assert text.count("    lc0: median") == 2, text
    assert "process CPU" in text, text
    assert "Total xlazero:" in text and "Total lc0:" in text and "Ratio xlazero/lc0:" in text, text
    # lc0's nodes are its last info line's (25 for go nodes 24), not the limit.
    assert "nodes 25, 25" in text, text

    commands = log.read_text().splitlines()
    assert commands[0] == "argv --backend=random"  # no weights: the default ONNX net is not lc0's
    assert "setoption name SmartPruningFactor value 0" in commands
    assert "setoption name Threads value 1" in commands
    gos = [i for i, c in enumerate(commands) if c.startswith("go ")]
    assert len(gos) == 1 + 2 * 2  # warm-up + positions x rounds
    for i in gos[1:]:  # each measured search: ucinewgame, position, isready, go
        assert commands[i - 3] == "ucinewgame" and commands[i - 2].startswith("position fen ")
        assert commands[i - 1] == "isready" and commands[i] == "go nodes 24"

    report = json.loads((tmp_path / "b.json").read_text())
    assert len(report["positions"]) == 2
    assert report["lc0"]["nodes"] == 4 * 25 and report["xlazero"]["nodes"] >= 4 * 24
    assert report["ratio"]["total"] > 0 and len(report["ratio"]["per_round"]) == 2

    # --trace: a row a batch of each measured search (positions x rounds), phases in order.
    with (tmp_path / "t.csv").open() as f:
        rows = list(csv.DictReader(f))
    names = {r["search"] for r in rows}
    assert names == {f"position {p} round {r}" for p in (1, 2) for r in (1, 2)}, names
    for r in rows:
        times = [
            float(r[f"{p}_{e}_ms"])
            for p in ("gather", "device", "backup")
            for e in ("start", "end")
        ]
        assert times == sorted(times) and int(r["rows"]) >= 1, r
    assert text.count("batches, rows median") == 4, text
    per_batch = report["xlazero"]["nodes"] / len(rows)
    assert f"all searches: {per_batch:.1f} nodes a batch of " in text, (per_batch, text)


def test_bench_lc0_weights_default_to_a_pb_gz_weights_file(tmp_path):
    binary, log = _fake_lc0(tmp_path)
    net = REPO_ROOT / "nets" / "xlazero-sf6x64.pb.gz"
    out = _bench(
        "--weights",
        str(net),
        "--lc0",
        str(binary),
        "--repeats",
        "1",
        "--positions",
        "1",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert log.read_text().splitlines()[0] == f"argv --backend=blas --weights={net}"


def test_bench_onnx_weights_need_lc0_weights(tmp_path):
    binary, _ = _fake_lc0(tmp_path)
    out = _bench("--lc0", str(binary), "--lc0-backend", "blas", "--repeats", "1", cwd=tmp_path)
    assert out.returncode == 2
    assert "--lc0-weights" in out.stderr and ".onnx" in out.stderr, out.stderr


def test_bench_missing_lc0_is_a_clear_error(tmp_path):
    missing = tmp_path / "no" / "lc0"
    out = _bench("--lc0", str(missing), "--lc0-backend", "random", "--repeats", "1", cwd=tmp_path)
    assert out.returncode == 2
    assert f"cannot start lc0 '{missing}'" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_bench_lc0_dying_at_start_shows_its_stderr(tmp_path):
    binary = tmp_path / "lc0"
    binary.write_text("#!/bin/sh\necho 'Unhandled exception: no such backend' >&2\nexit 1\n")
    binary.chmod(0o755)
    out = _bench("--lc0", str(binary), "--lc0-backend", "random", "--repeats", "1", cwd=tmp_path)
    assert out.returncode == 2
    assert str(binary) in out.stderr and "no such backend" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_breakdown_times_every_part_of_the_search(tmp_path):
    """--breakdown: a row per part with its CPU a node and its calls a node; every part runs
    in a search, and the parts inside ``gather`` cost no more than ``gather`` itself."""
    out_json = tmp_path / "bench.json"
    out = subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "--backend",
            "random",
            "--nodes",
            "300",
            "--repeats",
            "1",
            "--breakdown",
            "--json",
            str(out_json),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert re.search(r"Breakdown \(search-thread CPU us a node over 3\d\d nodes", out.stdout)
    parts = json.loads(out_json.read_text())["breakdown_us_per_node"]
    assert len(parts) == 9, parts
    # Syzygy probes run only with tables; every other part runs in a search.
    assert all(us > 0 for name, us in parts.items() if "Syzygy" not in name), parts
    start = parts["gather's start (room, walk, limits; incl. the row below)"]
    assert parts["root filter (smart pruning's hint)"] < start


def test_simulated_accelerator_latency_counts_in_the_wall_time(tmp_path):
    """--latency-ms: every network call waits that long, so 140 nodes in batches of at most 7
    (20+ calls) take at least 20 x 20 ms of wall time a search on one search thread (two
    threads' calls may overlap: the random backend takes any number at once)."""
    out = subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "--backend",
            "random",
            "--nodes",
            "140",
            "--repeats",
            "1",
            "--minibatch-size",
            "7",
            "--latency-ms",
            "20",
            "--option",
            "Threads=1",
            "--json",
            str(tmp_path / "bench.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads((tmp_path / "bench.json").read_text())
    seconds = report["positions"][0]["xlazero"]["seconds"][0]
    assert seconds >= 140 / 7 * 0.020, seconds
