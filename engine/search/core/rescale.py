"""lc0's WDLRescale (src/search/classic/search.cc), compiled: one WDL at a time in lc0's float32
arithmetic, with its FastLog and FastLogistic (core/fastmath.py). engine/search/contempt.py
says what the rescaling means and when it applies; here is its arithmetic alone, called for a
batch's values as they leave the network (:func:`rescale_rows`, no Python a row) and for the
values an info line reports (:func:`rescale`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .fastmath import fast_log, fast_logistic

EPS = np.float32(0.0001)
"""lc0's WDLRescale leaves a WDL with any of W, D, L within this of 0 or 1 as it is."""


@njit(cache=True, error_model="numpy")
def rescale(v, d, ratio, diff, sign, invert, max_s):
    """(v, d, mu) of one WDL (``v`` = W - L, ``d`` = D) rescaled: its spread ``s`` by ``ratio``
    (at most ``max_s`` before), its centre ``mu`` moved by ``sign * s**2 * diff``; ``invert``:
    the reverse (the spread divided by ``ratio``, the centre moved back, ``max_s`` bounding the
    spread it gives), as lc0 reports. A WDL with W, D or L within EPS of 0 or 1 stays as it is,
    mu 0. Every step float32, as lc0's (a division by zero gives lc0's infinity, not an
    error)."""
    f32 = np.float32
    one, two = f32(1.0), f32(2.0)
    v, d = f32(v), f32(d)
    ratio32, diff32, max_s32 = f32(ratio), f32(diff), f32(max_s)
    if invert:
        diff32, ratio32 = -diff32, f32(one / ratio32)
    w = f32(f32(f32(one + v) - d) / two)
    l = f32(f32(f32(one - v) - d) / two)
    top = f32(one - EPS)
    if not (w > EPS and d > EPS and l > EPS and w < top and d < top and l < top):
        return v, d, f32(0.0)
    a = fast_log(f32(f32(one / l) - one))
    b = fast_log(f32(f32(one / w) - one))
    s = f32(two / f32(a + b))
    if not invert:
        s = min(max_s32, s)
    mu = f32(f32(a - b) / f32(a + b))
    s_new = f32(s * ratio32)
    if invert:
        s, s_new = s_new, s
        s = min(max_s32, s)
    mu_new = f32(mu + f32(f32(f32(f32(sign) * s) * s) * diff32))
    w_new = fast_logistic(f32(f32(f32(-1.0) + mu_new) / s_new))
    l_new = fast_logistic(f32(f32(f32(-1.0) - mu_new) / s_new))
    return f32(w_new - l_new), max(f32(0.0), f32(f32(one - w_new) - l_new)), mu_new


@njit(cache=True, nogil=True, error_model="numpy")
def rescale_rows(q, d, depths, n, ratio, diff, root_sign, max_s, q_out, d_out):
    """The first ``n`` network results (``q`` in the view of the side to move, ``d``) rescaled
    into ``q_out`` and ``d_out`` as lc0's FetchSingleNodeResult: in the view of the side that
    moved into the position (q negated), with that side's sign: the root's opponent at an even
    depth (``root_sign`` negated), the root's side at an odd one."""
    f32 = np.float32
    for i in range(n):
        sign = f32(root_sign) if depths[i] & 1 else f32(-root_sign)
        v, dd, _mu = rescale(-f32(q[i]), d[i], ratio, diff, sign, False, max_s)
        q_out[i] = -v
        d_out[i] = dd
