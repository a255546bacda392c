"""Normalization and softmax ops (``BatchNormalization`` keeps an NHWC input NHWC)."""

from __future__ import annotations

import numpy as np

from .nhwc import Nhwc, as_nchw
from .registry import NodeContext, register


@register("BatchNormalization", nhwc=True)
def batch_normalization(ctx: NodeContext, x, scale, bias, mean, var, *_):
    if ctx.attr("training_mode", 0):
        raise ctx.error("expected inference mode (training_mode=0), got training_mode=1")
    if isinstance(x, Nhwc) and not any(isinstance(v, Nhwc) for v in (scale, bias, mean, var)):
        # The per-channel vectors are reshaped to [1, C, 1, 1] for rank 4; on the stored
        # [N, H, W, C] data they broadcast as [C]. Normalize a rank-2 view: for rank 2 they are
        # reshaped to [1, C], which broadcasts against NHWC data as the last axis.
        n, h, w, c = x.data.shape
        flat = batch_normalization(ctx, x.data.reshape(n * h * w, c), scale, bias, mean, var)
        return Nhwc(flat.reshape(n, h, w, c))
    x, scale, bias, mean, var = (as_nchw(v) for v in (x, scale, bias, mean, var))
    eps = ctx.attr("epsilon", 1e-5)
    xp = ctx.xp
    shape = (1, -1) + (1,) * (len(x.shape) - 2)

    def b(v):
        return xp.reshape(v.astype(x.dtype), shape)

    # Fold the per-channel affine transform into one multiply-add.
    inv = (
        scale.astype(np.float32) / np.sqrt(var.astype(np.float32) + np.float32(eps))
        if isinstance(var, np.ndarray) and isinstance(scale, np.ndarray)
        else scale / xp.sqrt(var + np.asarray(eps, var.dtype))
    )
    return (x - b(mean)) * b(inv) + b(bias)


@register("LayerNormalization")
def layer_normalization(ctx: NodeContext, x, scale, bias=None):
    rank = len(x.shape)
    axis = ctx.axes([ctx.attr("axis", -1)], rank, "axis")[0]
    eps = ctx.attr("epsilon", 1e-5)
    xp = ctx.xp
    axes = tuple(range(axis, rank))
    # stash_type=1 (default): statistics in f32 even for f16/bf16 tensors.
    stash = np.float32 if ctx.attr("stash_type", 1) == 1 else x.dtype
    xs = x.astype(stash)
    mean = xp.mean(xs, axis=axes, keepdims=True)
    centered = xs - mean
    var = xp.mean(centered * centered, axis=axes, keepdims=True)
    inv_std = 1 / xp.sqrt(var + np.asarray(eps, stash))
    y = (centered * inv_std).astype(x.dtype) * scale.astype(x.dtype)
    if bias is not None:
        y = y + bias.astype(x.dtype)
    outs = [y, mean, inv_std]
    return tuple(outs[: max(len(ctx.node.output), 1)])


def _softmax(ctx: NodeContext, x, log: bool):
    rank = len(x.shape)
    default_axis = -1 if ctx.opset >= 13 else 1
    axis = ctx.axes([ctx.attr("axis", default_axis)], rank, "axis")[0]
    xp = ctx.xp
    if ctx.opset < 13:
        # Old semantics: flatten to 2-D at ``axis`` and normalize over the whole tail.
        shape = x.shape
        x2 = xp.reshape(x, (int(np.prod(shape[:axis])), -1))
        return xp.reshape(_softmax_last(xp, x2, log), shape)
    return xp.moveaxis(_softmax_last(xp, xp.moveaxis(x, axis, -1), log), -1, axis)


def _softmax_last(xp, x, log):
    shifted = x - xp.max(x, axis=-1, keepdims=True)
    if log:
        return shifted - xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))
    e = xp.exp(shifted)
    return e / xp.sum(e, axis=-1, keepdims=True)


@register("Softmax")
def softmax(ctx: NodeContext, x):
    return _softmax(ctx, x, log=False)


@register("LogSoftmax")
def log_softmax(ctx: NodeContext, x):
    return _softmax(ctx, x, log=True)
