"""lc0's cpuct is float32 with its FastLog (classic/search.cc ComputeCpuct, utils/fastmath.h).
FastLog is written once, compiled (engine/search/core/fastmath.py): checked here bit for bit
against lc0's code transcribed in numpy below, over float32 bit patterns of every kind; the
selection's cpuct against it; and against the exact logarithm,
which lc0 does not use: at N = 400 the two cpucts differ by 0.14 %."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from engine.search.core import fastmath
from engine.search.core.gather import _cpuct, _fast_log

F32 = np.float32
INIT, BASE, FACTOR = 1.745, 38739.0, 3.894
"""lc0's CPuct, CPuctBase, CPuctFactor defaults."""


@njit(cache=True)
def fast_log(a):
    """The compiled FastLog of each element of a float32 array (a new array, its shape)."""
    flat = a.ravel()
    out = np.empty(flat.size, np.float32)
    for i in range(flat.size):
        out[i] = fastmath.fast_log(flat[i])
    return out.reshape(a.shape)


def lc0_fast_log(a: np.ndarray) -> np.ndarray:
    """lc0's FastLog (utils/fastmath.h) line by line in numpy: ln 2 * (out * (1.3465552 -
    0.34655523 * out) - 127 + expb), expb the biased exponent, 1 + out the mantissa."""
    bits = np.ascontiguousarray(a, F32).view(np.uint32)
    expb = (bits >> np.uint32(23)).astype(F32)
    out = ((bits & np.uint32(0x7FFFFF)) | np.uint32(0x7F << 23)).view(F32) - F32(1.0)
    with np.errstate(all="ignore"):
        log2 = out * (F32(1.3465552) - F32(0.34655523) * out) - F32(127) + expb
        return F32(0.6931471805599453) * log2


def lc0_cpuct(n: int) -> float:
    ratio = F32(F32(F32(n) + F32(BASE)) / F32(BASE))
    return float(F32(F32(INIT) + F32(F32(FACTOR) * lc0_fast_log(np.array([ratio]))[0])))


def float32_patterns() -> np.ndarray:
    """Edge cases (zeros, subnormals, the smallest and largest normals, powers of two and their
    neighbours, 1 and its neighbours, infinities, NaNs, negatives), every mantissa of [1, 2)'s
    first 2**16, and 2**20 random bit patterns, as float32."""
    specials = np.array([0x0, 0x1, 0x7FFFFF, 0x800000, 0x800001, 0x7F7FFFFF, 0x7F800000,
                         0x7FC00000, 0x7F800001, 0x3F800000, 0x3F7FFFFF, 0x3F800001], np.uint32)  # fmt: skip
    powers = (np.arange(1, 255, dtype=np.uint32) << np.uint32(23))[:, None]
    around = (powers + np.array([-1, 0, 1], np.int64).astype(np.uint32)).ravel()
    mantissas = np.uint32(0x3F800000) + np.arange(1 << 16, dtype=np.uint32)
    rng = np.random.default_rng(67).integers(0, 1 << 32, 1 << 20, dtype=np.uint64)
    bits = np.concatenate([specials, around, mantissas, rng.astype(np.uint32)])
    bits = np.concatenate([bits, bits | np.uint32(0x80000000)])  # and their negatives
    return bits.view(F32)


@pytest.mark.parametrize("n", [0, 1, 7, 400, 12_345, 1_000_000, 2**31 - 1])
def test_cpuct_is_lc0s_float32_fastlog_formula(n: int):
    assert _cpuct(n, INIT, BASE, FACTOR) == lc0_cpuct(n)


def test_the_one_fastlog_is_lc0s_bit_for_bit():
    """The compiled FastLog gives lc0's bits on every kind of float32, in a compiled loop and
    called one float at a time (bits compared: NaN is not equal to itself)."""
    xs = float32_patterns()
    want = lc0_fast_log(xs).view(np.uint32)
    np.testing.assert_array_equal(fast_log(xs).view(np.uint32), want)
    two_d = xs[:12].reshape(3, 4)
    np.testing.assert_array_equal(fast_log(two_d).view(np.uint32), want[:12].reshape(3, 4))
    some = xs[~np.isnan(xs)][:: len(xs) // 1000]  # a NaN's payload may change on the way in
    singles = np.array([fastmath.fast_log(x) for x in some], F32)
    np.testing.assert_array_equal(singles.view(np.uint32), lc0_fast_log(some).view(np.uint32))


def test_fastlog_matches_the_bit_level_one_and_is_not_the_exact_log():
    """The selection's FastLog gives lc0's on positive normal floats (cpuct's ratio is >= 1)."""
    xs = np.array([1e-30, 1e-3, 0.37, 0.5, 1.0, 1.0103, 2.0, 3.7, 1e6, 3e38], F32)
    ours = np.array([_fast_log(x) for x in xs], F32)
    np.testing.assert_array_equal(ours, fast_log(xs))
    normal = float32_patterns()
    normal = normal[np.isfinite(normal) & (normal >= np.finfo(F32).tiny)][::64]
    ours = np.array([_fast_log(x) for x in normal], F32)
    np.testing.assert_array_equal(ours, lc0_fast_log(normal))
    assert abs(_cpuct(400, INIT, BASE, FACTOR) / (INIT + FACTOR * np.log1p(400 / BASE)) - 1) > 1e-3
    assert _cpuct(400, INIT, BASE, 0.0) == float(F32(INIT))
