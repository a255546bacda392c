"""``describe``: a human-readable summary of an lc0 weight file."""

from __future__ import annotations

import os

from .netproto import Message, present, type_name
from .weights import layer_values, read_weights


def _count_params(msg: Message) -> int:
    """Number of weight values stored in ``msg`` and everything below it."""
    if type_name(msg) == "Layer":
        return layer_values(msg, "layer").size
    total = 0
    for field, value in msg.ListFields():
        if field.message_type is not None:
            for item in value if field.is_repeated else [value]:
                total += _count_params(item)
    return total


def describe(path: str | os.PathLike) -> list[str]:
    """Lines describing the network: format fields, body and head sizes, parameter count."""
    net = read_weights(path)
    fmt, w = net.format, net.weights
    lines = [
        f"file: {os.fspath(path)}",
        f"min lc0 version: {'.'.join(map(str, net.min_version))}"
        + ("" if net.had_network_format else " (no network format: lc0's defaults apply)"),
    ]
    for field in (
        "network",
        "input",
        "output",
        "policy",
        "value",
        "moves_left",
        "default_activation",
        "smolgen_activation",
        "ffn_activation",
        "input_embedding",
    ):
        lines.append(f"{field}: {fmt.name(field)}")
    if w is None:
        lines.append(
            "weights: none" + (" (embedded ONNX model)" if net.net.HasField("onnx_model") else "")
        )
        return lines
    filters = layer_values(w.input.weights, "input").size // (112 * 9)
    if w.residual:
        se = sum(1 for r in w.residual if r.HasField("se"))
        lines.append(
            f"residual tower: {len(w.residual)} blocks x {filters} filters"
            + (f", {se} with squeeze-excitation" if se else "")
        )
    if w.encoder:
        emb = layer_values(w.ip_emb_b, "ip_emb_b").size
        dff = layer_values(w.encoder[0].ffn.dense1_b, "dense1_b").size
        smolgen = any(present(present(e, "mha"), "smolgen") is not None for e in w.encoder)
        lines.append(
            f"attention body: {len(w.encoder)} encoder layers, embedding {emb}, "
            f"{w.headcount or 0} heads, feed-forward {dff}"
            + (", smolgen" if smolgen else "")
            + (", input gating" if w.HasField("ip_mult_gate") or w.HasField("ip_add_gate") else "")
        )
    from .heads import policy_heads, value_heads

    lines.append(f"policy heads: {', '.join(policy_heads(w)) or 'none'}")
    lines.append(f"value heads: {', '.join(value_heads(w)) or 'none'}")
    lines.append(f"parameters: {_count_params(w):,}")
    return lines
