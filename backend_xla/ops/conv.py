"""``Conv``: the one handler for every activation layout, filter layout and formulation.

* Activations: with ``layout=NHWC`` a 2-D conv of a traced input returns an
  :class:`~backend_xla.ops.nhwc.Nhwc` (an NCHW input, e.g. the network's input planes, is
  transposed once here); otherwise, and for 1-D/3-D convs, input and output are ONNX's NCHW.
* Filters: ONNX's OIHW, or ``[KH, KW, Cin, Cout]`` when the converter stored this filter HWIO at
  load (``ctx.hwio_filter``; see ``onnx_passes.ConvFilters``: from OIHW parameters XLA
  transposes every filter on every call of a one-device program).
* Formulation: ``lax.conv_general_dilated``; Winograd F(2×2) on a filter transformed at load
  (``ctx.winograd_filter``: ``conv_method`` auto at small batches, or winograd2); or for another
  ``conv_method`` (NHWC, OIHW filters) one of the rewrites of :mod:`backend_xla.ops.conv_methods`.
"""

from __future__ import annotations

from .linear import precision
from .nhwc import TO_NHWC, Nhwc, as_nchw
from .registry import NodeContext, is_static, register


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


def _keeps_nhwc(ctx: NodeContext, x, w, b) -> bool:
    """Whether this conv computes channels-last: a 2-D conv under ``layout=NHWC`` of a traced
    input (or of a constant one when its filter is stored HWIO, which only this path reads)."""
    return (
        ctx.layout == "NHWC"
        and len(x.shape) == 4
        and not isinstance(w, Nhwc)
        and not isinstance(b, Nhwc)
        and (ctx.hwio_filter or not is_static(x))
    )


@register("Conv", nhwc=True)
def conv(ctx: NodeContext, x, w, b=None):
    from jax import lax

    nhwc = _keeps_nhwc(ctx, x, w, b)
    if nhwc:
        import jax.numpy as jnp

        x = x.data if isinstance(x, Nhwc) else jnp.transpose(jnp.asarray(x), TO_NHWC)
    else:
        x, w, b = as_nchw(x), as_nchw(w), as_nchw(b)
    n = len(x.shape) - 2
    if n < 1:
        raise ctx.error(f"expected input of rank >= 3 [N, C, ...], got shape {list(x.shape)}")
    if n > 3:
        raise ctx.error(f"expected 1 to 3 spatial dims, got {n}")
    hwio = ctx.hwio_filter
    kernel = list(ctx.attr("kernel_shape", w.shape[:n] if hwio else w.shape[2:]))
    strides = list(ctx.attr("strides", [1] * n))
    dilations = list(ctx.attr("dilations", [1] * n))
    group = ctx.attr("group", 1)
    spatial = "DHW"[-n:]
    padding = _conv_padding(ctx, x.shape[1:3] if nhwc else x.shape[2:], kernel, strides, dilations)
    winograd = nhwc and ctx.winograd_filter is not None
    if winograd or (nhwc and ctx.conv_method not in ("lax", "auto") and not hwio):
        from .conv_methods import conv2d

        pads = [padding[0][0], padding[1][0], padding[0][1], padding[1][1]]
        if hwio:  # conv2d reads OIHW; with a load-time transform only for its shape (no copy runs)
            w = w.transpose(3, 2, 0, 1)
        return Nhwc(
            conv2d(
                x,
                w.astype(x.dtype),
                b,
                strides=strides,
                pads=pads,
                dilations=dilations,
                group=group,
                layout="NHWC",
                method="winograd2" if winograd else ctx.conv_method,
                winograd_filter=ctx.winograd_filter,
            )
        )
    activations = "N" + spatial + "C" if nhwc else "NC" + spatial
    filters = spatial + "IO" if hwio else "OI" + spatial
    y = lax.conv_general_dilated(
        x,
        w.astype(x.dtype),
        window_strides=strides,
        padding=padding,
        rhs_dilation=dilations,
        dimension_numbers=(activations, filters, activations),
        feature_group_count=group,
        precision=precision(x.dtype),
    )
    if b is not None:
        channels = (1,) * (n + 1) + (-1,) if nhwc else (1, -1) + (1,) * n
        y = y + b.astype(y.dtype).reshape(channels)
    return Nhwc(y) if nhwc else y
