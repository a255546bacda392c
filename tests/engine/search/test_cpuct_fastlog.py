"""lc0's cpuct is float32 with its FastLog (classic/search.cc ComputeCpuct, utils/fastmath.h):
the selection's ``_cpuct`` (frexp-based, compiled) against the same formula evaluated with the
bit-level FastLog of engine/search/contempt.py (checked there against lc0's own code) and
against the exact logarithm, which lc0 does not use: at N = 400 the two differ by 0.14 %."""

from __future__ import annotations

import numpy as np
import pytest

from engine.search.contempt import fast_log
from engine.search.core.gather import _cpuct, _fast_log

F32 = np.float32
INIT, BASE, FACTOR = 1.745, 38739.0, 3.894
"""lc0's CPuct, CPuctBase, CPuctFactor defaults."""


def lc0_cpuct(n: int) -> float:
    ratio = F32(F32(F32(n) + F32(BASE)) / F32(BASE))
    return float(F32(F32(INIT) + F32(F32(FACTOR) * fast_log(np.array([ratio]))[0])))


@pytest.mark.parametrize("n", [0, 1, 7, 400, 12_345, 1_000_000, 2**31 - 1])
def test_cpuct_is_lc0s_float32_fastlog_formula(n: int):
    assert _cpuct(n, INIT, BASE, FACTOR) == lc0_cpuct(n)


def test_fastlog_matches_the_bit_level_one_and_is_not_the_exact_log():
    xs = np.array([1e-30, 1e-3, 0.37, 0.5, 1.0, 1.0103, 2.0, 3.7, 1e6, 3e38], F32)
    ours = np.array([_fast_log(x) for x in xs], F32)
    np.testing.assert_array_equal(ours, fast_log(xs))
    assert abs(_cpuct(400, INIT, BASE, FACTOR) / (INIT + FACTOR * np.log1p(400 / BASE)) - 1) > 1e-3
    assert _cpuct(400, INIT, BASE, 0.0) == float(F32(INIT))
