"""bin/perf/device-check on a machine without a GPU: says so, skips every step by name, exits 0, fast.

(Its full run needs a GPU; ``bin/perf/device-check OUT --cpu-rehearsal`` runs every step on the CPU
at tiny sizes and takes minutes, so it is not a test.)"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO_ROOT

DEVICE_CHECK = REPO_ROOT / "bin" / "perf" / "device-check"
STEPS = ["env", "lc0", "engine", "cores", "backend", "gpu-tests", "callparts", "startup"]


@pytest.mark.skipif(
    bool(shutil.which("nvidia-smi") or list(Path("/dev").glob("nvidia*"))),
    reason="a GPU may be here: bin/perf/device-check would run its full checks",
)
def test_without_a_gpu_every_step_is_skipped_and_reported(tmp_path):
    out = tmp_path / "out"
    proc = _device_check(out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "no GPU found" in proc.stdout, proc.stdout
    report = (out / "results.md").read_text()
    assert "no GPU found" in report
    for i, step in enumerate(STEPS, 1):
        assert f"## {i}. {step}:" in report, report
        assert f"{step}: skipped (no GPU)" in proc.stdout, proc.stdout
    assert report.count("skipped: no GPU") == len(STEPS), report
    assert [p.name for p in out.iterdir()] == ["results.md"]


def _device_check(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(DEVICE_CHECK), *map(str, args)], capture_output=True, text=True, timeout=60
    )


def test_unknown_step_exits_2_naming_the_allowed(tmp_path):
    proc = _device_check(tmp_path, "--steps", "env,warp")
    assert proc.returncode == 2, proc.stderr
    assert "unknown warp" in proc.stderr and ", ".join(STEPS) in proc.stderr, proc.stderr


def test_wrong_arguments_exit_2(tmp_path):
    proc = _device_check(tmp_path, "--max-minutes", "0")
    assert proc.returncode == 2 and "--max-minutes" in proc.stderr, proc.stderr
