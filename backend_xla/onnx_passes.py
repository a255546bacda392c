"""Load-time passes over an ONNX graph, before :class:`.onnx_to_jax.Converter` traces it: which
nodes the outputs need, whether every op is supported, weight-only nodes folded to constants, and
the conv filters stored for a formulation (HWIO, or Winograd's transform).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import onnx

from . import ops
from .errors import UnsupportedOpError

ONNX_DOMAINS = ("", "ai.onnx")

WINOGRAD_MAX_CHANNELS = 128
"""Widest filter (input or output channels) ``conv_method=auto`` runs as Winograd: Maia's (64 to
112 channels) were measured (docs/performance.md, issue 32); wider ones keep XLA's convolution."""


def needed_nodes(graph: onnx.GraphProto, output_names: Sequence[str]) -> list[onnx.NodeProto]:
    """Nodes the requested outputs depend on, in graph (topological) order."""
    producer = {o: n for n in graph.node for o in n.output}
    needed: set[int] = set()
    stack = list(output_names)
    seen: set[str] = set()
    while stack:
        name = stack.pop()
        if name in seen or name not in producer:
            continue
        seen.add(name)
        node = producer[name]
        needed.add(id(node))
        stack.extend(i for i in node.input if i)
    return [n for n in graph.node if id(n) in needed]


def check_ops(nodes: Sequence[onnx.NodeProto], source: str) -> None:
    """Raises :class:`UnsupportedOpError` naming the first node whose op has no handler."""
    bad = [n for n in nodes if n.domain not in ONNX_DOMAINS or ops.handler_for(n.op_type) is None]
    if bad:
        first = bad[0]
        more = f" (and {len(bad) - 1} more nodes)" if len(bad) > 1 else ""
        domain = f" from domain {first.domain!r}" if first.domain not in ONNX_DOMAINS else ""
        raise UnsupportedOpError(
            f"{source}: node {first.name!r} uses unsupported op {first.op_type}{domain}"
            f"{more}; supported ops: {', '.join(ops.supported_ops())}"
        )


def filter_readers(nodes: Sequence[onnx.NodeProto]) -> dict[str, set[str]]:
    """For each value, the ops that read it as their second input (a ``Conv``'s filter), and
    ``"other"`` where something reads it in another place: a filter may change layout at load
    only if nothing else reads it."""
    readers: dict[str, set[str]] = {}
    for node in nodes:
        for i, name in enumerate(node.input):
            readers.setdefault(name, set()).add(node.op_type if i == 1 else "other")
    return readers


def fold_weights(
    nodes: Sequence[onnx.NodeProto],
    constants: dict[str, np.ndarray],
    params: dict[str, np.ndarray],
    *,
    opset: int,
    source: str,
    float_override: Any,
    inline_limit: int,
    fold_limit: int,
) -> tuple[list[onnx.NodeProto], int]:
    """Evaluate, once at load, every node whose inputs are all initializers or constants.

    Small values were already folded while tracing; this extends it to large float tensors
    (e.g. a ``Cast`` of f32 conv weights to bf16, ``Mul`` of two weight tensors), which would
    otherwise run on every call because large initializers are parameters. Results above
    ``fold_limit`` bytes (an ``Expand`` of a scalar, say) are left to run in the graph; a node
    whose handler fails is left too, so that conversion reports it with context. Each result
    goes to ``params`` if larger than ``inline_limit`` bytes, else to ``constants``.
    Returns the nodes left and the number folded.
    """
    known = {**constants, **params}
    remaining, folded = [], 0
    for node in nodes:
        results = None
        if all(not name or name in known for name in node.input):
            args = [known[name] if name else None for name in node.input]
            ctx = ops.NodeContext(node, opset, np, source, float_override)
            results = _fold(ctx, args, fold_limit)
        if results is None:
            remaining.append(node)
            continue
        folded += 1
        for name, value in zip(node.output, results):
            if name:
                value = np.asarray(value)
                known[name] = value
                (params if value.nbytes > inline_limit else constants)[name] = value
    return remaining, folded


def _fold(ctx: ops.NodeContext, args: list, fold_limit: int) -> tuple | None:
    """The node's numpy results, or None where it fails, is not numpy or is too large."""
    handler = ops.handler_for(ctx.node.op_type)
    assert handler is not None  # check_ops refused unsupported ops
    try:
        result = handler(ctx, *args)
    except Exception:
        return None
    results = result if isinstance(result, tuple) else (result,)
    if (
        not all(isinstance(r, (np.ndarray, np.generic)) for r in results)
        or sum(np.asarray(r).nbytes for r in results) > fold_limit
    ):
        return None
    return results


class ConvFilters(NamedTuple):
    """The conv filters stored for a formulation at load (:func:`conv_filters`)."""

    hwio: set[str]
    """2-D conv filters that are parameters and may be stored HWIO (``[KH, KW, Cin, Cout]``).

    From OIHW parameters, a one-device program transposes every filter on every call (Maia: 16 of
    the 20 transposes left in the optimized NHWC program; batch 1 ran 1.25× faster with HWIO
    filters). Programs split over host devices measured the other way (OIHW 1.15–1.2× faster at
    batch 32/256, Maia, same run), so ``Converter.params_for`` and ``Converter.function`` take the
    choice per program. Only weights read by nothing but ``Conv`` nodes qualify, and only for
    ``conv_method`` lax or auto (the formulations in backend_xla.ops.conv_methods take OIHW)."""
    winograd: dict[str, tuple]
    """Filters of 3×3 stride-1 'same' convs that may run as Winograd F(2×2), with their weight
    shapes: their filter transform is made once at load (``Converter.params_for``) instead of on
    every call (at batch 8 Maia ran 1.2× faster with it made at load, 0.4× with it in the graph:
    docs/performance.md, issue 32). Only for ``conv_method`` winograd2, or auto up to
    :data:`WINOGRAD_MAX_CHANNELS` channels, in the NHWC layout."""


def conv_filters(
    nodes: Sequence[onnx.NodeProto],
    params: dict[str, np.ndarray],
    outputs: Sequence[str],
    layout: str,
    conv_method: str,
) -> ConvFilters:
    """Which conv filters among ``params`` are stored HWIO, and which transformed for Winograd."""
    from .ops.conv_methods import is_fast_3x3

    readers = filter_readers(nodes)

    def conv_only(name: str) -> bool:
        w = params.get(name)
        return (
            w is not None and w.ndim == 4 and readers.get(name) == {"Conv"} and name not in outputs
        )

    convs = [n for n in nodes if n.op_type == "Conv" and len(n.input) > 1]
    hwio: set[str] = set()
    if conv_method in ("lax", "auto"):
        hwio = {n.input[1] for n in convs if conv_only(n.input[1])}
    winograd: dict[str, tuple] = {}
    if layout == "NHWC" and conv_method in ("auto", "winograd2"):
        for node in convs:
            name = node.input[1]
            if not conv_only(name):
                continue
            shape = params[name].shape
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            if (
                attrs.get("auto_pad", b"NOTSET") in (b"NOTSET", "NOTSET", b"", "")
                and (conv_method == "winograd2" or max(shape[:2]) <= WINOGRAD_MAX_CHANNELS)
                and is_fast_3x3(
                    shape,
                    attrs.get("strides"),
                    attrs.get("pads"),
                    attrs.get("dilations"),
                    attrs.get("group", 1),
                )
            ):
                winograd[name] = shape
    return ConvFilters(hwio, winograd)
