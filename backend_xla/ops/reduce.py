"""Reductions (opset < 13/18: axes attribute; later: optional axes input).

``ReduceMean/Sum/Max/Min`` over given axes and the global pools reduce an NHWC value (an SE
block's mean over H, W) over its stored axes; the other reductions take ONNX layout.
"""

from __future__ import annotations

import numpy as np

from ..onnx_io import device_dtype, is_float
from .nhwc import NCHW_AXIS_IN_NHWC, Nhwc, as_nchw, permute
from .registry import NodeContext, is_static, register

# Opset in which each reduction's ``axes`` moved from attribute to input.
AXES_INPUT_SINCE = {"ReduceSum": 13}
AXES_INPUT_SINCE_DEFAULT = 18


def _reduce(kind):
    def handler(ctx: NodeContext, x, axes=None):
        since = AXES_INPUT_SINCE.get(ctx.node.op_type, AXES_INPUT_SINCE_DEFAULT)
        if ctx.opset >= since:
            axes = None if axes is None else ctx.ints(axes, "axes")
        else:
            axes = ctx.attr("axes")
        keepdims = bool(ctx.attr("keepdims", 1))
        if isinstance(x, Nhwc) and axes:
            return _reduce_nhwc(ctx, kind, x, axes, keepdims)
        x = as_nchw(x)
        if not axes:
            if ctx.attr("noop_with_empty_axes", 0):
                return x
            axes = list(range(len(x.shape)))
        axes = tuple(ctx.axes(axes, len(x.shape)))
        xp = ctx.xp
        if kind == "sumsquare":
            return xp.sum(x * x, axis=axes, keepdims=keepdims)
        if kind == "logsumexp":
            return xp.log(xp.sum(xp.exp(x), axis=axes, keepdims=keepdims))
        if kind == "l2":
            return xp.sqrt(xp.sum(x * x, axis=axes, keepdims=keepdims))
        if kind == "l1":
            return xp.sum(xp.abs(x), axis=axes, keepdims=keepdims)
        if kind in ("max", "min") and any(x.shape[a] == 0 for a in axes):
            # Empty reduction: ONNX gives the identity (-inf for max, +inf for min).
            shape = [
                1 if i in axes else d for i, d in enumerate(x.shape) if keepdims or i not in axes
            ]
            info = np.finfo if is_float(x.dtype) else np.iinfo
            if np.dtype(x.dtype) == np.bool_:
                fill = kind == "min"
            else:
                fill = info(x.dtype).min if kind == "max" else info(x.dtype).max
                fill = (
                    -np.inf
                    if kind == "max" and is_float(x.dtype)
                    else (np.inf if is_float(x.dtype) else fill)
                )
            return xp.full(shape, fill, x.dtype)
        out = getattr(xp, kind)(x, axis=axes, keepdims=keepdims)
        return out.astype(x.dtype) if isinstance(out, np.ndarray) or hasattr(out, "astype") else out

    return handler


def _reduce_nhwc(ctx: NodeContext, kind: str, x: Nhwc, axes, keepdims: bool):
    """The reduction over the stored axes: with keepdims the result stays NHWC; without, the kept
    axes are put back in ONNX order (SE: mean over H, W of [N, H, W, C] is already [N, C])."""
    import jax.numpy as jnp

    logical = ctx.axes(axes, 4)
    stored = tuple(sorted(NCHW_AXIS_IN_NHWC[a] for a in logical))
    out = getattr(jnp, kind)(x.data, axis=stored, keepdims=keepdims).astype(x.dtype)
    if keepdims:
        return Nhwc(out)
    kept = [NCHW_AXIS_IN_NHWC[a] for a in range(4) if a not in logical]  # ONNX order
    return permute(jnp, out, tuple(sorted(kept).index(k) for k in kept))


register("ReduceMean", nhwc=True)(_reduce("mean"))
register("ReduceSum", nhwc=True)(_reduce("sum"))
register("ReduceMax", nhwc=True)(_reduce("max"))
register("ReduceMin", nhwc=True)(_reduce("min"))
register("ReduceProd")(_reduce("prod"))
register("ReduceSumSquare")(_reduce("sumsquare"))
register("ReduceLogSumExp")(_reduce("logsumexp"))
register("ReduceL1")(_reduce("l1"))
register("ReduceL2")(_reduce("l2"))


def _global_pool(x, fn):
    if isinstance(x, Nhwc):
        return Nhwc(fn(x.data, axis=(1, 2), keepdims=True).astype(x.dtype))
    return fn(x, axis=tuple(range(2, len(x.shape))), keepdims=True)


@register("GlobalAveragePool", nhwc=True)
def global_average_pool(ctx: NodeContext, x):
    return _global_pool(x, ctx.xp.mean)


@register("GlobalMaxPool", nhwc=True)
def global_max_pool(ctx: NodeContext, x):
    return _global_pool(x, ctx.xp.max)


@register("ArgMax", "ArgMin")
def arg_extreme(ctx: NodeContext, x):
    axis = ctx.axes([ctx.attr("axis", 0)], len(x.shape), "axis")[0]
    keepdims = bool(ctx.attr("keepdims", 1))
    xp = ctx.xp
    flip = ctx.attr("select_last_index", 0)
    if flip:
        x = xp.flip(x, axis=axis)
    fn = xp.argmax if ctx.node.op_type == "ArgMax" else xp.argmin
    idx = fn(x, axis=axis)
    if flip:
        idx = x.shape[axis] - 1 - idx
    if keepdims:
        idx = xp.expand_dims(idx, axis)
    # JAX runs without x64: asking it for int64 only warns and truncates to int32.
    return idx.astype(np.int64 if is_static(idx) else device_dtype(np.int64))
