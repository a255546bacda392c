"""Ordered reads and writes for compiled code shared between threads without a lock, which
numba lacks on the CPU: acquire loads and release stores of int64 array items and a full fence
(LLVM's ``load atomic``, ``store atomic`` and ``fence``). The NN cache's entries are written by
an evaluation outside the nodes lock while a gather reads them under it (core/cache.py)."""

from __future__ import annotations

from typing import Any

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _item_pointer(context, builder, arrayty, array, index):
    ary = context.make_array(arrayty)(context, builder, array)
    return cgutils.get_item_pointer(context, builder, arrayty, ary, [index], wraparound=False)


def _int64_array(array) -> bool:
    return isinstance(array, types.Array) and array.ndim == 1 and array.dtype == types.int64


def _load(typingctx, array, index):
    """``array[index]`` read anew each time (an acquire load: what was written before the
    matching :func:`store` is seen after it, and no later read moves before it)."""
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
