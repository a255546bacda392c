"""lc0's collision limit of a minibatch, compiled: asked before every minibatch, where numpy's
float32 scalars cost 5 µs of the GIL (engine/search/params.py's
``SearchParams.collision_visit_limit`` calls it)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def collision_visits(tree_size, start, end, power, most):
    """Collision visits a minibatch may collect in a tree of ``tree_size`` visits (lc0's
    CalculateCollisionsLeft: its int64 nodes): 1 up to ``start``, ``most`` from ``end`` (0: no
    scaling), in between growing as ((size - start) / (end - start)) ** ``power`` (float32) in
    lc0's float arithmetic, rounded to the nearest (its Mix(high, 1, share))."""
    if end <= 0 or tree_size >= end:
        return most
    if tree_size <= start:
        return 1
    f32 = np.float32
    share = (f32(tree_size) - f32(start)) / f32(end - start)
    share = f32(share ** f32(power))
    return int(math.floor(f32(1.0) + f32(most - 1) * share + 0.5))
