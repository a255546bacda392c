"""What the host's cores give two threads at once: the speed-up of a compiled loop run on two
threads over the same loop on one (2.0: two cores, each as fast as one alone).

A virtual machine's two cores are not always two: the hypervisor may place them on one
physical core's two hardware threads, or beside another guest's busy core, and that changes
from minute to minute (on the 2-core AMD EPYC host of 2026-12-04 a pair of these loops took
from 0.95x to 1.35x one loop's time). A search's two-thread scaling is read against this
figure, measured beside it.
"""

from __future__ import annotations

import threading
import time

import numpy as np
from numba import njit

_STEPS = 20_000_000


@njit(nogil=True)
def _mix(steps: int) -> int:
    """Integer work on registers only (xorshift and adds): no memory, no lock, no GIL."""
    x, y, z = np.uint64(1), np.uint64(2), np.uint64(3)
    total = np.uint64(0)
    for _ in range(steps):
        x ^= x << np.uint64(13)
        x ^= x >> np.uint64(7)
        y ^= y << np.uint64(17)
        y ^= y >> np.uint64(9)
        z += x ^ y
        total += z & np.uint64(1023)
    return int(total)


def _alone(steps: int) -> float:
    start = time.perf_counter()
    _mix(steps)
    return time.perf_counter() - start


def _pair(steps: int) -> float:
    threads = [threading.Thread(target=_mix, args=(steps,)) for _ in range(2)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start


def pair_speedup(steps: int = _STEPS, repeats: int = 3) -> float:
    """Two loops on two threads against one on one: 2 x (one's time) / (the pair's time), the
    median of ``repeats`` alternated measurements (about 0.1 s each on a current core)."""
    _mix(1000)  # compiled (or loaded from numba's cache) before the clock starts
    ratios = []
    for _ in range(repeats):
        alone = _alone(steps)
        ratios.append(2.0 * alone / _pair(steps))
    return sorted(ratios)[len(ratios) // 2]
