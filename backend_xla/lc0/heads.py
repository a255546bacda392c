"""Policy, value and moves-left heads of lc0's ONNX conversion, and head selection.

Head selection follows lc0's ``MultiHeadWeights``: files without ``policy_heads``/``value_heads``
have one policy head ("vanilla") and one value head ("winner") made of the legacy top-level
fields, whose names match those of ``PolicyHead``/``ValueHead``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .graph import INT32_MAX, Vec
from .netproto import Message, present
from .policy_map import CONV_POLICY_PLANES, POLICY_SIZE, attention_policy_map, conv_policy_map
from .to_onnx import SQUARES, Converter
from .weights import conv_block

POLICY_CLASSICAL, POLICY_CONVOLUTION, POLICY_ATTENTION = 1, 2, 3
VALUE_CLASSICAL, VALUE_WDL = 1, 2
MOVES_LEFT_V1 = 1
_POLICY_HEAD_FIELDS = {
    "vanilla": "vanilla",
    "optimistic": "optimistic_st",
    "soft": "soft",
    "opponent": "opponent",
}
_VALUE_HEAD_FIELDS = {"winner": "winner", "q": "q", "st": "st"}
_CLASSICAL_VALUE_CHANNELS = 32  # lc0's converter hard-codes the value convolution's width


@dataclass(frozen=True)
class Head:
    """A selected head: its message (``PolicyHead``/``ValueHead`` or the legacy ``Weights``)."""

    name: str
    msg: Message
    where: str


def _heads(
    w: Message, container: str, fields: dict[str, str], default: str, legacy_fields: tuple[str, ...]
) -> dict[str, Head]:
    """Heads of one kind by lc0 name: from the multi-head container when the file has one (its
    default head always exists, possibly empty), else the legacy single head in ``weights``."""
    multi = present(w, container)
    if multi is not None:
        heads = {}
        for name, field in fields.items():
            if multi.HasField(field) or name == default:
                heads[name] = Head(name, getattr(multi, field), f"weights.{container}.{field}")
        return heads
    if any(w.HasField(f) for f in legacy_fields):
        return {default: Head(default, w, "weights")}
    return {}


def policy_heads(w: Message) -> dict[str, Head]:
    """Available policy heads by lc0 name (``--policy-head``)."""
    return _heads(
        w, "policy_heads", _POLICY_HEAD_FIELDS, "vanilla", ("policy", "policy1", "ip_pol_w")
    )


def value_heads(w: Message) -> dict[str, Head]:
    """Available value heads by lc0 name (``--value-head``)."""
    return _heads(
        w, "value_heads", _VALUE_HEAD_FIELDS, "winner", ("value", "ip_val_w", "ip1_val_w")
    )


def _select(c: Converter, heads: dict[str, Head], name: str, kind: str) -> Head:
    if not heads:
        raise c.fail(f"could not find valid {kind} head weights")
    if name not in heads:
        raise c.fail(
            f"{kind} head {name!r} does not exist in this net: expected one of {sorted(heads)}"
        )
    return heads[name]


def _shared_policy_embedding(c: Converter, head: Head, field: str) -> Vec:
    """``ip_pol_w``/``ip_pol_b``: the head's own, else the shared one (policy_heads or top level)."""
    own = c.vec(head.msg, field, head.where)
    if own.size:
        return own
    w = c.w
    if w.HasField("policy_heads") and w.policy_heads.HasField(field):
        return c.vec(w.policy_heads, field, "weights.policy_heads")
    return c.vec(w, field, "weights")


def policy_head(c: Converter, x: str, head_name: str) -> str:
    g = c.g
    head = _select(c, policy_heads(c.w), head_name, "policy")
    msg, where = head.msg, head.where
    out = "/output/policy"
    if c.fmt.policy == POLICY_ATTENTION:
        _attention_policy(c, x, head, out)
    elif not msg.HasField("policy") or not msg.policy.HasField("weights"):
        raise c.fail(f"{where}.policy: the selected policy head {head_name!r} is empty")
    elif msg.HasField("policy1") and msg.policy1.HasField("weights"):
        if c.num_enc_blocks > 0:
            raise c.fail("convolution policy is not supported with an attention body")
        nf = c.num_filters
        flow = c.conv_block(conv_block(msg.policy1, where + ".policy1"), nf, nf, x, "/policy/conv1")
        flow = c.conv_block(
            conv_block(msg.policy, where + ".policy"),
            nf,
            CONV_POLICY_PLANES,
            flow,
            "/policy/conv2",
            activation=False,
        )
        flow = g.reshape(
            "/policy/flatten", flow, "/const/policy_shape", [-1, CONV_POLICY_PLANES * SQUARES]
        )
        g.gather(out, flow, g.initializer("/const/mapping_table", conv_policy_map()), 1)
    else:
        if c.num_enc_blocks > 0:
            raise c.fail("classical policy is not supported with an attention body")
        cw = conv_block(msg.policy, where + ".policy")
        channels = cw.biases.size
        flow = c.conv_block(cw, c.num_filters, channels, x, "/policy/conv", k=1)
        flow = g.reshape("/policy/reshape", flow, "/const/policy_shape", [-1, channels * SQUARES])
        flow = g.matmul(
            "/policy/dense/matmul",
            flow,
            c.dense_T(
                _shared_policy_embedding(c, head, "ip_pol_w"), channels * SQUARES, POLICY_SIZE
            ),
        )
        g.add(out, flow, c.W(_shared_policy_embedding(c, head, "ip_pol_b"), [POLICY_SIZE]))
    g.add_output(out, ["batch", POLICY_SIZE])
    return out


