"""The compiled atomics the search threads share the tree with (engine/search/core/atomic.py),
on a tree's record fields (strided int8/int16/int32 arrays) and its int64 counts: each
operation's result and, from two threads at once, no update lost."""

from __future__ import annotations

import threading

import numpy as np
from numba import njit

from engine.search.core.atomic import compare_swap, fetch_add, fetch_or, load, store
from engine.search.core.tree import NODE


@njit(nogil=True)
def _add_many(nodes, count, times):
    for i in range(times):
        fetch_add(nodes.nif, i % 4, 1)
        fetch_add(count, 0, 2)


@njit
def _each_once(nodes):
    took = compare_swap(nodes.kids, 0, -1, 5)  # holds -1: swapped
    kept = compare_swap(nodes.kids, 0, -1, 7)  # holds 5 now: not swapped
    first = fetch_or(nodes.status, 1, 1)
    second = fetch_or(nodes.status, 1, 3)
    store(nodes.nedges, 2, 9)
    touched = compare_swap(nodes.touched, 3, 0, 4)
    return took, kept, nodes.kids[0], first, second, nodes.status[1], load(nodes.nedges, 2), touched


def test_each_operation_returns_the_value_before_it() -> None:
    nodes = np.zeros(8, NODE)
    nodes["kids"] = -1
    assert _each_once(nodes) == (-1, 5, 5, 0, 1, 3, 9, 0)
    assert nodes["touched"][3] == 4 and nodes["kids"][1] == -1 and nodes["status"][0] == 0


def test_two_threads_adding_at_once_lose_nothing() -> None:
    nodes, count = np.zeros(8, NODE), np.zeros(4, np.int64)
    _add_many(nodes, count, 4)  # compiled before the threads start
    times = 1_000_000
    threads = [threading.Thread(target=_add_many, args=(nodes, count, times)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert list(nodes["nif"][:4]) == [1 + times // 2] * 4
    assert count[0] == 2 * (4 + 2 * times)
