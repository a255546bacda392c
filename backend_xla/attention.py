"""Scaled dot-product attention found in an ONNX graph and run as one ``jax.nn.dot_product_attention``.

lc0's attention bodies and policy heads write each head's attention as five nodes::

    s = MatMul(Q, Kt)          Q [B, N, T, H], Kt [B, N, H, S]
    s = Mul(s, scale)          scale: a scalar known at load
    s = Add(s, bias)           optional: smolgen's [B, N, T, S] logits
    p = Softmax(s, axis=-1)
    y = MatMul(p, V)           V [B, N, S, H] -> y [B, N, T, H]

Traced node by node, XLA keeps the [B, N, T, S] logits in memory between separate fusions; one
``dot_product_attention`` call lets a GPU run cuDNN's fused kernel (``attention=cudnn``) or lets
XLA see the whole pattern (``attention=xla``). The five nodes stay in the graph: once ``y`` is
computed by the fused call nothing reads the intermediate values and XLA drops them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from .errors import NetworkError


@dataclass(frozen=True)
class Attention:
    """One matched pattern: the value names of its inputs, by the final MatMul's output."""

    query: str  # Q, [B, N, T, H]
    key_t: str  # K transposed, [B, N, H, S]
    value: str  # V, [B, N, S, H]
    scale: str  # a static scalar
    bias: str | None  # [B, N, T, S] (or broadcastable), or None


def find_attention(nodes: Sequence[onnx.NodeProto], outputs: Sequence[str]) -> dict[str, Attention]:
    """The attention patterns among ``nodes``, keyed by the output of each one's last MatMul.

    A pattern qualifies only where each intermediate value (logits, scaled, biased, softmax) is
    read by the next node alone and is no graph output, so that nothing else needs it."""
    producer = {o: n for n in nodes for o in n.output}
    readers: dict[str, int] = {}
    for n in nodes:
        for name in n.input:
            readers[name] = readers.get(name, 0) + 1
    for name in outputs:
        readers[name] = readers.get(name, 0) + 1

    def only(name: str, op: str) -> onnx.NodeProto | None:
        node = producer.get(name)
        if node is None or node.op_type != op or readers.get(name) != 1:
            return None
        return node

    found = {}
    for node in nodes:
        if node.op_type != "MatMul" or len(node.input) != 2:
            continue
        softmax = only(node.input[0], "Softmax")
        if softmax is None or _attr(softmax, "axis", -1) not in (-1, 3):
            continue
        bias = None
        inner = only(softmax.input[0], "Add")
        if inner is not None:
            bias = inner.input[1]
            scaled = only(inner.input[0], "Mul")
        else:
            scaled = only(softmax.input[0], "Mul")
        if scaled is None:
            continue
        logits = only(scaled.input[0], "MatMul")
        if logits is None:
            continue
        found[node.output[0]] = Attention(
            logits.input[0], logits.input[1], node.input[1], scaled.input[1], bias
        )
    return found


def _attr(node: onnx.NodeProto, name: str, default: Any) -> Any:
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def run_fused(
    found: Attention, env: dict[str, Any], implementation: str, node: onnx.NodeProto, source: str
) -> Any | None:
    """:func:`fused_attention`, its failure a NetworkError naming the file, the node and the op."""
    try:
        return fused_attention(found, env, implementation)
    except Exception as exc:
        raise NetworkError(
            f"{source}: node {node.name!r} (op MatMul, the end of an attention run as one "
            f"jax.nn.dot_product_attention, attention={implementation}): "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def fused_attention(found: Attention, env: dict[str, Any], implementation: str) -> Any | None:
    """The pattern's output from ``env``'s values, or None where the values do not fit a fused
    call (rank, a scale not known at load, shapes that disagree): then the graph's nodes run."""
    import jax
    import jax.numpy as jnp

    q, kt, v = env[found.query], env[found.key_t], env[found.value]
    scale = env[found.scale]
    bias = env[found.bias] if found.bias is not None else None
    if not isinstance(scale, np.ndarray) or scale.size != 1:
        return None
    if any(getattr(x, "ndim", 0) != 4 for x in (q, kt, v)):
        return None
    b, n, t, h = q.shape
    if kt.shape != (b, n, h, kt.shape[3]) or v.shape != (b, n, kt.shape[3], h):
        return None
    dtype = jnp.result_type(q, kt, v)
    query = jnp.swapaxes(q, 1, 2).astype(dtype)  # [B, T, N, H]
    key = jnp.transpose(kt, (0, 3, 1, 2)).astype(dtype)  # [B, S, N, H]
    value = jnp.swapaxes(v, 1, 2).astype(dtype)
    if bias is not None:
        bias = jnp.broadcast_to(jnp.asarray(bias, dtype), (b, n, t, kt.shape[3]))
    out = jax.nn.dot_product_attention(  # type: ignore[call-overload]  # str: options check it
        query,
        key,
        value,
        bias=bias,
        scale=float(scale.reshape(())),
        implementation=implementation,
    )
    return jnp.swapaxes(out, 1, 2)  # [B, N, T, H], as the graph's MatMul gives it
