"""lc0's FastLog, FastExp2 and FastLogistic (utils/fastmath.h), written once: compiled, in
lc0's float32 arithmetic.

:func:`fast_log` is lc0's code step by step: the float's bits read as an integer, its biased
exponent plus a quadratic of its mantissa as the base-2 logarithm, times ln 2. It is what the
selection's cpuct (core/gather.py) and the WDL rescaling of contempt (engine/search/contempt.py,
core/rescale.py) compute with. Off the exact log by up to ~0.0006: at N = 400 lc0's
cpuct is 0.1 % below the exact formula's, enough to reorder two moves whose scores are that
close. tests/engine/search/test_cpuct_fastlog.py checks it bit for bit against lc0's formula
written in numpy over the float32 bit patterns. :func:`fast_exp2` and :func:`fast_logistic` are
the WDL rescaling's (core/rescale.py); tests/engine/search/test_contempt.py checks them, through
it, against lc0's compiled code.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def fast_log(a):
    """lc0's FastLog of a float32: ln 2 * FastLog2, FastLog2 being ``out * (1.3465552 -
    0.34655523 * out) - 127 + expb`` with ``expb`` the biased exponent and ``1 + out`` the
    mantissa (every step float32, as lc0's). Any float32 gives lc0's answer, its bits' (also 0,
    subnormals, infinities, NaNs, negatives: not logarithms)."""
    f32 = np.float32
    u32 = np.uint32
    bits = f32(a).view(u32)
    expb = f32(u32(bits >> u32(23)))
    mantissa = u32(u32(bits & u32(0x7FFFFF)) | u32(0x7F << 23)).view(f32)
    out = f32(mantissa - f32(1.0))
    log2 = f32(out * f32(f32(1.3465552) - f32(f32(0.34655523) * out)))
    log2 = f32(f32(log2 - f32(127.0)) + expb)
    return f32(f32(0.6931471805599453) * log2)


@njit(cache=True, inline="always")
def fast_exp2(a):
    """lc0's FastExp2 of a float32: ``2**e * (1 + f * (0.6602339 + 0.33976606 * f))`` with ``e``
    the integer part of ``a`` (one lower for a negative ``a``: lc0's truncation of ``a - 1``)
    and ``f = a - e``, the power of two added to the float's exponent bits; 0 below -126."""
    f32 = np.float32
    i32 = np.int32
    a = f32(a)
    if a < f32(-126.0):
        return f32(0.0)
    e = i32(a - f32(1.0)) if a < f32(0.0) else i32(a)
    f = f32(a - f32(e))
    out = f32(f32(1.0) + f32(f * f32(f32(0.6602339) + f32(f32(0.33976606) * f))))
    return i32(np.int64(out.view(i32)) + (np.int64(e) << 23)).view(f32)


@njit(cache=True, inline="always")
def fast_logistic(a):
    """lc0's FastLogistic of a float32: ``1 / (1 + FastExp2(-a * log2(e)))``; 1 above 20 and 0
    below -20."""
    f32 = np.float32
    a = f32(a)
    if a > f32(20.0):
        return f32(1.0)
    if a < f32(-20.0):
        return f32(0.0)
    return f32(f32(1.0) / f32(f32(1.0) + fast_exp2(f32(f32(1.442695040) * -a))))
