"""A minibatch's compiled entry points, the ones Python calls for each batch: its gather (lc0's
GatherMinibatch: rounds of selection from the root, :func:`engine.search.core.gather.select`,
until the batch is full or the collisions' limits are reached, then its requests' legal moves
and planes), its evaluation's part (the policies' sort, then its results into the NN cache) and
its expansion and backup. Each takes the batch
whole, the search's :data:`Shared` arrays as one bundle, and at most six arguments; its counts
travel in the packed arrays of the layouts (core/layout.py)."""

from __future__ import annotations

import math
from collections import namedtuple

from numba import njit

from .backup import expand_and_backup_rows, sort_policies
from .cache import insert_rows
from .calls import UNCOUNTED
from .gather import (
    COLLISIONS,
    FILL,
    FORMAT,
    LC0_PICKING_MAX,
    OUT_OF_ORDER_DONE,
    REQUESTS,
    SPREAD,
    cancel_collisions,
    encode_requests,
    gather_end,
    round_end,
    round_visits,
    select,
)
from .layout import Layout

GATHER_LIMITS = Layout("gather limits", "BATCH_SIZE MAX_OOO COLLISIONS_LEFT KEEP_COLLISIONS")
"""A gather's limits: the batch's size, its out-of-order backups (lc0's
MaxOutOfOrderEvalsFactor), the collision visits it may collect, and whether its collisions
stay in flight after it (1: until :func:`release_collisions`, lc0's shared collisions)."""
BATCH_SIZE, MAX_OOO, COLLISIONS_LEFT, KEEP_COLLISIONS = GATHER_LIMITS.indices(
    "BATCH_SIZE MAX_OOO COLLISIONS_LEFT KEEP_COLLISIONS"
)


Shared = namedtuple("Shared", "tree params counters cache")
"""What every minibatch of a search reads and writes besides its own batch: the tree
(core/tree.py's Tree), the packed parameters (core/params.py), the run's counters
(core/backup.py's COUNTERS) and the NN cache (core/cache.py's Cache). Made anew for each call:
the tree's arrays are replaced when it grows."""


@njit(cache=True, nogil=True, **UNCOUNTED)
def gather(shared, batch, walk, limits, pad):
    """Collect up to ``limits[BATCH_SIZE]`` positions to evaluate, as lc0's GatherMinibatch.
    A minibatch cut short by collisions is filled with prefetched positions up to
    ``pad[requests]`` (MaxPrefetch, or the rows the backend computes anyway if fewer).
    With the network idle it stops early, as lc0's (core/gather.py's ``_network_idle``).
    Then the requests' legal moves and input planes (in this call, not one of the evaluation's
    own: each compiled call a batch hands the GIL back and forth once more, which cost two
    threads 6-8 % of their nodes/s on two cores with the random backend)."""
    tree, params, counters, cache = shared
    batch_size, max_ooo = limits[BATCH_SIZE], limits[MAX_OOO]
    collisions_left = limits[COLLISIONS_LEFT]
    batch.meta[:] = 0
    batch.meta[SPREAD] = batch_size > LC0_PICKING_MAX
    for i in range(batch.order.shape[0]):
        batch.order[i] = i
    while True:
        want = round_visits(tree, params, batch, walk, batch_size, max_ooo, collisions_left)
        if want <= 0:
            break
        before_req, before_ooo = batch.meta[REQUESTS], batch.meta[OUT_OF_ORDER_DONE]
        first = batch.meta[COLLISIONS]
        select(tree, params, counters, cache, batch, walk, want)
        collisions_left = round_end(tree, batch, walk, want, before_req, before_ooo, first,
                                    collisions_left)  # fmt: skip
        if collisions_left <= 0:
            break
    gather_end(tree, params, cache, batch, walk, pad, limits[KEEP_COLLISIONS] != 0)
    encode_requests(batch.req, batch.rows, batch.window, batch.moves, batch.indices,
                    walk.info[FORMAT], walk.info[FILL], batch.masks, batch.values,
                    batch.meta[REQUESTS])  # fmt: skip


@njit(cache=True, nogil=True, **UNCOUNTED)
def release_collisions(tree, batch):
    """The collisions a gather kept in flight (``KEEP_COLLISIONS``) out of flight."""
    cancel_collisions(tree, batch)


@njit(cache=True, nogil=True)
def sort(batch, policy, indices, start, n, temperature):
    """Each request's moves by decreasing prior into the batch's ``sorted_moves`` and
    ``priors``, from the network's ``policy`` read at ``indices`` (the batch's own, or a
    gathered policy's): :func:`engine.search.core.backup.sort_policies`."""
    sort_policies(batch.req, batch.rows, batch.moves, indices, policy, start, n, temperature,
                  batch.sorted_moves, batch.priors)  # fmt: skip


@njit(cache=True, nogil=True, **UNCOUNTED)
def store_results(cache, batch, q, d, m):
    """The NN cache given the batch's evaluated requests (``meta[REQUESTS]`` of them) in the
    order the selection made them, outside the nodes lock (the caller holds the cache's own):
    :func:`engine.search.core.cache.insert_rows`."""
    insert_rows(cache, batch.req, batch.sorted_moves, batch.priors, q, d, m, batch.order,
                batch.meta[REQUESTS])  # fmt: skip


@njit(cache=True, nogil=True, **UNCOUNTED)
def expand_and_backup(shared, batch, q, d, m):
    """Expand and back up the batch's evaluated requests (``meta[REQUESTS]`` of them) in the
    order the selection made them: :func:`engine.search.core.backup.expand_and_backup_rows`."""
    tree, params, counters, _cache = shared
    expand_and_backup_rows(tree, params, counters, batch.req, batch.sorted_moves,
                           batch.priors, q, d, m, batch.order, batch.meta[REQUESTS])  # fmt: skip


@njit(cache=True)
def finite_values(q, n, policy):
    """Whether the batch's first ``n`` values and its first position's policy are all numbers
    (not NaN, not infinite): engine/search/evaluation.py's ``check_values``, in one call where
    numpy's two sums cost 20 µs of the GIL a batch. It keeps the GIL (a microsecond): letting it
    go and taking it back would cost more, and wait for the other threads' Python."""
    for i in range(n):
        if not math.isfinite(q[i]):
            return False
    if n:
        for j in range(policy.shape[1]):
            if not math.isfinite(policy[0, j]):
                return False
    return True


@njit(cache=True)
def most_moves(batch, n):
    """The most legal moves of the batch's first ``n`` requests (a gathered policy's width):
    one pass over the records, where numpy's max of the strided field held the GIL 10 µs (it
    keeps the GIL, as :func:`finite_values`)."""
    most = 0
    for i in range(n):
        most = max(most, batch.req.count[i])
    return most