def _attention_policy(c: Converter, x: str, head: Head, out: str) -> None:
    g, msg, where = c.g, head.msg, head.where
    ip2_b = c.vec(msg, "ip2_pol_b", where)
    if ip2_b.size == 0:
        raise c.fail(f"{where}.ip2_pol_b: the selected policy head {head.name!r} is empty")
    pol_b = _shared_policy_embedding(c, head, "ip_pol_b")
    pol_emb, d_model = pol_b.size, ip2_b.size
    act = c.default_activation if c.fmt.network >= 6 else 6  # SELU before attention bodies
    flow = x
    if c.num_enc_blocks == 0:
        flow = g.transpose("/policy/dense1/transpose", flow, [0, 2, 3, 1])
        flow = g.reshape("/policy/dense1/reshape", flow, "/const/policy_shape", [-1, c.num_filters])
        in_size = c.num_filters
    else:
        in_size = c.vec(c.w, "ip_emb_b", "weights").size
    flow = g.matmul(
        "/policy/dense1/matmul",
        flow,
        c.dense_T(_shared_policy_embedding(c, head, "ip_pol_w"), in_size, pol_emb),
    )
    flow = g.add("/policy/dense1/add", flow, c.W(pol_b, [pol_emb]))
    flow = c.activation(flow, "/policy/dense1", act)
    heads = msg.pol_headcount
    for i, layer in enumerate(msg.pol_encoder):
        flow = c.encoder_layer(
            layer, f"{where}.pol_encoder[{i}]", pol_emb, heads, flow, f"/policy/enc_layer_{i}", act
        )
    enc = flow
    flow = g.matmul(
        "/policy/Q/matmul", enc, c.dense_T(c.vec(msg, "ip2_pol_w", where), pol_emb, d_model)
    )
    flow = g.add("/policy/Q/add", flow, c.W(ip2_b, [d_model]))
    q = g.reshape("/policy/Q/reshape", flow, "/const/QK_shape", [-1, SQUARES, d_model])
    flow = g.matmul(
        "/policy/K/matmul", enc, c.dense_T(c.vec(msg, "ip3_pol_w", where), pol_emb, d_model)
    )
    flow = g.add("/policy/K/add", flow, c.W(c.vec(msg, "ip3_pol_b", where), [d_model]))
    k = g.reshape("/policy/K/reshape", flow, "/const/QK_shape")
    flow = g.transpose("/policy/K/transpose", k, [0, 2, 1])
    flow = g.matmul("/policy/matmul", q, flow)
    logits = g.mul("/policy/scale", flow, g.scalar(1.0 / np.sqrt(np.float32(d_model))))
    # Promotions: the last-rank keys through a [d_model, 4] projection; the first three (queen,
    # rook, bishop) offsets are added to the knight one and to the 7th-to-8th-rank move logits.
    prom = g.slice("policy/promotion/slice", k, [0, 56, 0], [INT32_MAX, 64, d_model])
    prom = g.matmul(
        "/policy/promotion/matmul", prom, c.dense_T(c.vec(msg, "ip4_pol_w", where), d_model, 4)
    )
    prom = g.transpose("/policy/promotion/transpose", prom, [0, 2, 1])
    parts = g.split("/policy/promotion/split", prom, 1, [3, 1])
    prom = g.add("/policy/promotion/add", parts[0], parts[1])
    prom = g.transpose("/policy/promotion/transpose2", prom, [0, 2, 1])
    prom = g.reshape(
        "/policy/promotion/reshape", prom, "/const/policy_promotion_shape", [-1, 1, 24]
    )
    sl = g.slice("policy/promotion/slice2", logits, [0, 48, 56], [INT32_MAX, 56, 64])
    sl = g.reshape("/policy/promotion/reshape2", sl, "/const/policy_promotion_shape2", [-1, 64, 1])
    sl = g.concat("/policy/promotion/concat", [sl, sl, sl], 2)
    sl = g.reshape("/policy/promotion/reshape3", sl, "/const/policy_promotion_shape3", [-1, 8, 24])
    prom = g.add("/policy/promotion/add2", sl, prom)
    prom = g.reshape(
        "/policy/promotion/reshape4", prom, "/const/policy_promotion_shape4", [-1, 3, 64]
    )
    flow = g.concat("/policy/concat", [logits, prom], 1)
    flow = g.reshape("/policy/reshape", flow, "/const/policy_out_shape", [-1, 67 * SQUARES])
    g.gather(out, flow, g.initializer("/const/mapping_table", attention_policy_map()), 1)


