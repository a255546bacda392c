"""Element-wise ops: arithmetic, activations, comparisons and logic (numpy broadcasting).

Most run on NHWC values as they are (:mod:`backend_xla.ops.nhwc`): a one-input op on the stored
data, a broadcasting op on operands transposed alike. ``Mod`` and ``CastLike`` take ONNX layout
(no lc0 network applies them to a conv output).
"""

from __future__ import annotations

import functools

import numpy as np

from ..onnx_io import device_dtype
from . import nhwc
from .registry import NodeContext, is_static, register


def _unary_op(*op_types: str):
    """Register ``fn(ctx, x)`` for a one-input element-wise op: it runs on the stored data, so an
    NHWC input gives an NHWC output."""

    def wrap(fn):
        @functools.wraps(fn)
        def handler(ctx: NodeContext, x):
            return nhwc.map_data(x, lambda v: fn(ctx, v))

        register(*op_types, nhwc=True)(handler)
        return fn

    return wrap


def _broadcasting_op(*op_types: str):
    """Register ``fn(ctx, *inputs)`` for an element-wise op with numpy broadcasting: an NHWC input
    keeps the result NHWC (:func:`backend_xla.ops.nhwc.broadcasting`)."""

    def wrap(fn):
        @functools.wraps(fn)
        def handler(ctx: NodeContext, *inputs):
            return nhwc.broadcasting(inputs, lambda *xs: fn(ctx, *xs))

        register(*op_types, nhwc=True)(handler)
        return fn

    return wrap


SELU_ALPHA = 1.67326319217681884765625
SELU_GAMMA = 1.05070102214813232421875


def _jnp():
    import jax.numpy as jnp

    return jnp


def _binary(fn):
    def handler(ctx: NodeContext, a, b):
        return fn(ctx.xp, a, b)

    return handler


_broadcasting_op("Add")(_binary(lambda xp, a, b: xp.add(a, b)))
_broadcasting_op("Sub")(_binary(lambda xp, a, b: xp.subtract(a, b)))
_broadcasting_op("Mul")(_binary(lambda xp, a, b: xp.multiply(a, b)))
_broadcasting_op("Equal")(_binary(lambda xp, a, b: xp.equal(a, b)))
_broadcasting_op("Less")(_binary(lambda xp, a, b: xp.less(a, b)))
_broadcasting_op("LessOrEqual")(_binary(lambda xp, a, b: xp.less_equal(a, b)))
_broadcasting_op("Greater")(_binary(lambda xp, a, b: xp.greater(a, b)))
_broadcasting_op("GreaterOrEqual")(_binary(lambda xp, a, b: xp.greater_equal(a, b)))
_broadcasting_op("And")(_binary(lambda xp, a, b: xp.logical_and(a, b)))
_broadcasting_op("Or")(_binary(lambda xp, a, b: xp.logical_or(a, b)))
_broadcasting_op("Xor")(_binary(lambda xp, a, b: xp.logical_xor(a, b)))


@_broadcasting_op("Div")
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


@_broadcasting_op("Pow")
def pow_(ctx: NodeContext, a, b):
    # The result has the base's type (ONNX Pow allows a different exponent type); as JAX holds
    # it where either side is traced (without x64, an int64 base folded at conversion is int32
    # there: asking JAX for int64 only warns and truncates).
    dtype = a.dtype if is_static(a) and is_static(b) else device_dtype(a.dtype)
    return ctx.xp.power(a, b.astype(dtype)).astype(dtype)


def _variadic(name):
    def handler(ctx: NodeContext, *xs):
        return functools.reduce(getattr(ctx.xp, name), xs)

    return handler


_broadcasting_op("Max")(_variadic("maximum"))
_broadcasting_op("Min")(_variadic("minimum"))
_broadcasting_op("Sum")(_variadic("add"))


@_broadcasting_op("Mean")
def mean(ctx: NodeContext, *xs):
    return (functools.reduce(ctx.xp.add, xs) / len(xs)).astype(xs[0].dtype)


@_broadcasting_op("Where")
def where(ctx: NodeContext, cond, a, b):
    return ctx.xp.where(cond, a, b)


def _unary(fn):
    def handler(ctx: NodeContext, x):
        return fn(ctx.xp, x)

    return handler


