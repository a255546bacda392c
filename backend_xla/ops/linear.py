"""Matrix products (``Conv``, the other op that carries the FLOPs, is in :mod:`.conv`)."""

from __future__ import annotations

import numpy as np

from .registry import NodeContext, is_static, register


def precision(dtype):
    """Full f32 precision for f32 (GPUs would otherwise use TF32); the default elsewhere."""
    from jax import lax

    return lax.Precision.HIGHEST if np.dtype(dtype) == np.float32 else None


@register("MatMul")
def matmul(ctx: NodeContext, a, b):
    if is_static(a) and is_static(b):
        return np.matmul(a, b)
    import jax.numpy as jnp

    return jnp.matmul(a, b, precision=precision(a.dtype))


@register("Gemm")
def gemm(ctx: NodeContext, a, b, c=None):
    import jax.numpy as jnp

    xp = np if is_static(a) and is_static(b) and (c is None or is_static(c)) else jnp
    if ctx.attr("transA", 0):
        a = a.T
    if ctx.attr("transB", 0):
        b = b.T
    alpha, beta = ctx.attr("alpha", 1.0), ctx.attr("beta", 1.0)
    y = xp.matmul(a, b) if xp is np else jnp.matmul(a, b, precision=precision(a.dtype))
    if alpha != 1.0:
        y = y * np.asarray(alpha, y.dtype)
    if c is not None:
        y = y + (c * np.asarray(beta, c.dtype) if beta != 1.0 else c)
    return y
