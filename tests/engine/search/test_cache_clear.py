"""``NNCache.clear`` (ucinewgame, a changed history fill or contempt): every entry forgotten, and
an empty cache's memory left untouched (the kernel's own view: the process's resident memory)."""

from __future__ import annotations

import numpy as np

from engine.search.core.cache import insert, lookup
from engine.search.state import NNCache


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_clear_forgets_every_entry():
    cache = NNCache(1000)
    moves, priors = np.arange(3, dtype=np.int32), np.array([300, 200, 100], np.uint16)
    # Position keys are hashes: spread over 64 bits (a slot is chosen by the high ones).
    keys = np.arange(1, 50, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    for key in keys:
        insert(cache.arrays, key, np.float32(0.1), np.float32(0.2), np.float32(3.0),
               moves, priors, 3)  # fmt: skip
    assert len(cache) == len(keys) and all(lookup(cache.arrays, key) >= 0 for key in keys)
    cache.clear()
    assert len(cache) == 0 and cache.hashfull() == 0
    assert all(lookup(cache.arrays, key) < 0 for key in keys)


def test_clearing_an_empty_cache_backs_none_of_its_pages():
    """A new engine's ``ucinewgame`` clears a cache nothing was stored in: writing its 64 MB of
    keys (2 million entries) would make them resident for nothing."""
    cache = NNCache(2_000_000)
    assert cache.arrays.entries.nbytes >= 60 << 20
    before = _resident_bytes()
    cache.clear()
    cache.clear()
    assert _resident_bytes() - before < 8 << 20
