"""Atomic steps for compiled code, which numba lacks on the CPU: LLVM's ``atomicrmw add``,
acquire loads and release stores of int64 array items, and a yield of the processor.

The gatherers that selected in disjoint subtrees at once (option TaskWorkers, removed for the
search threads: docs/engine.md) shared the tree's node count through them; the selection's paths
for that (``ops`` in core/gather.py) are dead since, and go with issue 67's boundary tables."""

from __future__ import annotations

from typing import Any

from llvmlite import ir  # type: ignore[import-untyped]
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _item_pointer(context, builder, arrayty, array, index):
    ary = context.make_array(arrayty)(context, builder, array)
    return cgutils.get_item_pointer(context, builder, arrayty, ary, [index], wraparound=False)


def _int64_array(array) -> bool:
    return isinstance(array, types.Array) and array.ndim == 1 and array.dtype == types.int64


def _fetch_add(typingctx, array, index, value):
    """``array[index] += value`` as one atomic step (int64 arrays); returns the value before."""
    if not _int64_array(array):
        return None

    def codegen(context, builder, sig, args):
        ptr = _item_pointer(context, builder, sig.args[0], args[0], args[1])
        return builder.atomic_rmw("add", ptr, args[2], "seq_cst")

    return types.int64(array, types.int64, types.int64), codegen


def _load(typingctx, array, index):
    """``array[index]`` read anew each time (an acquire load: what was written before the
    matching :func:`store` is seen after it)."""
    if not _int64_array(array):
        return None

    def codegen(context, builder, sig, args):
        ptr = _item_pointer(context, builder, sig.args[0], args[0], args[1])
        return builder.load_atomic(ptr, "acquire", 8)

    return types.int64(array, types.int64), codegen


def _store(typingctx, array, index, value):
    """``array[index] = value`` after every write before it (a release store)."""
    if not _int64_array(array):
        return None

    def codegen(context, builder, sig, args):
        ptr = _item_pointer(context, builder, sig.args[0], args[0], args[1])
        builder.store_atomic(args[2], ptr, "release", 8)
        return context.get_dummy_value()

    return types.void(array, types.int64, types.int64), codegen


def _relax(typingctx):
    """Give the processor to another thread that is ready to run, if any (``sched_yield``): a
    gatherer waiting for a round must not hold a core the batches' workers need."""

    def codegen(context, builder, sig, args):
        fnty = ir.FunctionType(ir.IntType(32), [])
        builder.call(cgutils.get_or_insert_function(builder.module, fnty, "sched_yield"), [])
        return context.get_dummy_value()

    return types.void(), codegen


# Typed Any: mypy would read the intrinsics' typing signatures as their call signatures.
fetch_add: Any = intrinsic(_fetch_add)
load: Any = intrinsic(_load)
store: Any = intrinsic(_store)
relax: Any = intrinsic(_relax)
