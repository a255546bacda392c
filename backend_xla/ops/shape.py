"""Shape and data-movement ops. Shapes are static (the batch size is fixed per executable), so
``Shape`` yields a numpy constant and the shape subgraphs that follow it fold away."""

from __future__ import annotations

import numpy as np

from .registry import NodeContext, is_static, register


@register("Constant")
def constant(ctx: NodeContext):
    for key in ("value", "sparse_value"):
        if key in ctx.attrs:
            if key == "sparse_value":
                raise ctx.error("expected a dense value, got sparse_value (not supported)")
            value = np.asarray(ctx.attr(key))
            return value.astype(ctx.float_dtype(value.dtype))
    scalar = {"value_float": np.float32, "value_int": np.int64}
    lists = {"value_floats": np.float32, "value_ints": np.int64}
    for key, dtype in {**scalar, **lists}.items():
        if key in ctx.attrs:
            value = np.asarray(ctx.attr(key), dtype)
            return value.astype(ctx.float_dtype(value.dtype))
    raise ctx.error(f"expected one of value/value_float(s)/value_int(s), got {sorted(ctx.attrs)}")


@register("Shape", nhwc=True)  # only the ONNX shape matters, which an NHWC value reports as well
def shape(ctx: NodeContext, x):
    dims = np.asarray(x.shape, np.int64)
    rank = len(dims)
    start = ctx.attr("start", 0)
    end = ctx.attr("end", rank)
    start, end = (min(max(v + rank if v < 0 else v, 0), rank) for v in (start, end))
    return dims[start:end]


@register("Size", nhwc=True)
def size(ctx: NodeContext, x):
    return np.asarray(int(np.prod(x.shape)), np.int64)


@register("ConstantOfShape")
def constant_of_shape(ctx: NodeContext, shape_):
    dims = ctx.ints(shape_, "shape")
    value = ctx.attr("value")
    value = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
    value = value.astype(ctx.float_dtype(value.dtype))
    return np.full(dims, value[0], value.dtype)


@register("Reshape")
def reshape(ctx: NodeContext, x, shape_):
    target = ctx.ints(shape_, "shape")
    allowzero = ctx.attr("allowzero", 0)
    dims = []
    for i, d in enumerate(target):
        if d == 0 and not allowzero:
            if i >= len(x.shape):
                raise ctx.error(f"expected dim {i} to copy from input of rank {len(x.shape)}")
            d = x.shape[i]
        dims.append(d)
    if dims.count(-1) > 1:
        raise ctx.error(f"expected at most one -1 in shape, got {target}")
    if -1 in dims:
        known = int(np.prod([d for d in dims if d != -1]))
        dims[dims.index(-1)] = int(np.prod(x.shape)) // known if known else 0
    if int(np.prod(dims)) != int(np.prod(x.shape)):
        raise ctx.error(
            f"expected a shape with {int(np.prod(x.shape))} elements, got {target} "
            f"for input shape {list(x.shape)}"
        )
    return ctx.xp.reshape(x, dims)


@register("Flatten")
def flatten(ctx: NodeContext, x):
    rank = len(x.shape)
    axis = ctx.attr("axis", 1)
    axis = axis + rank if axis < 0 else axis
    outer = int(np.prod(x.shape[:axis]))
    return ctx.xp.reshape(x, (outer, int(np.prod(x.shape[axis:]))))


@register("Transpose")
def transpose(ctx: NodeContext, x):
    perm = ctx.attr("perm")
    if perm is None:
        perm = list(range(len(x.shape)))[::-1]
    return ctx.xp.transpose(x, list(perm))


def _axes_input_or_attr(ctx: NodeContext, axes_input, first_opset_with_input: int):
    if ctx.opset >= first_opset_with_input:
        return None if axes_input is None else ctx.ints(axes_input, "axes")
    axes = ctx.attr("axes")
    return None if axes is None else list(axes)


@register("Squeeze")
def squeeze(ctx: NodeContext, x, axes=None):
    axes = _axes_input_or_attr(ctx, axes, 13)
    if axes is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    axes = ctx.axes(axes, len(x.shape))
    for a in axes:
        if x.shape[a] != 1:
            raise ctx.error(f"expected dim {a} of shape {list(x.shape)} to be 1")
    return ctx.xp.reshape(x, [d for i, d in enumerate(x.shape) if i not in axes])


@register("Unsqueeze")
def unsqueeze(ctx: NodeContext, x, axes=None):
    axes = _axes_input_or_attr(ctx, axes, 13)
    if axes is None:
        raise ctx.error("expected axes, got none")
    rank = len(x.shape) + len(axes)
    axes = sorted(ctx.axes(axes, rank))
    dims = list(x.shape)
    for a in axes:
        dims.insert(a, 1)
    return ctx.xp.reshape(x, dims)


@register("Concat")
def concat(ctx: NodeContext, *xs):
    axis = ctx.axes([ctx.attr("axis")], len(xs[0].shape), "axis")[0]
    return ctx.xp.concatenate(xs, axis=axis)


