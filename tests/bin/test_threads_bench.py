"""`bin/perf/threads`: the scaling table through UCI, run on the real engine (random backend,
tiny searches). Slow: each setting starts an engine process (seconds on the 2-core machine)."""

from __future__ import annotations

import re
import subprocess

import pytest
from conftest import REPO_ROOT


@pytest.mark.slow
def test_prints_each_settings_median_and_its_ratio_to_the_first():
    proc = subprocess.run(
        [str(REPO_ROOT / "bin" / "perf" / "threads"), "--threads", "1,2", "--nodes", "300",
         "--repeats", "1", "--minibatch-size", "8"],
        capture_output=True, text=True, timeout=600, cwd="/",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = re.findall(r"xlazero\s+Threads (\d): +(\d+) nodes/s +\(x([\d.]+) our Threads 1\)",
                      proc.stdout)  # fmt: skip
    assert [r[0] for r in rows] == ["1", "2"], proc.stdout
    assert all(int(r[1]) > 0 for r in rows) and rows[0][2] == "1.00", proc.stdout
