"""The NN cache read while it is written (issue 65: a batch's evaluation stores its results
outside the nodes lock while another thread's gather reads the cache under it): a reader on
one thread never takes an entry that a writer on another thread is replacing, nor moves the
ring has written over (core/cache.py's seqlock, ``read_entry``).

One writer fills a cache of 16 slots with 64 keys, each entry's payload (q, count, moves,
priors) a function of its key, so every slot and ring slot is rewritten thousands of times; a
reader on another thread looks every key up at the same time and checks each entry it takes
against its key. Taken out (``read_entry`` without its sequence and ring checks), this reader
found torn entries in every run tried."""

from __future__ import annotations

import threading

import numpy as np
from numba import njit

from engine.search.core.cache import insert, lookup, new_cache, read_entry

KEYS = 64


@njit(nogil=True)
def _count(key):
    return 5 + key % 30


@njit(nogil=True)
def _write(cache, rounds):
    moves = np.zeros(64, np.int32)
    priors = np.zeros(64, np.uint16)
    for i in range(rounds):
        key = np.uint64(1 + i % KEYS)
        k = _count(np.int64(key))
        for j in range(k):
            moves[j] = (np.int64(key) * 31 + j) & 0x7FFF
            priors[j] = (np.int64(key) * 7 + j) & 0xFFFF
        insert(cache, key, np.float32(key), np.float32(0.5), np.float32(1.0), moves, priors, k)


@njit(nogil=True)
def _read(cache, rounds, out):
    """out: [hits, torn] after ``rounds`` lookups."""
    moves = np.zeros(218, np.int32)
    priors = np.zeros(218, np.uint16)
    for i in range(rounds):
        key = np.uint64(1 + (i * 7) % KEYS)
        slot = lookup(cache, key)
        if slot < 0:
            continue
        got, q, d, m = read_entry(cache, slot, key, moves, priors)
        if got < 0:
            continue
        out[0] += 1
        ok = got == _count(np.int64(key)) and q == np.float64(key) and d == 0.5 and m == 1.0
        for j in range(got):
            if moves[j] != (np.int64(key) * 31 + j) & 0x7FFF:
                ok = False
            if priors[j] != (np.int64(key) * 7 + j) & 0xFFFF:
                ok = False
        if not ok:
            out[1] += 1


def test_a_reader_beside_a_writer_takes_only_whole_entries_of_its_key():
    cache = new_cache(16)
    out = np.zeros(2, np.int64)
    _write(cache, 100)
    _read(cache, 100, out)  # compiled before the threads start
    out[:] = 0
    writer = threading.Thread(target=_write, args=(cache, 3_000_000))
    reader = threading.Thread(target=_read, args=(cache, 3_000_000, out))
    writer.start()
    reader.start()
    writer.join()
    reader.join()
    hits, torn = int(out[0]), int(out[1])
    assert hits > 1000, f"expected the reader to take entries while the writer wrote, got {hits}"
    assert torn == 0, f"expected no torn entry, got {torn} of {hits}"
