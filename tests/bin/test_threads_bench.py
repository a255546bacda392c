"""`bin/perf/threads`: the scaling table through UCI, run on the real engine (random backend,
tiny searches). Slow: each setting starts an engine process (seconds on the 2-core machine)."""

from __future__ import annotations

import re
import subprocess

import pytest
from conftest import REPO_ROOT


def _threads(*args: str) -> subprocess.CompletedProcess[str]:
    """bin/perf/threads with ``args``, run from another directory."""
    command = [str(REPO_ROOT / "bin" / "perf" / "threads"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd="/")


@pytest.mark.slow
def test_prints_each_settings_median_its_ratio_to_the_first_and_the_ceiling():
    proc = _threads("--threads", "1,2", "--nodes", "300", "--repeats", "1", "--minibatch-size", "8",
                    "--ceiling")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = re.findall(r"xlazero\s+Threads (\d): +(\d+) nodes/s +\(x([\d.]+) our Threads 1; "
                      r"round by round x([\d.]+)\)", proc.stdout)  # fmt: skip
    assert [r[0] for r in rows] == ["1", "2"], proc.stdout
    assert all(int(r[1]) > 0 for r in rows) and rows[0][2] == rows[0][3] == "1.00", proc.stdout
    # Two engines at Threads 1 searched at once: their nodes/s together, and Threads 2 against it.
    together = re.search(r"two of ours at Threads 1 at once: +(\d+) nodes/s together", proc.stdout)
    assert together and int(together.group(1)) > 0, proc.stdout
    share = re.search(r"Threads 2 / two at once, round by round: x([\d.]+)", proc.stdout)
    assert share and float(share.group(1)) > 0, proc.stdout


@pytest.mark.slow
def test_one_engine_switches_threads_between_sets_and_alternates_their_order():
    proc = _threads("--threads", "1,2", "--nodes", "300", "--repeats", "2", "--minibatch-size", "8",
                    "--one-engine")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    order = re.findall(r"round (\d): xlazero Threads (\d): (\d+) nodes/s", proc.stdout)
    # Round 1 searches Threads 1 first, round 2 Threads 2 first: each setting in turn goes
    # first, so that a drift of the host's speed within a round falls on both of them.
    assert [(r, t) for r, t, _ in order] == [("1", "1"), ("1", "2"), ("2", "2"), ("2", "1")]
    assert all(int(rate) > 0 for _, _, rate in order), proc.stdout
    rows = re.findall(r"xlazero\s+Threads (\d): +(\d+) nodes/s +\(x", proc.stdout)
    assert [t for t, _ in rows] == ["1", "2"], proc.stdout


@pytest.mark.slow
def test_one_engine_refuses_the_ceiling_with_a_reason():
    proc = _threads("--one-engine", "--ceiling")
    assert proc.returncode == 2 and "--ceiling" in proc.stderr, proc.stderr
