"""Load-time passes over an ONNX graph, before :class:`.onnx_to_jax.Converter` traces it: the
initializers split into constants and parameters, which nodes the outputs need, whether every op
is supported, and weight-only nodes folded to constants.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx

from . import ops
from .errors import UnsupportedOpError
from .onnx_io import is_float, tensor_to_numpy

ONNX_DOMAINS = ("", "ai.onnx")


def load_initializers(
    graph: onnx.GraphProto, base_dir: Any, source: str, float_override: Any, inline_limit: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The graph's initializers as (constants, params): those up to ``inline_limit`` bytes are
    inlined in the HLO, larger ones become the function's parameters. Floats are converted to
    ``float_override`` where it is set."""
    constants: dict[str, np.ndarray] = {}
    params: dict[str, np.ndarray] = {}
    for init in graph.initializer:
        value = tensor_to_numpy(init, base_dir, source)
        if float_override is not None and is_float(value.dtype):
            value = value.astype(float_override)
        (params if value.nbytes > inline_limit else constants)[init.name] = value
    return constants, params


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
