"""The NHWC layout pass: 4-D activations stay channels-last between the ops that allow it.

Why: XLA's CPU convolution is faster with NHWC dimension numbers than with ONNX's NCHW (1.05–1.4×
per conv, docs/performance.md §1), and an NCHW conv is lowered with a transpose in and out around
the kernel anyway. Keeping activations NHWC from one conv to the next (through the bias, ReLU,
residual Add, SE block, batch norm) pays one transpose at the network input and one where a head
flattens the tensor, instead of two per conv.

How: a value in the converter's environment may be an :class:`Nhwc` — the data stored
``[N, H, W, C]`` while its ONNX (logical) shape is ``[N, C, H, W]``. Only the handlers in
:data:`HANDLERS` here see such values; for every other op the converter calls
:func:`as_nchw` on the inputs first (a transpose, cached per value), so the ordinary op handlers
in :mod:`backend_xla.ops` stay unchanged and always see ONNX layout. A handler here returns
``NotImplemented`` when it cannot keep the layout for this node (e.g. a reduction with
``keepdims=0``); the converter then falls back to the ordinary handler on NCHW inputs.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .ops import registry
from .ops.linear import _conv_padding, _precision
from .ops.reduce import AXES_INPUT_SINCE, AXES_INPUT_SINCE_DEFAULT

TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)
NCHW_AXIS_IN_NHWC = (0, 3, 1, 2)  # logical (NCHW) axis i is stored at position NCHW_AXIS_IN_NHWC[i]


class Nhwc:
    """A traced 4-D value stored NHWC whose ONNX shape is NCHW (see the module docstring)."""

    __slots__ = ("data", "_nchw")

    def __init__(self, data: Any) -> None:
        self.data = data
        self._nchw = None

    @property
    def shape(self) -> tuple[int, ...]:
        n, h, w, c = self.data.shape
        return (n, c, h, w)

    @property
    def dtype(self):
        return self.data.dtype

    def as_nchw(self) -> Any:
        """The value in ONNX layout (one transpose, made once however many consumers need it)."""
        if self._nchw is None:
            import jax.numpy as jnp

            self._nchw = _permute(jnp, self.data, TO_NCHW)
        return self._nchw


def _permute(xp: Any, x: Any, perm: tuple[int, ...]) -> Any:
    """``xp.transpose(x, perm)``, as a reshape when it only moves size-1 axes (an SE block's
    ``[N, 1, 1, C]`` ↔ ``[N, C, 1, 1]``): no data moves, and the HLO says so."""
    shape = tuple(x.shape)
    moved = tuple(shape[p] for p in perm)
    if [d for d in shape if d != 1] == [d for d in moved if d != 1] and [
            p for p in perm if shape[p] != 1] == sorted(p for p in perm if shape[p] != 1):
        return xp.reshape(x, moved)
    return xp.transpose(x, perm)


def as_nchw(value: Any) -> Any:
    return value.as_nchw() if isinstance(value, Nhwc) else value


def _to_nhwc_operand(value: Any) -> Any:
    """An operand of rank <= 4 broadcasting against an NCHW tensor, as the NHWC equivalent.

    Numpy broadcasting aligns shapes on the right, so padding the shape to rank 4 with leading 1s
    does not change the result, and transposing every rank-4 operand with the same permutation
    transposes the result. Constants (per-channel ``[C,1,1]`` biases, scalars) fold at conversion.
    """
    if isinstance(value, Nhwc):
        return value.data
    shape = tuple(value.shape)
    padded = (1,) * (4 - len(shape)) + shape
    if registry.is_static(value):
        return np.transpose(np.reshape(value, padded), TO_NHWC)
    import jax.numpy as jnp

    return _permute(jnp, jnp.reshape(value, padded), TO_NHWC)


def _is_traced4(value: Any) -> bool:
    return value is not None and not registry.is_static(value) and len(value.shape) == 4


Handler = Callable[..., Any]
HANDLERS: dict[str, Handler] = {}


def _register(*ops: str):
    def wrap(fn: Handler) -> Handler:
        for op in ops:
            HANDLERS[op] = fn
        return fn

    return wrap


def handler_for(op_type: str) -> Handler | None:
    return HANDLERS.get(op_type)


def _generic(ctx):
    return registry.handler_for(ctx.node.op_type)


# ----------------------------------------------------------------------------- convolution


@_register("Conv")
def conv(ctx, x, w, b=None, *, method: str = "lax", hwio: bool = False):
    """2-D Conv in NHWC; an NCHW 4-D input (e.g. the input planes) is transposed once here.

    ``hwio``: the converter stored this weight as ``[KH, KW, Cin, Cout]`` at load (see
    ``Converter._conv_weights_to_hwio``), so this handler must take the node even for a constant
    input (the ordinary handler expects ONNX's OIHW).
    """
    if (registry.is_static(x) and not hwio) or len(x.shape) != 4 or isinstance(w, Nhwc) or \
            isinstance(b, Nhwc):
        return NotImplemented
    from jax import lax
    import jax.numpy as jnp

    data = x.data if isinstance(x, Nhwc) else jnp.transpose(jnp.asarray(x), TO_NHWC)
    kernel = list(ctx.attr("kernel_shape", w.shape[:2] if hwio else w.shape[2:]))
    strides = list(ctx.attr("strides", [1, 1]))
    dilations = list(ctx.attr("dilations", [1, 1]))
    group = ctx.attr("group", 1)
    padding = _conv_padding(ctx, data.shape[1:3], kernel, strides, dilations)
    if method != "lax" and not hwio:
        from .perf.conv import conv2d

        pads = [padding[0][0], padding[1][0], padding[0][1], padding[1][1]]
        y = conv2d(data, w.astype(data.dtype), b, strides=strides, pads=pads,
                   dilations=dilations, group=group, layout="NHWC", method=method)
        return Nhwc(y)
    y = lax.conv_general_dilated(
        data, w.astype(data.dtype), window_strides=strides, padding=padding,
        rhs_dilation=dilations, dimension_numbers=("NHWC", "HWIO" if hwio else "OIHW", "NHWC"),
        feature_group_count=group, precision=_precision(data.dtype))
    if b is not None:
        y = y + b.astype(y.dtype).reshape((1, 1, 1, -1))
    return Nhwc(y)


def conv_nchw_hwio(ctx, x, w, b=None):
    """``Conv`` in ONNX layout with a filter the converter stored HWIO at load (layout=NCHW)."""
    from jax import lax
    import jax.numpy as jnp

    x = jnp.asarray(x)
    kernel = list(ctx.attr("kernel_shape", w.shape[:2]))
    strides = list(ctx.attr("strides", [1, 1]))
    dilations = list(ctx.attr("dilations", [1, 1]))
    padding = _conv_padding(ctx, x.shape[2:], kernel, strides, dilations)
    y = lax.conv_general_dilated(
        x, w.astype(x.dtype), window_strides=strides, padding=padding, rhs_dilation=dilations,
        dimension_numbers=("NCHW", "HWIO", "NCHW"), feature_group_count=ctx.attr("group", 1),
        precision=_precision(x.dtype))
    if b is not None:
        y = y + b.astype(y.dtype).reshape((1, -1, 1, 1))
    return y


# ----------------------------------------------------------------------------- element-wise

UNARY = ("Relu", "Sigmoid", "Tanh", "Softplus", "Mish", "Elu", "Selu", "LeakyRelu", "HardSigmoid",
         "Neg", "Abs", "Exp", "Log", "Sqrt", "Erf", "Reciprocal", "Identity", "Floor", "Ceil",
         "Sign", "Cast", "Not")


@_register(*UNARY)
def unary(ctx, x):
    return Nhwc(_generic(ctx)(ctx, x.data))


@_register("Clip")
def clip(ctx, x, lo=None, hi=None):
    if not isinstance(x, Nhwc) or any(isinstance(v, Nhwc) or (v is not None and np.size(v) != 1)
                                      for v in (lo, hi)):
        return NotImplemented
    return Nhwc(_generic(ctx)(ctx, x.data, lo, hi))


BROADCASTING = ("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Where",
                "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor")


@_register(*BROADCASTING)
def broadcasting(ctx, *args):
    """Element-wise with numpy broadcasting: every operand transposed alike (see _to_nhwc_operand)."""
    if any(a is None or len(a.shape) > 4 for a in args):
        return NotImplemented
    out = _generic(ctx)(ctx, *[_to_nhwc_operand(a) for a in args])
    return Nhwc(out) if len(out.shape) == 4 else NotImplemented


# ----------------------------------------------------------------------------- reductions

REDUCE_FNS = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "max", "ReduceMin": "min"}


@_register(*REDUCE_FNS)
def reduce(ctx, x, axes=None):
    """Reductions over the stored axes: with keepdims the result stays NHWC; without, the kept
    axes are put back in ONNX order (SE: mean over H, W of [N, H, W, C] is already [N, C])."""
    if not isinstance(x, Nhwc):
        return NotImplemented
    keepdims = bool(ctx.attr("keepdims", 1))
    since = AXES_INPUT_SINCE.get(ctx.node.op_type, AXES_INPUT_SINCE_DEFAULT)
    if ctx.opset >= since:
        axes = None if axes is None else ctx.ints(axes, "axes")
    else:
        axes = ctx.attr("axes")
    if not axes:
        return NotImplemented  # reduce-all / no-op variants: the ordinary handler
    logical = ctx.axes(axes, 4)
    stored = tuple(sorted(NCHW_AXIS_IN_NHWC[a] for a in logical))
    import jax.numpy as jnp

    out = getattr(jnp, REDUCE_FNS[ctx.node.op_type])(x.data, axis=stored, keepdims=keepdims)
    out = out.astype(x.dtype)
    if keepdims:
        return Nhwc(out)
    kept = [NCHW_AXIS_IN_NHWC[a] for a in range(4) if a not in logical]  # ONNX order
    return _permute(jnp, out, tuple(sorted(kept).index(k) for k in kept))


@_register("GlobalAveragePool", "GlobalMaxPool")
def global_pool(ctx, x):
    import jax.numpy as jnp

    fn = jnp.mean if ctx.node.op_type == "GlobalAveragePool" else jnp.max
    return Nhwc(fn(x.data, axis=(1, 2), keepdims=True).astype(x.dtype))


# ----------------------------------------------------------------------------- normalization


@_register("BatchNormalization")
def batch_normalization(ctx, x, scale, bias, mean, var, *rest):
    if not isinstance(x, Nhwc) or ctx.attr("training_mode", 0) or any(
            isinstance(v, Nhwc) for v in (scale, bias, mean, var)):
        return NotImplemented
    # The ordinary handler reshapes the per-channel vectors to [1, C, 1, 1] for rank 4; on the
    # stored [N, H, W, C] data a per-channel vector broadcasts as [C]. Run it on a rank-2 view:
    # for rank 2 it reshapes them to [1, C], which broadcasts against NHWC data as the last axis.
    n, h, w, c = x.data.shape
    flat = x.data.reshape(n * h * w, c)
    out = _generic(ctx)(ctx, flat, scale, bias, mean, var, *rest)
    return Nhwc(out.reshape(n, h, w, c))


# ----------------------------------------------------------------------------- shape queries


@_register("Shape", "Size")
def shape_query(ctx, x):
    """Only the logical shape matters (Nhwc.shape is the ONNX one): no transpose needed."""
    return _generic(ctx)(ctx, x)
