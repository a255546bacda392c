"""A minibatch gathered (lc0's GatherMinibatch): rounds of selection from the root until the
batch is full or the collisions' limits are reached, each round by the search thread alone
(:func:`engine.search.core.gather.select`) or shared with helper threads
(:func:`engine.search.core.split.shared_round`).

Two entry points over one loop: :func:`gather` for the search thread alone, whose machine code
holds no shared round (numba prunes the branches on ``crew is not None`` where ``crew`` is
None: the shared rounds cost seconds of compilation that a search without helpers never
needs), and :func:`gather_shared`."""

from __future__ import annotations

from numba import njit

from .atomic import store
from .gather import (
    COLLISIONS,
    OUT_OF_ORDER_DONE,
    REQUESTS,
    gather_end,
    round_end,
    round_visits,
    select,
)
from .split import MIN_SHARED_VISITS, ROUND, copy_game, shared_round


@njit(cache=True, nogil=True)
def gather(
    tree,
    params,
    counters,
    cache,
    batch,
    walk,
    batch_size,
    max_ooo,
    collisions_left,
    max_events,
    nodes_left,
    pad,
):
    """Collect up to ``batch_size`` positions to evaluate, as lc0's GatherMinibatch;
    ``nodes_left`` < 0: no node limit.
    A minibatch cut short by collisions is filled with prefetched positions up to
    ``pad[requests]`` (MaxPrefetch, or the rows the backend computes anyway if fewer).
    With the network idle it stops early, as lc0's (core/gather.py's ``_network_idle``)."""
    _gather(tree, params, counters, cache, batch, walk, batch_size, max_ooo, collisions_left,
            max_events, nodes_left, pad, None, 0)  # fmt: skip


@njit(cache=True, nogil=True)
def gather_shared(
    tree,
    params,
    counters,
    cache,
    batch,
    walk,
    batch_size,
    max_ooo,
    collisions_left,
    max_events,
    nodes_left,
    pad,
    crew,
    gen,
):
    """:func:`gather` with its rounds shared among ``crew`` (core/split.py), whose helpers,
    started for gather number ``gen``, leave when it returns."""
    _gather(tree, params, counters, cache, batch, walk, batch_size, max_ooo, collisions_left,
            max_events, nodes_left, pad, crew, gen)  # fmt: skip


@njit(cache=True)
def _gather(
    tree,
    params,
    counters,
    cache,
    batch,
    walk,
    batch_size,
    max_ooo,
    collisions_left,
    max_events,
    nodes_left,
    pad,
    crew,
    gen,
):
    batch.meta[:] = 0
    for i in range(batch.order.shape[0]):
        batch.order[i] = i
    if crew is not None:
        copy_game(walk, crew)
    rounds = 0
    while True:
        want = round_visits(tree, params, batch, walk, batch_size, max_ooo, collisions_left,
                            nodes_left)  # fmt: skip
        if want <= 0:
            break
        before_req, before_ooo = batch.meta[REQUESTS], batch.meta[OUT_OF_ORDER_DONE]
        first = batch.meta[COLLISIONS]
        if crew is not None:
            if want >= MIN_SHARED_VISITS:
                rounds += 1
                shared_round(tree, params, counters, cache, batch, walk, want, crew, gen, rounds)
            else:
                select(tree, params, counters, cache, batch, walk, want)
        else:
            select(tree, params, counters, cache, batch, walk, want)
        collisions_left = round_end(tree, batch, walk, want, before_req, before_ooo, first,
                                    collisions_left, max_events, batch_size)  # fmt: skip
        if collisions_left <= 0:
            break
    if crew is not None:
        store(crew.control, ROUND, 0)
    gather_end(tree, params, cache, batch, walk, pad)
