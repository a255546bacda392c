"""Prototype: the search tree as arrays, with a minibatch's selection and its expansion and backup
as two XLA programs (feasibility study for a compiled search core; nothing in the runtime
imports this). With :mod:`xlazero_perf.movegen` it measures what the core's other phases
cost per node at lc0's CPU minibatch of 7 (``bin/treecore-bench``).

The tree (:class:`Tree`) holds ``capacity`` nodes. A node's children are consecutive nodes, from
``first_child`` on (``num_children`` of them, at most ``width``), in decreasing prior as the
engine's expansion sorts them. Values are from the view of the player who moved into the node,
as the engine's ``Node.wl``.

:func:`select` makes ``batch`` descents one after the other, each from the root along the
highest PUCT score ``Q + cpuct * P * sqrt(N_parent) / (1 + N + in_flight)`` with lc0's FPU
reduction for unvisited children, and marks the path as in flight (virtual visits), so the next
descent sees it, as the engine's gather does. A descent ends at a node without children: an
unexpanded leaf, or a leaf already in flight (a collision, reported with its flag).
:func:`expand_and_backup` gives each new leaf its children (priors from the network, in the
prototype given by the caller) and adds the leaf's value along the path, sign alternating.

The caller keeps the tree within its capacity (``size`` plus a minibatch's children); the
prototype does not check it.

Simplifications against the engine, none of which change the cost much: one visit per descent
(the engine's multi-visit picking hands several to the best child at once, which only makes it
cheaper), no terminal or draw nodes, no moves-left utility, no certainty propagation.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

CPUCT = 1.745
CPUCT_BASE = 38739.0
CPUCT_FACTOR = 3.894
FPU_REDUCTION = 0.330
"""lc0's defaults (the engine's option table): cpuct_init, cpuct_base, cpuct_factor and the
FPU value of the relative FPU strategy."""


class Tree(NamedTuple):
    """Arrays of ``capacity`` nodes; node 0 is the root. ``size`` [] is the next free node."""

    parent: jax.Array  # int32 [C], -1 for the root
    first_child: jax.Array  # int32 [C], -1 while unexpanded
    num_children: jax.Array  # int32 [C]
    prior: jax.Array  # float32 [C], the node's prior as its parent's child
    visits: jax.Array  # int32 [C]
    value: jax.Array  # float32 [C], sum of backed-up values (mover's view)
    in_flight: jax.Array  # int32 [C]
    size: jax.Array  # int32 []


def empty_tree(capacity: int, width: int) -> Tree:
    """A tree with only the unexpanded root, room for ``capacity`` nodes and ``width`` spare
    ones at the end (children windows are read ``width`` wide)."""
    c = capacity + width
    return Tree(
        parent=jnp.full(c, -1, jnp.int32),
        first_child=jnp.full(c, -1, jnp.int32),
        num_children=jnp.zeros(c, jnp.int32),
        prior=jnp.zeros(c, jnp.float32),
        visits=jnp.zeros(c, jnp.int32),
        value=jnp.zeros(c, jnp.float32),
        in_flight=jnp.zeros(c, jnp.int32),
        size=jnp.int32(1),
    )


def _window(array: jax.Array, first: jax.Array, width: int) -> jax.Array:
    """``array[first:first + width]``: one contiguous read (the tree keeps ``width`` spare nodes
    at its end, so the window never runs past it and is never shifted back)."""
    return jax.lax.dynamic_slice(array, (first,), (width,))


def _child_scores(tree: Tree, node: jax.Array, width: int, batch_paths: jax.Array) -> jax.Array:
    """PUCT scores [width] of ``node``'s children (-inf past the last child). ``batch_paths``
    int32 [K] (-1 unused): the nodes of this minibatch's earlier descents, each one virtual
    visit on top of ``tree.in_flight`` (the minibatch's own are kept apart: see :func:`select`)."""
    first = tree.first_child[node]
    valid = jnp.arange(width) < tree.num_children[node]
    offset = jnp.where(batch_paths >= first, batch_paths - first, width)
    ours = jnp.zeros(width, jnp.int32).at[offset].add(1, mode="drop")
    n = _window(tree.visits, first, width)
    f = _window(tree.in_flight, first, width) + ours
    p = _window(tree.prior, first, width)
    w = _window(tree.value, first, width)
    parent_n = tree.visits[node] + tree.in_flight[node] + jnp.sum(batch_paths == node)
    cpuct = CPUCT + CPUCT_FACTOR * jnp.log((parent_n + CPUCT_BASE) / CPUCT_BASE)
    parent_q = -tree.value[node] / jnp.maximum(tree.visits[node], 1)
    visited_policy = jnp.sum(jnp.where(valid & (n > 0), p, 0.0))
    fpu = parent_q - FPU_REDUCTION * jnp.sqrt(visited_policy)
    q = jnp.where(n > 0, w / jnp.maximum(n, 1), fpu)
    u = cpuct * p * jnp.sqrt(jnp.maximum(parent_n - 1, 1).astype(jnp.float32)) / (1 + n + f)
    return jnp.where(valid, q + u, -jnp.inf)


MAX_DEPTH = 128
"""Longest path from the root a descent records (a static bound: paths live in fixed arrays)."""


def _path_to_leaf(tree: Tree, width: int, batch_paths: jax.Array) -> tuple[jax.Array, jax.Array]:
    """One descent by PUCT, reading the tree only. Returns (path int32 [MAX_DEPTH + 1]: root ..
    leaf, then -1; depth int32 []: the leaf is ``path[depth]``)."""

    def go_down(state):
        node, depth, path = state
        best = jnp.argmax(_child_scores(tree, node, width, batch_paths)).astype(jnp.int32)
        child = tree.first_child[node] + best
        return child, depth + 1, path.at[depth + 1].set(child)

    path = jnp.full(MAX_DEPTH + 1, -1, jnp.int32).at[0].set(0)
    _, depth, path = jax.lax.while_loop(
        lambda s: (tree.first_child[s[0]] >= 0) & (s[1] < MAX_DEPTH),
        go_down,
        (jnp.int32(0), jnp.int32(0), path),
    )
    return path, depth


def _dropped(path: jax.Array, capacity: int) -> jax.Array:
    """``path`` with its unused slots (-1) sent past the end, where scatters drop them."""
    return jnp.where(path >= 0, path, capacity)


@partial(jax.jit, static_argnames=("batch", "width"), donate_argnums=0)
def select(tree: Tree, batch: int, width: int) -> tuple[Tree, jax.Array, jax.Array, jax.Array]:
    """``batch`` descents, each seeing the virtual visits of those before it. Returns (tree,
    paths int32 [batch, MAX_DEPTH + 1], depths int32 [batch], collision bool [batch]).

    The tree's arrays are only read during the descents; the minibatch's virtual visits are its
    own paths so far, added to ``in_flight`` once at the end. Updating ``in_flight`` after
    each descent instead made XLA copy the whole array twice a descent (its loops may not
    update a buffer in place that the loop also reads), which cost more than the descents."""
    capacity = tree.parent.shape[0]

    def descend(b, carry):
        paths, depths, collided = carry
        flat = paths.reshape(-1)
        path, depth = _path_to_leaf(tree, width, flat)
        leaf = path[depth]
        collided = collided.at[b].set((tree.in_flight[leaf] + jnp.sum(flat == leaf)) > 0)
        return paths.at[b].set(path), depths.at[b].set(depth), collided

    init = (
        jnp.full((batch, MAX_DEPTH + 1), -1, jnp.int32),
        jnp.zeros(batch, jnp.int32),
        jnp.zeros(batch, bool),
    )
    paths, depths, collided = jax.lax.fori_loop(0, batch, descend, init)
    in_flight = tree.in_flight.at[_dropped(paths, capacity)].add(1, mode="drop")
    return tree._replace(in_flight=in_flight), paths, depths, collided


@partial(jax.jit, static_argnames=("width",), donate_argnums=0)
def expand_and_backup(
    tree: Tree,
    paths: jax.Array,
    depths: jax.Array,
    collided: jax.Array,
    priors: jax.Array,
    counts: jax.Array,
    values: jax.Array,
    width: int,
) -> Tree:
    """Give each new leaf ``counts[b]`` children with ``priors[b, :counts[b]]`` (sorted
    decreasing) and back up ``values[b]`` (the side to move's view at the leaf) along its path;
    a collided descent only takes its virtual visits back. priors float32 [B, width], counts
    int32 [B], values float32 [B]. One scatter per array for the whole batch's paths."""
    capacity = tree.parent.shape[0]
    batch = paths.shape[0]
    leaves = paths[jnp.arange(batch), depths]
    new = ~collided
    # Two descents of a batch cannot both be new at one leaf (the second one collides), so the
    # children blocks are laid out one after the other.
    count = jnp.where(new, counts, 0)
    starts = tree.size + jnp.cumsum(count) - count
    slots = starts[:, None] + jnp.arange(width)[None, :]
    slots = jnp.where(jnp.arange(width)[None, :] < count[:, None], slots, capacity)
    tree = tree._replace(
        parent=tree.parent.at[slots].set(
            jnp.broadcast_to(leaves[:, None], slots.shape), mode="drop"
        ),
        prior=tree.prior.at[slots].set(priors, mode="drop"),
        first_child=tree.first_child.at[jnp.where(new, leaves, capacity)].set(starts, mode="drop"),
        num_children=tree.num_children.at[jnp.where(new, leaves, capacity)].set(count, mode="drop"),
        size=tree.size + jnp.sum(count),
    )
    # The leaf's value in its mover's view is -values; each level up flips the sign.
    levels = jnp.arange(MAX_DEPTH + 1)[None, :]
    sign = jnp.where((depths[:, None] - levels) % 2 == 0, -1.0, 1.0)
    signed = sign * values[:, None] * new[:, None]
    at = _dropped(paths, capacity)
    return tree._replace(
        visits=tree.visits.at[at].add(
            jnp.broadcast_to(new[:, None], at.shape).astype(jnp.int32), mode="drop"
        ),
        value=tree.value.at[at].add(signed.astype(jnp.float32), mode="drop"),
        in_flight=tree.in_flight.at[at].add(-1, mode="drop"),
    )


def fake_evaluations(
    rng: np.random.Generator, batch: int, width: int, mean_children: int = 30
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Network-like outputs for ``batch`` leaves: child counts around ``mean_children`` (at most
    ``width``), sorted softmax priors, values in (-1, 1)."""
    counts = np.clip(rng.poisson(mean_children, batch), 1, width).astype(np.int32)
    logits = rng.standard_normal((batch, width)) * 1.5
    logits[np.arange(width)[None, :] >= counts[:, None]] = -np.inf
    priors = np.exp(logits - logits.max(axis=1, keepdims=True))
    priors = -np.sort(-(priors / priors.sum(axis=1, keepdims=True)), axis=1)
    values = np.tanh(rng.standard_normal(batch) * 0.3)
    return priors.astype(np.float32), counts, values.astype(np.float32)
