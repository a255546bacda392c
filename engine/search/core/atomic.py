"""Atomic and ordered operations on integer array items for compiled code shared between
threads without a lock, which numba lacks on the CPU: acquire loads, release stores, a full
fence, fetch-and-add, fetch-and-or and compare-and-swap (LLVM's ``load atomic``, ``store
atomic``, ``fence``, ``atomicrmw`` and ``cmpxchg``) of a one-dimensional integer array of any
layout (a tree's record field is a strided one). The NN cache's entries are written by an
evaluation while gathers read them (core/cache.py); the search threads' gathers and backups
share the tree through them (engine/search/threads.py's docstring)."""

from __future__ import annotations

from typing import Any

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _item_pointer(context, builder, arrayty, array, index):
    ary = context.make_array(arrayty)(context, builder, array)
    return cgutils.get_item_pointer(context, builder, arrayty, ary, [index], wraparound=False)


def _int_array(array) -> bool:
    """A one-dimensional array of integers, of any layout (a record array's field is strided)."""
    return (
        isinstance(array, types.Array)
        and array.ndim == 1
        and isinstance(array.dtype, types.Integer)
        and array.mutable
    )


def _item_and_value(context, builder, sig, args):
    """``(array, index, value, ...)``'s item pointer and the value in the array's type."""
    arrayty = sig.args[0]
    ptr = _item_pointer(context, builder, arrayty, args[0], args[1])
    return ptr, context.cast(builder, args[2], sig.args[2], arrayty.dtype)


def _rmw(op):
    """An atomic read-modify-write ``op`` (LLVM's atomicrmw) of ``array[index]`` with
    ``value``: returns the item's value before it."""

    def typer(typingctx, array, index, value):
        if not _int_array(array) or not isinstance(value, types.Integer):
            return None

        def codegen(context, builder, sig, args):
            ptr, val = _item_and_value(context, builder, sig, args)
            return builder.atomic_rmw(op, ptr, val, "seq_cst")

        return array.dtype(array, types.int64, value), codegen

    return typer


def _cas(typingctx, array, index, expected, new):
    """``array[index] = new`` if it holds ``expected`` (LLVM's cmpxchg), at once for every
    thread: returns the value it held (``expected`` when the swap took place)."""
    if not _int_array(array) or not isinstance(expected, types.Integer):
        return None
    if not isinstance(new, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        arrayty = sig.args[0]
        ptr = _item_pointer(context, builder, arrayty, args[0], args[1])
        cmp = context.cast(builder, args[2], sig.args[2], arrayty.dtype)
        val = context.cast(builder, args[3], sig.args[3], arrayty.dtype)
        pair = builder.cmpxchg(ptr, cmp, val, "seq_cst", "seq_cst")
        return builder.extract_value(pair, 0)

    return array.dtype(array, types.int64, expected, new), codegen


def _load(typingctx, array, index):
    """``array[index]`` read anew each time (an acquire load: what was written before the
    matching :func:`store` is seen after it, and no later read moves before it)."""
    if not _int_array(array):
        return None

    def codegen(context, builder, sig, args):
        arrayty = sig.args[0]
        ptr = _item_pointer(context, builder, arrayty, args[0], args[1])
        return builder.load_atomic(ptr, "acquire", arrayty.dtype.bitwidth // 8)

    return array.dtype(array, types.int64), codegen


def _store(typingctx, array, index, value):
    """``array[index] = value`` after every write before it (a release store)."""
    if not _int_array(array) or not isinstance(value, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        ptr, val = _item_and_value(context, builder, sig, args)
        builder.store_atomic(val, ptr, "release", sig.args[0].dtype.bitwidth // 8)
        return context.get_dummy_value()

    return types.void(array, types.int64, value), codegen


def _fence(typingctx):
    """No read or write moves across it, in the compiler or the processor (sequentially
    consistent)."""

    def codegen(context, builder, sig, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen


# Typed Any: mypy would read the intrinsics' typing signatures as their call signatures.
load: Any = intrinsic(_load)
store: Any = intrinsic(_store)
fence: Any = intrinsic(_fence)
fetch_add: Any = intrinsic(_rmw("add"))
"""``fetch_add(array, i, v)``: ``array[i] += v`` at once for every thread; the value before."""
fetch_or: Any = intrinsic(_rmw("or"))
"""``fetch_or(array, i, v)``: ``array[i] |= v`` at once for every thread; the value before."""
compare_swap: Any = intrinsic(_cas)
