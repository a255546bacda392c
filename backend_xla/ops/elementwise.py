"""Element-wise ops: arithmetic, activations, comparisons and logic (numpy broadcasting)."""

from __future__ import annotations

import functools

import numpy as np

from .registry import NodeContext, is_static, register

SELU_ALPHA = 1.67326319217681884765625
SELU_GAMMA = 1.05070102214813232421875


def _jnp():
    import jax.numpy as jnp

    return jnp


def _binary(fn):
    def handler(ctx: NodeContext, a, b):
        return fn(ctx.xp, a, b)

    return handler


register("Add")(_binary(lambda xp, a, b: xp.add(a, b)))
register("Sub")(_binary(lambda xp, a, b: xp.subtract(a, b)))
register("Mul")(_binary(lambda xp, a, b: xp.multiply(a, b)))
register("Equal")(_binary(lambda xp, a, b: xp.equal(a, b)))
register("Less")(_binary(lambda xp, a, b: xp.less(a, b)))
register("LessOrEqual")(_binary(lambda xp, a, b: xp.less_equal(a, b)))
register("Greater")(_binary(lambda xp, a, b: xp.greater(a, b)))
register("GreaterOrEqual")(_binary(lambda xp, a, b: xp.greater_equal(a, b)))
register("And")(_binary(lambda xp, a, b: xp.logical_and(a, b)))
register("Or")(_binary(lambda xp, a, b: xp.logical_or(a, b)))
register("Xor")(_binary(lambda xp, a, b: xp.logical_xor(a, b)))


@register("Div")
def div(ctx: NodeContext, a, b):
    xp = ctx.xp
    if np.dtype(a.dtype).kind in "iu":
        # ONNX integer division truncates toward zero (like C), not floor like Python.
        q = xp.abs(a) // xp.abs(b)
        return q * xp.sign(a) * xp.sign(b)
    return xp.divide(a, b)


@register("Mod")
def mod(ctx: NodeContext, a, b):
    if ctx.attr("fmod", 0):
        return ctx.xp.fmod(a, b)
    return ctx.xp.mod(a, b)


@register("Pow")
def pow_(ctx: NodeContext, a, b):
    # The result has the base's type (ONNX Pow allows a different exponent type).
    return ctx.xp.power(a, b.astype(a.dtype)).astype(a.dtype)


def _variadic(name):
    def handler(ctx: NodeContext, *xs):
        return functools.reduce(getattr(ctx.xp, name), xs)

    return handler


register("Max")(_variadic("maximum"))
register("Min")(_variadic("minimum"))
register("Sum")(_variadic("add"))


@register("Mean")
def mean(ctx: NodeContext, *xs):
    return (functools.reduce(ctx.xp.add, xs) / len(xs)).astype(xs[0].dtype)


@register("Where")
def where(ctx: NodeContext, cond, a, b):
    return ctx.xp.where(cond, a, b)


def _unary(fn):
    def handler(ctx: NodeContext, x):
        return fn(ctx.xp, x)

    return handler


register("Neg")(_unary(lambda xp, x: xp.negative(x)))
register("Abs")(_unary(lambda xp, x: xp.abs(x)))
register("Exp")(_unary(lambda xp, x: xp.exp(x)))
register("Log")(_unary(lambda xp, x: xp.log(x)))
register("Sqrt")(_unary(lambda xp, x: xp.sqrt(x)))
register("Tanh")(_unary(lambda xp, x: xp.tanh(x)))
register("Floor")(_unary(lambda xp, x: xp.floor(x)))
register("Ceil")(_unary(lambda xp, x: xp.ceil(x)))
register("Sign")(_unary(lambda xp, x: xp.sign(x)))
register("Not")(_unary(lambda xp, x: xp.logical_not(x)))
register("Reciprocal")(_unary(lambda xp, x: (xp.ones((), x.dtype) / x).astype(x.dtype)))
register("Relu")(_unary(lambda xp, x: xp.maximum(x, xp.zeros((), x.dtype))))


@register("Identity")
def identity(ctx: NodeContext, x):
    return x


@register("Sigmoid")
def sigmoid(ctx: NodeContext, x):
    if is_static(x):
        return (1 / (1 + np.exp(-x))).astype(x.dtype)
    import jax

    return jax.nn.sigmoid(x)


def _softplus(x):
    if is_static(x):
        return np.logaddexp(np.zeros((), x.dtype), x).astype(x.dtype)
    import jax

    return jax.nn.softplus(x)


@register("Softplus")
def softplus(ctx: NodeContext, x):
    return _softplus(x)


@register("Mish")
def mish(ctx: NodeContext, x):
    return x * ctx.xp.tanh(_softplus(x))


@register("Erf")
def erf(ctx: NodeContext, x):
    import jax.scipy.special

    return jax.scipy.special.erf(x)


@register("Elu")
def elu(ctx: NodeContext, x):
    alpha = ctx.attr("alpha", 1.0)
    xp = ctx.xp
    return xp.where(x > 0, x, (alpha * (xp.exp(x) - 1)).astype(x.dtype))


@register("Selu")
def selu(ctx: NodeContext, x):
    alpha = ctx.attr("alpha", SELU_ALPHA)
    gamma = ctx.attr("gamma", SELU_GAMMA)
    xp = ctx.xp
    return (gamma * xp.where(x > 0, x, alpha * (xp.exp(x) - 1))).astype(x.dtype)


@register("LeakyRelu")
def leaky_relu(ctx: NodeContext, x):
    alpha = ctx.attr("alpha", 0.01)
    return ctx.xp.where(x >= 0, x, (alpha * x).astype(x.dtype))


@register("HardSigmoid")
def hard_sigmoid(ctx: NodeContext, x):
    alpha = ctx.attr("alpha", 0.2)
    beta = ctx.attr("beta", 0.5)
    return ctx.xp.clip(alpha * x + beta, 0, 1).astype(x.dtype)


@register("Clip")
def clip(ctx: NodeContext, x, lo=None, hi=None):
    if ctx.opset < 11:
        lo = np.asarray(ctx.attr("min", -np.inf), x.dtype)
        hi = np.asarray(ctx.attr("max", np.inf), x.dtype)
    xp = ctx.xp
    if lo is not None:
        x = xp.maximum(x, lo.astype(x.dtype) if is_static(lo) else lo)
    if hi is not None:
        x = xp.minimum(x, hi.astype(x.dtype) if is_static(hi) else hi)
    return x


@register("Cast")
def cast(ctx: NodeContext, x):
    from ..onnx_io import device_dtype, onnx_to_np_dtype

    to = ctx.float_dtype(onnx_to_np_dtype(ctx.attr("to"), ctx.node.name))
    if is_static(x):
        return np.asarray(x).astype(to)
    return x.astype(device_dtype(to))


@register("CastLike")
def cast_like(ctx: NodeContext, x, like):
    return x.astype(like.dtype)
