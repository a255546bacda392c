"""The NN cache, compiled: network results by position key, for the legal moves only.

As lc0's NNCache it keeps what expanding a node needs: q, d, m and each legal move with its
prior (moves sorted by decreasing prior), compact: 8 bytes a move in a ring of move slots, and
32 bytes of entry. The table has ``capacity`` slots; an entry is found by probing at most
``PROBES`` slots from its key's home, and a new entry takes a free one of those or replaces the
oldest (a 16-way set, least recently stored out first). An entry whose moves the ring has since
written over counts as gone. Both arrays are allocated once: NNCacheSize bounds the entries
and the memory, as in lc0.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

PROBES = 16
MOVES_PER_ENTRY = 40
"""Ring slots per entry of capacity: positions average about 30 legal moves."""

ENTRY = np.dtype(
    [
        ("key", np.uint64),
        ("start", np.int64),
        ("q", np.float32),
        ("d", np.float32),
        ("m", np.float32),
        ("count", np.int16),
    ],
    align=True,
)
SLOT = np.dtype([("move", np.uint16), ("prior", np.uint16)], align=True)
"""A legal move's 16-bit word and its prior in lc0's 16-bit form (core/tree.py)."""
Cache = namedtuple("Cache", "entries ring meta")
"""entries: ENTRY records [slots] (key 0: free; start: the entry's first ring slot, counted
from the ring's creation); ring: SLOT records; meta int64 [3]: ring write position, slots ever
filled, capacity."""
WRITE, USED, CAPACITY = 0, 1, 2


def new_cache(capacity: int) -> Cache:
    slots = max(capacity, PROBES)
    ring = max(capacity * MOVES_PER_ENTRY, 256)
    return Cache(
        np.zeros(slots, ENTRY),
        np.zeros(ring if capacity > 0 else 1, SLOT),
        np.array([0, 0, capacity], np.int64),
    )


def memory_in_use(cache: Cache) -> int:
    """Bytes of the entries and ring slots written so far (the arrays' pages in use)."""
    ring = min(int(cache.meta[WRITE]), len(cache.ring)) * cache.ring.dtype.itemsize
    return ring + int(cache.meta[USED]) * cache.entries.dtype.itemsize


def hashfull(cache: Cache) -> int:
    """Fill in per mille, as UCI's ``hashfull``."""
    cap = int(cache.meta[CAPACITY])
    return 0 if cap <= 0 else min(1000, int(cache.meta[USED]) * 1000 // cap)


@njit(cache=True)
def _live(cache, slot):
    ring = cache.ring.move.shape[0]
    return cache.entries.key[slot] != 0 and cache.entries.start[slot] >= cache.meta[WRITE] - ring


@njit(cache=True)
def lookup(cache, key):
    """The slot holding ``key`` or -1. A probe that finds a slot never filled ends the search:
    :func:`insert` took the first slot that was free or stale, and a filled slot stays filled
    until the whole cache is cleared, so no later slot holds the key (most lookups of a young
    cache miss, and read one slot instead of :data:`PROBES`)."""
    if cache.meta[CAPACITY] <= 0:
        return -1
    slots = cache.entries.key.shape[0]
    s = np.int64(key % np.uint64(slots))
    for _ in range(PROBES):
        found = cache.entries.key[s]
        if found == key and _live(cache, s):
            return s
        if found == 0:
            return -1
        s = s + 1 if s + 1 < slots else 0  # no division a probe
    return -1


@njit(cache=True)
def insert(cache, key, q, d, m, moves, priors, count):
    """Store a result (``count`` moves, sorted by decreasing prior)."""
    if cache.meta[CAPACITY] <= 0 or key == 0:
        return
    slots = cache.entries.key.shape[0]
    ring = cache.ring.move.shape[0]
    if count > ring:
        return
    s = np.int64(key % np.uint64(slots))
    victim, oldest = -1, np.int64(1) << 62
    for _ in range(PROBES):
        if cache.entries.key[s] == key or not _live(cache, s):
            victim = s
            break
        if cache.entries.start[s] < oldest:
            victim, oldest = s, cache.entries.start[s]
        s = s + 1 if s + 1 < slots else 0
    if cache.entries.key[victim] == 0:
        cache.meta[USED] += 1
    write = cache.meta[WRITE]
    at = write % ring  # one division an entry, not two a move
    for j in range(count):
        cache.ring.move[at] = moves[j]
        cache.ring.prior[at] = priors[j]
        at = at + 1 if at + 1 < ring else 0
    cache.entries.key[victim] = key
    cache.entries.q[victim] = q
    cache.entries.d[victim] = d
    cache.entries.m[victim] = m
    cache.entries.start[victim] = write
    cache.entries.count[victim] = count
    cache.meta[WRITE] = write + count


@njit(cache=True)
def read_moves(cache, slot, moves, priors):
    """Copy an entry's moves and priors out; returns their count."""
    ring = cache.ring.move.shape[0]
    start = cache.entries.start[slot]
    k = cache.entries.count[slot]
    at = start % ring
    for j in range(k):
        moves[j] = cache.ring.move[at]
        priors[j] = cache.ring.prior[at]
        at = at + 1 if at + 1 < ring else 0
    return k
