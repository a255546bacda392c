"""lc0 weights -> ONNX: encoder layers (multi-head attention with smolgen, feed-forward), which
the attention body and the attention policy head share."""

from __future__ import annotations

import numpy as np

from .converter_base import SMOLGEN_EPS, SQUARES, ConverterBase
from .netproto import Message, present


class EncoderLayers(ConverterBase):
    """Encoder layers on [batch*64, emb] tensors, as lc0's converter builds them."""

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
        flow = self.layer_norm(flow, name + "/smolgen/ln1", sm, "ln1", swhere, hidden, SMOLGEN_EPS)
        flow = g.matmul(
            name + "/smolgen/dense2/w",
            flow,
            self.dense_T(self.vec(sm, "dense2_w", swhere), hidden, gen * heads),
        )
        flow = g.add(name + "/smolgen/dense2/b", flow, self.W(d2b, [gen * heads]))
        flow = self.activation(flow, name + "/smolgen/dense2", act)
        flow = self.layer_norm(
            flow, name + "/smolgen/ln2", sm, "ln2", swhere, gen * heads, SMOLGEN_EPS
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

    def multi_head_attention(
        self, layer: Message, where: str, emb: int, heads: int, x: str, name: str
    ) -> str:
        """[batch*64, emb] -> the attention's [batch*64, emb] output, before the skip."""
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
        return g.add(
            name + "/mha/out/dense/b", flow, self.W(self.vec(mha, "dense_b", mwhere), [emb])
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
        """[batch*64, emb] -> [batch*64, emb]: attention and feed-forward, each with its skip
        (scaled by ``alpha``) and layer norm."""
        g = self.g
        flow = self.multi_head_attention(layer, where, emb, heads, x, name)
        if alpha != 1.0:
            flow = g.mul(name + "/alpha*input", flow, g.scalar(alpha))
        flow = g.add(name + "/mha/out/skip", flow, x)
        flow = self.layer_norm(flow, name + "/ln1", layer, "ln1", where, emb, self.default_eps)
        ffn_act = self.fmt.ffn_activation or act
        if not layer.HasField("ffn"):
            raise self.fail(f"{where}.ffn: missing feed-forward weights")
        flow = self.ffn(layer.ffn, where + ".ffn", emb, flow, name, ffn_act, alpha)
        return self.layer_norm(flow, name + "/ln2", layer, "ln2", where, emb, self.default_eps)