@register("Split")
def split(ctx: NodeContext, x, split_=None):
    axis = ctx.axes([ctx.attr("axis", 0)], len(x.shape), "axis")[0]
    dim = x.shape[axis]
    n_out = len(ctx.node.output)
    sizes = ctx.ints(split_, "split") if ctx.opset >= 13 and split_ is not None else None
    if ctx.opset < 13 and ctx.attr("split") is not None:
        sizes = list(ctx.attr("split"))
    if sizes is None:
        n = ctx.attr("num_outputs", n_out)
        chunk = -(-dim // n)  # ceil: the last chunk may be smaller (opset 18)
        sizes = [min(chunk, dim - i * chunk) for i in range(n)]
    if sum(sizes) != dim or len(sizes) != n_out:
        raise ctx.error(f"expected {n_out} sizes summing to {dim}, got {sizes}")
    offsets = np.cumsum([0] + sizes)
    index = [slice(None)] * len(x.shape)
    outs = []
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        index[axis] = slice(int(lo), int(hi))
        outs.append(x[tuple(index)])
    return tuple(outs)


@register("Slice")
def slice_(ctx: NodeContext, x, starts=None, ends=None, axes=None, steps=None):
    rank = len(x.shape)
    if ctx.opset < 10:
        starts, ends = ctx.attr("starts"), ctx.attr("ends")
        axes = ctx.attr("axes", list(range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts, ends = ctx.ints(starts, "starts"), ctx.ints(ends, "ends")
        axes = list(range(len(starts))) if axes is None else ctx.ints(axes, "axes")
        steps = [1] * len(starts) if steps is None else ctx.ints(steps, "steps")
    index = [slice(None)] * rank
    for start, end, axis, step in zip(starts, ends, ctx.axes(axes, rank), steps):
        if step == 0:
            raise ctx.error("expected non-zero steps, got 0")
        dim = x.shape[axis]
        start = start + dim if start < 0 else start
        end = end + dim if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        else:
            start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
        index[axis] = slice(start, None if end < 0 else end, step)
    return x[tuple(index)]


@register("Gather")
def gather(ctx: NodeContext, data, indices):
    axis = ctx.axes([ctx.attr("axis", 0)], len(data.shape), "axis")[0]
    dim = data.shape[axis]
    if is_static(indices):
        idx = np.where(indices < 0, indices + dim, indices)
        if idx.size and (idx.min() < 0 or idx.max() >= dim):
            raise ctx.error(
                f"expected indices in [{-dim}, {dim - 1}], got {indices.min()}..{indices.max()}"
            )
        return ctx.xp.take(
            data, idx.astype(np.int64) if is_static(data) else idx.astype(np.int32), axis=axis
        )
    idx = ctx.xp.where(indices < 0, indices + dim, indices)
    return ctx.xp.take(data, idx, axis=axis)


@register("GatherElements")
def gather_elements(ctx: NodeContext, data, indices):
    axis = ctx.axes([ctx.attr("axis", 0)], len(data.shape), "axis")[0]
    idx = ctx.xp.where(indices < 0, indices + data.shape[axis], indices)
    return ctx.xp.take_along_axis(data, idx, axis=axis)


@register("Expand")
def expand(ctx: NodeContext, x, shape_):
    target = ctx.ints(shape_, "shape")
    out_shape = np.broadcast_shapes(tuple(x.shape), tuple(target))
    return ctx.xp.broadcast_to(x, out_shape)


@register("Tile")
def tile(ctx: NodeContext, x, repeats):
    return ctx.xp.tile(x, ctx.ints(repeats, "repeats"))


@register("Range")
def range_(ctx: NodeContext, start, limit, delta):
    s, l, d = (ctx.static(v, n) for v, n in ((start, "start"), (limit, "limit"), (delta, "delta")))
    count = max(int(np.ceil((l - s) / d)), 0)
    return (s + d * np.arange(count)).astype(s.dtype)


@register("Pad")
def pad(ctx: NodeContext, x, pads=None, value=None, axes=None):
    rank = len(x.shape)
    mode = ctx.attr("mode", "constant")
    if ctx.opset < 11:
        pads = list(ctx.attr("pads"))
        value = np.asarray(ctx.attr("value", 0.0), x.dtype)
    else:
        pads = ctx.ints(pads, "pads")
    axes = list(range(rank)) if axes is None else ctx.axes(ctx.ints(axes, "axes"), rank)
    n = len(axes)
    if len(pads) != 2 * n:
        raise ctx.error(f"expected {2 * n} pads, got {len(pads)}")
    widths = [(0, 0)] * rank
    for i, a in enumerate(axes):
        widths[a] = (pads[i], pads[i + n])
    if any(lo < 0 or hi < 0 for lo, hi in widths):
        # Negative pads crop.
        index = tuple(
            slice(-lo if lo < 0 else 0, d + hi if hi < 0 else d)
            for (lo, hi), d in zip(widths, x.shape)
        )
        x = x[index]
        widths = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
    xp = ctx.xp
    if mode == "constant":
        if value is not None and not is_static(value):
            from jax import lax  # a pad value computed by the network: lax.pad takes a tensor

            return lax.pad(x, value.reshape(()).astype(x.dtype), [(lo, hi, 0) for lo, hi in widths])
        fill = 0 if value is None else value.reshape(-1)[0]
        return xp.pad(x, widths, mode="constant", constant_values=np.asarray(fill, x.dtype))
    if mode in ("reflect", "edge", "wrap"):
        return xp.pad(x, widths, mode=mode)
    raise ctx.error(f"expected mode constant, reflect, edge or wrap, got {mode!r}")
