"""Convolution and matrix products (the ops that carry the FLOPs)."""

from __future__ import annotations

import numpy as np

from .registry import NodeContext, is_static, register


def _precision(dtype):
    """Full f32 precision for f32 (GPUs would otherwise use TF32); the default elsewhere."""
    from jax import lax

    return lax.Precision.HIGHEST if np.dtype(dtype) == np.float32 else None


def _conv_padding(ctx: NodeContext, spatial, kernel, strides, dilations):
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    n = len(spatial)
    if auto_pad in ("NOTSET", ""):
        pads = list(ctx.attr("pads", [0] * (2 * n)))
        return [(pads[i], pads[i + n]) for i in range(n)]
    if auto_pad == "VALID":
        return [(0, 0)] * n
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = []
        for size, k, s, d in zip(spatial, kernel, strides, dilations):
            target = -(-size // s)
            total = max((target - 1) * s + (k - 1) * d + 1 - size, 0)
            small, big = total // 2, total - total // 2
            out.append((small, big) if auto_pad == "SAME_UPPER" else (big, small))
        return out
    raise ctx.error(f"expected auto_pad NOTSET, VALID, SAME_UPPER or SAME_LOWER, got {auto_pad!r}")


@register("Conv")
def conv(ctx: NodeContext, x, w, b=None):
    from jax import lax

    n = len(x.shape) - 2
    if n < 1:
        raise ctx.error(f"expected input of rank >= 3 [N, C, ...], got shape {list(x.shape)}")
    kernel = list(ctx.attr("kernel_shape", w.shape[2:]))
    strides = list(ctx.attr("strides", [1] * n))
    dilations = list(ctx.attr("dilations", [1] * n))
    group = ctx.attr("group", 1)
    padding = _conv_padding(ctx, x.shape[2:], kernel, strides, dilations)
    spatial = "DHW"[-n:] if n <= 3 else None
    if spatial is None:
        raise ctx.error(f"expected 1 to 3 spatial dims, got {n}")
    dims = ("NC" + spatial, "OI" + spatial, "NC" + spatial)
    y = lax.conv_general_dilated(
        x, w.astype(x.dtype), window_strides=strides, padding=padding, rhs_dilation=dilations,
        dimension_numbers=dims, feature_group_count=group, precision=_precision(x.dtype))
    if b is not None:
        y = y + b.astype(y.dtype).reshape((1, -1) + (1,) * n)
    return y


@register("MatMul")
def matmul(ctx: NodeContext, a, b):
    if is_static(a) and is_static(b):
        return np.matmul(a, b)
    import jax.numpy as jnp

    return jnp.matmul(a, b, precision=_precision(a.dtype))


@register("Gemm")
def gemm(ctx: NodeContext, a, b, c=None):
    import jax.numpy as jnp

    xp = np if is_static(a) and is_static(b) and (c is None or is_static(c)) else jnp
    if ctx.attr("transA", 0):
        a = a.T
    if ctx.attr("transB", 0):
        b = b.T
    alpha, beta = ctx.attr("alpha", 1.0), ctx.attr("beta", 1.0)
    y = xp.matmul(a, b) if xp is np else jnp.matmul(a, b, precision=_precision(a.dtype))
    if alpha != 1.0:
        y = y * np.asarray(alpha, y.dtype)
    if c is not None:
        y = y + (c * np.asarray(beta, c.dtype) if beta != 1.0 else c)
    return y