def value_head(c: Converter, x: str, head_name: str) -> str:
    g = c.g
    head = _select(c, value_heads(c.w), head_name, "value")
    msg, where = head.msg, head.where
    ip1_b = c.vec(msg, "ip1_val_b", where)
    if ip1_b.size == 0:
        raise c.fail(f"{where}.ip1_val_b: the selected value head {head_name!r} is empty")
    if c.num_enc_blocks > 0:
        emb = c.vec(c.w, "ip_emb_b", "weights").size
        val_b = c.vec(msg, "ip_val_b", where)
        channels = val_b.size
        flow = g.matmul(
            "/value/embed/matmul", x, c.dense_T(c.vec(msg, "ip_val_w", where), emb, channels)
        )
        flow = g.add("/value/embed/add", flow, c.W(val_b, [channels]))
        flow = c.activation(flow, "/value/embed", c.default_activation)
    else:
        cw = conv_block(msg.value, where + ".value")
        channels = cw.biases.size or _CLASSICAL_VALUE_CHANNELS
        flow = c.conv_block(cw, c.num_filters, channels, x, "/value/conv", k=1)
    hidden = ip1_b.size
    flow = g.reshape("/value/reshape", flow, "/const/value_shape", [-1, channels * SQUARES])
    flow = g.matmul(
        "/value/dense1/matmul",
        flow,
        c.dense_T(c.vec(msg, "ip1_val_w", where), channels * SQUARES, hidden),
    )
    flow = g.add("/value/dense1/add", flow, c.W(ip1_b, [hidden]))
    flow = c.activation(flow, "/value/dense1", c.default_activation)
    wdl = c.fmt.value == VALUE_WDL
    outputs = 3 if wdl else 1
    flow = g.matmul(
        "/value/dense2/matmul", flow, c.dense_T(c.vec(msg, "ip2_val_w", where), hidden, outputs)
    )
    flow = g.add("/value/dense2/add", flow, c.W(c.vec(msg, "ip2_val_b", where), [outputs]))
    if wdl:
        out = g.softmax("/output/wdl", flow, 1)
    else:
        out = g.unary("Tanh", "/output/value", flow)
    g.add_output(out, ["batch", outputs])
    return out


def moves_left_head(c: Converter, x: str) -> str | None:
    if c.fmt.moves_left != MOVES_LEFT_V1:
        return None
    g, w = c.g, c.w
    fc1_b = c.vec(w, "ip1_mov_b", "weights")
    if c.num_enc_blocks > 0:
        emb = c.vec(w, "ip_emb_b", "weights").size
        mov_b = c.vec(w, "ip_mov_b", "weights")
        channels = mov_b.size
        flow = g.matmul(
            "/mlh/embed/matmul", x, c.dense_T(c.vec(w, "ip_mov_w", "weights"), emb, channels)
        )
        flow = g.add("/mlh/embed/add", flow, c.W(mov_b, [channels]))
        flow = c.activation(flow, "/mlh/embed", c.default_activation)
    else:
        cw = conv_block(w.moves_left, "weights.moves_left")
        channels = cw.biases.size
        flow = c.conv_block(cw, c.num_filters, channels, x, "/mlh/conv", k=1)
    hidden = fc1_b.size
    flow = g.reshape("/mlh/reshape", flow, "/const/mlh_shape", [-1, channels * SQUARES])
    flow = g.matmul(
        "/mlh/dense1/matmul",
        flow,
        c.dense_T(c.vec(w, "ip1_mov_w", "weights"), channels * SQUARES, hidden),
    )
    flow = g.add("/mlh/dense1/add", flow, c.W(fc1_b, [hidden]))
    flow = c.activation(flow, "/mlh/dense1", c.default_activation)
    flow = g.matmul(
        "/mlh/dense2/matmul", flow, c.dense_T(c.vec(w, "ip2_mov_w", "weights"), hidden, 1)
    )
    flow = g.add("/mlh/dense2/add", flow, c.W(c.vec(w, "ip2_mov_b", "weights"), [1]))
    out = g.unary("Relu", "/output/mlh", flow)
    g.add_output(out, ["batch", 1])
    return out