_unary_op("Neg")(_unary(lambda xp, x: xp.negative(x)))
_unary_op("Abs")(_unary(lambda xp, x: xp.abs(x)))
_unary_op("Exp")(_unary(lambda xp, x: xp.exp(x)))
_unary_op("Log")(_unary(lambda xp, x: xp.log(x)))
_unary_op("Sqrt")(_unary(lambda xp, x: xp.sqrt(x)))
_unary_op("Tanh")(_unary(lambda xp, x: xp.tanh(x)))
_unary_op("Floor")(_unary(lambda xp, x: xp.floor(x)))
_unary_op("Ceil")(_unary(lambda xp, x: xp.ceil(x)))
_unary_op("Sign")(_unary(lambda xp, x: xp.sign(x)))
_unary_op("Not")(_unary(lambda xp, x: xp.logical_not(x)))
_unary_op("Reciprocal")(_unary(lambda xp, x: (xp.ones((), x.dtype) / x).astype(x.dtype)))
_unary_op("Relu")(_unary(lambda xp, x: xp.maximum(x, xp.zeros((), x.dtype))))


@_unary_op("Identity")
def identity(ctx: NodeContext, x):
    return x


@_unary_op("Sigmoid")
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


@_unary_op("Softplus")
def softplus(ctx: NodeContext, x):
    return _softplus(x)


@_unary_op("Mish")
def mish(ctx: NodeContext, x):
    return x * ctx.xp.tanh(_softplus(x))


@_unary_op("Erf")
def erf(ctx: NodeContext, x):
    import jax.scipy.special

    return jax.scipy.special.erf(x)


@_unary_op("Elu")
def elu(ctx: NodeContext, x):
    alpha = ctx.attr("alpha", 1.0)
    xp = ctx.xp
    return xp.where(x > 0, x, (alpha * (xp.exp(x) - 1)).astype(x.dtype))


@_unary_op("Selu")
def selu(ctx: NodeContext, x):
    alpha = ctx.attr("alpha", SELU_ALPHA)
    gamma = ctx.attr("gamma", SELU_GAMMA)
    xp = ctx.xp
    return (gamma * xp.where(x > 0, x, alpha * (xp.exp(x) - 1))).astype(x.dtype)


@_unary_op("LeakyRelu")
def leaky_relu(ctx: NodeContext, x):
    alpha = ctx.attr("alpha", 0.01)
    return ctx.xp.where(x >= 0, x, (alpha * x).astype(x.dtype))


@_unary_op("HardSigmoid")
def hard_sigmoid(ctx: NodeContext, x):
    alpha = ctx.attr("alpha", 0.2)
    beta = ctx.attr("beta", 0.5)
    return ctx.xp.clip(alpha * x + beta, 0, 1).astype(x.dtype)


@register("Clip", nhwc=True)
def clip(ctx: NodeContext, x, lo=None, hi=None):
    # Scalar bounds (or none) clip NHWC data as it is stored; tensor bounds broadcast in ONNX layout.
    scalar = [v is None or (not isinstance(v, nhwc.Nhwc) and np.size(v) == 1) for v in (lo, hi)]
    if isinstance(x, nhwc.Nhwc) and all(scalar):
        return nhwc.Nhwc(clip(ctx, x.data, lo, hi))
    x, lo, hi = (nhwc.as_nchw(v) for v in (x, lo, hi))
    if ctx.opset < 11:
        lo = np.asarray(ctx.attr("min", -np.inf), x.dtype)
        hi = np.asarray(ctx.attr("max", np.inf), x.dtype)
    xp = ctx.xp
    if lo is not None:
        x = xp.maximum(x, lo.astype(x.dtype) if is_static(lo) else lo)
    if hi is not None:
        x = xp.minimum(x, hi.astype(x.dtype) if is_static(hi) else hi)
    return x


@_unary_op("Cast")
def cast(ctx: NodeContext, x):
    from ..onnx_io import device_dtype, onnx_to_np_dtype

    to = ctx.float_dtype(onnx_to_np_dtype(ctx.attr("to"), ctx.node.name))
    if is_static(x):
        return np.asarray(x).astype(to)
    return x.astype(device_dtype(to))


@register("CastLike")
def cast_like(ctx: NodeContext, x, like):
    return x.astype(like.dtype)
