"""A minibatch gathered (lc0's GatherMinibatch): rounds of selection from the root
(:func:`engine.search.core.gather.select`) until the batch is full or the collisions' limits
are reached."""

from __future__ import annotations

from numba import njit

from .gather import (
    COLLISIONS,
    OUT_OF_ORDER_DONE,
    REQUESTS,
    gather_end,
    round_end,
    round_visits,
    select,
)


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
    batch.meta[:] = 0
    for i in range(batch.order.shape[0]):
        batch.order[i] = i
    while True:
        want = round_visits(tree, params, batch, walk, batch_size, max_ooo, collisions_left,
                            nodes_left)  # fmt: skip
        if want <= 0:
            break
        before_req, before_ooo = batch.meta[REQUESTS], batch.meta[OUT_OF_ORDER_DONE]
        first = batch.meta[COLLISIONS]
        select(tree, params, counters, cache, batch, walk, want)
        collisions_left = round_end(tree, batch, walk, want, before_req, before_ooo, first,
                                    collisions_left, max_events, batch_size)  # fmt: skip
        if collisions_left <= 0:
            break
    gather_end(tree, params, cache, batch, walk, pad)
