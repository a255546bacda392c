"""The lc0 converter's shared state and pieces: format constants, weight access, activations.

:class:`ConverterBase` is what :mod:`.residual`, :mod:`.encoder` and :mod:`.attention_body` build
on; :class:`.to_onnx.Converter` puts them together.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .errors import WeightsError
from .graph import GraphBuilder, Vec
from .netproto import Message, present
from .weights import Lc0Weights, conv_block, layer_values

INPUT_PLANES = 112
SQUARES = 64
# ActivationFunction enum values of net.proto.
ACT_DEFAULT, ACT_MISH, ACT_RELU, ACT_NONE, ACT_TANH, ACT_SIGMOID, ACT_SELU, ACT_SWISH, ACT_RELU2 = (
    range(9)
)
NETWORK_ATTENTIONBODY_WITH_HEADFORMAT = 6
EMBEDDING_PE_MAP, EMBEDDING_PE_DENSE = 1, 2
SELU_ALPHA, SELU_GAMMA = 1.6732632423543772, 1.0507009873554805
PE_DENSE_EPS, DEFAULT_EPS, SMOLGEN_EPS = 1e-3, 1e-6, 1e-3


class ConverterBase:
    """One network's weights and graph builder, with the helpers every part of the body uses."""

    def __init__(self, weights: Lc0Weights, graph: GraphBuilder, opset: int, real_mish: bool):
        self.src = weights
        assert weights.weights is not None  # build_onnx refuses a file without weights
        self.w: Message = weights.weights
        self.fmt = weights.format
        self.g = graph
        self.opset = opset
        self.real_mish = real_mish
        self.default_activation = ACT_MISH if self.fmt.default_activation == 1 else ACT_RELU
        self.default_eps = (
            PE_DENSE_EPS if self.fmt.input_embedding == EMBEDDING_PE_DENSE else DEFAULT_EPS
        )
        self.input_conv = conv_block(self.w.input, "weights.input")

    # ------------------------------------------------------------------ helpers
    def fail(self, message: str) -> WeightsError:
        return WeightsError(f"{self.src.path}: {message}")

    def vec(self, msg: Message | None, field: str, where: str) -> Vec:
        layer = present(msg, field)
        return Vec(layer_values(layer, f"{where}.{field}"), f"{where}.{field}")

    def W(self, vec: Vec, dims, order=None, dtype=None) -> np.ndarray:
        return self.g.weights(vec, dims, order, dtype)

    def dense_T(self, vec: Vec, rows: int, cols: int) -> np.ndarray:
        """A dense layer stored [cols][rows] as lc0 does, as a [rows, cols] MatMul operand."""
        return self.W(vec, [rows, cols], [1, 0])

    @property
    def num_filters(self) -> int:
        return self.input_conv.weights.size // INPUT_PLANES // 9

    @property
    def num_res_blocks(self) -> int:
        return len(self.w.residual)

    @property
    def num_enc_blocks(self) -> int:
        return len(self.w.encoder)

    def bf16_compute(self) -> bool:
        """lc0 computes some ops in f32 around casts for bf16 graphs before opset 22."""
        return self.g.data_type == "bf16" and self.opset < 22

    # ------------------------------------------------------------------ activations
    def mish(self, x: str, name: str) -> str:
        g = self.g
        flow = g.cast(name + "/to_float", x, TensorProto.FLOAT) if self.bf16_compute() else x
        if self.opset >= 18 and self.real_mish:
            flow = g.unary("Mish", name, flow)
            return (
                g.cast(name + "/to_bf16", flow, TensorProto.BFLOAT16)
                if self.bf16_compute()
                else flow
            )
        flow = g.unary("Softplus", name + "/softplus", flow)
        if self.bf16_compute():
            flow = g.cast(name + "/to_bf16", flow, TensorProto.BFLOAT16)
        flow = g.unary("Tanh", name + "/tanh", flow)
        return g.mul(name, flow, x)

    def selu(self, x: str, name: str) -> str:
        g = self.g
        flow = g.cast(name + "/to_float", x, TensorProto.FLOAT) if self.bf16_compute() else x
        flow = g.unary("Selu", name + "/selu", flow)
        return (
            g.cast(name + "/to_bf16", flow, TensorProto.BFLOAT16) if self.bf16_compute() else flow
        )

    def activation(self, x: str, name: str, act: int) -> str:
        g = self.g
        if act == ACT_RELU:
            return g.unary("Relu", name + "/relu", x)
        if act == ACT_MISH:
            return self.mish(x, name + "/mish")
        if act == ACT_SELU:
            return self.selu(x, name + "/selu")
        if act == ACT_SWISH:
            sig = g.unary("Sigmoid", name + "/swish/sigmoid", x)
            return g.mul(name + "/swish", sig, x)
        if act == ACT_RELU2:
            r = g.unary("Relu", name + "/sqrrelu/relu", x)
            return g.mul(name + "/sqrrelu/sqr", r, r)
        if act == ACT_NONE:
            return x
        from .schema import ACTIVATIONS

        raise self.fail(f"unsupported activation {ACTIVATIONS.get(act, act)} in {name}")

    def layer_norm(
        self, x: str, name: str, msg: Message, prefix: str, where: str, size: int, eps: float
    ) -> str:
        """``x`` [rows, size] normalized with ``msg``'s ``{prefix}_gammas`` and ``_betas``."""
        gammas = self.vec(msg, prefix + "_gammas", where)
        betas = self.vec(msg, prefix + "_betas", where)
        return self.g.layer_norm(name, x, self.W(gammas, [size]), self.W(betas, [size]), eps)
