"""The graph walk of :class:`.onnx_to_jax.Converter`: one node at a time while JAX traces, and
a function run over a batch in chunks."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, Protocol

import numpy as np
import onnx

from . import ops
from .errors import NetworkError

WINOGRAD_SUFFIX = "#winograd2"
"""Key of a filter's load-time Winograd transform among the parameters (not an ONNX name)."""


class NodeSettings(Protocol):
    """What every node's context shares (the converter's model and options)."""

    opset: int
    source: str
    float_override: np.dtype | None
    layout: str
    conv_method: str


def run_node(
    node: onnx.NodeProto,
    env: dict[str, Any],
    settings: NodeSettings,
    hwio: Collection[str] = frozenset(),
    winograd: Collection[str] = frozenset(),
) -> None:
    """Computes ``node``'s outputs into ``env`` from its inputs there: numpy where every input is
    known at conversion time (so ``Shape``/``Slice`` chains fold), else JAX. ``hwio`` names the
    filters stored HWIO; ``winograd`` those whose Winograd transform ``env`` holds under
    ``name + WINOGRAD_SUFFIX``."""
    try:
        args = [env[name] if name else None for name in node.input]
    except KeyError as exc:
        raise NetworkError(
            f"{settings.source}: node {node.name!r} (op {node.op_type}): "
            f"expected input {exc.args[0]!r} to be computed earlier, got none "
            "(graph not topologically sorted?)"
        ) from None
    static = all(a is None or ops.is_static(a) for a in args)
    if static:
        xp: Any = np
    else:
        import jax.numpy

        xp = jax.numpy
    filter_name = node.input[1] if len(node.input) > 1 else None
    ctx = ops.NodeContext(
        node,
        settings.opset,
        xp,
        settings.source,
        settings.float_override,
        layout=settings.layout,
        conv_method=settings.conv_method,
        hwio_filter=filter_name in hwio,
        winograd_filter=env[filter_name + WINOGRAD_SUFFIX]
        if node.op_type == "Conv" and filter_name is not None and filter_name in winograd
        else None,
    )
    results = _call_handler(ctx, args, static)
    for name, value in zip(node.output, results):
        if name:
            env[name] = np.asarray(value) if static and not hasattr(value, "aval") else value


def _call_handler(ctx: ops.NodeContext, args: list, static: bool) -> tuple:
    handler = ops.handler_for(ctx.node.op_type)
    assert handler is not None  # check_ops refused unsupported ops
    try:
        if static:
            result = handler(ctx, *args)
        else:
            import jax

            # The node's name in the HLO metadata: XLA's per-op profile then names the ONNX
            # node each fusion came from (docs/performance.md, issue 32).
            with jax.named_scope(ctx.node.name or ctx.node.op_type):
                result = handler(ctx, *args)
    except NetworkError:
        raise
    except Exception as exc:
        raise ctx.error(f"conversion failed: {type(exc).__name__}: {exc}") from exc
    return result if isinstance(result, tuple) else (result,)


def micro_batched(fn: Callable, batch_size: int, rows: int, chunks: int) -> Callable:
    """``fn`` (built for ``rows``) over ``batch_size`` rows as ``chunks`` chunks run one after the
    other; the last chunk is padded with zero rows, cut off the outputs."""

    def run(params: dict, *inputs):
        import jax
        import jax.numpy as jnp

        padded = chunks * rows
        stacked = tuple(
            jnp.pad(x, [(0, padded - batch_size)] + [(0, 0)] * (x.ndim - 1)).reshape(
                (chunks, rows) + x.shape[1:]
            )
            for x in inputs
        )
        outs = jax.lax.map(lambda xs: fn(params, *xs), stacked)
        return tuple(y.reshape((padded,) + y.shape[2:])[:batch_size] for y in outs)

    return run
