"""lc0's ``--backend=random``: instant, deterministic pseudo-random network outputs.

The outputs of a position depend only on its input planes (a hash of them picks a window of a
fixed table of random logits, and a random W/D/L), so the same position always gets the same
policy and value, as with a real network. For tests,
for exercising search and UCI without JAX, and for measuring the search's own cost: a batch
costs a few microseconds per row and holds the GIL only that long, so nearly all the time a
search spends with this network is the search's.
"""

from __future__ import annotations

import numpy as np

from engine.backend import (
    INPUT_PLANES,
    POLICY_SIZE,
    BackendAttributes,
    NetworkOutput,
    register_backend,
)

RANDOM_POLICY_SCALE = 2.0
"""Standard deviation of the random policy logits (lc0's random backend uses a similar spread)."""

TABLE_SIZE = 1 << 16
"""Random logits a position's policy is a window of; and the number of random (W, D, L)."""

_SEED = 20261125

_rng = np.random.default_rng(_SEED)
_LOGITS = _rng.normal(0.0, RANDOM_POLICY_SCALE, TABLE_SIZE + POLICY_SIZE).astype(np.float32)
_WINDOWS = np.lib.stride_tricks.sliding_window_view(_LOGITS, POLICY_SIZE)
_WDL = _rng.dirichlet((1.0, 1.0, 1.0), TABLE_SIZE).astype(np.float32)
_HASH_WORDS = np.random.default_rng(_SEED).integers(0, 2**63, 2 * INPUT_PLANES, np.uint64) * 2 + 1
"""One word a 64-bit mask of set squares and one a plane's first value, for each plane."""


def _hash_rows(planes: np.ndarray) -> np.ndarray:
    """uint64 hash of each position's planes: which squares are set, and each plane's value on
    its first square (lc0's planes are 0/1 except the constant ones, such as rule50), as a dot
    product with random odd 64-bit words (mod 2**64). Integer arithmetic: exact, so a position
    hashes alike in any batch."""
    n = planes.shape[0]
    bits = np.packbits(planes.reshape(n, -1) != 0, axis=1).view(np.uint64)
    first = planes[:, :, 0, 0].view(np.uint32).astype(np.uint64)
    words = np.concatenate([bits, first], axis=1)
    h = (words * _HASH_WORDS).sum(axis=1, dtype=np.uint64)
    return h ^ (h >> np.uint64(29))


class RandomNetwork:
    """A Network whose outputs are a pure function of the input planes; has WDL, no moves-left head."""

    input_format = 1
    has_wdl = True
    has_mlh = False
    max_batch = 1024
    preferred_batch = 7  # as lc0's CPU backends: the search then behaves as with a real CPU network
    concurrency = 1

    def __init__(self, name: str = "random") -> None:
        self.name = name

    def attributes(self) -> BackendAttributes:
        return BackendAttributes(
            name=self.name,
            description=(),
            max_batch=self.max_batch,
            preferred_batch=self.preferred_batch,
            padded_size=self.padded_size,
            concurrency=self.concurrency,
        )

    def padded_size(self, n: int) -> int:
        """Rows a batch of ``n`` costs, as the XLA backend on a CPU (sizes that are multiples
        of the minibatch): the search then prefetches what it does with a real CPU network, so
        a search measured with this instant network costs what the engine's search costs."""
        return -(-n // self.preferred_batch) * self.preferred_batch

    def evaluate(self, planes: np.ndarray) -> NetworkOutput:
        """planes float32 [N, 112, 8, 8] -> policy [N, 1858], q/d/m [N]."""
        planes = np.ascontiguousarray(planes, dtype=np.float32)
        n = planes.shape[0]
        h = _hash_rows(planes)
        policy = _WINDOWS[(h % np.uint64(TABLE_SIZE)).astype(np.intp)]
        w, d, l = _WDL[((h >> np.uint64(32)) % np.uint64(TABLE_SIZE)).astype(np.intp)].T
        return NetworkOutput(policy=policy, q=w - l, d=d.copy(), m=np.zeros(n, np.float32))


def load(path: str, options: str) -> RandomNetwork:
    """Loader for register_backend: ignores the weights path (as lc0's random backend does)."""
    return RandomNetwork()


register_backend("random", load)
