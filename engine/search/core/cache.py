"""The NN cache, compiled: network results by position key, for the legal moves only.

As lc0's NNCache it keeps what expanding a node needs: q, d, m and each legal move with its
prior (moves sorted by decreasing prior), compact: 8 bytes a move in a ring of move slots, and
32 bytes of entry. The table has ``capacity`` slots; an entry is found by probing at most
``PROBES`` slots from its key's home, and a new entry takes a free one of those or replaces the
oldest (a 16-way set, least recently stored out first). An entry whose moves the ring has since
written over counts as gone. Both arrays are allocated once: NNCacheSize bounds the entries
and the memory, as in lc0.

One thread writes at a time (:func:`insert`, under ``NNCache.lock``), outside the nodes lock,
while gathers read under it: each entry has a sequence number, odd while the entry is being
written (a seqlock), and a reader copies an entry out with :func:`read_entry`, which gives
it up when the number changed meanwhile or the ring wrote over its moves.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from .atomic import fence, load, store

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
        ("seq", np.uint16),
    ],
    align=True,
)
"""32 bytes, one cache line with three other entries; ``seq`` is the entry's sequence number (a
seqlock: odd while the entry is written), in the entry's own bytes so that a lookup and an
insert each touch one line of the table, not a line of a separate array as well (16 bits: a
reader gives an entry up when its number changed during its read, which 65,536 writes of one
slot within a read could hide, not a few)."""
SLOT = np.dtype([("move", np.uint16), ("prior", np.uint16)], align=True)
"""A legal move's 16-bit word and its prior in lc0's 16-bit form (core/tree.py)."""
Cache = namedtuple("Cache", "entries ring meta")
"""entries: ENTRY records [slots] (key 0: free; start: the entry's first ring slot, counted
from the ring's creation; seq: odd while written); ring: SLOT records; meta int64 [3]: ring
write position, slots ever filled, capacity."""
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
    """Bytes of the arrays' pages in use: the ring slots written so far, and the whole table of
    entries once one is filled (entries land at hashed slots all over it, so a few thousand
    back every page of it, and a few dozen every huge page; lc0 counts its cache whole too)."""
    ring = min(int(cache.meta[WRITE]), len(cache.ring)) * cache.ring.dtype.itemsize
    return ring + (cache.entries.nbytes if cache.meta[USED] else 0)


def hashfull(cache: Cache) -> int:
    """Fill in per mille, as UCI's ``hashfull``."""
    cap = int(cache.meta[CAPACITY])
    return 0 if cap <= 0 else min(1000, int(cache.meta[USED]) * 1000 // cap)


@njit(cache=True, inline="always")
def _home(key, slots):
    """The first slot probed for ``key``: its high 32 bits scaled to the table (a multiply and
    a shift, where ``key % slots`` took a 64-bit division a lookup)."""
    return np.int64(((key >> np.uint64(32)) * np.uint64(slots)) >> np.uint64(32))


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
    s = _home(key, slots)
    for _ in range(PROBES):
        found = cache.entries.key[s]
        if found == key and _live(cache, s):
            return s
        if found == 0:
            return -1
        s = s + 1 if s + 1 < slots else np.int64(0)  # no division a probe
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
    s = _home(key, slots)
    victim, oldest = np.int64(-1), np.int64(1) << 62
    for _ in range(PROBES):
        if cache.entries.key[s] == key or not _live(cache, s):
            victim = s
            break
        if cache.entries.start[s] < oldest:
            victim, oldest = s, cache.entries.start[s]
        s = s + 1 if s + 1 < slots else np.int64(0)
    if cache.entries.key[victim] == 0:
        cache.meta[USED] += 1
    seq = cache.entries.seq[victim]
    store(cache.entries.seq, victim, seq + 1)  # odd: a reader gives the entry up
    write = cache.meta[WRITE]
    # The write position moves before the ring is written: a reader that copied moves being
    # written over finds its entry's start below it then (read_entry).
    store(cache.meta, WRITE, write + count)
    fence()
    at = write % ring  # one division an entry, not two a move
    for j in range(count):
        cache.ring.move[at] = moves[j]
        cache.ring.prior[at] = priors[j]
        at = at + 1 if at + 1 < ring else np.int64(0)
    cache.entries.key[victim] = key
    cache.entries.q[victim] = q
    cache.entries.d[victim] = d
    cache.entries.m[victim] = m
    cache.entries.start[victim] = write
    cache.entries.count[victim] = count
    store(cache.entries.seq, victim, seq + 2)  # after every write of the entry


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
        at = at + 1 if at + 1 < ring else np.int64(0)
    return k


@njit(cache=True)
def read_entry(cache, slot, key, moves, priors):
    """Copy out the entry at ``slot`` (from :func:`lookup`) if it still holds ``key``: its
    moves and priors into ``moves`` and ``priors``, and (count, q, d, m); count -1 when the
    entry changed while it was read (a writer on another thread), holds another key now, or
    the ring wrote over its moves."""
    seq = load(cache.entries.seq, slot)
    if seq & 1 or cache.entries.key[slot] != key:
        return -1, 0.0, 0.0, 0.0
    ring = cache.ring.move.shape[0]
    start, k = cache.entries.start[slot], np.int64(cache.entries.count[slot])
    q, d, m = cache.entries.q[slot], cache.entries.d[slot], cache.entries.m[slot]
    if k < 0 or k > moves.shape[0] or start < 0:  # torn: given up below
        k = np.int64(0)
    at = start % ring
    for j in range(k):
        moves[j] = cache.ring.move[at]
        priors[j] = cache.ring.prior[at]
        at = at + 1 if at + 1 < ring else np.int64(0)
    fence()
    if load(cache.entries.seq, slot) != seq or start < load(cache.meta, WRITE) - ring:
        return -1, 0.0, 0.0, 0.0
    return k, np.float64(q), np.float64(d), np.float64(m)


@njit(cache=True, nogil=True)
def insert_rows(cache, req, moves, priors, q, d, m, order, n):
    """Store the results of a batch's ``n`` evaluated requests (moves by decreasing prior, as
    the evaluation sorted them), rows in ``order``: the evaluation's, outside the nodes lock
    (the caller holds ``NNCache.lock``, so one thread writes at a time)."""
    for i in range(n):
        r = order[i]
        insert(cache, req.key[r], q[r], d[r], m[r], moves[r], priors[r], req.count[r])
