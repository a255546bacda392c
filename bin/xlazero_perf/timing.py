"""Side-by-side timing for noisy shared machines.

Candidates are timed round-robin (A, B, C, A, B, C, …) so a burst of load from other processes hits
all of them alike; each candidate's figure is the median over the rounds.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping

import jax


def time_round_robin(
    fns: Mapping[str, Callable[..., object]],  # called without arguments
    *,
    rounds: int = 5,
    min_time_s: float = 0.05,
    warmup: int = 1,
) -> dict[str, float]:
    """Median seconds per call of each zero-argument function, timed interleaved.

    Each function is called ``warmup`` times first (compilation), then, per round, repeated enough
    times to last about ``min_time_s`` (calibrated once), blocking on its result.
    """
    reps: dict[str, int] = {}
    for name, fn in fns.items():
        for _ in range(warmup):
            jax.block_until_ready(fn())
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        one = max(time.perf_counter() - t0, 1e-6)
        reps[name] = max(1, int(min_time_s / one))
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            k = reps[name]
            t0 = time.perf_counter()
            out = None
            for _ in range(k):
                out = fn()
            jax.block_until_ready(out)
            samples[name].append((time.perf_counter() - t0) / k)
    return {name: statistics.median(s) for name, s in samples.items()}


def matmul_peak_gflops(n: int = 2048, rounds: int = 5, dtype=None) -> float:
    """GFLOP/s of one jitted ``n×n @ n×n`` matmul (f32 unless ``dtype``): the reference peak."""
    import jax.numpy as jnp
    import numpy as np

    dtype = dtype or jnp.float32
    a = jnp.asarray(np.random.default_rng(0).standard_normal((n, n)), dtype)
    f = jax.jit(lambda a: a @ a)
    t = time_round_robin({"mm": lambda: f(a)}, rounds=rounds, min_time_s=0.1)["mm"]
    return 2 * n**3 / t / 1e9
