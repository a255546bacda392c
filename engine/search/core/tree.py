"""The search tree as arrays: nodes and edges in preallocated numpy arrays, int32 indices.

As lc0's: a node is created when an edge first gets a visit; an evaluated node gets one edge
per legal move (move word, prior), sorted by decreasing prior, in one contiguous block of the
edge arrays (``first`` .. ``first + nedges``). Its children's indices are in a block of the
``kids`` array (``kids`` .. ``kids + nedges``, -1 where an edge has none), made when its first
child is: most nodes are leaves and never have one, so an edge is 4 bytes, as lc0's. The arrays grow by doubling (``reserve``), from
Python, between the compiled phases. Node 0 is the root after ``reset``; tree reuse copies the
kept subtree into other arrays (``keep_subtree``: the tree's before the last, whose pages are
backed, or fresh ones).

Perspective (as lc0's Node): a node's ``wl`` is W-L from the view of the player who made the
move *into* the node (its parent maximises its children's ``wl``); ``m`` is the expected number
of plies left. ``nif`` counts visits in flight through the node. A terminal node (``kind`` not
NONE) has its proven value in ``t_wl``, ``t_d``, ``t_m``.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from .atomic import compare_swap, fetch_add, load, store

# Terminal kinds (how a node's outcome was proven).
NONE, MATE, STALEMATE, RULE50, MATERIAL, THREEFOLD, TWOFOLD, PROVEN, TABLEBASE = range(9)
KIND_NAMES = (
    "",
    "mate",
    "stalemate",
    "rule50",
    "material",
    "threefold",
    "twofold",
    "proven",
    "tablebase",
)
PENDING = 1
"""``status`` bit: queued for a network evaluation not yet backed up."""

NODE = np.dtype(
    [
        ("wl", np.float64),
        ("parent", np.int32),
        ("pedge", np.int32),
        ("n", np.int32),
        ("nif", np.int32),
        ("d", np.float32),
        ("m", np.float32),
        ("first", np.int32),
        ("t_wl", np.float32),
        ("t_d", np.float32),
        ("t_m", np.float32),
        ("vpol", np.float32),
        ("kids", np.int32),
        ("nedges", np.int16),
        ("touched", np.int16),
        ("status", np.int8),
        ("kind", np.int8),
    ],
    align=True,
)
EDGE = np.dtype([("move", np.uint16), ("prior", np.uint16)], align=True)
"""An edge in 4 bytes, as lc0's: the 16-bit move word (engine/board/moves.py) and the prior in
lc0's 16-bit form (:func:`compress_prior`)."""
KID = np.dtype(np.int32)
"""A child's index in a node's block of ``kids`` (-1: the edge has no child yet)."""
BYTES_PER_NODE = NODE.itemsize
BYTES_PER_EDGE = EDGE.itemsize
BYTES_PER_KID = KID.itemsize

Tree = namedtuple("Tree", "nodes edges kids count")
"""nodes: NODE records; edges: EDGE records; kids: int32 child indices (a block a node with a
child); count int64 [COUNTS]: nodes, edges and kids in use, and the values' lock word. (Record arrays, not one array a field:
numba compiles a function of a few arrays several times faster than one of twenty.)"""
NODES, EDGES, KIDS, VALUES_LOCK = 0, 1, 2, 3
COUNTS = 4
"""``count``'s length: the nodes, edges and kids in use, and the lock word of the values'
updates (:func:`lock_values`)."""
MAKING = -2
"""A kids slot, or a node's ``kids``, while the thread that claimed it makes the child or the
block (a reader takes it as none yet, a maker waits for it)."""


_POW2 = np.array([2.0 ** (e - 31) for e in range(32)])
"""2^(e - 31) for each 5-bit exponent e of lc0's 16-bit prior."""
_ROUNDING = (1 << 11) - (3 << 28)
"""lc0's Edge::SetP: added to the float32's bits, it rounds the mantissa to 11 bits and takes
the exponent's bias less 96 off."""


@njit(cache=True)
def compress_priors(p, out, count):
    """lc0's 16-bit priors (Edge::SetP) of the float32 priors ``p[:count]`` into ``out``
    (uint16): bits 12..27 of the float, the exponent less 96 in 5 bits (2^-31 up to 2^0) and
    the mantissa rounded to 11 bits; 0 below 2^-31."""
    bits = p.view(np.int32)
    for j in range(count):
        t = bits[j] + _ROUNDING
        out[j] = 0 if t < 0 else t >> 12


