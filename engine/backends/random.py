"""lc0's ``--backend=random``: instant, deterministic pseudo-random network outputs.

The outputs of a position depend only on its input planes (a hash of their bytes seeds the
generator), so the same position always gets the same policy and value, as with a real network.
For tests and for exercising search and UCI without JAX.
"""

from __future__ import annotations

import hashlib

import numpy as np

from engine.backend import POLICY_SIZE, NetworkOutput, register_backend

PAD_ROWS = 8
"""Batch-size step of the XLA backend's small CPU batch sizes (backend_xla.options.batch_sizes)."""

RANDOM_POLICY_SCALE = 2.0
"""Standard deviation of the random policy logits (lc0's random backend uses a similar spread)."""


class RandomNetwork:
    """A Network whose outputs are a pure function of the input planes; has WDL, no moves-left head."""

    input_format = 1
    has_wdl = True
    has_mlh = False
    max_batch = 1024
    preferred_batch = 7  # as lc0's CPU backends: the search then behaves as with a real CPU network

    def __init__(self, name: str = "random") -> None:
        self.name = name

    def padded_size(self, n: int) -> int:
        """Rows a batch of ``n`` costs, as the XLA backend on a CPU (sizes in steps of 8): the
        search then prefetches what it does with a real CPU network, so a search measured
        with this instant network costs what the engine's search costs."""
        return -(-n // PAD_ROWS) * PAD_ROWS

    def evaluate(self, planes: np.ndarray) -> NetworkOutput:
        """planes float32 [N, 112, 8, 8] -> policy [N, 1858], q/d/m [N]."""
        planes = np.ascontiguousarray(planes, dtype=np.float32)
        n = planes.shape[0]
        policy = np.empty((n, POLICY_SIZE), np.float32)
        q = np.empty(n, np.float32)
        d = np.empty(n, np.float32)
        for i in range(n):
            seed = int.from_bytes(hashlib.blake2b(planes[i].tobytes(), digest_size=8).digest(), "little")
            rng = np.random.default_rng(seed)
            policy[i] = rng.normal(0.0, RANDOM_POLICY_SCALE, POLICY_SIZE)
            w, dd, l = rng.dirichlet((1.0, 1.0, 1.0))
            q[i] = w - l
            d[i] = dd
        return NetworkOutput(policy=policy, q=q, d=d, m=np.zeros(n, np.float32))


def load(path: str, options: str) -> RandomNetwork:
    """Loader for register_backend: ignores the weights path (as lc0's random backend does)."""
    return RandomNetwork()


register_backend("random", load)
