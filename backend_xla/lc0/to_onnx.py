"""lc0 weights -> ONNX: the network body (residual tower, attention body) and shared pieces.

Follows lc0's ``src/neural/onnx/converter.cc`` op for op and name for name, so the graph computes
what lc0's own ``leela2onnx`` conversion computes. Heads are in :mod:`.heads`.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .errors import WeightsError
from .graph import INT32_MAX, GraphBuilder, Vec
from .netproto import Message, present
from .weights import ConvWeights, Lc0Weights, conv_block, layer_values

INPUT_PLANES = 112
SQUARES = 64
# ActivationFunction enum values of net.proto.
ACT_DEFAULT, ACT_MISH, ACT_RELU, ACT_NONE, ACT_TANH, ACT_SIGMOID, ACT_SELU, ACT_SWISH, ACT_RELU2 = (
    range(9)
)
NETWORK_ATTENTIONBODY_WITH_HEADFORMAT = 6
EMBEDDING_PE_MAP, EMBEDDING_PE_DENSE = 1, 2
SELU_ALPHA, SELU_GAMMA = 1.6732632423543772, 1.0507009873554805
_PE_DENSE_EPS, _DEFAULT_EPS, _SMOLGEN_EPS = 1e-3, 1e-6, 1e-3


def position_encoding() -> np.ndarray:
    """float32 [64, 64]: lc0's PE_MAP square encoding; row s is -1 at s, 1 where a queen or knight
    move leads from s, 0 elsewhere."""
    table = np.zeros((SQUARES, SQUARES), np.float32)
    for s in range(SQUARES):
        f, r = s % 8, s // 8
        for t in range(SQUARES):
            df, dr = abs(t % 8 - f), abs(t // 8 - r)
            if df == 0 or dr == 0 or df == dr or {df, dr} == {1, 2}:
                table[s, t] = 1.0
        table[s, s] = -1.0
    return table


class Converter:
    """Builds the ONNX graph for one network; see :func:`backend_xla.lc0.build_onnx`."""

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
            _PE_DENSE_EPS if self.fmt.input_embedding == EMBEDDING_PE_DENSE else _DEFAULT_EPS
        )
        self.input_conv = conv_block(self.w.input, "weights.input")
        self._se_reshape = False

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

    def layer_norm(self, x: str, name: str, gammas: Vec, betas: Vec, size: int, eps: float) -> str:
        return self.g.layer_norm(name, x, self.W(gammas, [size]), self.W(betas, [size]), eps)

    # ------------------------------------------------------------------ residual tower
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
        if not self._se_reshape:
            g.int64("/const/se_reshape", [-1, nf * 2, 1, 1])
            self._se_reshape = True
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

    # ------------------------------------------------------------------ attention body
    def ffn(
        self, ffn: Message, where: str, emb: int, x: str, name: str, act: int, alpha: float
    ) -> str:
        g = self.g
        b1 = self.vec(ffn, "dense1_b", where)
        dff = b1.size
        flow = g.matmul(
            name + "/ffn/dense1/w", x, self.dense_T(self.vec(ffn, "dense1_w", where), emb, dff)
        )
        flow = g.add(name + "/ffn/dense1/b", flow, self.W(b1, [dff]))
        flow = self.activation(flow, name + "/ffn/dense1", act)
        flow = g.matmul(
            name + "/ffn/dense2/w", flow, self.dense_T(self.vec(ffn, "dense2_w", where), dff, emb)
        )
        flow = g.add(name + "/ffn/dense2/b", flow, self.W(self.vec(ffn, "dense2_b", where), [emb]))
        if alpha != 1.0:
            flow = g.mul(name + "/ffn/alpha", flow, g.scalar(alpha))
        return g.add(name + "/ffn/skip", flow, x)

    def smolgen(self, layer: Message, where: str, emb: int, heads: int, x: str, name: str) -> str:
        g = self.g
        sm, swhere = layer.mha.smolgen, where + ".mha.smolgen"
        act = self.fmt.smolgen_activation or self.default_activation
        compress = self.vec(sm, "compress", swhere)
        hidden_channels = compress.size // emb
        d1b = self.vec(sm, "dense1_b", swhere)
        d2b = self.vec(sm, "dense2_b", swhere)
        hidden, gen = d1b.size, d2b.size // heads
        flow = g.matmul(name + "/smolgen/compress", x, self.dense_T(compress, emb, hidden_channels))
        flow = g.reshape(
            name + "/smolgen/compress/reshape",
            flow,
            "/const" + name + "/smolgen/compress/shape",
            [-1, SQUARES * hidden_channels],
        )
        flow = g.matmul(
            name + "/smolgen/dense1/w",
            flow,
            self.dense_T(self.vec(sm, "dense1_w", swhere), SQUARES * hidden_channels, hidden),
        )
        flow = g.add(name + "/smolgen/dense1/b", flow, self.W(d1b, [hidden]))
        flow = self.activation(flow, name + "/smolgen/dense1", act)
        flow = self.layer_norm(
            flow,
            name + "/smolgen/ln1",
            self.vec(sm, "ln1_gammas", swhere),
            self.vec(sm, "ln1_betas", swhere),
            hidden,
            _SMOLGEN_EPS,
        )
        flow = g.matmul(
            name + "/smolgen/dense2/w",
            flow,
            self.dense_T(self.vec(sm, "dense2_w", swhere), hidden, gen * heads),
        )
        flow = g.add(name + "/smolgen/dense2/b", flow, self.W(d2b, [gen * heads]))
        flow = self.activation(flow, name + "/smolgen/dense2", act)
        flow = self.layer_norm(
            flow,
            name + "/smolgen/ln2",
            self.vec(sm, "ln2_gammas", swhere),
            self.vec(sm, "ln2_betas", swhere),
            gen * heads,
            _SMOLGEN_EPS,
        )
        flow = g.reshape(
            name + "/smolgen/gen_from/reshape",
            flow,
            "/const" + name + "/smolgen/gen_from/shape",
            [-1, heads, gen],
        )
        if "/const/smolgen_w" not in g.initializers:
            raise self.fail(
                "weights.smolgen_w: an encoder layer uses smolgen but the global "
                "smolgen weights are missing"
            )
        flow = g.matmul(name + "/smolgen/smol_weight_gen", flow, "/const/smolgen_w")
        return g.reshape(
            name + "/smolgen/out/reshape",
            flow,
            "/const" + name + "/smolgen/out/shape",
            [-1, heads, SQUARES, SQUARES],
        )

    def encoder_layer(
        self,
        layer: Message,
        where: str,
        emb: int,
        heads: int,
        x: str,
        name: str,
        act: int,
        alpha: float = 1.0,
    ) -> str:
        g = self.g
        mha, mwhere = present(layer, "mha"), where + ".mha"
        if mha is None:
            raise self.fail(f"{mwhere}: missing attention weights")
        for rpe in ("rpe_q", "rpe_k", "rpe_v"):
            if mha.HasField(rpe):
                raise self.fail(f"{mwhere}.{rpe}: relative position encodings are not supported")
        q_b = self.vec(mha, "q_b", mwhere)
        d_model = q_b.size
        if heads <= 0 or d_model % heads:
            raise self.fail(f"{where}: head count {heads} does not divide the model size {d_model}")
        depth = d_model // heads
        shape = g.int64("/const" + name + "/mha/shape", [-1, SQUARES, heads, depth])
        proj = {}
        for key, perm in (("Q", [0, 2, 1, 3]), ("K", [0, 2, 3, 1]), ("V", [0, 2, 1, 3])):
            lk = key.lower()
            flow = g.matmul(
                f"{name}/mha/{key}/w",
                x,
                self.dense_T(self.vec(mha, f"{lk}_w", mwhere), emb, d_model),
            )
            flow = g.add(
                f"{name}/mha/{key}/b", flow, self.W(self.vec(mha, f"{lk}_b", mwhere), [d_model])
            )
            flow = g.reshape(f"{name}/mha/{key}/reshape", flow, shape)
            proj[key] = g.transpose(f"{name}/mha/{key}/transpose", flow, perm)
        flow = g.matmul(name + "/mha/QK/matmul", proj["Q"], proj["K"])
        flow = g.mul(name + "/mha/QK/scale", flow, g.scalar(1.0 / np.sqrt(np.float32(depth))))
        if mha.HasField("smolgen"):
            sg = self.smolgen(layer, where, emb, heads, x, name)
            flow = g.add(name + "/smolgen_weights", flow, sg)
        flow = g.softmax(name + "/mha/QK/softmax", flow, 3)
        flow = g.matmul(name + "/mha/QKV/matmul", flow, proj["V"])
        if heads > 1:
            flow = g.transpose(name + "/mha/out/transpose", flow, [0, 2, 1, 3])
        flow = g.reshape(
            name + "/mha/out/reshape", flow, "/const" + name + "/mha/out/shape", [-1, d_model]
        )
        flow = g.matmul(
            name + "/mha/out/dense/w",
            flow,
            self.dense_T(self.vec(mha, "dense_w", mwhere), d_model, emb),
        )
        flow = g.add(
            name + "/mha/out/dense/b", flow, self.W(self.vec(mha, "dense_b", mwhere), [emb])
        )
        if alpha != 1.0:
            flow = g.mul(name + "/alpha*input", flow, g.scalar(alpha))
        flow = g.add(name + "/mha/out/skip", flow, x)
        flow = self.layer_norm(
            flow,
            name + "/ln1",
            self.vec(layer, "ln1_gammas", where),
            self.vec(layer, "ln1_betas", where),
            emb,
            self.default_eps,
        )
        ffn_act = self.fmt.ffn_activation or act
        if not layer.HasField("ffn"):
            raise self.fail(f"{where}.ffn: missing feed-forward weights")
        flow = self.ffn(layer.ffn, where + ".ffn", emb, flow, name, ffn_act, alpha)
        return self.layer_norm(
            flow,
            name + "/ln2",
            self.vec(layer, "ln2_gammas", where),
            self.vec(layer, "ln2_betas", where),
            emb,
            self.default_eps,
        )

    def _pe_map_embedding(self, x: str) -> str:
        g = self.g
        flow = g.reshape(
            "/attn_body/reshape", x, "/const/att_body_shape", [-1, SQUARES, INPUT_PLANES]
        )
        pad = g.node("Shape", "/attn_body/shape", [flow])
        pad = g.slice("/attn_body/batch", pad, [0], [1])
        pad = g.concat(
            "/attn_body/pos_encoding_shape",
            [pad, g.int64("/const/pos_encoding_shape", [SQUARES, SQUARES])],
            0,
        )
        table = g.initializer(
            "/const/pos_encoding",
            self.W(Vec(position_encoding().reshape(-1), "pos_encoding"), [1, 64, 64]),
        )
        pad = g.node("Expand", "/attn_body/expand", [table, pad])
        flow = g.concat("/attn_body/padded_input", [flow, pad], 2)
        return g.reshape(
            "/attn_body/reshape2", flow, "/const/att_body_shape2", [-1, INPUT_PLANES + SQUARES]
        )

    def _pe_dense_embedding(self, x: str, dense_size: int) -> str:
        g, w = self.g, self.w
        flow = g.reshape(
            "/attn_body/reshape", x, "/const/att_body_shape", [-1, SQUARES, INPUT_PLANES]
        )
        pos = g.slice("/attn_body/embedding/slice", flow, [0, 0, 0], [INT32_MAX, SQUARES, 12])
        pos = g.reshape(
            "/attn_body/embedding/reshape", pos, "/const/pos_info_shape", [-1, SQUARES * 12]
        )
        pos = g.matmul(
            "/attn_body/embedding/preprocess/matmul",
            pos,
            self.dense_T(
                self.vec(w, "ip_emb_preproc_w", "weights"), SQUARES * 12, SQUARES * dense_size
            ),
        )
        pos = g.add(
            "/attn_body/embedding/preprocess/add",
            pos,
            self.W(self.vec(w, "ip_emb_preproc_b", "weights"), [SQUARES * dense_size]),
        )
        pos = g.reshape(
            "/attn_body/embedding/preprocess/reshape",
            pos,
            "/const/pos_info_processed_shape",
            [-1, SQUARES, dense_size],
        )
        flow = g.concat("/attn_body/embedding/concat", [flow, pos], 2)
        return g.reshape(
            "/attn_body/embedding/out/reshape",
            flow,
            "/const/embedding/out_shape",
            [-1, INPUT_PLANES + dense_size],
        )

    def attention_body(self, x: str) -> str:
        g, w = self.g, self.w
        if w.HasField("smolgen_w"):
            sw = self.vec(w, "smolgen_w", "weights")
            if sw.size % (SQUARES * SQUARES):
                raise self.fail(f"weights.smolgen_w: {sw.size} values is not a multiple of 4096")
            g.initializer("/const/smolgen_w", self.dense_T(sw, sw.size // 4096, 4096))
        embedding = self.fmt.input_embedding
        flow = g.transpose("/attn_body/transpose", x, [0, 2, 3, 1])
        if self.num_res_blocks > 0:
            flow = g.reshape(
                "/attn_body/reshape", flow, "/const/att_body_shape", [-1, self.num_filters]
            )
            first_c = self.num_filters
        elif embedding == EMBEDDING_PE_MAP:
            flow = self._pe_map_embedding(flow)
            first_c = INPUT_PLANES + SQUARES
        elif embedding == EMBEDDING_PE_DENSE:
            dense_size = self.vec(w, "ip_emb_preproc_b", "weights").size // SQUARES
            flow = self._pe_dense_embedding(flow, dense_size)
            first_c = INPUT_PLANES + dense_size
        else:
            raise self.fail(
                f"input_embedding {self.fmt.name('input_embedding')}: an attention body "
                "needs PE_MAP or PE_DENSE"
            )
        emb_b = self.vec(w, "ip_emb_b", "weights")
        emb = emb_b.size
        flow = g.matmul(
            "/attn_body/matmul",
            flow,
            self.dense_T(self.vec(w, "ip_emb_w", "weights"), first_c, emb),
        )
        flow = g.add("/attn_body/add", flow, self.W(emb_b, [emb]))
        flow = self.activation(flow, "/attn_body", self.default_activation)
        if embedding == EMBEDDING_PE_DENSE:
            flow = self.layer_norm(
                flow,
                "/attn_body/ln",
                self.vec(w, "ip_emb_ln_gammas", "weights"),
                self.vec(w, "ip_emb_ln_betas", "weights"),
                emb,
                _PE_DENSE_EPS,
            )
        if w.HasField("ip_mult_gate") or w.HasField("ip_add_gate"):
            flow = g.reshape(
                "/attn_body/ma_gating/rehape", flow, "/const/ma_gating/shape1", [-1, SQUARES, emb]
            )
            if w.HasField("ip_mult_gate"):
                flow = g.mul(
                    "/ip_mul_gate",
                    flow,
                    self.dense_T(self.vec(w, "ip_mult_gate", "weights"), SQUARES, emb),
                )
            if w.HasField("ip_add_gate"):
                flow = g.add(
                    "/ip_add_gate",
                    flow,
                    self.dense_T(self.vec(w, "ip_add_gate", "weights"), SQUARES, emb),
                )
        flow = g.reshape("/attn_body/rehape", flow, "/const/ma_gating/shape2", [-1, emb])
        alpha = float(np.float32(2.0 * self.num_enc_blocks) ** np.float32(-0.25))
        if embedding == EMBEDDING_PE_DENSE:
            if not w.HasField("ip_emb_ffn"):
                raise self.fail(
                    "weights.ip_emb_ffn: PE_DENSE embedding without its feed-forward weights"
                )
            flow = self.ffn(
                w.ip_emb_ffn,
                "weights.ip_emb_ffn",
                emb,
                flow,
                "/attn_body",
                self.fmt.ffn_activation or self.default_activation,
                alpha,
            )
            flow = self.layer_norm(
                flow,
                "/attn_body/ln2",
                self.vec(w, "ip_emb_ffn_ln_gammas", "weights"),
                self.vec(w, "ip_emb_ffn_ln_betas", "weights"),
                emb,
                _PE_DENSE_EPS,
            )
        heads = w.headcount
        for i, layer in enumerate(w.encoder):
            flow = self.encoder_layer(
                layer,
                f"weights.encoder[{i}]",
                emb,
                heads,
                flow,
                f"/encoder{i}",
                self.default_activation,
                alpha,
            )
        return flow