@njit(cache=True)
def compress_prior(p):
    """:func:`compress_priors` of the one prior ``p``."""
    one = np.empty(1, np.float32)
    one[0] = p
    out = np.empty(1, np.uint16)
    compress_priors(one, out, 1)
    return out[0]


@njit(cache=True)
def prior(v):
    """The prior of lc0's 16-bit form ``v`` (Edge::GetP), exact as lc0 stores it."""
    return (1.0 + (v & 2047) / 2048.0) * _POW2[v >> 11]


NODE_CAPACITY = 1 << 20
EDGE_CAPACITY = 1 << 25
"""A search tree's first capacity: address space only (np.zeros maps untouched zero pages, and
the memory becomes resident as the tree grows into it), so a tree of up to a million nodes
never doubles. A doubling copies every record in use into fresh pages, a stall of the search
thread (74 ms for 4 M edges here) while the device waits for the next batch."""


LINE_BYTES = 64


def records(count: int, dtype: np.dtype) -> np.ndarray:
    """``count`` zeroed records of ``dtype``, the first at a cache line's start: numpy's large
    arrays start 16 bytes into a page, so a 64-byte node would straddle two cache lines, and
    gatherers writing neighbouring nodes at once would share one. Untouched pages stay
    unmapped, as with ``np.zeros``."""
    size = count * dtype.itemsize
    raw = np.zeros(size + LINE_BYTES, np.uint8)
    skip = -raw.ctypes.data % LINE_BYTES
    return raw[skip : skip + size].view(dtype)


def new_tree(node_capacity: int = NODE_CAPACITY, edge_capacity: int = EDGE_CAPACITY) -> Tree:
    """An empty tree with one fresh root (node 0)."""
    tree = _arrays(node_capacity, edge_capacity)
    new_node(tree, -1, -1)
    return tree


def _arrays(node_capacity: int, edge_capacity: int) -> Tree:
    """A tree's arrays, zeroed, with nothing in them (no root); the kids as long as the edges."""
    return Tree(
        records(node_capacity, NODE),
        records(edge_capacity, EDGE),
        records(edge_capacity, KID),
        np.zeros(COUNTS, np.int64),
    )


def emptied(tree: Tree) -> Tree:
    """``tree`` reset to one fresh root in place, its arrays kept: dropping a big tree's arrays
    costs the munmap of every page (about 0.1 s for a million nodes), which a ``ucinewgame`` or
    a new position would wait for. The memory stays the process's, as lc0's node pool."""
    tree.count[:] = 0
    new_node(tree, -1, -1)
    return tree


def has_room(tree: Tree, nodes: int, edges: int) -> bool:
    """Whether ``tree`` has room for ``nodes`` more nodes and ``edges`` more edges (and their
    kids) without growing."""
    used_n, used_e = int(tree.count[NODES]), int(tree.count[EDGES])
    return used_n + nodes <= len(tree.nodes) and used_e + edges <= len(tree.edges)


def reserve(tree: Tree, nodes: int, edges: int) -> Tree:
    """The tree with room for ``nodes`` more nodes and ``edges`` more edges (arrays doubled as
    often as needed; the same tree when there is room). The kids grow with the edges: a node's
    block of kids is as long as its edges, and a node has one block at most, so the kids in use
    never pass the edges in use."""
    used_n, used_e = int(tree.count[NODES]), int(tree.count[EDGES])
    cap_n, cap_e = len(tree.nodes), len(tree.edges)
    if used_n + nodes <= cap_n and used_e + edges <= cap_e:
        return tree
    while used_n + nodes > cap_n:
        cap_n *= 2
    while used_e + edges > cap_e:
        cap_e *= 2
    used_k = int(tree.count[KIDS])
    return Tree(
        _grown(tree.nodes, cap_n, used_n),
        _grown(tree.edges, cap_e, used_e),
        _grown(tree.kids, cap_e, used_k),
        tree.count,
    )


