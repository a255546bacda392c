"""lc0 weights -> ONNX: the residual tower (input convolution, residual blocks, squeeze-excite)."""

from __future__ import annotations

from onnx import TensorProto

from .converter_base import INPUT_PLANES, ConverterBase
from .graph import Vec
from .netproto import Message
from .weights import ConvWeights, conv_block


class ResidualTower(ConverterBase):
    """Convolutions on [batch, channels, 8, 8] tensors, as lc0's converter builds them."""

    def conv_block(
        self,
        cw: ConvWeights,
        cin: int,
        cout: int,
        x: str,
        name: str,
        se: tuple[Message, str] | None = None,
        mixin: str = "",
        activation: bool = True,
        k: int = 3,
    ) -> str:
        g = self.g
        if not cw.present:
            raise self.fail(f"{cw.where}: missing convolution weights")
        bias_vec = Vec(cw.biases, cw.where + ".biases")
        kernel_vec = Vec(cw.weights, cw.where + ".weights")
        if self.bf16_compute():
            flow = g.cast(name + "/to_float", x, TensorProto.FLOAT)
            flow = g.conv(
                name,
                flow,
                self.W(kernel_vec, [cout, cin, k, k], dtype="f32"),
                self.W(bias_vec, [cout], dtype="f32"),
            )
            flow = g.cast(name + "/to_bf16", flow, TensorProto.BFLOAT16)
        else:
            flow = g.conv(name, x, self.W(kernel_vec, [cout, cin, k, k]), self.W(bias_vec, [cout]))
        if se is not None:
            flow = self.squeeze_excite(se[0], se[1], flow, name + "/se")
        if mixin:
            flow = g.add(name + "/mixin", flow, mixin)
        if activation:
            flow = self.activation(flow, name, self.default_activation)
        return flow

    def squeeze_excite(self, se: Message, where: str, x: str, name: str) -> str:
        g, nf = self.g, self.num_filters
        b1 = self.vec(se, "b1", where)
        se_filters = b1.size
        g.int64(
            "/const/se_reshape", [-1, nf * 2, 1, 1]
        )  # one per graph: the builder keeps the first
        flow = g.reduce_mean(name + "/reduce_mean", x, [2, 3], False)
        flow = g.matmul(
            name + "/matmul1", flow, self.dense_T(self.vec(se, "w1", where), nf, se_filters)
        )
        flow = g.add(name + "/add1", flow, self.W(b1, [se_filters]))
        flow = self.activation(flow, name, self.default_activation)
        flow = g.matmul(
            name + "/matmul2", flow, self.dense_T(self.vec(se, "w2", where), se_filters, 2 * nf)
        )
        flow = g.add(name + "/add2", flow, self.W(self.vec(se, "b2", where), [2 * nf]))
        flow = g.reshape(name + "/reshape", flow, "/const/se_reshape")
        gate, bias = g.split(name + "/split", flow, 1)
        flow = g.unary("Sigmoid", name + "/sigmoid", gate)
        flow = g.mul(name + "/mul", flow, x)
        return g.add(name + "/add3", flow, bias)

    def residual_tower(self, x: str) -> str:
        nf = self.num_filters
        flow = self.conv_block(self.input_conv, INPUT_PLANES, nf, x, "/inputconv")
        for i, block in enumerate(self.w.residual):
            where = f"weights.residual[{i}]"
            c1 = conv_block(block.conv1, where + ".conv1")
            c2 = conv_block(block.conv2, where + ".conv2")
            name = f"/block{i}"
            inner = self.conv_block(c1, nf, nf, flow, name + "/conv1")
            se = (block.se, where + ".se") if block.HasField("se") else None
            flow = self.conv_block(c2, nf, nf, inner, name + "/conv2", se=se, mixin=flow)
        return flow