def _grown(old: np.ndarray, cap: int, used: int) -> np.ndarray:
    if len(old) == cap:
        return old
    new = records(cap, old.dtype)  # pages are touched only as the tree grows into them
    # As bytes: numpy copies a structured array field by field, element by element (10x slower:
    # 27 ms against 3 ms for 3.5 M edges, a stall of the search thread while the device waits).
    new[:used].view(np.uint8)[:] = old[:used].view(np.uint8)
    return new


def memory_bytes(tree: Tree) -> int:
    """Bytes of the arrays in use (not their capacity)."""
    return (
        int(tree.count[NODES]) * BYTES_PER_NODE
        + int(tree.count[EDGES]) * BYTES_PER_EDGE
        + int(tree.count[KIDS]) * BYTES_PER_KID
    )


@njit(cache=True)
def kids_of(tree, node):
    """The start of ``node``'s block of kids (-1: no child yet); child j is ``kids[start + j]``."""
    return tree.nodes.kids[node]


@njit(cache=True)
def child(tree, node, j):
    """The child of ``node``'s edge ``j`` (-1: none yet)."""
    start = tree.nodes.kids[node]
    return tree.kids[start + j] if start >= 0 else -1


@njit(cache=True)
def new_node(tree, parent, pedge):
    """The node below edge ``pedge`` of ``parent`` (-1 for a root), made fresh unless another
    gather made it meanwhile (then that one); returns its index. Safe with gathers on other
    threads at once: the edge's kids slot is claimed (:data:`MAKING`) before the node is made,
    so a child is made once. The caller has reserved room."""
    if parent < 0:
        i = fetch_add(tree.count, NODES, 1)
        _fresh(tree, i, parent, pedge)
        return i
    slot = _kids_block(tree, parent) + pedge - tree.nodes.first[parent]
    seen = compare_swap(tree.kids, slot, -1, MAKING)
    if seen != -1:
        while seen < 0:  # another thread is making it
            seen = load(tree.kids, slot)
        return seen
    i = fetch_add(tree.count, NODES, 1)
    _fresh(tree, i, parent, pedge)
    store(tree.kids, slot, i)
    return i


@njit(cache=True)
def _kids_block(tree, node):
    """The start of ``node``'s block of kids, made (once, whichever thread claims it) if it has
    none yet."""
    start = load(tree.nodes.kids, node)
    if start >= 0:
        return start
    if start == -1 and compare_swap(tree.nodes.kids, node, -1, MAKING) == -1:
        start = fetch_add(tree.count, KIDS, tree.nodes.nedges[node])
        for j in range(tree.nodes.nedges[node]):
            tree.kids[start + j] = -1
        store(tree.nodes.kids, node, start)
        return start
    while start < 0:
        start = load(tree.nodes.kids, node)
    return start


@njit(cache=True)
def _fresh(tree, i, parent, pedge):
    tree.nodes.parent[i] = parent
    tree.nodes.pedge[i] = pedge
    tree.nodes.n[i] = 0
    tree.nodes.nif[i] = 0
    tree.nodes.wl[i] = 0.0
    tree.nodes.d[i] = 0.0
    tree.nodes.m[i] = 0.0
    tree.nodes.first[i] = -1
    tree.nodes.nedges[i] = 0
    tree.nodes.touched[i] = 0
    tree.nodes.status[i] = 0
    tree.nodes.kind[i] = NONE
    tree.nodes.t_wl[i] = 0.0
    tree.nodes.t_d[i] = 0.0
    tree.nodes.t_m[i] = 0.0
    tree.nodes.vpol[i] = 0.0
    tree.nodes.kids[i] = -1


@njit(cache=True)
def expand(tree, node, moves, priors, count):
    """Give ``node`` its ``count`` edges (moves sorted by decreasing prior). Room reserved; the
    node is the caller's alone (a request's, or a leaf its gather claimed)."""
    first = fetch_add(tree.count, EDGES, count)
    for j in range(count):
        tree.edges.move[first + j] = moves[j]
        tree.edges.prior[first + j] = priors[j]
    tree.nodes.first[node] = first
    store(tree.nodes.nedges, node, count)  # last: a gather that sees it sees the edges


@njit(cache=True)
def _copy_subtree(src, root, dst, src_words, dst_words, order):
    """Copy ``root``'s subtree of ``src`` into ``dst`` from its start (root becomes node 0),
    breadth first so that each node's children stay together; its counts are set. One thread,
    nothing else on either tree (a move's set-up): plain writes. ``src_words``, ``dst_words``:
    the edge arrays as uint32 (an edge's move and prior in one word, copied a block at once);
    ``order``: room for the subtree's nodes (the source's, in the order of their copies)."""
    order[0] = root
    dst.nodes.parent[0] = -1
    dst.nodes.pedge[0] = -1
    i, tail, edges, kids = 0, 1, 0, 0
    while i < tail:
        old = order[i]
        _copy_node(src, old, dst, i)
        k = src.nodes.nedges[old]
        dst.nodes.first[i] = edges if k > 0 else -1
        f = src.nodes.first[old]
        dst_words[edges : edges + k] = src_words[f : f + k]
        block = src.nodes.kids[old]
        dst.nodes.kids[i] = -1
        if k > 0 and block >= 0:
            dst.nodes.kids[i] = kids
            for j in range(k):
                c = src.kids[block + j]
                dst.kids[kids + j] = tail if c >= 0 else -1
                if c >= 0:
                    order[tail] = c
                    dst.nodes.parent[tail] = i
                    dst.nodes.pedge[tail] = edges + j
                    tail += 1
            kids += k
        edges += k
        i += 1
    dst.count[NODES], dst.count[EDGES], dst.count[KIDS] = tail, edges, kids


@njit(cache=True, inline="always")
def _copy_node(src, old, dst, i):
    """Node ``old``'s values into node ``i`` of ``dst``, with nothing in flight (its place in
    the tree, edges and kids are the caller's)."""
    dst.nodes.n[i] = src.nodes.n[old]
    dst.nodes.nif[i] = 0
    dst.nodes.wl[i] = src.nodes.wl[old]
    dst.nodes.d[i] = src.nodes.d[old]
    dst.nodes.m[i] = src.nodes.m[old]
    dst.nodes.nedges[i] = src.nodes.nedges[old]
    dst.nodes.touched[i] = src.nodes.touched[old]
    dst.nodes.status[i] = 0
    dst.nodes.kind[i] = src.nodes.kind[old]
    dst.nodes.t_wl[i] = src.nodes.t_wl[old]
    dst.nodes.t_d[i] = src.nodes.t_d[old]
    dst.nodes.t_m[i] = src.nodes.t_m[old]
    dst.nodes.vpol[i] = src.nodes.vpol[old]


@njit(cache=True)
def _subtree_size(tree, root):
    """The nodes and edges of ``root``'s subtree."""
    stack = np.empty(tree.count[NODES], np.int32)
    stack[0] = root
    top, nodes, edges = 1, 0, 0
    while top > 0:
        top -= 1
        node = stack[top]
        nodes += 1
        k = tree.nodes.nedges[node]
        edges += k
        block = tree.nodes.kids[node]
        if k > 0 and block >= 0:
            for j in range(k):
                c = tree.kids[block + j]
                if c >= 0:
                    stack[top] = c
                    top += 1
    return nodes, edges


def keep_subtree(tree: Tree, root: int, into: Tree | None = None) -> Tree:
    """A tree holding ``root``'s subtree (as node 0): ``into``'s arrays when they have room
    for twice the subtree (their old contents dropped), else new ones. ``tree`` is left as it
    was."""
    nodes, edges = _subtree_size(tree, root)
    node_capacity, edge_capacity = max(NODE_CAPACITY, 2 * nodes), max(EDGE_CAPACITY, 2 * edges)
    if (
        into is not None
        and into.nodes is not tree.nodes
        and len(into.nodes) >= node_capacity
        and len(into.edges) >= edge_capacity
    ):
        dst = into
        dst.count[:] = 0  # the values' lock too
    else:
        dst = _arrays(node_capacity, edge_capacity)
    order = np.empty(nodes, np.int32)
    _copy_subtree(tree, root, dst, tree.edges.view(np.uint32), dst.edges.view(np.uint32), order)
    return dst


@njit(cache=True, inline="always")
def lock_values(tree):
    """Take the lock of the values' updates (a backup's n, wl, d, m along a path and the
    counters): a gather's out-of-order backups run beside other gathers."""
    while compare_swap(tree.count, VALUES_LOCK, 0, 1) != 0:
        pass


@njit(cache=True, inline="always")
def unlock_values(tree):
    store(tree.count, VALUES_LOCK, 0)
